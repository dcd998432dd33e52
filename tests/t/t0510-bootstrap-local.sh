#!/bin/sh
# The self-copy bootstrap (bootstrap/launch/install.c) through the local runner: a node is a
# directory used as HOME. No root needed, so this runs everywhere; the same scenarios
# over real ssh, on namespace nodes and a busybox-only node, are in t0500-bootstrap.sh.
#
# Driven through the internal test helper `skiff __runner-test` (cmd/runner_test.c).
. "$(dirname "$0")/lib.sh"

SHA=$(sha256sum <"$SKIFF_BIN" | cut -d" " -f1)
SIZE=$(wc -c <"$SKIFF_BIN" | tr -d " ")
N1=$TRASH/node-1

# rtl HOME ACTION...: the runner test helper on the local node whose home is HOME.
rtl() {
	_rh=$1
	shift
	skiff __runner-test --local "$_rh" --name "loc-${_rh##*/}" "$@"
}

# kv KEY FILE: the value of KEY=VALUE in the helper's install line.
kv() {
	awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1)
		print substr($i, length(k) + 2) }' "$2"
}

# on_node HOME CMD...: run the node's skiff (the symlink to the current one) as the node.
on_node() {
	_oh=$1
	shift
	env -u SKIFF_HOME HOME="$_oh" "$_oh/.skiff/bin/skiff" "$@"
}

# No file but the binary and the symlink in the node's bin dir: no temp file left.
bin_clean() {
	_left=$(ls -A "$1/.skiff/bin" 2>/dev/null | grep -v "^skiff-[0-9a-f]*\$" | grep -vx skiff)
	test -z "$_left" || { echo "left in $1/.skiff/bin: $_left"; return 1; }
}

ms_since() {
	awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", (b - a) * 1000 }'
}

test_cleanup_hook() {
	for _h in "$TRASH"/node-* "$TRASH"/mnt/node-*; do
		[ -x "$_h/.skiff/bin/skiff" ] && on_node "$_h" node down >/dev/null 2>&1
	done
	! mountpoint -q "$TRASH/mnt" 2>/dev/null || umount -l "$TRASH/mnt"
	return 0
}

test_expect_success '__verify-self says whether the file is the one with that sha256' '
	skiff __verify-self "$SHA" &&
	expect_fail 1 skiff __verify-self 0000000000000000000000000000000000000000000000000000000000000000 2>err &&
	grep -q "sha256 is $SHA" err &&
	expect_fail 2 skiff __verify-self
'

test_expect_success 'install copies the binary and starts the supervisor' '
	t0=$(date +%s.%N) &&
	rtl "$N1" install >inst1 &&
	ms_since $t0 >"$TRASH/copy.ms" &&
	cat inst1 &&
	test "$(kv copied inst1)" = 1 &&
	# Compressed, through the stub (t0520): well under the size of the binary.
	test "$(kv sent inst1)" -gt 0 && test "$(kv sent inst1)" -lt "$SIZE" &&
	test "$(kv sup_started inst1)" = 1 &&
	test "$(kv remote_exe inst1)" = "\"\$HOME/.skiff/bin/skiff-$SHA\"" &&
	cmp "$SKIFF_BIN" "$N1/.skiff/bin/skiff-$SHA" &&
	test "$(stat -c %a "$N1/.skiff/bin/skiff-$SHA")" = 755 &&
	test "$(readlink "$N1/.skiff/bin/skiff")" = "skiff-$SHA" &&
	bin_clean "$N1" &&
	stat -c "%i %Y" "$N1/.skiff/bin/skiff-$SHA" >"$TRASH/inode1"
'

test_expect_success 'install again: nothing is sent, the running supervisor is kept' '
	t0=$(date +%s.%N) &&
	rtl "$N1" install >inst2 &&
	ms_since $t0 >"$TRASH/nocopy.ms" &&
	cat inst2 &&
	test "$(kv copied inst2)" = 0 &&
	test "$(kv sent inst2)" = 0 &&
	test "$(kv sup_started inst2)" = 0 &&
	test "$(kv sup_pid inst2)" = "$(kv sup_pid inst1)" &&
	stat -c "%i %Y" "$N1/.skiff/bin/skiff-$SHA" >inode2 &&
	test_cmp "$TRASH/inode1" inode2 &&
	bin_clean "$N1"
