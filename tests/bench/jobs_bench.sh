#!/bin/sh
# Managed-jobs benchmarks: prints figures, asserts nothing (not part of `make test`).
#
#   tests/bench/jobs_bench.sh [--skiff build/skiff] [--jobs 2000] [--rows 10000]
#                             [--latency-runs 20] [--remote] [--one-launch]
#
# On local infra (the shared pool cluster, docs/managed-jobs.md), in a fresh SKIFF_HOME:
#   latency   submit-to-LAUNCHING with a free slot: `jobs launch -d` of one job while the
#             controller is up and idle, LAUNCHING event time minus submitted_at (from the
#             job's recorded events), median and max over --latency-runs jobs
#   scale     --jobs managed jobs (`sleep 3600`) submitted back to back (with --one-launch:
#             all but the first in one `jobs launch -d --num-jobs N --cpus 0.0001`): the time until
#             all are RUNNING, then the controller's RSS with 1 and with N jobs running
#             (the difference / N is the controller's memory per running job) and the
#             pool node's memory (supervisor + shims + the sleeps, PSS)
#   queue     `jobs queue` and `jobs queue --json` wall time with --rows jobs in the table
#             (the rest added as finished rows straight into the db), median of 10
#   cancel    `jobs cancel -a` of the N running jobs: the request's time, and the time
#             until every one is CANCELLED and its pool job ended
# With --remote (root only), the controller runs on a cluster of its own instead
# (jobs.controller.resources.infra: ssh/ctl, docs/managed-jobs.md "Placement"): one real
# sshd node from tests/lib/nodes.sh, the jobs on its local pool, every command a request
# over ssh:
#   cold      the first `jobs launch -d`: the controller cluster brought up, and the job
#   submit    `jobs launch -d` round trip through the controller, median of --latency-runs
#   scale     --jobs jobs (`sleep 3600`) in one `jobs launch -d --num-jobs N`: the request's
#             time, the time until all are RUNNING, the controller's RSS on the node with 1
#             and with N running (per job), `jobs queue --json` through it with N jobs
#   cancel    `jobs cancel -a` through it: the request, and all CANCELLED
# Everything it started is cancelled and torn down at the end.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 1
command -v python3 >/dev/null || apt-get install -y python3 >/dev/null
remote=
for a in "$@"; do [ "$a" = --remote ] && remote=1; done
if [ -n "$remote" ]; then
	SRC_DIR=$root
	export SRC_DIR
	# shellcheck source=tests/lib/nodes.sh
	. "$root/tests/lib/nodes.sh"
	nodes_require_root || exit 1
	nodes_install_deps || exit 1
	trap 'nodes_down' EXIT
	trap 'exit 130' INT TERM
	nodes_up 1 || exit 1
	export JB_NODE_IP="$(nodes_ip 1)" JB_NODE_USER="$NODES_USER" JB_NODE_KEY="$NODES_KEY"
	export JB_SSH_CONFIG="$NODES_SSH_CONFIG"
fi
python3 - "$@" <<'PY'
import argparse, json, os, shutil, signal, sqlite3, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--skiff", default="build/skiff")
ap.add_argument("--jobs", type=int, default=2000)
ap.add_argument("--rows", type=int, default=10000)
ap.add_argument("--latency-runs", type=int, default=20)
ap.add_argument("--remote", action="store_true")
ap.add_argument("--one-launch", action="store_true")
a = ap.parse_args()
skiff = os.path.abspath(a.skiff)
home = tempfile.mkdtemp(prefix="skiff-jobs-bench.")
env = dict(os.environ, SKIFF_HOME=home, SKIFF_JOBS_POLL_MS="2000", SKIFF_JOBS_IDLE_S="30")
db_path = os.path.join(home, "launcher.db")

def sk(*args, check=True):
    return subprocess.run([skiff, *args], env=env, check=check, capture_output=True, text=True)

def queue():
    return json.loads(sk("jobs", "queue", "--json").stdout)

