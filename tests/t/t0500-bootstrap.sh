#!/bin/sh
# The ssh runner and the self-copy bootstrap against real sshd nodes (tests/lib/nodes.sh):
# tn1 and tn3 are namespace nodes, tn2 is the busybox-only chroot (no bash, no libc).
# Install (copy, then no copy), the supervisor answering over ssh, a job and its logs,
# hostile script text over ssh, a script's own exit 255, truncated and altered copies, a
# partitioned node, and an upgrade in place under a running job. Root only (skipped
# otherwise, a failure in CI); the same scenarios without root are in t0510.
#
# Driven through the internal test helper `skiff __runner-test` (cmd/runner_test.c).
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

nodes_require_root
nodes_install_deps || { echo "Bail out! cannot install the packages the test nodes need"; exit 1; }

# The runner's ControlPath sockets, under NODES_DIR (short, and nodes_down kills any ssh
# naming it).
CDIR=$NODES_DIR/cm

# The busybox node tn2 has no libc: only a static skiff runs there, so tn2 is driven by
# SKIFF_STATIC_BIN: SKIFF_BIN itself under make test; under make test-asan, the static
# build beside the ASan one, while tn1 and tn3 get the ASan build. SHA and SIZE are those
# of the binary a node gets; a test body sets them for its node (node_sha, node_size).
[ -n "$SKIFF_STATIC_BIN" ] ||
	test_skip_all "the busybox node needs a static skiff, and $SKIFF_BIN is not one (run make)"
node_bin() {
	if [ "$1" = 2 ]; then echo "$SKIFF_STATIC_BIN"; else echo "$SKIFF_BIN"; fi
}
node_sha() { sha256sum <"$(node_bin "$1")" | cut -d" " -f1; }
node_size() { wc -c <"$(node_bin "$1")" | tr -d " "; }

node_user() {
	if [ "$1" = 2 ]; then echo "$NODES_BB_USER"; else echo "$NODES_USER"; fi
}

# rt I ACTION...: the runner test helper on node tnI, with the pool's key and user.
rt() {
	_ri=$1
	shift
	"$(node_bin "$_ri")" __runner-test --ssh "$(nodes_ip "$_ri")" --name "tn$_ri" --user "$(node_user "$_ri")" \
		--identity "$NODES_KEY" --control-dir "$CDIR" "$@"
}

# kv KEY FILE: the value of KEY=VALUE in the helper's install line.
kv() {
	awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1)
		print substr($i, length(k) + 2) }' "$2"
}

ms_since() {
	awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", (b - a) * 1000 }'
}

# What is in the node's bin dir besides the binaries and the symlink (temp files).
bin_leftovers() {
	nodes_ssh "$1" 'ls -A "$HOME/.skiff/bin" 2>/dev/null' | grep -v "^skiff-[0-9a-f]*\$" |
		grep -vx skiff
}

# job_status I ID: job ID's status on tnI, asked through the runner.
job_status() {
	rt "$1" capture "$(kv remote_exe "$TRASH/inst$1") node logs $2 --status" </dev/null
}

test_cleanup_hook() {
	for _i in 1 2 3; do rt "$_i" close >/dev/null 2>&1; done
	nodes_down
}

test_expect_success 'nodes up: tn1, tn3 namespace nodes, tn2 busybox-only' '
	nodes_up 3 --busybox 2
'

test_expect_success 'the ssh runner runs a script on each node, as the node user' '
	for i in 1 2 3; do
		test "$(rt $i run "hostname; id -un" | tr "\\n" " ")" = "tn$i $(node_user $i) " ||
			exit 1
	done
'

