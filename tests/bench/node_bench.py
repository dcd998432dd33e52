#!/usr/bin/env python3
"""Node supervisor benchmarks: prints figures, asserts nothing.

    tests/bench/node_bench.py [--skiff build/skiff] [--jobs 1000] [--no-slurm]
                              [--profile-jobs 100] [--starts 20]

Every figure is measured in this run next to its floor or peer, and reported as a ratio:
  - a supervisor's start (`node up`), on a new node.db and on an existing one: its CPU and
    page faults, against a process of the same binary that starts and ends;
  - submit-to-RUNNING latency (p50/p99) vs spawning /bin/true directly;
  - submissions per second through the CLI;
  - supervisor + shim memory (PSS) per running job, with N sleeping jobs;
  - time to cancel N running jobs (until every job is CANCELLED and no process is left);
  - the job's shell: N small jobs with and without --profile (this user's ~/.bashrc),
    against bash sourcing that ~/.bashrc N times;
  - the same small job through Slurm on a single-node cluster the bench starts itself
    (srun, sbatch), when slurmctld/slurmd/munged are installed and we are root.
"""
import argparse
import hashlib
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


class Node:
    def __init__(self, skiff, home):
        self.skiff = skiff
        self.env = dict(os.environ, SKIFF_HOME=home)
        self.home = home

    def run(self, *args, check=True):
        return subprocess.run([self.skiff, *args], env=self.env, check=check,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def db(self):
        return sqlite3.connect(f"file:{self.home}/node.db?mode=ro", uri=True)

    def count(self, where):
        with self.db() as d:
            return d.execute(f"select count(*) from jobs where {where}").fetchone()[0]

    def wait(self, where, n, timeout=300):
        end = time.time() + timeout
        while self.count(where) < n:
            if time.time() > end:
                raise SystemExit(f"timed out waiting for {n} jobs with {where}")
            time.sleep(0.01)

    def pss_kb(self):
        pids = []
        with open(f"{self.home}/supervisor.lock") as f:
            pids.append(int(f.read().strip()))
        out = subprocess.run(["pgrep", "-f", "__shim"], stdout=subprocess.PIPE, text=True)
        shims = [int(p) for p in out.stdout.split()]
        total = 0
        for p in pids + shims:
            try:
                with open(f"/proc/{p}/smaps_rollup") as f:
                    for line in f:
                        if line.startswith("Pss:"):
                            total += int(line.split()[1])
            except OSError:
                pass
        return total, len(shims)


def floor_spawn(n):
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(["/bin/true"])
        ts.append((time.perf_counter() - t) * 1000)
    return ts


def proc_cost(pid):
    """CPU ms the process has run, and its minor page faults, from /proc."""
    with open(f"/proc/{pid}/schedstat") as f:
        ms = int(f.read().split()[0]) / 1e6
    with open(f"/proc/{pid}/stat") as f:
        minflt = int(f.read().rsplit(")", 1)[1].split()[7])
    return ms, minflt


def bench_starts(skiff, n):
    """A supervisor's start: `node up` in a new SKIFF_HOME (a new node.db), then again on
    the database it left; the supervisor's CPU and page faults when `node up` returns."""
    new, again = [], []
    # As a node runs it: named by its sha256 (else a new home hashes it for `node up`'s ping).
    bindir = tempfile.mkdtemp(prefix="skiff-start-bin.")
    with open(skiff, "rb") as f:
        named = os.path.join(bindir, "skiff-" + hashlib.sha256(f.read()).hexdigest())
    shutil.copy2(skiff, named)
    skiff = named
    for _ in range(n):
        home = tempfile.mkdtemp(prefix="skiff-start.")
        node = Node(skiff, home)
        try:
            for into in (new, again):
                node.run("node", "up")
                with open(f"{home}/supervisor.lock") as f:
                    into.append(proc_cost(int(f.read().strip())))
                node.run("node", "down")
        finally:
            node.run("node", "down", check=False)
            shutil.rmtree(home, ignore_errors=True)
    # Floor: a process of the same binary that starts and ends (`skiff --help`).
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(n):
        subprocess.run([skiff, "--help"], stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    floor = ((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)) * 1000 / n
    shutil.rmtree(bindir, ignore_errors=True)
    return new, again, floor


def bench_latency(node, n):
    node.run("node", "up", "--cpus", "", "--max-bypass", "20")
    client = []
    for _ in range(n):
        t = time.perf_counter()
        node.run("node", "submit", "--cpus", "0", "true")
        client.append((time.perf_counter() - t) * 1000)
    node.wait("status >= 4", n)
    with node.db() as d:
        rows = d.execute("select started_at - submitted_at from jobs order by id desc limit ?",
                         (n,)).fetchall()
    server = [r[0] * 1000 for r in rows]
    return client, server


def bench_end_to_end(node, n):
    """submit a `true` job and follow its logs until it ends: what `srun true` does."""
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        jid = node.run("node", "submit", "--cpus", "0", "true").stdout.strip()
        node.run("node", "logs", jid)
        ts.append((time.perf_counter() - t) * 1000)
    return ts


def shell_loop(node, n, parallel, cmd):
    """n CLI calls from a shell loop (xargs -P for parallel clients); returns seconds."""
    script = (f'seq {n} | xargs -P {parallel} -I{{}} "$SKIFF" {cmd} >/dev/null')
    env = dict(node.env, SKIFF=node.skiff)
    t = time.perf_counter()
    subprocess.run(["sh", "-c", script], env=env, check=True)
    return time.perf_counter() - t


def bench_throughput(node, n):
    """Accepted submissions per second (jobs queue behind a blocker), and jobs run per
    second end to end (each job is `true`; bound by the CPU cost of running jobs)."""
    out = {}
    node.run("node", "up", "--cpus", "1")
    blocker = node.run("node", "submit", "--cpus", "1", "sleep 100000").stdout.strip()
    node.wait("status = 3", 1)
    for par in (1, 4):
        dt = shell_loop(node, n, par, "node submit --cpus 1 true")
        out[f"accept_p{par}"] = n / dt
        node.run("node", "cancel", "--all")
    node.run("node", "up", "--cpus", "")
    base = node.count("status >= 4")
    t = time.perf_counter()
    shell_loop(node, n, 2, "node submit --cpus 0 true")
    node.wait("status >= 4", base + n)
    out["run"] = n / (time.perf_counter() - t)
    # The floor: the same loop starting /bin/true itself, one process per job.
    t = time.perf_counter()
    subprocess.run(["sh", "-c", f"seq {n} | xargs -P 2 -I{{}} /bin/true"], check=True)
    out["floor"] = n / (time.perf_counter() - t)
    del blocker
    return out


def bench_profile(node, n):
    """n `true` jobs from 2 clients, run to SUCCEEDED, with and without --profile (the
    task shell's prelude: this user's ~/.bashrc and conda's profile); seconds each, and
    the floor: n x `bash -c '. ~/.bashrc; true'` two at a time, without skiff."""
    out = {}
    node.run("node", "up", "--cpus", "")
    for name, flags in (("plain", ""), ("profile", "--profile ")):
        base = node.count("status >= 4")
        t = time.perf_counter()
        shell_loop(node, n, 2, f"node submit --cpus 0 {flags}true")
        node.wait("status >= 4", base + n)
        out[name] = time.perf_counter() - t
    script = (f'seq {n} | xargs -P 2 -I{{}} bash -c "if [ -f ~/.bashrc ]; then . ~/.bashrc; fi; true"'
              " >/dev/null 2>&1")
    t = time.perf_counter()
    subprocess.run(["sh", "-c", script], check=False)
    out["floor"] = time.perf_counter() - t
    return out


def bench_memory_and_cancel(node, n):
    node.run("node", "up", "--cpus", "0", "--cancel-grace", "10")
    base = node.count("1")
    for _ in range(n):
        node.run("node", "submit", "--cpus", "0", "sleep 100000")
    node.wait("status = 3", n)
    time.sleep(1)
    pss, shims = node.pss_kb()
    t = time.perf_counter()
    node.run("node", "cancel", "--all")
    node.wait("status = 8", n, timeout=120)
    t_rows = time.perf_counter() - t
    while subprocess.run(["pgrep", "-f", "^sleep 100000"], stdout=subprocess.DEVNULL).returncode == 0:
        time.sleep(0.005)
    t_procs = time.perf_counter() - t
    node.run("node", "up", "--cpus", "")
    return pss, shims, t_rows, t_procs


SLURM_CONF = """ClusterName=skbench
SlurmctldHost=localhost
SlurmctldPort=16917
SlurmdPort=16918
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={s}/munge/munge.socket
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation={s}/state
SlurmdSpoolDir={s}/spool/%n
SlurmctldPidFile={s}/slurmctld.pid
SlurmdPidFile={s}/slurmd.%n.pid
SlurmctldLogFile={s}/slurmctld.log
SlurmdLogFile={s}/slurmd.%n.log
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
Waittime=0
MinJobAge=30
KillWait=5
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def bench_slurm(n):
    need = ["munged", "mungekey", "slurmctld", "slurmd", "srun", "sbatch", "squeue"]
    if os.geteuid() != 0 or any(shutil.which(x) is None for x in need):
        return None
    s = tempfile.mkdtemp(prefix="skiff-bench-slurm.")
    procs = []
    try:
        os.chmod(s, 0o711)  # munged wants o+x on every component of its socket path
        os.makedirs(f"{s}/munge")
        os.makedirs(f"{s}/state")
        os.makedirs(f"{s}/spool/localhost")
        os.chmod(f"{s}/munge", 0o755)
        subprocess.run(["mungekey", "-c", "-k", f"{s}/munge/munge.key"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(f"{s}/slurm.conf", "w") as f:
            f.write(SLURM_CONF.format(s=s))
        env = dict(os.environ, SLURM_CONF=f"{s}/slurm.conf")
        log = open(f"{s}/daemons.log", "w")
        procs.append(subprocess.Popen(
            ["munged", "-F", f"--socket={s}/munge/munge.socket", f"--key-file={s}/munge/munge.key",
             f"--log-file={s}/munged.log", f"--pid-file={s}/munged.pid",
             f"--seed-file={s}/munged.seed"], stdout=log, stderr=log))
        end = time.time() + 10
        while not os.path.exists(f"{s}/munge/munge.socket") and time.time() < end:
            time.sleep(0.02)
        procs.append(subprocess.Popen(["slurmctld", "-D", "-f", f"{s}/slurm.conf"], env=env,
                                      stdout=log, stderr=log))
        procs.append(subprocess.Popen(["slurmd", "-D", "-N", "localhost", "-f", f"{s}/slurm.conf"],
                                      env=env, stdout=log, stderr=log))
        end = time.time() + 30
        while time.time() < end:
            r = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
            if r.stdout.strip() == "idle":
                break
            time.sleep(0.1)
        else:
            with open(f"{s}/daemons.log") as f:
                tail = f.read()[-600:]
            return {"error": "slurm did not come up:\n" + tail}
        srun = []
        for _ in range(n):
            t = time.perf_counter()
            subprocess.run(["srun", "-n1", "true"], env=env, cwd=s, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            srun.append((time.perf_counter() - t) * 1000)
        sbatch = []
        for _ in range(max(5, n // 10)):
            t = time.perf_counter()
            out = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "--wrap", "true"],
                                 env=env, cwd=s, check=True, stdout=subprocess.PIPE, text=True)
            jid = out.stdout.strip().split(";")[0]
            while True:
                q = subprocess.run(["squeue", "-h", "-j", jid, "-o", "%T"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                if q.stdout.strip() in ("RUNNING", "COMPLETING", ""):
                    break
                time.sleep(0.002)
            sbatch.append((time.perf_counter() - t) * 1000)
        return {"srun": srun, "sbatch": sbatch}
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(s, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skiff", default=os.path.join(ROOT, "build", "skiff"))
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--latency-runs", type=int, default=200)
    ap.add_argument("--no-slurm", action="store_true")
    ap.add_argument("--profile-jobs", type=int, default=100)
    ap.add_argument("--starts", type=int, default=20)
    a = ap.parse_args()
    home = tempfile.mkdtemp(prefix="skiff-bench.")
    node = Node(os.path.abspath(a.skiff), home)
    try:
        print(f"# skiff node bench: {a.skiff}, {os.cpu_count()} CPUs, jobs={a.jobs}")
        if a.starts > 0:
            new, again, fl = bench_starts(node.skiff, a.starts)
            nm, nf = pct([c[0] for c in new], 50), pct([c[1] for c in new], 50)
            am, af = pct([c[0] for c in again], 50), pct([c[1] for c in again], 50)
            print(f"supervisor start, {a.starts} x `node up` (p50 of its CPU, page faults):"
                  f" new node.db {nm:.2f} ms, {nf} faults; existing node.db {am:.2f} ms, {af} faults;"
                  f" floor: `skiff --help` {fl:.2f} ms ({nm / fl:.1f}x / {am / fl:.1f}x)")
        floor = floor_spawn(a.latency_runs)
        client, server = bench_latency(node, a.latency_runs)
        f50, f99 = pct(floor, 50), pct(floor, 99)
        print(f"floor: spawn+wait /bin/true          p50 {f50:7.2f} ms  p99 {pct(floor, 99):7.2f} ms")
        print(f"skiff node submit (CLI round trip)   p50 {pct(client, 50):7.2f} ms  p99 {pct(client, 99):7.2f} ms"
              f"  ({pct(client, 50) / f50:.1f}x / {pct(client, 99) / f99:.1f}x floor)")
        print(f"submitted -> RUNNING (db timestamps) p50 {pct(server, 50):7.2f} ms  p99 {pct(server, 99):7.2f} ms"
              f"  ({pct(server, 50) / f50:.1f}x / {pct(server, 99) / f99:.1f}x floor)")
        e2e = bench_end_to_end(node, min(100, a.latency_runs))
        print(f"submit + follow to SUCCEEDED (CLI)   p50 {pct(e2e, 50):7.2f} ms  p99 {pct(e2e, 99):7.2f} ms"
              f"  ({pct(e2e, 50) / f50:.1f}x / {pct(e2e, 99) / f99:.1f}x floor)")
        rate = bench_throughput(node, a.jobs)
        print(f"submissions accepted per second, {a.jobs} jobs queued: {rate['accept_p1']:.0f}/s"
              f" (one client), {rate['accept_p4']:.0f}/s (4 concurrent clients)")
        print(f"jobs submitted and run to SUCCEEDED per second ({a.jobs} x `true`, 2 clients):"
              f" {rate['run']:.0f}/s, {rate['run'] / rate['floor']:.2f} of the floor"
              f" (`xargs -P 2 /bin/true`: {rate['floor']:.0f}/s)")
        prof = bench_profile(node, a.profile_jobs)
        rc = os.path.expanduser("~/.bashrc")
        rc_size = os.path.getsize(rc) if os.path.exists(rc) else 0
        print(f"the job's shell, {a.profile_jobs} x `true` (2 clients) to SUCCEEDED,"
              f" ~/.bashrc {rc_size} bytes: node submit {prof['plain']:.2f} s,"
              f" --profile {prof['profile']:.2f} s ({prof['profile'] / prof['plain']:.1f}x);"
              f" floor: bash sourcing it {prof['floor']:.2f} s")
        pss, shims, t_rows, t_procs = bench_memory_and_cancel(node, a.jobs)
        print(f"memory with {a.jobs} sleeping jobs: supervisor+{shims} shims PSS {pss / 1024:.1f} MiB"
              f" = {pss / a.jobs:.0f} KiB per running job")
        print(f"cancel {a.jobs} running jobs: all CANCELLED in {t_rows * 1000:.0f} ms,"
              f" every job process gone in {t_procs * 1000:.0f} ms")
        if not a.no_slurm:
            sl = bench_slurm(min(50, a.latency_runs))
            if sl is None:
                print("slurm: skipped (needs root and slurm-wlm + munge installed)")
            elif "error" in sl:
                print(f"slurm: {sl['error']}")
            else:
                sp50, sp99 = pct(sl["srun"], 50), pct(sl["srun"], 99)
                sb50, sb99 = pct(sl["sbatch"], 50), pct(sl["sbatch"], 99)
                print(f"slurm srun -n1 true (new allocation) p50 {sp50:7.2f} ms  p99 {sp99:7.2f} ms")
                print(f"slurm sbatch -> RUNNING (squeue)     p50 {sb50:7.2f} ms  p99 {sb99:7.2f} ms")
                print(f"skiff submit+follow vs srun: {sp50 / pct(e2e, 50):.1f}x faster at p50,"
                      f" {sp99 / pct(e2e, 99):.1f}x at p99")
                print(f"skiff submitted->RUNNING vs sbatch->RUNNING: {sb50 / pct(server, 50):.0f}x faster"
                      f" at p50, {sb99 / pct(server, 99):.0f}x at p99")
    finally:
        node.run("node", "cancel", "--all", check=False)
        node.run("node", "down", check=False)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
