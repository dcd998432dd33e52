#!/bin/sh
# The launcher on an SSH node pool (tests/lib/nodes.sh): tn1 and tn3 are namespace
# nodes, tn2 is the busybox-only chroot (no bash, no python, no libc). A 3-node gang with
# a workdir, hostile envs and setup; booking (no double booking, down frees); a rank that
# fails; a node partitioned mid-job; skiff ssh; file_mounts on the busybox node; cancel.
# Root only (skipped otherwise, a failure in CI). The same commands on local infra are
# in t0600.
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

nodes_require_root
nodes_install_deps || { echo "Bail out! cannot install the packages the test nodes need"; exit 1; }
command -v python3 >/dev/null || test_skip_all "needs python3 to read the --json outputs"

# The busybox node has no libc: only a static skiff runs there, and the launcher copies
# itself. With the ASan build (make test-asan) the pool is three namespace nodes, and the
# test that needs the busybox node (prerequisite BUSYBOX_NODE) is a skip, a failure in CI.
BB=2
USER2=$NODES_BB_USER
test_have_prereq STATIC || { BB=; USER2=$NODES_USER; }
[ -z "$BB" ] || test_set_prereq BUSYBOX_NODE

# The launcher's ssh sockets live in $SKIFF_HOME/ssh when that path is short enough
# (docs/bootstrap.md), as ~/.skiff/ssh is; $TRASH/home is not (and a state dir may not be
# a symlink). A short SKIFF_HOME keeps this test's ControlMasters its own, not in the
# shared /tmp/skiff-ssh.UID; the cleanup copies it into $TRASH (kept on failure, and
# scanned for sanitizer reports).
_t=${TMPDIR:-/tmp}
[ "${#_t}" -le 12 ] || _t=/tmp
export SKIFF_HOME=$_t/sk610.$$
rm -rf "$SKIFF_HOME"
mkdir -m 700 "$SKIFF_HOME" || { echo "Bail out! cannot create $SKIFF_HOME"; exit 1; }
export SKIFF_SSH_NODE_POOLS=$NODES_POOL_FILE
INFRA=ssh/$NODES_POOL
IPS=10.200.0.11,10.200.0.12,10.200.0.13

