#!/bin/sh
# A manual check of the test cluster of tests/lib/k8s.sh (not part of make test):
#
#   sh tests/k8s/smoke.sh [N]      N nodes (1 or 2, default 2); root only
#
# Brings the cluster up, runs a busybox pod on each node, checks `kubectl exec -i` both
# ways, the pod IPs and pod-to-pod traffic across the nodes, deletes the pods, tears the
# cluster down and checks that nothing is left: processes, mounts, links, netns, cgroups.
set -u
SRC_DIR=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC_DIR/tests/lib/k8s.sh"

n=${1:-2}
fails=0
ok() { printf 'ok - %s\n' "$*"; }
bad() { printf 'not ok - %s\n' "$*"; fails=$((fails + 1)); }
check() {
	_what=$1
	shift
	if "$@"; then ok "$_what"; else bad "$_what"; fi
}

k8s_require_root || exit 1
netns_before=$(ls /run/netns 2>/dev/null | sort)
t0=$(date +%s.%N)
if ! k8s_up "$n"; then
	bad "k8s_up $n"
	exit 1
fi
ok "k8s_up $n in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"
k8s_kubectl get nodes -o wide
check "$n node(s) Ready" _k8s_nodes_ready "$n"

i=1
while [ "$i" -le "$n" ]; do
	k8s_kubectl apply -f - <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: bb$i
  labels: {app: skiff-smoke}
spec:
  nodeName: $(k8s_node "$i")
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: $K8S_IMAGE_BUSYBOX
    imagePullPolicy: IfNotPresent
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 1; done']
EOF
	i=$((i + 1))
done
t1=$(date +%s.%N)
check "pods Ready" k8s_kubectl wait --for=condition=Ready pod -l app=skiff-smoke --timeout=90s
echo "# pods Ready in $(awk -v a="$t1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"
k8s_kubectl get pods -o wide

i=1
while [ "$i" -le "$n" ]; do
	out=$(printf 'from-stdin\n' | k8s_kubectl exec -i "bb$i" -- sh -c 'echo hi; cat')
	check "exec -i on bb$i both ways" [ "$out" = "$(printf 'hi\nfrom-stdin')" ]
	ip=$(k8s_kubectl get pod "bb$i" -o 'jsonpath={.status.podIP}')
	case $ip in "$K8S_NET".*) ok "bb$i has pod IP $ip" ;; *) bad "bb$i pod IP '$ip'" ;; esac
	eval "ip$i=\$ip"
	i=$((i + 1))
done
# shellcheck disable=SC2154 # set by eval
check "host reaches bb1 at $ip1" /bin/busybox ping -c 1 -W 2 "$ip1"
if [ "$n" = 2 ]; then
	# shellcheck disable=SC2154
	check "bb1 reaches bb2 at $ip2" k8s_kubectl exec bb1 -- ping -c 1 -W 2 "$ip2"
fi
k8s_kubectl exec bb1 -- sh -c 'exit 3' 2>/dev/null
check "exec passes the exit status" [ $? = 3 ]
check "delete pods" k8s_kubectl delete pod -l app=skiff-smoke --wait=true --timeout=60s
check "no pods left" [ -z "$(k8s_kubectl get pods -o name)" ]

dir=$K8S_DIR
t2=$(date +%s.%N)
check "k8s_down" k8s_down
echo "# k8s_down in $(awk -v a="$t2" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"
left_procs() {
	for _p in /proc/[0-9]*; do
		[ "${_p#/proc/}" != $$ ] || continue
		{ tr '\0' ' ' <"$_p/cmdline"; } 2>/dev/null | grep -qF "$dir/" && echo "${_p#/proc/}"
	done
}
check "no process left" [ -z "$(left_procs)" ]
check "no mount left" [ -z "$(grep -F "$dir" /proc/self/mountinfo)" ]
check "no bridge left" sh -c "! ip link show $K8S_BRIDGE >/dev/null 2>&1"
check "no netns left" [ "$(ls /run/netns 2>/dev/null | sort)" = "$netns_before" ]
check "no veth on the bridge" [ -z "$(ip -o link show type veth 2>/dev/null | grep -F "master $K8S_BRIDGE")" ]
check "no cgroup left" [ -z "$(ls -d /sys/fs/cgroup/*/"$K8S_CGROUP" 2>/dev/null)" ]
check "no dir left" [ ! -e "$dir" ]
echo "# $fails failed"
[ "$fails" = 0 ]
