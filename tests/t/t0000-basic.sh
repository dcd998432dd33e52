#!/bin/sh
# The binary itself: help, version, dispatch, static linking.
. "$(dirname "$0")/lib.sh"

test_expect_success 'version prints version, commit, sha256 and libraries' '
	skiff version >out &&
	grep -q "^skiff [0-9]" out &&
	grep -q "^commit: " out &&
	sha=$(sha256sum "$SKIFF_BIN" | cut -d" " -f1) &&
	grep -q "^sha256: *$sha\$" out &&
	for l in libyaml sqlite mbedtls libarchive zlib; do grep -q "^$l: *[0-9]" out || exit 1; done
'

test_expect_success 'version --json is one JSON object with the same facts' '
	skiff version --json >out.json &&
	python3 -c "import json,sys; d=json.load(open(\"out.json\")); assert d[\"sha256\"] and d[\"libraries\"][\"sqlite\"]"
'

test_expect_success 'help lists commands; every listed command has --help' '
	skiff help >out &&
	grep -q "^Commands:" out &&
	for c in $(sed -n "/^Commands:/,/^\$/p" out | awk "NF>1 {print \$1}"); do
		skiff $c --help >h || { echo "no help for $c"; exit 1; }
		grep -q "^usage: skiff $c" h || { echo "bad help for $c"; exit 1; }
	done
'

test_expect_success 'an unknown command suggests the nearest one' '
	expect_fail 2 skiff verison 2>err &&
	grep -q "did you mean .version." err &&
	test $(wc -l <err) = 1
'

test_expect_success 'no command prints help and exits 2' '
	expect_fail 2 skiff >out &&
	grep -q "^usage: skiff" out
'

test_expect_success 'a command group without its command shows its usage and says what is missing' '
	for g in node jobs; do
		expect_fail 2 skiff $g 2>err &&
		grep -q "^usage: skiff $g" err &&
		grep -q "error: expected a command (see .skiff $g --help.)" err &&
		! grep -q "said nothing more" err || return 1
	done
'

test_expect_success 'the build is static (file says so); under make test it is the binary tested' '
	test -n "$SKIFF_STATIC_BIN" &&
	file -L "$SKIFF_STATIC_BIN" | grep -q "statically linked" &&
	{ test -n "${SKIFF_TEST_BIN:-}" || test "$SKIFF_STATIC_BIN" = "$SKIFF_BIN"; }
'

# Under make test-asan SKIFF_BIN is the ASan build; the static build beside it is checked.
test_expect_success ROOT,STATIC_BIN \
	'the static skiff runs alone in an empty chroot (no /proc, /dev, /etc)' '
	mkdir -p empty-root &&
	cp "$SKIFF_STATIC_BIN" empty-root/skiff &&
	test "$(find empty-root | wc -l)" = 2 &&
	chroot empty-root /skiff version >out &&
	sha=$(sha256sum empty-root/skiff | cut -d" " -f1) &&
	grep -q "^sha256: *$sha\$" out &&
	chroot empty-root /skiff version --json >/dev/null
'

# section_words HEADING FILE: the first word of each line of FILE's section HEADING (from
# the line that starts with HEADING to the next blank line).
section_words() {
	awk -v h="$1" 'index($0, h) == 1 { f = 1; next } /^$/ { f = 0 } f && NF > 1 { print $1 }' "$2"
}

# subcommands GROUP HELPFILE: the subcommands GROUP's help names: the lines of its
# "Commands:" section (node), and its usage lines "skiff GROUP SUB ..." (jobs).
subcommands() {
	{
		section_words "Commands:" "$2"
		sed -n '1,/^$/p' "$2" |
			sed -n "s/^\(usage:\)\{0,1\} *skiff $1 \([a-z][a-z0-9-]*\)\( .*\)\{0,1\}\$/\2/p"
	} | sort -u
}

test_expect_success 'help --all lists what help lists, then every hidden command, marked' '
	skiff help >plain &&
	skiff help --all >all &&
	section_words "Commands:" plain >public &&
	section_words "Commands:" all >public.all &&
	test_cmp public public.all &&
	section_words "Hidden commands" all >hidden &&
	test "$(wc -l <hidden)" -ge 10 &&
	grep -qx __shim hidden && grep -qx __supervisor hidden &&
	! grep -Fxf public hidden &&
	expect_fail 2 skiff help --bogus 2>err && grep -q "unknown option" err
'

test_expect_success 'help does not list hidden commands' '
	skiff help >plain &&
	skiff help --all >all &&
	section_words "Hidden commands" all >hidden &&
	test -s hidden &&
	for c in $(cat hidden); do
		! grep -qw -- "$c" plain || { echo "help lists hidden $c"; exit 1; }
	done &&
	! grep -q __ plain
'

test_expect_success 'every command --help, hidden ones and subcommands too, starts with its usage' '
	skiff help --all >all &&
	{ section_words "Commands:" all && section_words "Hidden commands" all; } >cmds &&
	test "$(wc -l <cmds)" -ge 25 &&
	: >groups &&
	for c in $(cat cmds); do
		skiff $c --help >h &&
			head -1 h | grep -q "^usage: skiff $c\( \|\$\)" ||
			{ echo "bad help for $c:"; cat h; exit 1; }
		subcommands "$c" h >subs || exit 1
		test -s subs || continue
		echo "$c $(tr "\n" " " <subs)" >>groups
		for s in $(cat subs); do
			skiff $c $s --help >h || { echo "no help for $c $s"; exit 1; }
			head -1 h | grep -q "^usage: skiff $c " &&
				sed -n "1,/^\$/p" h | grep -q "^\(usage:\)\{0,1\} *skiff $c $s\( \|\$\)" ||
				{ echo "bad help for $c $s:"; cat h; exit 1; }
		done
	done &&
	cat groups &&
	grep -q "^node autostop cancel down logs queue status submit up \$" groups &&
	grep -q "^jobs cancel launch logs queue \$" groups &&
	test "$(wc -l <groups)" = 2
