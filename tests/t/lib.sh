# Test library for skiff's integration tests, in the style of git's t/test-lib.sh.
# Each tNNNN-name.sh sources this file, calls test_expect_success for each case and
# ends with test_done. Output is TAP, read by prove(1).
#
#   . "$(dirname "$0")/lib.sh"
#   test_expect_success 'version runs' '
#       skiff version >out && grep -q "^skiff " out
#   '
#   test_expect_success ROOT 'version runs in an empty chroot' '...'
#   test_done
#
# Each test runs in a subshell in the script's scratch dir ($TRASH, which holds SKIFF_HOME
# and HOME), removed at the end unless a test failed or SKIFF_TEST_KEEP is set.
#
# Helpers: skiff (the binary under test), python3 (the interpreter, not a shim), procs
# TEST... (this machine's processes), wait_for COND [TIMEOUT_S], expect_fail CODE
# CMD..., test_cmp WANT GOT; prerequisites: test_set_prereq NAME, test_lazy_prereq NAME
# SCRIPT, test_have_prereq NAME[,NAME...]; skips: test_skip DESC REASON (one test),
# test_skip_all REASON and test_skip_unless_root (the whole script). Under CI=true every
# skip is a failure. A body whose && chain is broken fails (the chain lint, below). With
# SKIFF_TEST_FAILLOG=DIR each failed test's report is also appended to DIR/SCRIPT.txt
# (tests/run-tests prints them at the end). docs/testing.md says more.
#
# Variables: SKIFF_BIN (the binary under test: SKIFF_TEST_BIN, else build/skiff),
# SKIFF_STATIC_BIN (a static skiff, for what runs where there is no libc), SRC_DIR,
# TEST_DIR, SHARED_DIR, TRASH.

set -u

TEST_DIR=$(cd "$(dirname "$0")" && pwd)
SRC_DIR=$(cd "$TEST_DIR/../.." && pwd)
SKIFF_BIN=${SKIFF_TEST_BIN:-$SRC_DIR/${B:-build}/skiff}
SHARED_DIR=$(cd "$SRC_DIR/.." && pwd)/shared
test_name=$(basename "$0" .sh)
TRASH=${TMPDIR:-/tmp}/skiff-test.$test_name.$$
rm -rf "$TRASH" "$TRASH.reports"
mkdir -p "$TRASH"
export SKIFF_HOME="$TRASH/home"
export HOME="$TRASH/userhome"
mkdir -p "$HOME"
export NO_COLOR=1
unset SKIFF_DEBUG

test_count=0
test_failed=0

[ -x "$SKIFF_BIN" ] || { echo "Bail out! $SKIFF_BIN is not built (run make)"; exit 1; }

skiff() {
	"$SKIFF_BIN" "$@"
}

# python3 as an interpreter itself, looked up once and first on PATH (a link in
# $TRASH/.python, for everything the tests start): through a version manager's shim
# (pyenv's runs a dozen bash programs before it) a call took 0.47 CPU-s on the project's
# VM against 0.08 s, and the scripts call it hundreds of times beside each other. Debian's
# own, which tests/packages.list installs with its venv and pip, where it is there: 24 ms
# of CPU a start against 74 for a build whose site-packages loads modules at every start
# (.pth files), over the 1,150 calls of a run. A link, not a shell function: a python3
# started in the background is the process $! names.
if [ -x /usr/bin/python3 ]; then
	_tl_py=/usr/bin/python3
else
	_tl_py=$(python3 -c "import sys; print(sys.executable)" 2>/dev/null) || _tl_py=
fi
if [ -n "$_tl_py" ] && [ -x "$_tl_py" ] &&
	mkdir -p "$TRASH/.python" && ln -sf "$_tl_py" "$TRASH/.python/python3"; then
	PATH=$TRASH/.python:$PATH
	export PATH
fi

