#!/bin/sh
# SkyPilot's CLI habits on the embedded default infra: the launch flags (--dryrun,
# --no-setup, --fast, -r, the resource flags, --secret-file), status (LAUNCHED, -v, -r,
# --ip, --endpoints, globs, a missing name), queue of zero or many clusters with
# SkyPilot's columns, logs (--tail=N, 'Job N: STATUS', --sync-down of several), cancel of
# the latest running job, globs and -a on down/stop/start/autostop, start's options,
# --purge, resources.autostop, and the managed-jobs flags (precheck, -l, exit_codes,
# logs of the latest or by name).
. "$(dirname "$0")/lib.sh"

test_cleanup_hook() {
	for c in $(skiff status --json 2>/dev/null | python3 -c "import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		skiff down --purge "$c" >/dev/null 2>&1
	done
	pkill -KILL -f "$TRASH" 2>/dev/null
	umount "$SKIFF_HOME"/local/*/0/busy 2>/dev/null
}

# A field of one cluster in `status --json`: jfield CLUSTER EXPR (c is the cluster).
jfield() {
	skiff status --json | python3 -c "import json, sys
c = [c for c in json.load(sys.stdin) if c['name'] == '$1'][0]
print($2)"
}

test_expect_success 'launch --dryrun says what it would do and does none of it' '
	printf "name: dry\nsetup: echo S\nrun: echo R\n" >dry.yaml &&
	skiff launch --dryrun -c dry dry.yaml >out 2>err &&
	grep -q "^Cluster: *dry (new)" out &&
	grep -q "^Runs: *setup on every node, then run" out &&
	skiff status >st && grep -qx "No existing clusters." st
'

test_expect_success 'launch: setup runs; --no-setup skips it; --fast skips setup and mounts' '
	mkdir -p m && echo v1 >m/x &&
	cat >t.yaml <<-EOF &&
	name: fl
	file_mounts:
	  /tmp/skiff-t0620-$$: ./m
	setup: echo SETUP-RAN
	run: echo RUN-RAN; cat /tmp/skiff-t0620-$$/x
	EOF
	skiff launch -c fl t.yaml >out1 2>/dev/null &&
	grep -qx SETUP-RAN out1 && grep -qx v1 out1 &&
	echo v2 >m/x &&
	skiff launch --no-setup -c fl t.yaml >out2 2>/dev/null &&
	! grep -q SETUP-RAN out2 && grep -qx v2 out2 &&
	echo v3 >m/x &&
	skiff launch --fast -c fl t.yaml >out3 2>/dev/null &&
	! grep -q SETUP-RAN out3 && grep -qx v2 out3 && grep -qx RUN-RAN out3 &&
	rm -rf /tmp/skiff-t0620-$$
'

test_expect_success 'resource flags are checked as their fields; a cloud-only one is warned' '
	expect_fail 2 skiff launch -c fl --disk-tier fastest "true" 2>err &&
	grep -q "disk_tier" err &&
	expect_fail 2 skiff launch -c fl -p 70000 "true" 2>err &&
	skiff launch -c fl --use-spot -t m5.large "echo ok" >out 2>err &&
	grep -qx ok out &&
	grep -q "ignored on local infra.*instance_type.*use_spot" err
'

test_expect_success '--env wins over --env-file and --secret over --secret-file, in any order' '
	printf "A=file\nB=file\n" >e.env &&
	printf "TOK=fromfile\nS2=file\n" >s.env &&
	skiff exec fl --env A=flag --env-file e.env --secret-file s.env --secret TOK=flag \
		"echo \$A \$B \$TOK \$S2" >out 2>/dev/null &&
	grep -qx "flag file flag file" out &&
	skiff exec fl --env-file e.env --env A=flag "echo \$A" >out 2>/dev/null &&
	grep -qx flag out
'

test_expect_success 'exec -c names the cluster; exec --dryrun runs nothing' '
	skiff exec -c fl "echo via-c" >out 2>/dev/null && grep -qx via-c out &&
	n=$(skiff queue --json fl | python3 -c "import json,sys; print(len(json.load(sys.stdin)))") &&
	skiff exec --dryrun fl "echo no" >out && grep -q "^Runs: *run" out &&
	test "$(skiff queue --json fl | python3 -c "import json,sys; print(len(json.load(sys.stdin)))")" = "$n"
'

test_expect_success 'launch -r retries while no node can be had' '
	# A pool whose one host refuses connections (nothing listens on port 1).
	printf "dead:\n  hosts:\n    - ip: 127.0.0.1\n      port: 1\n" >"$SKIFF_HOME/ssh_node_pools.yaml" &&
	{ "$SKIFF_BIN" launch -c never -r --infra ssh/dead "true" >out 2>err & } &&
	pid=$! &&
	wait_for "grep -q \"trying again in 5 s\" err" 30 &&
	kill -0 $pid && kill $pid && { wait $pid || :; } &&
	grep -q "Launch attempt 1 failed" err &&
	expect_fail 1 skiff launch -c never --infra ssh/dead "true" 2>err &&
	! grep -q "trying again" err
'

test_expect_success 'status: LAUNCHED; -v with HEAD_IP and PORTS; globs; a missing name fails' '
	skiff launch -c dev-1 -d -p 8080 -p 9000-9002 "sleep 300" 2>/dev/null &&
	skiff launch -c dev-2 -d -p 9003 "true" 2>/dev/null &&
	skiff status >st && head -n 1 st | grep -q "AUTOSTOP *LAUNCHED$" &&
	grep -q "^dev-1 .*UP .* ago$" st &&
	skiff status -v "dev-*" >st && grep -q "HEAD_IP *PORTS$" st &&
	grep -q "^dev-1 .*127.0.0.1 *8080,9000-9002$" st &&
	test $(grep -c "^dev-" st) = 2 && ! grep -q "^fl " st &&
	expect_fail 1 skiff status nosuch >st 2>err && grep -q "cluster nosuch does not exist" err &&
	expect_fail 1 skiff status dev-1 nosuch >st 2>err && grep -q "^dev-1 " st &&
	test "$(jfield dev-1 "c[\"ports\"]")" = "8080,9000-9002"
'

test_expect_success 'status --ip, --endpoints, --endpoint PORT' '
	test "$(skiff status --ip dev-1)" = 127.0.0.1 &&
	skiff status --endpoints dev-1 >ep &&
	printf "8080: 127.0.0.1:8080\n9000-9002: 127.0.0.1:9000-9002\n" >want &&
	test_cmp want ep &&
	test "$(skiff status --endpoint 9001 dev-1)" = 127.0.0.1:9001 &&
	expect_fail 1 skiff status --endpoint 7 dev-1 2>err && grep -q "port 7 is not open" err &&
	expect_fail 2 skiff status --ip 2>/dev/null
'

test_expect_success 'a later launch adds its ports to the cluster'"'"'s' '
	skiff launch -c dev-2 -p 9004 "true" >/dev/null 2>&1 &&
	test "$(jfield dev-2 "c[\"ports\"]")" = 9003-9004
'

test_expect_success 'status -r: a head that does not answer is INIT' '
	skiff launch -c gone -d "true" 2>/dev/null &&
	rm -f "$SKIFF_HOME"/local/gone/0/.skiff/bin/skiff-* &&
	skiff status gone >st && grep -q "^gone .* UP " st &&
	skiff status -r gone >st 2>err && grep -q "^gone .* INIT " st &&
	grep -q "does not answer" err &&
	skiff down --purge gone >/dev/null 2>&1
'

test_expect_success 'status -r: a worker that does not answer makes the cluster INIT, named' '
	skiff launch -c gw --num-nodes 3 -d "true" 2>/dev/null &&
	skiff status -r gw >st 2>err && grep -q "^gw .* UP " st &&
	rm -f "$SKIFF_HOME"/local/gw/2/.skiff/bin/skiff-* &&
	skiff status -r gw >st 2>err && grep -q "^gw .* INIT " st &&
	grep -q "cluster gw: node .* (rank 2) does not answer" err &&
	! grep -q "(rank [01])" err &&
	grep -q "1 of its 3 nodes do not answer" err &&
	skiff down --purge gw >/dev/null 2>&1
'

test_expect_success 'queue: every UP cluster, or several; SkyPilot columns; --json has cluster' '
	skiff queue >q &&
	grep -q "^Job queue of cluster dev-1$" q && grep -q "^Job queue of cluster fl$" q &&
	grep -q "^ID  *NAME  *USER  *SUBMITTED  *STARTED  *DURATION  *RESOURCES  *STATUS  *EXIT CODES  *LOG$" q &&
	grep -q "^1  *-  *$(id -un) .*1x\[CPU:0.5\]  *RUNNING" q &&
	skiff queue --json dev-1 dev-2 >q.json &&
	python3 - <<-\EOF
	import json
	v = json.load(open("q.json"))
	assert sorted({j["cluster"] for j in v}) == ["dev-1", "dev-2"], v
	assert all(isinstance(j["exit_codes"], list) and j["user"] for j in v), v
	EOF
'

test_expect_success 'logs --tail=N, --status as "Job N: STATUS", --sync-down of two jobs' '
	skiff exec fl "seq 1 5" >/dev/null 2>&1 &&
	id=$(skiff queue --json fl | python3 -c "import json,sys; print(json.load(sys.stdin)[-1][\"id\"])") &&
	skiff logs --no-follow --tail=2 fl $id >out 2>/dev/null &&
	printf "4\n5\n" >want && test_cmp want out &&
	skiff logs --status fl $id >st && test "$(cat st)" = "Job $id: SUCCEEDED" &&
	skiff logs --status fl >st && test "$(cat st)" = "Job $id: SUCCEEDED" &&
	skiff logs --sync-down fl 1 $id >out &&
	test $(grep -c "^logs synced to " out) = 2 &&
	test -f "$HOME/sky_logs/fl/1/rank-0/run.log" && test -f "$HOME/sky_logs/fl/$id/rank-0/run.log"
'

test_expect_success 'cancel without ids: the latest job that has not ended, said; none: said' '
	skiff exec -d dev-1 "true" 2>/dev/null &&
	wait_for "skiff queue dev-1 | grep -q \"^2 .*SUCCEEDED\"" 20 &&
	skiff cancel dev-1 >out && grep -qx "cancelled job 1 on cluster dev-1" out &&
	wait_for "skiff queue dev-1 | grep -q \"^1 .*CANCELLED\"" 20 &&
	skiff cancel dev-1 >out 2>err && grep -q "nothing to cancel" err
'

test_expect_success 'autostop of several clusters sets each; -a; --cancel' '
	skiff autostop dev-1 dev-2 -i 7 >out &&
	test "$(jfield dev-1 "c[\"autostop\"][\"idle_minutes\"]")" = 7 &&
	test "$(jfield dev-2 "c[\"autostop\"][\"idle_minutes\"]")" = 7 &&
	skiff autostop -a --cancel >out &&
	test "$(jfield dev-1 "c[\"autostop\"]")" = None &&
	test "$(jfield fl "c[\"autostop\"]")" = None
'

test_expect_success 'stop with a glob; start -a with autostop options' '
	skiff stop "dev-*" >out && test $(grep -c "stopped$" out) = 2 &&
	test "$(jfield dev-2 "c[\"status\"]")" = STOPPED &&
	test "$(jfield fl "c[\"status\"]")" = UP &&
	skiff start -a -i 3 --down >out &&
	grep -qx "cluster dev-1 started" out && grep -qx "cluster dev-2 started" out &&
	! grep -q "cluster fl started" out &&
	test "$(jfield dev-1 "c[\"autostop\"][\"idle_minutes\"], c[\"autostop\"][\"down\"]")" = "3 True" &&
	expect_fail 1 skiff start nosuch 2>err && grep -q "does not exist" err
'

test_expect_success 'resources.autostop in the task is set at launch; -i wins over it' '
	printf "resources:\n  autostop:\n    idle_minutes: 11\n    down: true\nrun: echo hi\n" >as.yaml &&
	skiff launch -c as1 as.yaml >/dev/null 2>&1 &&
	test "$(jfield as1 "c[\"autostop\"][\"idle_minutes\"], c[\"autostop\"][\"down\"]")" = "11 True" &&
	skiff launch -c as1 -i 4 as.yaml >/dev/null 2>&1 &&
	test "$(jfield as1 "c[\"autostop\"][\"idle_minutes\"], c[\"autostop\"][\"down\"]")" = "4 False"
'

test_expect_success 'down with globs and a missing name: the others go, exit 1' '
	expect_fail 1 skiff down "dev-*" nosuch >out 2>err &&
	grep -qx "cluster dev-1 terminated" out && grep -qx "cluster dev-2 terminated" out &&
	grep -q "cluster nosuch does not exist" err &&
	skiff down as1 >/dev/null
'

test_expect_success ROOT 'down --purge forgets a cluster whose nodes cannot be removed' '
	skiff launch -c pg -d "true" 2>/dev/null &&
	mkdir "$SKIFF_HOME/local/pg/0/busy" &&
	mount -t tmpfs skiff-t0620 "$SKIFF_HOME/local/pg/0/busy" &&
	expect_fail 1 skiff down pg >/dev/null 2>err &&
	grep -q -- "--purge" err &&
	skiff status pg >/dev/null &&
	skiff down --purge pg >out 2>err &&
	grep -qx "cluster pg terminated" out && grep -q "forgotten anyway" err &&
	expect_fail 1 skiff status pg 2>/dev/null &&
	umount "$SKIFF_HOME/local/pg/0/busy" && rm -rf "$SKIFF_HOME/local/pg"
'

test_expect_success 'managed jobs: more GPUs than any node has fails its precheck at once' '
	skiff jobs launch -d --gpus H100:1 "nvidia-smi" >id 2>/dev/null &&
	wait_for "skiff jobs queue | grep -q \"^$(cat id) .*FAILED_PRECHECKS\"" 30
'

test_expect_success 'managed jobs: down of their cluster is refused while they run, not with --purge' '
	skiff jobs launch -d -n sleeper "sleep 300" >id2 2>/dev/null &&
	wait_for "skiff jobs queue | grep -q \"^$(cat id2) .*RUNNING\"" 60 &&
	expect_fail 1 skiff down skiff-jobs 2>err && grep -q "managed job" err &&
	skiff status skiff-jobs >/dev/null &&
	skiff down -a >out 2>err && grep -q "belongs to managed jobs" err &&
	skiff down --purge skiff-jobs >out 2>&1 && grep -q "terminated" out
'

test_expect_success 'jobs queue -l N, exit_codes a list; jobs logs of the latest and by -n' '
	skiff jobs launch -n named-one "echo from-named" >/dev/null 2>&1 &&
	skiff jobs launch "echo latest-one" >/dev/null 2>&1 &&
	skiff jobs queue -l 2 >q && test $(wc -l <q) = 3 &&
	head -n 1 q | grep -q "^ID  *NAME  *RESOURCES  *SUBMITTED" &&
	grep -q " 1x\[cpus=0.5\] " q &&
	skiff jobs queue --json >q.json &&
	python3 -c "import json; v = json.load(open(\"q.json\")); assert all(isinstance(j[\"exit_codes\"], list) for j in v), v" &&
	skiff jobs logs --no-follow >out 2>/dev/null && grep -qx latest-one out &&
	skiff jobs logs --no-follow -n named-one >out 2>/dev/null && grep -qx from-named out &&
	expect_fail 102 skiff jobs logs -n nosuch 2>/dev/null
'

test_expect_success 'jobs launch --num-jobs N: N jobs, each with its rank' '
	skiff jobs launch --num-jobs 3 -n many "echo rank=\$SKYPILOT_JOB_RANK of \$SKYPILOT_NUM_JOBS" >ids 2>err &&
	test $(wc -l <ids) = 3 && grep -q "not following" err &&
	for id in $(cat ids); do
		wait_for "skiff jobs queue | grep -q \"^$id .*SUCCEEDED\"" 60 || exit 1
	done &&
	for id in $(cat ids); do skiff jobs logs --no-follow $id 2>/dev/null; done | sort >ranks &&
	printf "rank=0 of 3\nrank=1 of 3\nrank=2 of 3\n" >want && test_cmp want ranks &&
	expect_fail 2 skiff jobs launch --num-jobs 0 "true" 2>/dev/null
'

test_expect_success 'a git workdir: a tag, a commit, HEAD, --git-url/--git-ref; a bad URL' '
	git init -q repo && echo one >repo/f.txt &&
	git -C repo add f.txt && git -C repo -c user.email=t@t -c user.name=t commit -qm one &&
	git -C repo tag v1 && one=$(git -C repo rev-parse HEAD) &&
	echo two >repo/f.txt && git -C repo -c user.email=t@t -c user.name=t commit -qam two &&
	printf "workdir:\n  url: file://$PWD/repo\n  ref: v1\nrun: cat f.txt; ls -a\n" >g.yaml &&
	skiff check g.yaml >/dev/null &&
	skiff launch -c gw g.yaml >out 2>/dev/null &&
	grep -qx one out && ! grep -qx .git out &&
	skiff exec gw --git-url "file://$PWD/repo" "cat f.txt" >out 2>/dev/null && grep -qx two out &&
	skiff exec gw --git-url "file://$PWD/repo" --git-ref $one "cat f.txt" >out 2>/dev/null &&
	grep -qx one out &&
	test -d "$SKIFF_HOME/git/trees/$one" &&
	expect_fail 3 skiff exec gw --git-ref v1 "true" 2>err && grep -q "no git workdir" err &&
	expect_fail 1 skiff exec gw --git-url "file://$PWD/nope" "true" 2>err &&
	grep -q "workdir: git fetch failed" err &&
	skiff down gw >/dev/null
'

test_expect_success 'without a pool file of its own, SkyPilot'"'"'s ~/.sky/ssh_node_pools.yaml is read' '
	rm -f "$SKIFF_HOME/ssh_node_pools.yaml" && mkdir -p "$HOME/.sky" &&
	printf "skypool:\n  hosts:\n    - ip: 127.0.0.1\n      port: 1\n" >"$HOME/.sky/ssh_node_pools.yaml" &&
	expect_fail 1 skiff launch -c sk --infra ssh/skypool "true" 2>err &&
	grep -q "127.0.0.1 port 1" err &&
	rm -r "$HOME/.sky" &&
	expect_fail 1 skiff launch -c sk --infra ssh/skypool "true" 2>err &&
	grep -q "no ssh node pool file" err
'

test_done
