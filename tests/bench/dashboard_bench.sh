#!/bin/sh
# Dashboard benchmarks: prints figures, asserts nothing (not part of `make test`).
#
#   tests/bench/dashboard_bench.sh [--skiff build/skiff] [--clusters 100] [--jobs 1000]
#                                  [--runs 30]
#
# In a fresh SKIFF_HOME on local infra: --clusters clusters (one node each), one of them
# with --jobs finished jobs, then `skiff dashboard` on a free port:
#   api      GET /api/v1/clusters against `skiff status --json`, and GET
#            /api/v1/clusters/C/jobs against `skiff queue --json C` (C: the one with the
#            jobs), alternating run by run: p50/p99 of each and the ratio (the floor is the
#            CLI itself: the API runs it)
#   paint    in Chromium (tests/lib/browser.sh): the clusters page's first contentful paint
#            and the time until its --clusters rows are drawn; the cluster page with --jobs
#            jobs until its rows are drawn (median of 5 page loads each)
#   rss      the dashboard's RSS idle, and with 10 pages open (a browser's tabs share one
#            events stream), from /proc
# Everything it made is torn down at the end.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SRC_DIR=$root
skiff=$root/build/skiff
nclusters=100
njobs=1000
runs=30
while [ $# -gt 0 ]; do
	case $1 in
	--skiff) skiff=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift ;;
	--clusters) nclusters=$2; shift ;;
	--jobs) njobs=$2; shift ;;
	--runs) runs=$2; shift ;;
	*) echo "usage: $0 [--skiff B] [--clusters N] [--jobs N] [--runs N]" >&2; exit 2 ;;
	esac
	shift
done
# shellcheck source=tests/lib/browser.sh
. "$root/tests/lib/browser.sh"
browser_setup || { echo "dashboard_bench: $browser_why" >&2; exit 1; }

work=$(mktemp -d /tmp/skdb.XXXXXXXX)
export SKIFF_HOME="$work/home" HOME="$work/userhome"
mkdir -p "$HOME"
dash_pid=
cleanup() {
	[ -z "$dash_pid" ] || kill "$dash_pid" 2>/dev/null
	for c in $("$skiff" status --json 2>/dev/null | python3 -c "import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		"$skiff" down -y "$c" >/dev/null 2>&1
	done
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "dashboard_bench: $("$skiff" version | head -1); $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg) at start"
echo "setting up: $nclusters clusters, $njobs jobs on one of them..."
i=0
while [ "$i" -lt "$nclusters" ]; do
	"$skiff" launch -c "b$i" -d --cpus 0.01 true >/dev/null 2>&1 || { echo "launch b$i failed" >&2; exit 1; }
	i=$((i + 1))
done
i=1
while [ "$i" -lt "$njobs" ]; do
	"$skiff" exec -d --cpus 0.01 b0 true >/dev/null 2>&1 || { echo "exec $i failed" >&2; exit 1; }
	i=$((i + 1))
done
"$skiff" dashboard --port 0 --no-open >"$work/dash.out" 2>"$work/dash.err" &
dash_pid=$!
n=0
until grep -qs '^skiff dashboard: http' "$work/dash.out"; do
	n=$((n + 1)); [ "$n" -lt 200 ] || { cat "$work/dash.err" >&2; exit 1; }
	sleep 0.05
done
url=$(sed -n 's/^skiff dashboard: //p' "$work/dash.out")

python3 - "$skiff" "$url" "$runs" <<-\EOF
import subprocess, sys, time, urllib.request
skiff, url, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
base, token = url.split("/?token=")
def api(path):
    req = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
    t0 = time.monotonic()
    with urllib.request.urlopen(req) as r:
        r.read()
    return (time.monotonic() - t0) * 1000
def cli(args):
    t0 = time.monotonic()
    subprocess.run([skiff] + args, stdout=subprocess.DEVNULL, check=True)
    return (time.monotonic() - t0) * 1000
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]
for label, path, args in (("clusters", "/api/v1/clusters", ["status", "--json"]),
                          ("a cluster's jobs", "/api/v1/clusters/b0/jobs", ["queue", "--json", "b0"])):
    a, c = [], []
    for _ in range(runs):
        a.append(api(path))
        c.append(cli(args))
    print("api: GET %-28s n=%d p50/p99 %.1f/%.1f ms; CLI `skiff %s` %.1f/%.1f ms; ratio p50 %.2fx, p99 %.2fx"
          % (path, runs, pct(a, .5), pct(a, .99), " ".join(args), pct(c, .5), pct(c, .99),
             pct(a, .5) / pct(c, .5), pct(a, .99) / pct(c, .99)))
EOF

rss() { awk '/^VmRSS/ {print $2}' "/proc/$dash_pid/status"; }
echo "rss: the dashboard idle: $(rss) KiB"
cat >"$work/paint.cjs" <<-\EOF
const {chromium} = require("playwright-core");
const [url, nclusters, njobs, rssfile] = process.argv.slice(2);
const base = url.replace(/\/\?token=.*/, "");
const fs = require("fs");
const med = v => v.slice().sort((a, b) => a - b)[Math.floor(v.length / 2)];
(async () => {
  const browser = await chromium.launch({executablePath: process.env.BROWSER_CHROMIUM,
                                         args: ["--no-sandbox", "--disable-gpu"]});
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(url);
  const fcp = [], rows = [], jobs = [];
  for (let i = 0; i < 5; i++) {
    const t0 = Date.now();
    await page.goto(base + "/clusters", {waitUntil: "commit"});
    await page.waitForFunction(n => document.querySelectorAll("tr[data-cluster]").length >= n, Number(nclusters));
    rows.push(Date.now() - t0);
    fcp.push(await page.evaluate(() => {
      const e = performance.getEntriesByName("first-contentful-paint")[0];
      return e ? e.startTime : -1;
    }));
    const t1 = Date.now();
    await page.goto(base + "/clusters/b0", {waitUntil: "commit"});
    await page.waitForFunction(n => document.querySelectorAll("tr[data-job]").length >= n, Number(njobs));
    jobs.push(Date.now() - t1);
  }
  console.log(`paint: clusters page (${nclusters} clusters): first contentful paint ${med(fcp).toFixed(0)} ms, all rows drawn ${med(rows)} ms (median of 5)`);
  console.log(`paint: cluster page with ${njobs} jobs: all rows drawn ${med(jobs)} ms (median of 5)`);
  const pages = [];
  for (let i = 0; i < 10; i++) {
    const p = await ctx.newPage();
    await p.goto(base + (i % 2 ? "/jobs" : "/clusters"));
    pages.push(p);
  }
  await pages[9].waitForTimeout(2000);
  fs.writeFileSync(rssfile, "open\n");
  await pages[9].waitForTimeout(3000);
  await browser.close();
})();
EOF
browser_run "$work/paint.cjs" "$url" "$nclusters" "$njobs" "$work/rss.flag" &
bpid=$!
n=0
until [ -f "$work/rss.flag" ] || [ "$n" -gt 1200 ]; do sleep 0.1; n=$((n + 1)); done
echo "rss: the dashboard with 10 pages open (their one shared events stream): $(rss) KiB"
wait "$bpid"
echo "load $(cut -d' ' -f1 /proc/loadavg) at the end"
