#!/bin/sh
# The security pass (docs/security.md): private state, secrets that reach the job through
# its environment only, limits on everything read (task files, control-socket requests,
# log lines), and lints that keep command lines quoted, process creation in one place and
# the command tables sorted.
# Other points have their tests elsewhere: the control socket refusing another uid
# (t0210), hostile sync streams (tests/unit/test-sync-hostile.c, tests/fuzz/fuzz-untar.c),
# altered or truncated binaries never run (t0500, t0911).
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || test_skip_all "needs python3 to talk to the socket and read --json"

TOKEN=tok-$$-Zq81xKXv
# The job checks the secret by its hash: the value itself must appear nowhere else.
HASH=$(printf %s "$TOKEN" | sha256sum | cut -c1-32)
cat >"$TRASH/secret.yaml" <<EOF
name: sec
secrets:
  TOKEN: $TOKEN
envs:
  PLAIN: visible
run: |
  test "\$(printf %s "\$TOKEN" | sha256sum | cut -c1-32)" = $HASH && echo token-ok
  touch "$TRASH/job-up"
  while [ ! -e "$TRASH/gate" ]; do $(nap 0.05); done
EOF

test_cleanup_hook() {
	touch "$TRASH/gate" 2>/dev/null
	for _c in s1 l2; do timeout 60 "$SKIFF_BIN" down "$_c" >/dev/null 2>&1; done
	skiff node down >/dev/null 2>&1
	pkill -KILL -f "$TRASH" 2>/dev/null
}

test_expect_success 'secrets: a job gets its secret in its environment' '
	timeout 120 "$SKIFF_BIN" launch -c s1 -d secret.yaml >launch.out 2>&1 &&
	wait_for "test -e \"$TRASH/job-up\"" 60 &&
	skiff logs s1 1 --no-follow >log.out 2>&1 && grep -q token-ok log.out
'

test_expect_success 'secrets: in no process command line, nor any skiff process environment' '
	found_job=0 bad=0 &&
	for p in /proc/[0-9]*; do
		if { tr "\0" " " <"$p/cmdline"; } 2>/dev/null | grep -qF "$TOKEN"; then
			echo "in the command line of ${p#/proc/}: $(tr "\0" " " <"$p/cmdline")"; bad=1
		fi
	done &&
	for p in /proc/[0-9]*; do
		grep -qaF "$TOKEN" "$p/environ" 2>/dev/null || continue
		exe=$(readlink "$p/exe" 2>/dev/null)
		cmd=$({ tr "\0" " " <"$p/cmdline"; } 2>/dev/null)
		case $exe in
		*/skiff|*/skiff-*) echo "in the environment of skiff ${p#/proc/}: $cmd"; bad=1 ;;
		esac
		# The job (its shell, reading its script file) is where the secret belongs.
		case $cmd in *"/logs/"*"/run.sh"*) found_job=1 ;; esac
	done &&
	test $bad = 0 &&
	# A check that could not fail would prove nothing: the job itself has it.
	test $found_job = 1
'

