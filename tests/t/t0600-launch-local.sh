#!/bin/sh
# The launcher on the embedded default infra (local nodes on this machine).
. "$(dirname "$0")/lib.sh"

test_cleanup_hook() {
	for c in $(skiff status --json 2>/dev/null | python3 -c "import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		skiff down "$c" >/dev/null 2>&1
	done
	pkill -KILL -f "$TRASH" 2>/dev/null
}

field() {
	python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps($1))"
}

test_expect_success 'launch runs the example on local infra and prints its output' '
	cp "$SRC_DIR/examples/hello.yaml" . &&
	skiff launch -c c1 hello.yaml >out 2>err &&
	grep -q "^hello from skiff job 1 on " out &&
	grep -q "bootstrap" err && grep -q "submit" err &&
	skiff status >st && grep -q "^c1 .*local .*UP" st
'

test_expect_success 'status --json has name, status, infra, nodes, head, autostop' '
	skiff status --json >st.json &&
	python3 - <<-\EOF
	import json
	c = [c for c in json.load(open("st.json")) if c["name"] == "c1"][0]
	assert c["status"] == "UP" and c["infra"] == "local", c
	assert len(c["nodes"]) == 1 and c["head"] == c["nodes"][0]["ip"], c
	assert c["autostop"] is None, c
	EOF
'

test_expect_success 'a second launch reuses the node: no bootstrap round trip' '
	skiff launch -c c1 "echo again" >out 2>err &&
	grep -q "^again\$" out &&
	! grep -q bootstrap err
'

test_expect_success 'a node that lost its skiff is bootstrapped again on submit' '
	rm -rf "$SKIFF_HOME/local/c1/0/.skiff/bin" &&
	skiff exec c1 "echo healed" >out 2>err &&
	grep -q "^healed\$" out &&
	grep -q "copied to 1" err
'

test_expect_success 'exec runs a command on the cluster; queue lists the jobs' '
	skiff exec c1 "echo exec-ok; exit 0" >out &&
	grep -q "^exec-ok\$" out &&
	skiff queue c1 --json >q.json &&
	python3 - <<-\EOF
	import json
	jobs = json.load(open("q.json"))
	assert [j["id"] for j in jobs] == list(range(1, len(jobs) + 1)) and len(jobs) >= 3, jobs
	for j in jobs:
	    assert j["status"] == "SUCCEEDED" and j["exit_codes"] == [0], j
	    for k in ("name", "submitted_at", "started_at", "ended_at", "resources", "log_dir"):
	        assert k in j, k
	EOF
'

# A local node's supervisor listens on a socket of this machine: the launcher's requests
# that `node call` would pass on as they are go there straight. With no supervisor there
# (killed: a stale socket), the node call starts one, as on any node.
test_expect_success 'a local node: requests go to its supervisor'"'"'s socket, else through node call' '
	SKIFF_DEBUG=1 skiff exec -d c1 "echo direct" >out 2>err &&
	grep -q "node c1-0: .submit. went to its supervisor.s socket" err &&
	skiff logs c1 "$(sed -n "s/^Job \([0-9]*\) submitted.*/\1/p" err)" | grep -qx direct &&
	pkill -KILL -f "$SKIFF_HOME/local/c1/0/.skiff/bin/skiff-[0-9a-f]* __supervisor" &&
	test -S "$SKIFF_HOME/local/c1/0/.skiff/supervisor.sock" &&
	SKIFF_DEBUG=1 skiff exec -d c1 "echo started-again" >out 2>err &&
	! grep -q "went to its supervisor.s socket" err &&
	id=$(sed -n "s/^Job \([0-9]*\) submitted.*/\1/p" err) &&
	skiff logs c1 $id | grep -qx started-again &&
	SKIFF_DEBUG=1 skiff cancel c1 $id 2>err &&
	grep -q "node c1-0: .cancel. went to its supervisor.s socket" err
'