for i in 1 2 3; do
	test_expect_success "tn$i: install copies the binary and starts the supervisor" '
		SHA=$(node_sha '$i') && SIZE=$(node_size '$i') &&
		t0=$(date +%s.%N) &&
		rt '$i' install >inst'$i' &&
		ms_since $t0 >"$TRASH/copy'$i'.ms" &&
		cat inst'$i' &&
		test "$(kv copied inst'$i')" = 1 &&
		test "$(kv sent inst'$i')" -gt 0 && test "$(kv sent inst'$i')" -lt "$SIZE" &&
		test "$(kv sup_started inst'$i')" = 1 &&
		test "$(nodes_ssh '$i' "sha256sum \"\$HOME/.skiff/bin/skiff-$SHA\"" | cut -d" " -f1)" = "$SHA" &&
		test "$(nodes_ssh '$i' "readlink \"\$HOME/.skiff/bin/skiff\"")" = "skiff-$SHA" &&
		test -z "$(bin_leftovers '$i')" &&
		nodes_ssh '$i' "stat -c \"%i %Y\" \"\$HOME/.skiff/bin/skiff-$SHA\"" >"$TRASH/ls'$i'"
	'
	test_expect_success "tn$i: install again sends nothing and keeps the supervisor" '
		SHA=$(node_sha '$i') &&
		t0=$(date +%s.%N) &&
		rt '$i' install >again'$i' &&
		ms_since $t0 >"$TRASH/nocopy'$i'.ms" &&
		cat again'$i' &&
		test "$(kv copied again'$i')" = 0 &&
		test "$(kv sent again'$i')" = 0 &&
		test "$(kv sup_started again'$i')" = 0 &&
		test "$(kv sup_pid again'$i')" = "$(kv sup_pid inst'$i')" &&
		nodes_ssh '$i' "stat -c \"%i %Y\" \"\$HOME/.skiff/bin/skiff-$SHA\"" >ls &&
		test_cmp "$TRASH/ls'$i'" ls
	'
	[ -s "$TRASH/copy$i.ms" ] && echo "# tn$i install: $(cat "$TRASH/copy$i.ms") ms with the" \
		"copy (fresh connection + master), $(cat "$TRASH/nocopy$i.ms") ms without (via the master)"
done
test_expect_success 'over ssh, the install session carries one call (bytes sent ahead skipped)' '
	for i in 1 2; do
		rt $i install ping >call &&
		grep -qx "via=spare" call && grep -qx "ok=1" call &&
		grep -qx "sha256=$(node_sha $i)" call &&
		rt $i --has-skiff install ping >call &&
		grep -qx "via=spare" call && grep -qx "ok=1" call || { cat call; exit 1; }
	done
'

test_expect_success 'the supervisor answers on each node (skiff node status over plain ssh)' '
	for i in 1 2 3; do
		SHA=$(node_sha $i) &&
			nodes_ssh $i "\"\$HOME/.skiff/bin/skiff-$SHA\" node status" >st$i || exit 1
		grep -q "running (pid $(kv sup_pid inst$i)," st$i || { cat st$i; exit 1; }
	done
'

test_expect_success 'tn2 has no libc, yet the binary runs there' '
	SHA=$(node_sha 2) &&
	test "$(nodes_ssh 2 "ls /lib /lib64 /usr/lib 2>/dev/null | wc -l")" = 0 &&
	! nodes_ssh 2 "command -v bash || command -v python3" &&
	nodes_ssh 2 "\"\$HOME/.skiff/bin/skiff-$SHA\" version" >v &&
	grep -q "^skiff " v
'

test_expect_success 'a job submitted through the runner runs, and its logs come back' '
	for i in 1 2 3; do
		exe=$(kv remote_exe inst$i) &&
		id=$(rt $i capture "$exe node submit '\''echo \"hello from \$(hostname)\"'\''" \
			</dev/null) &&
		rt $i capture "$exe node logs $id" </dev/null >logs$i &&
		grep -qx "hello from tn$i" logs$i || { cat logs$i; exit 1; }
	done
'

