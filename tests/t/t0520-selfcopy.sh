#!/bin/sh
# The compressed self-copy (bootstrap/launch/install.c, docs/bootstrap.md): one session
# whose script writes a small splitter with printf, which takes the unzstd stub from
# stdin and runs it on the packed binary that follows (a length header, then the zstd
# frame); then `node up --then-call` answers one request on what is left of stdin.
# Through the local runner (a node is a directory used as HOME), and the script alone
# under every POSIX shell here, fed what a launcher sends: whole, cut short, with an
# altered stub, with an impostor inside, with bytes sent ahead to a node that has skiff.
# t0500 runs the same install over ssh, on namespace nodes and a busybox-only node.
. "$(dirname "$0")/lib.sh"

SHA=$(sha256sum <"$SKIFF_BIN" | cut -d" " -f1)
SIZE=$(wc -c <"$SKIFF_BIN" | tr -d " ")
UNZ=$SRC_DIR/${B:-build}/stub/skiff-unzstd

rtl() {
	_rh=$1
	shift
	skiff __runner-test --local "$_rh" --name "loc-${_rh##*/}" "$@"
}

kv() {
	awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1)
		print substr($i, length(k) + 2) }' "$2"
}

on_node() {
	_oh=$1
	shift
	env -u SKIFF_HOME HOME="$_oh" "$_oh/.skiff/bin/skiff" "$@"
}

# Nothing in the node's bin dir but binaries and the symlink: no temp file, no stub left.
bin_clean() {
	_left=$(ls -A "$1/.skiff/bin" 2>/dev/null | grep -v "^skiff-[0-9a-f]*\$" | grep -vx skiff)
	test -z "$_left" || { echo "left in $1/.skiff/bin: $_left"; return 1; }
}

# impostor SIZE: a zstd frame (raw blocks, made by hand) of a SIZE-byte shell script that
# leaves a mark when it runs.
impostor() {
	python3 - "$1" <<-\EOF
	import struct, sys
	size = int(sys.argv[1])
	body = b"#!/bin/sh\n: >\"$HOME/EXECUTED\"\nexit 0\n"
	body += b"#" * (size - len(body))
	out = b"\x28\xb5\x2f\xfd" + bytes([0x00, 0x38])
	for i in range(0, len(body), 1 << 17):
	    piece = body[i:i + (1 << 17)]
	    last = 1 if i + len(piece) == len(body) else 0
	    out += struct.pack("<I", len(piece) << 3 | last)[:3] + piece
	sys.stdout.buffer.write(out)
	EOF
}

test_cleanup_hook() {
	for _h in "$TRASH"/node-*; do
		[ -x "$_h/.skiff/bin/skiff" ] && on_node "$_h" node down >/dev/null 2>&1
	done
	return 0
}

test_expect_success 'install sends the binary compressed, through the stub, in one session' '
	rtl "$TRASH/node-1" install >inst &&
	cat inst &&
	cp inst inst-first &&
	test "$(kv copied inst)" = 1 &&
	test "$(kv sup_started inst)" = 1 &&
	sent=$(kv sent inst) &&
	test "$sent" -lt $((SIZE * 6 / 10)) &&
	cmp "$SKIFF_BIN" "$TRASH/node-1/.skiff/bin/skiff-$SHA" &&
	bin_clean "$TRASH/node-1" &&
	rtl "$TRASH/node-1" install >inst2 &&
	test "$(kv copied inst2)" = 0 && test "$(kv sup_pid inst2)" = "$(kv sup_pid inst)"
'

test_expect_success 'the launcher keeps the packed image, and checks it when it reads it back' '
	zst=$SKIFF_HOME/cache/self-$SHA.9.zst &&
	test -s "$zst" &&
	cp "$zst" good.zst &&
	printf "garbage" >"$zst" &&
	rm -f "$SKIFF_HOME/cache/self-$SHA.19.zst" &&
	rtl "$TRASH/node-2" install >inst &&
	test "$(kv copied inst)" = 1 &&
	cmp good.zst "$zst"
'

