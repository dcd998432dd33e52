#!/bin/sh
# The test-node library (tests/lib/nodes.sh) that the integration tests use for real
# peers: sshd nodes in network namespaces, a busybox-only node, partitions, killed nodes,
# a failed nodes_up, a script that dies with its nodes up, and a teardown that leaves
# no namespace, link, process or user behind.
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

nodes_require_root
nodes_install_deps || { echo "Bail out! cannot install the packages the test nodes need"; exit 1; }

test_cleanup_hook() { nodes_down; }

# What the teardown of the nodes of pid $1 (scratch dir $2) must leave: nothing.
assert_gone() {
	ns=$(ip netns list | awk -v p="skn$1-" 'index($1, p) == 1')
	test -z "$ns" || { echo "netns left: $ns"; return 1; }
	links=$(ip -o link show | grep -E ": (skv$1-[0-9]+|skbr$1)[:@]")
	test -z "$links" || { echo "links left: $links"; return 1; }
	procs=$(pgrep -a -f "$2/")
	test -z "$procs" || { echo "processes left: $procs"; return 1; }
	return 0
}

# Whether nodes_down removes the scratch dir now (it keeps it after a failed test).
dir_removed() {
	[ "$test_failed" = 0 ] && [ -z "${SKIFF_TEST_KEEP:-}" ]
}

# ssh to a node must fail, and fail by itself: 124 would mean that it hung until timeout.
ssh_fails() {
	timeout 20 ssh -F "$NODES_SSH_CONFIG" "$1" true 2>ssh.err
	rc=$?
	case $rc in
	0) echo "ssh $1 worked"; return 1 ;;
	124) echo "ssh $1 hung (killed by the timeout 20 guard)"; return 1 ;;
	esac
	return 0
}

# ms_since T0 [DIVISOR]: milliseconds since T0 (date +%s.%N), divided by DIVISOR.
ms_since() {
	awk -v a="$1" -v b="$(date +%s.%N)" -v n="${2:-1}" 'BEGIN { printf "%.1f", (b - a) * 1000 / n }'
}

test_expect_success 'nodes_up starts 3 nodes, node 2 busybox-only' '
	t0=$(date +%s.%N) &&
	nodes_up 3 --busybox 2 &&
	ms_since $t0 >"$TRASH/up.ms" &&
	test -s "$NODES_SSH_CONFIG" && test -s "$NODES_KEY" && test "$(cat "$NODES_DIR/n")" = 3 &&
	grep -q "^$NODES_POOL:" "$NODES_POOL_FILE" &&
	test "$(grep -c "^    - ip: 10\.200\.0\.1[123]\$" "$NODES_POOL_FILE")" = 3 &&
	grep -A1 "ip: 10.200.0.12" "$NODES_POOL_FILE" | grep -q "user: $NODES_BB_USER"
'
[ -s "$TRASH/up.ms" ] && echo "# nodes_up 3 --busybox 2: $(cat "$TRASH/up.ms") ms"

test_expect_success 'each node answers with its own hostname, by name and by address' '
	for i in 1 2 3; do
		by_name=$(ssh -F "$NODES_SSH_CONFIG" tn$i hostname) &&
		by_ip=$(ssh -F "$NODES_SSH_CONFIG" "$(nodes_ip $i)" hostname) &&
		by_fn=$(nodes_ssh $i hostname) || exit 1
		test "$by_name $by_ip $by_fn" = "tn$i tn$i tn$i" ||
			{ echo "tn$i: $by_name $by_ip $by_fn"; exit 1; }
	done &&
	test "$(nodes_ip 3)" = 10.200.0.13
'

test_expect_success 'ssh through the ControlMaster is fast (20 commands)' '
	nodes_ssh 1 true &&
	t0=$(date +%s.%N) &&
	i=0 &&
	while [ $i -lt 20 ]; do nodes_ssh 1 true || exit 1; i=$((i + 1)); done &&
	ms_since $t0 20 >"$TRASH/cm.ms" &&
	t0=$(date +%s.%N) &&
	ssh -F "$NODES_SSH_CONFIG" -o ControlPath=none tn1 true &&
	ms_since $t0 >"$TRASH/fresh.ms"
'
[ -s "$TRASH/cm.ms" ] && echo "# ssh via ControlMaster: $(cat "$TRASH/cm.ms") ms per command;" \
	"a fresh connection: $(cat "$TRASH/fresh.ms") ms"

test_expect_success 'each node has a private HOME and its own PID namespace' '
	nodes_ssh 1 "echo one >\$HOME/marker" &&
	test "$(nodes_ssh 1 "cat \$HOME/marker")" = one &&
	test "$(nodes_ssh 3 "test -e \$HOME/marker && echo shared || echo private")" = private &&
	! test -e "$NODES_DIR/home/marker" &&
	test "$(nodes_ssh 1 "cat /proc/1/comm")" = sshd &&
	test "$(nodes_ssh 2 "cat /proc/1/comm")" = sshd
'

