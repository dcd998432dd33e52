#!/bin/sh
# The Kubernetes infra's transport, k8s/CONTEXT/NAMESPACE, through a STAND-IN kubectl:
# no Kubernetes API server can run on the test machine. The stand-in (first in PATH)
# lists "pods" (directories here) for `get pods -l skiff.node`, answers `get pod POD -o
# jsonpath={.status.phase}`, and runs `exec -i POD -- CMD...` as CMD in the pod's
# directory (its HOME). Everything else is the real skiff: the argv of runner_k8s.c, the
# bootstrap (the 4 MB binary through exec stdin), the workdir sync (a tar stream through
# exec stdin), a 2-pod gang, exec, queue, logs, cancel, a pod that goes away, down. This
# shows that kubectl exec carries what skiff sends verbatim; it does not test Kubernetes
# (docs/infra-k8s.md).
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || test_skip_all "needs python3 to read the --json outputs"

K=$TRASH/k8s
mkdir -p "$K/bin" "$K/pods/pod-a" "$K/pods/pod-b" "$K/pods/other"
cat >"$K/bin/kubectl" <<'EOF'
#!/bin/sh
# Stand-in kubectl for t0720: logs its argv, runs exec locally.
printf '%s\n' "$*" >>"$FAKE_K8S/calls.log"
ctx= ns=
while :; do
	case $1 in
	--context) ctx=$2; shift 2 ;;
	-n) ns=$2; shift 2 ;;
	--request-timeout=*) shift ;;
	*) break ;;
	esac
done
[ "$ctx/$ns" = fake-ctx/ml ] || { echo "error: context '$ctx' namespace '$ns'" >&2; exit 1; }
verb=$1; shift
case $verb in
exec)
	[ "$1" = -i ] && shift
	pod=$1; shift
	[ "$1" = -c ] && shift 2
	[ "$1" = -- ] && shift
	d=$FAKE_K8S/pods/$pod
	[ -d "$d" ] && [ ! -e "$d.gone" ] ||
		{ echo "Error from server (NotFound): pods \"$pod\" not found" >&2; exit 1; }
	cd "$d" && unset SKIFF_HOME && HOME=$d exec "$@" ;;
get)
	if [ "$1" = pods ]; then
		# Labelled pods: pod-a, pod-b (not "other"), listed in reverse order.
		printf 'pod-b\t10.200.0.22\tRunning\npod-a\t10.200.0.21\tRunning\n'
		exit 0
	fi
	[ -e "$FAKE_K8S/pods/$2.gone" ] &&
		{ echo "Error from server (NotFound): pods \"$2\" not found" >&2; exit 1; }
	printf Running ;;
delete) echo "No resources found" ;;
*) echo "stand-in kubectl: '$verb' is not supported" >&2; exit 2 ;;
esac
EOF
chmod +x "$K/bin/kubectl"
export PATH="$K/bin:$PATH" FAKE_K8S="$K"

mkdir -p "$TRASH/wd/sub"
echo payload >"$TRASH/wd/data.txt"
echo nested >"$TRASH/wd/sub/n.txt"
head -c 300000 /dev/urandom >"$TRASH/wd/blob.bin"
cat >"$TRASH/gang.yaml" <<'EOF'
num_nodes: 2
workdir: ./wd
envs:
  HOSTILE: "it's \"q\" $(touch pwned) `touch pwned2`\nline 2"
run: |
  echo "rank=$SKYPILOT_NODE_RANK home=${HOME##*/} ips=$(echo $SKYPILOT_NODE_IPS | tr ' ' ,) $(cat data.txt sub/n.txt | tr '\n' ' ')"
  printf '%s' "$HOSTILE" >~/hostile.out
EOF

our_procs() {
	for _p in /proc/[0-9]*; do
		tr '\0' '\n' <"$_p/environ" 2>/dev/null | grep -q "^HOME=$K/pods/" || continue
		echo "${_p#/proc/}"
	done
}

