#!/bin/sh
# The supervisor survives its own crash; reboots, other users, autostop, `skiff init`.
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib/frames.sh
. "$SRC_DIR/tests/lib/frames.sh"

test_cleanup_hook() {
	skiff node down >/dev/null 2>&1
	pkill -KILL -f "$TRASH" 2>/dev/null
}

count_status() {
	skiff node queue --json |
		python3 -c "import json,sys; print(sum(1 for j in json.load(sys.stdin) if j['status']=='$1'))"
}

sup_pid() { cat "$SKIFF_HOME/supervisor.lock"; }
# No supervisor holds its lock (a pid may be a zombie's, or another process's by now).
lock_free() {
	python3 -c "import fcntl,sys; fcntl.flock(open(sys.argv[1]), fcntl.LOCK_SH | fcntl.LOCK_NB)" "$1"
}

# Active jobs, read straight from the db (no supervisor is started by this).
db_active() {
	python3 -c "import sqlite3; d=sqlite3.connect('file:$SKIFF_HOME/node.db?mode=ro', uri=True); print(d.execute('select count(*) from jobs where status < 4').fetchone()[0])"
}

N=200

test_expect_success "kill -9 of the supervisor with $N running jobs loses none" '
	skiff node up --cpus 0 >/dev/null &&
	i=0 &&
	while [ $i -lt '$N' ]; do
		skiff node submit --cpus 0 --env CODE=$((i % 7)) \
			"while [ ! -e gate ]; do $(nap 1); done; exit \$CODE" >/dev/null || exit 1
		i=$((i + 1))
	done &&
	wait_for "test \$(count_status RUNNING) = '$N'" 60 &&
	kill -9 $(sup_pid) &&
	# The jobs end while no supervisor runs: each shim records its own result.
	touch "$HOME/gate" &&
	wait_for "test \$(db_active) = 0" 60 &&
	skiff node up >/dev/null &&
	test $(count_status RUNNING) = 0 &&
	skiff node queue --json >q.json &&
	python3 - <<-\EOF
	import json
	jobs = json.load(open("q.json"))
	assert len(jobs) == 200, len(jobs)
	for j in jobs:
	    want = (j["id"] - jobs[0]["id"]) % 7
	    assert j["exit_codes"] == [want], j
	    assert j["status"] == ("SUCCEEDED" if want == 0 else "FAILED"), j
	EOF
'

test_expect_success 'kill -9 of the supervisor; restart re-adopts running jobs' '
	a=$(skiff node submit --cpus 0 "while [ ! -e gate2 ]; do $(nap 0.1); done; exit 5") &&
	b=$(skiff node submit --cpus 0 "while [ ! -e gate2 ]; do $(nap 0.1); done") &&
	wait_for "test \$(count_status RUNNING) = 2" &&
	kill -9 $(sup_pid) &&
	skiff node up >out && grep -q "supervisor started" out &&
	grep -q "2 running job(s) re-adopted" "$SKIFF_HOME/supervisor.log" &&
	test $(count_status RUNNING) = 2 &&
	touch "$HOME/gate2" &&
	wait_for "test \$(count_status RUNNING) = 0" &&
	expect_fail 100 skiff node logs --status $a >/dev/null &&
	skiff node logs --status $b >/dev/null &&
	skiff node status --json >st.json &&
	python3 -c "import json; d=json.load(open(\"st.json\")); assert d[\"running\"] == 0 and d[\"cpus_free\"] == d[\"cpus\"], d"
'

test_expect_success 'jobs that predate a reboot are FAILED_DRIVER' '
	id=$(skiff node submit --cpus 0 "sleep 4$$; true") &&
	wait_for "pgrep -f \"^sleep 4$$\" >/dev/null" &&
	skiff node down >/dev/null &&
	SKIFF_TEST_BOOT_ID=00000000-0000-0000-0000-00000000beef skiff node up >/dev/null &&
	test "$(skiff node logs --status $id)" = FAILED_DRIVER &&
	skiff node down >/dev/null && skiff node up >/dev/null &&
	{ pkill -f "^sleep 4$$" || :; }
'

test_expect_success ROOT 'the control socket refuses another uid (SO_PEERCRED)' '
	skiff node up >/dev/null &&
	# Open the file modes up so that only the peer-credential check stands in the way.
	chmod 711 "$SKIFF_HOME" "$TRASH" && chmod 666 "$SKIFF_HOME/supervisor.sock" &&
	chmod 755 "$SKIFF_BIN" &&
	expect_fail 4 setpriv --reuid=65534 --regid=65534 --clear-groups \
		env SKIFF_HOME="$SKIFF_HOME" "$SKIFF_BIN" node status 2>err &&
	grep -q "serves only its own user" err &&
	grep -q "refused a connection from uid 65534" "$SKIFF_HOME/supervisor.log" &&
	chmod 700 "$SKIFF_HOME" && chmod 600 "$SKIFF_HOME/supervisor.sock"