def ctl_pid():
    for _ in range(200):
        try:
            with open(os.path.join(home, "jobs", "controller.lock")) as f:
                pid = int(f.read().split()[0])
            os.kill(pid, 0)
            return pid
        except Exception:
            time.sleep(0.05)
    return 0

def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

def pss_kb(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

def wait(cond, limit, step=0.5):
    end = time.time() + limit
    while time.time() < end:
        if cond():
            return True
        time.sleep(step)
    return False

def events(jid):
    con = sqlite3.connect(db_path, timeout=30)
    rows = con.execute("SELECT at, sched FROM job_events WHERE job_id = ? ORDER BY at, rowid",
                       (jid,)).fetchall()
    sub = con.execute("SELECT submitted_at FROM managed_jobs WHERE id = ?", (jid,)).fetchone()[0]
    con.close()
    return sub, rows

def pool_pids():
    """The pool node's supervisor and every process under its node dir's sessions."""
    node = os.path.join(home, "local", "skiff-jobs", "0")
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            e = open("/proc/%s/environ" % p, "rb").read()
        except OSError:
            continue
        if ("HOME=" + node).encode() + b"\0" in e:
            pids.append(int(p))
    return pids

def remote_bench():
    """The controller on its own cluster: one sshd node (set up by the shell above)."""
    with open(os.path.join(home, "ssh_node_pools.yaml"), "w") as f:
        f.write("ctl:\n  hosts:\n    - ip: %s\n      user: %s\n      identity_file: %s\n"
                % (os.environ["JB_NODE_IP"], os.environ["JB_NODE_USER"], os.environ["JB_NODE_KEY"]))
    with open(os.path.join(home, "config.yaml"), "w") as f:
        f.write("jobs:\n  controller:\n    resources:\n      infra: ssh/ctl\n")
    ssh = ["ssh", "-F", os.environ["JB_SSH_CONFIG"], "tn1"]
    ctl_home = "$HOME/.skiff/jobs-controller"

    def rsh(cmd):
        return subprocess.run(ssh + [cmd], capture_output=True, text=True).stdout

    def rctl_rss():
        out = rsh("p=$(head -n 1 %s/jobs/controller.lock) && grep VmRSS /proc/$p/status" % ctl_home)
        return int(out.split()[1]) if out.split() else 0

    def count(status):
        return sum(1 for j in queue() if j["status"] == status)

    print("# skiff managed-jobs benchmark, remote controller on %s (ssh/ctl): %s, %d cores"
          % (os.environ["JB_NODE_IP"], skiff, os.cpu_count()))
    try:
        t0 = time.time()
        sk("jobs", "launch", "-d", "-n", "warm", "true")
        print("first `jobs launch -d` (controller cluster brought up, then the job): %.2f s"
              % (time.time() - t0))
        wait(lambda: all(j["schedule_state"] == "DONE" for j in queue()), 120)
        ts = []
        for i in range(a.latency_runs):
            t0 = time.time()
            sk("jobs", "launch", "-d", "-n", "lat", "true")
            ts.append((time.time() - t0) * 1000)
        print("`jobs launch -d` round trip through the controller: median %.0f ms, max %.0f ms "
              "(%d jobs)" % (statistics.median(ts), max(ts), len(ts)))
        ts = []
        for i in range(10):
            t0 = time.time()
            queue()
            ts.append((time.time() - t0) * 1000)
        print("`jobs queue --json` through the controller, %d jobs: median %.0f ms"
              % (len(queue()), statistics.median(ts)))
        wait(lambda: all(j["schedule_state"] == "DONE" for j in queue()), 120)
        sk("jobs", "launch", "-d", "-n", "base", "sleep 3600")
        wait(lambda: count("RUNNING") >= 1, 120)
        time.sleep(5)
        base_rss = rctl_rss()
        n = a.jobs - 1
        t0 = time.time()
        sk("jobs", "launch", "-d", "-n", "s", "--num-jobs", str(n), "sleep 3600")
        t_sub = time.time() - t0
        print("submitted %d jobs in one `jobs launch -d --num-jobs %d`: %.1f s" % (n, n, t_sub))
        wait(lambda: count("RUNNING") >= a.jobs, 1800, 2)
        t_run = time.time() - t0
        r = count("RUNNING")
        print("%d of %d managed jobs RUNNING at once after %.1f s from the submit (%.1f/s)"
              % (r, a.jobs, t_run, r / t_run))
        time.sleep(5)
        full_rss = rctl_rss()
        print("controller RSS on the node: %d KiB with 1 job running, %d KiB with %d: "
              "%.2f KiB per running job (goal <= 2048 KiB)"
              % (base_rss, full_rss, r, (full_rss - base_rss) / max(1, r - 1)))
        ts = []
        for i in range(10):
            t0 = time.time()
            queue()
            ts.append((time.time() - t0) * 1000)
        print("`jobs queue --json` through the controller with %d jobs running: median %.0f ms, "
              "max %.0f ms" % (r, statistics.median(ts), max(ts)))
        t0 = time.time()
        sk("jobs", "cancel", "-a")
        t_req = time.time() - t0
        wait(lambda: all(j["status"] in ("CANCELLED", "SUCCEEDED") for j in queue()), 900, 1)
        print("cancel -a of %d running jobs through the controller: request %.0f ms; all "
              "CANCELLED after %.1f s" % (r, t_req * 1000, time.time() - t0))
    finally:
        sk("jobs", "cancel", "-a", check=False)
        wait(lambda: all(j["schedule_state"] == "DONE" for j in queue()), 300, 2)
        for c in json.loads(sk("status", "--json", check=False).stdout or "[]"):
            sk("down", "--purge", c["name"], check=False)
        shutil.rmtree(home, ignore_errors=True)

if a.remote:
    remote_bench()
    sys.exit(0)

print("# skiff managed-jobs benchmark: %s, %d cores" % (skiff, os.cpu_count()))
try:
    # --- latency: submit -> LAUNCHING with a free slot -----------------------------------
    sk("jobs", "launch", "-d", "-n", "warm", "true")
    wait(lambda: all(j["schedule_state"] == "DONE" for j in queue()), 60)
    lat = []
    for i in range(a.latency_runs):
        jid = int(sk("jobs", "launch", "-d", "-n", "lat", "true").stdout.split()[0])
        wait(lambda: events(jid)[1] and any(s == 2 for _, s in events(jid)[1]), 30, 0.02)
        sub, rows = events(jid)
        t = [at for at, s in rows if s == 2]
        if t:
            lat.append((t[0] - sub) * 1000)
    wait(lambda: all(j["schedule_state"] == "DONE" for j in queue()), 120)
    if lat:
        print("submit -> LAUNCHING, free slot: median %.1f ms, max %.1f ms (%d jobs; goal < 100 ms)"
              % (statistics.median(lat), max(lat), len(lat)))

    # --- scale: N sleeping jobs running at once --------------------------------------------
    pid = ctl_pid()
    jid = int(sk("jobs", "launch", "-d", "-n", "base", "sleep 3600").stdout.split()[0])
    wait(lambda: any(j["id"] == jid and j["status"] == "RUNNING" for j in queue()), 60)
    time.sleep(3)
    pid = ctl_pid()
    base_rss = rss_kb(pid)
    t0 = time.time()
    n = a.jobs - 1
    if a.one_launch:
        subprocess.run([skiff, "jobs", "launch", "-d", "-n", "s", "--cpus", "0.0001",
                        "--num-jobs", str(n), "sleep 3600"],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        for i in range(n):
            subprocess.run([skiff, "jobs", "launch", "-d", "-n", "s%d" % i, "sleep 3600"],
                           env=env, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    t_sub = time.time() - t0
    print("submitted %d jobs in %.1f s (%.0f/s, %s)"
          % (n, t_sub, n / t_sub, "one `jobs launch -d --num-jobs %d`" % n if a.one_launch
             else "one `jobs launch -d` process each"))
    def running():
        return sum(1 for j in queue() if j["status"] == "RUNNING")
    ok = wait(lambda: running() >= a.jobs, 1800, 2)
    t_run = time.time() - t0
    r = running()
    print("%d of %d managed jobs RUNNING at once after %.1f s from the first submit (%.1f/s)"
          % (r, a.jobs, t_run, r / t_run))
    time.sleep(5)  # a few probe rounds
    pid = ctl_pid()
    full_rss = rss_kb(pid)
    per = (full_rss - base_rss) / max(1, r - 1)
    print("controller RSS: %d KiB with 1 job running, %d KiB with %d: %.1f KiB per running job "
          "(goal <= 2048 KiB; SkyPilot budgets 350-400 MB)" % (base_rss, full_rss, r, per))
    pp = pool_pids()
    pss = sum(pss_kb(p) for p in pp)
    print("pool node (supervisor, shims, sleeps: %d processes): PSS %.1f MiB, %.0f KiB per job"
          % (len(pp), pss / 1024, pss / max(1, r)))
    t0 = time.time(); q = queue(); tq = time.time() - t0
    print("jobs queue --json with %d jobs running: %.0f ms" % (len(q), tq * 1000))

    # --- queue with --rows rows --------------------------------------------------------------
    con = sqlite3.connect(db_path, timeout=60)
    have = con.execute("SELECT COUNT(*) FROM managed_jobs").fetchone()[0]
    extra = max(0, a.rows - have)
    now = time.time()
    con.executemany(
        "INSERT INTO managed_jobs (name, entry, status, sched, submitted_at, started_at, ended_at, "
        "reason, cluster) VALUES (?, 'sleep 1', 5, 6, ?, ?, ?, 'succeeded', 'skiff-jobs')",
        [("old%d" % i, now - 3600, now - 3500, now - 3400) for i in range(extra)])
    con.commit(); con.close()
    for args in (("jobs", "queue"), ("jobs", "queue", "--json")):
        ts = []
        for _ in range(10):
            t0 = time.time()
            out = sk(*args).stdout
            ts.append((time.time() - t0) * 1000)
        print("`skiff %s` with %d jobs in the table: median %.0f ms, max %.0f ms (goal < 200 ms)"
              % (" ".join(args), a.rows, statistics.median(ts), max(ts)))

    # --- cancel every running job --------------------------------------------------------------
    t0 = time.time()
    sk("jobs", "cancel", "-a")
    t_req = time.time() - t0
    def all_cancelled():
        return all(j["status"] in ("CANCELLED", "SUCCEEDED") for j in queue())
    wait(all_cancelled, 600, 0.5)
    t_all = time.time() - t0
    left = {}
    def pool_idle():
        out = sk("node", "queue", "--json", check=False).stdout if False else \
            subprocess.run([skiff, "node", "queue", "--json", "-s"], capture_output=True, text=True,
                           env=dict(env, SKIFF_HOME=os.path.join(home, "local", "skiff-jobs", "0",
                                                                 ".skiff"))).stdout
        try:
            live = [j for j in json.loads(out) if j["status"] in ("RUNNING", "PENDING", "SETTING_UP")]
        except Exception:
            return False
        left["n"] = len(live)
        return not live
    if not wait(pool_idle, 120, 1):
        print("# %s pool jobs still running after 120 s" % left.get("n"))
    t_gone = time.time() - t0
    print("cancel -a of %d running jobs: request %.0f ms; all CANCELLED after %.1f s; "
          "every pool job ended after %.1f s" % (r, t_req * 1000, t_all, t_gone))
finally:
    subprocess.run([skiff, "jobs", "cancel", "-a"], env=env, capture_output=True)
    time.sleep(2)
    subprocess.run([skiff, "down", "skiff-jobs"], env=env, capture_output=True)
    try:
        pid = ctl_pid()
        if pid:
            os.kill(pid, signal.SIGTERM)
    except Exception:
        pass
    shutil.rmtree(home, ignore_errors=True)
PY
