#!/bin/sh
# The Kubernetes infra against a real cluster (tests/lib/k8s.sh: kube-apiserver, the
# controller manager, the scheduler and two kubelets of the release pinned in tests/k8s,
# each kubelet with its own containerd; RBAC on). Pods from a busybox-only image (no bash,
# no Python, no glibc) and from a Debian image with bash and python3, both built here.
# launch (pods created, Ready, skiff copied in over kubectl exec and verified, skiff init
# PID 1), a 3-pod gang with the pod IPs and rank-to-rank traffic, workdir, file_mounts,
# setup, exec, queue, logs -f, cancel, status -r, ssh through kubectl, down of exactly this
# launcher's pods, existing pods, pod_config and custom_metadata on the created pod,
# provision_timeout, autostop, and faults (a worker's pod deleted, the API server away,
# RBAC without pods/exec); managed jobs on pods. Root only (a skip outside CI, a failure
# in CI).
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/k8s.sh"

k8s_require_root
# The pods run the launcher's own binary: the static one.
[ -n "$SKIFF_STATIC_BIN" ] ||
	test_skip_all "pods need a static skiff, and $SKIFF_BIN is not one (run make)"
SKIFF_BIN=$SKIFF_STATIC_BIN
command -v python3 >/dev/null || test_skip_all "needs python3 to read the --json outputs"
k8s_install_deps || { echo "Bail out! cannot install the k8s test cluster's packages"; exit 1; }

CTX=skiff-test
INFRA=k8s/$CTX/default
BB=$K8S_IMAGE_BUSYBOX
PY=skiff.test/trixie-py:1
export SKIFF_JOBS_POLL_MS=300 SKIFF_JOBS_BACKOFF_S=1

# The supervisors' logs of every pod, for the BUG: scan at the end.
pods_dump() {
	mkdir -p "$TRASH/podlogs"
	for _pd in $(k8s_kubectl get pods -o name 2>/dev/null); do
		k8s_kubectl exec "${_pd#pod/}" -- sh -c 'cat ~/.skiff/*.log ~/.skiff/jobs/*.log' \
			>"$TRASH/podlogs/${_pd#pod/}.log" 2>/dev/null
	done
}