# exec's followed submit goes there too, asking for the logs on the same connection: the
# supervisor hands it to a `node stream` of its own, which ends when the launcher goes.
test_expect_success 'a local node: exec streams its logs from the supervisor'"'"'s socket' '
	expect_fail 100 env SKIFF_DEBUG=1 "$SKIFF_BIN" exec c1 \
		"echo streamed; echo err >&2; exit 6" >out 2>err &&
	grep -q "node c1-0: the followed submit went to its supervisor.s socket" err &&
	grep -qx streamed out && grep -qx err out &&
	grep -q "status: FAILED" err &&
	{ "$SKIFF_BIN" exec c1 "sleep 6400.$$" >/dev/null 2>&1 & } &&
	lpid=$! &&
	wait_for "pgrep -f \"node stream [0-9]* $SKIFF_HOME/local/c1/\" >/dev/null" 20 &&
	kill -9 $lpid &&
	wait_for "! pgrep -f \"node stream [0-9]* $SKIFF_HOME/local/c1/\" >/dev/null" 20 &&
	pgrep -f "sleep 6400.$$" >/dev/null &&
	skiff cancel c1 -a >/dev/null 2>&1 &&
	wait_for "! pgrep -f \"sleep 6400.$$\" >/dev/null" 20
'

test_expect_success 'a failing job: launch exits 100, logs --status says so' '
	expect_fail 100 skiff exec c1 "exit 4" >/dev/null 2>&1 &&
	expect_fail 100 skiff logs c1 --status >/dev/null 2>&1 &&
	skiff queue c1 --json | field "d[-1][\"exit_codes\"]" | grep -q "\[4\]"
'