# The packer runs at the lowest CPU priority, its own and its autogroup's (cmd/pack_self.c):
# on a machine kept busy by the scripts beside this one it gets almost no CPU and takes
# minutes. A test that waits for it gives it back the usual priority (root may; otherwise
# it is left as it is), once the next test has seen that it lowered both.
hurry() {
	[ "$(id -u)" = 0 ] || return 0
	for _hp in "$@"; do
		renice -n 0 -p "$_hp" >/dev/null 2>&1
		echo 0 2>/dev/null >"/proc/$_hp/autogroup"
	done
	return 0
}
hurry_packer() { hurry $(own_pids $(pgrep -f "__pack-self $SHA")); }

test_lazy_prereq AUTOGROUP 'test -e /proc/self/autogroup'

# Started in a session of its own (as a launch starts it), it lowers its own nice and its
# session's autogroup's; it is seen while it packs (a second or more), then it is done.
test_expect_success AUTOGROUP 'the packer runs at the lowest priority, and its autogroup too' '
	mkdir -p packhome &&
	{ SKIFF_HOME=$TRASH/packhome setsid "$SKIFF_BIN" __pack-self "$SHA" & } &&
	pid=$! &&
	wait_for "grep -q \"nice 19\" /proc/$pid/autogroup 2>/dev/null" 20 &&
	test "$(cut -d")" -f2 /proc/$pid/stat | cut -d" " -f18)" = 19 &&
	hurry $pid &&
	wait $pid &&
	test -s "packhome/cache/self-$SHA.19.zst"
'

test_expect_success 'a smaller pack is made in the background, and later launches send it' '
	best=$SKIFF_HOME/cache/self-$SHA.19.zst &&
	wait_for "hurry_packer; test -s \"$best\"" 120 &&
	test "$(wc -c <"$best")" -lt "$(wc -c <good.zst)" &&
	# The packer removes its lock just after it puts the pack in place.
	wait_for "! test -e \"$best.lock\"" 30 &&
	rtl "$TRASH/node-3" install >inst &&
	test "$(kv copied inst)" = 1 &&
	test "$(kv sent inst)" -lt "$(kv sent inst-first)" &&
	cmp "$SKIFF_BIN" "$TRASH/node-3/.skiff/bin/skiff-$SHA" &&
	# A damaged one is not sent: the quick one is, and the packer makes it anew.
	cp "$best" best.zst &&
	printf "garbage" >"$best" &&
	rtl "$TRASH/node-4" install >inst &&
	test "$(kv copied inst)" = 1 &&
	cmp "$SKIFF_BIN" "$TRASH/node-4/.skiff/bin/skiff-$SHA" &&
	wait_for "hurry_packer; cmp -s best.zst \"$best\"" 120
'

test_expect_success 'a node that has skiff skips what was sent ahead; then one call on the session' '
	rtl "$TRASH/node-1" install ping >call &&
	grep -qx "via=spare" call && grep -qx "ok=1" call && grep -qx "sha256=$SHA" call &&
	rtl "$TRASH/node-1" --has-skiff install ping >call &&
	grep -qx "via=spare" call && grep -qx "ok=1" call &&
	# The script alone: the bytes ahead (garbage to it), then a framed ping.
	skiff __runner-test --send-ahead script session >ahead.sh &&
	n=$(sed -n "s/.*node up --then-call \([0-9]*\)\$/\1/p" ahead.sh | head -n 1) &&
	test "$n" -gt 0 &&
	python3 -c "import os, sys; sys.stdout.buffer.write(os.urandom($n) + b\"\\0\\0\\0\\10op\\0ping\\0\")" >in &&
	env -u SKIFF_HOME HOME="$TRASH/node-1" sh -c "$(cat ahead.sh)" <in >out 2>&1 &&
	grep -qax SKIFF-UP out && ! grep -qa NEED-COPY out &&
	tr "\\0" " " <out | grep -q "ok 1 pid [0-9]* version [^ ]* sha256 $SHA"
'