test_cleanup_hook() {
	[ -n "${K8S_DIR:-}" ] && [ -e "$K8S_DIR/up" ] && pods_dump
	for _h in "$SKIFF_HOME" "$TRASH/home2"; do
		[ -d "$_h" ] || continue
		SKIFF_HOME=$_h timeout 60 "$SKIFF_BIN" jobs cancel -a >/dev/null 2>&1
		for _c in $(SKIFF_HOME=$_h "$SKIFF_BIN" status --json 2>/dev/null | python3 -c \
			"import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
			SKIFF_HOME=$_h timeout 60 "$SKIFF_BIN" down --purge "$_c" >/dev/null 2>&1
		done
	done
	[ -n "${K8S_DIR:-}" ] && [ -d "$K8S_DIR/log" ] && cp -r "$K8S_DIR/log" "$TRASH/k8s-log"
	k8s_down
}
trap 'test_cleanup_hook; exit 1' INT TERM

t0=$(date +%s)
k8s_up 2 || { test_cleanup_hook; echo "Bail out! the k8s test cluster did not come up"; exit 1; }
echo "# cluster up in $(($(date +%s) - t0)) s"
PY_TAR=$(k8s_image_debian trixie python3,python3-venv "$PY") && k8s_image_import "$PY_TAR" ||
	{ test_cleanup_hook; echo "Bail out! cannot build or import the Debian python3 image"; exit 1; }
echo "# images ready after $(($(date +%s) - t0)) s"

mkdir -p "$TRASH/bin"
ln -s "$K8S_BIN/kubectl" "$TRASH/bin/kubectl" || exit 1
export PATH="$TRASH/bin:$PATH" KUBECONFIG="$K8S_KUBECONFIG"

# json EXPR FILE: a Python expression over d, the JSON in FILE.
json() {
	python3 -c "import json,sys; d=json.load(open(sys.argv[2])); print(eval(sys.argv[1]))" "$1" "$2"
}
# pods SELECTOR: "NAME IP PHASE NODE" lines of the pods with the labels, by name (pods
# being deleted are left out).
pods() {
	k8s_kubectl get pods -l "$1" -o \
		'jsonpath={range .items[*]}{.metadata.name} {.status.podIP} {.status.phase} {.spec.nodeName} {.metadata.deletionTimestamp}{"\n"}{end}' |
		awk 'NF == 4 { print $1, $2, $3, $4 }' | sort
}
# job_status CLUSTER JOB: the job's status as queue --json has it.
job_status() {
	skiff queue "$1" --json 2>/dev/null >"$TRASH/.q.json" &&
		python3 -c "import json,sys; print([j['status'] for j in json.load(open(sys.argv[1])) if j['id'] == int(sys.argv[2])][0])" \
			"$TRASH/.q.json" "$2"
}
# newest CLUSTER: the newest job's id.
newest() {
	skiff queue "$1" --json | python3 -c "import json,sys; print(max(j['id'] for j in json.load(sys.stdin)))"
}
# pid1_of POD: the command line of the pod's PID 1, its words joined by blanks.
pid1_of() {
	k8s_kubectl exec "$1" -- cat /proc/1/cmdline | tr '\0' ' '
}
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# ---- 1. a busybox pod: created, Ready, skiff copied in and verified, PID 1 -----------------

cat >"$TRASH/bb.yaml" <<EOF
resources:
  infra: $INFRA
  image_id: docker:$BB
run: |
  echo "pid1=\$(tr '\\0' ' ' </proc/1/cmdline)"
  echo "home=\$HOME"
  for p in /bin/bash /usr/bin/python3 /lib/x86_64-linux-gnu/libc.so.6 /lib/ld-musl-x86_64.so.1; do
    [ -e \$p ] && echo "has \$p"
  done
  echo done
EOF

test_expect_success 'busybox pod: launch creates it, copies skiff in, skiff init is PID 1' '
	t=$(date +%s%N) &&
	{ skiff launch -c bb bb.yaml >out 2>err; rc=$?; } &&
	echo "# launch took $(ms_since $t) ms" &&
	cat err out && test $rc = 0 &&
	grep -q "nodes .*1 node(s) on $INFRA: 10\.244\.0\." err &&
	grep -q "bootstrap .*skiff copied to 1" err &&
	grep -q "^pid1=" out &&
	grep -qx "home=/root" out &&
	! grep -q "^has " out &&
	grep -qx done out &&
	pods skiff.cluster=bb >p && cat p &&
	test "$(wc -l <p)" = 1 &&
	grep -q "^skiff-bb-[0-9a-f]\{6\}-0 10\.244\.0\.[0-9]* Running skk8s-[12]\$" p &&
	cp p bb.pods &&
	wait_for "test \"\$(pid1_of $(cut -d" " -f1 p))\" = \"/root/.skiff/bin/skiff init \"" 10
'

test_expect_success 'the binary in the pod is the launcher'"'"'s, byte for byte' '
	pod=$(cut -d" " -f1 bb.pods) &&
	k8s_kubectl exec "$pod" -- cat /root/.skiff/bin/skiff >got &&
	cmp "$SKIFF_BIN" got
'

# ---- 2. a 3-pod gang on the Python image: IPs, rank-to-rank, workdir, mounts, setup -------

mkdir -p "$TRASH/wd/sub"
head -c 300000 /dev/urandom >"$TRASH/wd/blob.bin"
echo nested >"$TRASH/wd/sub/n.txt"
echo mounted >"$TRASH/mount.txt"
cat >"$TRASH/wd/rdv.py" <<'EOF'
# Rank 0 listens on its pod IP; every other rank connects to the head's IP from
# SKYPILOT_NODE_IPS and says who it is; rank 0 prints what it heard.
import os, socket, time
rank = int(os.environ["SKYPILOT_NODE_RANK"])
ips = os.environ["SKYPILOT_NODE_IPS"].split()
n = int(os.environ["SKYPILOT_NUM_NODES"])
if rank == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((ips[0], 29500))
    s.listen(n)
    s.settimeout(60)
    heard = []
    for _ in range(n - 1):
        c, a = s.accept()
        heard.append("%s@%s" % (c.recv(100).decode(), a[0]))
        c.close()
    print("head heard " + " ".join(sorted(heard)))
else:
    for _ in range(600):
        try:
            c = socket.create_connection((ips[0], 29500), timeout=2)
            break
        except OSError:
            time.sleep(0.1)
    c.sendall(b"rank%d" % rank)
    c.close()
    print("rank %d reached %s" % (rank, ips[0]))
EOF
cat >"$TRASH/gang.yaml" <<EOF
name: gang
num_nodes: 3
workdir: ./wd
file_mounts:
  /data/mount.txt: ./mount.txt
resources:
  infra: $INFRA
  image_id: docker:$PY
setup: |
  echo "setup on rank \$SKYPILOT_NODE_RANK" >~/setup.done
run: |
  echo "rank=\$SKYPILOT_NODE_RANK ips=\$(echo \$SKYPILOT_NODE_IPS | tr ' ' ,) bash=\${BASH_VERSION%%.*} \$(cat sub/n.txt /data/mount.txt ~/setup.done | tr '\n' ' ')"
  python3 rdv.py
EOF

test_expect_success 'a 3-pod gang: NODE_IPS are the pod IPs, ranks talk over them' '
	t=$(date +%s%N) &&
	{ skiff launch -c g gang.yaml >out 2>err; rc=$?; } &&
	echo "# launch took $(ms_since $t) ms" &&
	cat err out && test $rc = 0 &&
	pods skiff.cluster=g >p && cat p &&
	test "$(wc -l <p)" = 3 &&
	ips=$(cut -d" " -f2 p | tr "\n" , | sed "s/,\$//") &&
	for r in 0 1 2; do
		grep -q "^$(rank_prefix_re $r "[0-9.]*") rank=$r ips=$ips bash=5 nested mounted setup on rank $r \$" out ||
			{ echo "no line for rank $r"; exit 1; }
	done &&
	head=$(sed -n 1p p | cut -d" " -f2) &&
	grep -q "^(worker1, rank=1, pid=[0-9]*, ip=[0-9.]*) rank 1 reached $head\$" out &&
	grep -q "^(worker2, rank=2, pid=[0-9]*, ip=[0-9.]*) rank 2 reached $head\$" out &&
	grep -q "^(head, rank=0, pid=[0-9]*) head heard rank1@$(sed -n 2p p | cut -d" " -f2) rank2@$(sed -n 3p p | cut -d" " -f2)\$" out &&
	echo "# the pods are on $(cut -d" " -f4 p | sort -u | tr "\n" " ")" &&
	cp p gang.pods
'

test_expect_success 'the workdir arrived byte for byte on every pod' '
	for pod in $(cut -d" " -f1 gang.pods); do
		k8s_kubectl exec "$pod" -- cat /root/sky_workdir/blob.bin >b &&
		cmp wd/blob.bin b || { echo "$pod"; exit 1; }
	done
'

# ---- 3. exec, queue, logs -f, cancel, status -r, ssh -------------------------------------

head_pod() { sed -n 1p "$TRASH/gang.pods" | cut -d" " -f1; }

test_expect_success 'exec runs on the head pod, --num-nodes 3 on all three' '
	skiff exec g "echo exec on \$(hostname)" >out 2>err &&
	test "$(cat out)" = "exec on $(head_pod)" &&
	skiff exec --num-nodes 3 g "echo r\$SKYPILOT_NODE_RANK" >out 2>err &&
	test "$(sed "s/^([a-z0-9]*, rank=\([0-9]\), pid=[0-9]*[^)]*) /\1 /" out | sort | tr "\n" " ")" = "0 r0 1 r1 2 r2 "
