#!/bin/sh
# Slurm infra benchmarks: prints figures and ratios, asserts nothing (not part of
# `make test`).
#
#   tests/bench/slurm_bench.sh [--skiff build/skiff] [--runs 30] [--submit-runs 15]
#
# Root only: starts a private one-node Slurm (tests/lib/slurm.sh: munged, slurmctld,
# slurmd tn0, ports 16837-16838) and stops it at the end. In one run, next to its floor:
#   exec     `skiff exec -d C true` and `skiff exec C true` on a 1-node slurm cluster vs a
#            bare `srun --jobid=J --overlap -N1 -n1 -w tn0 true` into the same allocation
#            (hyperfine, alternating);
#   submit   submit-to-running of a small job (it writes its start time to a file):
#            through skiff on the allocation (`skiff exec -d`) vs the same job through
#            `srun` and `sbatch --wrap` as new Slurm jobs, and through `srun --overlap`
#            in the allocation (runs interleaved, one of each per round).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
skiff=$root/build/skiff
runs=30
sruns=15
while [ $# -gt 0 ]; do
	case $1 in
	--skiff) skiff=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--submit-runs) sruns=$2; shift 2 ;;
	*) echo "usage: $0 [--skiff BIN] [--runs N] [--submit-runs N]" >&2; exit 2 ;;
	esac
done
case $skiff in /*) ;; *) skiff=$(pwd)/$skiff ;; esac
[ "$(id -u)" = 0 ] || { echo "slurm_bench: needs root (it starts slurmd)" >&2; exit 1; }
[ -x "$skiff" ] || { echo "slurm_bench: $skiff is not built" >&2; exit 1; }
SRC_DIR=$root
# shellcheck source=tests/lib/slurm.sh
. "$root/tests/lib/slurm.sh"
slurm_install_deps || exit 1
command -v hyperfine >/dev/null || sh "$here/setup.sh" || exit 1

W=$(mktemp -d /tmp/skiff-sbench.XXXXXX) || exit 1
chmod 755 "$W"
export SKIFF_HOME="$W/home" HOME="$W/userhome" SKIFF_SLURM_NODE_ROOT="$W/nodes" SLURM_PORT=16837
mkdir -p "$HOME" "$SKIFF_SLURM_NODE_ROOT"

# shellcheck disable=SC2317 # called by the trap
bench_cleanup() {
	trap - EXIT INT TERM
	"$skiff" down bench >/dev/null 2>&1
	slurm_stop
	rm -rf "$W"
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

slurm_start "$W/slurm" 0 || exit 1
cd "$W" || exit 1
"$skiff" launch -c bench --infra slurm/solo true >/dev/null 2>&1 ||
	{ echo "slurm_bench: cannot launch the cluster" >&2; exit 1; }
J=$(squeue -h -n skiff-bench -o %i)
[ -n "$J" ] || { echo "slurm_bench: no allocation" >&2; exit 1; }
echo "# $(date -u '+%F %T') UTC, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)," \
	"$(srun --version), $("$skiff" version | head -n 1)"

hyperfine -N --style basic --warmup 3 --runs "$runs" --export-json "$W/exec.json" \
	"srun -QQQ --jobid=$J --overlap -N1 -n1 -w tn0 true" \
	"$skiff exec -d bench true" \
	"$skiff exec bench true" >"$W/hyperfine.out" 2>&1 ||
	{ cat "$W/hyperfine.out"; exit 1; }

python3 - "$W" "$J" "$skiff" "$sruns" <<'PY'
import json, os, subprocess, sys, time

W, J, SKIFF, N = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))]


res = json.load(open(os.path.join(W, "exec.json")))["results"]
floor = res[0]
print("\n## exec on a 1-node slurm cluster vs a bare srun --overlap (hyperfine, %d runs)"
      % len(floor["times"]))
print("%-42s %9s %9s %9s %7s" % ("command", "median", "mean", "p90", "ratio"))
for r in res:
    name = r["command"].replace(SKIFF, "skiff")
    print("%-42s %7.1fms %7.1fms %7.1fms %6.2fx" % (
        name[:42], r["median"] * 1e3, r["mean"] * 1e3, pct(r["times"], 90) * 1e3,
        r["median"] / floor["median"]))


def wait_file(path, limit=60.0):
    end = time.time() + limit
    while time.time() < end:
        try:
            with open(path) as f:
                v = f.read().strip()
            if v:
                return float(v)
        except (OSError, ValueError):
            pass
        time.sleep(0.002)
    raise SystemExit("timed out waiting for " + path)


JOB = "date +%s.%N > {f}.tmp && mv {f}.tmp {f}"
ways = {
    "skiff exec -d (allocation)": lambda f: [SKIFF, "exec", "-d", "bench", JOB.format(f=f)],
    "srun --overlap (allocation)": lambda f: ["srun", "-QQQ", "--jobid=" + J, "--overlap",
                                              "-N1", "-n1", "-w", "tn0", "sh", "-c",
                                              JOB.format(f=f)],
    "srun (new job)": lambda f: ["srun", "-QQQ", "-p", "solo", "-N1", "-n1", "sh", "-c",
                                 JOB.format(f=f)],
    "sbatch --wrap (new job)": lambda f: ["sbatch", "-Q", "-p", "solo", "-N1", "-n1",
                                          "-o", "/dev/null", "--wrap", JOB.format(f=f)],
}
lat = {k: [] for k in ways}
for i in range(N):
    for w, (k, argv) in enumerate(ways.items()):
        f = os.path.join(W, "t.%d.%d" % (i, w))
        t0 = time.time()
        p = subprocess.Popen(argv(f), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = wait_file(f)
        p.wait()
        lat[k].append(started - t0)
    # srun and sbatch jobs end; let Slurm clear them before the next round.
    while subprocess.run(["squeue", "-h", "-t", "pending,running,completing", "-o", "%i"],
                         capture_output=True, text=True).stdout.split() not in ([J], []):
        time.sleep(0.05)

print("\n## submit to running (the job's first command), %d rounds, interleaved" % N)
print("%-30s %9s %9s %9s" % ("way", "median", "p90", "max"))
for k, xs in lat.items():
    print("%-30s %7.1fms %7.1fms %7.1fms" % (k, pct(xs, 50) * 1e3, pct(xs, 90) * 1e3,
                                            max(xs) * 1e3))
sk = pct(lat["skiff exec -d (allocation)"], 50)
print("\nratios (median): skiff / srun new job %.2fx, skiff / sbatch %.2fx, "
      "skiff / srun --overlap %.2fx" % (sk / pct(lat["srun (new job)"], 50),
                                         sk / pct(lat["sbatch --wrap (new job)"], 50),
                                         sk / pct(lat["srun --overlap (allocation)"], 50)))
PY
