#!/bin/sh
# Large local gangs: prints figures, asserts nothing (not part of `make test`).
#
#   tests/bench/gang_bench.sh [--skiff build/skiff] [--nodes 1000] [--runs 3]
#                             [--peaks] [--nofile N]
#
# Each run, in a SKIFF_HOME of its own: `skiff launch -y -c g --num-nodes N --cpus 0.001
# true` on local infra (a new cluster, followed to all N exit codes), then `skiff down g`,
# both timed, with launch's step lines (bootstrap, submit). Beside each run its floor: N
# `sh -c true` started at once and waited for, what N processes cost this machine at the
# least (a launch starts about eight a node). No root, no test nodes.
# --peaks: also the launcher's most open descriptors and threads (from /proc, every
# 50 ms: it costs the launch a little). --nofile N: the launch runs with N as its soft and
# hard limit of open files (a machine whose hard limit is N).
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
import resource
import tempfile
import threading
import time


def floor(n):
    t = time.perf_counter()
    ps = [subprocess.Popen(["sh", "-c", "true"], stdin=subprocess.DEVNULL) for _ in range(n)]
    for p in ps:
        p.wait()
    return time.perf_counter() - t


def timed(argv, env, peaks=None, nofile=0):
    def limit():
        if nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    t = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, preexec_fn=limit)
    if peaks is not None:
        def watch():
            while p.poll() is None:
                try:
                    fds = len(os.listdir(f"/proc/{p.pid}/fd"))
                    with open(f"/proc/{p.pid}/status") as f:
                        th = int(re.search(r"^Threads:\s+(\d+)", f.read(), re.M).group(1))
                except (OSError, AttributeError):
                    break
                peaks["fds"] = max(peaks.get("fds", 0), fds)
                peaks["threads"] = max(peaks.get("threads", 0), th)
                time.sleep(0.05)

        w = threading.Thread(target=watch)
        w.start()
    out, _ = p.communicate()
    dt = time.perf_counter() - t
    if peaks is not None:
        w.join()
    return dt, p.returncode, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skiff", default="build/skiff")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--peaks", action="store_true")
    ap.add_argument("--nofile", type=int, default=0)
    a = ap.parse_args()
    sk = os.path.abspath(a.skiff)
    if not os.access(sk, os.X_OK):
        sys.exit(f"gang_bench: no executable {sk} (build it first)")
    ver = subprocess.run([sk, "version"], stdout=subprocess.PIPE, text=True).stdout.split("\n")[0]
    print(f"gang_bench: {ver}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at start;"
          f" {a.nodes} local nodes, {a.runs} runs"
          + (f"; the launch's limit of open files {a.nofile}" if a.nofile else ""))
    homes, rc = [], 0
    try:
        for r in range(a.runs):
            fl = floor(a.nodes)
            home = tempfile.mkdtemp(prefix="skgang.")
            homes.append(home)
            env = dict(os.environ, SKIFF_HOME=home, NO_COLOR="1")
            env.pop("SKIFF_DEBUG", None)
            peaks = {} if a.peaks else None
            lt, lrc, out = timed([sk, "launch", "-y", "-c", "g", "--num-nodes", str(a.nodes),
                                  "--cpus", "0.001", "true"], env, peaks, a.nofile)
            steps = {m.group(1): m.group(2) for m in
                     re.finditer(r"^  (bootstrap|submit)\s.*?([0-9.]+s)$", out, re.M)}
            dt, drc, dout = timed([sk, "down", "g"], env)
            print(f"run {r + 1}: launch {lt:6.2f} s (rc {lrc}; bootstrap "
                  f"{steps.get('bootstrap', '?')}, submit {steps.get('submit', '?')}), "
                  f"down {dt:5.2f} s (rc {drc}); floor {a.nodes} x sh -c true {fl:5.2f} s: "
                  f"launch {lt / fl:.1f}x, down {dt / fl:.1f}x"
                  + (f"; launcher's peak: {peaks.get('fds', '?')} descriptors, "
                     f"{peaks.get('threads', '?')} threads" if peaks is not None else ""))
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
