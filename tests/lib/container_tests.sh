# The container infra's tests, the same for every engine: sourced by t0700-podman.sh and
# t0701-docker.sh after they have started their engine and set
#
#   CE       the engine's command (podman, docker), the one skiff runs too
#   ENGINE   the infra's name (podman, docker)
#   CTR_NET  set when the engine gives containers network addresses (docker's bridge);
#            unset when they have none (podman with netns none) and skiff names them
#   BB_IMG, DEB_IMG  the names to import the busybox and Debian images as
#
# and sourced tests/lib/container.sh. A 2-node cluster of containers started from a
# busybox image (no bash, no python, no libc) with `skiff init` as PID 1; a gang job with
# a workdir; exec, queue, logs, cancel; stop and start; a container killed mid-job; down
# removing only what skiff started; autostop; failover; a pool of existing containers
# (ENGINE/POOL); a Debian minbase image (debootstrap, cached in /var/cache/skiff-test).
# The nodes are named as skiff names them (ctr_addr): by address on a network, else by
# container name.

# The ids and statuses of a cluster's jobs, from `queue --json` on stdin.
jobs_seen() {
	python3 -c "import json, sys; [print(j[\"id\"], j[\"status\"]) for j in json.load(sys.stdin)]"
}

# ---- images ---------------------------------------------------------------------------

# The busybox image of tests/lib/nodes.sh (section 2 of the test-infra notes): busybox and
# a link per applet, passwd/group with root, /dev nodes, /tmp 1777, /root. No /lib.
test_expect_success "busybox image: built from busybox-static and imported into $CE" '
	R=$TRASH/bbroot &&
	busybox_rootfs "$R" &&
	$CE import --change "CMD [\"/bin/sh\"]" "$R.tar" "$BB_IMG" >/dev/null &&
	test ! -e "$R/lib" && test ! -e "$R/bin/bash"
'

# A Debian minbase rootfs: debootstrap once (about 30-75 s and the Debian archive), then
# the tarball in /var/cache/skiff-test serves every later run.
test_expect_success 'debian minbase image: from the cache, or debootstrap once' '
	tar=$(ctr_debian_tar bookworm) &&
	$CE import --change "CMD [\"/bin/bash\"]" "$tar" "$DEB_IMG" >/dev/null
'

# Containers skiff must never touch: a bystander, and two in a pool of existing ones.
test_expect_success 'a bystander container and a pool of two existing containers run' '
	$CE run -d --name bystander --label skiff.managed=1 --label skiff.cluster=pc \
		"$BB_IMG" sleep 100000 >/dev/null &&
	$CE run -d --name ex-b --label skiff.pool=pool1 "$BB_IMG" sleep 100000 >/dev/null &&
	$CE run -d --name ex-a --label skiff.pool=pool1 "$BB_IMG" sleep 100000 >/dev/null &&
	test "$(ctr_names status=running)" = "bystander ex-a ex-b "
'

# ---- 1. a gang on containers started from the busybox image ---------------------------

mkdir -p "$TRASH/wd/sub"
echo payload >"$TRASH/wd/data.txt"
echo nested >"$TRASH/wd/sub/n.txt"
echo nope >"$TRASH/wd/skip.log"
echo "*.log" >"$TRASH/wd/.gitignore"
cat >"$TRASH/gang.yaml" <<EOF
name: gang
num_nodes: 2
workdir: ./wd
resources:
  image_id: docker:$BB_IMG
envs:
  HOSTILE: "it's \"q\" \$(touch pwned) \`touch pwned2\`"
setup: |
  echo "setup on \$(hostname)" >~/setup-marker
run: |
  echo "rank=\$SKYPILOT_NODE_RANK host=\$(hostname) ips=\$(echo \$SKYPILOT_NODE_IPS | tr ' ' ,) n=\$SKYPILOT_NUM_NODES"
  echo "rank=\$SKYPILOT_NODE_RANK pid1=\$(tr '\\0' ' ' </proc/1/cmdline) bash=\${BASH_VERSION:-none} libc=\$(test -e /lib && echo yes || echo no)"
  echo "rank=\$SKYPILOT_NODE_RANK \$(cat data.txt sub/n.txt | tr '\\n' ' ')\$(test -e skip.log && echo LEAK)"
  printf '%s' "\$HOSTILE" >~/hostile.out
EOF

