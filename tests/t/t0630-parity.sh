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

# SkyPilot's interactive flow (docs "Interactive development"): `sky launch -c dev
# --workdir . -i 30` with no entrypoint brings a cluster up with the workdir synced and
# makes no job; `sky exec dev CMD` then runs in ~/sky_workdir (its job script does
# `cd ~/sky_workdir`). A task with neither setup nor run makes no job either.
# SkyPilot prefixes a multi-node job's lines with the rank's Ray task name and the pid
# of the process that ran it, and the ip on all but the head's node (its docs,
# "Distributed multi-node jobs": "(head, rank=0, pid=...)", "(worker1, rank=1,
# pid=..., ip=...)"). The pid is the job's process on that node: here the shell's $$.
test_expect_success 'the lines of a gang: the SkyPilot prefixes, with the pid of each rank' '
	skiff launch -c gp --num-nodes 3 "echo me=\$\$; printf unended" >out 2>err &&
	for r in 0 1 2; do
		grep "^$(rank_prefix_re $r 127.0.0.1) me=" out >line &&
		test "$(wc -l <line)" = 1 &&
		pid=$(sed -n "s/^.*, pid=\([0-9]*\)[,)].* me=\([0-9]*\)\$/\1 \2/p" line) &&
		set -- $pid && test -n "$1" && test "$1" = "$2" &&
		grep -qx "$(rank_prefix_re $r 127.0.0.1) unended" out || exit 1
	done &&
	grep -qx "(head, rank=0, pid=[0-9]*) me=[0-9]*" out &&
	grep -qx "(worker2, rank=2, pid=[0-9]*, ip=127.0.0.1) me=[0-9]*" out &&
	skiff logs gp 1 >logs &&
	test "$(grep -c ") me=" logs)" = 3 &&
	skiff down -y gp >/dev/null
'

test_expect_success 'launch with no task: a cluster, the workdir synced, no job; exec runs in it' '
	mkdir -p dwd && echo payload >dwd/f.txt &&
	skiff launch --dryrun -c dev --workdir dwd >out &&
	grep -q "^Runs: *nothing: no job is made" out &&
	skiff launch -c dev --workdir dwd -i 300 >out 2>err &&
	grep -q "Cluster dev is up; the task has nothing to run, so no job was submitted" err &&
	skiff queue --json dev >q.json &&
	test "$(python3 -c "import json,sys; print(len(json.load(sys.stdin)))" <q.json)" = 0 &&
	test "$(jfield dev "c[\"autostop\"][\"idle_minutes\"]")" = 300 &&
	test "$(skiff exec dev "cat f.txt; basename \$PWD" 2>/dev/null)" = "payload
sky_workdir" &&
	expect_fail 2 skiff exec dev 2>err &&
	grep -q "expected a task YAML or a command" err &&
	skiff launch -c bare --cpus 1 2>err &&
	test "$(jfield bare "c[\"resources\"]")" = "1x[cpus=1]" &&
	printf "resources:\n  cpus: 1\n" >empty.yaml &&
	skiff launch -c bare empty.yaml 2>err &&
	grep -q "no job was submitted" err &&
	test "$(skiff queue --json bare | python3 -c "import json,sys; print(len(json.load(sys.stdin)))")" = 0 &&
	# Setup alone still runs, as a job; a job without a workdir starts in the home then.
	printf "setup: echo SETUP-ONLY \$PWD\n" >setup.yaml &&
	skiff launch -c bare setup.yaml >out 2>err &&
	grep -q "^SETUP-ONLY .*/bare/0\$" out &&
	skiff down dev bare >/dev/null
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
	skiff status --json gw >st.json &&
	python3 -c "import json; n = json.load(open(\"st.json\"))[0][\"nodes\"]; assert [x[\"supervisor\"] for x in n] == [None] * 3, n" &&
	skiff status -r --json gw >st.json 2>/dev/null &&
	python3 -c "