'

test_expect_success 'logs -f follows a running job to its end; queue lists it' '
	skiff exec -d g "for i in 1 2 3; do echo tick \$i; sleep 1; done" >/dev/null 2>&1 &&
	id=$(newest g) &&
	skiff logs -f g "$id" >out 2>err &&
	test "$(grep -c "^tick [123]\$" out)" = 3 &&
	skiff queue g >q && cat q &&
	grep -q "^ *$id .*SUCCEEDED" q
'

test_expect_success 'cancel stops a gang job on every pod' '
	skiff exec -d --num-nodes 3 g "sleep 9100" >/dev/null 2>&1 &&
	id=$(newest g) &&
	wait_for "test \"\$(job_status g $id)\" = RUNNING" 30 &&
	skiff cancel g "$id" >/dev/null &&
	wait_for "test \"\$(job_status g $id)\" = CANCELLED" 30 &&
	for pod in $(cut -d" " -f1 gang.pods); do
		wait_for "! k8s_kubectl exec $pod -- ps -o args | grep -q \"^sleep 9100\"" 20 ||
			{ echo "sleep left in $pod"; exit 1; }
	done
'

test_expect_success 'status -r asks every pod: UP' '
	skiff status -r g >st 2>err && cat st err &&
	grep -q "^g .*UP" st
'

