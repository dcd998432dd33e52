#!/bin/sh
# The launcher under faults, on local infra: a launch killed while it submits (its job is
# never judged without its ranks, and is settled by asking the nodes by key), commands
# racing on one cluster (one at a time, by the cluster's lock), bad input that would
# block (a FIFO), and failures that must say why. See docs/reliability.md.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || test_skip_all "needs python3 to read --json"

test_cleanup_hook() {
	for p in $(cat "$TRASH"/stopped.* 2>/dev/null); do kill -CONT $p; done 2>/dev/null
	for c in $(skiff status --json 2>/dev/null | python3 -c "import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		timeout 60 "$SKIFF_BIN" down "$c" >/dev/null 2>&1
	done
	pkill -KILL -f "$TRASH" 2>/dev/null
}

# node_home CLUSTER RANK: the state dir of a local node.
node_home() { echo "$SKIFF_HOME/local/$1/$2/.skiff"; }
node_sup() { cat "$(node_home "$1" "$2")/supervisor.lock"; }
# jobq CLUSTER ID FIELD: a field of a cluster job from `queue --json`, as JSON.
jobq() {
	skiff queue --json "$1" |
		python3 -c "import json,sys; print(json.dumps([j for j in json.load(sys.stdin) if j['id'] == $2][0]['$3']))"
}
# nodeq CLUSTER RANK KEY: what rank's node has for a submit key: "ID STATUS", or nothing.
nodeq() {
	SKIFF_HOME=$(node_home "$1" "$2") skiff node queue --porcelain --key "$3" | cut -f1,2
}
key_of() {
	python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select submit_key from cluster_jobs where cluster=? and id=?', (sys.argv[2], int(sys.argv[3]))).fetchone()[0])" \
		"$SKIFF_HOME/launcher.db" "$1" "$2"
}
# submit_waiting CLUSTER RANK PID: launcher PID has sent its submit to the node's stopped
# supervisor on a connection of its own (cl_direct.h), queued on the socket, and waits
# in poll (syscall 7) for the answer: the node has the submit, unread.
submit_waiting() {
	_q=$(ss -xlH | awk -v p="$(node_home "$1" "$2")/supervisor.sock" '$5 == p { print $3 }') &&
	[ "${_q:-0}" -ge 1 ] &&
	read -r _sc _rest <"/proc/$3/syscall" && [ "$_sc" = 7 ]
}
# stop_node CLUSTER RANK [hide]: SIGSTOP the node's supervisor (hide: and move its socket
# away, so that a submit cannot even connect and keeps trying).
stop_node() {
	_p=$(node_sup "$1" "$2") &&
	echo $_p >"$TRASH/stopped.$1.$2" &&
	kill -STOP $_p &&
	if [ "${3:-}" = hide ]; then
		mv "$(node_home "$1" "$2")/supervisor.sock" "$(node_home "$1" "$2")/supervisor.sock.away"
	fi
}
cont_node() {
	if [ -e "$(node_home "$1" "$2")/supervisor.sock.away" ]; then
		mv "$(node_home "$1" "$2")/supervisor.sock.away" "$(node_home "$1" "$2")/supervisor.sock"
	fi &&
	kill -CONT $(cat "$TRASH/stopped.$1.$2") &&
	rm -f "$TRASH/stopped.$1.$2"
}

# ---- 4. a launch killed while it submits ------------------------------------------------------

test_expect_success 'a launch killed after the node got its submit: the job gets its true status' '
	skiff launch -c k1 "true" >/dev/null 2>&1 &&
	stop_node k1 0 &&
	{ "$SKIFF_BIN" launch -c k1 -y "exit 3" >launch.out 2>&1 & } &&
	launcher=$! &&
	wait_for "test \"\$(jobq k1 2 status)\" = \"\\\"INIT\\\"\"" 20 &&
	wait_for "submit_waiting k1 0 $launcher" &&
	kill -9 $launcher &&
	cont_node k1 0 &&
	wait_for "test \"\$(jobq k1 2 status)\" = \"\\\"FAILED\\\"\"" 20 &&
	test "$(jobq k1 2 exit_codes)" = "[3]" &&
	expect_fail 100 skiff logs --status k1 2 >st &&
	grep -q FAILED st &&
	test "$(nodeq k1 0 "$(key_of k1 2)/0" | cut -f2)" = FAILED
'

test_expect_success 'a launch killed before its submit reached the node: FAILED_DRIVER, never submitted' '
	stop_node k1 0 hide &&
	{ "$SKIFF_BIN" launch -c k1 -y "exit 0" >launch.out 2>&1 & } &&
	launcher=$! &&
	wait_for "pgrep -f \"$TRASH.*node call\" >/dev/null" 20 &&
	kill -9 $launcher &&
	pkill -9 -f "$TRASH.*node call" &&
	cont_node k1 0 &&
	test "$(jobq k1 3 status)" = "\"FAILED_DRIVER\"" &&
	jobq k1 3 reason | grep -q "never submitted" &&
	expect_fail 100 skiff logs --status k1 3 >st 2>err &&
	grep -q FAILED_DRIVER st &&
	grep -q "never submitted" err &&
	test "$(nodeq k1 0 "$(key_of k1 3)/0" | cut -f2)" = CANCELLED
'

test_expect_success 'a gang cut short after rank 0: its ranks are cancelled, the job FAILED_DRIVER' '
	skiff launch -c k2 --num-nodes 2 "true" >/dev/null 2>&1 &&
	stop_node k2 1 hide &&
	{ "$SKIFF_BIN" launch -c k2 -y --num-nodes 2 "sleep 60" >launch.out 2>&1 & } &&
	launcher=$! &&
	wait_for "test -n \"\$(nodeq k2 0 \"\$(key_of k2 2)/0\")\"" 20 &&
	kill -9 $launcher &&
	pkill -9 -f "$TRASH.*node call" &&
	cont_node k2 1 &&
	test "$(jobq k2 2 status)" = "\"FAILED_DRIVER\"" &&
	jobq k2 2 reason | grep -q "ranks that were are cancelled" &&
	wait_for "test \"\$(nodeq k2 0 \"\$(key_of k2 2)/0\" | cut -f2)\" = CANCELLED" &&
	test "$(nodeq k2 1 "$(key_of k2 2)/1" | cut -f2)" = CANCELLED
'

test_expect_success 'a job with no known rank is never judged SUCCEEDED' '
	python3 - "$SKIFF_HOME/launcher.db" <<-\EOF &&
	import sqlite3, sys, time
	d = sqlite3.connect(sys.argv[1])
	d.execute("insert into cluster_jobs (cluster, id, num_nodes, submitted_at) "
	          "values (\"k1\", 99, 1, ?)", (time.time(),))
	d.commit()
	EOF
	test "$(jobq k1 99 status)" = "\"FAILED_DRIVER\"" &&
	test "$(jobq k1 99 exit_codes)" = "[]" &&
	expect_fail 100 skiff logs --status k1 99 >/dev/null 2>&1
'

# ---- 5. commands racing on one cluster ---------------------------------------------------------

# no_node_procs CLUSTER: nothing runs as one of the cluster's local nodes any more.
no_node_procs() {
	for _p in $(pgrep -f "skiff" 2>/dev/null); do
		tr "\0" "\n" <"/proc/$_p/environ" 2>/dev/null |
			grep -q "^HOME=$SKIFF_HOME/local/$1/" && { echo "left: $_p"; return 1; }
	done
	return 0
}

test_expect_success 'launch and down of one cluster at once: one after the other, no orphan' '
	i=0 &&
	while [ $i -lt 30 ]; do
		{ "$SKIFF_BIN" launch -c race$i -d "true" >l.$i 2>&1 & } &&
		lp=$! &&
		sleep 0.0$((i % 5)) &&
		"$SKIFF_BIN" down race$i >d.$i 2>&1
		drc=$?
		wait $lp
		lrc=$?
		if [ $drc != 0 ]; then
			grep -q "does not exist" d.$i || { cat d.$i; exit 1; }
		fi
		if [ $lrc != 0 ]; then
			grep -q "^skiff: error: " l.$i || { echo "silent launch:"; cat l.$i; exit 1; }
		fi
		! grep -q "Directory not empty" d.$i || { cat d.$i; exit 1; }
		if skiff status race$i | grep -q "^race$i "; then
			skiff down race$i >/dev/null || exit 1
		fi
		no_node_procs race$i || exit 1
		test ! -e "$SKIFF_HOME/local/race$i" || { echo "race$i left its dirs"; exit 1; }
		i=$((i + 1))
	done
'

test_expect_success 'two downs of one cluster at once: both succeed, one says another did it' '
	skiff launch -c dd "true" >/dev/null 2>&1 &&
	{ "$SKIFF_BIN" down dd >a.out 2>a.err & } && pa=$! &&
	{ "$SKIFF_BIN" down dd >b.out 2>b.err & } && pb=$! &&
	{ wait $pa; ra=$?; } &&
	{ wait $pb; rb=$?; } &&
	cat a.out a.err b.out b.err &&
	for x in a b; do
		eval rc=\$r$x
		if [ $rc != 0 ]; then
			test $(grep -c "^skiff: error:" $x.err) = 1 || exit 1
			grep -q "does not exist" $x.err || exit 1
		fi
	done &&
	cat a.out b.out | grep -q "^cluster dd terminated$" &&
	! grep -q "Directory not empty" a.err b.err &&
	no_node_procs dd
'

test_expect_success 'a command waiting on a cluster says who holds it' '
	skiff launch -c lk "true" >/dev/null 2>&1 &&
	stop_node lk 0 &&
	{ "$SKIFF_BIN" exec lk "true" >e.out 2>&1 & } && ep=$! &&
	wait_for "submit_waiting lk 0 $ep" &&
	{ "$SKIFF_BIN" down lk >d.out 2>d.err & } && dp=$! &&
	wait_for "grep -q \"waiting for another skiff command on cluster lk (pid $ep: skiff exec)\" d.err" &&
	cont_node lk 0 &&
	{ wait $ep; erc=$?; } &&
	wait $dp &&
	# The exec lets go of the lock once its job is submitted: the down may cancel it (103),
	# or take the node away while the exec still follows (4: the job'"'"'s state unknown).
	case $erc in 0 | 103 | 4) ;; *) echo "exec: exit $erc"; false ;; esac &&
	grep -q "^cluster lk terminated$" d.out
