#!/usr/bin/env python3
"""The sync benchmark's measures (tests/bench/sync_bench.sh runs this, once per link).

Every skiff figure is taken next to rsync's in the same run, on the same node, over the same
link, the two alternating run by run: `rsync -a -e 'ssh -F $NODES_SSH_CONFIG'` (the nodes' own
ssh options, over their warm ControlMaster) against `skiff exec` of a task whose workdir is
the tree (skiff's own ssh master, also warm). Figures are medians; ratios are skiff / rsync.

    sync_bench.py --skiff build/skiff --link veth|shaped --tree DIR --out FILE.json
                  [--runs 5] [--only first,noop,delta,many,nodes,selfcopy]
    sync_bench.py --make-tree DIR          the workdir the measures sync
    sync_bench.py --report FILE.json...    the table of every run's rows
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ND = os.environ["NODES_DIR"]
CFG = os.environ["NODES_SSH_CONFIG"]
POOL = os.environ["NODES_POOL"]
NET = os.environ["NODES_NET"]


class Fail(Exception):
    pass


def med(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def timed(argv, env=None, stdin=None, check=True, what=None):
    """Runs argv; (ms, stderr)."""
    fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
    try:
        t = time.perf_counter()
        p = subprocess.run(argv, env=env, stdin=fin, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        ms = (time.perf_counter() - t) * 1000
    finally:
        if stdin:
            fin.close()
    if check and p.returncode:
        raise Fail(f"{what or ' '.join(argv)}: exit {p.returncode}: "
                   f"{(p.stderr or p.stdout).strip()[-800:]}")
    return ms, p.stderr


def cpu_ms():
    """The CPU time the whole machine has spent busy so far (every core, every process: the
    nodes are namespaces of this kernel), in ms, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal: all but idle and iowait
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)
    return busy * 1000.0 / os.sysconf("SC_CLK_TCK")


def tree_bytes(root):
    return sum(os.lstat(os.path.join(d, f)).st_size for d, _, fs in os.walk(root) for f in fs)


def page_fill(nbytes, writers, where):
    """The machine's own cost of putting nbytes into the page cache of a new file, as each
    node's receiver must, by `writers` dd in parallel into where (the nodes' filesystem):
    (wall ms, CPU ms) for new files, then the same for rewriting those files in place,
    whose pages are already held. On a VM that hands freed memory back to its host, the
    first is mostly the host faulting the pages in again; no tool can avoid it."""
    mib = max(1, nbytes >> 20)
    paths = [os.path.join(where, f"bench-fill.{os.getpid()}.{k}") for k in range(writers)]
    out = []
    try:
        for conv in ("", "notrunc"):
            c, t = cpu_ms(), time.perf_counter()
            ps = [subprocess.Popen(["dd", "if=/dev/zero", f"of={f}", "bs=1M", f"count={mib}",
                                    *([f"conv={conv}"] if conv else []), "status=none"])
                  for f in paths]
            if any(p.wait() for p in ps):
                raise Fail("dd into the nodes' filesystem failed")
            out += [(time.perf_counter() - t) * 1000, cpu_ms() - c]
    finally:
        for f in paths:
            if os.path.exists(f):
                os.unlink(f)
    return out


