#!/bin/sh
# A node in a pid namespace without a /proc of its own (`unshare --pid --fork` without
# --mount-proc): /proc numbers processes as the parent namespace does. Jobs end and
# `submit --follow` returns, a restarted supervisor does not take a live shim for dead, a
# killed shim's job is killed, a local cluster's exec and down return at once; a /proc in
# which we cannot be found is refused with one line. See lib/proc.h, docs/node.md.
. "$(dirname "$0")/lib.sh"

test_skip_unless_root
{ command -v unshare && command -v nsenter && command -v timeout; } >/dev/null ||
	test_skip_all "needs unshare, nsenter and timeout"
command -v python3 >/dev/null || test_skip_all "needs python3 to read --json"

test_cleanup_hook() {
	pkill -KILL -f "$TRASH" 2>/dev/null
}

# A chain of DEPTH shells, each waiting for the next: every one of them has a child.
cat >"$TRASH/decoy.sh" <<-\EOF
	n=$1
	if [ "$n" -gt 0 ]; then sh "$0" $((n - 1)) "$2"; else echo ready >"$2"; sleep 600; fi
	true
EOF

# in_pidns SCRIPT [TIMEOUT_S]: runs the file SCRIPT with sh as pid 1 of a new pid namespace
# B whose /proc is its parent's, A's. A has a /proc of its own, where pids 2-42 are the
# decoy chain, so that B's small pids name, in the /proc that B sees, processes that have
# children (what made a shim's sweep loop for ever). A hang is a failure: SCRIPT is
# killed, with both namespaces, after TIMEOUT_S (default 60).
in_pidns() {
	rm -f "$TRASH/ready" && mkfifo "$TRASH/ready" &&
	timeout "${2:-60}" unshare --pid --fork --kill-child --mount-proc sh -c '
		sh "$1" 40 "$4" &
		# Nothing else forks until the chain stands (read and cd are built in).
		read -r ready <"$4" && cd "$3" && exec unshare --pid --fork --kill-child sh "$2"
	' - "$TRASH/decoy.sh" "$1" "$PWD" "$TRASH/ready"
}

