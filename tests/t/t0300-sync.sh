#!/bin/sh
# File sync end to end through the binary: the one-way commands (__sync-manifest,
# __sync-send and __sync-recv over pipes) and sessions (__sync-push to __sync-serve, as the
# launcher runs them over a runner's stdin/stdout). Ignore rules, incremental syncs,
# single files, ~/ destinations, limits and hostile streams; in sessions: what a tree keeps
# (empty and sparse files, modes, symlinks, hard links), a stream cut inside a delta, a
# node's hostile manifest, a file rewritten while it is read. t0610 and t0911 sync over ssh.
. "$(dirname "$0")/lib.sh"

# do_sync SRC DST [FLAGS...]: one full round as the launcher does it; the receiver's
# summary line goes to ./summary.
do_sync() {
	s=$1 d=$2
	shift 2
	case $d in /*) ;; *) d=$PWD/$d ;; esac
	skiff __sync-manifest "$@" "$d" >manifest &&
	skiff __sync-send "$@" --manifest manifest "$s" | skiff __sync-recv "$@" "$d" >summary
}

# summary_is 'files=N ...': the fields given match the last summary.
summary_is() {
	for kv in "$@"; do
		grep -q "^skiff-sync-recv .*\\b$kv\\b" summary || {
			echo "want $kv in: $(cat summary)" >&2
			return 1
		}
	done
}

test_expect_success 'the manifest of a missing destination is empty' '
	skiff __sync-manifest "$TRASH/nothing-here" >out &&
	printf "skiff-sync-manifest 2\nend 0\n" >want &&
	test_cmp want out
'

test_expect_success 'setup: a workdir with .gitignore files' '
	mkdir -p src/sub/deep src/build src/empty src/.git &&
	printf "*.log\nbuild/\n/top-only\n" >src/.gitignore &&
	printf "!keep.log\n*.tmp\n" >src/sub/.gitignore &&
	echo main >src/main.py &&
	echo log >src/x.log &&
	echo kept >src/sub/keep.log &&
	echo dropped >src/sub/drop.log &&
	echo t >src/sub/x.tmp &&
	echo t >src/x.tmp &&
	echo a >src/top-only &&
	echo b >src/sub/top-only &&
	echo o >src/build/out.o &&
	echo deep >src/sub/deep/file &&
	echo cfg >src/.git/config &&
	printf "#!/bin/sh\necho hi\n" >src/run.sh && chmod 755 src/run.sh &&
	: >src/zero &&
	ln -s sub/deep/file src/link
'

test_expect_success 'first sync honours .gitignore, nested ones too, and never sends .git' '
	do_sync src dst &&
	summary_is files=9 links=1 deleted=0 &&
	{ diff -r --no-dereference src dst >diff.out || true; } &&
	LC_ALL=C sort diff.out >got &&
	LC_ALL=C sort >want <<-\EOF &&
	Only in src: .git
	Only in src: build
	Only in src: top-only
	Only in src: x.log
	Only in src/sub: drop.log
	Only in src/sub: x.tmp
	EOF
	test_cmp want got &&
	test -x dst/run.sh &&
	test "$(readlink dst/link)" = sub/deep/file &&
	test -d dst/empty
'

test_expect_success 'a repeat sync sends nothing' '
	do_sync src dst &&
	summary_is files=0 dirs=0 links=0 bytes=0 deleted=0 &&
	skiff __sync-manifest "$PWD/dst" | skiff __sync-send --manifest - src |
		skiff __sync-recv "$PWD/dst" >summary &&
	summary_is files=0 dirs=0 links=0 bytes=0 deleted=0 &&
	skiff __sync-send --manifest manifest --stats src 2>stats >/dev/null &&
	grep -q "^skiff-sync-send files=0 .*unchanged=13" stats
'

test_expect_success 'change one, delete one, add one: only those move' '
	echo MAIN >src/main.py &&
	rm src/zero &&
	echo new >src/sub/new.txt &&
	do_sync src dst &&
	summary_is files=2 bytes=9 deleted=1 &&
	test ! -e dst/zero && test "$(cat dst/main.py)" = MAIN && test -f dst/sub/new.txt
'

test_expect_success 'a .skyignore replaces every .gitignore' '
	printf "main.py\nsub/deep/\n" >src/.skyignore &&
	do_sync src sky &&
	test ! -e sky/main.py && test ! -e sky/sub/deep &&
	test -f sky/x.log && test -f sky/build/out.o && test -f sky/sub/x.tmp &&
	test -f sky/.skyignore && test ! -e sky/.git &&
	rm src/.skyignore
'

test_expect_success 'names with spaces, newlines and non-UTF-8 bytes' '
	mkdir -p weird &&
	nl=$(printf "a\nb") && bin=$(printf "n\377\376x") &&
	echo 1 >"weird/with space" && echo 2 >"weird/$nl" && echo 3 >"weird/$bin" &&
	echo 4 >"weird/back\\slash" &&
	do_sync weird wdst &&
	summary_is files=4 &&
	test "$(cat "wdst/with space")" = 1 && test "$(cat "wdst/$nl")" = 2 &&
	test "$(cat "wdst/$bin")" = 3 && test "$(cat "wdst/back\\slash")" = 4 &&
	do_sync weird wdst && summary_is files=0
'

test_expect_success '~/ destinations expand to the receiving HOME' '
	skiff __sync-send src |
		HOME="$TRASH/nodehome" "$SKIFF_BIN" __sync-recv "~/sky_workdir" >summary &&
	test -f "$TRASH/nodehome/sky_workdir/main.py" &&
	HOME="$TRASH/nodehome" "$SKIFF_BIN" __sync-manifest "~/sky_workdir" >m &&
	grep -q " main.py\$" m &&
	HOME="$TRASH/nodehome" "$SKIFF_BIN" __sync-manifest sky_workdir >m2 &&
	test_cmp m m2
'

test_expect_success 'a single file (file_mounts: /path: ./file)' '
	printf "key: 1\n" >app.cfg && chmod 640 app.cfg &&
	do_sync app.cfg "$TRASH/node/etc/app.cfg" --file &&
	summary_is files=1 &&
	test "$(cat node/etc/app.cfg)" = "key: 1" &&
	test "$(stat -c %a node/etc/app.cfg)" = 640 &&
	test ! -e node/etc/.skiff-sync-manifest &&
	do_sync app.cfg "$TRASH/node/etc/app.cfg" --file &&
	summary_is files=0 &&
	printf "key: 2\n" >app.cfg &&
	do_sync app.cfg "$TRASH/node/etc/app.cfg" --file &&
	summary_is files=1 && test "$(cat node/etc/app.cfg)" = "key: 2"
'

test_expect_success 'a file stream into a directory sync (and back) is refused' '
	skiff __sync-send --file app.cfg >file.stream &&
	expect_fail 1 skiff __sync-recv "$PWD/dst" <file.stream 2>err &&
	grep -q "a file sync sent to a directory" err &&
	skiff __sync-send src >dir.stream &&
	expect_fail 1 skiff __sync-recv --file "$TRASH/f" <dir.stream 2>err &&
	grep -q "a directory sync sent to a file" err
'

test_expect_success 'compressed streams are smaller, and read' '
	for i in 1 2 3 4 5 6 7 8; do cat src/.gitignore src/main.py; done >src/more.txt &&
	skiff __sync-manifest "$PWD/dst" >manifest &&
	skiff __sync-send --compress --manifest manifest src >z.stream &&
	skiff __sync-send --manifest manifest src >raw.stream &&
	test "$(wc -c <z.stream)" -lt "$(wc -c <raw.stream)" &&
	skiff __sync-recv "$PWD/dst" <z.stream >summary &&
	summary_is files=1 && test_cmp src/more.txt dst/more.txt
'

test_expect_success '--max-bytes bounds a sync' '
	head -c 100000 /dev/zero >src/big.bin &&
	skiff __sync-manifest "$PWD/dst" >manifest &&
	skiff __sync-send --manifest manifest src >big.stream &&
	expect_fail 1 skiff __sync-recv --max-bytes 1000 "$PWD/dst" <big.stream 2>err &&
	grep -q "larger than the limit of 1000 bytes" err &&
	test ! -e dst/big.bin &&
	skiff __sync-recv "$PWD/dst" <big.stream >summary && test -f dst/big.bin
'

test_expect_success 'truncated, garbage and empty streams are errors' '
	echo changed >src/main.py && echo x >src/big.bin &&
	skiff __sync-manifest "$PWD/dst" >manifest &&
	skiff __sync-send --manifest manifest src >t.stream &&
	head -c 150 t.stream >cut.stream &&
	expect_fail 1 skiff __sync-recv "$PWD/dst" <cut.stream 2>err &&
	grep -q "truncated sync stream" err &&
	test "$(cat dst/main.py)" = MAIN &&
	head -c 5000 /dev/urandom >junk &&
	expect_fail 1 skiff __sync-recv "$PWD/dst" <junk 2>err &&
	grep -q "sync stream" err &&
	expect_fail 1 skiff __sync-recv "$PWD/dst" </dev/null 2>err &&
	grep -q "empty sync stream" err &&
	! ls dst | grep -q skiff-sync-tmp
'

# hostile OUT SPEC...: a one-way stream (docs/sync.md: frames of records) holding what
# each SPEC says, KIND:NAME[:TARGET]: f a file, l a symlink, d a directory, D a deletion,
# and X, N, B records of types this stream never has (hardlinks, devices and fifos
# cannot even be said in it).
hostile() {
	python3 - "$SRC_DIR/tests/lib" "$@" <<-\EOF
	import sys
	sys.path.insert(0, sys.argv[1])
	import sync_stream as ss
	out, *members = sys.argv[2:]
	recs = []
	for m in members:
	    kind, name, target = (m.split(":") + [""])[:3]
	    if kind == "f":
	        recs.append(ss.file_rec(name, b"x", 0o4755 if name == "suid" else 0o644))
	    elif kind == "l":
	        recs.append(ss.link_rec(name, target))
	    elif kind == "d":
	        recs.append(ss.dir_rec(name))
	    else:
	        recs.append(ss.rec(kind, name.encode()))
	with open(out, "wb") as f:
	    f.write(ss.frame(ss.hello("d") + b"".join(recs) + ss.end(len(recs))))
	EOF
}

test_expect_success 'hostile streams are refused, nothing escapes' '
	mkdir -p box/dst box/outside &&
	echo secret >box/outside/secret &&
	for spec in "f:../escape" "f:/abs/escape" "f:a/../../escape" "f:.skiff-sync-manifest" \
		"l:link:$TRASH/box/outside" "l:up:.." "X:hl" "N:null" "B:fifo" \
		"D:../outside/secret"; do
		hostile h.stream "$spec" &&
		expect_fail 1 skiff __sync-recv "$PWD/box/dst" <h.stream 2>err || exit 1
		cat err
		grep -Eq "refusing .* in the sync stream: |corrupt sync stream" err || exit 1
	done &&
	ln -s ../outside box/dst/evil &&
	hostile h.stream "f:evil/secret" &&
	expect_fail 1 skiff __sync-recv "$PWD/box/dst" <h.stream 2>err &&
	grep -q "not a directory on the node" err &&
	rm box/dst/evil &&
	test "$(ls box)" = "$(printf "dst\noutside")" &&
	test "$(ls box/outside)" = secret && test "$(cat box/outside/secret)" = secret &&
	hostile h.stream "f:suid" &&
	skiff __sync-recv "$PWD/box/dst" <h.stream >summary &&
	test "$(stat -c %a box/dst/suid)" = 755
'

# push3: a session from src2 to n1, n2 and n3 at once (the launcher's cache under key t);
# one line per node in ./pushed.
push3() {
	skiff __sync-push --cache t src2 --node "$SKIFF_BIN __sync-serve $PWD/n1" \
		--node "$SKIFF_BIN __sync-serve $PWD/n2" --node "$SKIFF_BIN __sync-serve $PWD/n3" \
		>pushed
}

# wire_of I: the bytes node I was sent in the last push.
wire_of() {
	sed -n "s/^skiff-sync-push node=$1 wire=\\([0-9]*\\) .*/\\1/p" pushed
}

