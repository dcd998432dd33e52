#!/bin/sh
# `skiff dashboard` with a cluster on real ssh nodes (sshd in network namespaces,
# tests/lib/nodes.sh), in a real Chromium: the cluster's row and page, each node's
# supervisor asked over ssh, the infra page's pool hosts booked by it, a gang job's log
# streaming from both nodes with SkyPilot's rank prefixes, and Down from the page freeing
# the hosts. Root only (skipped otherwise, a failure in CI).
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"
# shellcheck source=tests/lib/browser.sh
. "$SRC_DIR/tests/lib/browser.sh"
# shellcheck source=tests/lib/dashboard.sh
. "$SRC_DIR/tests/lib/dashboard.sh"

nodes_require_root
nodes_install_deps || { echo "Bail out! cannot install the packages the test nodes need"; exit 1; }
command -v python3 >/dev/null || test_skip_all "needs python3 to read the --json outputs"
command -v curl >/dev/null || test_skip_all "needs curl"

# ssh's control sockets live under SKIFF_HOME: a short path.
_t=${TMPDIR:-/tmp}
[ "${#_t}" -le 12 ] || _t=/tmp
export SKIFF_HOME=$_t/sk831.$$
rm -rf "$SKIFF_HOME"
mkdir -m 700 "$SKIFF_HOME" || { echo "Bail out! cannot create $SKIFF_HOME"; exit 1; }
export SKIFF_SSH_NODE_POOLS=$NODES_POOL_FILE
INFRA=ssh/$NODES_POOL

test_cleanup_hook() {
	browser_server_stop
	[ -z "${DASH_PID:-}" ] || kill "$DASH_PID" 2>/dev/null
	for _c in $("$SKIFF_BIN" status --json 2>/dev/null | python3 -c \
		"import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		timeout 60 "$SKIFF_BIN" down "$_c" >/dev/null 2>&1
	done
	nodes_down
	cp -a "$SKIFF_HOME" "$TRASH/home" 2>/dev/null
	rm -rf "$SKIFF_HOME"
}

test_expect_success 'nodes up: tn1, tn2' '
	nodes_up 2
'

# Each rank says its line, then waits: the log is followed while the job runs.
cat >"$TRASH/gang.yaml" <<'END_OF_TASK'
name: dash-gang
num_nodes: 2
run: |
  echo "rank $SKYPILOT_NODE_RANK says hello"
  sleep 300
END_OF_TASK

test_expect_success 'a 2-node cluster on the ssh pool, a gang job running on it' '
	skiff launch -c sg --infra "$INFRA" --num-nodes 2 -d gang.yaml >out 2>err &&
	wait_for "skiff queue --json sg | grep -q RUNNING" 30
'

dash_start

test_expect_success 'the API asks each node over ssh: both supervisors answer' '
	test "$(get st.json "/api/v1/clusters/sg?refresh=1")" = 200 &&
	python3 -c "
import json
c = json.load(open(\"st.json\"))[0]
assert c[\"status\"] == \"UP\" and c[\"infra\"] == \"$INFRA\", c
s = [n[\"supervisor\"] for n in c[\"nodes\"]]
assert [x[\"answers\"] for x in s] == [True, True] and all(x[\"pid\"] > 1 for x in s), s
assert [n[\"ip\"] for n in c[\"nodes\"]] == [\"10.200.0.11\", \"10.200.0.12\"], c
"
'

if ! browser_setup; then
	test_skip 'pages in Chromium' "$browser_why"
	dash_ends
	test_done
fi
browser_server_start

test_expect_success 'Chromium: the clusters page shows the ssh cluster UP on its pool' '
	pw text /clusters "tr[data-cluster=sg]" >out && cat out &&
	grep -q "^sg$INFRA" out && grep -q UP out
'

test_expect_success 'Chromium: the cluster page asks each node: rank 0 and rank 1 UP with their pids' '
	pw row /clusters/sg "tr[data-rank=\"0\"] td.supervisor" "UP pid " >out &&
	pw row /clusters/sg "tr[data-rank=\"1\"] td.supervisor" "UP pid " >out
'

test_expect_success 'Chromium: the infra page shows the pool hosts booked by the cluster' '
	pw text /infra "tr[data-row=\"ssh/$NODES_POOL/10.200.0.11\"]" >out && cat out &&
	grep -q "sg$" out &&
	pw text /infra "tr[data-row=\"ssh/$NODES_POOL/10.200.0.12\"]" >out && grep -q "sg$" out
'

# SkyPilot's prefixes, sky/skylet/log_lib.py: (head, rank=0, pid=N), (worker1, ...).
test_expect_success 'Chromium: the gang job log streams from both nodes, with the rank prefixes' '
	pw logs sg 1 "rank 0 says hello" "rank 1 says hello" >log.html &&
	grep -q "(head, rank=0, pid=[0-9]*) rank 0 says hello" log.html &&
	grep -q "(worker1, rank=1, pid=[0-9]*, ip=10.200.0.12) rank 1 says hello" log.html
'

# SKIFF_DASH_SHOTS=DIR: the pictures of docs/dashboard.md (infra.png, cluster.png) into DIR.
if [ -n "${SKIFF_DASH_SHOTS:-}" ]; then
	test_expect_success 'screenshots of the infra page and the cluster page' '
		pw shot /infra "$SKIFF_DASH_SHOTS/infra.png" "tr[data-row=\"ssh/$NODES_POOL/10.200.0.12\"]" &&
		pw shot /clusters/sg "$SKIFF_DASH_SHOTS/cluster.png" \
			"tr[data-rank=\"1\"] td.supervisor span.status" "tr[data-job=\"1\"] button"
	'
fi

test_expect_success 'Chromium: Down from the page takes the cluster away and frees both hosts' '
	pw click /clusters/sg "button.danger" accept "#note" done >d &&
	grep -q "confirm: Tear down cluster sg?" d &&
	wait_for "skiff status --json >st.json && ! grep -q \"\\\"sg\\\"\" st.json" 60 &&
	pw text /infra "tr[data-row=\"ssh/$NODES_POOL/10.200.0.12\"]" >out && grep -q "free$" out
'

dash_ends
test_done