test_expect_success 'setup: what a launcher sends (the stub, then the packed image)' '
	skiff __runner-test script session >session &&
	test "$(wc -c <session)" -lt 65536 &&
	grep -q "^msg=\$(\"\$split\" $(wc -c <"$UNZ") $(sha256sum <"$UNZ" | cut -d" " -f1) " session &&
	head_of() { printf "%015d\n" "$(wc -c <"$1")"; } &&
	{ cat "$UNZ"; head_of good.zst; cat good.zst; } >payload &&
	head -c $(($(wc -c <payload) - 1000)) payload >cut &&
	cp "$UNZ" badstub && printf "\\001" | dd of=badstub bs=1 seek=3000 conv=notrunc 2>/dev/null &&
	{ cat badstub; head_of good.zst; cat good.zst; } >bad-stub &&
	impostor "$SIZE" >imp.zst &&
	{ cat "$UNZ"; head_of imp.zst; cat imp.zst; } >impostor &&
	{ cat "$UNZ"; printf "%015d\n" 0; } >no-length
'

test_expect_success 'the session script, under every POSIX shell here' '
	n=0 &&
	for sh in sh dash bash "bash --posix" "busybox sh"; do
		command -v "${sh%% *}" >/dev/null || { echo "# no $sh here"; continue; }
		h=$TRASH/node-sh-$(echo "$sh" | tr -c "a-z\\n" -) &&
		mkdir -p "$h" || exit 1
		run() {
			# shellcheck disable=SC2086 # "busybox sh" is two words
			env -u SKIFF_HOME HOME="$h" $sh -c "$(cat session)" <"$1" >out 2>&1
		}
		run cut
		grep -q "SKIFF-COPY-FAILED: the binary did not arrive whole: skiff-unzstd: the stream is cut short" out ||
			{ echo "$sh cut: $(cat out)"; exit 1; }
		bin_clean "$h" || exit 1
		run bad-stub
		grep -q "SKIFF-COPY-FAILED: the binary did not arrive whole: skiff-split: sha256 mismatch" out ||
			{ echo "$sh bad stub: $(cat out)"; exit 1; }
		bin_clean "$h" || exit 1
		run impostor
		grep -q "SKIFF-COPY-FAILED: the binary did not arrive whole: skiff-unzstd: sha256 mismatch" out ||
			{ echo "$sh impostor: $(cat out)"; exit 1; }
		! test -e "$h/EXECUTED" && bin_clean "$h" || exit 1
		run no-length
		grep -q "SKIFF-COPY-FAILED: the binary did not arrive whole: skiff-unzstd: bad packed length" out ||
			{ echo "$sh no length: $(cat out)"; exit 1; }
		bin_clean "$h" || exit 1
		run payload || { echo "$sh: $(cat out)"; exit 1; }
		grep -qx SKIFF-NEED-COPY out && grep -qx SKIFF-COPIED out && grep -qax SKIFF-UP out &&
			node_up_said out >said && grep -qx started=1 said && grep -qx "pid=[0-9]*" said ||
			{ echo "$sh: $(cat out)"; exit 1; }
		cmp "$SKIFF_BIN" "$h/.skiff/bin/skiff-$SHA" && bin_clean "$h" || exit 1
		# Installed: the script does not read its stdin, and says nothing of a copy.
		run /dev/null && ! grep -qa SKIFF-NEED-COPY out &&
			node_up_said out >said && grep -qx started=0 said && grep -qx "pid=[0-9]*" said ||
			{ echo "$sh again: $(cat out)"; exit 1; }
		on_node "$h" node down >/dev/null || exit 1
		n=$((n + 1))
	done &&
	echo "# under $n shells" &&
	test "$n" -ge 2
'

test_expect_success 'two launchers installing at once both succeed, one binary results' '
	h=$TRASH/node-twice &&
	{ rtl "$h" install >a 2>ea & } &&
	p=$! &&
	rtl "$h" install >b 2>eb &&
	wait $p &&
	test -n "$(kv sup_pid a)" && test "$(kv sup_pid a)" = "$(kv sup_pid b)" &&
	cmp "$SKIFF_BIN" "$h/.skiff/bin/skiff-$SHA" &&
	bin_clean "$h"
'

test_done
