#!/bin/sh
# The container infra on real, rootful Podman (runc, every podman file under $TRASH, the
# settings in docs/infra-podman.md): a 2-node cluster of containers started from a busybox
# image (no bash, no python, no libc) with `skiff init` as PID 1; a gang job with a
# workdir; exec, queue, logs, cancel; a container killed mid-job; down removing only
# what skiff started; a pool of existing containers (podman/POOL); a Debian minbase image
# (debootstrap, cached in /var/cache/skiff-test). Root only (skipped otherwise, a failure
# in CI).
. "$(dirname "$0")/lib.sh"

# The ids and statuses of a cluster's jobs, from `queue --json` on stdin.
jobs_seen() {
	python3 -c "import json, sys; [print(j[\"id\"], j[\"status\"]) for j in json.load(sys.stdin)]"
}

test_skip_unless_root
# The containers (busybox: no libc) run the launcher's own binary, which must be the
# static one. Under make test-asan SKIFF_BIN is the ASan build: this test then drives the
# containers with the static build beside it (SKIFF_STATIC_BIN) instead of skipping, so
# the launcher here is not the sanitizer build.
[ -n "$SKIFF_STATIC_BIN" ] ||
	test_skip_all "containers need a static skiff, and $SKIFF_BIN is not one (run make)"
SKIFF_BIN=$SKIFF_STATIC_BIN

# ---- packages (as tests/lib/nodes.sh installs them: one lock, no services) -----------

PM_PKGS="podman runc busybox-static debootstrap"
pm_missing() {
	# shellcheck disable=SC2086
	_have=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' $PM_PKGS 2>/dev/null)
	for _p in $PM_PKGS; do
		printf '%s\n' "$_have" | grep -q "^ii  *$_p\$" || printf '%s ' "$_p"
	done
}
pm_install() {
	[ -n "$(pm_missing)" ] || return 0
	_lock=/tmp/skiff-testnodes.lock.apt
	[ ! -d /run/lock ] || _lock=/run/lock/skiff-testnodes.lock.apt
	(
		flock -w 900 8 || exit 1
		_m=$(pm_missing)
		[ -n "$_m" ] || exit 0
		_pol=
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d &&
				chmod 755 /usr/sbin/policy-rc.d && _pol=1
		fi
		# shellcheck disable=SC2086
		_apt() {
			DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=600 \
				-o Dpkg::Use-Pty=0 install --no-install-recommends $_m
		}
		_apt || { apt-get -q -o DPkg::Lock::Timeout=600 update && _apt; }
		_rc=$?
		[ -z "$_pol" ] || rm -f /usr/sbin/policy-rc.d
		exit $_rc
	) 8>>"$_lock" >"$TRASH/apt.log" 2>&1 || { tail -n 15 "$TRASH/apt.log"; return 1; }
	[ -z "$(pm_missing)" ]
}
pm_install || { echo "Bail out! cannot install $PM_PKGS"; exit 1; }
command -v python3 >/dev/null || test_skip_all "needs python3 to read the --json outputs"

# ---- podman with private state (docs/infra-podman.md, Testing) ------------------------

PM=$TRASH/pm
# shellcheck source=tests/lib/podman.sh
. "$SRC_DIR/tests/lib/podman.sh"
podman_private "$PM" || { echo "Bail out! cannot write the podman configs"; exit 1; }

# shellcheck disable=SC2034 # used in the test bodies (eval)
BB_IMG=localhost/sk-busybox:latest DEB_IMG=localhost/sk-debian:latest \
	DEB_CACHE=/var/cache/skiff-test/bookworm-minbase.tar