test_expect_success 'ssh CLUSTER CMD runs on the head pod through kubectl exec (no sshd)' '
	skiff ssh g "hostname; echo rank \$SKYPILOT_NODE_RANK" >out 2>err </dev/null &&
	cat out err &&
	test "$(sed -n 1p out)" = "$(head_pod)" &&
	! k8s_kubectl exec "$(head_pod)" -- sh -c "command -v sshd"
'

# ---- 4. down deletes exactly this launcher's pods ----------------------------------------

test_expect_success 'another launcher'"'"'s cluster of the same name gets its own pods' '
	SKIFF_HOME=$TRASH/home2 skiff launch -c bb bb.yaml >out2 2>err2 &&
	grep -qx done out2 &&
	pods skiff.cluster=bb >p2 && cat p2 &&
	test "$(wc -l <p2)" = 2 &&
	test "$(cut -d" " -f3 p2 | sort -u)" = Running
'

test_expect_success 'down deletes this launcher'"'"'s pods and leaves the other'"'"'s' '
	skiff down bb >out 2>err &&
	cat out err &&
	wait_for "test \"\$(pods skiff.cluster=bb | wc -l)\" = 1" 60 &&
	pods skiff.cluster=bb >left &&
	grep -q " Running " left &&
	! grep -qF "$(cut -d" " -f1 bb.pods)" left &&
	SKIFF_HOME=$TRASH/home2 skiff exec bb "echo still here" >out 2>&1 &&
	grep -qx "still here" out &&
	SKIFF_HOME=$TRASH/home2 skiff down bb >/dev/null 2>&1 &&
	wait_for "test -z \"\$(pods skiff.cluster=bb)\"" 60
'

# ---- 5. existing pods labelled skiff.node ------------------------------------------------

mkpod() { # NAME LABELS
	printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","labels":{%s}},"spec":{"containers":[{"name":"main","image":"%s","command":["sleep","100000"]}]}}' \
		"$1" "$2" "$BB" | k8s_kubectl create -f - >/dev/null
}

