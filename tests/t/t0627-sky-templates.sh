#!/bin/sh
# SkyPilot's ~/sky_templates/ray/start_cluster and stop_cluster (supervisor/templates/):
# every node a launch bootstraps gets them; SkyPilot's examples/ray_basic/ray.yaml runs
# unchanged on a 2-node local cluster; the ray command lines each rank runs; the RAY_*
# variables; idempotence; stop_cluster; a file the user changed is kept. On an SSH pool
# with a busybox-only node too (root; skipped otherwise, a failure in CI).
#
# No real Ray runs here (no PyPI on the test machines). `ray` is a stand-in (fake/ray,
# written below) that logs its arguments, the rank and HOME to a file, and for `ray
# start` leaves a process named like a raylet ("ray::fake-raylet --gcs-address=PORT");
# `status`, `health-check` and `list nodes` answer from those processes. `uv` and
# `python` (ray_basic's `python main.py`: the driver) are stand-ins too. So this tests the
# scripts' command lines, their flow and messages, and how they live with skiff's jobs
# (a job's processes end with it: the worker rank must stay while the head's driver
# runs); not that Ray itself forms a cluster from them.
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

CORPUS=$SHARED_DIR/corpus/skypilot-yaml
[ -f "$CORPUS/ray_basic/ray.yaml" ] || CORPUS=$SRC_DIR/tests/corpus/skypilot-yaml
echo "# corpus: $CORPUS"
command -v python3 >/dev/null || test_skip_all "needs python3"
TPL=$SRC_DIR/supervisor/templates
FAKE=$TRASH/fake
NODE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

test_lazy_prereq NODES 'test "$(id -u)" = 0 && nodes_install_deps'
test_lazy_prereq DASH 'command -v dash'
test_lazy_prereq BUSYBOX 'command -v busybox'
BUSYBOX=$(command -v busybox)