test_cleanup_hook() {
	for _c in $("$SKIFF_BIN" status --json 2>/dev/null | python3 -c \
		"import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		timeout 60 "$SKIFF_BIN" down "$_c" >/dev/null 2>&1
	done
	_p=$(our_procs)
	# shellcheck disable=SC2086
	[ -z "$_p" ] || kill -KILL $_p 2>/dev/null
}

test_expect_success 'launch a 2-pod gang: bootstrap and workdir sync through kubectl exec' '
	{ skiff launch -c k --infra k8s/fake-ctx/ml gang.yaml >out 2>err; rc=$?; } &&
	cat err out &&
	test $rc = 0 &&
	grep -q "nodes .*2 node(s) on k8s/fake-ctx/ml: 10.200.0.21, " err &&
	grep -q "bootstrap .*skiff copied to 2" err &&
	grep -qx "(rank 0, 10.200.0.21) rank=0 home=pod-a ips=10.200.0.21,10.200.0.22 payload nested " out &&
	grep -qx "(rank 1, 10.200.0.22) rank=1 home=pod-b ips=10.200.0.21,10.200.0.22 payload nested " out &&
	grep -q "^skiff: job 1 finished (status: SUCCEEDED)\$" err
'

test_expect_success 'the bytes arrived verbatim: binary, workdir, hostile env' '
	for p in pod-a pod-b; do
		cmp wd/blob.bin "$K/pods/$p/sky_workdir/blob.bin" &&
		cmp "$SKIFF_BIN" "$K/pods/$p/.skiff/bin/skiff" &&
		printf "%s\nline 2" "it'"'"'s \"q\" \$(touch pwned) \`touch pwned2\`" >want &&
		cmp want "$K/pods/$p/hostile.out" || { echo $p; exit 1; }
	done &&
	! ls -a "$K/pods/pod-a" "$K/pods/pod-a/sky_workdir" | grep -q pwned &&
	test ! -e "$K/pods/other/.skiff"
'

test_expect_success 'kubectl was called as runner_k8s.c says, with the script as one word' '
	grep -q "^--context fake-ctx -n ml --request-timeout=60s get pods -l skiff.node -o jsonpath=" \
		"$K/calls.log" &&
	grep -q "^--context fake-ctx -n ml exec -i pod-a -- sh -c " "$K/calls.log" &&
	grep -q "^--context fake-ctx -n ml exec -i pod-b -- sh -c " "$K/calls.log" &&
	! grep -q " -c main " "$K/calls.log"
'

# running JOB: the cluster job JOB is RUNNING on every rank.
running() {
	skiff queue k --json >rq.json 2>/dev/null &&
		python3 -c "import json,sys; d=json.load(open(\"rq.json\")); j=[j for j in d if j[\"id\"] == $1]; sys.exit(not (j and j[0][\"status\"] == \"RUNNING\"))"
}

test_expect_success 'exec, queue, logs and cancel on the pods' '
	skiff exec k "echo exec in \${HOME##*/}" >out 2>err && test "$(cat out)" = "exec in pod-a" &&
	skiff exec -d --num-nodes 2 k "sleep 9100" 2>/dev/null &&
	wait_for "running 3" 20 &&
	skiff cancel k >/dev/null &&
	wait_for "skiff logs k --status >st; grep -qx \"Job [0-9]*: CANCELLED\" st" 20
'

test_expect_success 'a pod that goes away: queue names it (exit 4); its rank is unknown' '
	skiff exec -d --num-nodes 2 k "sleep 9200" 2>/dev/null &&
	wait_for "running 4" 20 &&
	: >"$K/pods/pod-b.gone" &&
	{ timeout 60 "$SKIFF_BIN" queue k --json >q.json 2>err; rc=$?; } &&
	cat err &&
	test $rc = 4 &&
	grep -q "^skiff: error: node pod-b (10.200.0.22): pod-b is not running (Error from server (NotFound)" err &&
	python3 -c "import json; d=json.load(open(\"q.json\")); assert d[-1][\"exit_codes\"][1] is None, d"
'

test_expect_success 'down stops the supervisors it can reach; no pod process is left' '
	rm -f "$K/pods/pod-b.gone" &&
	# The gang of test 5 still runs, and its watcher with it; a call that watcher makes
	# while down runs can start a pod'"'"'s supervisor again (a known race, not what this
	# test is about): the job is cancelled and its watcher gone first.
	skiff cancel k 4 >/dev/null &&
	wait_for "test -z \"\$(gang_watchers)\"" 90 &&
	skiff down k >out 2>err && cat err out &&
	grep -qx "cluster k terminated" out &&
	grep -q "delete pods -l skiff.managed=1,skiff.cluster=k,skiff.launcher=" "$K/calls.log" &&
	# A cancelled job gets its grace period before SIGKILL; under load that is not quick.
	{ wait_for "test -z \"\$(our_procs)\"" 60 || {
		for p in $(our_procs); do ps -o pid=,ppid=,stat=,args= -p "$p"; done; false; }; }
'

test_done
