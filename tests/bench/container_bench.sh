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
mkdir -p "$PM/run" "$PM/tmp" "$PM/root" "$PM/netconf"
cat >"$PM/containers.conf" <<EOF
[containers]
netns = "none"
log_driver = "k8s-file"
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$PM/run/events.log"
runtime = "runc"
tmp_dir = "$PM/tmp"
static_dir = "$PM/root/libpod"
volume_path = "$PM/root/volumes"
[network]
network_config_dir = "$PM/netconf"
EOF
printf '[storage]\ndriver = "overlay"\nrunroot = "%s/run"\ngraphroot = "%s/root"\n' \
	"$PM" "$PM" >"$PM/storage.conf"
export CONTAINERS_CONF="$PM/containers.conf" CONTAINERS_STORAGE_CONF="$PM/storage.conf"
left=
for f in /var/lib/containers /var/lib/containers/cache/blob-info-cache-v1.boltdb \
	/run/containers /run/containers/networks; do
	[ -e "$f" ] || left="$left $f"
done

# shellcheck disable=SC2317 # called by the trap
cleanup() {
	trap - EXIT INT TERM
	"$skiff" down cb >/dev/null 2>&1
	podman rm -a -f -t 0 >/dev/null 2>&1
	podman image rm -a -f >/dev/null 2>&1
	awk -v t="$PM/" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r |
		while read -r m; do umount -l "$m"; done
	# shellcheck disable=SC2086
	[ -z "$left" ] || rm -rf $left
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

R=$T/bbroot
mkdir -p "$R/bin" "$R/etc" "$R/dev" "$R/tmp" "$R/proc" "$R/root"
cp /bin/busybox "$R/bin/busybox"
for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$R/bin/$a"; done
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\n' >"$R/etc/group"
chmod 1777 "$R/tmp"
tar -C "$R" -cf "$T/bb.tar" . && podman import "$T/bb.tar" localhost/sk-bench:latest >/dev/null 2>&1 ||
	exit 1
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