down_all() {
	for _c in $("$SKIFF_BIN" status --json 2>/dev/null | python3 -c \
		"import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		timeout 60 "$SKIFF_BIN" down --purge "$_c" >/dev/null 2>&1
	done
}

# The stand-ins' "raylets", by the pids they wrote (never by name).
kill_fake_raylets() {
	for _f in "$TRASH"/ray-shared/node-*.pid "$TRASH"/direct/*/.fake-ray-node/*.pid; do
		[ -f "$_f" ] && kill "$(cat "$_f")" 2>/dev/null
	done
	return 0
}

test_cleanup_hook() {
	down_all
	kill_fake_raylets
	! test_have_prereq NODES || nodes_down
	# The ssh half's state dir, into $TRASH (kept on failure).
	[ -z "${SSH_SKIFF_HOME:-}" ] || mv "$SSH_SKIFF_HOME" "$TRASH/ssh-skiff-home"
}

# The stand-ins, POSIX sh (they run on the busybox node too). State: the log
# ($FAKE_RAY_LOG), one pid file per node and port under ~/.fake-ray-node (status), and the
# cluster's under $FAKE_RAY_SHARED (health-check, list nodes).
mkdir -p "$FAKE/bin" "$TRASH/ray-shared"
cat >"$FAKE/bin/ray" <<'EOF_FAKE'
#!/bin/sh
log=${FAKE_RAY_LOG:-$HOME/fake-ray.log}
shared=${FAKE_RAY_SHARED:-$HOME/.fake-ray}
mkdir -p "$shared" "$HOME/.fake-ray-node"
echo "rank=${SKYPILOT_NODE_RANK-} home=$HOME: ray $*" >>"$log"
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
port() { for a; do case $a in --address=*) echo "${a##*:}" ;; esac; done; }
case $1 in
--version) echo "ray, version 2.9.3" ;;
status) alive "$HOME/.fake-ray-node/$(port "$@").pid" ;;
health-check) alive "$shared/head-$(port "$@").pid" ;;
list)
	p=$(port "$@")
	printf '['
	for f in "$shared"/node-"$p"-*.pid; do
		if alive "$f"; then printf '{"node_id": "%s", "resources_total": {"CPU": 1.0}}, ' "${f##*/}"; fi
	done
	printf '{"not": "a node"}]\n'
	;;
start)
	p= head=
	for a; do
		case $a in
		--head) head=1 ;;
		--port=*) p=${a#--port=} ;;
		--address=*) p=${a##*:} ;;
		esac
	done
	sh -c 'while :; do sleep 1; done' "ray::fake-raylet" "--gcs-address=$p" </dev/null >/dev/null 2>&1 &
	echo $! >"$HOME/.fake-ray-node/$p.pid"
	echo $! >"$shared/node-$p-$!.pid"
	[ -z "$head" ] || echo $! >"$shared/head-$p.pid"
	;;
*) echo "fake ray: $*: not faked" >&2; exit 2 ;;
esac
EOF_FAKE
cat >"$FAKE/bin/uv" <<'EOF_FAKE'
#!/bin/sh
echo "uv $*" >>"${FAKE_RAY_LOG:-$HOME/fake-ray.log}"
EOF_FAKE
cat >"$FAKE/bin/raywrap" <<'EOF_FAKE'
#!/bin/sh
echo "raywrap [$1] $2" >>"${FAKE_RAY_LOG:-$HOME/fake-ray.log}"
shift
exec ray "$@"
EOF_FAKE
# ray_basic's `python main.py`, the driver on rank 0: how many Ray nodes live 3 s into it.
cat >"$FAKE/bin/python" <<'EOF_FAKE'
#!/bin/sh
sleep 3
n=0
for f in "${FAKE_RAY_SHARED:-$HOME/.fake-ray}"/node-6379-*.pid; do
	if [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then n=$((n + 1)); fi
done
echo "driver $*: $n Ray nodes alive"
EOF_FAKE
chmod 755 "$FAKE/bin/"*
mkdir -p "$TRASH/rb" && echo "print('the driver')" >"$TRASH/rb/main.py"

# The tools the scripts need and no python, uv or pip: a PATH where nothing can install ray.
mkdir -p "$TRASH/tools"
for _t in sh cut head date sleep tr grep sed cat mkdir; do
	ln -s "$(command -v $_t)" "$TRASH/tools/$_t" || { echo "Bail out! no $_t"; exit 1; }
done

node_home() {
	echo "$SKIFF_HOME/local/$1/${2:-0}"
}

# The fake ray's log lines of one rank, without its home.
ray_lines() {
	sed -n "s|^rank=$1 home=[^:]*: ||p" "$2"
}

# --env for a job on local infra: the stand-ins first on PATH, their state in $TRASH.
fake_envs() {
	echo "--env PATH=$FAKE/bin:$NODE_PATH --env FAKE_RAY_LOG=$TRASH/ray.log" \
		"--env FAKE_RAY_SHARED=$TRASH/ray-shared"
}

test_expect_success "a launch puts SkyPilot's templates on every node (0700, skiff's own bytes)" '
	(cd rb && skiff launch -c rc $(fake_envs) "$CORPUS/ray_basic/ray.yaml") >basic.out 2>basic.err &&
	for r in 0 1; do
		for f in start_cluster stop_cluster; do
			cmp "$TPL/ray/$f" "$(node_home rc $r)/sky_templates/ray/$f" &&
			test "$(stat -c %a "$(node_home rc $r)/sky_templates/ray/$f")" = 700 || exit 1
		done
	done
'

test_expect_success "ray_basic.yaml unchanged: the head's and the worker's ray commands" '
	ray_lines 0 ray.log >r0 &&
	ray_lines 1 ray.log >r1 &&
	grep -qx "ray start --head --port=6379 --dashboard-port=8265 --dashboard-host=127.0.0.1 --disable-usage-stats --include-dashboard=True" r0 &&
	grep -qx "ray list nodes --address=127.0.0.1:6379 --format=json" r0 &&
	grep -qx "ray start --address=127.0.0.1:6379 --disable-usage-stats" r1 &&
	grep -qx "ray health-check --address=127.0.0.1:6379" r1 &&
	test "$(grep -c "^ray start" r0)" = 1 &&
	test "$(grep -c "^ray start" r1)" = 1 &&
	test "$(grep -c "^uv pip install ray\[default\]==2.9.3 click<8.3.0\$" ray.log)" = 2 &&
	grep -q "^rank=1 home=$(node_home rc 1): ray start" ray.log
'

test_expect_success "ray_basic.yaml: the worker stays while the driver runs; all ends with the job" '
	grep -qx "(head, rank=0, pid=[0-9]*) All 2 nodes have joined." basic.out &&
	grep -qx "(head, rank=0, pid=[0-9]*) driver main.py: 2 Ray nodes alive" basic.out &&
	grep -qx "(worker1, rank=1, pid=[0-9]*, ip=127.0.0.1) Worker node started successfully." basic.out &&
	grep -qx "(worker1, rank=1, pid=[0-9]*, ip=127.0.0.1) Head node at 127.0.0.1:6379 has stopped." basic.out &&
	for f in ray-shared/node-6379-*.pid; do
		wait_for "! kill -0 $(cat $f) 2>/dev/null" 15 || exit 1
	done
'

# One rank; the RAY_* variables and a RAY_CMD of two words; the job's own command line
# holds "ray:46379" (its shell gets the script as -c TEXT), which stop_cluster must spare.
cat >"$TRASH/stop.yaml" <<'EOF'
envs:
  RAY_HEAD_PORT: "46379"
  RAY_DASHBOARD_PORT: "48265"
  RAY_DASHBOARD_HOST: 0.0.0.0
  RAY_DASHBOARD_AGENT_LISTEN_PORT: "52365"
  RAY_HEAD_IP_ADDRESS: 127.0.0.1
  RAY_CMD: raywrap 'two words'
run: |
  # the shell that runs this holds ray:46379 in its command line
  sh -c 'while :; do sleep 1; done' "ray::other-cluster" "--gcs-address=6379" &
  other=$!
  ~/sky_templates/ray/start_cluster
  ~/sky_templates/ray/start_cluster
  ~/sky_templates/ray/stop_cluster; echo "stop: $?"
  ~/sky_templates/ray/stop_cluster; echo "stop again: $?"
  kill -0 $other && echo "the raylet on 6379 lives"
  kill $other
EOF

test_expect_success 'RAY_* and RAY_CMD; start_cluster twice; stop_cluster stops its own port only' '
	: >ray.log &&
	skiff exec rc --num-nodes 1 $(fake_envs) stop.yaml >out 2>err &&
	ray_lines 0 ray.log >r0 &&
	grep -qx "ray start --head --port=46379 --dashboard-port=48265 --dashboard-host=0.0.0.0 --disable-usage-stats --include-dashboard=True --dashboard-agent-listen-port=52365 --node-ip-address=127.0.0.1" r0 &&
	test "$(grep -c "^ray start" r0)" = 1 &&
	grep -qx "raywrap \[two words\] start" ray.log &&
	! grep "^ray list" r0 &&
	test "$(grep -c "^Ray cluster is already running.\$" out)" = 1 &&
	grep -qx "Killing Ray processes on port 46379..." out &&
	grep -qx "Ray cluster successfully stopped." out &&
	grep -qx "stop: 0" out &&
	grep -qx "No Ray cluster found running on port 46379." out &&
	grep -qx "stop again: 0" out &&
	grep -qx "the raylet on 6379 lives" out
'

# The scripts run by hand (no skiff job): a worker whose head is elsewhere, GPUs, and
# stop_cluster where there is no pgrep (it reads /proc). Each run sleeps 5 s, as SkyPilot's.
direct() {
	_h=$TRASH/direct/$1
	shift
	mkdir -p "$_h" &&
	env -i HOME="$_h" PATH="$FAKE/bin:$NODE_PATH" FAKE_RAY_LOG="$TRASH/direct.log" \
		FAKE_RAY_SHARED="$TRASH/direct/shared" "$@"
}

# The head "runs" while this script does: health-check looks for a live pid.
test_expect_success DASH 'a worker (dash): --address from the first of SKYPILOT_NODE_IPS, --num-gpus' '
	mkdir -p direct/shared &&
	echo $$ >direct/shared/head-6379.pid &&
	direct w1 SKYPILOT_NODE_RANK=1 SKYPILOT_NUM_NODES=2 SKYPILOT_NUM_GPUS_PER_NODE=2 \
		SKYPILOT_NODE_IPS="$(printf "10.1.2.3\n10.1.2.4")" \
		dash "$(node_home rc 1)/sky_templates/ray/start_cluster" >out 2>err &&
	grep -qx "rank=1 home=$TRASH/direct/w1: ray start --address=10.1.2.3:6379 --disable-usage-stats --num-gpus=2" direct.log &&
	grep -qx "Waiting for head node at 10.1.2.3:6379..." out &&
	! grep -q "Keeping this node" out
'

test_expect_success BUSYBOX 'the head (busybox sh) with GPUs; stop_cluster without pgrep' '
	mkdir -p bb &&
	for t in sh tr grep sed cut head sleep date cat mkdir; do
		ln -sf "$BUSYBOX" bb/$t || exit 1
	done &&
	direct h1 SKYPILOT_NODE_RANK=0 SKYPILOT_NUM_NODES=1 SKYPILOT_NUM_GPUS_PER_NODE=4 \
		RAY_HEAD_PORT=46380 PATH="$FAKE/bin:$TRASH/bb" \
		"$BUSYBOX" sh "$(node_home rc 0)/sky_templates/ray/start_cluster" >out 2>err &&
	grep -qx "rank=0 home=$TRASH/direct/h1: ray start --head --port=46380 --dashboard-port=8265 --dashboard-host=127.0.0.1 --disable-usage-stats --include-dashboard=True --num-gpus=4" direct.log &&
	pid=$(cat direct/h1/.fake-ray-node/46380.pid) &&
	kill -0 $pid &&
	direct h1 SKYPILOT_NODE_RANK=0 RAY_HEAD_PORT=46380 PATH="$FAKE/bin:$TRASH/bb" \
		"$BUSYBOX" sh "$(node_home rc 0)/sky_templates/ray/stop_cluster" >out 2>err &&
	grep -qx "Ray cluster successfully stopped." out &&
	! test -s err &&
	wait_for "! kill -0 $pid 2>/dev/null" 5
'

test_expect_success 'no ray, no uv, no pip: start_cluster says so and exits 1' '
	expect_fail 1 direct none SKYPILOT_NODE_RANK=0 PATH="$TRASH/tools" \
		sh "$(node_home rc 0)/sky_templates/ray/start_cluster" >out 2>err &&
	grep -qx "Installing ray\[default\]..." out &&
	grep -qx "Error: Failed to install Ray." out
'

test_expect_success 'the templates parse under every POSIX shell here' '
	for sh in sh dash "busybox sh" "bash --posix"; do
		command -v ${sh%% *} >/dev/null || continue
		for f in start_cluster stop_cluster; do
			$sh -n "$TPL/ray/$f" || exit 1
		done
	done
'

# A node is bootstrapped again (node up) by start, or by the first launch of a new skiff.
test_expect_success 'stop and start: a file the user changed is kept, skiff'"'"'s own replaced' '
	h0=$(node_home rc 0) && h1=$(node_home rc 1) &&
	echo "# mine" >>"$h1/sky_templates/ray/start_cluster" &&
	rm "$h0/sky_templates/ray/stop_cluster" &&
	printf "#!/bin/sh\necho an older skiff\n" >"$h0/sky_templates/ray/start_cluster" &&
	old=$(sha256sum <"$h0/sky_templates/ray/start_cluster" | cut -d" " -f1) &&
	grep -v " ray/start_cluster\$" "$h0/.skiff/sky_templates.sha256" >rec &&
	echo "$old  ray/start_cluster" >>rec &&
	cp rec "$h0/.skiff/sky_templates.sha256" &&
	skiff stop rc </dev/null >out 2>err &&
	skiff start rc </dev/null >out 2>err &&
	cmp "$TPL/ray/start_cluster" "$h0/sky_templates/ray/start_cluster" &&
	cmp "$TPL/ray/stop_cluster" "$h0/sky_templates/ray/stop_cluster" &&
	test "$(tail -n 1 "$h1/sky_templates/ray/start_cluster")" = "# mine" &&
	cmp "$TPL/ray/stop_cluster" "$h1/sky_templates/ray/stop_cluster" &&
	(cd "$TPL" && sha256sum ray/start_cluster ray/stop_cluster) >want &&
	test_cmp want "$h0/.skiff/sky_templates.sha256" &&
	test_cmp want "$h1/.skiff/sky_templates.sha256" &&
	skiff down rc >/dev/null
'

# The SSH pool: tn1 a namespace node, tn2 the busybox-only chroot (no bash, no python, no
# libc: only with a static skiff; with the ASan build both are namespace nodes). The
# stand-ins travel in the workdir (~/sky_workdir/fake/bin), and each rank runs the head's
# path and stop_cluster as a Ray cluster of its own.
if test_have_prereq NODES; then
	down_all
	_t=${TMPDIR:-/tmp}
	[ "${#_t}" -le 12 ] || _t=/tmp
	SSH_SKIFF_HOME=$_t/sk627.$$
	export SKIFF_HOME=$SSH_SKIFF_HOME
	rm -rf "$SKIFF_HOME" && mkdir -m 700 "$SKIFF_HOME"
	export SKIFF_SSH_NODE_POOLS=$NODES_POOL_FILE
	_bb=
	! test_have_prereq STATIC || _bb="--busybox 2"
	# shellcheck disable=SC2086
	nodes_up 2 $_bb || { echo "Bail out! the test nodes did not come up"; exit 1; }
	mkdir -p "$TRASH/sshwd" && cp -R "$FAKE" "$TRASH/sshwd/"
	cat >"$TRASH/sshwd/task.yaml" <<'EOF'
workdir: .
num_nodes: 2
envs:
  RAY_HEAD_PORT: "46381"
run: |
  export PATH="$HOME/sky_workdir/fake/bin:$PATH"
  sha256sum ~/sky_templates/ray/start_cluster ~/sky_templates/ray/stop_cluster
  ls -l ~/sky_templates/ray/start_cluster
  SKYPILOT_NODE_RANK=0 SKYPILOT_NUM_NODES=1 ~/sky_templates/ray/start_cluster
  SKYPILOT_NODE_RANK=0 ~/sky_templates/ray/stop_cluster; echo "stop: $?"
  sed 's/^/log: /' ~/fake-ray.log
EOF
fi

test_expect_success NODES 'ssh pool (a busybox node): the templates are there and run' '
	(cd sshwd && skiff launch -c rs --infra "ssh/$NODES_POOL" task.yaml) >out 2>err &&
	start=$(cd "$TPL" && sha256sum ray/start_cluster | cut -d" " -f1) &&
	stop=$(cd "$TPL" && sha256sum ray/stop_cluster | cut -d" " -f1) &&
	for r in 0 1; do
		p="$(rank_prefix_re $r "10.200.0.1$((r + 1))")" &&
		grep -q "^$p $start " out &&
		grep -q "^$p $stop " out &&
		grep -q "^$p -rwx------ " out &&
		grep "^$p log: rank=0 home=" out >log &&
		grep -qF ": ray start --head --port=46381 --dashboard-port=8265 --dashboard-host=127.0.0.1 --disable-usage-stats --include-dashboard=True" log &&
		grep -qx "$p Ray cluster successfully stopped." out &&
		grep -qx "$p stop: 0" out || exit 1
	done &&
	skiff down rs >/dev/null
'

test_done