# A script full of quotes, substitutions that must not run, newlines and non-UTF-8 bytes.
cat >"$TRASH/hostile.sh" <<'EOF'
printf '%s|' "it's" '$(touch pwned)' '`touch pwned`' "`echo back`" 'a\nb' "$(printf 'x\ny')"
printf '%s|' '"' '\' '*' ';&|<>' "two  spaces" '	tab' '' "'" "''"
EOF
printf "printf '%%s|' '\\377\\376 non-UTF-8 \\200'\n" >>"$TRASH/hostile.sh"

test_expect_success 'hostile script text reaches dash and busybox sh over ssh unchanged' '
	sh "$TRASH/hostile.sh" >want &&
	grep -q "non-UTF-8" want &&
	for i in 1 2; do
		rt $i capture "$(cat "$TRASH/hostile.sh")" </dev/null >got$i &&
		cmp want got$i || exit 1
		test "$(nodes_ssh $i "ls pwned 2>/dev/null | wc -l")" = 0 || exit 1
	done
'

test_expect_success 'data on stdin arrives byte for byte (ssh -T)' '
	head -c 300000 /dev/urandom >data &&
	for i in 1 2; do
		rt $i capture "cat" <data >back$i && cmp data back$i || exit 1
	done
'

test_expect_success 'a script that exits 255 itself is not a transport failure' '
	expect_fail 255 rt 1 run "echo out; exit 255" >out 2>err &&
	grep -qx out out &&
	! grep -q "error" err
'

test_expect_success 'an ssh_config (-F) with host aliases works too' '
	test "$(skiff __runner-test --ssh tn3 --ssh-config "$NODES_SSH_CONFIG" \
		--control-dir "$CDIR" run hostname)" = tn3
'

# A shell script that leaves a mark when it runs, padded to SIZE bytes (or cut shorter).
impostor() {
	{
		printf "#!/bin/sh\n: >\"\$HOME/EXECUTED\"\nexit 0\n"
		head -c "$SIZE" /dev/zero | tr "\\0" "#"
	} | head -c "$1" >"$2"
}

test_expect_success 'a truncated copy is refused and never takes the final name (tn1, tn2)' '
	for i in 1 2; do
		SIZE=$(node_size $i) && head -c 1000000 "$(node_bin $i)" >short &&
		# Without the installed copy for a while (its supervisor runs on).
		nodes_ssh $i "mv \"\$HOME/.skiff/bin\" \"\$HOME/.skiff/bin.keep\"" &&
		expect_fail 1 rt $i send short 2>err || exit 1
		grep -q "node tn$i ($(nodes_ip $i)): cannot install skiff: received 1000000 of $SIZE bytes" err ||
			{ cat err; exit 1; }
		test "$(nodes_ssh $i "ls -A \"\$HOME/.skiff/bin\" | wc -l")" = 0 || exit 1
		nodes_ssh $i "rm -r \"\$HOME/.skiff/bin\" &&
			mv \"\$HOME/.skiff/bin.keep\" \"\$HOME/.skiff/bin\"" || exit 1
	done
'

test_expect_success 'an impostor is never run: sha256sum refuses it; the size check comes first' '
	for i in 1 2; do
		SIZE=$(node_size $i) && impostor "$SIZE" imp && impostor 7000 imp-short || exit 1
		expect_fail 1 rt $i send imp 2>err || exit 1
		grep -q "sha256 mismatch" err || { cat err; exit 1; }
		expect_fail 1 rt $i --no-sha256sum send imp-short 2>err || exit 1
		grep -q "received 7000 of $SIZE bytes" err || { cat err; exit 1; }
		test "$(nodes_ssh $i "ls -A \"\$HOME\" | grep -c EXECUTED")" = 0 || exit 1
		test -z "$(bin_leftovers $i)" || exit 1
	done
'