test_expect_success 'launch a 2-node gang from the busybox image: skiff init is PID 1' '
	t0=$(now) &&
	{ skiff launch -c pc --infra $ENGINE --num-nodes 2 gang.yaml >out 2>err; rc=$?; } &&
	secs_since $t0 >"$TRASH/launch.s" &&
	cat err out &&
	test $rc = 0 &&
	grep -q "nodes .*2 node(s) on $ENGINE: $(ctr_addr skiff-pc-0), " err &&
	for r in 0 1; do
		p="$(rank_prefix_re $r "$(ctr_addr skiff-pc-$r)") rank=$r" &&
		grep -qx "$p host=skiff-pc-$r ips=$(ctr_addr skiff-pc-0),$(ctr_addr skiff-pc-1) n=2" out &&
		grep -qx "$p pid1=/opt/skiff/bin/skiff init  bash=none libc=no" out &&
		grep -qx "$p payload nested " out || { echo "rank $r"; exit 1; }
	done &&
	grep -q "^skiff: job 1 finished (status: SUCCEEDED)\$" err
'
[ -s "$TRASH/launch.s" ] && echo "# launch of 2 new busybox containers (run, copy, sync, job):" \
	"$(cat "$TRASH/launch.s") s"

test_expect_success 'the containers carry skiff labels; env and setup arrived verbatim' '
	test "$(ctr_names label=skiff.managed=1 label=skiff.cluster=pc)" = \
		"bystander skiff-pc-0 skiff-pc-1 " &&
	test "$($CE inspect --format "{{index .Config.Labels \"skiff.launcher\"}}" skiff-pc-0 |
		wc -c)" = 17 &&
	printf "%s" "it'"'"'s \"q\" \$(touch pwned) \`touch pwned2\`" >want &&
	for c in skiff-pc-0 skiff-pc-1; do
		$CE exec $c cat /root/hostile.out >got && cmp want got &&
		test "$($CE exec $c cat /root/setup-marker)" = "setup on $c" &&
		! $CE exec $c sh -c "ls -a /root /root/sky_workdir" | grep -q pwned ||
			{ echo $c; exit 1; }
	done
'

# exec brings no workdir, and runs where launch synced one, as SkyPilot's job script does
# (`cd ~/sky_workdir`, sky/backends/backend_utils.py make_task_bash_script).
test_expect_success 'exec, queue and logs on the container cluster' '
	skiff exec pc "echo exec on \$(hostname) in \$PWD" >out 2>err &&
	cat out err &&
	test "$(cat out)" = "exec on skiff-pc-0 in /root/sky_workdir" &&
	skiff queue pc --json >q.json &&
	test "$(json "[(j[\"id\"], j[\"status\"]) for j in d]" q.json)" = \
		"[[1, \"SUCCEEDED\"], [2, \"SUCCEEDED\"]]" &&
	skiff logs pc 1 >out 2>err &&
	grep -qx "(worker1, rank=1, pid=[0-9]*, ip=$(ctr_addr skiff-pc-1)) rank=1 payload nested " out &&
	skiff logs pc --status >st && grep -qx "Job [0-9]*: SUCCEEDED" st
'

test_expect_success 'cancel of a running 2-node job stops it in both containers' '
	skiff exec -d --num-nodes 2 pc "sleep 7000.$$" 2>/dev/null &&
	wait_for "$CE exec skiff-pc-0 ps | grep -q \"sleep 7000.$$\" &&
		$CE exec skiff-pc-1 ps | grep -q \"sleep 7000.$$\"" 20 &&
	skiff cancel pc >out && grep -qx "cancelled job [0-9]* on cluster pc" out &&
	wait_for "! $CE exec skiff-pc-0 ps | grep -q \"sleep 7000.$$\" &&
		! $CE exec skiff-pc-1 ps | grep -q \"sleep 7000.$$\"" 20 &&
	expect_fail 103 skiff logs pc --status >st && grep -qx "Job [0-9]*: CANCELLED" st
'

test_expect_success 'stop stops the containers skiff started; start brings them back' '
	skiff queue --json pc | jobs_seen >q.before &&
	echo "$(ctr_addr skiff-pc-0) $(ctr_addr skiff-pc-1)" >addr.before &&
	skiff stop pc >out && grep -qx "cluster pc stopped" out &&
	for i in 0 1; do
		test "$($CE inspect -f "{{.State.Status}}" skiff-pc-$i)" = exited || exit 1
	done &&
	skiff status >st && grep -q "^pc .* STOPPED" st &&
	skiff start pc >out && grep -qx "cluster pc started" out &&
	$CE exec skiff-pc-1 ps | grep -q __supervisor &&
	test "$(skiff exec pc "echo back")" = back &&
	# The nodes kept their state (the queue), and the ranks see the current addresses, in
	# rank order, as the engine gives them: on a network (CTR_NET) new ones, as the
	# engine allocates addresses serially, not the ones they had before the stop.
	skiff queue --json pc | jobs_seen >q.after && test -s q.before &&
	head -n "$(wc -l <q.before)" q.after | cmp - q.before &&
	skiff exec --num-nodes 2 pc "echo \$SKYPILOT_NODE_IPS" >ips &&
	echo "$(ctr_addr skiff-pc-0) $(ctr_addr skiff-pc-1)" >want &&
	cat addr.before want ips &&
	test "$(grep -c " $(cat want)\$" ips)" = 2 &&
	{ [ -z "${CTR_NET:-}" ] || ! cmp -s addr.before want ||
		{ echo "the engine gave the containers their old addresses again"; exit 1; }; } &&
	skiff status --json >st.json &&
	test "$(json "\" \".join(n[\"address\"] for n in d[0][\"nodes\"])" st.json)" = \
		"\"$(cat want)\""
'

# ---- 2. a container killed mid-job -----------------------------------------------------

test_expect_success 'a container killed mid-job: logs reports it within seconds' '
	skiff exec -d --num-nodes 2 pc "echo started; sleep 8000.$$" 2>/dev/null &&
	wait_for "$CE exec skiff-pc-1 ps | grep -q \"sleep 8000.$$\"" 20 &&
	a0=$(ctr_addr skiff-pc-0) && a1=$(ctr_addr skiff-pc-1) && echo "$a1" >"$TRASH/pc-1.addr" &&
	$CE kill skiff-pc-1 >/dev/null &&
	# kill returns once the signal is sent; the engine marks the container exited after.
	wait_for "test \"\$($CE inspect -f {{.State.Status}} skiff-pc-1)\" = exited" 20 &&
	t0=$(now) &&
	{ timeout 60 "$SKIFF_BIN" logs pc >out 2>err; rc=$?; } &&
	secs_since $t0 >"$TRASH/kill-logs.s" &&
	cat out err &&
	{ test $rc != 124 || { echo "logs hung until the timeout 60 guard"; exit 1; }; } &&
	test $rc = 100 &&
	grep -qx "(head, rank=0, pid=[0-9]*) started" out &&
	grep -q "skiff-pc-1 is not running (exited)" err &&
	grep -q "^skiff: error: node $a1 (rank 1): lost the connection" err &&
	grep -q "^skiff: job 6 finished (status: FAILED_DRIVER)\$" err
'

test_expect_success 'queue and status name the dead container; rank 0 was stopped' '
	t0=$(now) &&
	{ timeout 60 "$SKIFF_BIN" queue pc --json >q.json 2>err; rc=$?; } &&
	secs_since $t0 >"$TRASH/kill-queue.s" &&
	cat err &&
	test $rc = 4 &&
	grep -q "^skiff: error: node skiff-pc-1 ($(cat "$TRASH/pc-1.addr")): skiff-pc-1 is not running (exited)" err &&
	test "$(json "d[-1][\"status\"], d[-1][\"exit_codes\"][1]" q.json)" = "[\"FAILED_DRIVER\", null]" &&
	wait_for "! $CE exec skiff-pc-0 ps | grep -q \"sleep 8000.$$\"" 30 &&
	grep -q "job 6: rank 1 ended (node unreachable); stopping the other ranks" \
		"$SKIFF_HOME/gang.log"
'
[ -s "$TRASH/kill-logs.s" ] && echo "# killed container: logs reported it after" \
	"$(cat "$TRASH/kill-logs.s") s, queue after $(cat "$TRASH/kill-queue.s") s"

test_expect_success 'down removes the cluster containers (the dead one too), nothing else' '
	skiff down pc >out 2>err && cat err out &&
	grep -qx "cluster pc terminated" out &&
	test "$(ctr_names label=skiff.cluster=pc)" = "bystander " &&
	test "$(ctr_names status=running)" = "bystander ex-a ex-b " &&
	test "$(skiff status)" = "No existing clusters."
'

# ---- 2b. autostop ---------------------------------------------------------------------------
# An autostop minute lasts one second here (SKIFF_TEST_MINUTE_MS, docs/testing.md).

cat >"$TRASH/as.yaml" <<EOF
num_nodes: 2
resources:
  image_id: docker:$BB_IMG
run: echo "hi from \$(hostname)"
EOF

test_expect_success 'autostop: the head ends its own container; status stops the other' '
	SKIFF_TEST_MINUTE_MS=1000 skiff launch -c pa --infra $ENGINE -i 1 --wait-for jobs as.yaml >out 2>err &&
	grep -q "hi from skiff-pa-1" out &&
	# The cluster decides by itself: no skiff command runs while the head stops.
	wait_for "test \"\$($CE inspect -f {{.State.Status}} skiff-pa-0)\" = exited" 30 &&
	skiff status >st 2>err && cat st err &&
	grep -q "^pa .* STOPPED" st &&
	grep -q "cluster pa was stopped by autostop" err &&
	test "$($CE inspect -f "{{.State.Status}}" skiff-pa-1)" = exited
'

test_expect_success 'start brings the containers back; autodown removes them' '
	skiff start pa >out && grep -qx "cluster pa started" out &&
	test "$(skiff exec pa "echo back")" = back &&
	SKIFF_TEST_MINUTE_MS=1000 skiff autostop pa -i 1 --down --wait-for jobs >/dev/null &&
	wait_for "test \"\$($CE inspect -f {{.State.Status}} skiff-pa-0)\" = exited" 30 &&
	skiff status >st 2>err &&
	grep -q "cluster pa was torn down by autodown" err &&
	! grep -q "^pa " st &&
	test -z "$(ctr_names label=skiff.cluster=pa)"
'

test_expect_success 'autostop on a pool of existing containers stops only the supervisors' '
	SKIFF_TEST_MINUTE_MS=1000 skiff launch -c exa --infra $ENGINE/pool1 --num-nodes 2 -i 1 \
		--wait-for jobs true >/dev/null 2>&1 &&
	wait_for "skiff status 2>/dev/null | grep -q \"^exa .*STOPPED\"" 30 &&
	test "$(ctr_names status=running)" = "bystander ex-a ex-b " &&
	for c in ex-a ex-b; do
		$CE exec $c ps >ps && ! grep -q __supervisor ps || { cat ps; exit 1; }
	done &&
	skiff down exa >/dev/null
'

# ---- 2c. resource alternatives, setup on every node -----------------------------------------

cat >"$TRASH/fo.yaml" <<EOF
num_nodes: 2
resources:
  ordered:
    - image_id: docker:skiff-no-such-image:1
    - image_id: docker:$BB_IMG
run: echo "on \$(hostname)"
EOF

test_expect_success 'failover: an image the engine cannot run moves on to the next' '
	skiff launch -c pf --infra $ENGINE fo.yaml >out 2>err &&
	cat err &&
	grep -q "Trying resources 1 of 2" err &&
	grep -q "cannot start container skiff-pf-0 from image skiff-no-such-image:1" err &&
	grep -qx "(worker1, rank=1, pid=[0-9]*, ip=.*) on skiff-pf-1" out &&
	test "$(ctr_names label=skiff.cluster=pf)" = "skiff-pf-0 skiff-pf-1 "
'

test_expect_success 'setup runs in both containers; run in one' '
	cat >setup.yaml <<-\EOF &&
	setup: echo "setup $SKYPILOT_SETUP_NODE_RANK" >"$HOME/setup.out"
	run: echo run
	EOF
	skiff launch -c pf setup.yaml >out 2>err &&
	grep -q "its setup on all 2" err &&
	test "$(grep -c ") run\$" out)" = 1 &&
	test "$($CE exec skiff-pf-0 cat /root/setup.out)" = "setup 0" &&
	test "$($CE exec skiff-pf-1 cat /root/setup.out)" = "setup 1" &&
	skiff down pf >/dev/null
'

# ---- 3. a pool of existing containers ----------------------------------------------------

test_expect_success "$ENGINE/pool1: two existing containers, by name; down leaves them up" '
	skiff launch -c ex --infra $ENGINE/pool1 --num-nodes 2 \
		"echo \"rank \$SKYPILOT_NODE_RANK on \$(hostname)\"" >out 2>err &&
	cat err out &&
	grep -q "nodes .*2 node(s) on $ENGINE/pool1: $(ctr_addr ex-a), " err &&
	grep -qx "(head, rank=0, pid=[0-9]*) rank 0 on $($CE exec ex-a hostname)" out &&
	grep -qx "(worker1, rank=1, pid=[0-9]*, ip=$(ctr_addr ex-b)) rank 1 on $($CE exec ex-b hostname)" out &&
	expect_fail 1 skiff launch -c ex2 --infra $ENGINE/pool1 true >out 2>err &&
	grep -q "infra $ENGINE/pool1 has 2 running containers, 2 in use by other clusters; need 1" err &&
	skiff check --infra $ENGINE/pool1 >ck.txt && cat ck.txt &&
	grep -q "^    pool1 *ex-a *Up .* [^ ]*sk-busybox[^ ]* *ex$" ck.txt &&
	skiff check --json --infra $ENGINE >ck.json &&
	test "$(json "[(r[\"container\"], r[\"cluster\"]) for r in d[0][\"inventory\"][0][\"rows\"]]" ck.json)" = "[[\"ex-a\", \"ex\"], [\"ex-b\", \"ex\"]]" &&
	skiff down ex >/dev/null &&
	skiff check --json --infra $ENGINE >ck.json &&
	test "$(json "[r[\"cluster\"] for r in d[0][\"inventory\"][0][\"rows\"]]" ck.json)" = "[null, null]" &&
	test "$(ctr_names status=running)" = "bystander ex-a ex-b " &&
	for c in ex-a ex-b; do
		$CE exec $c ps >ps && cat ps && ! grep -q __supervisor ps || exit 1
	done
'

test_expect_success 'a container named by the pool, and a missing one' '
	skiff launch -c by --infra $ENGINE/ex-b "hostname" >out 2>err &&
	test "$(cat out)" = "$($CE exec ex-b hostname)" &&
	skiff down by >/dev/null &&
	expect_fail 1 skiff launch -c no --infra $ENGINE/nothere true 2>err &&
	grep -q "no running container is labelled skiff.pool=nothere, and none is named nothere" err &&
	test "$(skiff status)" = "No existing clusters."
'

# A pool's container outlives its clusters, as an SSH host does: down takes away what the
# cluster put there, and the container knows which launcher's cluster holds it.
other() { SKIFF_HOME=$TRASH/other "$SKIFF_BIN" "$@"; }
test_expect_success "$ENGINE/pool1: down removes the cluster's files; another launcher is refused a held container" '
	mkdir -p pw && echo mark-$$ >pw/marker.txt &&
	skiff launch -c exw --infra $ENGINE/pool1 --workdir pw "cat marker.txt" >out 2>err &&
	grep -qx "mark-$$" out &&
	$CE exec ex-a sh -c "cat ~/.skiff/holds" | grep -q " cluster=exw " &&
	rm -rf "$TRASH/other" && mkdir -m 700 "$TRASH/other" &&
	other launch -c ow --infra $ENGINE/pool1 hostname >out 2>err &&
	cat err out &&
	test "$(cat out)" = "$($CE exec ex-b hostname)" &&
	grep -q "cluster .exw. of [^ ]* (launcher [0-9a-f]*) holds this node" err &&
	expect_fail 1 other launch -c ow2 --infra $ENGINE/pool1 true >out 2>err &&
	cat err &&
	grep -q "infra $ENGINE/pool1 has 2 running containers, 1 held by another launcher.s cluster, 1 in use by other clusters; need 1" err &&
	other down ow >/dev/null &&
	skiff down exw >/dev/null &&
	for c in ex-a ex-b; do
		$CE exec $c sh -c "ls ~/sky_workdir 2>&1; cat ~/.skiff/holds" >left &&
		cat left && ! grep -q "marker\|cluster=" left || exit 1
	done &&
	test "$(other status)" = "No existing clusters." &&
	test "$(skiff status)" = "No existing clusters."
'

# ---- 4. a Debian minbase image -----------------------------------------------------------

test_expect_success 'a Debian minbase container: the same skiff, bash there' '
	cat >deb.yaml <<-EOF &&
	resources:
	  infra: $ENGINE
	  image_id: docker:$DEB_IMG
	run: echo "debian \$(cat /etc/debian_version) bash=\${BASH_VERSION:+yes} pid1=\$(tr "\\\\0" " " </proc/1/cmdline)"
	EOF
	skiff launch -c deb deb.yaml >out 2>err && cat err out &&
	grep -qx "debian 12\.[0-9]* bash=yes pid1=/opt/skiff/bin/skiff init " out &&
	skiff down deb >/dev/null &&
	test -z "$(ctr_names label=skiff.cluster=deb)"
'

test_expect_success 'nothing of skiff is left; the bystander and the pool still run' '
	test "$(skiff status)" = "No existing clusters." &&
	test "$(ctr_names)" = "bystander ex-a ex-b " &&
	test "$(ctr_names status=running)" = "bystander ex-a ex-b "
'