'
[ -s "$TRASH/copy.ms" ] && echo "# local install: $(cat "$TRASH/copy.ms") ms with the copy," \
	"$(cat "$TRASH/nocopy.ms") ms without"

test_expect_success 'the supervisor answers, and a job submitted through the runner runs' '
	exe=$(kv remote_exe inst1) &&
	rtl "$N1" capture "$exe node status" </dev/null >status &&
	grep -q "running (pid $(kv sup_pid inst1)," status &&
	id=$(rtl "$N1" capture "$exe node submit '\''echo \"hello from the job in \$HOME\"'\''" \
		</dev/null) &&
	rtl "$N1" capture "$exe node logs $id" </dev/null >logs &&
	grep -qx "hello from the job in $N1" logs
'

test_expect_success 'upgrade in place: a different binary replaces the supervisor; the job runs on' '
	B=$TRASH/skiff-B &&
	cp "$SKIFF_BIN" "$B" && printf "\n" >>"$B" && chmod 755 "$B" &&
	SHA_B=$(sha256sum <"$B" | cut -d" " -f1) &&
	test "$SHA_B" != "$SHA" &&
	"$B" version >/dev/null &&
	id=$(on_node "$N1" node submit -n long \
		"while [ ! -e \"\$HOME/go\" ]; do $(nap 0.05); done; echo finished") &&
	wait_for "test \"\$(on_node \"$N1\" node logs $id --status)\" = RUNNING" &&
	"$B" __runner-test --local "$N1" --name loc-1 install >instB &&
	cat instB &&
	test "$(kv copied instB)" = 1 &&
	test "$(kv sup_started instB)" = 1 &&
	new=$(kv sup_pid instB) &&
	test "$new" != "$(kv sup_pid inst1)" &&
	test "$(readlink "$N1/.skiff/bin/skiff")" = "skiff-$SHA_B" &&
	test "$(sha256sum </proc/$new/exe | cut -d" " -f1)" = "$SHA_B" &&
	test "$(on_node "$N1" node logs $id --status)" = RUNNING &&
	: >"$N1/go" &&
	on_node "$N1" node logs $id >logs &&
	grep -qx finished logs &&
	test "$(on_node "$N1" node logs $id --status)" = SUCCEEDED &&
	"$B" __runner-test --local "$N1" install >instB2 &&
	test "$(kv copied instB2)" = 0 && test "$(kv sup_pid instB2)" = "$new" &&
	grep -q "1 running job(s) re-adopted" "$N1/.skiff/supervisor.log"
'

test_expect_success 'a truncated copy is refused before it runs, and never takes the final name' '
	h=$TRASH/node-trunc &&
	head -c 100000 "$SKIFF_BIN" >short &&
	expect_fail 1 rtl "$h" send short 2>err &&
	cat err &&
	grep -q "node loc-node-trunc (127.0.0.1): cannot install skiff: received 100000 of $SIZE bytes" err &&
	! test -e "$h/.skiff/bin/skiff-$SHA" &&
	bin_clean "$h" &&
	rtl "$h" install >inst && test "$(kv copied inst)" = 1
'

# A shell script that leaves a mark when it runs, padded to SIZE bytes (or cut shorter).
impostor() {
	{
		printf "#!/bin/sh\n: >\"\$HOME/EXECUTED\"\nexit 0\n"
		head -c "$SIZE" /dev/zero | tr "\\0" "#"
	} | head -c "$1" >"$2"
}

test_expect_success 'a same-size impostor fails sha256sum and is never executed' '
	h=$TRASH/node-imp &&
	impostor "$SIZE" imp &&
	test "$(wc -c <imp)" = "$SIZE" &&
	expect_fail 1 rtl "$h" send imp 2>err &&
	grep -q "cannot install skiff: sha256 mismatch" err &&
	! test -e "$h/EXECUTED" &&
	! test -e "$h/.skiff/bin/skiff-$SHA" &&
	bin_clean "$h"
'