'

# A script of tests run by its own lib.sh, in a dir of this test's scratch dir.
run_selftest() {
	SKIFF_TEST_BIN="$SKIFF_BIN" TMPDIR="$TRASH/selftest" sh "$@"
}

test_expect_success \
	'the chain lint fails a body whose && chain is broken, unless SKIFF_TEST_CHAIN_LINT=0' '
	mkdir -p selftest &&
	cat >selftest/chain.sh <<-EOF &&
	. "$TEST_DIR/lib.sh"
	test_expect_success "joined" "true && true"
	test_expect_success "broken" "false
	true"
	test_expect_success "or at the top" "false || true"
	test_done
	EOF
	expect_fail 1 run_selftest selftest/chain.sh >lint.out &&
	cat lint.out &&
	grep -qx "ok 1 - joined" lint.out &&
	grep -qx "not ok 2 - broken" lint.out &&
	grep -q "broken &&-chain" lint.out &&
	grep -qx "not ok 3 - or at the top" lint.out &&
	SKIFF_TEST_CHAIN_LINT=0 run_selftest selftest/chain.sh >nolint.out &&
	grep -qx "ok 2 - broken" nolint.out &&
	grep -qx "ok 3 - or at the top" nolint.out
'

# The sub-scripts write "BUG:" at run time only (BU""G in their text), and their kept
# scratch dirs and outputs are removed: this script's own scan must not see them.
test_expect_success 'a BUG: line or a sanitizer report that a daemon logged fails the script' '
	mkdir -p selftest &&
	cat >selftest/bug.sh <<-EOF &&
	. "$TEST_DIR/lib.sh"
	test_expect_success "a daemon dies" "mkdir -p \\\$SKIFF_HOME/jobs &&
		echo \\"skiff: error: BU\"\"G: xsnprintf: result does not fit\\" \\
			>\\\$SKIFF_HOME/jobs/controller.log"
	test_done
	EOF
	expect_fail 1 run_selftest selftest/bug.sh >selftest/bug.out &&
	grep -qx "ok 1 - a daemon dies" selftest/bug.out &&
	grep -qx "not ok 2 - a daemon left a BUG line or a sanitizer report" selftest/bug.out &&
	grep -q "^#   == .*/home/jobs/controller.log" selftest/bug.out &&
	cat >selftest/gone.sh <<-EOF &&
	. "$TEST_DIR/lib.sh"
	test_expect_success "a node logs a report, then its dir is removed" "mkdir -p node &&
		echo \\"==1==ERROR: Address\"\"Sanitizer: heap-use-after-free\\" >node/supervisor.log &&
		test_scan_daemon_logs node && rm -rf node"
	test_done
	EOF
	expect_fail 1 run_selftest selftest/gone.sh >selftest/gone.out &&
	grep -q "^#   == node/supervisor.log" selftest/gone.out &&
	cat >selftest/clean.sh <<-EOF &&
	. "$TEST_DIR/lib.sh"
	test_expect_success "a job prints BUG without the colon" "echo BUGS >x.log"
	test_done
	EOF
	run_selftest selftest/clean.sh >selftest/clean.out &&
	grep -qx "ok 2 - no daemon left a BUG line or a sanitizer report" selftest/clean.out &&
	rm -rf selftest
'

test_expect_success 'a missing prerequisite or test_skip is a TAP skip; under CI=true, a failure' '
	mkdir -p selftest &&
	cat >selftest/skip.sh <<-EOF &&
	. "$TEST_DIR/lib.sh"
	test_lazy_prereq NEVER "false"
	test_set_prereq ALWAYS
	test_expect_success NEVER "needs never" "true"
	test_expect_success ALWAYS,!NEVER "needs always" "true"
	test_skip "skipped" "some reason"
	test_expect_success ROOT "needs root" "true"
	test_done
	EOF
	CI= SKIFF_TEST_FAIL_PREREQS=ROOT run_selftest selftest/skip.sh >skip.out &&
	cat skip.out &&
	grep -qx "ok 1 - needs never # skip missing NEVER" skip.out &&
	grep -qx "ok 2 - needs always" skip.out &&
	grep -qx "ok 3 - skipped # skip some reason" skip.out &&
	grep -qx "ok 4 - needs root # skip missing ROOT" skip.out &&
	CI=true SKIFF_TEST_FAIL_PREREQS=ROOT expect_fail 1 run_selftest selftest/skip.sh >ci.out &&
	cat ci.out &&
	grep -qx "not ok 1 - needs never # cannot skip in CI: missing NEVER" ci.out &&
	grep -qx "ok 2 - needs always" ci.out &&
	grep -qx "not ok 3 - skipped # cannot skip in CI: some reason" ci.out &&
	grep -qx "not ok 4 - needs root # cannot skip in CI: missing ROOT" ci.out
'

test_done
