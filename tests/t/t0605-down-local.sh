#!/bin/sh
# down leaves nothing of a local cluster running (issue 23: 7): once `skiff down` returns,
# no process of the cluster is left on this machine: none whose executable is one of its
# nodes' skiff binaries (supervisors, shims, followers, `node call` sessions), none of its
# jobs (one that ignores SIGTERM, a setup still running), no gang watcher. What outlives
# SIGKILL keeps the cluster and fails down, naming it, unless --purge. The same on SSH
# hosts is in t0610.
. "$(dirname "$0")/lib.sh"

test_cleanup_hook() {
	[ -z "${SPARE:-}" ] || kill -KILL "$SPARE" 2>/dev/null
	for c in $(skiff status --json 2>/dev/null | python3 -c "import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		skiff down --purge "$c" >/dev/null 2>&1
	done
	pkill -KILL -f "$TRASH" 2>/dev/null
}

command -v python3 >/dev/null || test_skip_all "needs python3 to read the --json outputs"

# left_of CLUSTER MARK: what of the cluster runs on this machine: a process whose
# executable is under its nodes' dirs, whose environment has one of them as HOME, or
# whose command line starts with MARK, a glob (its jobs' sleeps); and its gang watchers.
# Not this probe.
left_of() {
	_base=$SKIFF_HOME/local/$1
	# The mark (a glob) starts the command line: a probe that names it (the grep
	# counting these lines) is not one of the cluster's processes.
	procs exe-under "$_base" -o cmd "$2*" -o env-prefix "HOME=$_base/" &&
		gang_watchers
}

# A 2-node cluster whose setup sleeps (job 1 stays SETTING_UP) and a second job that
# ignores SIGTERM: both cancelled by down, the second only by SIGKILL after its grace.
cat >"$TRASH/setup.yaml" <<EOF
num_nodes: 2
setup: sleep 3001.$$
run: echo never
EOF

test_expect_success 'down of a 2-node cluster: a setup running, a job ignoring SIGTERM, a follower' '
	skiff launch -c dl1 -d setup.yaml >/dev/null 2>&1 &&
	skiff exec dl1 -d "trap \"\" TERM; sleep 3002.$$; echo survived" >/dev/null 2>&1 &&
	wait_for "test \$(left_of dl1 \"sleep 3001.$$\" | grep -c \"sleep 3001.$$\") = 2" 30 &&
	wait_for "test \$(left_of dl1 \"sleep 3002.$$\" | grep -c \"sleep 3002.$$\") = 2" 30 &&
	test -n "$(gang_watchers)" &&
	{ skiff logs dl1 2 --follow >follow.out 2>&1 & } &&
	wait_for "left_of dl1 XX | grep -q \"node logs --follow\"" 60 &&
	skiff down dl1 >out 2>err &&
	left_of dl1 "sleep 300[12].$$" >left &&
	cat out err left &&
	grep -qx "cluster dl1 terminated" out &&
	test ! -s left &&
	test ! -e "$SKIFF_HOME/local/dl1" &&
	wait_for "! grep -q survived follow.out && ! kill -0 $! 2>/dev/null" 20
'

# Nodes that are directories here with the launcher's own skiff are taken down by the
# launcher itself, all at once: each node's supervisor asked for its rows as it stops,
# what is left of all of them looked for in one reading of /proc a look. (A node with
# another build's skiff is asked by its own `node down --all`, as SSH hosts are: t0610.)
test_expect_success 'down of 6 local nodes at once: every job gone, one taken down in this process' '
	skiff launch -c dl4 --num-nodes 6 -d "trap \"\" TERM; setsid sleep 3007.$$ & sleep 3006.$$" >/dev/null 2>&1 &&
	wait_for "test \$(left_of dl4 \"sleep 300[67].$$\" | grep -c \"^[0-9]* sleep 300[67].$$\") = 12" 60 &&
	SKIFF_DEBUG=1 skiff down dl4 >out 2>err &&
	left_of dl4 "sleep 300[67].$$" >left &&
	cat out left &&
	grep -qx "cluster dl4 terminated" out &&
	grep -q "6 node(s) that are directories here: taken down in this process" err &&
	grep -q "down of 6 node(s): .* 6 of them answered with their jobs'"'"' rows" err &&
	grep -q "down of 6 node(s): .* look(s) at what is left" err &&
	test ! -s left &&
	test ! -e "$SKIFF_HOME/local/dl4"
'

# A node whose skiff is gone (its directory removed by hand under its job) has nothing to
# ask: down goes on, and the teardown kills what still runs as it (by its HOME).
test_expect_success 'a node whose directory was removed under its running job: down ends it all' '
	skiff launch -c dl7 --num-nodes 2 -d "sleep 3008.$$" >/dev/null 2>&1 &&
	wait_for "test \$(left_of dl7 \"sleep 3008.$$\" | grep -c \"^[0-9]* sleep 3008.$$\") = 2" 60 &&
	rm -rf "$SKIFF_HOME/local/dl7/1" &&
	skiff down dl7 >out 2>err &&
	left_of dl7 "sleep 3008.$$" >left &&
	cat out err left &&
	grep -qx "cluster dl7 terminated" out &&
	test ! -s left &&
	test ! -e "$SKIFF_HOME/local/dl7" &&
	skiff status >st &&
	! grep -q "^dl7 " st
'

# Only a launch makes a node: exec on a node whose directory is gone says so and makes
# nothing (no directory, no supervisor); a launch makes it again, sets it up and runs.
test_expect_success 'a node whose directory was removed: exec says it is gone; launch makes it again' '
	printf "setup: echo set up >>~/setup.runs\nrun: echo ran\n" >remake.yaml &&
	skiff launch -c dl8 remake.yaml >/dev/null 2>&1 &&
	kill -KILL $(head -1 "$SKIFF_HOME/local/dl8/0/.skiff/supervisor.lock") &&
	rm -rf "$SKIFF_HOME/local/dl8/0" &&
	expect_fail 1 skiff exec dl8 "echo never" >out 2>err &&
	cat out err &&
	grep -q "^skiff: error: node dl8/0 (127.0.0.1): its directory .$SKIFF_HOME/local/dl8/0. is gone\$" err &&
	! grep -q "cannot cancel" err && ! grep -q never out &&
	test ! -e "$SKIFF_HOME/local/dl8/0" &&
	skiff launch -c dl8 remake.yaml >out 2>err &&
	cat out err &&
	grep -q "node 0.s directory was gone; made again" err &&
	grep -qx ran out &&
	test "$(cat "$SKIFF_HOME/local/dl8/0/setup.runs")" = "set up" &&
	skiff exec dl8 "echo again" >out &&
	grep -qx again out &&
	skiff down dl8 >/dev/null &&
	test ! -e "$SKIFF_HOME/local/dl8"
'

test_expect_success 'plain node down still leaves a job running (the cancel-then-stop is down'"'"'s)' '
	skiff launch -c dl2 -d "sleep 3003.$$" >/dev/null 2>&1 &&
	wait_for "left_of dl2 \"sleep 3003.$$\" | grep -q \"sleep 3003.$$\"" 30 &&
	exe=$(ls "$SKIFF_HOME"/local/dl2/0/.skiff/bin/skiff-* | head -1) &&
	HOME=$SKIFF_HOME/local/dl2/0 SKIFF_HOME= "$exe" node down >out &&
	grep -q "1 job(s) keep running" out &&
	left_of dl2 "sleep 3003.$$" | grep -q "sleep 3003.$$" &&
	skiff down dl2 >/dev/null 2>err &&
	left_of dl2 "sleep 3003.$$" >left &&
	cat err left &&
	test ! -s left
'

test_expect_success 'a process that outlives SIGKILL: down names it, fails and keeps the cluster' '
	skiff launch -c dl3 -d "sleep 3004.$$" >/dev/null 2>&1 &&
	wait_for "left_of dl3 \"sleep 3004.$$\" | grep -q \"sleep 3004.$$\"" 30 &&
	cp "$(command -v sleep)" "$SKIFF_HOME/local/dl3/0/.skiff/bin/zz-sleep" &&
	{ "$SKIFF_HOME/local/dl3/0/.skiff/bin/zz-sleep" 3005.$$ & } &&
	SPARE=$! &&
	echo "$SPARE" >spare.pid &&
	{ SKIFF_TEST_DOWN_SPARE=$SPARE skiff down dl3 >out 2>err; rc=$?; } &&
	cat out err &&
	test "$rc" = 1 &&
	grep -q "node dl3-0 (rank 0): left running after SIGKILL: pid $SPARE (.*zz-sleep 3005.$$, state S)" err &&
	grep -q "cluster dl3 is kept: 1 of its nodes may still run something of it" err &&
	test "$(grep -c "dl3" err)" = 2 &&
	skiff status >st && grep -q "^dl3 " st &&
	left_of dl3 "sleep 3004.$$" >left &&
	! grep -q "sleep 3004.$$" left
'

test_expect_success '... and down --purge forgets it anyway, saying what is left is yours' '
	SPARE=$(cat spare.pid) &&
	SKIFF_TEST_DOWN_SPARE=$SPARE skiff down --purge dl3 >out 2>err &&
	cat out err &&
	grep -qx "cluster dl3 terminated" out &&
	grep -q "left running after SIGKILL: pid $SPARE" err &&
	grep -q "forgotten anyway (--purge)" err &&
	test "$(skiff status)" = "No existing clusters."
'

test_done