test_expect_success 'without sha256sum: the size check comes before anything runs' '
	h=$TRASH/node-imp2 &&
	impostor 5000 imp &&
	expect_fail 1 rtl "$h" --no-sha256sum send imp 2>err &&
	grep -q "received 5000 of $SIZE bytes" err &&
	! test -e "$h/EXECUTED" &&
	! test -e "$h/.skiff/bin/skiff-$SHA" &&
	bin_clean "$h"
'

test_expect_success 'without sha256sum: a corrupted same-size binary fails its own check' '
	h=$TRASH/node-bad &&
	head -c $((SIZE - 1)) "$SKIFF_BIN" >bad && printf "\\001" >>bad &&
	! cmp -s bad "$SKIFF_BIN" &&
	expect_fail 1 rtl "$h" --no-sha256sum send bad 2>err &&
	cat err &&
	grep -q "the received binary failed its self-check" err &&
	! test -e "$h/.skiff/bin/skiff-$SHA" &&
	bin_clean "$h" &&
	rtl "$h" --no-sha256sum send "$SKIFF_BIN" >ok &&
	test "$(kv copied ok)" = 1 && cmp "$SKIFF_BIN" "$h/.skiff/bin/skiff-$SHA"
'

test_expect_success 'the node-side scripts run under every POSIX shell here' '
	skiff __runner-test script probe >probe &&
	skiff __runner-test script copy >copy &&
	n=0 &&
	for sh in sh dash bash "bash --posix" "busybox sh"; do
		command -v "${sh%% *}" >/dev/null || { echo "# no $sh here"; continue; }
		h=$TRASH/node-sh-$(echo "$sh" | tr -c "a-z\\n" -) &&
		mkdir -p "$h" || exit 1
		# shellcheck disable=SC2086 # "busybox sh" is two words
		env -u SKIFF_HOME HOME="$h" $sh -c "$(cat probe)" </dev/null >out || exit 1
		grep -qx SKIFF-NEED-COPY out || { echo "$sh probe: $(cat out)"; exit 1; }
		head -c 4096 "$SKIFF_BIN" | env -u SKIFF_HOME HOME="$h" $sh -c "$(cat copy)" >out
		grep -q "SKIFF-COPY-FAILED: received 4096 of $SIZE bytes" out ||
			{ echo "$sh truncated: $(cat out)"; exit 1; }
		bin_clean "$h" || exit 1
		env -u SKIFF_HOME HOME="$h" $sh -c "$(cat copy)" <"$SKIFF_BIN" >out ||
			{ echo "$sh copy: $(cat out)"; exit 1; }
		node_up_said out >said && grep -qx started=1 said && grep -qx "pid=[0-9]*" said &&
			grep -qx "active=0" said || { echo "$sh: $(cat out)"; exit 1; }
		env -u SKIFF_HOME HOME="$h" $sh -c "$(cat probe)" </dev/null >out || exit 1
		node_up_said out >said && grep -qx started=0 said ||
			{ echo "$sh probe 2: $(cat out)"; exit 1; }
		bin_clean "$h" && on_node "$h" node down >/dev/null || exit 1
		n=$((n + 1))
	done &&
	test "$n" -ge 2
'

# ---- a launch: local nodes get the binary as hard links of one file ------------------------
SEED=$SKIFF_HOME/cache/self-$SHA
OTHER=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
OTHER2=fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210
ino() { stat -c %i "$1"; }

