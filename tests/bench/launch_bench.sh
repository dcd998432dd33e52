#!/bin/sh
# Launcher benchmarks: prints figures, asserts nothing (not part of `make test`).
#
#   tests/bench/launch_bench.sh [--skiff build/skiff] [--runs 50] [--fresh-runs 15]
#                               [--local-runs 30] [--only exec,launch,fresh,gang,local]
#                               [--home-dir DIR]
#
# Root only: it starts three real sshd nodes with tests/lib/nodes.sh (network namespaces,
# see docs/testing.md) and tears them down at the end. Every figure is measured in this
# run next to its floor, the floor and the measured command alternating run by run:
#   exec    `skiff exec -d C true` and `skiff exec C true` on an existing 1-node cluster
#           vs `ssh ... true` with skiff's own ssh options over skiff's own warm
#           ControlMaster (and, for reference, `ssh -F $NODES_SSH_CONFIG tn1 true` over
#           the nodes' master);
#           plus the parts alone: remote `node submit` / `node logs` / `node up` over that
#           master, and the launcher's local start-up and self-hash;
#   launch  `skiff launch -c C true` on that existing cluster, vs the same floor;
#   fresh   a node with no skiff (~/.skiff removed, cluster downed): `skiff launch -d`
#           until submitted and until the job is RUNNING (the supervisor's started_at),
#           over a closed and over a warm ssh master, vs a fresh / muxed
#           `ssh 'cat >FILE' <skiff` (the copy alone), with launch's step lines;
#   gang    the same on 3 nodes (fresh), and launch/exec of a 3-rank job on an existing
#           3-node cluster (warm), vs 3 parallel ssh calls;
#   local   `skiff launch examples/hello.yaml` on local infra (new cluster each run, and
#           an existing one) vs running its setup and run with `sh -c` directly.
# SkyPilot's published figures (shared/notes/anchors.md) are printed next to ours, as a
# reference only: they were measured elsewhere.
#
# Cleanup: every cluster this run made is downed, skiff's ssh masters are closed, its
# SKIFF_HOME removed, and nodes_down runs on exit (the nodes' watchdog covers a kill -9).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SRC_DIR=$root
# shellcheck source=tests/lib/nodes.sh
. "$root/tests/lib/nodes.sh"
nodes_require_root || exit 1
nodes_install_deps || exit 1
cd "$root" || exit 1