'

test_expect_success 'autostop runs the stop hook after the idle time, not before' '
	mkdir -p "$SKIFF_HOME/hooks" &&
	printf "#!/bin/sh\necho \$SKIFF_AUTOSTOP >\"%s/hook-ran\"\n" "$HOME" >"$SKIFF_HOME/hooks/stop" &&
	chmod +x "$SKIFF_HOME/hooks/stop" &&
	id=$(skiff node submit --cpus 0 "while [ ! -e gate3 ]; do $(nap 0.1); done") &&
	wait_for "test \"\$(skiff node logs --status $id)\" = RUNNING" &&
	skiff node autostop 0.02 --wait-for jobs >/dev/null &&
	skiff node status --json | grep -q "\"idle_minutes\": 0.02" &&
	# A running job is activity: the hook must wait for it.
	sleep 2 && test ! -e "$HOME/hook-ran" &&
	touch "$HOME/gate3" &&
	wait_for "test -e \"$HOME/hook-ran\"" 15 &&
	test "$(cat "$HOME/hook-ran")" = stop &&
	grep -q "autostop: idle for 0.02 minute(s); running the stop hook" "$SKIFF_HOME/supervisor.log"
'

test_expect_success 'autostop --cancel turns it off' '
	skiff node autostop 5 --down >/dev/null &&
	skiff node status --json | grep -q "\"down\": true" &&
	skiff node autostop --cancel >/dev/null &&
	skiff node status --json | grep -q "\"autostop\": null"
'

# A submit that came just after autostop stopped the node started a supervisor that never
# stopped again (t0700 under load: a pool cluster UP for good after its launch).
stops() { grep -c "no stop hook: cancelling the jobs" "$SKIFF_HOME/supervisor.log" || :; }
test_expect_success 'a supervisor started again after autostop stopped the node is armed again' '
	rm -f "$SKIFF_HOME/hooks/stop" &&
	n0=$(stops) &&
	skiff node autostop 0.02 --wait-for jobs >/dev/null &&
	wait_for "test \$(stops) = $((n0 + 1)) && ! kill -0 \$(sup_pid) 2>/dev/null" 15 &&
	id=$(skiff node submit --cpus 0 true) &&
	wait_for "test \"\$(skiff node logs --status $id)\" = SUCCEEDED" &&
	wait_for "test \$(stops) = $((n0 + 2))" 15 &&
	# down --all lets the node go: the next supervisor there has no autostop.
	skiff node down --all >/dev/null &&
	skiff node up >/dev/null &&
	skiff node status --json | grep -q "\"autostop\": null"
'

# A dashboard watcher'"'"'s `node call watch` that came while `skiff down` ran started the
# supervisor again, which lived until the down'"'"'s deadline killed it (13 s, and past a
# minute under load), or outlived the down on a node the cluster had let go.
test_expect_success 'after node down --all no request starts a supervisor; node up does' '
	skiff node up >/dev/null &&
	skiff node down --all >/dev/null &&
	test -f "$SKIFF_HOME/taken-down" &&
	expect_fail 4 skiff node status 2>err &&
	grep -q "this node was taken down (skiff down or stop)" err &&
	! skiff node submit --cpus 0 true 2>err &&
	grep -q "taken down" err &&
	python3 -c "$frame_py" op watch id 1 >req &&
	expect_fail 4 skiff node call <req >rep &&
	python3 -c "$frames_py" rep | grep -q "error=this node was taken down" &&
	lock_free "$SKIFF_HOME/supervisor.lock" &&
	skiff node up >/dev/null &&
	test ! -e "$SKIFF_HOME/taken-down" &&
	skiff node status >/dev/null
'

# A value past ten years (TASK_AUTOSTOP_MINUTES_MAX), NaN, infinite or negative once made
# a deadline of 1 ms: the busy node cancelled its job and stopped at once.
test_expect_success 'the autostop request refuses minutes past ten years, NaN, inf, < 0' '
	id=$(skiff node submit --cpus 0 "while [ ! -e gate4 ]; do $(nap 0.1); done") &&
	wait_for "test \"\$(skiff node logs --status $id)\" = RUNNING" &&
	pid=$(sup_pid) &&
	for v in 1e300 5256000.5 -1 nan inf 1e309 ""; do
		sock_req "$SKIFF_HOME/supervisor.sock" \
			"op|autostop|idle_minutes|$v|wait_for|none|hooks|1|hook_stop||" >r &&
		grep -q "bad idle minutes .$v.: expected a number of minutes, 0..5256000" r ||
			{ cat r; exit 1; }
	done &&
	test "$(sup_pid)" = "$pid" &&
	skiff node status --json | grep -q "\"autostop\": null" &&
	test "$(skiff node logs --status $id)" = RUNNING &&
	touch "$HOME/gate4" &&
	wait_for "test \"\$(skiff node logs --status $id)\" = SUCCEEDED"