test_expect_success 'secrets: not in status, queue, logs, --json, nor skiff own files' '
	touch "$TRASH/gate" &&
	wait_for "skiff queue s1 --json 2>/dev/null | grep -q SUCCEEDED" 60 &&
	{
		skiff status; skiff status --json; skiff queue s1; skiff queue s1 --json
		skiff logs s1 1; skiff check --json secret.yaml
		for n in "$SKIFF_HOME"/local/s1/*/.skiff; do
			SKIFF_HOME=$n skiff node queue --json; SKIFF_HOME=$n skiff node status --json
		done
	} >all.out 2>&1 &&
	grep -q "<redacted>" all.out && grep -q token-ok all.out &&
	! grep -F "$TOKEN" all.out &&
	# Every file skiff wrote but the databases (private, 0600: checked below).
	! grep -rlF "$TOKEN" "$SKIFF_HOME" --exclude="*.db" --exclude="*.db-wal" --exclude="*.db-shm"
'

test_expect_success 'state is private: dirs 0700, files 0600 (binaries 0755 inside them)' '
	find "$SKIFF_HOME" ! -type l -perm /077 ! -path "*/.skiff/bin/skiff-*" >loose &&
	cat loose && test ! -s loose &&
	test "$(stat -c %a "$SKIFF_HOME")" = 700 &&
	for d in "$SKIFF_HOME"/local/s1/*/.skiff; do
		test "$(stat -c %a "$d")" = 700 && test "$(stat -c %a "$d/node.db")" = 600 &&
		test "$(stat -c %a "$d/supervisor.sock")" = 600 || exit 1
	done &&
	timeout 60 "$SKIFF_BIN" down s1 >/dev/null
'

# ---- limits on what is read -----------------------------------------------------------

test_expect_success 'task files: over 4 MiB, or a billion laughs, refused at once' '
	python3 -c "print(\"name: x\\nrun: |\\n\" + \"  echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\n\" * 130000)" >big.yaml &&
	expect_fail 3 skiff check big.yaml 2>err &&
	grep -q "over the limit of 4194304 bytes for a task file" err &&
	python3 - >laughs.yaml <<-\EOF &&
	print("a: &a [x, x, x, x, x, x, x, x, x, x]")
	for i in range(9):
	    p, c = chr(ord("a") + i), chr(ord("b") + i)
	    print("%s: &%s [%s]" % (c, c, ", ".join(["*" + p] * 10)))
	print("name: laughs\nrun: echo\nenvs:\n  X: *j")
	EOF
	expect_fail 3 skiff check laughs.yaml 2>err &&
	grep -q "counting each alias expansion" err
'

test_expect_success 'control socket: oversized, malformed and stalled requests' '
	skiff node up >/dev/null &&
	sock=$SKIFF_HOME/supervisor.sock &&
	sock_req_raw "$sock" 01000001 "" >r1 && grep -q "request too large (max 16777216 bytes)" r1 &&
	sock_req_raw "$sock" 00000003 "op|" >r2 && grep -q "malformed request: field without a value" r2 &&
	sock_req_raw "$sock" 00000005 "OP|x|" >r3 && grep -q "malformed request: bad field name" r3 &&
	sock_req_raw "$sock" 00000008 "op|nope|" >r4 && grep -q "unknown op" r4 &&
	# A client that sends half a header and stalls holds up no one else.
	# It says so (the file "stalled") once connected and its two bytes sent.
	{ python3 -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.send(b\"\\0\\0\")
open(sys.argv[2], \"w\").close(); time.sleep(30)" "$sock" stalled & } &&
	stall=$! &&
	wait_for "test -e stalled" &&
	timeout 10 "$SKIFF_BIN" node status >/dev/null &&
	kill $stall &&
	skiff node status >/dev/null
'

test_expect_success 'a log line longer than the stream buffer (3 MB) is shown whole, in pieces' '
	{ timeout 120 "$SKIFF_BIN" launch -c l2 --num-nodes 2 \
		"head -c 3000000 /dev/zero | tr \"\\0\" x; echo; echo after-long-line" >out 2>err ||
		{ cat err; exit 1; }; } &&
	test "$(grep -c after-long-line out)" = 2 &&
	test "$(tr -cd x <out | wc -c)" = 6000000 &&
	timeout 60 "$SKIFF_BIN" down l2 >/dev/null
'

# ---- lints over the sources -----------------------------------------------------------

test_expect_success 'lint: every shell command line built with %s was reviewed' '
	python3 "$SRC_DIR/tests/lint/cmdlines.py" >found &&
	grep -v "^#" "$SRC_DIR/tests/lint/cmdlines.txt" | cut -f1,2 | sort >reviewed &&
	sort found | comm -23 - reviewed >new &&
	{ test ! -s new || { echo "not reviewed (add to tests/lint/cmdlines.txt):"; cat new; exit 1; }; }
'

# Every C file of skiff at any depth (supervisor/jobs/ was missed by a fixed glob). The
# split stub (bootstrap/launch/stub/) is a program of its own, sent before skiff: its one
# execv hands over to skiff itself and is the reviewed exception.
test_expect_success 'lint: processes are made by lib/spawn.c only (no system, popen, exec*)' '
	(cd "$SRC_DIR" && find lib state supervisor bootstrap cmd -name "*.c" | sort >files &&
	grep -q "^supervisor/jobs/controller.c\$" files && test "$(wc -l <files)" -gt 100 &&
	xargs grep -nE "\\<(fork|vfork|execve|execv|execvp|execvpe|execl|execlp|execle|posix_spawnp?|system|popen)[[:space:]]*\\(" \
		<files && rm files) >calls &&
	# The scan sees the one place that may make processes.
	grep -q "^lib/spawn.c:" calls &&
	{ grep -v "^lib/spawn.c:" calls | grep -vE "^[^:]*:[0-9]+:[[:space:]]*(/?\*|//)" |
		grep -vx "bootstrap/launch/stub/split.c:[0-9]*:	execv(argv\[3\], argv + 3);" >bad ||
		:; } &&
	cat bad && test ! -s bad
'

test_expect_success 'lint: every command table is sorted by name (skiff help lists them so)' '
	{ python3 "$SRC_DIR/tests/lint/cmdtables.py" >tables || { cat tables; false; }; }
'

test_expect_success 'lint: the folders include one another without a cycle (docs/architecture.md)' '
	{ python3 "$SRC_DIR/tests/lint/layout.py" >graph || { cat graph; false; }; } &&
	grep -q "^bootstrap/infra -> " graph &&
	! grep -q "^bootstrap/infra -> .*bootstrap/launch" graph
'

# wait_for "! skiff X | grep -q Y" holds when skiff X itself fails (its output is empty):
# the condition must check skiff'"'"'s exit, e.g. "skiff X >o && ! grep -q Y o".
test_expect_success 'lint: no test negates a pipe from skiff (a failing skiff would pass it)' '
	{ grep -nE "!\s*skiff\b[^|&;]*\|" "$SRC_DIR"/tests/t/*.sh |
		grep -vE "^[^:]*:[0-9]+:\s*#" >bad || :; } &&
	cat bad && test ! -s bad
'

test_done