down_all() {
	for _c in $("$SKIFF_BIN" status --json 2>/dev/null | python3 -c \
		"import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		timeout 60 "$SKIFF_BIN" down "$_c" >/dev/null 2>&1
	done
}

test_cleanup_hook() {
	down_all
	for _p in /proc/[0-9]*; do
		{ tr '\0' '\n' <"$_p/cmdline" | grep -qx __gang; } 2>/dev/null || continue
		{ tr '\0' '\n' <"$_p/environ" | grep -qxF "SKIFF_HOME=$SKIFF_HOME"; } 2>/dev/null &&
			kill -KILL "${_p#/proc/}" 2>/dev/null
	done
	podman_private_down "$PM"
}

trap 'test_cleanup_hook; exit 1' INT TERM

# ctr_names FILTER...: names of the containers (all states) that podman ps filters give.
ctr_names() {
	_args=
	for _f; do _args="$_args --filter $_f"; done
	# shellcheck disable=SC2086
	podman ps -a $_args --format '{{.Names}}' | sort | tr '\n' ' '
}
json() {
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(($1)))" "$2"
}
now() { date +%s.%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# ---- images ---------------------------------------------------------------------------

# The busybox image of tests/lib/nodes.sh (section 2 of the test-infra notes): busybox and
# a link per applet, passwd/group with root, /dev nodes, /tmp 1777, /root. No /lib.
test_expect_success 'busybox image: built from busybox-static and imported' '
	R=$TRASH/bbroot &&
	busybox_image "$R" "$BB_IMG" &&
	test ! -e "$R/lib" && test ! -e "$R/bin/bash"
'

# A Debian minbase rootfs: debootstrap once (about 30 s and the Debian archive), then
# the tarball in /var/cache/skiff-test serves every later run.
test_expect_success 'debian minbase image: from the cache, or debootstrap once' '
	if [ ! -s "$DEB_CACHE" ]; then
		mkdir -p /var/cache/skiff-test &&
		D=/var/cache/skiff-test/minbase.$$ &&
		rm -rf "$D" &&
		{ debootstrap --variant=minbase bookworm "$D" http://deb.debian.org/debian \
			>"$TRASH/debootstrap.log" 2>&1 || { tail -n 20 "$TRASH/debootstrap.log"; exit 1; }; } &&
		tar -C "$D" -cf "$DEB_CACHE.$$" . && mv "$DEB_CACHE.$$" "$DEB_CACHE" && rm -rf "$D" ||
			exit 1
	fi &&
	podman import --change "CMD [\"/bin/bash\"]" "$DEB_CACHE" "$DEB_IMG" >/dev/null
'

# Containers skiff must never touch: a bystander, and two in a pool of existing ones.
test_expect_success 'a bystander container and a pool of two existing containers run' '
	podman run -d --name bystander --label skiff.managed=1 --label skiff.cluster=pc \
		"$BB_IMG" sleep 100000 >/dev/null &&
	podman run -d --name ex-b --label skiff.pool=pool1 "$BB_IMG" sleep 100000 >/dev/null &&
	podman run -d --name ex-a --label skiff.pool=pool1 "$BB_IMG" sleep 100000 >/dev/null &&
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
	{ skiff launch -c pc --infra podman --num-nodes 2 gang.yaml >out 2>err; rc=$?; } &&
	secs_since $t0 >"$TRASH/launch.s" &&
	cat err out &&
	test $rc = 0 &&
	grep -q "nodes .*2 node(s) on podman: skiff-pc-0, " err &&
	for r in 0 1; do
		p="(rank $r, skiff-pc-$r) rank=$r" &&
		grep -qx "$p host=skiff-pc-$r ips=skiff-pc-0,skiff-pc-1 n=2" out &&
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
	test "$(podman inspect --format "{{index .Config.Labels \"skiff.launcher\"}}" skiff-pc-0 |
		wc -c)" = 17 &&
	printf "%s" "it'"'"'s \"q\" \$(touch pwned) \`touch pwned2\`" >want &&
	for c in skiff-pc-0 skiff-pc-1; do
		podman exec $c cat /root/hostile.out >got && cmp want got &&
		test "$(podman exec $c cat /root/setup-marker)" = "setup on $c" &&
		! podman exec $c sh -c "ls -a /root /root/sky_workdir" | grep -q pwned ||
			{ echo $c; exit 1; }
	done
'

test_expect_success 'exec, queue and logs on the container cluster' '
	skiff exec pc "echo exec on \$(hostname) in \$PWD" >out 2>err &&
	cat out err &&
	test "$(cat out)" = "exec on skiff-pc-0 in /root" &&
	skiff queue pc --json >q.json &&
	test "$(json "[(j[\"id\"], j[\"status\"]) for j in d]" q.json)" = \
		"[[1, \"SUCCEEDED\"], [2, \"SUCCEEDED\"]]" &&
	skiff logs pc 1 >out 2>err && grep -qx "(rank 1, skiff-pc-1) rank=1 payload nested " out &&
	skiff logs pc --status >st && grep -qx "Job [0-9]*: SUCCEEDED" st
'

test_expect_success 'cancel of a running 2-node job stops it in both containers' '
	skiff exec -d --num-nodes 2 pc "sleep 7000.$$" 2>/dev/null &&
	wait_for "podman exec skiff-pc-0 ps | grep -q \"sleep 7000.$$\" &&
		podman exec skiff-pc-1 ps | grep -q \"sleep 7000.$$\"" 20 &&
	skiff cancel pc >out && grep -qx "cancelled job [0-9]* on cluster pc" out &&
	wait_for "! podman exec skiff-pc-0 ps | grep -q \"sleep 7000.$$\" &&
		! podman exec skiff-pc-1 ps | grep -q \"sleep 7000.$$\"" 20 &&
	expect_fail 103 skiff logs pc --status >st && grep -qx "Job [0-9]*: CANCELLED" st
'

test_expect_success 'stop stops the containers skiff started; start brings them back' '
	skiff queue --json pc | jobs_seen >q.before &&
	skiff stop pc >out && grep -qx "cluster pc stopped" out &&
	for i in 0 1; do
		test "$(podman inspect -f "{{.State.Status}}" skiff-pc-$i)" = exited || exit 1
	done &&
	skiff status >st && grep -q "^pc .* STOPPED" st &&
	skiff start pc >out && grep -qx "cluster pc started" out &&
	podman exec skiff-pc-1 ps | grep -q __supervisor &&
	test "$(skiff exec pc "echo back")" = back &&
	# The nodes kept their state (the queue), and the ranks see the current addresses.
	skiff queue --json pc | jobs_seen >q.after && test -s q.before && cmp q.before q.after &&
	skiff exec --num-nodes 2 pc "echo \$SKYPILOT_NODE_IPS" >ips &&
	skiff status --json | python3 -c "import json, sys
c = [c for c in json.load(sys.stdin) if c[\"name\"] == \"pc\"][0]
print(\" \".join(n[\"ip\"] for n in c[\"nodes\"]))" >want &&
	test "$(grep -c " $(cat want)\$" ips)" = 2
'

# ---- 2. a container killed mid-job -----------------------------------------------------

test_expect_success 'a container killed mid-job: logs reports it within seconds' '
	skiff exec -d --num-nodes 2 pc "echo started; sleep 8000.$$" 2>/dev/null &&
	wait_for "podman exec skiff-pc-1 ps | grep -q \"sleep 8000.$$\"" 20 &&
	podman kill skiff-pc-1 >/dev/null &&
	# kill returns once the signal is sent; the engine marks the container exited after.
	wait_for "test \"\$(podman inspect -f {{.State.Status}} skiff-pc-1)\" = exited" 20 &&
	t0=$(now) &&
	{ timeout 60 "$SKIFF_BIN" logs pc >out 2>err; rc=$?; } &&
	secs_since $t0 >"$TRASH/kill-logs.s" &&
	cat out err &&
	{ test $rc != 124 || { echo "logs hung until the timeout 60 guard"; exit 1; }; } &&
	test $rc = 100 &&
	grep -qx "(rank 0, skiff-pc-0) started" out &&
	grep -q "skiff-pc-1 is not running (exited)" err &&
	grep -q "^skiff: error: node skiff-pc-1 (rank 1): lost the connection" err &&
	grep -q "^skiff: job 6 finished (status: FAILED_DRIVER)\$" err
'

test_expect_success 'queue and status name the dead container; rank 0 was stopped' '
	t0=$(now) &&
	{ timeout 60 "$SKIFF_BIN" queue pc --json >q.json 2>err; rc=$?; } &&
	secs_since $t0 >"$TRASH/kill-queue.s" &&
	cat err &&
	test $rc = 4 &&
	grep -q "^skiff: error: node skiff-pc-1 (skiff-pc-1): skiff-pc-1 is not running (exited)" err &&
	test "$(json "d[-1][\"status\"], d[-1][\"exit_codes\"][1]" q.json)" = "[\"FAILED_DRIVER\", null]" &&
	wait_for "! podman exec skiff-pc-0 ps | grep -q \"sleep 8000.$$\"" 30 &&
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
	SKIFF_TEST_MINUTE_MS=1000 skiff launch -c pa --infra podman -i 1 --wait-for jobs as.yaml >out 2>err &&
	grep -q "hi from skiff-pa-1" out &&
	# The cluster decides by itself: no skiff command runs while the head stops.
	wait_for "test \"\$(podman inspect -f {{.State.Status}} skiff-pa-0)\" = exited" 30 &&
	skiff status >st 2>err && cat st err &&
	grep -q "^pa .* STOPPED" st &&
	grep -q "cluster pa was stopped by autostop" err &&
	test "$(podman inspect -f "{{.State.Status}}" skiff-pa-1)" = exited
'

test_expect_success 'start brings the containers back; autodown removes them' '
	skiff start pa >out && grep -qx "cluster pa started" out &&
	test "$(skiff exec pa "echo back")" = back &&
	SKIFF_TEST_MINUTE_MS=1000 skiff autostop pa -i 1 --down --wait-for jobs >/dev/null &&
	wait_for "test \"\$(podman inspect -f {{.State.Status}} skiff-pa-0)\" = exited" 30 &&
	skiff status >st 2>err &&
	grep -q "cluster pa was torn down by autodown" err &&
	! grep -q "^pa " st &&
	test -z "$(ctr_names label=skiff.cluster=pa)"
'

test_expect_success 'autostop on a pool of existing containers stops only the supervisors' '
	SKIFF_TEST_MINUTE_MS=1000 skiff launch -c exa --infra podman/pool1 --num-nodes 2 -i 1 \
		--wait-for jobs true >/dev/null 2>&1 &&
	wait_for "skiff status 2>/dev/null | grep -q \"^exa .*STOPPED\"" 30 &&
	test "$(ctr_names status=running)" = "bystander ex-a ex-b " &&
	for c in ex-a ex-b; do
		podman exec $c ps >ps && ! grep -q __supervisor ps || { cat ps; exit 1; }
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
	skiff launch -c pf --infra podman fo.yaml >out 2>err &&
	cat err &&
	grep -q "Trying resources 1 of 2" err &&
	grep -q "cannot start container skiff-pf-0 from image skiff-no-such-image:1" err &&
	grep -qx "(rank 1, .*) on skiff-pf-1" out &&
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
	test "$(podman exec skiff-pf-0 cat /root/setup.out)" = "setup 0" &&
	test "$(podman exec skiff-pf-1 cat /root/setup.out)" = "setup 1" &&
	skiff down pf >/dev/null
'

# ---- 3. a pool of existing containers ----------------------------------------------------

test_expect_success 'podman/pool1: two existing containers, by name; down leaves them up' '
	skiff launch -c ex --infra podman/pool1 --num-nodes 2 \
		"echo \"rank \$SKYPILOT_NODE_RANK on \$(hostname)\"" >out 2>err &&
	cat err out &&
	grep -q "nodes .*2 node(s) on podman/pool1: ex-a, " err &&
	grep -qx "(rank 0, ex-a) rank 0 on $(podman exec ex-a hostname)" out &&
	grep -qx "(rank 1, ex-b) rank 1 on $(podman exec ex-b hostname)" out &&
	expect_fail 1 skiff launch -c ex2 --infra podman/pool1 true >out 2>err &&
	grep -q "infra podman/pool1 has 2 running containers, 2 in use by other clusters; need 1" err &&
	skiff down ex >/dev/null &&
	test "$(ctr_names status=running)" = "bystander ex-a ex-b " &&
	for c in ex-a ex-b; do
		podman exec $c ps >ps && cat ps && ! grep -q __supervisor ps || exit 1
	done
'

test_expect_success 'a container named by the pool, and a missing one' '
	skiff launch -c by --infra podman/ex-b "hostname" >out 2>err &&
	test "$(cat out)" = "$(podman exec ex-b hostname)" &&
	skiff down by >/dev/null &&
	expect_fail 1 skiff launch -c no --infra podman/nothere true 2>err &&
	grep -q "no running container is labelled skiff.pool=nothere, and none is named nothere" err &&
	test "$(skiff status)" = "No existing clusters."
'

# ---- 4. a Debian minbase image -----------------------------------------------------------

test_expect_success 'a Debian minbase container: the same skiff, bash there' '
	cat >deb.yaml <<-EOF &&
	resources:
	  infra: podman
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

test_done