'

test_expect_success 'node autostop refuses them too, and takes ten years' '
	id=$(skiff node submit --cpus 0 "while [ ! -e gate5 ]; do $(nap 0.1); done") &&
	wait_for "test \"\$(skiff node logs --status $id)\" = RUNNING" &&
	pid=$(sup_pid) &&
	for v in 1e300 5256001 -1 nan inf -inf; do
		expect_fail 2 skiff node autostop --wait-for none -- "$v" 2>err &&
		grep -q "bad IDLE_MINUTES .$v.: expected a number of minutes, 0..5256000" err ||
			{ cat err; exit 1; }
	done &&
	skiff node status --json | grep -q "\"autostop\": null" &&
	skiff node autostop 5256000 --wait-for none >out &&
	grep -q "after 5256000 idle minute(s)" out &&
	skiff node status --json | grep -q "\"idle_minutes\": 5256000" &&
	test "$(skiff node logs --status $id)" = RUNNING &&
	test "$(sup_pid)" = "$pid" &&
	skiff node autostop --cancel >/dev/null &&
	touch "$HOME/gate5" &&
	wait_for "test \"\$(skiff node logs --status $id)\" = SUCCEEDED"
'

test_expect_success ROOT 'skiff init as PID 1 reaps orphaned zombies and returns CMD status' '
	skiff node down >/dev/null &&
	# The grandchild is orphaned at once and exits after 0.3 s: only PID 1 can reap it.
	expect_fail 7 unshare --pid --fork --mount-proc env SKIFF_HOME="$TRASH/inithome" \
		"$SKIFF_BIN" init -- sh -c "
			sh -c \"sleep 0.3 &\"
			sleep 1.5
			ps -eo pid,stat,comm > \"$TRASH/ps.out\"
			echo \$\$ > \"$TRASH/cmd.pid\"
			exit 7" &&
	cat ps.out &&
	! awk "\$2 ~ /^Z/" ps.out | grep . &&
	grep -q " skiff" ps.out
'

test_expect_success ROOT 'skiff init forwards SIGTERM to CMD and exits with its status' '
	{ (unshare --pid --fork --kill-child env SKIFF_HOME="$TRASH/inithome2" \
		"$SKIFF_BIN" init -- sh -c "trap \"exit 42\" TERM; touch \"$TRASH/ready\"; while :; do sleep 0.05; done" ;
	 echo $? >rc) & } &&
	wait_for "test -e ready" &&
	u=$(pgrep -f "^unshare --pid --fork --kill-child env SKIFF_HOME=$TRASH/inithome2") &&
	init=$(pgrep -P $u) &&
	kill -TERM $init &&
	wait_for "test -s rc" &&
	test "$(cat rc)" = 42
'

test_expect_success 'a supervisor whose state dir is removed stops on its own' '
	h="$TRASH/gone-home" &&
	SKIFF_HOME=$h skiff node up >out && pid=$(sed -n "s/.*(pid \([0-9]*\)).*/\1/p" out) &&
	test -n "$pid" && kill -0 "$pid" &&
	rm -rf "$h" &&
	wait_for "! kill -0 $pid 2>/dev/null" 20
'


test_expect_success 'node up waits on the readiness line; neither the supervisor nor a job keeps the pipe' '
	h="$TRASH/ready-home" &&
	SKIFF_HOME=$h skiff node up >out && pid=$(sed -n "s/.*(pid \([0-9]*\)).*/\1/p" out) &&
	test -n "$pid" &&
	tr "\000" " " </proc/$pid/cmdline >cmdline && cat cmdline &&
	grep -q "__supervisor --ready-fd [0-9]" cmdline &&
	ls -l /proc/$pid/fd >fds && ! grep "pipe:" fds &&
	id=$(SKIFF_HOME=$h skiff node submit --cpus 0 "ls -l /proc/\$\$/fd") &&
	SKIFF_HOME=$h skiff node logs $id >jobfds && cat jobfds &&
	! grep "pipe:" jobfds &&
	SKIFF_HOME=$h skiff node down
'

test_expect_success 'a supervisor that fails at its start is reported as such, not as a timeout' '
	h="$TRASH/bad-home" && mkdir -p "$h/node.db" &&
	! SKIFF_HOME=$h skiff node up >out 2>&1 && cat out &&
	grep -q "the supervisor exited at start-up" out &&
	! grep -q "did not accept requests" out
'

test_done