def ssh(i, cmd, check=True):
    p = subprocess.run(["ssh", "-F", CFG, f"tn{i}", cmd], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode:
        raise Fail(f"ssh tn{i} {cmd}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout


# A destination is moved aside, not removed, between runs, and the moved copies removed
# once a link's runs are over: ext4 skips inodes freed in the last minutes when it
# allocates one (recently_deleted()), so the 5,000 files of a sync that follows an rm -rf
# of 5,000 (or, with three nodes on one disk, of 15,000) cost each allocation a scan of
# them, and whichever tool ran second paid more. Separate machines never see that.
ASIDE = "mkdir -p ~/.bench-aside && for d in {}; do [ ! -e $d ] || mv $d ~/.bench-aside/$$.$(date +%s%N); done"


def aside(i, *paths):
    ssh(i, ASIDE.format(" ".join(paths)))


def poke(path, n=4096, off=None):
    """Rewrites n bytes of path (at off, or anywhere): the change both tools must carry.
    Its mtime moves on by a second at least: rsync's quick check compares whole seconds
    (--modify-window 0), so an edit within the second of the last sync would be, for
    rsync, no change at all, and cost it nothing."""
    st = os.stat(path)
    off = random.randrange(0, st.st_size - n) if off is None else off
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(os.urandom(n))
    os.utime(path, ns=(st.st_atime_ns, max(time.time_ns(), st.st_mtime_ns + 10**9)))


class Bench:
    def __init__(self, a):
        self.a = a
        self.sk = os.path.abspath(a.skiff)
        self.tree = os.path.abspath(a.tree)
        self.home = tempfile.mkdtemp(prefix="ssb.", dir="/tmp")
        self.env = dict(os.environ, SKIFF_HOME=self.home, NO_COLOR="1",
                        SKIFF_SSH_NODE_POOLS=os.environ["NODES_POOL_FILE"])
        self.env.pop("SKIFF_DEBUG", None)
        self.task = os.path.join(self.home, "task.yaml")
        with open(self.task, "w") as f:
            f.write(f"workdir: {self.tree}\nrun: \"true\"\n")
        self.rows = []

    # --- skiff ------------------------------------------------------------------------
    def skiff(self, *args, check=True):
        return timed([self.sk, *args], env=self.env, check=check,
                     what="skiff " + " ".join(args))

    def skiff_out(self, *args):
        p = subprocess.run([self.sk, *args], env=self.env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode:
            raise Fail(f"skiff {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        return p.stdout

    def node_of(self, cluster):
        """The test node (its number) of each node of a cluster, by IP."""
        st = json.loads(self.skiff_out("status", "--json", cluster))
        return [int(n["ip"].rsplit(".", 1)[1]) - 10 for n in st[0]["nodes"]]

    def down(self, name):
        names = [c["name"] for c in json.loads(self.skiff_out("status", "--json") or "[]")]
        if name in names:
            self.skiff("down", name)

    @staticmethod
    def sync_step(err):
        """The `sync` step line's time, ms (10 ms resolution)."""
        for line in err.splitlines():
            w = line.split()
            if len(w) >= 2 and w[0] == "sync" and w[-1].endswith("s"):
                try:
                    return float(w[-1][:-1]) * 1000
                except ValueError:
                    pass
        return None

    def wipe_skiff_state(self, nodes):
        """What the node and the launcher know of the workdir: gone (a first sync)."""
        for i in nodes:
            aside(i, "~/sky_workdir")
            ssh(i, "rm -rf ~/.skiff/sync")
        shutil.rmtree(os.path.join(self.home, "sync"), ignore_errors=True)

    # --- rsync ------------------------------------------------------------------------
    def rsync(self, i, dst="rsync_dst"):
        return timed(["rsync", "-a", "-e", f"ssh -F {CFG}", self.tree + "/", f"tn{i}:{dst}/"],
                     what="rsync")[0]

    # --- reporting --------------------------------------------------------------------
    def row(self, case, xs, fs, extra=None, floor="rsync -a"):
        r = dict(link=self.a.link, case=case, skiff=med(xs), floor=med(fs), floor_name=floor,
                 ratio=med(xs) / med(fs), n=len(xs), skiff_runs=xs, floor_runs=fs)
        if extra:
            r.update(extra)
        self.rows.append(r)
        more = "".join(f", {k} {v:.0f} ms" if isinstance(v, float) else f", {k} {v}"
                       for k, v in (extra or {}).items())
        print(f"  {case:<48} skiff {r['skiff']:8.0f} ms   {floor} {r['floor']:8.0f} ms   "
              f"ratio {r['ratio']:.2f}x (n={r['n']}{more})", flush=True)

    # --- the measures -----------------------------------------------------------------
    def one_node(self):
        n = self.a.runs
        only = self.a.only
        self.down("sb1")
        self.skiff("launch", "-d", "-c", "sb1", "--infra", f"ssh/{POOL}", self.task)
        node = self.node_of("sb1")[0]
        print(f"[{self.a.link}] one node (tn{node}), {n} runs each, skiff and rsync in turn")
        if "first" in only:
            xs, fs, steps = [], [], []
            for _ in range(n):
                aside(node, "~/rsync_dst")
                fs.append(self.rsync(node))
                self.wipe_skiff_state([node])
                ms, err = self.skiff("exec", "sb1", self.task)
                step = self.sync_step(err)
                xs.append(step if step is not None else ms)
                steps.append(ms)
            self.row("first sync (the sync step of exec)", xs, fs,
                     {"exec whole": med(steps)})
        if "noop" in only:
            self.rsync(node)
            self.skiff("exec", "sb1", self.task)
            xs, fs, steps = [], [], []
            for _ in range(n):
                fs.append(self.rsync(node))
                ms, err = self.skiff("exec", "sb1", self.task)
                xs.append(ms)
                steps.append(self.sync_step(err) or 0.0)
            self.row("nothing changed (exec, the whole job)", xs, fs,
                     {"sync step": med(steps)})
        if "delta" in only:
            blob = os.path.join(self.tree, "data", "blob1.bin")
            xs, fs, steps = [], [], []
            for _ in range(n):
                poke(blob)
                fs.append(self.rsync(node))
                ms, err = self.skiff("exec", "sb1", self.task)
                xs.append(ms)
                steps.append(self.sync_step(err) or 0.0)
            self.row("4 KiB changed in one 25 MB file (exec)", xs, fs,
                     {"sync step": med(steps)})
        if "many" in only:
            xs, fs, steps = [], [], []
            for r in range(n):
                for k in range(100):
                    with open(os.path.join(self.tree, f"pkg{k % 50:02d}",
                                           f"mod{(k * 7 + r) % 100:03d}.py"), "a") as f:
                        f.write(f"# edit {r} {k}\n")
                for b in range(4):
                    poke(os.path.join(self.tree, "data", f"blob{b}.bin"))
                fs.append(self.rsync(node))
                ms, err = self.skiff("exec", "sb1", self.task)
                xs.append(ms)
                steps.append(self.sync_step(err) or 0.0)
            self.row("100 small files + 4 KiB in each 25 MB file (exec)", xs, fs,
                     {"sync step": med(steps)})
        if "nodes" in only:
            # The same first sync through cl_sync_many() alone, for the 3-node comparison.
            xs, cs = [], []
            for _ in range(n):
                self.wipe_skiff_state([node])
                c = cpu_ms()
                out = self.skiff_out("__sync-cluster", "sb1", self.tree, "~/sky_workdir")
                cs.append(cpu_ms() - c)
                xs.append(float(out.split("ms=")[1]))
            self.one_node_first = xs
            self.one_node_cpu = cs
        self.down("sb1")

    def three_nodes(self):
        n = self.a.runs
        self.down("sb3")
        self.skiff("launch", "-d", "-c", "sb3", "--infra", f"ssh/{POOL}", "--num-nodes", "3",
                   self.task)
        nodes = self.node_of("sb3")
        print(f"[{self.a.link}] three nodes (tn{', tn'.join(map(str, nodes))}), {n} runs each")
        xs, fs, cs, fill = [], [], [], []
        for _ in range(n):
            for i in nodes:
                aside(i, "~/rsync_dst")
            t = time.perf_counter()
            ps = [subprocess.Popen(["rsync", "-a", "-e", f"ssh -F {CFG}", self.tree + "/",
                                    f"tn{i}:rsync_dst/"]) for i in nodes]
            if any(p.wait() for p in ps):
                raise Fail("rsync to three nodes failed")
            fs.append((time.perf_counter() - t) * 1000)
            self.wipe_skiff_state(nodes)
            c = cpu_ms()
            out = self.skiff_out("__sync-cluster", "sb3", self.tree, "~/sky_workdir")
            cs.append(cpu_ms() - c)
            xs.append(float(out.split("ms=")[1]))
            fill.append(page_fill(tree_bytes(self.tree), len(nodes),
                                  os.environ.get("TMPDIR", "/tmp")))
        one = getattr(self, "one_node_first", None)
        if one:
            # When the machine's cores are all the nodes have, three syncs cannot take less
            # than their CPU time spread over every core: that bound, against one node.
            ncpu = os.cpu_count() or 1
            bound = med(cs) / ncpu
            new_cpu, held_cpu = med([f[1] for f in fill]), med([f[3] for f in fill])
            self.row("first sync to 3 nodes vs to 1 (cl_sync_many)", xs, one,
                     {"3 rsyncs in parallel": med(fs),
                      "CPU, 1 node": med(self.one_node_cpu), "CPU, 3 nodes": med(cs),
                      f"CPU-bound floor on {ncpu} cores":
                          f"{bound:.0f} ms ({bound / med(one):.2f}x of one)",
                      "page fill of the 3 trees' bytes by dd, CPU: new files":
                          f"{new_cpu:.0f} ms, rewritten in place {held_cpu:.0f} ms"},
                     floor="skiff, 1 node")
        self.row("first sync to 3 nodes (cl_sync_many)", xs, fs,
                 floor="3 rsync -a in parallel")
        self.down("sb3")

    def self_copy(self):
        """A fresh node over this link: `launch -d` until the job is RUNNING, vs cat-copying
        the binary there (the same master: warm, or a new connection)."""
        n = self.a.runs
        size = os.path.getsize(self.sk)
        print(f"[{self.a.link}] fresh node: the self-copy of a {size / 1e6:.1f} MB binary, "
              f"{n} runs each")
        for cold in (False, True):
            xs, fs, subs = [], [], []
            self.down("sbf")
            self.skiff("launch", "-d", "-c", "sbf", "--infra", f"ssh/{POOL}", "true")
            node = self.node_of("sbf")[0]
            for _ in range(n):
                self.down("sbf")
                ssh(node, "rm -rf ~/.skiff ~/.bench-copy")
                extra = ["-o", "ControlMaster=no", "-o", "ControlPath=none"] if cold else []
                fs.append(timed(["ssh", "-F", CFG, *extra, f"tn{node}", "cat >~/.bench-copy"],
                                stdin=self.sk, what="cat copy")[0])
                if cold:
                    self.close_masters()
                t0 = time.time()
                ms, err = self.skiff("launch", "-d", "-c", "sbf", "--infra", f"ssh/{POOL}",
                                     "true")
                if "copied to 1," not in err:
                    raise Fail(f"launch did not copy skiff: {err}")
                xs.append((self.started_at(node) - t0) * 1000)
                subs.append(ms)
            how = "new ssh connection" if cold else "warm ssh master"
            self.row(f"fresh node to RUNNING ({how})", xs, fs, {"launch -d": med(subs)},
                     floor=f"cat {size / 1e6:.1f} MB")
        self.down("sbf")

    def started_at(self, i):
        jobs = json.loads(ssh(i, "~/.skiff/bin/skiff node queue --json") or "[]")
        j = max(jobs, key=lambda j: j["id"])
        if not j.get("started_at"):
            raise Fail(f"tn{i}: job {j['id']} never started")
        return j["started_at"]

    def close_masters(self):
        d = os.path.join(self.home, "ssh")
        for s in os.listdir(d) if os.path.isdir(d) else []:
            if s.startswith(("known_hosts", "diag")):
                continue
            subprocess.run(["ssh", "-o", f"ControlPath={d}/{s}", "-O", "exit", "x"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

    def cleanup(self):
        for i in (1, 2, 3):
            try:
                ssh(i, "rm -rf ~/.bench-aside", check=False)
            except Fail:
                pass
        for c in ("sb1", "sb3", "sbf"):
            try:
                self.down(c)
            except Fail:
                pass
        self.close_masters()
        shutil.rmtree(self.home, ignore_errors=True)


def make_tree(root):
    """The issue's workdir: 50 folders of 100 files of 0.2-8 KB (text), and four
    incompressible 25 MB files: 5,004 files, about 125 MB."""
    rnd = random.Random(16)
    words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rnd.randint(2, 10)))
             for _ in range(2000)]
    for d in range(50):
        p = os.path.join(root, f"pkg{d:02d}")
        os.makedirs(p, exist_ok=True)
        for k in range(100):
            size = rnd.randint(200, 8192)
            out, n = [], 0
            while n < size:
                line = "    " * rnd.randint(0, 3) + " ".join(
                    rnd.choice(words) for _ in range(rnd.randint(1, 10))) + "\n"
                out.append(line)
                n += len(line)
            with open(os.path.join(p, f"mod{k:03d}.py"), "w") as f:
                f.write("".join(out)[:size])
    os.makedirs(os.path.join(root, "data"), exist_ok=True)
    for i in range(4):
        with open(os.path.join(root, "data", f"blob{i}.bin"), "wb") as f:
            f.write(os.urandom(25 << 20))


def report(files):
    rows = []
    for fn in files:
        with open(fn) as f:
            rows += json.load(f)
    print("\n| link | case | skiff | floor | ratio |")
    print("|---|---|---|---|---|")
    for r in rows:
        extra = "".join(f"; {k} {v:.0f} ms" if isinstance(v, float) else f"; {k} {v}"
                        for k, v in r.items() if k not in (
                            "link", "case", "skiff", "floor", "floor_name", "ratio", "n",
                            "skiff_runs", "floor_runs"))
        print(f"| {r['link']} | {r['case']} | {r['skiff']:.0f} ms{extra} | "
              f"{r['floor_name']}: {r['floor']:.0f} ms | {r['ratio']:.2f}x |")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--make-tree":
        make_tree(sys.argv[2])
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--report":
        report(sys.argv[2:])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--skiff", default="build/skiff")
    ap.add_argument("--link", default="veth")
    ap.add_argument("--tree", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="first,noop,delta,many,nodes,selfcopy")
    a = ap.parse_args()
    a.only = set(a.only.split(","))
    b = Bench(a)
    rc = 0
    try:
        if a.only & {"first", "noop", "delta", "many", "nodes"}:
            b.one_node()
        if "nodes" in a.only:
            b.three_nodes()
        if "selfcopy" in a.only:
            b.self_copy()
    except Fail as e:
        print(f"sync_bench: error: {e}", file=sys.stderr)
        rc = 1
    finally:
        b.cleanup()
    with open(a.out, "w") as f:
        json.dump(b.rows, f)
    sys.exit(rc)


main()