# nap SECS: the shell text of a pause that starts no process, for a job's loop that waits
# on a file: "while [ ! -e gate ]; do $(nap 0.1); done". bash's read times out on a FIFO
# that nobody writes; a shell whose read has no fractional -t (dash, busybox), or a node
# that does not see $TRASH, sleeps instead. A `sleep` per poll was a fork and an exec,
# 13 ms of CPU each on the project's VM: t0210's 200 gated jobs polling once a second
# were two CPUs' worth under ASan, where the gates stay closed longer, and the polls
# slowed everything that would open them (the jobs' polls were 46% of the ASan lane's CPU).
NAP_FIFO=$TRASH/.nap
mkfifo "$NAP_FIFO"
nap() {
	printf "{ read -t %s <>'%s'; [ \$? -gt 128 ]; } 2>/dev/null || sleep %s" "$1" "$NAP_FIFO" "$1"
}

test_is_static() {
	file -L "$1" 2>/dev/null | grep -q "statically linked"
}

# What runs where there is no libc (an empty chroot, a busybox node, a container) needs
# a static skiff: SKIFF_BIN when it is static (make test), else the static build beside
# it (make test-asan, where SKIFF_BIN is the ASan build); empty when there is none.
if test_is_static "$SKIFF_BIN"; then
	SKIFF_STATIC_BIN=$SKIFF_BIN
elif test_is_static "$SRC_DIR/${B:-build}/skiff"; then
	SKIFF_STATIC_BIN=$SRC_DIR/${B:-build}/skiff
else
	SKIFF_STATIC_BIN=
fi
TEST_WAIT_SCALE=1
[ "$SKIFF_STATIC_BIN" = "$SKIFF_BIN" ] || TEST_WAIT_SCALE=3
case ${SKIFF_TEST_WAIT_SCALE:-} in
'' | *[!0-9]* | 0) ;;
*) TEST_WAIT_SCALE=$SKIFF_TEST_WAIT_SCALE ;;
esac

# ---- prerequisites (git's test_set_prereq / test_lazy_prereq) ----------------------------
#
# A test that needs something the machine may lack names it: test_expect_success
# ROOT,STATIC 'desc' 'body'. A missing prerequisite makes the test a TAP skip with the
# reason, and under CI=true a failure. "!NAME" asks for NAME's absence.
# SKIFF_TEST_FAIL_PREREQS=NAME,... makes those prerequisites missing (to try the skip
# path). Prerequisites are the script's: one set inside a test body is lost with the
# body's subshell.

_tl_prereq_name_ok() {
	case $1 in
	"" | *[!A-Za-z0-9_]*) echo "Bail out! bad prerequisite name '$1'"; exit 1 ;;
	esac
}

# test_set_prereq NAME: NAME holds.
test_set_prereq() {
	_tl_prereq_name_ok "$1"
	eval "_tl_prereq_$1=1"
}

# test_lazy_prereq NAME SCRIPT: NAME holds if SCRIPT succeeds. SCRIPT runs once, in a
# subshell in $TRASH with its output discarded, when a test first asks for NAME.
test_lazy_prereq() {
	_tl_prereq_name_ok "$1"
	eval "_tl_lazy_$1=\$2"
}

# _tl_prereq NAME: succeeds if NAME holds (evaluating a lazy one the first time).
_tl_prereq() {
	case ",${SKIFF_TEST_FAIL_PREREQS:-}," in *",$1,"*) return 1 ;; esac
	eval "_tl_state=\${_tl_prereq_$1:-}"
	if [ -z "$_tl_state" ]; then
		eval "_tl_script=\${_tl_lazy_$1:-}"
		_tl_state=0
		if [ -n "$_tl_script" ] && (cd "$TRASH" && eval "$_tl_script") >/dev/null 2>&1; then
			_tl_state=1
		fi
		eval "_tl_prereq_$1=\$_tl_state"
	fi
	[ "$_tl_state" = 1 ]
}

# test_have_prereq NAME[,NAME...]: succeeds if all hold; else $test_missing_prereq lists
# those that do not.
test_have_prereq() {
	test_missing_prereq=
	_tl_list=$1
	while [ -n "$_tl_list" ]; do
		_tl_p=${_tl_list%%,*}
		case $_tl_list in *,*) _tl_list=${_tl_list#*,} ;; *) _tl_list= ;; esac
		case $_tl_p in
		!*)
			_tl_prereq_name_ok "${_tl_p#!}"
			! _tl_prereq "${_tl_p#!}" ;;
		*)
			_tl_prereq_name_ok "$_tl_p"
			_tl_prereq "$_tl_p" ;;
		esac || test_missing_prereq=${test_missing_prereq:+$test_missing_prereq,}$_tl_p
	done
	[ -z "$test_missing_prereq" ]
}

