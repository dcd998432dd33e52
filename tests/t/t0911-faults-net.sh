#!/bin/sh
# Fault injection on the network: a node that disappears (its link taken down) while the
# launcher copies skiff to it (bootstrap) and while it syncs a workdir. Each must fail
# with an error naming the node, within seconds, and leave nothing half-installed that
# could run: no binary under its final name, no file of a cut-off sync under its final
# name, no job started. The link is slowed (tc tbf) so that the cut lands mid-transfer, and
# the cut is made only once the transfer's temp file is seen on the node. A node that
# comes back with another host key is refused. A node lost while streaming logs is in
# t0610. Root only (skipped otherwise, a failure in CI).
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

nodes_require_root
nodes_install_deps || { echo "Bail out! cannot install the packages the test nodes need"; exit 1; }
command -v tc >/dev/null || test_skip_all "needs tc (iproute2) to slow the link"

_t=${TMPDIR:-/tmp}
[ "${#_t}" -le 12 ] || _t=/tmp
export SKIFF_HOME=$_t/sk911.$$
rm -rf "$SKIFF_HOME"
mkdir -m 700 "$SKIFF_HOME" || { echo "Bail out! cannot create $SKIFF_HOME"; exit 1; }
export SKIFF_SSH_NODE_POOLS=$NODES_POOL_FILE
INFRA=ssh/$NODES_POOL
NODE_HOME=$NODES_DIR/tn1/home

test_cleanup_hook() {
	tc qdisc del dev "$(nodes_veth 1)" root 2>/dev/null
	nodes_heal 1 2>/dev/null
	timeout 60 "$SKIFF_BIN" down f1 >/dev/null 2>&1
	nodes_down
	cp -a "$SKIFF_HOME" "$TRASH/home" 2>/dev/null
	rm -rf "$SKIFF_HOME"
}

slow() { tc qdisc add dev "$(nodes_veth 1)" root tbf rate "$1" burst 32kbit latency 400ms; }
fast() { tc qdisc del dev "$(nodes_veth 1)" root 2>/dev/null; :; }
now() { date +%s.%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# The node's processes running a binary from its skiff bin dir.
node_skiffs() {
	procs exe-under "$NODE_HOME/.skiff/bin"
}

dd if=/dev/urandom of="$TRASH/big.bin" bs=1M count=3 2>/dev/null
mkdir -p "$TRASH/wd" && cp "$TRASH/big.bin" "$TRASH/wd/big.bin" && echo small >"$TRASH/wd/small.txt"
printf 'workdir: %s\nrun: touch "$HOME/JOB-RAN"\n' "$TRASH/wd" >"$TRASH/wd.yaml"

test_expect_success 'one node up' '
	nodes_up 1
'

test_expect_success 'cut during bootstrap: error naming the node; no binary installed' '
	slow 3mbit && rm -f rc &&
	{ { timeout 120 "$SKIFF_BIN" launch -c f1 --infra $INFRA -d "touch \"\$HOME/BOOT-RAN\"" >out 2>err; echo $? >rc; } & } &&
	wait_for "ls -A \"$NODE_HOME/.skiff/bin\" 2>/dev/null | grep -q \"\\.tmp\$\"" 60 &&
	nodes_partition 1 &&
	t1=$(now) &&
	wait_for "test -s rc" 120 &&
	secs_since $t1 >"$TRASH/boot.s" &&
	fast && nodes_heal 1 &&
	wait_for "nodes_ssh 1 true 2>/dev/null" 30 &&
	cat err && test "$(cat rc)" != 0 && test "$(cat rc)" != 124 &&
	grep -q "10.200.0.11" err &&
	! ls -A "$NODE_HOME/.skiff/bin" | grep -q "^skiff-[0-9a-f]*\$" &&
	test -z "$(node_skiffs)" &&
	test ! -e "$NODE_HOME/BOOT-RAN"
'
[ -s "$TRASH/boot.s" ] && echo "# bootstrap cut: the launcher failed $(cat "$TRASH/boot.s") s after the cut"

test_expect_success 'healed: the next launch installs a verified binary and runs' '
	{ timeout 120 "$SKIFF_BIN" launch -c f1 --infra $INFRA "touch \"\$HOME/BOOT-RAN\"" >out 2>&1 ||
		{ cat out; exit 1; }; } &&
	test -e "$NODE_HOME/BOOT-RAN" &&
	ls -A "$NODE_HOME/.skiff/bin" | grep -q "^skiff-$(sha256sum <"$SKIFF_BIN" | cut -c1-64)\$"
'

test_expect_success 'cut during a workdir sync: error naming the node; nothing half-written runs' '
	slow 3mbit && rm -f rc &&
	{ { timeout 120 "$SKIFF_BIN" exec f1 "$TRASH/wd.yaml" >out 2>err; echo $? >rc; } & } &&
	wait_for "ls -A \"$NODE_HOME/sky_workdir\" 2>/dev/null | grep -q \"^\\.skiff-sync-tmp\\.\"" 60 &&
	nodes_partition 1 &&
	t1=$(now) &&
	wait_for "test -s rc" 120 &&
	secs_since $t1 >"$TRASH/sync.s" &&
	fast && nodes_heal 1 &&
	wait_for "nodes_ssh 1 true 2>/dev/null" 30 &&
	cat err && test "$(cat rc)" != 0 && test "$(cat rc)" != 124 &&
	grep -q "10.200.0.11" err &&
	test ! -e "$NODE_HOME/sky_workdir/big.bin" &&
	test ! -e "$NODE_HOME/JOB-RAN"
'
[ -s "$TRASH/sync.s" ] && echo "# sync cut: the launcher failed $(cat "$TRASH/sync.s") s after the cut"

test_expect_success 'healed: the sync completes, byte for byte, and the job runs' '
	{ timeout 120 "$SKIFF_BIN" exec f1 "$TRASH/wd.yaml" >out 2>&1 || { cat out; exit 1; }; } &&
	cmp "$TRASH/big.bin" "$NODE_HOME/sky_workdir/big.bin" &&
	test -e "$NODE_HOME/JOB-RAN" &&
	! ls -A "$NODE_HOME/sky_workdir" | grep -q "^\\.skiff-sync-tmp\\."
'

test_expect_success 'a node that comes back with another host key is refused, by name' '
	d=$NODES_DIR/tn1 &&
	rm -f "$d/ssh_host_ed25519_key" "$d/ssh_host_ed25519_key.pub" &&
	ssh-keygen -q -t ed25519 -N "" -C impostor -f "$d/ssh_host_ed25519_key" &&
	nodes_restart 1 &&
	rm -f "$NODE_HOME/JOB-RAN" &&
	{ timeout 60 "$SKIFF_BIN" exec f1 "$TRASH/wd.yaml" >out 2>err; rc=$?; } &&
	cat err && test $rc != 0 && test $rc != 124 &&
	grep -q "node 10.200.0.11" err && grep -q "Host key verification failed" err &&
	test ! -e "$NODE_HOME/JOB-RAN"
'

test_done