# shellcheck disable=SC2317 # called by the trap
bench_cleanup() {
	trap - EXIT INT TERM
	nodes_down
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

nodes_up 3 || exit 1
python3 - "$@" <<'PY'
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ND = os.environ["NODES_DIR"]
CFG = os.environ["NODES_SSH_CONFIG"]
POOL = os.environ["NODES_POOL"]
KEY = os.environ["NODES_KEY"]
USER = os.environ["NODES_USER"]
NET = os.environ["NODES_NET"]


def ip(i):
    return f"{NET}.{10 + i}"


def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def med(xs):
    return pct(xs, 50)


class Fail(Exception):
    pass


def run(argv, env=None, stdin=None, check=True, what=None):
    """Runs argv; returns (ms, stderr text). stdin: a path to feed, or None."""
    fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
    try:
        t = time.perf_counter()
        p = subprocess.run(argv, env=env, stdin=fin, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        ms = (time.perf_counter() - t) * 1000
    finally:
        if stdin:
            fin.close()
    if check and p.returncode != 0:
        raise Fail(f"{what or ' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()[-600:]}")
    return ms, p.stderr


def run_par(argvs, stdin=None):
    """Starts every argv at once; ms until the last has ended."""
    t = time.perf_counter()
    ps = []
    for a in argvs:
        fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
        ps.append((subprocess.Popen(a, stdin=fin, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True), fin))
    for p, fin in ps:
        _, err = p.communicate()
        if fin is not subprocess.DEVNULL:
            fin.close()
        if p.returncode != 0:
            raise Fail(f"{' '.join(p.args)}: exit {p.returncode}: {err.strip()}")
    return (time.perf_counter() - t) * 1000


class Bench:
    def __init__(self, a):
        self.a = a
        self.sk = os.path.abspath(a.skiff)
        # Short: skiff's ControlPath sockets go to $SKIFF_HOME/ssh (<= 25 bytes, else
        # /tmp/skiff-ssh.UID). --home-dir puts it elsewhere, as a user's own home does.
        os.makedirs(a.home_dir, exist_ok=True)
        self.home = tempfile.mkdtemp(prefix="skb.", dir=a.home_dir)
        self.env = dict(os.environ, SKIFF_HOME=self.home, SKIFF_SSH_NODE_POOLS=os.environ[
            "NODES_POOL_FILE"], NO_COLOR="1")
        self.env.pop("SKIFF_DEBUG", None)
        self.rows = []
        self.notes = []

    # --- commands -------------------------------------------------------------------
    def skiff(self, *args, check=True, env=None):
        return run([self.sk, *args], env=env or self.env, check=check,
                   what="skiff " + " ".join(args))

    def skiff_out(self, *args):
        p = subprocess.run([self.sk, *args], env=self.env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode:
            raise Fail(f"skiff {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        return p.stdout

    def control_path(self, i):
        """skiff's ControlPath for node i, as bootstrap/infra/runner_ssh.c names it (the runner
        prints its own argv)."""
        out = subprocess.run([self.sk, "__runner-test", "--ssh", ip(i), "--user", USER,
                              "--port", "22", "--identity", KEY, "--control-dir",
                              f"{self.home}/ssh", "argv", "true"], env=self.env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        for w in out.stdout.split():
            w = w.strip("'")
            if w.startswith("ControlPath="):
                return w[len("ControlPath="):]
        raise Fail(f"no ControlPath in skiff's ssh argv for tn{i}: {out.stdout.strip()}")

    def ssh_skiff_opts(self, i, cmd):
        """The ssh argv bootstrap/infra/runner_ssh.c builds for node i: the same options and
        ControlPath (so the same master); the remote command is CMD, not sh -c 'SCRIPT'."""
        d = f"{self.home}/ssh"
        return ["ssh", "-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
                "-o", f"UserKnownHostsFile={d}/known_hosts", "-o", "ConnectTimeout=10",
                "-o", "ServerAliveInterval=3", "-o", "ServerAliveCountMax=3",
                "-o", "ControlMaster=auto", "-o", f"ControlPath={self.control_path(i)}",
                "-o", "ControlPersist=300", "-o", "KexAlgorithms=^curve25519-sha256",
                "-o", "LogLevel=INFO", "-p", "22", "-i", KEY, "-o", "IdentitiesOnly=yes",
                "-l", USER, "--", ip(i), cmd]

    def ssh_bare(self, i, cmd, fresh=False):
        extra = ["-o", "ControlMaster=no", "-o", "ControlPath=none"] if fresh else []
        return ["ssh", "-F", CFG, *extra, f"tn{i}", cmd]

    def skiff_masters(self):
        d = f"{self.home}/ssh"
        return sorted(f for f in os.listdir(d) if not f.startswith(("known_hosts", "diag"))) \
            if os.path.isdir(d) else []

    def close_skiff_masters(self):
        d = f"{self.home}/ssh"
        for s in self.skiff_masters():
            subprocess.run(["ssh", "-o", f"ControlPath={d}/{s}", "-O", "exit", "x"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        for _ in range(100):
            if not self.skiff_masters():
                return
            time.sleep(0.01)

    def wipe_node(self, i):
        run(self.ssh_bare(i, "rm -rf ~/.skiff ~/.bench-copy"), what=f"wipe tn{i}")

    def clusters(self):
        try:
            return [c["name"] for c in json.loads(self.skiff_out("status", "--json"))]
        except (Fail, ValueError):
            return []

    def down(self, *names):
        for n in names:
            if n in self.clusters():
                self.skiff("down", n)

    def gang_watchers(self, cluster):
        """Our `skiff __gang CLUSTER JOB KEY` processes (launch/exec of a multi-rank job leaves
        one behind until the job ends; it must not overlap the next timed run)."""
        pids = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    av = f.read().split(b"\0")
            except OSError:
                continue
            if len(av) > 2 and av[0] == self.sk.encode() and av[1] == b"__gang" and \
                    av[2] == cluster.encode():
                pids.append(int(d))
        return pids

    def wait_gang(self, cluster):
        end = time.time() + 30
        while self.gang_watchers(cluster):
            if time.time() > end:
                raise Fail(f"the gang watcher of {cluster} did not exit within 30 s")
            time.sleep(0.005)

    def node_started_at(self, i):
        """started_at of the newest job on node i, straight from its supervisor."""
        out = subprocess.run(self.ssh_bare(i, "~/.skiff/bin/skiff node queue --json"),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        jobs = json.loads(out.stdout or "[]")
        if not jobs:
            raise Fail(f"tn{i}: no job in its queue: {out.stderr.strip()}")
        j = max(jobs, key=lambda j: j["id"])
        if not j.get("started_at"):
            raise Fail(f"tn{i}: job {j['id']} never started ({j.get('status')})")
        return j["started_at"]

    # --- reporting ------------------------------------------------------------------
    def row(self, measure, xs, floor_name, fs, goal=None, goal_ratio=None, ratio=True):
        r = dict(measure=measure, n=len(xs), p50=med(xs), p90=pct(xs, 90), p99=pct(xs, 99),
                 floor=floor_name, f50=med(fs) if fs else None,
                 f90=pct(fs, 90) if fs else None, f99=pct(fs, 99) if fs else None,
                 goal=goal, goal_ratio=goal_ratio, ratio=ratio)
        self.rows.append(r)
        self.print_row(r)

    @staticmethod
    def fmt(v):
        return "-" if v is None else (f"{v:.0f}" if v >= 100 else f"{v:.1f}")

    def print_row(self, r):
        f = self.fmt
        line = (f"  {r['measure']:<58} n={r['n']:<3} p50/p90/p99 {f(r['p50'])}/{f(r['p90'])}/"
                f"{f(r['p99'])} ms")
        if r["f50"] is not None:
            line += f"\n  {'':<58}       floor {f(r['f50'])}/{f(r['f90'])}/{f(r['f99'])} ms " \
                    f"({r['floor']})"
            if r["ratio"]:
                x50, x90, x99 = r["p50"] / r["f50"], r["p90"] / r["f90"], r["p99"] / r["f99"]
                line += f"\n  {'':<58}       ratio {x50:.2f}x / {x90:.2f}x / {x99:.2f}x"
                if r["goal_ratio"]:
                    line += f"  goal <= {r['goal_ratio']}x at p50: " + (
                        "met" if x50 <= r["goal_ratio"] else "MISSED")
            else:
                line += f"\n  {'':<58}       overhead p50 {r['p50'] - r['f50']:.1f} ms"
        if r["goal"]:
            line += f"\n  {'':<58}       goal: {r['goal']}"
        print(line, flush=True)

    def steps(self, stderr):
        """launch's step lines: {'nodes': s, 'bootstrap': s, 'submit': s, ...}."""
        out = {}
        for line in stderr.splitlines():
            w = line.split()
            if len(w) >= 2 and w[0] in ("nodes", "bootstrap", "sync", "submit") and \
                    w[-1].endswith("s"):
                try:
                    out[w[0]] = float(w[-1][:-1]) * 1000
                except ValueError:
                    pass
        return out

    def print_steps(self, label, allsteps):
        keys = [k for k in ("nodes", "bootstrap", "sync", "submit") if any(k in s for s in allsteps)]
        parts = []
        for k in keys:
            v = [s[k] for s in allsteps if k in s]
            parts.append(f"{k} p50 {med(v):.0f} ms (max {max(v):.0f})")
        print(f"  {'':<58}       steps ({label}, 10 ms resolution): " + ", ".join(parts),
              flush=True)

    # --- the measures ---------------------------------------------------------------
    def warm_pair(self, n, floor_argv, subj, floor_stdin=None):
        """Alternates floor and subject n times after one warm-up of each."""
        fs, xs, errs = [], [], []
        run(floor_argv, stdin=floor_stdin, what="floor")
        subj()
        for _ in range(n):
            fs.append(run(floor_argv, stdin=floor_stdin, what="floor")[0])
            ms, err = subj()
            xs.append(ms)
            errs.append(err)
        return xs, fs, errs

    def anatomy(self, n, floor, fname):
        """What the exec path is made of, each part timed alone: the remote commands run
        through the same master, and the launcher's local work without any ssh."""
        print("  -- the parts, each alone (overhead = p50 minus its floor's p50):")
        exe = "~/.skiff/bin/skiff"
        jid = self.skiff_out("queue", "--json", "lb1")
        jid = json.loads(jid)[-1]["node_job_ids"] if jid.strip() else "1"
        for label, cmd in [
            ("remote: sh -c 'skiff node submit true' (one submit)",
             f"sh -c '{exe} node submit true >/dev/null'"),
            ("remote: sh -c 'skiff node logs J' (a finished job)",
             f"sh -c '{exe} node logs {jid} >/dev/null 2>&1'"),
            ("remote: sh -c 'skiff node up' (the re-bootstrap probe)",
             f"sh -c '{exe} node up >/dev/null'"),
        ]:
            xs, fs, _ = self.warm_pair(n, floor, lambda c=cmd: run(
                self.ssh_skiff_opts(1, c), what=label))
            self.row(label, xs, fname, fs, ratio=False)
        tr = ["/bin/true"]
        for label, args in [
            ("local: skiff status lb1 (start + read launcher.db)", ["status", "lb1"]),
            ("local: skiff version (start + sha256 of its own 1.8 MB)", ["version"]),
        ]:
            xs, fs, _ = self.warm_pair(n, tr, lambda a=args: self.skiff(*a))
            self.row(label, xs, "spawn /bin/true", fs, ratio=False)

    def bench_exec(self):
        n = self.a.runs
        print(f"\n[1-2] existing 1-node ssh cluster (tn1), warm masters, {n} runs each")
        self.down("lb1")
        self.skiff("launch", "-c", "lb1", "--infra", f"ssh/{POOL}", "true")
        masters = self.skiff_masters()
        floor = self.ssh_skiff_opts(1, "true")
        run(floor, what="floor with skiff's options")
        if self.skiff_masters() != masters:
            self.notes.append("WARNING: the skiff-options floor opened its own master")
        fname = "ssh true, skiff's options + master"
        bare = self.ssh_bare(1, "true")
        xs, fs, _ = self.warm_pair(n, bare, lambda: run(floor, what="floor"))
        self.row("ref: ssh -F $NODES_SSH_CONFIG tn1 true (nodes' master)", fs, fname, xs)
        # skiff's own transport over that master (bootstrap/infra/ssh_mux.h), for reference.
        mux = [self.sk, "__ssh-mux", self.control_path(1), "true", "--", *floor]
        xs, fs, _ = self.warm_pair(n, floor, lambda: run(mux, what="skiff __ssh-mux"))
        self.row("ref: skiff __ssh-mux SOCKET true (skiff's transport alone)", xs, fname, fs)
        self.anatomy(n, floor, fname)
        xs, fs, _ = self.warm_pair(n, floor, lambda: self.skiff("exec", "-d", "lb1", "true"))
        self.row("skiff exec -d lb1 true (submit only)", xs, fname, fs, goal_ratio=1.5)
        xs, fs, _ = self.warm_pair(n, floor, lambda: self.skiff("exec", "lb1", "true"))
        self.row("skiff exec lb1 true (submit + follow to the end)", xs, fname, fs,
                 goal_ratio=1.5)
        xs, fs, errs = self.warm_pair(n, floor, lambda: self.skiff("launch", "-c", "lb1",
                                                                   "true"))
        self.row("skiff launch -c lb1 true (existing: re-bootstrap+submit+follow)", xs, fname,
                 fs, goal_ratio=2)
        self.print_steps("launch on existing", [self.steps(e) for e in errs])
        xs, fs, _ = self.warm_pair(n, floor, lambda: self.skiff("launch", "-d", "-c", "lb1",
                                                                "true"))
        self.row("skiff launch -d -c lb1 true (existing, no follow)", xs, fname, fs,
                 goal_ratio=2)
        self.down("lb1")

    def fresh_once(self, names, nodes, cold, extra):
        self.down(*names)
        for i in nodes:
            self.wipe_node(i)
        if cold:
            self.close_skiff_masters()
        t0 = time.time()
        ms, err = self.skiff("launch", "-d", "-c", names[0], "--infra", f"ssh/{POOL}", *extra,
                             "true")
        running = max(self.node_started_at(i) for i in nodes)
        self.wait_gang(names[0])  # untimed: it outlives launch by design
        if "copied to %d," % len(nodes) not in err:
            raise Fail(f"launch did not copy skiff to every node: {err}")
        return ms, (running - t0) * 1000, self.steps(err)

    def bench_fresh(self, names, nodes, extra, label):
        n = self.a.fresh_runs
        binary = self.sk
        par = len(nodes) > 1
        for cold in (True, False):
            how = "closed ssh master (new connection)" if cold else "warm skiff ssh master"
            print(f"\n[{label}] fresh bootstrap on {len(nodes)} node(s), no skiff there, "
                  f"{how}, {n} runs")
            if not cold:  # open skiff's masters to the nodes
                self.fresh_once(names, nodes, False, extra)
            subs, runs, fls, steps = [], [], [], []
            for _ in range(n):
                for i in nodes:
                    run(self.ssh_bare(i, "rm -f ~/.bench-copy"))
                fl = [self.ssh_bare(i, "cat >~/.bench-copy", fresh=cold) for i in nodes]
                fls.append(run_par(fl, stdin=binary) if par else
                           run(fl[0], stdin=binary, what="floor copy")[0])
                ms, rn, st = self.fresh_once(names, nodes, cold, extra)
                subs.append(ms)
                runs.append(rn)
                steps.append(st)
            fname = ("%s ssh 'cat >F' <skiff (%.1f MB)%s" % (
                "fresh" if cold else "muxed", os.path.getsize(binary) / 1e6,
                ", 3 in parallel" if par else ""))
            g = "< 1 s" if not par else None
            self.row(f"launch -d, fresh node(s), {'cold' if cold else 'warm'} ssh: submitted",
                     subs, fname, fls, goal=g)
            self.row(f"launch -d, fresh node(s), {'cold' if cold else 'warm'} ssh: "
                     f"{'all ranks ' if par else ''}RUNNING", runs, fname, fls, goal=g)
            self.print_steps("fresh", steps)
        self.down(*names)

    def bench_gang_warm(self):
        n = self.a.runs
        print(f"\n[4] existing 3-node cluster (tn1-3), 3-rank job, warm masters, {n} runs each")
        self.down("lbg")
        self.skiff("launch", "-c", "lbg", "--infra", f"ssh/{POOL}", "--num-nodes", "3", "true")
        floors = [self.ssh_skiff_opts(i, "true") for i in (1, 2, 3)]
        one = floors[0]
        fname = "3 parallel ssh true, skiff's options + masters"

        def par_floor():
            t = time.perf_counter()
            run_par(floors)
            return (time.perf_counter() - t) * 1000, ""

        xs, fs, _ = self.warm_pair(n, one, par_floor)
        self.row("ref: 3 parallel ssh true vs one", xs, "one ssh true", fs)

        def pair(subj):
            fs, xs, errs = [], [], []
            par_floor()
            subj()
            self.wait_gang("lbg")
            for _ in range(n):
                fs.append(par_floor()[0])
                ms, err = subj()
                xs.append(ms)
                errs.append(err)
                self.wait_gang("lbg")  # not timed: it outlives the command by design
            return xs, fs, errs

        xs, fs, errs = pair(lambda: self.skiff("launch", "-c", "lbg", "--num-nodes", "3",
                                               "true"))
        self.row("skiff launch -c lbg --num-nodes 3 true (existing, follow)", xs, fname, fs,
                 goal_ratio=2)
        self.print_steps("gang launch on existing", [self.steps(e) for e in errs])
        xs, fs, _ = pair(lambda: self.skiff("exec", "-d", "--num-nodes", "3", "lbg", "true"))
        self.row("skiff exec -d --num-nodes 3 lbg true", xs, fname, fs, goal_ratio=1.5)
        xs, fs, _ = pair(lambda: self.skiff("exec", "--num-nodes", "3", "lbg", "true"))
        self.row("skiff exec --num-nodes 3 lbg true (follow)", xs, fname, fs, goal_ratio=1.5)
        self.down("lbg")

    def bench_local(self):
        n = self.a.local_runs
        print(f"\n[5] local infra, examples/hello.yaml, {n} runs each")
        y = "examples/hello.yaml"
        task = json.loads(self.skiff_out("check", "--json", y))[0]["tasks"][0]
        env = dict(os.environ, **task.get("envs", {}))

        def direct():
            t = time.perf_counter()
            for part in ("setup", "run"):
                if task.get(part):
                    p = subprocess.run(["sh", "-c", task[part]], env=env,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
                    if p.returncode:
                        raise Fail(f"sh -c {part}: exit {p.returncode}")
            return (time.perf_counter() - t) * 1000

        def new_cluster():
            before = set(self.clusters())
            ms, err = self.skiff("launch", y)
            made = set(self.clusters()) - before
            for c in made:
                self.skiff("down", c)
            return ms, err

        fs, xs, errs = [], [], []
        direct()
        new_cluster()
        for _ in range(n):
            fs.append(direct())
            ms, err = new_cluster()
            xs.append(ms)
            errs.append(err)
        self.row(f"skiff launch {y} (new local cluster each run)", xs,
                 "sh -c setup; sh -c run", fs, goal="overhead < 100 ms", ratio=False)
        self.print_steps("local, new cluster", [self.steps(e) for e in errs])
        self.down("lbl")
        self.skiff("launch", "-c", "lbl", y)
        fs, xs, errs = [], [], []
        for _ in range(n):
            fs.append(direct())
            ms, err = self.skiff("launch", "-c", "lbl", y)
            xs.append(ms)
            errs.append(err)
        self.row(f"skiff launch -c lbl {y} (existing local cluster)", xs,
                 "sh -c setup; sh -c run", fs, goal="overhead < 100 ms", ratio=False)
        self.print_steps("local, existing", [self.steps(e) for e in errs])
        self.down("lbl")

    def skypilot(self):
        print("\nSkyPilot's published figures (shared/notes/anchors.md; other hardware, "
              "k8s, NOT measured here):")
        for k, v in [
            ("sky exec -d, existing k8s cluster (PR #3157)", "10.4 -> 5.7 s"),
            ("sky exec after lazy imports (PR #4802)", "3.45 -> 2.75 s"),
            ("sky launch on an existing cluster (PR #3157 / #4802)", "40.5 -> 23.5 s / 13.1 s"),
            ("new k8s cluster, 1 pod (PR #3484)", "63.6 -> 59.4 s"),
            ("runtime setup with uv (PR #4414)", "8-45 s"),
            ("node-side python before a job starts (anchors.md, local)", "~3.1 s"),
        ]:
            print(f"  {k:<58} {v}")

    def cleanup(self):
        for c in self.clusters():
            try:
                self.skiff("down", c, check=False)
            except Exception:
                pass
        self.close_skiff_masters()
        shutil.rmtree(self.home, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skiff", default="build/skiff")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--fresh-runs", type=int, default=15)
    ap.add_argument("--local-runs", type=int, default=30)
    ap.add_argument("--only", default="exec,fresh,gang,local")
    ap.add_argument("--home-dir", default="/tmp",
                    help="where the run's SKIFF_HOME is made (a long one: sockets in /tmp)")
    a = ap.parse_args()
    if not os.access(a.skiff, os.X_OK):
        sys.exit(f"launch_bench: no executable {a.skiff} (build it first)")
    only = set(a.only.split(","))
    b = Bench(a)
    ver = subprocess.run([b.sk, "version"], stdout=subprocess.PIPE, text=True).stdout.split("\n")[0]
    print(f"launch_bench: {ver}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at start;"
          f" nodes tn1-3 ({ip(1)}-{ip(3)}), SKIFF_HOME {b.home}")
    print("figures in ms: p50/p90/p99 (nearest rank; with n < 100, p99 is the maximum)")
    rc = 0
    try:
        if "exec" in only or "launch" in only:
            b.bench_exec()
        if "fresh" in only:
            b.bench_fresh(["lbf"], [1], [], "3")
        if "gang" in only:
            b.bench_fresh(["lbg"], [1, 2, 3], ["--num-nodes", "3"], "4")
            b.bench_gang_warm()
        if "local" in only:
            b.bench_local()
        b.skypilot()
    except Fail as e:
        print(f"launch_bench: error: {e}", file=sys.stderr)
        rc = 1
    finally:
        b.cleanup()
    for note in b.notes:
        print(note)
    print(f"load {os.getloadavg()[0]:.2f} at the end")
    sys.exit(rc)


main()
PY
rc=$?
exit $rc