test_lazy_prereq ROOT 'test "$(id -u)" = 0'
# SKIFF_BIN is static (false under make test-asan).
test_lazy_prereq STATIC 'test -n "$SKIFF_STATIC_BIN" && test "$SKIFF_STATIC_BIN" = "$SKIFF_BIN"'
# A static skiff exists (SKIFF_STATIC_BIN), whatever SKIFF_BIN is.
test_lazy_prereq STATIC_BIN 'test -n "$SKIFF_STATIC_BIN"'
test_lazy_prereq PYTHON3 'command -v python3'

# ---- skips ---------------------------------------------------------------------------
# A skip is said in TAP with its reason; CI (CI=true) must run everything, so there a
# skip is a failure.

# test_skip DESC REASON: skip one test.
test_skip() {
	test_count=$((test_count + 1))
	if [ "${CI:-}" = true ]; then
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $1 # cannot skip in CI: $2"
	else
		echo "ok $test_count - $1 # skip $2"
	fi
}

# test_skip_all REASON: skip the whole script (a failure in CI). Call it before any test.
test_skip_all() {
	if [ "${CI:-}" = true ]; then
		echo "Bail out! $test_name cannot run: $1 (CI must not skip)"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}

# Skip the whole script unless root (a failure in CI).
test_skip_unless_root() {
	test_have_prereq ROOT || test_skip_all "needs root (run as root or in CI)"
}

# ---- running a test --------------------------------------------------------------------