test_expect_success 'a session: the tree goes once to three nodes, then nothing moves' '
	mkdir -p src2/sub &&
	for i in 1 2 3 4 5 6 7 8 9; do echo "line $i" >src2/sub/f$i; done &&
	head -c 4194304 /dev/urandom >src2/big.bin &&
	ln -s sub/f1 src2/link &&
	push3 &&
	for d in n1 n2 n3; do diff -r --no-dereference src2 $d || exit 1; done &&
	test "$(wire_of 1)" = "$(wire_of 3)" &&
	push3 &&
	test "$(wire_of 2)" -lt 200
'

test_expect_success 'a session sends a changed large file as a delta, checked whole' '
	python3 -c "
import os
with open(\"src2/big.bin\", \"r+b\") as f:
    f.seek(2000000)
    f.write(os.urandom(4096))" &&
	push3 &&
	test "$(wire_of 1)" -lt 65536 &&
	for d in n1 n2 n3; do cmp src2/big.bin $d/big.bin || exit 1; done
'

# held_deleted DIR: the files under DIR, unlinked, that some process still holds open.
held_deleted() {
	for fd in /proc/[0-9]*/fd/*; do
		readlink "$fd" 2>/dev/null
	done | grep -F "$1/" | grep -F "(deleted)"
}

test_expect_success 'replaced and deleted large files are freed after the session, not held' '
	head -c 3145728 /dev/urandom >src2/big.bin &&
	head -c 2097152 /dev/urandom >src2/gone.bin &&
	push3 &&
	rm src2/gone.bin &&
	head -c 3145728 /dev/urandom >src2/big.bin &&
	push3 &&
	for d in n1 n2 n3; do
		cmp src2/big.bin $d/big.bin && test ! -e $d/gone.bin || exit 1
	done &&
	wait_for "test -z \"\$(held_deleted $PWD)\"" 10
'

test_expect_success 'a session: nodes in different states, each brought to the tree' '
	echo job >n2/sub/f3 && rm n3/sub/f4 && echo new >src2/sub/new &&
	push3 &&
	for d in n1 n2 n3; do diff -r --no-dereference src2 $d || exit 1; done &&
	{ grep -q "node=2 .*files=2" pushed && grep -q "node=1 .*files=1" pushed ||
		{ cat pushed; exit 1; }; }
'

# push1 SRC DST [NODE-COMMAND-PREFIX]: a session from SRC to DST (cache key one); the
# node's line in ./pushed. The prefix (say "dd bs=1 count=500 |") goes before __sync-serve.
push1() {
	skiff __sync-push --cache one "$1" --node "${3:-} $SKIFF_BIN __sync-serve $2" >pushed
}

test_expect_success 'a session keeps empty and sparse files, modes and symlinks; hard links as copies' '
	mkdir -p src3/private src3/pub/deep &&
	chmod 700 src3/private && chmod 750 src3/pub &&
	: >src3/empty && : >src3/private/empty2 &&
	printf "secret\n" >src3/private/key && chmod 600 src3/private/key &&
	printf "#!/bin/sh\n" >src3/pub/run && chmod 755 src3/pub/run &&
	printf "ro\n" >src3/pub/ro && chmod 444 src3/pub/ro &&
	truncate -s 32M src3/sparse && printf tail >>src3/sparse &&
	printf "shared\n" >src3/pub/one && ln src3/pub/one src3/pub/deep/two &&
	ln -s pub/run src3/to-run && ln -s ../../empty src3/pub/deep/up &&
	ln -s /etc/passwd src3/abs && ln -s ../../outside src3/pub/out &&
	push1 src3 "$PWD/n4" 2>err &&
	grep -q "not sending symlink .abs. -> ./etc/passwd.: it may point outside" err &&
	grep -q "not sending symlink .pub/out. -> .\.\./\.\./outside." err &&
	grep -q "node=1 .*skipped=2" pushed &&
	test ! -e n4/abs && test ! -h n4/abs && test ! -h n4/pub/out &&
	for f in empty private private/empty2 private/key pub pub/run pub/ro sparse \
		pub/one pub/deep/two; do
		test "$(stat -c "%a %s" src3/$f)" = "$(stat -c "%a %s" n4/$f)" || exit 1
	done &&
	test ! -s n4/empty && test ! -s n4/private/empty2 &&
	cmp src3/sparse n4/sparse &&
	test "$(du -k n4/sparse | cut -f1)" -lt 1024 &&
	cmp n4/pub/one n4/pub/deep/two &&
	test "$(stat -c %h n4/pub/one)" = 1 && test "$(stat -c %h n4/pub/deep/two)" = 1 &&
	test "$(readlink n4/to-run)" = pub/run && test "$(readlink n4/pub/deep/up)" = ../../empty &&
	chmod 640 src3/pub/one && chmod 711 src3/private &&
	push1 src3 "$PWD/n4" 2>err &&
	test "$(stat -c %a n4/pub/one)" = 640 && test "$(stat -c %a n4/private)" = 711 &&
	grep -q "node=1 .*bytes=0 " pushed
'

# cut_at N: big.bin changed by 4 KiB, pushed through a channel that ends after N bytes;
# the node must hold the old or the new big.bin whole, and no temp file.
test_expect_success 'a session cut anywhere in a delta leaves the old file or the new, whole' '
	mkdir -p src4 && head -c 4194304 /dev/urandom >src4/big.bin &&
	echo small >src4/small && push1 src4 "$PWD/n5" &&
	cp src4/big.bin old.bin &&
	python3 -c "
import os
with open(\"src4/big.bin\", \"r+b\") as f:
    f.seek(1000000)
    f.write(os.urandom(4096))" &&
	! cmp -s old.bin src4/big.bin &&
	cuts=0 &&
	for n in 60 150 300 700 1500 3000 4500 6000; do
		if push1 src4 "$PWD/n5" "dd bs=1 count=$n 2>/dev/null |" 2>err; then
			cmp n5/big.bin src4/big.bin || exit 1
			break
		fi
		cuts=$((cuts + 1))
		grep -Eq "truncated sync stream|corrupt sync stream" err || { cat err; exit 1; }
		cmp -s n5/big.bin old.bin || cmp -s n5/big.bin src4/big.bin || {
			echo "cut at $n: big.bin is neither version"; exit 1; }
		test "$(ls -A n5 | grep -c skiff-sync-tmp)" = 0 || exit 1
	done &&
	test "$cuts" -ge 4 &&
	push1 src4 "$PWD/n5" && cmp src4/big.bin n5/big.bin &&
	test "$(sed -n "s/^skiff-sync-push node=1 wire=\\([0-9]*\\) .*/\\1/p" pushed)" -lt 65536
'

# liar FILE MANIFEST-LINE...: in FILE, the answers of a "node" that does not match and
# says it holds a manifest of those lines.
liar() {
	python3 - "$SRC_DIR/tests/lib" "$@" <<-\EOF
	import struct, sys
	sys.path.insert(0, sys.argv[1])
	import sync_stream as ss
	out, *lines = sys.argv[2:]
	text = ("skiff-sync-manifest 2\n" + "".join(l + "\n" for l in lines) +
	        "end %d\n" % len(lines)).encode()
	recs = ss.rec("S", bytes(33)) + ss.rec("M", text) + ss.rec("m", struct.pack("<Q", len(text)))
	with open(out, "wb") as f:
	    f.write(ss.frame(recs))
	EOF
}

test_expect_success 'a node whose manifest is hostile is refused, and nothing is kept of it' '
	ls "$SKIFF_HOME/sync/nodes" 2>/dev/null | sort >caches.before &&
	for m in "f 644 1 0 - ../escape" "f 644 1 0 - /abs/path" "d 755 0 a/../../up" \
		"l 0 /etc abs-link" "l 0 ../../.. up-link" \
		"f 9999 1 0 - mode" "f 644 -1 0 - size" "f 644 1 0 nothex name" "x 1 2 3" \
		"f 644 1 0 - a\\x00b"; do
		liar answer "$m" &&
		expect_fail 1 skiff __sync-push --cache liar src2 --node "cat answer; cat >/dev/null" \
			2>err || { cat err; exit 1; }
		grep -q "answer from node 1:2: " err || { echo "$m:"; cat err; exit 1; }
	done &&
	liar answer "f 644 1 0 - x" "f 644 1 0 - x" &&
	expect_fail 1 skiff __sync-push --cache liar src2 --node "cat answer; cat >/dev/null" 2>err &&
	grep -q "answer from node 1: duplicate path" err &&
	ls "$SKIFF_HOME/sync/nodes" 2>/dev/null | sort >caches.after &&
	test_cmp caches.before caches.after
'

# versions DIR CMD: CMD is write (rewrite DIR/big.bin in place, 64 KiB at a time, front to
# back, with the versions v1..v4 in turn until ./stop exists) or check FILE (FILE is the
# file as it was at one instant: version k up to some block, version k-1 after it).
versions() {
	python3 - "$@" <<-\EOF
	import os, sys
	d, cmd = sys.argv[1], sys.argv[2]
	B = 65536
	vs = [open("v%d" % k, "rb").read() for k in (1, 2, 3, 4)]
	if cmd == "write":
	    k = 1
	    fd = os.open(os.path.join(d, "big.bin"), os.O_WRONLY)
	    while not os.path.exists("stop"):
	        for off in range(0, len(vs[k]), B):
	            os.pwrite(fd, vs[k][off:off + B], off)
	        k = (k + 1) % 4
	    sys.exit(0)
	got = open(sys.argv[3], "rb").read()
	if len(got) != len(vs[0]):
	    sys.exit("a file of %d bytes" % len(got))
	seq = []
	for off in range(0, len(got), B):
	    ks = [k for k in range(4) if vs[k][off:off + B] == got[off:off + B]]
	    if not ks:
	        sys.exit("block %d is no version's" % (off // B))
	    seq.append(ks[0])
	new, old = seq[0], seq[-1]
	cut = next((i for i, k in enumerate(seq) if k != new), len(seq))
	if seq[cut:] != [old] * (len(seq) - cut) or (cut < len(seq) and old != (new - 1) % 4):
	    sys.exit("mixed: versions %s" % "".join(str(k + 1) for k in seq))
	EOF
}

test_expect_success 'a file rewritten while a session reads it arrives as it was at one instant' '
	mkdir -p src5 &&
	for v in 1 2 3 4; do head -c 8388608 /dev/urandom >v$v; done &&
	cp v1 src5/big.bin && push1 src5 "$PWD/n6" &&
	rm -f stop &&
	{ versions src5 write & } &&
	for i in 1 2 3 4 5 6; do
		push1 src5 "$PWD/n6" 2>err || { touch stop; cat err; exit 1; }
		versions src5 check n6/big.bin || { touch stop; echo "round $i"; exit 1; }
	done &&
	touch stop && wait &&
	push1 src5 "$PWD/n6" && cmp src5/big.bin n6/big.bin
'

test_expect_success 'usage: help text and bad arguments' '
	for c in __sync-manifest __sync-recv __sync-send __sync-serve __sync-push __sync-cluster; do
		skiff $c --help >h && head -1 h | grep -q "^usage: skiff $c" || exit 1
		expect_fail 2 skiff $c 2>err || exit 1
	done &&
	expect_fail 2 skiff __sync-recv --max-bytes x dst 2>err &&
	expect_fail 2 skiff __sync-recv --bogus dst 2>err &&
	expect_fail 1 skiff __sync-recv "~other/x" </dev/null 2>err &&
	grep -q "~user" err
'

test_done