test_expect_success 'the busybox node has no bash, no python3, no /lib; the others have bash' '
	nodes_ssh 2 "for f in /bin/bash /usr/bin/bash /usr/bin/python3 /lib/ld-linux-x86-64.so.2; do
		test -e \$f && echo has \$f; done; echo checked" >bb.out &&
	echo checked >bb.want &&
	test_cmp bb.want bb.out &&
	test "$(nodes_ssh 2 "command -v python3 || command -v bash || echo none")" = none &&
	test "$(nodes_ssh 2 "if ls /lib >/dev/null 2>&1 && test -n \"\$(ls -A /lib)\"; then
		echo lib; else echo no-lib; fi")" = no-lib &&
	test "$(nodes_ssh 2 "id -un")" = "$NODES_BB_USER" &&
	test "$(nodes_ssh 1 "test -x /bin/bash && ls -A /lib | head -n 1 | wc -l")" = 1
'

test_expect_success 'a static binary sent over ssh runs on the busybox node' '
	if command -v musl-gcc >/dev/null; then
		cat >hello.c <<-\EOF &&
		#include <stdio.h>
		#include <unistd.h>
		int main(void)
		{
			char h[64] = "";
			gethostname(h, sizeof h - 1);
			printf("static ok on %s\n", h);
			return 0;
		}
		EOF
		musl-gcc -static -O2 -o hello hello.c &&
		ssh -F "$NODES_SSH_CONFIG" tn2 "cat > /tmp/x && chmod +x /tmp/x && /tmp/x" \
			<hello >hello.out &&
		echo "static ok on tn2" >hello.want
	else
		ssh -F "$NODES_SSH_CONFIG" tn2 \
			"cat > /tmp/busybox && chmod +x /tmp/busybox && /tmp/busybox hostname" \
			</bin/busybox >hello.out &&
		echo tn2 >hello.want
	fi &&
	test_cmp hello.want hello.out
'

test_expect_success 'a partitioned node fails ssh by itself; the others work; heal restores it' '
	nodes_ssh 3 true &&
	nodes_partition 3 &&
	ssh_fails tn3 &&
	nodes_ssh 1 true &&
	nodes_heal 3 &&
	wait_for "nodes_ssh 3 true" 20 &&
	test "$(nodes_ssh 3 hostname)" = tn3
'

test_expect_success 'nodes_kill kills the node and everything in it; nodes_restart brings it back' '
	ns=$(nodes_netns 1) &&
	nodes_ssh 1 "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo started" >started &&
	grep -q started started &&
	wait_for "for p in \$(ip netns pids $ns); do cat /proc/\$p/comm; done | grep -qx sleep" 10 &&
	nodes_kill 1 &&
	wait_for "test -z \"\$(ip netns pids $ns)\"" 10 &&
	ssh_fails tn1 &&
	nodes_restart 1 &&
	test "$(nodes_ssh 1 hostname)" = tn1
'

test_expect_success 'nodes_down leaves no netns, link, sshd, ssh, user or dir; twice is fine' '
	id=$NODES_ID && dir=$NODES_DIR &&
	read -r wd wds <"$dir/watchdog.pid" &&
	nodes_down &&
	nodes_down &&
	assert_gone "$id" "$dir" &&
	{ ! dir_removed || ! test -e "$dir"; } &&
	! _nodes_alive "$wd" "$wds" &&
	if flock -n "$NODES_LOCK" true; then
		# Nobody else holds the test network, so no test user may exist.
		! getent passwd "$NODES_USER" && ! getent passwd "$NODES_BB_USER"
	fi
'

test_expect_success 'a nodes_up that fails midway tears down what it started' '
	cat >fakesshd <<-\EOF &&
	#!/bin/sh
	case $1 in -t) exit 0 ;; esac
	echo fake sshd refuses to start >&2
	exit 1
	EOF
	chmod +x fakesshd &&
	! NODES_SSHD=$TRASH/fakesshd nodes_up 2 2>up.err &&
	cat up.err &&
	grep -q "sshd exited" up.err &&
	grep -q "fake sshd refuses" up.err &&
	assert_gone "$NODES_ID" "$NODES_DIR" &&
	{ ! dir_removed || ! test -e "$NODES_DIR"; } &&
	nodes_down
'

test_expect_success 'a script that dies with its nodes up is cleaned up by the watchdog' '
	cat >child.sh <<-EOF &&
	SRC_DIR="$SRC_DIR"
	. "$SRC_DIR/tests/lib/nodes.sh"
	echo \$\$ >child.pid
	nodes_up 2 --busybox 2 || exit 1
	echo \$NODES_DIR >child.dir
	kill -9 \$\$
	EOF
	# It kills itself (kill -9 $$): 128 + 9.
	expect_fail 137 sh child.sh 2>child.err &&
	cat child.err &&
	cpid=$(cat child.pid) && cdir=$(cat child.dir) &&
	# A limit, not a timing: the teardown forks a few hundred tools, which took more than
	# 30 s once beside the rest of the suite.
	if ! wait_for "assert_gone $cpid $cdir >/dev/null" 120; then
		assert_gone "$cpid" "$cdir"
		cat "$cdir/watchdog.log"
		false
	fi &&
	grep -q "without nodes_down" "$cdir/watchdog.log" &&
	rm -rf "$cdir"
'

test_done