# test_expect_success [PREREQ[,PREREQ...]] DESC BODY: run BODY in a subshell in $TRASH;
# the test passes if BODY exits 0.
#
# Chain lint (git's runtime check): BODY is first evaluated as `(exit 117) && BODY` with
# its output discarded. When every command is joined by &&, nothing runs and the status
# is 117; any other status means a command stands outside the chain (its failure would
# go unseen), and the test fails without being run. Commands after the break do run in
# that pass. SKIFF_TEST_CHAIN_LINT=0 turns the check off, for debugging.
test_expect_success() {
	_tl_prereqs=
	if [ $# = 3 ]; then
		_tl_prereqs=$1
		shift
	fi
	if [ $# != 2 ]; then
		echo "Bail out! test_expect_success takes [PREREQ] DESC BODY, got $# arguments"
		exit 1
	fi
	desc=$1
	body=$2
	if [ -n "$_tl_prereqs" ] && ! test_have_prereq "$_tl_prereqs"; then
		test_skip "$desc" "missing $test_missing_prereq"
		return 0
	fi
	test_count=$((test_count + 1))
	out="$TRASH/.out.$test_count"
	if [ "${SKIFF_TEST_CHAIN_LINT:-1}" != 0 ]; then
		(cd "$TRASH" && eval "(exit 117) && $body
") >/dev/null 2>&1
		_tl_lint=$?
		if [ "$_tl_lint" != 117 ]; then
			test_failed=$((test_failed + 1))
			echo "not ok $test_count - $desc"
			echo "#   broken &&-chain (or a syntax error): the body, after (exit 117) &&,"
			echo "#   exited $_tl_lint, not 117 (SKIFF_TEST_CHAIN_LINT=0 runs it anyway)"
			echo "#   test body:"
			printf '%s\n' "$body" | sed 's/^/#     /'
			return 0
		fi
	fi
	: >"$out.start"
	_tl_t0=$(date +%s%N)
	if (cd "$TRASH" && eval "$body") >"$out" 2>&1; then
		echo "ok $test_count - $desc"
		# SKIFF_TEST_TIMES=1: how long each passing test took, to find where a script waits.
		[ -z "${SKIFF_TEST_TIMES:-}" ] || echo "#   $((($(date +%s%N) - _tl_t0) / 1000000)) ms"
		rm -f "$out.start"
	else
		test_failed=$((test_failed + 1))
		{
			echo "not ok $test_count - $desc"
			sed 's/^/#   /' "$out"
			echo "#   test body:"
			printf '%s\n' "$body" | sed 's/^/#     /'
		} >"$out.report"
		cat "$out.report"
		# tests/run-tests prints these once prove is done (prove shows no diagnostics).
		if [ -n "${SKIFF_TEST_FAILLOG:-}" ] && mkdir -p "$SKIFF_TEST_FAILLOG" 2>/dev/null; then
			test_faillog "$out" >>"$SKIFF_TEST_FAILLOG/${0##*/}.txt"
		fi
		rm -f "$out.report" "$out.start"
	fi
}

# test_faillog OUT: a failed test's report for SKIFF_TEST_FAILLOG: its head and tail
# (a wait's last words come last), then the end of each daemon log the test wrote to
# (the supervisor's or the controller's side of a timeout is there, not in the output)
# and of the other text files it wrote in the trash directory.
test_faillog() {
	echo "=== ${0##*/}"
	if [ "$(wc -l <"$1.report")" -le $((TEST_FAILLOG_HEAD + TEST_FAILLOG_TAIL)) ]; then
		cat "$1.report"
	else
		head -n "$TEST_FAILLOG_HEAD" "$1.report"
		echo "#   [...]"
		tail -n "$TEST_FAILLOG_TAIL" "$1.report"
	fi
	find "$TRASH" -name '*.log' -type f -newer "$1.start" 2>/dev/null |
		head -n "$TEST_FAILLOG_LOGS" | while IFS= read -r _tf_l; do
		echo "#   --- the end of ${_tf_l#"$TRASH"/}:"
		tail -n "$TEST_FAILLOG_LOG_LINES" "$_tf_l" | sed 's/^/#   /'
	done
	# A command whose output went to a file (">out 2>err &&") says nothing in the report
	# when it is the one that failed: the ends of the text files the test wrote beside it
	# (not a binary, such as a copy of skiff: grep -I reads none of it; in the C locale, so
	# that a UTF-8 character the cut split does not make a text file look binary).
	find "$TRASH" -maxdepth 1 -type f -newer "$1.start" ! -name '.*' ! -name '*.log' \
		2>/dev/null | head -n "$TEST_FAILLOG_FILES" | while IFS= read -r _tf_l; do
		_tf_t=$(tail -c "$TEST_FAILLOG_FILE_BYTES" "$_tf_l" | LC_ALL=C grep -I '' |
			tail -n "$TEST_FAILLOG_LOG_LINES")
		[ -n "$_tf_t" ] || continue
		echo "#   --- the end of ${_tf_l#"$TRASH"/}:"
		printf '%s\n' "$_tf_t" | sed 's/^/#   /'
	done
}
TEST_FAILLOG_HEAD=50
TEST_FAILLOG_TAIL=30
TEST_FAILLOG_LOGS=6
TEST_FAILLOG_LOG_LINES=15
TEST_FAILLOG_FILES=8
TEST_FAILLOG_FILE_BYTES=2048

# node_up_said FILE: the frame `node up --frame` wrote after its SKIFF-UP line in FILE
# (cmd/node.c say_up()), as KEY=VALUE lines; nothing when there is none.
node_up_said() {
	python3 - "$1" <<-\EOF
	import struct, sys
	data = open(sys.argv[1], "rb").read()
	at = data.find(b"SKIFF-UP\n")
	if at >= 0:
	    at += len(b"SKIFF-UP\n")
	    (n,) = struct.unpack(">I", data[at:at + 4])
	    f = data[at + 4:at + 4 + n].split(b"\0")[:-1]
	    for k, v in zip(f[0::2], f[1::2]):
	        print(k.decode() + "=" + v.decode())
	EOF
}

# rank_prefix_re RANK IP_RE: a basic regex for a gang rank's log prefix, SkyPilot's
# "(head, rank=0, pid=N)" and "(workerK, rank=K, pid=N, ip=IP)" (supervisor/logprefix.h).
rank_prefix_re() {
	if [ "$1" = 0 ]; then
		printf '%s' "(head, rank=0, pid=[0-9]*)"
	else
		printf '%s' "(worker$1, rank=$1, pid=[0-9]*, ip=$2)"
	fi
}

# own_pids PID...: those of the PIDs that run with this script's SKIFF_HOME (a script
# beside this one runs the same commands: a worker of the same job ids, a packer of the
# same binary).
own_pids() {
	for _op in "$@"; do
		tr "\000" "\n" <"/proc/$_op/environ" 2>/dev/null |
			grep -qxF "SKIFF_HOME=$SKIFF_HOME" && echo "$_op"
	done
	return 0
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

# sock_req_raw SOCK HEX-HEADER BODY: one raw request to a supervisor's control socket
# ("|" in BODY is a NUL); prints the reply, NULs as spaces.
sock_req_raw() {
	python3 - "$@" <<-\EOF
	import socket, struct, sys
	s = socket.socket(socket.AF_UNIX)
	s.settimeout(20)
	s.connect(sys.argv[1])
	s.sendall(bytes.fromhex(sys.argv[2]) + sys.argv[3].encode().replace(b"|", b"\0"))
	hdr = b""
	while len(hdr) < 4:
	    c = s.recv(4 - len(hdr))
	    if not c: break
	    hdr += c
	n = struct.unpack(">I", hdr)[0] if len(hdr) == 4 else 0
	body = b""
	while len(body) < n:
	    c = s.recv(n - len(body))
	    if not c: break
	    body += c
	print(body.replace(b"\0", b" ").decode(errors="replace"))
	EOF
}

# sock_req SOCK BODY: the same, with the header that BODY's length makes.
sock_req() {
	sock_req_raw "$1" "$(printf %08x "$(printf %s "$2" | wc -c)")" "$2"
}

# procs [-p] TEST... [-o TEST...]...: the processes on this machine that pass every TEST
# of one of the groups (-o starts the next), a "PID COMMAND LINE" line each (the command
# line's NULs as spaces); with -p, the pid alone. Never this probe nor the shell that ran
# it. One python3 for the whole of /proc: a shell loop over it ran a few programs per
# process, seconds of CPU a look on a busy machine, and wait_for looks often. TESTs:
#   exe-under DIR   the executable is under DIR
#   cmd GLOB        the command line matches GLOB (a shell pattern, whole: `sleep 3*`)
#   cmd-has S       the command line holds the string S
#   arg WORD        one of its arguments is WORD
#   env LINE        its environment has LINE (NAME=VALUE, whole)
#   env-prefix S    its environment has a line that starts with S
procs() {
	python3 -S - "$@" <<-\EOF
	import fnmatch, os, sys

	args, pid_only, groups = sys.argv[1:], False, [[]]
	if args[:1] == ["-p"]:
	    pid_only, args = True, args[1:]
	while args:
	    if args[0] == "-o":
	        groups.append([])
	        args = args[1:]
	        continue
	    if len(args) < 2:
	        sys.exit(f"procs: {args[0]!r} wants a value")
	    groups[-1].append((args[0], args[1]))
	    args = args[2:]

	def read(path):
	    with open(path, "rb") as f:
	        return f.read().decode(errors="replace").rstrip("\0").split("\0")

	def passes(pid, argv, test, value):
	    try:
	        return check(pid, argv, test, value)
	    except OSError:
	        return False

	def check(pid, argv, test, value):
	    if test == "exe-under":
	        return os.readlink(f"/proc/{pid}/exe").startswith(value.rstrip("/") + "/")
	    if test == "cmd":
	        return fnmatch.fnmatchcase(" ".join(argv), value)
	    if test == "cmd-has":
	        return value in " ".join(argv)
	    if test == "arg":
	        return value in argv
	    env = read(f"/proc/{pid}/environ")
	    if test == "env":
	        return value in env
	    if test == "env-prefix":
	        return any(e.startswith(value) for e in env)
	    sys.exit(f"procs: no test {test!r}")

	skip = {os.getpid(), os.getppid()}
	for name in sorted(os.listdir("/proc"), key=lambda n: (len(n), n)):
	    if not name.isdigit() or int(name) in skip:
	        continue
	    try:
	        argv = read(f"/proc/{name}/cmdline")
	    except OSError:
	        continue
	    if any(all(passes(name, argv, t, v) for t, v in g) for g in groups if g):
	        print(name if pid_only else f"{name} {' '.join(argv)}")
	EOF
}

# gang_watchers: the pids of the gang watchers (`skiff __gang`) of this $SKIFF_HOME.
gang_watchers() {
	procs -p arg __gang env "SKIFF_HOME=$SKIFF_HOME"
}

# wait_for 'shell condition' [TIMEOUT_S]: poll until true (after 20 ms, 50 ms, then every
# 100 ms: a long wait's polls, each a few processes, are CPU the scripts beside it lack);
# fail on timeout.
# The limit is TIMEOUT_S times TEST_WAIT_SCALE: 1, or 3 for a binary that is not the
# static build (the ASan/UBSan one, several times slower, where 10 s waits ran out in CI
# beside the other sanitizer scripts); SKIFF_TEST_WAIT_SCALE sets it. Only how long a
# condition may take to come true grows: what is asserted stays the same.
wait_for() {
	cond=$1
	limit=$((${2:-10} * TEST_WAIT_SCALE))
	end=$(($(date +%s) + limit))
	_wf_s=0.02
	while ! eval "$cond"; do
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "timed out after ${limit}s waiting for: $cond" >&2
			return 1
		fi
		sleep $_wf_s
		case $_wf_s in
		0.02) _wf_s=0.05 ;;
		0.05) _wf_s=0.1 ;;
		esac
	done
}

test_cmp() {
	diff -u "$1" "$2"
}

# A daemon (supervisor, shim, controller, worker, keeper, gang watcher) logs to a file, where
# its death would go unseen: a "BUG:" line (die() on a broken invariant, xsnprintf's
# truncation) or a sanitizer's report in a log (*.log) or a test's output is a failure of
# the script. Scanned: $TRASH (SKIFF_HOME, HOME, the tests' outputs) at test_done, and each
# directory handed to test_scan_daemon_logs before it is removed (tests/lib/nodes.sh hands
# the test nodes' homes over in nodes_down). Binary files are not read.
TEST_DAEMON_DEATH='(^|[^A-Za-z_])BUG: |ERROR: (Address|Leak|Thread)Sanitizer|runtime error:'

# test_scan_daemon_logs DIR...: note the files under DIR that hold a report, with the
# lines around it, for test_done.
test_scan_daemon_logs() {
	for _tsd_d; do
		[ -d "$_tsd_d" ] || continue
		grep -rIlE "$TEST_DAEMON_DEATH" "$_tsd_d" --include='*.log' --include='.out.*' \
			2>/dev/null | head -5 |
			while IFS= read -r _tsd_f; do
				echo "== $_tsd_f"
				grep -E -B2 -A12 "$TEST_DAEMON_DEATH" "$_tsd_f" | head -40
			done >>"$TRASH/.daemon-reports.tmp"
	done
	# Kept outside the scanned names: the collected report must not report itself.
	[ ! -s "$TRASH/.daemon-reports.tmp" ] ||
		cat "$TRASH/.daemon-reports.tmp" >>"${TRASH}.reports"
	rm -f "$TRASH/.daemon-reports.tmp"
}

test_check_daemon_logs() {
	test_count=$((test_count + 1))
	test_scan_daemon_logs "$TRASH"
	if [ ! -s "${TRASH}.reports" ]; then
		echo "ok $test_count - no daemon left a BUG line or a sanitizer report"
	else
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - a daemon left a BUG line or a sanitizer report"
		sed 's/^/#   /' "${TRASH}.reports"
		if [ -z "${SKIFF_TEST_KEEP:-}" ]; then
			mv "${TRASH}.reports" "$TRASH/daemon-reports.txt"
		fi
	fi
	rm -f "${TRASH}.reports"
}

test_done() {
	test_cleanup_hook 2>/dev/null || true
	test_check_daemon_logs
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
