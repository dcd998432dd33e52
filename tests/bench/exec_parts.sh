#!/bin/bash
# Where one `skiff exec C true` on an existing 1-node ssh cluster goes: prints figures,
# asserts nothing (not part of `make test`).
#
#   tests/bench/exec_parts.sh [--skiff build/skiff] [--runs 30]
#
# Root only: it starts one sshd node with tests/lib/nodes.sh (a network namespace) and
# tears it down at the end. Each run times `skiff exec C true` on the launcher's clock
# and reads the job's submitted_at, started_at and ended_at from the node's database (the
# node shares this machine's clock), then runs `ssh true` through the nodes' master, the
# floor: medians of launch -> submitted (the launcher's start, launcher.db, the submit's
# way to the supervisor), submitted -> RUNNING (the dispatch, the shim, the job's shell),
# RUNNING -> ended (the job and the end's commit), and ended -> exit (the end told to the
# follower, the logs' end, the status, launcher.db, the launcher's exit).
set -u
skiff=build/skiff runs=30
while [ $# -gt 0 ]; do
	case $1 in
	--skiff) skiff=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	*) echo "usage: $0 [--skiff B] [--runs N]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "exec_parts: the test node needs root" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
SRC_DIR=$(cd "$here/../.." && pwd)
export SRC_DIR
skiff=$(cd "$(dirname "$skiff")" && pwd)/$(basename "$skiff")
# shellcheck source=tests/lib/nodes.sh
. "$SRC_DIR/tests/lib/nodes.sh"
nodes_up 1 >/dev/null || { echo "exec_parts: the test node did not come up" >&2; exit 1; }
SKIFF_HOME=$(mktemp -d /tmp/skp.XXXXXX)
export SKIFF_HOME SKIFF_SSH_NODE_POOLS=$NODES_POOL_FILE
out=$(mktemp -d)
trap '"$skiff" down -y ep >/dev/null 2>&1; nodes_down; rm -rf "$SKIFF_HOME" "$out"' EXIT
"$skiff" launch -y -c ep --infra "ssh/$NODES_POOL" true >/dev/null 2>&1 ||
	{ echo "exec_parts: launch failed" >&2; exit 1; }
"$skiff" exec ep true >/dev/null 2>&1
for _ in $(seq "$runs"); do
	t0=$(date +%s.%N)
	"$skiff" exec ep true >/dev/null 2>&1
	t1=$(date +%s.%N)
	nodes_ssh 1 true
	t2=$(date +%s.%N)
	echo "$t0 $t1 $t2" >>"$out/times"
done
nodes_ssh 1 "sqlite3 ~/.skiff/node.db 'select submitted_at, started_at, ended_at from jobs order by id'" \
	>"$out/rows"
python3 - "$out/times" "$out/rows" "$runs" <<'PY'
import statistics, sys
t = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
rows = [tuple(map(float, l.split("|"))) for l in open(sys.argv[2])][-int(sys.argv[3]):]
parts = {k: [] for k in ("exec", "floor", "launch -> submitted", "submitted -> RUNNING",
                         "RUNNING -> ended", "ended -> exit")}
for (t0, t1, t2), (sub, start, end) in zip(t, rows):
    parts["exec"].append(t1 - t0)
    parts["floor"].append(t2 - t1)
    parts["launch -> submitted"].append(sub - t0)
    parts["submitted -> RUNNING"].append(start - sub)
    parts["RUNNING -> ended"].append(end - start)
    parts["ended -> exit"].append(t1 - end)
m = {k: statistics.median(v) * 1000 for k, v in parts.items()}
print("exec_parts: %d runs, medians in ms" % len(t))
print("  skiff exec C true            %6.1f  (%.2fx of the floor)" % (m["exec"], m["exec"] / m["floor"]))
print("  floor: ssh true (master)     %6.1f" % m["floor"])
for k in ("launch -> submitted", "submitted -> RUNNING", "RUNNING -> ended", "ended -> exit"):
    print("  %-28s %6.1f" % (k, m[k]))
PY
