#!/bin/sh
# Kubernetes infra benchmark: prints figures, asserts nothing (not part of `make test`).
#
#   tests/bench/k8s_bench.sh [--skiff build/skiff] [--runs 20] [--launch-runs 5]
#
# Root only. Brings up the real test cluster of tests/lib/k8s.sh (two kubelets; the
# first run on a machine builds Kubernetes, about 20 minutes), then measures, in one run:
#
#   exec       floor: kubectl exec POD -- true          (one pod, busybox image)
#              skiff exec -d C true                     (submit only)
#              skiff exec C true                        (submit, follow the logs to the end)
#   launch     floor: kubectl create (N pods) + kubectl wait --for=condition=Ready +
#              kubectl cp of the skiff binary into each pod (in parallel) + delete
#              skiff launch -d -c C --num-nodes N (busybox image, run: true) + down
#              for N = 1 and 3, each --launch-runs times, alternating
#
# and prints each ratio to its floor. Everything it made is removed on exit.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
skiff=$root/build/skiff
runs=20
lruns=5
while [ $# -gt 0 ]; do
	case $1 in
	--skiff) skiff=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--launch-runs) lruns=$2; shift 2 ;;
	*) echo "usage: $0 [--skiff PATH] [--runs N] [--launch-runs N]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "k8s_bench: needs root" >&2; exit 1; }
for c in hyperfine python3; do
	command -v $c >/dev/null || {
		echo "k8s_bench: needs $c (sh tests/lib/packages.sh install bench)" >&2
		exit 1
	}
done

T=$(mktemp -d /tmp/skkb.XXXXXX)
export SKIFF_HOME="$T/home" SRC_DIR="$root"
# shellcheck source=tests/lib/k8s.sh
. "$root/tests/lib/k8s.sh"

# shellcheck disable=SC2317 # called by the trap
cleanup() {
	trap - EXIT INT TERM
	"$skiff" down -a >/dev/null 2>&1
	k8s_down
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

k8s_up 2 || exit 1
mkdir -p "$T/bin" && ln -s "$K8S_BIN/kubectl" "$T/bin/kubectl" || exit 1
export PATH="$T/bin:$PATH" KUBECONFIG="$K8S_KUBECONFIG"
INFRA=k8s/$K8S_CONTEXT/default
printf 'resources:\n  infra: %s\n  image_id: docker:%s\nrun: "true"\n' "$INFRA" \
	"$K8S_IMAGE_BUSYBOX" >"$T/task.yaml"

now_ns() { date +%s%N; }

# floor_launch N TAG: create N pods, wait until Ready, copy skiff into each; seconds.
floor_launch() {
	_n=$1
	_names=
	_list='{"apiVersion":"v1","kind":"List","items":['
	_i=0
	while [ "$_i" -lt "$_n" ]; do
		_names="$_names fl-$2-$_i"
		[ "$_i" = 0 ] || _list="$_list,"
		_list="$_list$(printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fl-%s-%s","labels":{"bench":"floor"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"%s","command":["sleep","100000"]}]}}' \
			"$2" "$_i" "$K8S_IMAGE_BUSYBOX")"
		_i=$((_i + 1))
	done
	_list="$_list]}"
	_t=$(now_ns)
	printf '%s' "$_list" | k8s_kubectl create -f - >/dev/null || return 1
	# shellcheck disable=SC2086 # a list of names
	k8s_kubectl wait --for=condition=Ready $(printf ' pod/%s' $_names) --timeout=120s >/dev/null ||
		return 1
	_cps=
	for _p in $_names; do
		k8s_kubectl cp "$skiff" "$_p:/tmp/skiff" &
		_cps="$_cps $!"
	done
	# (Not a bare wait: the cluster's watchdog is a child of this shell too.)
	for _p in $_cps; do
		wait "$_p" || return 1
	done
	echo $((($(now_ns) - _t) / 1000)) >>"$T/floor.$_n"
	k8s_kubectl delete pods -l bench=floor --wait=true --grace-period=0 >/dev/null 2>&1
}

skiff_launch() {
	_t=$(now_ns)
	"$skiff" launch -d -c "kb$2" --num-nodes "$1" "$T/task.yaml" >"$T/launch.out" 2>&1 ||
		{ cat "$T/launch.out" >&2; return 1; }
	echo $((($(now_ns) - _t) / 1000)) >>"$T/skiff.$1"
	"$skiff" down "kb$2" >/dev/null 2>&1
}

echo "# Kubernetes $K8S_VERSION (tests/lib/k8s.sh: 2 kubelets, containerd $(containerd --version | awk '{print $3}')), busybox pods"
echo "# $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg), skiff $("$skiff" version | head -n 1)"

# ---- launch, new 1-pod and 3-pod clusters ----------------------------------------------
for n in 1 3; do
	r=0
	while [ "$r" -lt "$lruns" ]; do
		floor_launch "$n" "$n-$r" || { echo "floor launch failed" >&2; exit 1; }
		skiff_launch "$n" "$n$r" || { echo "skiff launch failed" >&2; exit 1; }
		r=$((r + 1))
	done
done
python3 - "$T" <<'PY'
import statistics, sys
d = sys.argv[1]
print("\nlaunch to the job submitted (median of %s runs)" % len(open(d + "/floor.1").read().split()))
print("%-8s %12s %12s %7s" % ("pods", "floor", "skiff", "ratio"))
for n in (1, 3):
    f = statistics.median(int(x) for x in open("%s/floor.%d" % (d, n)).read().split()) / 1e3
    s = statistics.median(int(x) for x in open("%s/skiff.%d" % (d, n)).read().split()) / 1e3
    print("%-8d %10.0fms %10.0fms %6.2fx" % (n, f, s, s / f))
PY

# ---- exec on a 1-pod cluster -------------------------------------------------------------
"$skiff" launch -c kbe "$T/task.yaml" >/dev/null 2>&1 || { echo "launch failed" >&2; exit 1; }
pod=$(k8s_kubectl get pods -l skiff.cluster=kbe -o jsonpath='{.items[0].metadata.name}')
hyperfine -N --warmup 3 --runs "$runs" --export-json "$T/h.json" \
	-n floor "$K8S_BIN/kubectl exec $pod -- true" \
	-n "exec -d" "$skiff exec -d kbe true" \
	-n exec "$skiff exec kbe true" >"$T/hyperfine.out" 2>&1 ||
	{ cat "$T/hyperfine.out"; exit 1; }
python3 - "$T/h.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
f = r["floor"]["median"]
print("\nexec on a 1-pod cluster (hyperfine, %d runs)" % len(r["floor"]["times"]))
print("%-10s %9s %9s %9s %7s" % ("", "median", "mean", "stddev", "ratio"))
for name in ("floor", "exec -d", "exec"):
    x = r[name]
    print("%-10s %7.1fms %7.1fms %7.1fms %6.2fx" % (name, x["median"] * 1e3, x["mean"] * 1e3,
                                                   x["stddev"] * 1e3, x["median"] / f))
PY