'

test_expect_success 'every failing command says why, in one error line at least' '
	for cmd in "exec nosuch true" "down nosuch" "queue nosuch" "logs nosuch" \
		"launch --infra nosuch/x true" "start nosuch" "autostop nosuch -i 5"; do
		# shellcheck disable=SC2086
		"$SKIFF_BIN" $cmd >out 2>err && { echo "succeeded: $cmd"; exit 1; }
		grep -q "^skiff: error: " err || { echo "silent: $cmd"; cat err; exit 1; }
		! grep -q "said nothing more" err || { echo "bug line: $cmd"; exit 1; }
	done
'

# ---- 6. a FIFO as input ------------------------------------------------------------------------

test_expect_success 'a FIFO as a task file or env file is refused at once, not read' '
	mkfifo f.yaml f.env &&
	expect_fail 3 timeout 10 "$SKIFF_BIN" check f.yaml 2>err &&
	grep -q "^f.yaml:1:1: is not a regular file" err &&
	expect_fail 3 timeout 10 "$SKIFF_BIN" launch -c nofifo f.yaml 2>err &&
	grep -q "is not a regular file" err &&
	expect_fail 2 timeout 10 "$SKIFF_BIN" launch -c nofifo --env-file f.env "true" 2>err &&
	grep -q "not a regular file" err &&
	expect_fail 1 timeout 10 "$SKIFF_BIN" jobs launch -d f.yaml 2>err &&
	grep -q "not a regular file" err &&
	skiff status >st.out && ! grep -q nofifo st.out
'

test_done