# Takes down every cluster (a failed test may leave one booking the nodes, which would
# fail the next scenario's launch too).
down_all() {
	for _c in $("$SKIFF_BIN" status --json 2>/dev/null | python3 -c \
		"import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		timeout 60 "$SKIFF_BIN" down "$_c" >/dev/null 2>&1
	done
}

# tn3 behind a NAT address, as a cloud host's public address (section 7).
NAT_IP=10.200.0.99
nat_rule() {
	iptables -t nat "$1" OUTPUT -d $NAT_IP/32 -p tcp --dport 22 \
		-m comment --comment "skiff-t0610-$$" -j DNAT --to-destination 10.200.0.13:22
}

test_cleanup_hook() {
	down_all
	# The second launcher's (section 2), if a failure left one of its clusters.
	if [ -d "${OTHER:-}" ]; then
		_h=$SKIFF_HOME
		SKIFF_HOME=$OTHER
		down_all
		SKIFF_HOME=$_h
		rm -rf "$OTHER"
	fi
	nat_rule -D 2>/dev/null
	_w=$(gang_watchers)
	# shellcheck disable=SC2086
	[ -z "$_w" ] || kill -KILL $_w 2>/dev/null
	# The nodes' supervisor and job logs, into $TRASH: kept on failure, and scanned for
	# sanitizer reports (test-asan) like the launcher's own.
	for _d in "$NODES_DIR"/tn*/home/.skiff "$NODES_DIR"/tn*/rootfs/home/*/.skiff; do
		[ -d "$_d" ] || continue
		_n=${_d#"$NODES_DIR"/}
		_n=${_n%%/*}
		mkdir -p "$TRASH/nodes/$_n" && cp -R "$_d/supervisor.log" "$_d/logs" "$TRASH/nodes/$_n/"
	done 2>/dev/null
	nodes_down
	cp -a "$SKIFF_HOME" "$TRASH/home" 2>/dev/null
	rm -rf "$SKIFF_HOME"
}

# node_procs I MARK: the processes on node I whose command line holds MARK (not this
# probe's own shell). POSIX sh and tr only: the busybox node has no pgrep.
node_procs() {
	nodes_ssh "$1" "mark='$2';"' for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = "$$" ] && continue
		c=$(tr "\0" " " <"$p/cmdline" 2>/dev/null) || continue
		case $c in *"$mark"*) echo "${p#/proc/} $c" ;; esac
	done'
}

# none_left MARK: no process of MARK on any node.
none_left() {
	for _i in 1 2 3; do
		[ -z "$(node_procs "$_i" "$1")" ] || return 1
	done
}

# node_skiff_procs I: the processes on node I whose executable is one of the node's skiff
# binaries (~/.skiff/bin: supervisor, shims, followers, node call sessions).
node_skiff_procs() {
	nodes_ssh "$1" 'for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = "$$" ] && continue
		e=$(readlink "$p/exe" 2>/dev/null) || continue
		case $e in "$HOME"/.skiff/bin/*) echo "${p#/proc/} $e" ;; esac
	done'
}

# masters: the launcher's ssh ControlMasters (their sockets are in $SKIFF_HOME/ssh).
masters() {
	procs cmd "ssh*" cmd-has "$SKIFF_HOME/ssh/"
}

# all_running MARK: a process of MARK on every node.
all_running() {
	for _i in 1 2 3; do
		[ -n "$(node_procs "$_i" "$1")" ] || return 1
	done
}

# json EXPR FILE: print a Python expression over the JSON in FILE (as d), as JSON.
json() {
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(($1)))" "$2"
}

# node_job_id RANK FILE: the node's own job id of rank RANK of the last job in `queue
# --json` FILE (pool hosts keep their queue from cluster to cluster: ids differ).
node_job_id() {
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d[-1]['node_job_ids'].split(',')[$1])" "$2"
}

now() { date +%s.%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# The job's skiff on node I (the link bootstrap leaves), for node-side checks.
node_skiff() {
	_i=$1
	shift
	nodes_ssh "$_i" "\"\$HOME/.skiff/bin/skiff\" $*"
}

# node_status_is I ID STATUS: node I says its job ID is STATUS.
node_status_is() { [ "$(node_skiff "$1" node logs --status "$2")" = "$3" ]; }

# ---- inputs (written here: test bodies are single-quoted) ------------------------------

mkdir -p "$TRASH/wd/sub" "$TRASH/mounts/dir"
echo payload >"$TRASH/wd/data.txt"
echo nested >"$TRASH/wd/sub/n.txt"
printf 'secret.key\n*.log\n' >"$TRASH/wd/.gitignore"
echo nope >"$TRASH/wd/secret.key"
echo nope >"$TRASH/wd/debug.log"
echo "mounted file" >"$TRASH/mounts/cfg.txt"
echo "mounted dir" >"$TRASH/mounts/dir/a.txt"

# Quotes, a command substitution, backticks, a parameter and a newline: none may be
# expanded anywhere between the YAML and the job.
cat >"$TRASH/gang.yaml" <<'EOF'
name: gang
num_nodes: 3
workdir: ./wd
envs:
  HOSTILE: "it's \"q\" $(touch pwned) `touch pwned2` ${HOME}\nsecond line"
setup: |
  echo "setup ran on $(hostname) in $PWD" >~/setup-marker
run: |
  echo "rank=$SKYPILOT_NODE_RANK host=$(hostname) ips=$(echo $SKYPILOT_NODE_IPS | tr ' ' ,) n=$SKYPILOT_NUM_NODES"
  echo "rank=$SKYPILOT_NODE_RANK bash=${BASH_VERSION:-none} sh=$(readlink /proc/$$/exe)"
  printf '%s' "$HOSTILE" >~/hostile.out
  echo "rank=$SKYPILOT_NODE_RANK $(cat data.txt sub/n.txt | tr '\n' ' ')"
  test ! -e secret.key && test ! -e debug.log && echo "rank=$SKYPILOT_NODE_RANK ignored-ok"
EOF
printf '%s\n%s' "it's \"q\" \$(touch pwned) \`touch pwned2\` \${HOME}" "second line" \
	>"$TRASH/hostile.want"

cat >"$TRASH/fm.yaml" <<EOF
file_mounts:
  ~/mnt/cfg.txt: $TRASH/mounts/cfg.txt
  ~/mnt/dir: $TRASH/mounts/dir
run: |
  cat ~/mnt/cfg.txt ~/mnt/dir/a.txt
  echo "on \$(hostname) bash=\${BASH_VERSION:-none}"
EOF

# ---- 1. a 3-node gang ------------------------------------------------------------------

test_expect_success "nodes up: tn1, tn3 namespace nodes${BB:+, tn2 busybox-only}" '
	nodes_up 3 ${BB:+--busybox $BB}
'

test_expect_success 'launch a 3-node gang: every rank on its own node, IPs head first' '
	t0=$(now) &&
	{ skiff launch -c s1 --infra "$INFRA" --num-nodes 3 gang.yaml >out 2>err; rc=$?; } &&
	secs_since $t0 >"$TRASH/launch.s" &&
	cat err out &&
	test $rc = 0 &&
	grep -q "nodes .*3 node(s) on $INFRA: 10.200.0.11, " err &&
	grep -q "bootstrap .*skiff copied to 3, already on 0; 3 supervisor(s) started" err &&
	grep -q "sync .*1 path(s) to 3 node(s)" err &&
	for r in 0 1 2; do
		ip=10.200.0.1$((r + 1)) &&
		grep -qx "$(rank_prefix_re $r "$ip") rank=$r host=tn$((r + 1)) ips=$IPS n=3" out &&
		grep -qx "$(rank_prefix_re $r "$ip") rank=$r payload nested " out &&
		grep -qx "$(rank_prefix_re $r "$ip") rank=$r ignored-ok" out || { echo "rank $r"; exit 1; }
	done &&
	grep -q "^skiff: job 1 finished (status: SUCCEEDED)\$" err
'
[ -s "$TRASH/launch.s" ] && echo "# launch of 3 fresh nodes (copy, supervisors, sync, run):" \
	"$(cat "$TRASH/launch.s") s"

test_expect_success BUSYBOX_NODE 'the busybox node ran its rank with /bin/sh (no bash there)' '
	! nodes_ssh 2 "command -v bash" &&
	grep -qx "(worker1, rank=1, pid=[0-9]*, ip=10.200.0.12) rank=1 bash=none sh=/bin/busybox" out &&
	grep -q "^(head, rank=0, pid=[0-9]*) rank=0 bash=5.* sh=.*/bash\$" out
'

test_expect_success 'the hostile env arrived verbatim on every node, and nothing ran' '
	for i in 1 2 3; do
		nodes_ssh $i "cat ~/hostile.out" >got$i && cmp hostile.want got$i || exit 1
		test "$(nodes_ssh $i "ls -a ~ ~/sky_workdir | grep -c pwned")" = 0 || exit 1
	done &&
	test ! -e pwned && test ! -e wd/pwned
'

test_expect_success 'setup ran on every node, in the workdir; ignored files were not sent' '
	for i in 1 2 3; do
		home=$(nodes_ssh $i "echo \$HOME") &&
		test "$(nodes_ssh $i "cat ~/setup-marker")" = "setup ran on tn$i in $home/sky_workdir" &&
		nodes_ssh $i "test -f ~/sky_workdir/data.txt && test -f ~/sky_workdir/sub/n.txt &&
			test ! -e ~/sky_workdir/secret.key && test ! -e ~/sky_workdir/debug.log" ||
			{ echo "tn$i"; exit 1; }
	done
'

test_expect_success 'status --json: 3 nodes with their IPs and users, head 10.200.0.11' '
	skiff status --json >st.json &&
	cat st.json &&
	test "$(json "[c[\"name\"] for c in d]" st.json)" = "[\"s1\"]" &&
	test "$(json "d[0][\"status\"], d[0][\"infra\"], d[0][\"num_nodes\"], d[0][\"head\"]" st.json)" = \
		"[\"UP\", \"$INFRA\", 3, \"10.200.0.11\"]" &&
	test "$(json "[(n[\"rank\"], n[\"ip\"], n[\"port\"]) for n in d[0][\"nodes\"]]" st.json)" = \
		"[[0, \"10.200.0.11\", 22], [1, \"10.200.0.12\", 22], [2, \"10.200.0.13\", 22]]" &&
	test "$(json "[n[\"user\"] for n in d[0][\"nodes\"]]" st.json)" = \
		"[\"$NODES_USER\", \"$USER2\", \"$NODES_USER\"]" &&
	skiff status -v >st && grep -q "^s1 .*$INFRA .*UP .*10.200.0.11 *-\$" st
'

test_expect_success 'queue --json: SUCCEEDED with exit codes [0, 0, 0]' '
	skiff queue s1 --json >q.json &&
	test "$(json "[(j[\"id\"], j[\"name\"], j[\"status\"], j[\"exit_codes\"]) for j in d]" q.json)" = \
		"[[1, \"gang\", \"SUCCEEDED\", [0, 0, 0]]]" &&
	skiff logs s1 --status >st && grep -qx "Job [0-9]*: SUCCEEDED" st
'

# ---- 2. booking --------------------------------------------------------------------------

test_expect_success 'no double booking: a 1-node cluster is refused, naming the holder' '
	expect_fail 1 skiff launch -c s2 --infra "$INFRA" "echo never" >out 2>err &&
	cat err &&
	grep -q "error: pool .$NODES_POOL. has 3 nodes, 3 are in use by cluster s1; need 1" err &&
	! grep -q never out &&
	skiff status --json >st.json &&
	test "$(json "[c[\"name\"] for c in d]" st.json)" = "[\"s1\"]" &&
	skiff check --json ssh >ck.json &&
	test "$(json "sorted(set(r[\"cluster\"] for r in d[0][\"inventory\"][0][\"rows\"] if r[\"pool\"] == \"$NODES_POOL\"))" ck.json)" = "[\"s1\"]" &&
	skiff check ssh >ck.txt && cat ck.txt &&
	test "$(grep -c "^    $NODES_POOL .* s1$" ck.txt)" = 3
'

test_expect_success 'down frees the hosts and stops their supervisors' '
	skiff down s1 >out && grep -qx "cluster s1 terminated" out &&
	test "$(skiff status)" = "No existing clusters." &&
	for i in 1 2 3; do
		test -z "$(node_procs $i __supervisor)" || { echo "tn$i: supervisor left"; exit 1; }
	done
'

test_expect_success 'then the second cluster gets the first host; down it too' '
	skiff launch -c s2 --infra "$INFRA" "echo on \$(hostname)" >out 2>err &&
	cat err out &&
	test "$(cat out)" = "on tn1" &&
	grep -q "copied to 0, already on 1" err &&
	skiff down s2 >/dev/null &&
	test "$(skiff status)" = "No existing clusters."
'

# Two launchers (two machines, or two users' homes) with the same pool: each database
# knows its own clusters only; the host knows who holds it ($SKIFF_HOME/holds there).
OTHER=$_t/sk610b.$$
other() { SKIFF_HOME=$OTHER "$SKIFF_BIN" "$@"; }
test_expect_success 'a host held by another launcher'"'"'s cluster: refused, named, the next host taken' '
	rm -rf "$OTHER" && mkdir -m 700 "$OTHER" &&
	skiff launch -c s1h -d --infra "$INFRA" "sleep 4000.$$" >/dev/null 2>&1 &&
	nodes_ssh 1 "cat ~/.skiff/holds" >holds &&
	cat holds &&
	grep -q "^launcher=[0-9a-f]* cluster=s1h from=[^ ]*@[^ ]* since=[0-9]*$" holds &&
	# All three hosts: tn1 refuses; tn2 and tn3 came up and are let go of again.
	expect_fail 1 other launch -c b3 --num-nodes 3 --infra "$INFRA" "echo never" >out 2>err &&
	cat err &&
	grep -q "warning: node 10.200.0.11 (10.200.0.11): cluster .s1h. of [^ ]* (launcher [0-9a-f]*) holds this node whole since .*: clusters share a node only where each asks for resources" err &&
	grep -q "error: pool .$NODES_POOL. has 3 nodes, other clusters hold 10.200.0.11; need 3" err &&
	! grep -q never out &&
	test "$(other status)" = "No existing clusters." &&
	for i in 2 3; do
		nodes_ssh $i "cat ~/.skiff/holds 2>/dev/null" >h$i &&
		test ! -s h$i || { echo "tn$i still held:"; cat h$i; exit 1; }
	done &&
	skiff queue --json s1h >q.json &&
	test "$(json "[j[\"status\"] for j in d]" q.json)" = "[\"RUNNING\"]" &&
	test -n "$(node_procs 1 "sleep 4000.$$")" &&
	# One host: the next free one.
	other launch -c b1 --infra "$INFRA" "echo b1 on \$(hostname)" >out 2>err &&
	cat err out &&
	grep -qx "b1 on tn2" out &&
	grep -q "trying the other hosts of ssh/$NODES_POOL" err &&
	nodes_ssh 2 "cat ~/.skiff/holds" | grep -q " cluster=b1 " &&
	skiff down s1h >/dev/null &&
	nodes_ssh 1 "cat ~/.skiff/holds" >holds &&
	test ! -s holds &&
	expect_fail 1 skiff launch -c s3h --num-nodes 3 --infra "$INFRA" "echo never" >out 2>err &&
	grep -q "other clusters hold 10.200.0.12; need 3" err &&
	other down b1 >/dev/null &&
	test "$(skiff status)" = "No existing clusters." &&
	rm -rf "$OTHER"
'

# ---- 3. a rank fails ---------------------------------------------------------------------

# Job markers: "sleep N000.PID" is matched by no other test's "^sleep D<its pid>" pattern
# (tn1 and tn3 processes are visible on the host, and some tests pkill by pattern).

test_expect_success 'gang failure: rank 2 exits 5; the others are stopped; launch exits 100' '
	down_all &&
	expect_fail 100 skiff launch -c g --infra "$INFRA" --num-nodes 3 \
		"if [ \$SKYPILOT_NODE_RANK = 2 ]; then sleep 1; exit 5; fi; sleep 3000.$$" >out 2>err &&
	cat err &&
	grep -q "^skiff: job 1 finished (status: FAILED)\$" err &&
	skiff queue g --json >q.json &&
	test "$(json "d[-1][\"status\"], d[-1][\"exit_codes\"]" q.json)" = "[\"FAILED\", [137, 137, 5]]" &&
	wait_for "none_left \"sleep 3000.$$\"" 20 &&
	grep -q "job 1: rank 2 ended FAILED; stopping the other ranks" "$SKIFF_HOME/gang.log" &&
	expect_fail 100 skiff logs g --status >st && grep -qx "Job [0-9]*: FAILED" st &&
	skiff down g >/dev/null
'

# ---- 4. a node dies mid-job --------------------------------------------------------------

# The gang watcher gives a node that stopped answering 5 s (30 by default) to answer
# again before it fails the gang.
test_expect_success 'a long 3-node job runs on every node' '
	down_all &&
	SKIFF_GANG_LOST_MS=5000 skiff launch -c p -d --infra "$INFRA" --num-nodes 3 \
		"echo started; sleep 4000.$$" 2>err &&
	wait_for "all_running \"sleep 4000.$$\"" 20 &&
	skiff queue p --json >q.json &&
	test "$(json "d[-1][\"status\"]" q.json)" = "\"RUNNING\""
'

test_expect_success 'tn3 partitioned: logs comes back, naming it; the job is FAILED_DRIVER' '
	nodes_partition 3 &&
	t0=$(now) &&
	{ timeout 60 "$SKIFF_BIN" logs p >out 2>err; rc=$?; } &&
	secs_since $t0 >"$TRASH/partition-logs.s" &&
	cat out err &&
	{ test $rc != 124 || { echo "logs hung until the timeout 60 guard"; exit 1; }; } &&
	test $rc = 100 &&
	grep -qx "(head, rank=0, pid=[0-9]*) started" out &&
	grep -q "^skiff: error: node 10.200.0.13 (rank 2): lost the connection" err &&
	grep -q "^skiff: job 1 finished (status: FAILED_DRIVER)\$" err &&
	grep -q "job 1: rank 2.s node 10.200.0.13 does not answer; watching it again for up to 5 s" \
		"$SKIFF_HOME/gang.log" &&
	grep -q "job 1: rank 2 ended (node unreachable); stopping the other ranks" "$SKIFF_HOME/gang.log"
'

test_expect_success 'tn3 partitioned: queue comes back, naming it, with exit 4' '
	t0=$(now) &&
	{ timeout 60 "$SKIFF_BIN" queue p --json >q.json 2>err; rc=$?; } &&
	secs_since $t0 >"$TRASH/partition-queue.s" &&
	cat err q.json &&
	{ test $rc != 124 || { echo "queue hung until the timeout 60 guard"; exit 1; }; } &&
	test $rc = 4 &&
	grep -q "^skiff: error: node 10.200.0.13 (10.200.0.13): ssh: connect to host 10.200.0.13" err &&
	test "$(json "d[-1][\"status\"], d[-1][\"exit_codes\"]" q.json)" = \
		"[\"FAILED_DRIVER\", [137, 137, null]]"
'
[ -s "$TRASH/partition-logs.s" ] && echo "# partitioned tn3: logs reported it after" \
	"$(cat "$TRASH/partition-logs.s") s, queue after $(cat "$TRASH/partition-queue.s") s"

test_expect_success 'the ranks on tn1 and tn2 ended CANCELLED, and nothing of them runs' '
	for i in 1 2; do
		id=$(node_job_id $((i - 1)) q.json) &&
		test "$(node_skiff $i node logs --status $id)" = CANCELLED || { echo tn$i; exit 1; }
	done &&
	wait_for "test -z \"\$(node_procs 1 \"sleep 4000.$$\")\" && test -z \"\$(node_procs 2 \"sleep 4000.$$\")\"" 20
'

test_expect_success 'healed: the watcher stops the lost rank on tn3; still FAILED_DRIVER; down' '
	nodes_heal 3 &&
	t0=$(now) &&
	# The watcher says when it has stopped the rank. (Looking for the processes instead
	# passed at once, falsely, while tn3 could not yet be reached: no processes listed.)
	wait_for "grep -q \"job 1: rank 2 stopped on 10.200.0.13, which is back\" \"$SKIFF_HOME/gang.log\"" 90 &&
	secs_since $t0 >"$TRASH/heal.s" &&
	wait_for "p=\$(node_procs 3 \"sleep 4000.$$\") && test -z \"\$p\"" 30 &&
	test "$(node_skiff 3 node logs --status $(node_job_id 2 q.json))" = CANCELLED &&
	skiff queue p --json >q.json &&
	# The gang failed when its node was lost: that stands now that the rank is stopped.
	test "$(json "d[-1][\"status\"]" q.json)" = "\"FAILED_DRIVER\"" &&
	skiff down p >out 2>err && cat err && ! grep -q warning err
'
[ -s "$TRASH/heal.s" ] && echo "# the lost rank was stopped $(cat "$TRASH/heal.s") s after the heal"

# ---- 5. ssh, and file_mounts on the busybox node ----------------------------------------

test_expect_success 'skiff ssh runs a command on the head node' '
	down_all &&
	skiff launch -c h1 --infra "$INFRA" true >/dev/null 2>&1 &&
	test "$(skiff ssh h1 hostname)" = tn1 &&
	test "$(skiff ssh h1 "echo \"\$(hostname) \$((6 * 7))\"")" = "tn1 42" &&
	expect_fail 3 skiff ssh h1 "exit 3"
'

test_expect_success 'launch with file_mounts on a one-node cluster (the busybox node)' '
	skiff launch -c bb --infra "$INFRA" true >/dev/null 2>&1 &&
	skiff status --json >st.json &&
	test "$(json "[c[\"head\"] for c in d if c[\"name\"] == \"bb\"]" st.json)" = "[\"10.200.0.12\"]" &&
	test "$(skiff ssh bb hostname)" = tn2 &&
	skiff launch -c bb fm.yaml >out 2>err &&
	cat err out &&
	grep -qx "mounted file" out && grep -qx "mounted dir" out &&
	if [ -n "$BB" ]; then grep -qx "on tn2 bash=none" out; else grep -q "^on tn2 " out; fi &&
	grep -q "^skiff: job 2 finished (status: SUCCEEDED)\$" err &&
	skiff down h1 bb >/dev/null
'

# ---- 6. cancel ---------------------------------------------------------------------------

test_expect_success 'cancel of a running 3-node job stops it on every node' '
	down_all &&
	skiff launch -c cx -d --infra "$INFRA" --num-nodes 3 "sleep 6000.$$" 2>/dev/null &&
	wait_for "all_running \"sleep 6000.$$\"" 20 &&
	stops=$(grep -c "stopping the other ranks" "$SKIFF_HOME/gang.log") &&
	skiff cancel cx >out && grep -qx "cancelled job [0-9]* on cluster cx" out &&
	wait_for "none_left \"sleep 6000.$$\"" 20 &&
	expect_fail 103 skiff logs cx --status >st && grep -qx "Job [0-9]*: CANCELLED" st &&
	skiff queue cx --json >q.json &&
	test "$(json "d[-1][\"status\"]" q.json)" = "\"CANCELLED\"" &&
	test "$(grep -c "stopping the other ranks" "$SKIFF_HOME/gang.log")" = "$stops" &&
	# Each shim records the end once its job is gone (none_left): a moment later under load.
	for i in 1 2 3; do
		id=$(node_job_id $((i - 1)) q.json) &&
		wait_for "node_status_is $i $id CANCELLED" 20 ||
		{ echo "tn$i: $(node_skiff $i node logs --status $id)"; exit 1; }
	done &&
	skiff down cx >/dev/null
'

# A followed launch's ranks are followed over their install sessions, an exec's by the
# `node stream` its supervisor started for the connection the master forwards
# (docs/bootstrap.md), `logs` over a `node logs` of its own; the launcher killed outright
# says nothing to the nodes, and sshd keeps their stdout open: each follower learns it from
# its stdin, which the launcher held open (EOF), and ends; the job runs on.
test_expect_success 'a followed launch, exec or logs killed with SIGKILL: its followers end on every node; the job runs on' '
	down_all &&
	{ "$SKIFF_BIN" launch -c kfz --infra "$INFRA" --num-nodes 3 "sleep 6200.$$" >/dev/null 2>&1 & } &&
	lpid=$! &&
	wait_for "all_running \"sleep 6200.$$\"" 30 &&
	wait_for "all_running \"--hold kfz \"" 20 &&
	kill -9 $lpid &&
	wait_for "none_left \"--hold kfz \"" 20 &&
	all_running "sleep 6200.$$" &&
	skiff down kfz >/dev/null &&
	wait_for "none_left \"sleep 6200.$$\"" 20 &&
	# exec on a live cluster: the follower is a `node stream` of the supervisor.
	skiff launch -c kfe -d --infra "$INFRA" "true" >/dev/null 2>&1 &&
	{ "$SKIFF_BIN" exec kfe "sleep 6300.$$" >/dev/null 2>&1 & } &&
	lpid=$! &&
	wait_for "! none_left \"sleep 6300.$$\"" 30 &&
	wait_for "! none_left \"node stream\"" 20 &&
	kill -9 $lpid &&
	wait_for "none_left \"node stream\"" 20 &&
	! none_left "sleep 6300.$$" &&
	# logs: the job is silent, so the follower has nothing to write that would fail.
	{ "$SKIFF_BIN" logs kfe >/dev/null 2>&1 & } &&
	lpid=$! &&
	wait_for "! none_left \"node logs --follow\"" 20 &&
	kill -9 $lpid &&
	wait_for "none_left \"node logs --follow\"" 20 &&
	! none_left "sleep 6300.$$" &&
	skiff down kfe >/dev/null
'

test_expect_success 'down leaves nothing: a job ignoring SIGTERM, a follower, watcher, masters' '
	down_all &&
	skiff launch -c dn -d --infra "$INFRA" --num-nodes 3 \
		"trap \"\" TERM; echo up; sleep 6100.$$; echo survived" 2>/dev/null &&
	wait_for "all_running \"sleep 6100.$$\"" 20 &&
	test -n "$(gang_watchers)" && test -n "$(masters)" &&
	{ skiff logs dn --follow >follow.out 2>&1 & } &&
	wait_for "all_running \"node logs --follow\"" 20 &&
	skiff down dn >out 2>err &&
	left=$(for i in 1 2 3; do node_procs $i "sleep 6100.$$"; node_skiff_procs $i; done) &&
	cat out err && echo "$left" && gang_watchers && masters &&
	grep -qx "cluster dn terminated" out &&
	test -z "$left" &&
	test -z "$(gang_watchers)" &&
	test -z "$(masters)" &&
	wait_for "! kill -0 $! 2>/dev/null" 20 &&
	! grep -q survived follow.out
'

# ---- 7. the shared connection --------------------------------------------------------------

# An ssh that logs its calls: over a warm master skiff runs none (it asks the master
# itself, bootstrap/infra/ssh_mux.h); without one it runs ssh, which starts the master.
SSH_REAL=$(command -v ssh)
mkdir -p "$TRASH/sshwrap"
cat >"$TRASH/sshwrap/ssh" <<EOF
#!/bin/sh
echo "\$*" >>"$TRASH/ssh.calls"
exec "$SSH_REAL" "\$@"
EOF
chmod +x "$TRASH/sshwrap/ssh"

test_expect_success 'over a warm master no ssh runs; a stale socket falls back to ssh' '
	down_all &&
	skiff launch -c mx --infra "$INFRA" true >/dev/null 2>&1 &&
	rm -f ssh.calls &&
	env PATH="$TRASH/sshwrap:$PATH" "$SKIFF_BIN" exec mx "echo via \$(hostname)" >out 2>err &&
	grep -qx "via tn1" out && test ! -e ssh.calls &&
	expect_fail 100 env PATH="$TRASH/sshwrap:$PATH" "$SKIFF_BIN" exec mx "exit 9" 2>err &&
	grep -q "status: FAILED" err && test ! -e ssh.calls &&
	socks=$(find "$SKIFF_HOME/ssh" -type s ! -name "*.*") && test -n "$socks" &&
	for s in $socks; do
		"$SSH_REAL" -o ControlPath="$s" -O exit x 2>/dev/null
		wait_for "test ! -S \"$s\"" 10 &&
		python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$s" ||
		exit 1
	done &&
	env PATH="$TRASH/sshwrap:$PATH" "$SKIFF_BIN" exec mx "echo again \$(hostname)" >out 2>err &&
	grep -qx "again tn1" out && test "$(wc -l <ssh.calls)" = 1 &&
	env PATH="$TRASH/sshwrap:$PATH" "$SKIFF_BIN" exec mx "echo warm" >out 2>err &&
	grep -qx warm out && test "$(wc -l <ssh.calls)" = 1 &&
	skiff down mx >/dev/null
'

# The master forwards a socket of the launcher's to the node supervisor's
# (bootstrap/launch/cl_direct.h): exec's submit and its logs go there, with no process
# started on the node but the supervisor's follower. Without a supervisor or a master
# there, the call goes through node call as before, and the forward is made again.
fwds() { find "$SKIFF_HOME/ssh" -type s -name "*.*"; }
test_expect_success 'exec goes to the supervisor through the master'"'"'s forward; else through node call' '
	down_all &&
	skiff launch -c fw --infra "$INFRA" true >/dev/null 2>&1 &&
	test "$(fwds | wc -l)" = 1 &&
	SKIFF_DEBUG=1 skiff exec fw "echo at \$(hostname); echo r >>~/fw.$$" >out 2>err &&
	grep -qx "at tn1" out &&
	grep -q "the followed submit went to its supervisor.s socket (ssh forward)" err &&
	expect_fail 100 skiff exec fw "exit 7" 2>err && grep -q "status: FAILED" err &&
	SKIFF_DEBUG=1 skiff exec -d fw "echo r >>~/fw.$$" >out 2>err &&
	grep -q ".submit. went to its supervisor.s socket (ssh forward)" err &&
	wait_for "test \"\$(nodes_ssh 1 cat fw.$$ | wc -l)\" = 2" 20 &&
	nodes_ssh 1 "pkill -KILL -f [_]_supervisor" &&
	SKIFF_DEBUG=1 skiff exec fw "echo r >>~/fw.$$; echo back" >out 2>err &&
	grep -qx back out && grep -q "took no followed submit" err &&
	test "$(nodes_ssh 1 cat fw.$$ | wc -l)" = 3 &&
	SKIFF_DEBUG=1 skiff exec fw "echo direct" >out 2>err &&
	grep -qx direct out && grep -q "(ssh forward)" err &&
	for s in $(find "$SKIFF_HOME/ssh" -type s ! -name "*.*"); do
		"$SSH_REAL" -o ControlPath="$s" -O exit x 2>/dev/null
		wait_for "test ! -S \"$s\"" 10 || exit 1
	done &&
	SKIFF_DEBUG=1 skiff exec fw "echo again" >out 2>err &&
	grep -qx again out && grep -q "is forwarded to" err &&
	SKIFF_DEBUG=1 skiff exec fw "echo direct" >out 2>err &&
	grep -qx direct out && grep -q "(ssh forward)" err &&
	skiff down fw >/dev/null &&
	test -z "$(fwds)"
'

test_expect_success 'a 3-node exec streams every rank through its forward (the busybox node too)' '
	down_all &&
	skiff launch -c fwg --infra "$INFRA" --num-nodes 3 true >/dev/null 2>&1 &&
	SKIFF_DEBUG=1 skiff exec fwg --num-nodes 3 "echo rank \$SKYPILOT_NODE_RANK" >out 2>err &&
	test "$(grep -c "the followed submit went to its supervisor.s socket (ssh forward)" err)" = 3 &&
	for r in 0 1 2; do grep -q "rank $r\$" out || exit 1; done &&
	expect_fail 100 skiff exec fwg --num-nodes 3 "[ \$SKYPILOT_NODE_RANK != 1 ] || exit 3" 2>err &&
	grep -q "status: FAILED" err &&
	skiff down fwg >/dev/null
'

test_expect_success 'down while a node is away: kept, exit 1; --purge forgets it; the next cluster cancels what is left' '
	down_all &&
	# tn1 and tn2 held, so that the one-node clusters land on tn3 (and no gang watcher).
	skiff launch -c hold --infra "$INFRA" --num-nodes 2 true >/dev/null 2>&1 &&
	skiff launch -c lf -d --infra "$INFRA" "sleep 5000.$$" 2>/dev/null &&
	wait_for "test -n \"\$(node_procs 3 \"sleep 5000.$$\")\"" 20 &&
	nodes_partition 3 &&
	{ timeout 120 "$SKIFF_BIN" down lf >out 2>err; rc=$?; } &&
	cat out err &&
	test $rc = 1 &&
	grep -q "^skiff: error: cluster lf: node 10.200.0.13 (rank 0) does not answer: cannot tell whether anything of the cluster still runs there\$" err &&
	grep -q "^skiff: error: cluster lf is kept: 1 of its nodes may still run something of it" err &&
	skiff status >st && grep -q "^lf " st &&
	{ timeout 120 "$SKIFF_BIN" down --purge lf >out 2>err; rc=$?; } &&
	nodes_heal 3 &&
	cat out err &&
	test $rc = 0 && grep -qx "cluster lf terminated" out &&
	grep -q "forgotten anyway (--purge)" err &&
	test -n "$(node_procs 3 "sleep 5000.$$")" &&
	skiff launch -c lf2 --infra "$INFRA" "echo fresh \$(hostname)" >out 2>err &&
	grep -qx "fresh tn3" out &&
	grep -q "node 10.200.0.13: cancelled 1 job(s): [0-9]*, left by a cluster taken down" err &&
	wait_for "none_left \"sleep 5000.$$\"" 20 &&
	skiff down lf2 hold >/dev/null
'

test_expect_success 'a node reached through NAT: jobs get the address it was reached at' '
	down_all &&
	nat_rule -A &&
	cat >nat.yaml <<-EOF &&
	natpool:
	  hosts:
	    - ip: $NAT_IP
	      user: $NODES_USER
	      identity_file: $NODES_KEY
	EOF
	SKIFF_SSH_NODE_POOLS=$TRASH/nat.yaml skiff launch -c nat --infra ssh/natpool \
		"echo ips=\$SKYPILOT_NODE_IPS host=\$(hostname)" >out 2>err &&
	grep -qx "ips=10.200.0.13 host=tn3" out &&
	SKIFF_SSH_NODE_POOLS=$TRASH/nat.yaml skiff status --json >st.json &&
	test "$(json "[(n[\"ip\"], n[\"address\"]) for c in d if c[\"name\"] == \"nat\" for n in c[\"nodes\"]]" st.json)" = \
		"[[\"$NAT_IP\", \"10.200.0.13\"]]" &&
	SKIFF_SSH_NODE_POOLS=$TRASH/nat.yaml skiff down nat >/dev/null &&
	nat_rule -D
'

# ---- 8. autostop ---------------------------------------------------------------------------
# An autostop minute lasts one second here (SKIFF_TEST_MINUTE_MS, docs/testing.md).

test_expect_success 'autostop on ssh: the head stops the cluster; its hosts stay booked' '
	down_all &&
	SKIFF_TEST_MINUTE_MS=1000 skiff launch -c sa --infra "$INFRA" --num-nodes 2 -i 1 \
		--wait-for jobs "echo hi" >out 2>err &&
	wait_for "skiff status 2>err | grep -q \"^sa .*STOPPED\"" 30 &&
	grep -q "cluster sa was stopped by autostop" err &&
	for i in 1 2; do
		test -z "$(node_procs $i __supervisor)" || { echo "tn$i: supervisor left"; exit 1; }
	done &&
	expect_fail 1 skiff launch -c sb --infra "$INFRA" --num-nodes 2 "echo never" 2>err &&
	grep -q "2 are in use by cluster sa" err
'

test_expect_success 'start brings the ssh cluster back; autodown then releases its hosts' '
	skiff start sa >out && grep -qx "cluster sa started" out &&
	test -n "$(node_procs 1 __supervisor)" &&
	SKIFF_TEST_MINUTE_MS=1000 skiff autostop sa -i 1 --down --wait-for jobs >/dev/null &&
	wait_for "skiff status 2>err >st.out && ! grep -q \"^sa \" st.out" 30 &&
	grep -q "cluster sa was torn down by autodown" err &&
	for i in 1 2; do
		test -z "$(node_procs $i __supervisor)" || { echo "tn$i: supervisor left"; exit 1; }
	done &&
	skiff launch -c sb --infra "$INFRA" --num-nodes 2 "echo booked" >out 2>/dev/null &&
	grep -q "booked" out &&
	skiff down sb >/dev/null
'

# ---- 9. resource alternatives, setup on every node -------------------------------------------

test_expect_success 'failover on ssh: a misfit is given back before the next is tried' '
	down_all &&
	cat >fo.yaml <<-EOF &&
	num_nodes: 2
	resources:
	  ordered:
	    - infra: ssh/no-such-pool
	    - infra: $INFRA
	      cpus: 4096
	    - infra: $INFRA
	      cpus: 1
	run: echo "on \$(hostname)"
	EOF
	skiff launch -c fo fo.yaml >out 2>err &&
	cat err &&
	grep -q "Trying resources 2 of 3: 2x\[cpus=4096\] on $INFRA" err &&
	grep -q "asks each node for 4096 CPUs, 0 GiB and 0 GPUs, but node 10.200.0.1[0-9] has" err &&
	grep -q "cluster fo: the launch failed; taking the new cluster down" err &&
	grep -q "(worker1, rank=1, pid=[0-9]*, ip=.*) on tn" out &&
	skiff status >st && grep -q "^fo .*2x\[cpus=1\] .*UP" st &&
	skiff down fo >/dev/null
'

test_expect_success 'setup runs on all 3 hosts of the cluster, run on one' '
	skiff launch -c st --infra "$INFRA" --num-nodes 3 true >/dev/null 2>&1 &&
	cat >setup.yaml <<-\EOF &&
	setup: echo "setup $SKYPILOT_SETUP_NODE_RANK on $(hostname)" >"$HOME/setup.$SKYPILOT_SETUP_NODE_RANK"
	run: echo "run on $(hostname)"
	EOF
	skiff launch -c st setup.yaml >out 2>err &&
	grep -qx "(head, rank=0, pid=[0-9]*) run on tn1" out &&
	grep -q "its setup on all 3" err &&
	for i in 1 2 3; do
		r=$((i - 1)) &&
		nodes_ssh $i "cat \$HOME/setup.$r" >s && grep -qx "setup $r on tn$i" s || exit 1
	done &&
	skiff queue st --json >q.json &&
	test "$(json "d[-1][\"exit_codes\"]" q.json)" = "[0, 0, 0]" &&
	skiff down st >/dev/null
'

test_expect_success 'nothing is left: no clusters, no gang watchers' '
	test "$(skiff status)" = "No existing clusters." &&
	wait_for "test -z \"\$(gang_watchers)\"" 20
'

test_done
