#!/bin/sh
# An SSH node pool whose hosts have names of over 80 characters (/etc/hosts entries for
# the two namespace nodes of tests/lib/nodes.sh): a 2-node gang's launch follows both
# ranks, each worker's line prefixed "(workerN, rank=N, pid=P, ip=HOST) " with the whole
# name (a 96-byte prefix died with BUG: xsnprintf once), and logs, exec and queue
# work. Root only (skipped otherwise, a failure in CI).
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

nodes_require_root
nodes_install_deps || { echo "Bail out! cannot install the packages the test nodes need"; exit 1; }
command -v python3 >/dev/null || test_skip_all "needs python3 to read the --json outputs"

# A short SKIFF_HOME keeps the ControlMasters in $SKIFF_HOME/ssh (t0610 says why).
_t=${TMPDIR:-/tmp}
[ "${#_t}" -le 12 ] || _t=/tmp
export SKIFF_HOME=$_t/sk613.$$
rm -rf "$SKIFF_HOME"
mkdir -m 700 "$SKIFF_HOME" || { echo "Bail out! cannot create $SKIFF_HOME"; exit 1; }

MARK=skiff-t0613-$$
# Two DNS names of 98 characters (labels of at most 63), unique to this run.
LONG1=tn1.$(printf 'a%.0s' $(seq 60)).$MARK.long-host-name.test
LONG2=tn2.$(printf 'b%.0s' $(seq 60)).$MARK.long-host-name.test
POOLS=$TRASH/pools.yaml
export SKIFF_SSH_NODE_POOLS=$POOLS
INFRA=ssh/longpool

hosts_clean() {
	# In place (cat >): /etc/hosts may be a bind mount, which a rename would not replace.
	grep -v "$MARK" /etc/hosts >"$TRASH/hosts.kept" && cat "$TRASH/hosts.kept" >/etc/hosts
}

test_cleanup_hook() {
	for _c in $("$SKIFF_BIN" status --json 2>/dev/null | python3 -c \
		"import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		timeout 60 "$SKIFF_BIN" down "$_c" >/dev/null 2>&1
	done
	nodes_down
	hosts_clean
	cp -a "$SKIFF_HOME" "$TRASH/home" 2>/dev/null
	rm -rf "$SKIFF_HOME"
}

test_expect_success 'nodes up: tn1, tn2, known by names of over 80 characters' '
	nodes_up 2 &&
	test ${#LONG1} -gt 80 && test ${#LONG2} -gt 80 &&
	printf "%s %s # %s\n%s %s # %s\n" "$(nodes_ip 1)" "$LONG1" "$MARK" \
		"$(nodes_ip 2)" "$LONG2" "$MARK" >>/etc/hosts &&
	cat >"$POOLS" <<-EOF &&
	longpool:
	  user: $NODES_USER
	  identity_file: $NODES_KEY
	  hosts:
	    - $LONG1
	    - $LONG2
	EOF
	ssh -F "$NODES_SSH_CONFIG" "$LONG1" hostname >h &&
	test "$(cat h)" = tn1
'

test_expect_success 'a 2-node launch follows both ranks, each prefixed with its whole host name' '
	{ skiff launch -c long --infra "$INFRA" --num-nodes 2 \
		"echo rank \$SKYPILOT_NODE_RANK on \$(hostname)" >out 2>err; rc=$?; } &&
	cat err out &&
	test $rc = 0 &&
	grep -qx "(head, rank=0, pid=[0-9]*) rank 0 on tn1" out &&
	grep -qx "(worker1, rank=1, pid=[0-9]*, ip=$LONG2) rank 1 on tn2" out
'

test_expect_success 'logs, exec and queue on it' '
	skiff logs long 1 >logs 2>&1 &&
	grep -qx "(head, rank=0, pid=[0-9]*) rank 0 on tn1" logs &&
	grep -qx "(worker1, rank=1, pid=[0-9]*, ip=$LONG2) rank 1 on tn2" logs &&
	skiff exec long --num-nodes 2 "echo exec \$SKYPILOT_NODE_RANK" >ex 2>&1 &&
	grep -qx "(worker1, rank=1, pid=[0-9]*, ip=$LONG2) exec 1" ex &&
	skiff logs long 2 >logs2 2>&1 &&
	grep -qx "(head, rank=0, pid=[0-9]*) exec 0" logs2 &&
	skiff queue long >q 2>&1 &&
	test "$(grep -c SUCCEEDED q)" = 2 &&
	! grep -rs "BUG:" "$SKIFF_HOME" --include="*.log"
'

test_expect_success 'down frees both hosts' '
	skiff down long >/dev/null 2>&1 &&
	skiff status >st 2>&1 &&
	! grep -q "^long " st
'

test_done