test_expect_success 'busybox node without sha256sum: __verify-self refuses an altered binary' '
	SIZE=$(node_size 2) &&
	head -c $((SIZE - 1)) "$SKIFF_STATIC_BIN" >bad && printf "\\001" >>bad &&
	expect_fail 1 rt 2 --no-sha256sum send bad 2>err &&
	grep -q "the received binary failed its self-check" err &&
	test -z "$(bin_leftovers 2)" &&
	rt 2 --no-sha256sum send "$SKIFF_STATIC_BIN" >ok &&
	test "$(kv copied ok)" = 1 &&
	test "$(kv sup_started ok)" = 0 &&
	test -z "$(bin_leftovers 2)"
'

test_expect_success 'a partitioned node fails by itself, with an error naming it' '
	rt 3 run true &&
	nodes_partition 3 &&
	t0=$(date +%s.%N) &&
	{ timeout 30 sh -c "\"$SKIFF_BIN\" __runner-test --ssh $(nodes_ip 3) --name tn3 \
		--user $NODES_USER --identity $NODES_KEY --control-dir $CDIR install" >out 2>err
	  rc=$?; } &&
	ms_since $t0 >"$TRASH/partition.ms" &&
	nodes_heal 3 &&
	cat err &&
	{ test $rc != 124 || { echo "hung until the timeout 30 guard"; exit 1; }; } &&
	test $rc = 4 &&
	# ssh says it when it connects anew; skiff when the master it asked lost the node.
	grep -Eq "^skiff: error: node tn3 \(10\.200\.0\.13\): .*(ssh: connect to host 10\.200\.0\.13 port 22|no answer from the node)" err &&
	test "$(wc -l <err)" = 1 &&
	wait_for "rt 3 run true 2>/dev/null" 30 &&
	rt 3 install >inst3b && test "$(kv copied inst3b)" = 0
'
[ -s "$TRASH/partition.ms" ] && echo "# partitioned tn3 (live master) failed after" \
	"$(cat "$TRASH/partition.ms") ms"

test_expect_success 'upgrade in place: a different binary replaces the supervisor; jobs run on' '
	for i in 1 2 3; do
		B=$TRASH/skiff-B$i &&
		cp "$(node_bin $i)" "$B" && printf "\n" >>"$B" && chmod 755 "$B" &&
		SHA_B=$(sha256sum <"$B" | cut -d" " -f1) &&
		"$B" version >/dev/null &&
		exe=$(kv remote_exe inst$i) &&
		old=$(kv sup_pid inst$i) &&
		id=$(rt $i capture "$exe node submit -n long \
			'\''while [ ! -e \"\$HOME/go\" ]; do sleep 0.05; done; echo finished'\''" \
			</dev/null) &&
		wait_for "test \"\$(job_status $i $id)\" = RUNNING" &&
		"$B" __runner-test --ssh "$(nodes_ip $i)" --name tn$i --user "$(node_user $i)" \
			--identity "$NODES_KEY" --control-dir "$CDIR" install >up$i &&
		cat up$i &&
		test "$(kv copied up$i)" = 1 && test "$(kv sup_started up$i)" = 1 &&
		new=$(kv sup_pid up$i) &&
		test "$new" != "$old" &&
		test "$(nodes_ssh $i "sha256sum /proc/$new/exe" | cut -d" " -f1)" = "$SHA_B" &&
		test "$(job_status $i $id)" = RUNNING &&
		nodes_ssh $i ": >\"\$HOME/go\"" &&
		rt $i capture "$exe node logs $id" </dev/null >logs &&
		grep -qx finished logs &&
		test "$(job_status $i $id)" = SUCCEEDED &&
		nodes_ssh $i "grep -q \"1 running job(s) re-adopted\" \"\$HOME/.skiff/supervisor.log\"" ||
			{ echo "tn$i failed"; exit 1; }
	done
'

test_expect_success 'closing the masters leaves no ssh behind' '
	for i in 1 2 3; do rt $i close || exit 1; done &&
	test -z "$(ls "$CDIR" | grep -v known_hosts)" &&
	! pgrep -f "$CDIR/" >/dev/null
'

test_done
