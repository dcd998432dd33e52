#!/bin/sh
# Where a command's CPU goes, by what its processes ran: prints figures, asserts nothing
# (not part of `make test`).
#
#   tests/bench/cpu_roles.sh [--keep FILE] -- COMMAND [ARGS...]
#
# Root only (perf records the whole machine: run it on a quiet one). COMMAND runs under
# `perf record -a` of three scheduler tracepoints (sched_process_fork, sched_process_exec,
# sched_stat_runtime); each process's runtime, all its threads together, is then summed
# by the last program it exec'd, and a fork that exec'd nothing counts as its parent's. A
# node's skiff (a binary under .skiff/bin/ of a local node) is told by what started it:
# a node's skiff started by a node's skiff is a supervisor; one started otherwise is the
# install session's `node up` (with the `sh` it replaced) or a follower's `node call`.
# The shims run as /proc/self/exe. --keep FILE keeps perf's recording.
#
# Example (docs/benchmarks.md): tests/bench/cpu_roles.sh -- build/skiff launch -y -c g
# --num-nodes 1000 --cpus 0.001 true, in a SKIFF_HOME (or HOME) of its own.
set -u
keep=
while [ $# -gt 0 ]; do
	case $1 in
	--keep) keep=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "usage: $0 [--keep FILE] -- COMMAND [ARGS...]" >&2; exit 2 ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--keep FILE] -- COMMAND [ARGS...]" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "cpu_roles: perf records the whole machine: run it as root" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
command -v perf >/dev/null 2>&1 || sh "$here/../lib/packages.sh" pkg linux-perf || exit 1
data=${keep:-$(mktemp /tmp/cpu_roles.XXXXXX)}
perf record -q -o "$data" -e sched:sched_process_fork -e sched:sched_process_exec \
	-e sched:sched_stat_runtime -a -- "$@"
rc=$?
echo "cpu_roles: $* exited $rc; load $(cut -d' ' -f1 /proc/loadavg) at the end"
perf script -i "$data" -F comm,pid,tid,event,trace 2>/dev/null >"$data.txt"
python3 - "$data.txt" <<'PY'
import collections, re, sys

parent, exe, runtime = {}, {}, collections.Counter()
line_re = re.compile(r"\s*(.*?)\s+(\d+)/(\d+)\s+(\S+):\s*(.*)$")
for line in open(sys.argv[1], errors="replace"):
    m = line_re.match(line)
    if not m:
        continue
    pid, event, trace = int(m.group(2)), m.group(4), m.group(5)
    if event.endswith("sched_process_fork"):
        parent.setdefault(int(re.search(r"child_pid=(\d+)", trace).group(1)), pid)
    elif event.endswith("sched_process_exec"):
        exe[pid] = re.search(r"filename=(\S+)", trace).group(1)
    elif event.endswith("sched_stat_runtime"):
        runtime[pid] += int(re.search(r"runtime=(\d+)", trace).group(1))

NODE = re.compile(r"/\.skiff/bin/skiff-[0-9a-f]{64}$")


def program(pid, depth=0):
    """What pid ran: its last exec, else its parent's (a fork that exec'd nothing)."""
    if pid in exe:
        return "node skiff" if NODE.search(exe[pid]) else exe[pid]
    if pid in parent and parent[pid] != pid and depth < 64:
        return program(parent[pid], depth + 1)
    return "(started before the recording)"


def role(pid):
    p = program(pid)
    if p == "node skiff":
        up = parent.get(pid)
        if up is not None and program(up) == "node skiff":
            return "node skiff: supervisor"
        return "node skiff: node up / node call (with its sh)"
    if p == "/proc/self/exe":
        return "/proc/self/exe (the shims)"
    return p


total, count = collections.Counter(), collections.Counter()
for pid, ns in runtime.items():
    r = role(pid)
    total[r] += ns
    count[r] += 1
whole = sum(total.values()) or 1
print(f"{whole / 1e9:9.2f} CPU-s in all")
for r, ns in total.most_common(12):
    print(f"{ns / 1e9:9.2f} CPU-s {100 * ns / whole:5.1f}%  {count[r]:6d} processes"
          f"  {ns / 1e6 / count[r]:8.2f} ms each  {r}")
PY
rm -f "$data.txt"
[ -n "$keep" ] || rm -f "$data"
exit "$rc"
