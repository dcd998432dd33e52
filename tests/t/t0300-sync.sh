#!/bin/sh
# File sync end to end through the binary: __sync-manifest, __sync-send and __sync-recv
# over pipes, as the launcher runs them over a runner's stdin/stdout. Ignore rules,
# incremental syncs, single files, ~/ destinations, limits and hostile streams.
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
	printf "skiff-sync-manifest 1\nend 0\n" >want &&
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
	Only in dst: .skiff-sync-manifest
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

test_expect_success 'gzip streams are compressed and detected' '
	echo more >src/more.txt &&
	skiff __sync-manifest "$PWD/dst" >manifest &&
	skiff __sync-send --gzip --manifest manifest src >gz.stream &&
	test "$(od -An -tx1 -N2 gz.stream | tr -d " ")" = 1f8b &&
	skiff __sync-recv "$PWD/dst" <gz.stream >summary &&
	summary_is files=1 && test -f dst/more.txt
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
	head -c 1500 t.stream >cut.stream &&
	expect_fail 1 skiff __sync-recv "$PWD/dst" <cut.stream 2>err &&
	grep -q "sync stream" err &&
	test "$(cat dst/main.py)" = MAIN &&
	head -c 5000 /dev/urandom >junk &&
	expect_fail 1 skiff __sync-recv "$PWD/dst" <junk 2>err &&
	grep -q "cannot read the sync stream" err &&
	expect_fail 1 skiff __sync-recv "$PWD/dst" </dev/null 2>err &&
	grep -q "empty sync stream" err &&
	! ls dst | grep -q skiff-sync-tmp
'

# hostile NAME: a tar with a control entry, the members python builds, and an end entry.
hostile() {
	python3 - "$@" <<-\EOF
	import io, sys, tarfile
	out, *members = sys.argv[1:]
	with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
	    def add(name, kind="f", data=b"x", target=""):
	        i = tarfile.TarInfo(name)
	        i.type = {"f": tarfile.REGTYPE, "l": tarfile.SYMTYPE, "h": tarfile.LNKTYPE,
	                  "d": tarfile.DIRTYPE, "c": tarfile.CHRTYPE, "p": tarfile.FIFOTYPE}[kind]
	        i.linkname = target
	        i.mode = 0o4755 if name == "suid" else 0o644
	        i.size = len(data) if kind == "f" else 0
	        t.addfile(i, io.BytesIO(data) if kind == "f" else None)
	    add(".skiff-sync-control", data=b"skiff-sync 1\nmode dir\nend\n")
	    for m in members:
	        kind, name, target = (m.split(":") + [""])[:3]
	        add(name, kind, target=target)
	    add(".skiff-sync-end", data=b"entries %d\n" % len(members))
	EOF
}

test_expect_success 'hostile streams (python tarfile) are refused, nothing escapes' '
	mkdir -p box/dst box/outside &&
	echo secret >box/outside/secret &&
	for spec in "f:../escape" "f:/abs/escape" "f:a/../../escape" \
		"l:link:$TRASH/box/outside" "l:up:.." "h:hl:$TRASH/box/outside/secret" \
		"c:null" "p:fifo"; do
		hostile h.tar "$spec" &&
		expect_fail 1 skiff __sync-recv "$PWD/box/dst" <h.tar 2>err || exit 1
		cat err
		grep -q "refusing .* in the sync stream: " err || exit 1
	done &&
	ln -s ../outside box/dst/evil &&
	hostile h.tar "f:evil/secret" &&
	expect_fail 1 skiff __sync-recv "$PWD/box/dst" <h.tar 2>err &&
	grep -q "not a directory on the node" err &&
	rm box/dst/evil &&
	test "$(ls box)" = "$(printf "dst\noutside")" &&
	test "$(ls box/outside)" = secret && test "$(cat box/outside/secret)" = secret &&
	hostile h.tar "f:suid" &&
	skiff __sync-recv "$PWD/box/dst" <h.tar >summary &&
	test "$(stat -c %a box/dst/suid)" = 755
'

test_expect_success 'usage: help text and bad arguments' '
	for c in __sync-manifest __sync-recv __sync-send; do
		skiff $c --help >h && head -1 h | grep -q "^usage: skiff $c" || exit 1
		expect_fail 2 skiff $c 2>err || exit 1
	done &&
	expect_fail 2 skiff __sync-recv --max-bytes x dst 2>err &&
	expect_fail 2 skiff __sync-recv --bogus dst 2>err &&
	expect_fail 1 skiff __sync-recv "~other/x" </dev/null 2>err &&
	grep -q "~user" err
'

test_done