test_expect_success 'existing pods labelled skiff.node: used in name order, left by down' '
	mkpod ex-b "\"skiff.node\":\"1\"" && mkpod ex-a "\"skiff.node\":\"1\"" &&
	mkpod ex-c "\"other\":\"1\"" &&
	k8s_kubectl wait --for=condition=Ready pod/ex-a pod/ex-b pod/ex-c --timeout=60s >/dev/null &&
	skiff launch -c ex --infra $INFRA --num-nodes 2 "echo on \$(hostname)" >out 2>err &&
	cat err out &&
	grep -q "^(head, rank=0, pid=[0-9]*) on ex-a\$" out &&
	grep -q "^(worker1, rank=1, pid=[0-9]*, ip=[0-9.]*) on ex-b\$" out &&
	skiff check --json $INFRA >ck.json &&
	test "$(json "json.dumps([(t[\"of\"], t[\"error\"]) for t in d[0][\"inventory\"]])" ck.json)" = "[[\"contexts\", null], [\"pods\", null]]" &&
	test "$(json "json.dumps([(r[\"context\"], r[\"namespace\"]) for r in d[0][\"inventory\"][0][\"rows\"] if r[\"used\"] == \"yes\"])" ck.json)" = "[[\"$CTX\", \"default\"]]" &&
	test "$(json "json.dumps([(r[\"pod\"], r[\"phase\"], r[\"cluster\"]) for r in d[0][\"inventory\"][1][\"rows\"]])" ck.json)" = "[[\"ex-a\", \"Running\", \"ex\"], [\"ex-b\", \"Running\", \"ex\"]]" &&
	skiff down ex >/dev/null 2>&1 &&
	skiff check --json $INFRA >ck.json &&
	test "$(json "json.dumps([r[\"cluster\"] for r in d[0][\"inventory\"][1][\"rows\"]])" ck.json)" = "[null, null]" &&
	k8s_kubectl get pods ex-a ex-b ex-c -o jsonpath="{.items[*].status.phase}" >ph &&
	test "$(cat ph)" = "Running Running Running" &&
	# (A pod whose PID 1 does not reap keeps the stopped supervisor as a zombie.)
	for pod in ex-a ex-b; do
		! k8s_kubectl exec $pod -- ps -o stat,args | grep -v "^Z" | grep skiff ||
			{ echo "$pod"; exit 1; }
	done &&
	! k8s_kubectl exec ex-c -- test -e /root/.skiff
'
k8s_kubectl delete pod ex-a ex-b ex-c --wait=false >/dev/null 2>&1

# ---- 6. pod_config, custom_metadata, resources, labels; provision_timeout -----------------

cat >"$TRASH/pc.yaml" <<EOF
resources:
  infra: $INFRA
  image_id: docker:$BB
  cpus: 0.5
  memory: 0.25
  labels:
    project: skiff-test
config:
  kubernetes:
    pod_config:
      metadata:
        labels: {team: ml}
      spec:
        nodeSelector: {kubernetes.io/hostname: skk8s-2}
        containers:
          - env: [{name: FROM_POD_CONFIG, value: "yes it is"}]
            resources:
              limits: {memory: 512Mi}
    custom_metadata:
      labels: {cm: x}
      annotations: {owner: skiff-t0720}
run: echo "env=\$FROM_POD_CONFIG"
EOF

test_expect_success 'pod_config and custom_metadata merged into the pod, as kubectl shows it' '
	skiff launch -c pc pc.yaml >out 2>err &&
	cat err out &&
	grep -qx "env=yes it is" out &&
	pod=$(pods skiff.cluster=pc | cut -d" " -f1) &&
	k8s_kubectl get pod "$pod" -o json >pod.json &&
	c0="d[\"spec\"][\"containers\"][0]" &&
	for kv in "d[\"spec\"][\"nodeName\"]|skk8s-2" \
		"d[\"metadata\"][\"labels\"][\"team\"]|ml" \
		"d[\"metadata\"][\"labels\"][\"cm\"]|x" \
		"d[\"metadata\"][\"labels\"][\"project\"]|skiff-test" \
		"d[\"metadata\"][\"labels\"][\"skiff.cluster\"]|pc" \
		"d[\"metadata\"][\"annotations\"][\"owner\"]|skiff-t0720" \
		"$c0[\"resources\"][\"requests\"][\"cpu\"]|500m" \
		"$c0[\"resources\"][\"requests\"][\"memory\"]|256Mi" \
		"$c0[\"resources\"][\"limits\"][\"memory\"]|512Mi" \
		"[e[\"value\"] for e in $c0[\"env\"] if e[\"name\"] == \"FROM_POD_CONFIG\"][0]|yes it is"; do
		test "$(json "${kv%%|*}" pod.json)" = "${kv#*|}" || { echo "not so: $kv"; exit 1; }
	done &&
	skiff down pc >/dev/null 2>&1
'

test_expect_success 'provision_timeout: a pod that can never be scheduled, a clear error, nothing left' '
	cat >never.yaml <<-EOF &&
	resources:
	  infra: $INFRA
	  image_id: docker:$BB
	config:
	  kubernetes:
	    provision_timeout: 4
	    pod_config:
	      spec:
	        nodeSelector: {skiff.test/no-such-node: "1"}
	run: echo never
	EOF
	t=$(date +%s) &&
	{ skiff launch -c nv never.yaml >out 2>err; rc=$?; } &&
	cat err &&
	test $rc != 0 &&
	test $(($(date +%s) - t)) -lt 60 &&
	grep -q "not Ready after 4 s (kubernetes.provision_timeout): pod skiff-nv-[0-9a-f]*-0 is not scheduled: 0/2 nodes are available: .*node affinity/selector" err &&
	wait_for "test -z \"\$(k8s_kubectl get pods -l skiff.cluster=nv -o name)\"" 60 &&
	skiff status >st.nv 2>/dev/null && ! grep -q "^nv " st.nv
'

test_expect_success 'an image that cannot be had fails at once, with the reason' '
	sed "s,docker:$BB,docker:skiff.test/no-such-image:1," bb.yaml >noimg.yaml &&
	t=$(date +%s) &&
	{ skiff launch -c ni noimg.yaml >out 2>err; rc=$?; } &&
	cat err &&
	test $rc != 0 &&
	test $(($(date +%s) - t)) -lt 120 &&
	grep -q "pod skiff-ni-[0-9a-f]*-0 cannot start: \(ErrImagePull\|ImagePullBackOff\)" err &&
	wait_for "test -z \"\$(k8s_kubectl get pods -l skiff.cluster=ni -o name)\"" 60
'

# ---- 7. autostop: with --down the pods go, without it the supervisors stop ---------------

# An autostop minute lasts two seconds here (SKIFF_TEST_MINUTE_MS, docs/testing.md).
test_expect_success 'autostop -i 1 --down deletes the pods; -i 1 stops the supervisors, keeps the pods (start)' '
	SKIFF_TEST_MINUTE_MS=2000 skiff launch -c ad bb.yaml >/dev/null 2>&1 &&
	SKIFF_TEST_MINUTE_MS=2000 skiff launch -c as bb.yaml >/dev/null 2>&1 &&
	SKIFF_TEST_MINUTE_MS=2000 skiff autostop ad -i 1 --down >/dev/null &&
	SKIFF_TEST_MINUTE_MS=2000 skiff autostop as -i 1 >/dev/null &&
	as_pod=$(pods skiff.cluster=as | cut -d" " -f1) &&
	n=0 &&
	until skiff status >st 2>&1 && ! grep -q "^ad " st && grep -q "^as .*STOPPED" st; do
		n=$((n + 1)) && test $n -lt 60 || { cat st; exit 1; }
		sleep 2
	done &&
	cat st &&
	wait_for "test -z \"\$(k8s_kubectl get pods -l skiff.cluster=ad -o name)\"" 60 &&
	test "$(pods skiff.cluster=as | cut -d" " -f1,3)" = "$as_pod Running" &&
	! k8s_kubectl exec "$as_pod" -- ps -o args | grep -q __supervisor &&
	skiff start as >/dev/null 2>&1 &&
	skiff exec as "echo back on \$(hostname)" >out 2>&1 &&
	grep -qx "back on $as_pod" out &&
	skiff down as >/dev/null 2>&1
'

# ---- 8. faults ---------------------------------------------------------------------------

test_expect_success 'RBAC: a service account that may not exec into pods gets one line, no pod' '
	k8s_kubectl create namespace locked >/dev/null &&
	k8s_kubectl -n locked create serviceaccount runner >/dev/null &&
	k8s_kubectl -n locked create role no-exec --verb=get,list,watch,create,delete \
		--resource=pods >/dev/null &&
	k8s_kubectl -n locked create rolebinding runner --role=no-exec \
		--serviceaccount=locked:runner >/dev/null &&
	token=$(k8s_kubectl -n locked create token runner) &&
	cat >locked.kubeconfig <<-EOF &&
	apiVersion: v1
	kind: Config
	clusters:
	- name: locked
	  cluster: {server: "$K8S_API_URL", certificate-authority: "$K8S_DIR/pki/ca.crt"}
	users:
	- name: runner
	  user: {token: "$token"}
	contexts:
	- name: locked-ctx
	  context: {cluster: locked, user: runner, namespace: locked}
	EOF
	sed "/^  infra:/d" bb.yaml >noinfra.yaml &&
	{ KUBECONFIG=$K8S_KUBECONFIG:$TRASH/locked.kubeconfig skiff launch -c rb \
		--infra k8s/locked-ctx/locked noinfra.yaml >out 2>err; rc=$?; } &&
	cat err &&
	test $rc != 0 &&
	grep -q "^skiff: error: infra k8s/locked-ctx/locked: RBAC does not let locked-ctx create pods/exec in namespace locked" err &&
	test -z "$(k8s_kubectl -n locked get pods -o name)" &&
	# With pods/exec granted, the same service account launches.
	k8s_kubectl -n locked create role exec --verb=create --resource=pods/exec >/dev/null &&
	k8s_kubectl -n locked create rolebinding runner-exec --role=exec \
		--serviceaccount=locked:runner >/dev/null &&
	KUBECONFIG=$K8S_KUBECONFIG:$TRASH/locked.kubeconfig skiff launch -c rb \
		--infra k8s/locked-ctx/locked noinfra.yaml >out 2>err &&
	grep -qx done out &&
	KUBECONFIG=$K8S_KUBECONFIG:$TRASH/locked.kubeconfig skiff down rb >/dev/null 2>&1
'

cat >"$TRASH/ticks.yaml" <<EOF
resources:
  infra: $INFRA
  image_id: docker:$BB
run: for i in \$(seq 1 40); do echo "line \$i"; sleep 1; done
EOF

cat >"$TRASH/mjo.yaml" <<EOF
name: mjo
resources:
  infra: $INFRA
  image_id: docker:$BB
run: sleep 600
EOF

# jq_field ID FIELD: a managed job's field in `jobs queue --json`.
jq_field() {
	skiff jobs queue --json >"$TRASH/.jq.json" &&
		json "[j[\"$2\"] for j in d if j[\"id\"] == $1][0]" "$TRASH/.jq.json"
}

# Every kubectl exec breaks with the API server: the gang watcher and the managed-jobs
# controller cannot tell whether the pods run, and ask again (their bounds raised from
# 30 s for this outage of 20 s and the API server's start) rather than fail the gang or
# relaunch the job.
test_expect_success 'the API server away for 20 s during logs -f: a clear error in bounded time, state right after' '
	mid=$(SKIFF_JOBS_LOST_MS=120000 skiff jobs launch -d mjo.yaml 2>jl.err) &&
	SKIFF_GANG_LOST_MS=120000 skiff exec -d --num-nodes 3 g "sleep 300" >/dev/null 2>&1 &&
	gid=$(newest g) &&
	wait_for "test \"\$(job_status g $gid)\" = RUNNING" 30 &&
	wait_for "grep -q \"job $gid of g: watching 3 of its 3 rank(s)\" \"\$SKIFF_HOME/gang.log\"" 30 &&
	wait_for "test \"\$(jq_field $mid status)\" = RUNNING" 120 &&
	skiff launch -c ap -d ticks.yaml >/dev/null 2>&1 &&
	wait_for "test \"\$(job_status ap 1)\" = RUNNING" 30 &&
	{ skiff logs -f ap 1 >lf.out 2>lf.err & lf=$!; } &&
	wait_for "grep -q \"^line 3\$\" lf.out" 30 &&
	k8s_apiserver_stop &&
	t=$(date +%s) &&
	n=0 &&
	while kill -0 $lf 2>/dev/null; do
		n=$((n + 1)) && test $n -lt 900 || { kill $lf; echo "logs -f still runs"; exit 1; }
		sleep 0.1
	done &&
	{ wait $lf; rc=$?; } &&
	echo "# logs -f ended $(($(date +%s) - t)) s after the API server went, exit $rc" &&
	cat lf.err &&
	test $rc != 0 &&
	grep -q "skiff-ap-[0-9a-f]*-0.*\(refused\|Unable to connect\)" lf.err &&
	left=$((20 - ($(date +%s) - t))) &&
	{ test $left -le 0 || sleep $left; } &&
	k8s_apiserver_start &&
	st=$(job_status ap 1) &&
	echo "# after: job 1 is $st" &&
	case $st in RUNNING | SUCCEEDED) ;; *) exit 1 ;; esac &&
	skiff logs -f ap 1 >all.out 2>&1 &&
	test "$(grep -c "^line [0-9]*\$" all.out)" = 40 &&
	test "$(job_status ap 1)" = SUCCEEDED &&
	skiff down ap >/dev/null 2>&1 &&
	grep "job $gid" "$SKIFF_HOME/gang.log" &&
	grep -q "job $gid: rank [0-9].s node [^ ]* does not answer; watching it again for up to 120 s" \
		"$SKIFF_HOME/gang.log" &&
	for r in 0 1 2; do
		wait_for "grep -q \"job $gid: rank $r.s node [^ ]* answers again\" \"\$SKIFF_HOME/gang.log\"" 60 ||
			exit 1
	done &&
	test "$(job_status g $gid)" = RUNNING &&
	! grep -q "job $gid: rank .* stopping the other ranks" "$SKIFF_HOME/gang.log" &&
	skiff cancel g $gid >/dev/null &&
	test "$(jq_field $mid status)" = RUNNING &&
	test "$(jq_field $mid recoveries)" = 0 &&
	skiff jobs cancel "$mid" >/dev/null 2>&1 &&
	wait_for "test \"\$(jq_field $mid status)\" = CANCELLED" 60
'

# Whatever the test above did, the API server is back for the rest.
k8s_kubectl get --raw /readyz >/dev/null 2>&1 || k8s_apiserver_start

test_expect_success 'a worker pod deleted during a gang job: the job fails, naming the pod' '
	skiff exec -d --num-nodes 3 g "sleep 9300" >/dev/null 2>&1 &&
	id=$(newest g) &&
	wait_for "test \"\$(job_status g $id)\" = RUNNING" 30 &&
	victim=$(sed -n 3p gang.pods | cut -d" " -f1) &&
	{ skiff logs -f g "$id" >gf.out 2>gf.err & lf=$!; } &&
	sleep 1 &&
	k8s_kubectl delete pod "$victim" --wait=false >/dev/null &&
	n=0 &&
	while kill -0 $lf 2>/dev/null; do
		n=$((n + 1)) && test $n -lt 900 || { kill $lf; echo "logs -f still runs"; exit 1; }
		sleep 0.1
	done &&
	{ wait $lf; rc=$?; } &&
	cat gf.err &&
	test $rc != 0 &&
	grep -q "$victim" gf.err &&
	{ skiff queue g >q 2>qe; cat q qe; } &&
	grep -q "$victim" qe &&
	{ skiff down g >dout 2>&1 || cat dout; } &&
	wait_for "test -z \"\$(k8s_kubectl get pods -l skiff.cluster=g -o name)\"" 90
'

# ---- 9. managed jobs on pods --------------------------------------------------------------

cat >"$TRASH/mj.yaml" <<EOF
name: mj
resources:
  infra: $INFRA
  image_id: docker:$BB
  job_recovery: {max_restarts_on_errors: 0}
run: |
  echo "attempt on \$(hostname)"
  sleep 600
EOF

test_expect_success 'a managed job on pods: its pod deleted, it recovers onto a new pod, one copy at a time' '
	id=$(skiff jobs launch -d mj.yaml 2>jl.err) &&
	cat jl.err &&
	wait_for "test \"\$(skiff jobs queue --json | python3 -c \"import json,sys; print([j[\\\"status\\\"] for j in json.load(sys.stdin) if j[\\\"id\\\"] == $id][0])\")\" = RUNNING" 120 &&
	pod1=$(pods skiff.cluster=skiff-job-$id | cut -d" " -f1) &&
	test -n "$pod1" &&
	echo "# first pod $pod1" &&
	k8s_kubectl delete pod "$pod1" --wait=false >/dev/null &&
	wait_for "skiff jobs queue --json >jq.json && test \"\$(json \"[j[\\\"recoveries\\\"] for j in d if j[\\\"id\\\"] == $id][0]\" jq.json)\" = 1" 180 &&
	wait_for "skiff jobs queue --json >jq.json && test \"\$(json \"[j[\\\"status\\\"] for j in d if j[\\\"id\\\"] == $id][0]\" jq.json)\" = RUNNING" 180 &&
	# The new attempt is a cluster of its own (skiff-job-ID-0-1): its pod, and no other.
	pods skiff.managed=1 | grep "^skiff-skiff-job-$id-" >mp && cat mp &&
	test "$(wc -l <mp)" = 1 &&
	! grep -q "^$pod1 " mp &&
	skiff jobs logs --no-follow "$id" >jlog 2>&1 &&
	cat jlog &&
	grep -qx "attempt on $(cut -d" " -f1 mp)" jlog &&
	# Recovered for its pod gone (found at once), not for probes that failed for 120 s.
	skiff jobs logs --controller "$id" >ctl 2>&1 &&
	grep "RECOVERING" ctl &&
	grep -q "RECOVERING.*the node of rank 0 is gone" ctl &&
	skiff jobs cancel "$id" >/dev/null 2>&1 &&
	wait_for "test -z \"\$(k8s_kubectl get pods -l skiff.managed=1 -o name)\"" 120
'

test_expect_success 'the managed-jobs controller in a pod (jobs.controller.resources)' '
	cat >"$SKIFF_HOME/config.yaml" <<-EOF &&
	jobs:
	  controller:
	    resources:
	      infra: $INFRA
	      image_id: docker:$BB
	EOF
	{
		skiff jobs launch --infra local -n inpod "echo \"job on \$(hostname)\"" >out 2>err
		rc=$?
		cat err out
		echo "# jobs launch: exit $rc"
		test $rc = 0
	} &&
	ctl=$(pods skiff.managed=1 | grep "^skiff-skiff-jobs-controller-" | cut -d" " -f1) &&
	test -n "$ctl" &&
	grep -qx "job on $ctl" out &&
	# SkyPilot'"'"'s last line: its stream'"'"'s, or its replay'"'"'s when the job ended first.
	tail -n 1 out | grep -q " \(Managed job finished: [0-9]*\|Job finished\) (status: SUCCEEDED)\.\$" &&
	skiff jobs queue >jq && cat jq &&
	grep -q " inpod .*SUCCEEDED" jq &&
	# The queue is the pod'"'"'s: not the one of this machine, which holds mj.
	! grep -q " mj " jq &&
	skiff down "$(skiff status --json | python3 -c "import json,sys; print([c[\"name\"] for c in json.load(sys.stdin) if c[\"name\"].startswith(\"skiff-jobs-controller-\")][0])")" >/dev/null 2>&1 &&
	wait_for "test -z \"\$(k8s_kubectl get pods -l skiff.managed=1 -o name)\"" 60
'
rm -f "$SKIFF_HOME/config.yaml"

test_done