# The prelude of every script run in B: helpers, over the skiff under test.
cat >"$TRASH/prelude.sh" <<EOF
S=$SKIFF_BIN
EOF
cat >>"$TRASH/prelude.sh" <<-\EOF
	D=$PWD # jobs run in $HOME: what they write goes here
	status() {
		"$S" node queue --json "$1" |
			python3 -c "import json,sys; print(json.load(sys.stdin)[0]['status'])"
	}
	# until COND TIMEOUT_S: wait for a shell condition; 1 on timeout.
	until_true() {
		_i=0
		while ! eval "$1"; do
			_i=$((_i + 1))
			[ $_i -lt $(($2 * 50)) ] || return 1
			sleep 0.02
		done
	}
	# has_children N: /proc/N (the /proc we see) is a process with children.
	has_children() { cat /proc/$1/task/*/children 2>/dev/null | grep -q '[0-9]'; }
EOF

test_expect_success 'in such a namespace, submit --follow returns and the job is SUCCEEDED' '
	cat >t1.sh <<-\EOF &&
	. ./prelude.sh
	echo "pid $$ here, $(readlink /proc/self) in /proc" >where
	"$S" node up >up.out || exit 1
	timeout 20 "$S" node submit --follow "echo hi; echo \$PPID >$D/shim1.pid" >f1.out 2>&1
	echo $? >f1.rc
	# A leftover in the background: the sweep kills it, and the submit returns.
	timeout 20 "$S" node submit --follow "sleep 300 & echo \$PPID >$D/shim2.pid" >f2.out 2>&1
	echo $? >f2.rc
	status 1 >s1 && status 2 >s2
	for f in shim1.pid shim2.pid; do has_children "$(cat $f)" && echo yes >>collided; done
	timeout 20 "$S" node down >down.out 2>&1
	echo $? >down.rc
	EOF
	in_pidns t1.sh 90 &&
	cat where &&
	test "$(cat f1.rc)" = 0 && grep -q "^hi\$" f1.out &&
	test "$(cat s1)" = SUCCEEDED &&
	test "$(cat f2.rc)" = 0 && test "$(cat s2)" = SUCCEEDED &&
	test "$(cat down.rc)" = 0 &&
	# The case that looped: the shims numbers name processes with children in /proc.
	test "$(cat collided)" = "yes
yes"
'

test_expect_success 'a restarted supervisor re-adopts a live job whose shim /proc has not' '
	cat >t2.sh <<-\EOF &&
	. ./prelude.sh
	# Our next pids are past every pid of A: /proc has no process by those numbers.
	echo 500 >/proc/sys/kernel/ns_last_pid || exit 1
	"$S" node up >/dev/null || exit 1
	id=$("$S" node submit "echo \$PPID >$D/shim.pid; exec sleep 300") || exit 1
	until_true "test -s shim.pid" 20 || exit 1
	test -e /proc/$(cat shim.pid) && echo "/proc has it" >known
	timeout 20 "$S" node down >/dev/null 2>&1 && "$S" node up >/dev/null || exit 1
	status $id >after
	timeout 20 "$S" node cancel $id >/dev/null
	until_true "test \"\$(status $id)\" = CANCELLED" 20
	status $id >end
	timeout 20 "$S" node down >/dev/null 2>&1
	EOF
	in_pidns t2.sh 90 &&
	test ! -e known &&
	test "$(cat after)" = RUNNING &&
	test "$(cat end)" = CANCELLED
'

test_expect_success 'kill -9 of a shim: its job is killed too, and FAILED_DRIVER' '
	cat >t3.sh <<-\EOF &&
	. ./prelude.sh
	# Numbers /proc has no process by: the job is found by its tag alone.
	echo 500 >/proc/sys/kernel/ns_last_pid || exit 1
	"$S" node up >/dev/null || exit 1
	id=$("$S" node submit "echo \$PPID >$D/shim.pid; echo \$\$ >$D/job.pid; exec sleep 300") ||
		exit 1
	until_true "test -s job.pid" 20 || exit 1
	kill -KILL "$(cat shim.pid)"
	until_true "test \"\$(status $id)\" = FAILED_DRIVER" 20
	status $id >st
	until_true "! kill -0 $(cat job.pid) 2>/dev/null" 10 && echo gone >job.gone
	timeout 20 "$S" node down >/dev/null 2>&1
	EOF
	in_pidns t3.sh 90 &&
	test "$(cat st)" = FAILED_DRIVER &&
	test "$(cat job.gone)" = gone
'

test_expect_success 'a local cluster there: launch, exec and down return, down at once' '
	cat >t4.sh <<-\EOF &&
	. ./prelude.sh
	timeout 60 "$S" launch -y -c pns "echo first" >launch.out 2>&1
	echo $? >launch.rc
	timeout 30 "$S" exec pns "echo second" >exec.out 2>&1
	echo $? >exec.rc
	t0=$(date +%s%N)
	timeout 30 "$S" down -y pns >down.out 2>&1
	echo $? >down.rc
	echo $((($(date +%s%N) - t0) / 1000000)) >down.ms
	EOF
	in_pidns t4.sh 150 &&
	test "$(cat launch.rc)" = 0 && grep -q "^first\$" launch.out &&
	test "$(cat exec.rc)" = 0 && grep -q "^second\$" exec.out &&
	test "$(cat down.rc)" = 0 &&
	echo "down took $(cat down.ms) ms" &&
	test "$(cat down.ms)" -lt 4000
'

test_expect_success 'a /proc in which we are not found: node up refuses with one line, at once' '
	{ unshare --pid --fork --mount-proc sleep 60 & } &&
	wait_for "pgrep -P $! sleep >/dev/null" &&
	inner=$(pgrep -P $! sleep) &&
	{ timeout 20 nsenter -t "$inner" -m "$SKIFF_BIN" node up >out 2>err; echo $? >rc; } &&
	kill $inner &&
	test "$(cat rc)" != 0 && test "$(cat rc)" != 124 &&
	cat err &&
	test "$(wc -l <err)" = 1 &&
	grep -q "^skiff: error: cannot start the node supervisor: /proc shows no process of" err &&
	test ! -e "$SKIFF_HOME/supervisor.sock"
'

test_done