import json
n = json.load(open(\"st.json\"))[0][\"nodes\"]
s = [x[\"supervisor\"] for x in n]
assert [x[\"answers\"] for x in s] == [True, True, False], s
assert all(x[\"pid\"] > 1 and x[\"version\"] for x in s[:2]), s
assert s[2] == {\"answers\": False, \"why\": \"its skiff is gone\"}, s
" &&
	skiff down --purge gw >/dev/null 2>&1
'

test_expect_success 'queue: every UP cluster, or several; SkyPilot columns; --json has cluster' '
	skiff queue >q &&
	grep -q "^Job queue of cluster dev-1$" q && grep -q "^Job queue of cluster fl$" q &&
	# sky queue: ID, NAME, USER, SUBMITTED, STARTED, DURATION, RESOURCES, STATUS, LOG,
	# GIT COMMIT (the job table keeps the commit of the workdir in the metadata of a job).
	grep -q "^ID  *NAME  *USER  *SUBMITTED  *STARTED  *DURATION  *RESOURCES  *STATUS  *LOG  *GIT COMMIT  *EXIT CODES$" q &&
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

# sky cancel [-a] [-u] CLUSTER [JOB_IDS]: -u/--all-users cancels every user's jobs; here a
# glob names several clusters (each gets its latest, or all with -a).
test_expect_success 'cancel with a glob, -u/--all-users; job ids with a glob of two refused' '
	skiff exec -d dev-1 "sleep 300" 2>/dev/null &&
	skiff exec -d dev-2 "sleep 300" 2>/dev/null &&
	expect_fail 2 skiff cancel "dev-*" 1 2>err &&
	grep -q "job ids are one cluster.s, and .dev-\*. matches 2 clusters" err &&
	skiff cancel "dev-*" >out &&
	grep -q "^cancelled job [0-9]* on cluster dev-1$" out &&
	grep -q "^cancelled job [0-9]* on cluster dev-2$" out &&
	skiff exec -d dev-1 "sleep 300" 2>/dev/null &&
	skiff cancel -u dev-1 >out && grep -qx "cancelled all jobs on cluster dev-1" out &&
	wait_for "skiff queue dev-1 dev-2 >qq && ! grep -q \"RUNNING\\|PENDING\" qq" 20 &&
	expect_fail 1 skiff cancel "nomatch-*" 2>err &&
	grep -q "cluster nomatch-\* does not exist" err
'

# ssh HOST -- CMD and a pipe into ssh, as with OpenSSH.
test_expect_success 'skiff ssh C -- CMD; echo CMD | skiff ssh C; the exit status comes back' '
	test "$(skiff ssh dev-1 -- echo hi)" = hi &&
	test "$(echo "echo piped; basename \$HOME" | skiff ssh dev-1)" = "piped
0" &&
	expect_fail 3 skiff ssh dev-1 -- exit 3
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
	head -n 1 q | grep -q "^ID  *TASK  *NAME  *REQUESTED  *SUBMITTED  *TOT\. DURATION  *JOB DURATION  *#RECOVERIES  *STATUS  *POOL  *DETAILS\$" &&
	grep -q "^[0-9][0-9]*  *-  *named-one  *1x\[CPU:1+\]  .* 0  *SUCCEEDED  *skiff-jobs  *succeeded\$" q &&
	skiff jobs queue --json >q.json &&
	python3 -c "import json; v = json.load(open(\"q.json\")); assert all(isinstance(j[\"exit_codes\"], list) for j in v), v" &&
	skiff jobs logs --no-follow >out 2>/dev/null && grep -qx latest-one out &&
	head -n 1 out | grep -q "Job started\. Streaming logs\.\.\." &&
	tail -n 1 out | grep -q " Job finished (status: SUCCEEDED)\.\$" &&
	skiff jobs logs --no-follow -n named-one >out 2>/dev/null && grep -qx from-named out &&
	expect_fail 102 skiff jobs logs -n nosuch 2>/dev/null
'

test_expect_success 'jobs launch --num-jobs N: N jobs, each with its rank' '
	skiff jobs launch --num-jobs 3 -n many "echo rank=\$SKYPILOT_JOB_RANK of \$SKYPILOT_NUM_JOBS" >ids 2>err &&
	test $(wc -l <ids) = 3 && grep -q "not following" err &&
	for id in $(cat ids); do
		wait_for "skiff jobs queue | grep -q \"^$id .*SUCCEEDED\"" 60 || exit 1
	done &&
	for id in $(cat ids); do skiff jobs logs --no-follow $id 2>/dev/null; done >logs &&
	grep "^rank=" logs | sort >ranks &&
	printf "rank=0 of 3\nrank=1 of 3\nrank=2 of 3\n" >want && test_cmp want ranks &&
	test "$(grep -c "Job started\. Streaming logs\.\.\." logs)" = 3 &&
	expect_fail 2 skiff jobs launch --num-jobs 0 "true" 2>/dev/null
'

test_expect_success 'queue GIT COMMIT: the workdir'"'"'s commit at submit, - without one' '
	mkdir -p gitwd/sub nogitwd &&
	(cd gitwd && git init -q && echo v1 >f && git add f &&
		git -c user.name=t -c user.email=t@t commit -qm v1) &&
	c1=$(git -C gitwd rev-parse HEAD) &&
	(cd gitwd/sub && skiff launch -c gc --workdir .. "true") >/dev/null 2>&1 &&
	(cd gitwd && echo v2 >f && git -c user.name=t -c user.email=t@t commit -qam v2) &&
	c2=$(git -C gitwd rev-parse HEAD) &&
	skiff exec gc --workdir gitwd/sub "true" >/dev/null 2>&1 &&
	skiff exec gc --workdir nogitwd "true" >/dev/null 2>&1 &&
	skiff exec gc "true" >/dev/null 2>&1 &&
	skiff queue gc >q &&
	grep -q "^1 .* $c1  *0$" q && grep -q "^2 .* $c2  *0$" q &&
	grep -q "^3 .* -  *0$" q && grep -q "^4 .* -  *0$" q &&
	skiff queue --json gc | python3 -c "import json,sys
v = {j[\"id\"]: j[\"git_commit\"] for j in json.load(sys.stdin)}
assert v == {1: \"$c1\", 2: \"$c2\", 3: None, 4: None}, v" &&
	skiff down -y gc >/dev/null
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
	two=$(git -C repo rev-parse HEAD) &&
	skiff queue gw >q && grep -q "^1 .* $one  *0$" q && grep -q "^2 .* $two  *0$" q &&
	grep -q "^3 .* $one  *0$" q &&
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
