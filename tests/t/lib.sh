# Test library for skiff's integration tests, in the style of git's t/test-lib.sh.
# Each tNNNN-name.sh sources this file, calls test_expect_success for each case and
# ends with test_done. Output is TAP, read by prove(1).
#
#   . "$(dirname "$0")/lib.sh"
#   test_expect_success 'version runs' '
#       skiff version >out && grep -q "^skiff " out
#   '
#   test_done
#
# Each test runs in a fresh SKIFF_HOME under a per-script scratch dir ($TRASH), which is
# removed at the end unless a test failed or SKIFF_TEST_KEEP is set.
#
# Helpers: skiff (the binary under test), test_skip_unless_root, wait_for COND [TIMEOUT_S],
# expect_fail CODE CMD..., test_cmp WANT GOT.

set -u

TEST_DIR=$(cd "$(dirname "$0")" && pwd)
SRC_DIR=$(cd "$TEST_DIR/../.." && pwd)
SKIFF_BIN=${SKIFF_TEST_BIN:-$SRC_DIR/${B:-build}/skiff}
SHARED_DIR=$(cd "$SRC_DIR/.." && pwd)/shared
test_name=$(basename "$0" .sh)
TRASH=${TMPDIR:-/tmp}/skiff-test.$test_name.$$
rm -rf "$TRASH"
mkdir -p "$TRASH"
export SKIFF_HOME="$TRASH/home"
export HOME="$TRASH/userhome"
mkdir -p "$HOME"
export NO_COLOR=1
unset SKIFF_DEBUG

test_count=0
test_failed=0
test_skip_all=""

[ -x "$SKIFF_BIN" ] || { echo "Bail out! $SKIFF_BIN is not built (run make)"; exit 1; }

skiff() {
	"$SKIFF_BIN" "$@"
}

# Skip the whole script unless root. In CI (CI=true) a missing root is a failure.
test_skip_unless_root() {
	if [ "$(id -u)" != 0 ]; then
		if [ "${CI:-}" = true ]; then
			echo "Bail out! $test_name needs root, and CI must not skip it"
			exit 1
		fi
		echo "1..0 # SKIP needs root (run as root or in CI)"
		exit 0
	fi
}

# test_skip_all REASON: skip the script (a failure in CI).
test_skip_all() {
	if [ "${CI:-}" = true ]; then
		echo "Bail out! $test_name cannot run: $1 (CI must not skip)"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}

test_expect_success() {
	test_count=$((test_count + 1))
	desc=$1
	body=$2
	out="$TRASH/.out.$test_count"
	if (cd "$TRASH" && eval "$body") >"$out" 2>&1; then
		echo "ok $test_count - $desc"
	else
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $desc"
		sed 's/^/#   /' "$out"
		echo "#   test body:"
		printf '%s\n' "$body" | sed 's/^/#     /'
	fi
}

# expect_fail CODE CMD...: run CMD, succeed only if it exits with CODE.
expect_fail() {
	want=$1
	shift
	"$@"
	got=$?
	if [ "$got" != "$want" ]; then
		echo "expected exit $want, got $got: $*" >&2
		return 1
	fi
	return 0
}

# wait_for 'shell condition' [TIMEOUT_S]: poll every 20 ms until true; fail on timeout.
wait_for() {
	cond=$1
	limit=${2:-10}
	end=$(($(date +%s) + limit))
	while ! eval "$cond"; do
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "timed out after ${limit}s waiting for: $cond" >&2
			return 1
		fi
		sleep 0.02
	done
}

test_cmp() {
	diff -u "$1" "$2"
}

# Daemons log to files, where a sanitizer's report would go unseen: fail on any.
test_check_sanitizer_logs() {
	test_count=$((test_count + 1))
	found=$(grep -rlE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$TRASH" \
		--include='*.log' 2>/dev/null | head -5)
	if [ -z "$found" ]; then
		echo "ok $test_count - no sanitizer reports in the daemons' logs"
	else
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - sanitizer reports in the daemons' logs"
		for f in $found; do
			grep -E -A12 "ERROR: (Address|Leak)Sanitizer|runtime error:" "$f" |
				head -40 | sed 's/^/#   /'
		done
	fi
}

test_done() {
	test_cleanup_hook 2>/dev/null || true
	test_check_sanitizer_logs
	echo "1..$test_count"
	if [ "$test_failed" = 0 ] && [ -z "${SKIFF_TEST_KEEP:-}" ]; then
		rm -rf "$TRASH"
	else
		echo "# kept $TRASH"
	fi
	[ "$test_failed" = 0 ]
	exit $?
}

# Scripts may redefine this to stop what they started.
test_cleanup_hook() { :; }