test_expect_success 'env and secret values arrive verbatim; secrets stay out of command lines' '
	v=$(printf "a b\"c'"'"'d \$(touch pwned) \`x\`\nline2") &&
	home=$(ls -d "$SKIFF_HOME"/local/c1/0) &&
	rm -f "$home/envout" "$home/gate" &&
	skiff exec c1 -d --env "V=$v" --secret "S3CR=hunter2-$$" \
		"printf %s \"\$V\" >envout; while [ ! -e gate ]; do $(nap 0.05); done
		printf %s \"\$S3CR\" >secout" >/dev/null 2>&1 &&
	# Look while the job runs (it waits for the gate): its environment holds the secret,
	# which shows the scan sees it; no command line does.
	wait_for "test -e \"$home/envout\"" &&
	grep -l "hunter[2]-$$" /proc/[0-9]*/environ 2>/dev/null | grep -q . &&
	! grep -l "hunter[2]-$$" /proc/[0-9]*/cmdline 2>/dev/null | grep -q . &&
	touch "$home/gate" &&
	skiff logs c1 >/dev/null 2>&1 &&
	printf %s "$v" >want && cmp want "$home/envout" &&
	test "$(cat "$home/secout")" = "hunter2-$$" &&
	test ! -e "$home/pwned" && test ! -e pwned
'

test_expect_success 'workdir is synced and the job runs in it; .gitignore is honoured' '
	mkdir -p wd/sub && echo payload >wd/data.txt && echo nested >wd/sub/n.txt &&
	echo "secret.key" >wd/.gitignore && echo nope >wd/secret.key &&
	cat >wd.yaml <<-\EOF &&
	workdir: ./wd
	run: |
	  cat data.txt sub/n.txt
	  test ! -e secret.key && echo ignored-ok
	EOF
	skiff exec c1 wd.yaml >out &&
	grep -q "^payload\$" out && grep -q "^nested\$" out && grep -q "^ignored-ok\$" out
'

test_expect_success 'file_mounts put a local file and a directory on the node' '
	mkdir -p mdir && echo m1 >mdir/a && echo single >onefile &&
	cat >fm.yaml <<-EOF &&
	file_mounts:
	  ~/mnt/dir: $TRASH/mdir
	  ~/mnt/file.txt: $TRASH/onefile
	run: cat ~/mnt/dir/a ~/mnt/file.txt
	EOF
	skiff launch -c c1 fm.yaml >out &&
	grep -q "^m1\$" out && grep -q "^single\$" out &&
	# exec syncs the workdir only, as SkyPilot'"'"'s does: the mounts stay as they were.
	echo m2 >mdir/a && skiff exec c1 fm.yaml >out &&
	grep -q "^m1\$" out
'

# They were found by the sync, after the cluster was made (and a loop said so three times).
test_expect_success 'a missing workdir or mount, a workdir loop: one error, exit 3, no cluster' '
	printf "workdir: ./nowd\nrun: echo hi\n" >nowd.yaml &&
	expect_fail 3 skiff launch -c nw1 nowd.yaml 2>err &&
	test "$(wc -l <err)" = 1 &&
	grep -qx "nowd.yaml:1:10: workdir .\./nowd.: No such file or directory" err &&
	ln -s loopwd loopwd &&
	printf "workdir: loopwd\nrun: echo hi\n" >loop.yaml &&
	expect_fail 3 skiff launch -c nw2 loop.yaml 2>err &&
	test "$(wc -l <err)" = 1 && grep -q "^loop.yaml:1:10: workdir .loopwd.: " err &&
	expect_fail 3 skiff exec c1 loop.yaml 2>err &&
	test "$(wc -l <err)" = 1 && grep -q "^loop.yaml:1:10: workdir .loopwd.: " err &&
	printf "file_mounts:\n  ~/m: %s/nomount\nrun: echo hi\n" "$TRASH" >nom.yaml &&
	expect_fail 3 skiff launch -c nw3 nom.yaml 2>err &&
	test "$(wc -l <err)" = 1 &&
	grep -qxF "nom.yaml:2:3: file_mounts source '"'"'$TRASH/nomount'"'"' (for ~/m): No such file or directory" err &&
	expect_fail 3 skiff launch -c nw4 --workdir "$TRASH/nowd" echo hi 2>err &&
	test "$(wc -l <err)" = 1 &&
	grep -qxF -- "--workdir:1:1: workdir '"'"'$TRASH/nowd'"'"': No such file or directory" err &&
	expect_fail 3 skiff jobs launch -d nowd.yaml 2>err &&
	test "$(wc -l <err)" = 1 && grep -q "^nowd.yaml:1:10: workdir " err &&
	skiff status >st.out && ! grep -q "^nw[0-9] " st.out
'

test_expect_success 'detach, then cancel: CANCELLED and logs exits 103' '
	skiff exec c1 -d "sleep 9$$" >/dev/null 2>&1 &&
	wait_for "pgrep -f \"^sleep 9$$\" >/dev/null" &&
	skiff cancel c1 >/dev/null &&
	wait_for "! pgrep -f \"^sleep 9$$\" >/dev/null" &&
	# The shim records CANCELLED once the job is gone: a moment after the sleep is.
	wait_for "skiff logs c1 --status >/dev/null 2>&1; test \$? = 103"
'

test_expect_success 'Ctrl-C while following logs leaves the job running' '
	# A background job of a script ignores SIGINT: restore it, as a terminal has it.
	{ python3 -c "import os,signal,sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.setsid(); os.execv(sys.argv[1], sys.argv[1:])" \
		"$SKIFF_BIN" exec c1 "sleep 8$$; echo survived" >ctrlc.out 2>&1 & } &&
	wait_for "pgrep -f \"^sleep 8$$\" >/dev/null" &&
	launcher=$(pgrep -f "exec c1 sleep 8$$") &&
	kill -INT -$(ps -o pgid= -p $launcher | tr -d " ") &&
	wait_for "! kill -0 $launcher 2>/dev/null" &&
	pgrep -f "^sleep 8$$" >/dev/null &&
	expect_fail 101 skiff logs c1 --status >st 2>/dev/null && grep -qx "Job [0-9]*: RUNNING" st &&
	skiff cancel c1 >/dev/null
'

# A new cluster's followed launch: each rank's submit, and then its follower, go over the
# node's install session, still open from the bootstrap (no `node call` of their own; and
# a local node's `node up` is exec'd with no shell, its binary being linked already);
# Ctrl-C stops them, not the job, as it stops a follower of its own.
test_expect_success 'a new gang follows over its install sessions; Ctrl-C leaves the job' '
	{ SKIFF_DEBUG=1 python3 -c "import os,signal,sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.setsid(); os.execv(sys.argv[1], sys.argv[1:])" \
		"$SKIFF_BIN" launch -c gs --num-nodes 2 "sleep 6$$; echo survived" >gs.out 2>gs.err & } &&
	wait_for "test \$(pgrep -f \"^sleep 6$$\" | wc -l) = 2" &&
	test "$(grep -c "the followed submit went over the install session" gs.err)" = 2 &&
	test "$(grep -c "its skiff is here: .node up. runs with no shell first" gs.err)" = 2 &&
	test "$(pgrep -f "local/gs/[01]/.* node up --then-call" | wc -l)" = 2 &&
	! pgrep -f "local/gs/.* node call" &&
	launcher=$(pgrep -f "launch -c gs --num-nodes 2") &&
	kill -INT -$(ps -o pgid= -p $launcher | tr -d " ") &&
	wait_for "! kill -0 $launcher 2>/dev/null" &&
	wait_for "! pgrep -f \"local/gs/.* node up --then-call\" >/dev/null" &&
	test "$(pgrep -f "^sleep 6$$" | wc -l)" = 2 &&
	expect_fail 101 skiff logs gs --status >st 2>/dev/null && grep -qx "Job [0-9]*: RUNNING" st &&
	skiff down gs >/dev/null
'

test_expect_success 'a 3-node gang: ranks, IPs in rank order, SKYPILOT_* envs' '
	cat >gang.yaml <<-\EOF &&
	num_nodes: 3
	run: |
	  echo "rank=$SKYPILOT_NODE_RANK of=$SKYPILOT_NUM_NODES twin=$SKIFF_NODE_RANK"
	  echo "ips=$(echo "$SKYPILOT_NODE_IPS" | wc -l) task=$SKYPILOT_TASK_ID"
	  echo "info=$SKYPILOT_CLUSTER_INFO"
	EOF
	skiff launch -c g3 gang.yaml >out 2>err &&
	for r in 0 1 2; do grep -q "^$(rank_prefix_re $r "[0-9.]*") rank=$r of=3 twin=$r\$" out || exit 1; done &&
	test $(grep -c "ips=3 task=sky-.*_g3_1\$" out) = 3 &&
	grep -q "\"cluster_name\":\"g3\"" out
'

test_expect_success 'gang: the first rank to fail stops the others (137) and fails the job' '
	expect_fail 100 skiff exec --num-nodes 3 g3 \
		"if [ \$SKYPILOT_NODE_RANK = 1 ]; then sleep 0.5; exit 7; fi; sleep 3$$" >out 2>&1 &&
	wait_for "! pgrep -f \"^sleep 3$$\" >/dev/null" 20 &&
	skiff queue g3 --json | field "d[-1][\"exit_codes\"]" >codes &&
	test "$(cat codes)" = "[137, 7, 137]" &&
	skiff queue g3 --json | field "d[-1][\"status\"]" | grep -q FAILED
'

# A supervisor that dies is started again by the next call to its node, and its shims
# carry its jobs on: the gang watcher watches that rank again rather than fail the gang.
test_expect_success 'gang: a rank'"'"'s supervisor killed mid-job: watched again, the job runs on' '
	stops=$(grep -c "stopping the other ranks" "$SKIFF_HOME/gang.log" || :) &&
	skiff launch -d -c gk --num-nodes 2 "sleep 3; echo rank \$SKYPILOT_NODE_RANK done" \
		>/dev/null 2>&1 &&
	wait_for "grep -q \"job 1 of gk: watching 2 of its 2 rank(s)\" \"\$SKIFF_HOME/gang.log\"" &&
	kill -9 $(cat "$SKIFF_HOME/local/gk/1/.skiff/supervisor.lock") &&
	wait_for "grep -q \"job 1: rank 1.s node gk-1 answers again\" \"\$SKIFF_HOME/gang.log\"" 20 &&
	{ timeout 60 "$SKIFF_BIN" logs gk 1 >out 2>&1; rc=$?; } &&
	cat out && test $rc = 0 &&
	grep -q "rank 0 done" out && grep -q "rank 1 done" out &&
	skiff queue gk --json | field "d[0][\"status\"]" >st &&
	test "$(cat st)" = "\"SUCCEEDED\"" &&
	test "$(grep -c "stopping the other ranks" "$SKIFF_HOME/gang.log")" = "$stops" &&
	skiff down gk >/dev/null
'

# down stops the cluster's gang watchers before its nodes (even a stopped one): none can
# outlive it to act on the next cluster of the name. (A watcher that did would still know
# its job by the submit's key: t0200 checks of_key over the control socket.)
test_expect_success 'gang: the watcher of a cluster taken down leaves alone the next one of its name' '
	SKIFF_GANG_LOST_MS=1000 skiff launch -d -c gw --num-nodes 2 "sleep 6$$" >/dev/null 2>&1 &&
	wait_for "test -n \"\$(gang_watchers)\"" &&
	old=$(gang_watchers) &&
	wait_for "grep -q \"job 1 of gw: watching 2 of its 2 rank(s)\" \"\$SKIFF_HOME/gang.log\"" &&
	# One watch cut (its node supervisor killed) and not tried again within the bound
	# of 1 s the watcher was given: its node is lost, a rank to stop when it is back
	# (retried in 5 s).
	kill -9 $(cat "$SKIFF_HOME/local/gw/0/.skiff/supervisor.lock") &&
	wait_for "grep -q \"job 1: 1 rank(s) on unreachable nodes\" \"\$SKIFF_HOME/gang.log\"" &&
	kill -STOP $old &&
	skiff down gw >/dev/null &&
	wait_for "! kill -0 $old 2>/dev/null" 30 &&
	skiff launch -d -c gw --num-nodes 2 "sleep 7.$$; echo survived" >/dev/null 2>&1 &&
	# Followed to its end: launch -d returns at the submit, before the sleeps may have
	# started, so no sleep running yet was no end (CI saw RUNNING once).
	{ timeout 60 "$SKIFF_BIN" logs gw 1 >followed 2>&1; test $? != 124; } &&
	skiff queue gw --json | field "d[0][\"status\"]" >st &&
	test "$(cat st)" = "\"SUCCEEDED\"" &&
	test "$(skiff logs gw 1 --no-follow | grep -c survived)" = 2 &&
	skiff down gw >/dev/null
'

test_expect_success 'a gang one node refuses: the ranks that went in are taken back' '
	SKIFF_HOME="$SKIFF_HOME/local/g3/2/.skiff" skiff node up --cpus 1 >/dev/null &&
	printf "num_nodes: 3\nresources:\n  cpus: 2\nrun: sleep 4$$\n" >big.yaml &&
	skiff queue g3 --json | field "len(d)" >before &&
	expect_fail 3 skiff exec g3 big.yaml 2>err &&
	grep -q "node g3-2: submit failed" err &&
	! pgrep -f "^sleep 4$$" >/dev/null &&
	for r in 0 1; do
		SKIFF_HOME="$SKIFF_HOME/local/g3/$r/.skiff" skiff node queue --json |
			field "d[-1][\"status\"]" >st.$r && test "$(cat st.$r)" = "\"CANCELLED\"" ||
			exit 1
	done &&
	skiff queue g3 --json | field "len(d)" >after && test_cmp before after &&
	SKIFF_HOME="$SKIFF_HOME/local/g3/2/.skiff" skiff node up --cpus "" >/dev/null
'

test_expect_success 'logs --sync-down brings every rank'"'"'s logs to ~/sky_logs' '
	skiff logs g3 1 --sync-down >out &&
	grep -q "sky_logs/g3/1" out &&
	for r in 0 1 2; do
		grep -q "^rank=$r of=3" "$HOME/sky_logs/g3/1/rank-$r/run.log" || exit 1
	done
'

test_expect_success 'autostop is set on the cluster and shown by status' '
	skiff autostop c1 -i 7 >/dev/null &&
	skiff status --json | python3 -c "import json,sys; c=[c for c in json.load(sys.stdin) if c[\"name\"]==\"c1\"][0]; assert c[\"autostop\"]=={\"idle_minutes\":7,\"down\":False,\"wait_for\":\"jobs_and_ssh\"}, c"
'

test_expect_success 'stop and start keep the cluster; down removes it and its nodes' '
	skiff stop c1 >/dev/null && skiff status | grep -q "^c1 .*STOPPED" &&
	skiff start c1 >/dev/null && skiff status | grep -q "^c1 .*UP" &&
	skiff exec c1 "echo back" | grep -q "^back\$" &&
	skiff down c1 g3 >out && grep -q "cluster c1 terminated" out &&
	skiff status >st.out && ! grep -q "^c1 " st.out &&
	test ! -e "$SKIFF_HOME/local/c1" &&
	expect_fail 1 skiff queue c1 2>err && grep -q "does not exist" err
'

# Autostop minutes last one second here (SKIFF_TEST_MINUTE_MS, docs/testing.md).
fast() {
	SKIFF_TEST_MINUTE_MS=1000 "$SKIFF_BIN" "$@"
}

test_expect_success 'autostop: the head stops the cluster by itself; status learns it' '
	fast launch -c as1 --num-nodes 2 -i 1 --wait-for jobs "echo hi" >out 2>/dev/null &&
	grep -q "(worker1, rank=1, pid=[0-9]*, ip=.*) hi$" out &&
	wait_for "skiff status 2>err | grep -q \"^as1 .*STOPPED\"" 20 &&
	grep -q "cluster as1 was stopped by autostop" err &&
	grep -q "autostop: idle for 0.0166667 minute(s); no stop hook" \
		"$SKIFF_HOME/local/as1/0/.skiff/supervisor.log" &&
	for r in 0 1; do
		test ! -S "$SKIFF_HOME/local/as1/$r/.skiff/supervisor.sock" || exit 1
	done &&
	skiff status --json | python3 -c "import json,sys; c=[c for c in json.load(sys.stdin) if c[\"name\"]==\"as1\"][0]; assert c[\"autostop\"]=={\"idle_minutes\":1,\"down\":False,\"wait_for\":\"jobs\"}, c"
'

test_expect_success 'exec on a stopped cluster is refused; start sets autostop again' '
	expect_fail 1 skiff exec as1 "echo no" 2>err &&
	grep -q "cluster as1 is stopped" err &&
	fast start as1 >out && grep -qx "cluster as1 started" out &&
	test -S "$SKIFF_HOME/local/as1/0/.skiff/supervisor.sock" &&
	wait_for "skiff status 2>/dev/null | grep -q \"^as1 .*STOPPED\"" 20
'

test_expect_success 'launch on a stopped cluster starts it and runs the task' '
	fast launch -c as1 "echo again" >out 2>/dev/null &&
	grep -q "^again" out &&
	wait_for "skiff status 2>/dev/null | grep -q \"^as1 .*STOPPED\"" 20 &&
	skiff down as1 >/dev/null
'

test_expect_success 'a job that runs keeps the cluster up; wait-for none stops it anyway' '
	fast launch -c as2 -d -i 1 --wait-for jobs "sleep 2; echo slept" 2>/dev/null &&
	wait_for "skiff status 2>/dev/null | grep -q \"^as2 .*STOPPED\"" 30 &&
	skiff start as2 >/dev/null &&
	skiff queue as2 >q && grep -q "^1 .*SUCCEEDED" q &&
	skiff exec -d as2 "sleep 300" 2>/dev/null &&
	wait_for "skiff queue as2 | grep -q \"^2 .*RUNNING\"" 20 &&
	fast autostop as2 -i 1 --wait-for none >/dev/null &&
	wait_for "skiff status 2>/dev/null | grep -q \"^as2 .*STOPPED\"" 30 &&
	skiff start as2 >/dev/null &&
	wait_for "skiff queue as2 | grep -q \"^2 .*CANCELLED\"" 20 &&
	skiff down as2 >/dev/null
'

test_expect_success 'autodown: --down alone tears the cluster down after its job' '
	fast launch -c ad1 --down --wait-for jobs "echo bye" >out 2>/dev/null &&
	grep -q "^bye" out &&
	wait_for "skiff status 2>err >st.out && ! grep -q \"^ad1 \" st.out" 20 &&
	grep -q "cluster ad1 was torn down by autodown" err &&
	test ! -e "$SKIFF_HOME/local/ad1"
'

test_expect_success 'resource failover: alternatives in order; status shows the one taken' '
	cat >fo.yaml <<-\EOF &&
	resources:
	  ordered:
	    - cpus: 4096
	    - infra: ssh/no-such-pool
	    - cpus: 1
	      memory: 1+
	run: echo ran
	EOF
	skiff launch -c fo1 fo.yaml >out 2>err &&
	cat err &&
	grep -qx ran out &&
	grep -q "Trying resources 1 of 3: 1x\[cpus=4096\] on local" err &&
	grep -q "asks each node for 4096 CPUs, 0 GiB and 0 GPUs, but node fo1-0 has" err &&
	grep -q "Trying resources 3 of 3: 1x\[cpus=1, mem=1+\] on local" err &&
	skiff status >st && grep -q "^fo1 .*1x\[cpus=1, mem=1+\] .*UP" st &&
	test "$(ls "$SKIFF_HOME/local/fo1")" = 0
'

test_expect_success 'resource failover: none fits: one error lists each; no cluster is left' '
	cat >none.yaml <<-\EOF &&
	resources:
	  any_of:
	    - cpus: 4096
	    - accelerators: H100:8
	run: echo never
	EOF
	expect_fail 1 skiff launch -c fo2 none.yaml >out 2>err &&
	! grep -q never out &&
	grep -q "error: none of the task.s 2 resource alternatives can run:" err &&
	grep -q "^  1. 1x\[cpus=4096\] on local: it asks each node for 4096 CPUs" err &&
	grep -q "^  2. 1x\[cpus=0.5, H100:8\] on local: it asks each node for 0.5 CPUs, 0 GiB and 8 GPUs" err &&
	skiff status >st.out && ! grep -q "^fo2 " st.out &&
	test ! -e "$SKIFF_HOME/local/fo2"
'

test_expect_success 'resource failover on an existing cluster: it stays where it is' '
	cat >ex.yaml <<-\EOF &&
	resources:
	  ordered:
	    - infra: ssh/elsewhere
	      cpus: 1
	    - cpus: 4096
	    - cpus: 0.25
	run: echo fits
	EOF
	skiff launch -c fo1 ex.yaml >out 2>err &&
	grep -qx fits out &&
	expect_fail 1 skiff launch -c fo1 none.yaml 2>err &&
	grep -q "none of the task.s 2 resource alternatives can run" err &&
	skiff status >st && grep -q "^fo1 .*UP" st &&
	cat >ex2.yaml <<-\EOF &&
	resources:
	  ordered:
	    - infra: ssh/elsewhere
	run: echo never
	EOF
	expect_fail 1 skiff launch -c fo1 ex2.yaml >out 2>err &&
	! grep -q never out &&
	grep -q "error: the task.s resources (1x\[cpus=0.5\] on ssh/elsewhere) cannot run: cluster fo1 is on local" err &&
	skiff down fo1 >/dev/null
'

test_expect_success 'setup runs on every node of the cluster; run on num_nodes of them' '
	skiff launch -c st3 --num-nodes 3 true >/dev/null 2>&1 &&
	cat >setup.yaml <<-\EOF &&
	setup: echo "setup $SKYPILOT_SETUP_NODE_RANK of $(echo $SKYPILOT_SETUP_NODE_IPS | wc -w)" >>"$HOME/setup.log"
	run: echo "run $SKYPILOT_NODE_RANK of $SKYPILOT_NUM_NODES"
	EOF
	skiff launch -c st3 setup.yaml >out 2>err &&
	grep -q "job 2 on 1 node(s), its setup on all 3" err &&
	grep -qx "(head, rank=0, pid=[0-9]*) run 0 of 1" out &&
	test "$(grep -c " run " out)" = 1 &&
	for r in 0 1 2; do
		grep -qx "setup $r of 3" "$SKIFF_HOME/local/st3/$r/setup.log" || exit 1
	done &&
	skiff exec st3 setup.yaml >out 2>/dev/null &&
	test "$(cat "$SKIFF_HOME/local/st3/1/setup.log" | wc -l)" = 1
'

test_expect_success 'a setup that fails on a node that does not run the task fails the job' '
	cat >sfail.yaml <<-\EOF &&
	setup: test "$SKYPILOT_SETUP_NODE_RANK" != 2 || exit 7
	run: sleep 30
	EOF
	expect_fail 100 skiff launch -c st3 sfail.yaml >out 2>err &&
	grep -q "status: FAILED_SETUP" err &&
	skiff queue st3 >q && grep -q "^4 .*FAILED_SETUP .*137,0,7" q &&
	skiff down st3 >/dev/null
'

test_expect_success 'a 256-node gang runs and is followed; 256 exit codes; cancel reaches all' '
	skiff launch -c g256 --num-nodes 256 "echo r\$SKYPILOT_NODE_RANK" >out 2>err &&
	test "$(sort -u out | wc -l)" = 256 &&
	grep -qx "(worker255, rank=255, pid=[0-9]*, ip=127.0.0.1) r255" out &&
	skiff queue g256 --json >q.json &&
	python3 -c "import json; j = json.load(open(\"q.json\"))[-1]; assert j[\"status\"] == \"SUCCEEDED\" and j[\"exit_codes\"] == [0] * 256, j" &&
	skiff exec -d g256 --num-nodes 256 "sleep 3000$$" 2>/dev/null &&
	wait_for "skiff queue g256 | grep -q \"^2 .*RUNNING\"" 60 &&
	# RUNNING once a rank runs; the others start within moments of it.
	wait_for "test \"\$(pgrep -fc \"^sleep 3000$$\")\" = 256" 60 &&
	skiff cancel g256 2 >/dev/null &&
	wait_for "test \"\$(pgrep -fc \"^sleep 3000$$\")\" = 0" 60 &&
	skiff queue g256 --json >q.json &&
	python3 -c "import json; j = json.load(open(\"q.json\"))[-1]; assert j[\"status\"] == \"CANCELLED\" and len(j[\"exit_codes\"]) == 256, j" &&
	skiff down g256 >/dev/null
'

# A launcher holds descriptors per node it follows; where the soft limit of open files
# is below that (Debian's default 1,024 soft against a 1,000-node gang), it raises it to
# the hard one rather than fail the launch. A soft 64 against a 40-node gang here.
test_expect_success 'a gang past the soft limit of open files: the launcher raises it' '
	(ulimit -Sn 64 && skiff launch -c gfd --num-nodes 40 "echo r\$SKYPILOT_NODE_RANK") >out 2>err &&
	! grep -q "No file descriptors" err &&
	test "$(grep -c "^(.*) r[0-9]*$" out)" = 40 &&
	skiff down gfd >/dev/null
'

# Past the hard limit, the nodes bootstrap a few at a time within it (each holds 3
# descriptors until its job is followed, and a few more while it starts); a gang whose
# held ones alone do not fit is refused before any node is touched, with the limit named.
test_expect_success 'a gang near the hard limit of open files: a few at a time, or a clear refusal' '
	(ulimit -Sn 256 && ulimit -Hn 256 &&
	 SKIFF_DEBUG=1 skiff launch -c gfh --num-nodes 60 "echo r\$SKYPILOT_NODE_RANK") >out 2>err &&
	! grep -q "No file descriptors" err &&
	grep -q "cluster gfh: 2 of its 60 nodes bootstrap at once" err &&
	test "$(grep -c "^(.*) r[0-9]*$" out)" = 60 &&
	skiff down gfh >/dev/null &&
	(ulimit -Sn 256 && ulimit -Hn 256 &&
	 expect_fail 1 skiff launch -c gfh2 --num-nodes 100 "true") >out 2>err &&
	grep -q "cannot bootstrap the 100 nodes of cluster gfh2: .* may open 256 (raise" err &&
	! grep -q "No file descriptors" err &&
	! skiff status gfh2 >/dev/null 2>&1 &&
	! pgrep -f "/local/gfh2/" >/dev/null
'

test_expect_success 'bad input: unknown cluster, bad name, invalid YAML' '
	expect_fail 1 skiff exec nosuch "true" 2>err && grep -q "does not exist" err &&
	expect_fail 2 skiff launch -c "Bad_Name-" "true" 2>/dev/null &&
	printf "resources:\n  cpu: 2\nrun: x\n" >bad.yaml &&
	expect_fail 3 skiff launch -c ok1 bad.yaml 2>err &&
	grep -q "bad.yaml:2:3:" err &&
	skiff status >st.out && ! grep -q "^ok1 " st.out
'

test_expect_success 'down -a: every cluster but those of managed jobs' '
	skiff launch -c da1 -d "true" >/dev/null 2>&1 &&
	skiff launch -c da2 -d "true" >/dev/null 2>&1 &&
	skiff launch -c skiff-job-7 -d "true" >/dev/null 2>&1 &&
	expect_fail 2 skiff down -a da1 2>/dev/null &&
	skiff down -a >out 2>err &&
	grep -q "cluster da1 terminated" out && grep -q "cluster da2 terminated" out &&
	grep -q "skiff-job-7 belongs to managed jobs" err &&
	test "$(skiff status --json | python3 -c "import json,sys; print(*[c[\"name\"] for c in json.load(sys.stdin)])")" = skiff-job-7 &&
	skiff down skiff-job-7 >/dev/null &&
	skiff down -a >out && grep -q "No existing clusters" out
'

test_done
