#!/bin/sh
# Large local gangs: prints figures, asserts nothing (not part of `make test`).
#
#   tests/bench/gang_bench.sh [--skiff build/skiff] [--nodes 1000] [--runs 3]
#
# Each run, in a SKIFF_HOME of its own: `skiff launch -y -c g --num-nodes N --cpus 0.001
# true` on local infra (a new cluster, followed to all N exit codes), then `skiff down g`,
# both timed, with launch's step lines (bootstrap, submit). Beside each run its floor: N
# `sh -c true` started at once and waited for, what N processes cost this machine at the
# least (a launch starts about eight a node). No root, no test nodes.
#
# The homes are removed at the end, not between runs: ext4 is slow to hand out inodes
# freed a moment before, and N node directories removed right before a run slow its
# every file creation (docs/benchmarks.md, "10,000 jobs, third round").
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.." || exit 1
exec python3 - "$@" <<'PY'
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def floor(n):
    t = time.perf_counter()
    ps = [subprocess.Popen(["sh", "-c", "true"], stdin=subprocess.DEVNULL) for _ in range(n)]
    for p in ps:
        p.wait()
    return time.perf_counter() - t


def timed(argv, env):
    t = time.perf_counter()
    p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return time.perf_counter() - t, p.returncode, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skiff", default="build/skiff")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    sk = os.path.abspath(a.skiff)
    if not os.access(sk, os.X_OK):
        sys.exit(f"gang_bench: no executable {sk} (build it first)")
    ver = subprocess.run([sk, "version"], stdout=subprocess.PIPE, text=True).stdout.split("\n")[0]
    print(f"gang_bench: {ver}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at start;"
          f" {a.nodes} local nodes, {a.runs} runs")
    homes, rc = [], 0
    try:
        for r in range(a.runs):
            fl = floor(a.nodes)
            home = tempfile.mkdtemp(prefix="skgang.")
            homes.append(home)
            env = dict(os.environ, SKIFF_HOME=home, NO_COLOR="1")
            env.pop("SKIFF_DEBUG", None)
            lt, lrc, out = timed([sk, "launch", "-y", "-c", "g", "--num-nodes", str(a.nodes),
                                  "--cpus", "0.001", "true"], env)
            steps = {m.group(1): m.group(2) for m in
                     re.finditer(r"^  (bootstrap|submit)\s.*?([0-9.]+s)$", out, re.M)}
            dt, drc, dout = timed([sk, "down", "g"], env)
            print(f"run {r + 1}: launch {lt:6.2f} s (rc {lrc}; bootstrap "
                  f"{steps.get('bootstrap', '?')}, submit {steps.get('submit', '?')}), "
                  f"down {dt:5.2f} s (rc {drc}); floor {a.nodes} x sh -c true {fl:5.2f} s: "
                  f"launch {lt / fl:.1f}x, down {dt / fl:.1f}x")
            if lrc or drc:
                rc = 1
                print(out[-2000:] + dout[-2000:], file=sys.stderr)
    finally:
        for h in homes:
            subprocess.run([sk, "down", "-a"], env=dict(os.environ, SKIFF_HOME=h),
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            shutil.rmtree(h, ignore_errors=True)
    print("goals (issue 28): launch < 10 s, down < 5 s for 1,000 nodes;"
          f" load {os.getloadavg()[0]:.2f} at the end")
    sys.exit(rc)


main()
PY
