#!/bin/sh
# Container infra benchmark: prints figures, asserts nothing (not part of `make test`).
#
#   tests/bench/container_bench.sh [--skiff build/skiff] [--runs 30]
#
# Root only. Starts a private rootful Podman (runc, all state in a scratch dir, the
# settings of tests/t/t0700-podman.sh), a busybox image, and a 1-node skiff cluster from
# it (`skiff init` as PID 1); then hyperfine measures, in one run, the floor and skiff:
#   floor      podman exec CTR true
#   exec -d    skiff exec -d C true      (submit only)
#   exec       skiff exec C true         (submit, follow the logs to the end)
# and prints each ratio to the floor. Everything it made is removed on exit.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
skiff=$root/build/skiff
runs=30
while [ $# -gt 0 ]; do
	case $1 in
	--skiff) skiff=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	*) echo "usage: $0 [--skiff PATH] [--runs N]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "container_bench: needs root" >&2; exit 1; }
for c in podman runc hyperfine python3; do
	command -v $c >/dev/null || {
		echo "container_bench: needs $c (apt-get install podman runc hyperfine python3)" >&2
		exit 1
	}
done

T=$(mktemp -d /tmp/skcb.XXXXXX)
PM=$T/pm
export SKIFF_HOME="$T/home"
SRC_DIR=$root
# shellcheck source=tests/lib/container.sh
. "$root/tests/lib/container.sh"
# shellcheck source=tests/lib/podman.sh
. "$root/tests/lib/podman.sh"
podman_private "$PM" || exit 1

# shellcheck disable=SC2317 # called by the trap
cleanup() {
	trap - EXIT INT TERM
	"$skiff" down cb >/dev/null 2>&1
	podman_private_down "$PM"
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

busybox_image "$T/bbroot" localhost/sk-bench:latest || exit 1
printf 'resources:\n  infra: podman\n  image_id: docker:localhost/sk-bench:latest\nrun: "true"\n' \
	>"$T/task.yaml"
"$skiff" launch -c cb "$T/task.yaml" >/dev/null 2>&1 || { echo "launch failed" >&2; exit 1; }

echo "# skiff exec on a podman cluster (busybox container, skiff init as PID 1) vs podman exec"
echo "# $(podman --version), runc $(runc --version | head -1 | awk '{print $3}'), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
hyperfine -N --warmup 3 --runs "$runs" --export-json "$T/h.json" \
	-n floor "podman exec skiff-cb-0 true" \
	-n "exec -d" "$skiff exec -d cb true" \
	-n exec "$skiff exec cb true" >"$T/hyperfine.out" 2>&1 ||
	{ cat "$T/hyperfine.out"; exit 1; }
python3 - "$T/h.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
f = r["floor"]["median"]
print("%-10s %9s %9s %9s %7s" % ("", "median", "mean", "stddev", "ratio"))
for name in ("floor", "exec -d", "exec"):
    x = r[name]
    print("%-10s %7.1fms %7.1fms %7.1fms %6.2fx" % (name, x["median"] * 1e3, x["mean"] * 1e3,
                                                   x["stddev"] * 1e3, x["median"] / f))
PY