test_expect_success 'install --link: two nodes, one file (the seed), nothing sent' '
	# Images of other binaries: one no node links, one a node still does.
	mkdir -p "$SKIFF_HOME/cache" "$TRASH/elsewhere" &&
	printf old >"$SKIFF_HOME/cache/self-$OTHER" &&
	printf old >"$SKIFF_HOME/cache/self-$OTHER.9.zst" &&
	printf old >"$SKIFF_HOME/cache/self-$OTHER2" &&
	ln "$SKIFF_HOME/cache/self-$OTHER2" "$TRASH/elsewhere/skiff-$OTHER2" &&
	rtl "$TRASH/node-l1" --link install >l1 && cat l1 &&
	test "$(kv copied l1)" = 1 && test "$(kv linked l1)" = 1 && test "$(kv sent l1)" = 0 &&
	test "$(kv sup_started l1)" = 1 &&
	rtl "$TRASH/node-l2" --link install >l2 &&
	test "$(kv linked l2)" = 1 && test "$(kv sent l2)" = 0 &&
	cmp "$SKIFF_BIN" "$SEED" &&
	test "$(stat -c "%a %h" "$SEED")" = "500 3" &&
	test "$(ino "$TRASH/node-l1/.skiff/bin/skiff-$SHA")" = "$(ino "$SEED")" &&
	test "$(ino "$TRASH/node-l2/.skiff/bin/skiff-$SHA")" = "$(ino "$SEED")" &&
	test "$(readlink "$TRASH/node-l1/.skiff/bin/skiff")" = "skiff-$SHA" &&
	bin_clean "$TRASH/node-l1" && bin_clean "$TRASH/node-l2" &&
	on_node "$TRASH/node-l2" node status | grep -q "running (pid $(kv sup_pid l2)," &&
	# The seed was written: the unlinked image of another binary and its pack went.
	! test -e "$SKIFF_HOME/cache/self-$OTHER" && ! test -e "$SKIFF_HOME/cache/self-$OTHER.9.zst" &&
	test -e "$SKIFF_HOME/cache/self-$OTHER2" &&
	# There already: nothing linked nor sent, the supervisor kept.
	rtl "$TRASH/node-l1" --link install >l3 &&
	test "$(kv copied l3)" = 0 && test "$(kv linked l3)" = 0 &&
	test "$(kv sup_pid l3)" = "$(kv sup_pid l1)"
'

test_expect_success 'a seed that is not this binary is written anew; the nodes keep theirs' '
	{ cat "$SKIFF_BIN"; printf x; } | head -c "$SIZE" >wrong && printf y | dd of=wrong \
		bs=1 seek=1000 conv=notrunc 2>/dev/null && mv -f wrong "$SEED" &&
	rtl "$TRASH/node-l3" --link install >l4 &&
	test "$(kv linked l4)" = 1 &&
	cmp "$SKIFF_BIN" "$SEED" && cmp "$SKIFF_BIN" "$TRASH/node-l3/.skiff/bin/skiff-$SHA" &&
	test "$(ino "$TRASH/node-l3/.skiff/bin/skiff-$SHA")" = "$(ino "$SEED")" &&
	cmp "$SKIFF_BIN" "$TRASH/node-l1/.skiff/bin/skiff-$SHA"
'

test_expect_success ROOT 'where no link can be made (another filesystem), the binary is copied' '
	mkdir -p "$TRASH/mnt" && mount -t tmpfs -o size=64m tmpfs "$TRASH/mnt" &&
	rtl "$TRASH/mnt/node-l4" --link install >l5 && cat l5 &&
	test "$(kv copied l5)" = 1 && test "$(kv linked l5)" = 0 && test "$(kv sent l5)" -gt 0 &&
	cmp "$SKIFF_BIN" "$TRASH/mnt/node-l4/.skiff/bin/skiff-$SHA" &&
	on_node "$TRASH/mnt/node-l4" node down >/dev/null &&
	umount "$TRASH/mnt"
'

# A script full of quotes, substitutions that must not run, newlines and non-UTF-8 bytes.
cat >"$TRASH/hostile.sh" <<'EOF'
printf '%s|' "it's" '$(touch pwned)' '`touch pwned`' "`echo back`" 'a\nb' "$(printf 'x\ny')"
printf '%s|' '"' '\' '*' ';&|<>' "two  spaces" '	tab' '' "'" "''"
EOF
printf "printf '%%s|' '\\377\\376 non-UTF-8 \\200'\n" >>"$TRASH/hostile.sh"

test_expect_success 'the local runner passes hostile script text through unchanged' '
	(cd "$N1" && sh "$TRASH/hostile.sh") >want &&
	grep -q "non-UTF-8" want &&
	rtl "$N1" capture "$(cat "$TRASH/hostile.sh")" </dev/null >got &&
	cmp want got &&
	! test -e "$N1/pwned" && ! test -e pwned
'

test_done
