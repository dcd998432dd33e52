#!/bin/sh
# Fault injection on a node: kill -9 of the supervisor, of shims and of submitting
# clients at random moments during a storm of submits and cancels, and of `skiff launch`;
# a full disk (a small tmpfs as SKIFF_HOME and as the job log dir); a supervisor start
# that races a dying one; restarts and a changed boot id; clock jumps. After each: the
# database is intact, no job is lost, duplicated or stuck, and every finished job has its
# true exit status. The full disk and the time namespace need root (skipped otherwise, a
# failure in CI). The network faults (a node that disappears during bootstrap, sync and
# streaming) are in t0911. See docs/reliability.md.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || test_skip_all "needs python3 to read the database and --json"

test_cleanup_hook() {
	# Jobs that wait on a gate file: let them end whatever a failed test left.
	touch "$HOME/gate1" "$HOME/gate2" 2>/dev/null
	timeout 60 "$SKIFF_BIN" down k1 >/dev/null 2>&1
	skiff node down >/dev/null 2>&1
	SKIFF_HOME=$TRASH/timens-home skiff node down >/dev/null 2>&1
	[ -n "${FULL_HOME:-}" ] && SKIFF_HOME=$FULL_HOME skiff node down >/dev/null 2>&1
	pkill -KILL -f "$TRASH" 2>/dev/null
	if [ -n "${FULL_MNT:-}" ] && mountpoint -q "$FULL_MNT"; then
		pkill -KILL -f "$FULL_MNT" 2>/dev/null
		cp -a "$FULL_MNT" "$TRASH/full-copy" 2>/dev/null
		umount -l "$FULL_MNT"
	fi
}

sup_pid() { cat "$SKIFF_HOME/supervisor.lock" 2>/dev/null; }
# is_ours PID WORD: PID runs skiff's WORD (__supervisor, __shim) for this SKIFF_HOME. A pid
# from the lock file or the db may be stale, and reused by another process by now.
is_ours() {
	{ tr "\0" "\n" <"/proc/$1/cmdline" | grep -qx -- "$2" &&
		tr "\0" "\n" <"/proc/$1/environ" | grep -qxF "SKIFF_HOME=$SKIFF_HOME"; } 2>/dev/null
}
# live_sup: the running supervisor's pid, or nothing.
live_sup() {
	_p=$(sup_pid)
	[ -n "$_p" ] && is_ours "$_p" __supervisor && echo "$_p"
}
FULL_MNT=$TRASH/full
FULL_HOME=$FULL_MNT/home

# db QUERY: one read-only query on the node db (no supervisor needed).
db() {
	python3 -c "import sqlite3,sys; d=sqlite3.connect('file:'+sys.argv[1]+'?mode=ro', uri=True, timeout=10)
for r in d.execute(sys.argv[2]): print(*r)" "$SKIFF_HOME/node.db" "$1"
}
db_active() { db "select count(*) from jobs where status < 4"; }
integrity() { db "pragma integrity_check"; }
# job_field ID FIELD: one field of a job from `node queue --json`, as JSON.
job_field() {
	skiff node queue --json "$1" |
		python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin)[0]['$2']))"
}

# rnd N: a number in 0..N-1 from a seeded sequence (the seed is printed: a failure can
# be replayed with SKIFF_FAULT_SEED).
SEED=${SKIFF_FAULT_SEED:-$(date +%s)}
echo "# seed $SEED"
awk -v s="$SEED" 'BEGIN { srand(s); for (i = 0; i < 5000; i++) print int(rand() * 1000000) }' \
	>"$TRASH/rnd"
echo 0 >"$TRASH/rnd.pos"
rnd() {
	_k=$(($(cat "$TRASH/rnd.pos") + 1))
	echo $_k >"$TRASH/rnd.pos"
	echo $(($(sed -n "${_k}p" "$TRASH/rnd") % $1))
}

# storm S N: N submits named sS-I-cCODE whose job exits CODE; acknowledged ones are
# recorded as "ID NAME" in acked.S. The supervisor may be dead at any moment: submit
# starts it again (or fails, and then nothing was acknowledged).
storm() {
	_i=0
	while [ $_i -lt "$2" ]; do
		_c=$(((_i * 3 + $1) % 7))
		_n=s$1-$_i-c$_c
		_id=$(timeout 60 "$SKIFF_BIN" node submit --cpus 0 -n "$_n" "sleep 0.$((_i % 5)); exit $_c" 2>>"$TRASH/submit.err") &&
			echo "$_id $_n" >>"$TRASH/acked.$1"
		_i=$((_i + 1))
		sleep 0.1
	done
	touch "$TRASH/storm.$1.done"
}

# A random running shim of this node (from the db's rows), or nothing.
some_shim() {
	db "select id, shim_pid from jobs where status in (2, 3) and shim_pid > 0" >"$TRASH/shims"
	_n=$(wc -l <"$TRASH/shims")
	[ "$_n" -gt 0 ] || return 1
	sed -n "$(($(rnd "$_n") + 1))p" "$TRASH/shims"
}

test_expect_success 'storm: submits and cancels while supervisor, shims and clients are killed' '
	skiff node up --cpus 0 >/dev/null &&
	: >killed-shims && : >cancelled && : >killed-clients &&
	{ storm 1 50 & } &&
	{ storm 2 50 & } &&
	k=0 &&
	while { [ ! -e storm.1.done ] || [ ! -e storm.2.done ]; } && [ $k -lt 500 ]; do
		k=$((k + 1))
		case $(rnd 5) in
		0)	p=$(live_sup) && kill -9 "$p" 2>/dev/null && echo "k$k: supervisor $p" ;;
		1)	if s=$(some_shim); then
				set -- $s
				is_ours "$2" __shim && kill -9 "$2" 2>/dev/null &&
					echo "$1" >>killed-shims && echo "k$k: shim of job $1"
			fi ;;
		2)	id=$(cat acked.* 2>/dev/null | awk "NR == $(rnd 60) + 1 { print \$1 }")
			[ -n "$id" ] && echo "$id" >>cancelled && skiff node cancel "$id" >/dev/null 2>&1
			echo "k$k: cancel ${id:-none}" ;;
		*)	# A client killed mid-submit: its job exists once or not at all. A client
			# takes a few ms: the supervisor is stopped meanwhile, so that the kill
			# lands while the request is in flight.
			p=$(live_sup)
			[ -n "$p" ] && kill -STOP "$p" 2>/dev/null
			skiff node submit --cpus 0 -n "k$k-c3" "exit 3" >/dev/null 2>&1 &
			c=$!
			sleep 0.0$(rnd 5)
			kill -9 $c 2>/dev/null && echo "k$k-c3" >>killed-clients
			[ -n "$p" ] && kill -CONT "$p" 2>/dev/null
			echo "k$k: client" ;;
		esac
		sleep 0.$(rnd 3)$(rnd 10)
	done >chaos.log &&
	wait &&
	test -e storm.1.done && test -e storm.2.done &&
	awk "{ print \$2 }" chaos.log | sort | uniq -c | tr "\n" " " >"$TRASH/storm.summary" &&
	echo "$k chaos steps; $(cat acked.* | wc -l) submits acknowledged" >>"$TRASH/storm.summary" &&
	skiff node up >/dev/null &&
	wait_for "test \$(db_active) = 0" 60
'

test_expect_success 'storm: the database is intact' '
	test "$(integrity)" = ok
'

test_expect_success 'storm: no job lost, duplicated or stuck; every exit status is true' '
	skiff node queue --json >q.json &&
	cat acked.* >acked &&
	python3 - <<-\EOF
	import json, re
	jobs = json.load(open("q.json"))
	acked = dict(l.split() for l in open("acked"))
	shims = set(open("killed-shims").read().split())
	cancelled = set(open("cancelled").read().split())
	names = [j["name"] for j in jobs]
	dup = {n for n in names if names.count(n) > 1}
	assert not dup, "duplicated: %s" % dup
	byid = {str(j["id"]): j for j in jobs}
	for i, n in acked.items():
	    assert i in byid and byid[i]["name"] == n, "lost: %s %s" % (i, n)
	counts = {}
	for j in jobs:
	    i, st = str(j["id"]), j["status"]
	    counts[st] = counts.get(st, 0) + 1
	    m = re.search(r"-c(\d)$", j["name"])
	    assert m, j
	    code = int(m.group(1))
	    if st in ("SUCCEEDED", "FAILED"):
	        assert j["exit_codes"] == [code], j
	        assert st == ("SUCCEEDED" if code == 0 else "FAILED"), j
	    elif st == "CANCELLED":
	        assert i in cancelled, "cancelled but never asked: %s" % j
	    elif st == "FAILED_DRIVER":
	        assert i in shims, "FAILED_DRIVER without a killed shim: %s" % j
	    else:
	        raise AssertionError("not final: %s" % j)
	print(len(jobs), "jobs:", counts)
	EOF
'
echo "# storm: $(cat "$TRASH/storm.summary" 2>/dev/null)"

test_expect_success 'kill -9 of the launcher mid-launch: the cluster and its jobs stay sound' '
	for k in 1 2 3 4 5 6; do
		"$SKIFF_BIN" launch -c k1 -n "l$k" "sleep 0.3; exit 3" >/dev/null 2>&1 &
		p=$!
		sleep 0.$(rnd 4)$(rnd 10)
		kill -9 $p 2>/dev/null && echo "launch l$k killed"
		wait $p 2>/dev/null || :
	done >lkills &&
	cat lkills &&
	# A kill that lands on no launch proves nothing: at least one must hit one mid-way.
	{ test -s lkills || { echo "no kill -9 landed on a running launch"; exit 1; }; } &&
	{ timeout 120 "$SKIFF_BIN" launch -c k1 -n final "exit 3" >final.out 2>&1; echo $? >final.rc; } &&
	{ test "$(cat final.rc)" = 100 || { cat final.out final.rc; exit 1; }; } &&
	wait_for "skiff queue k1 --json 2>/dev/null >st.out && ! grep -qE \"PENDING|RUNNING|SETTING_UP|INIT\" st.out" 60 &&
	skiff queue k1 --json >k.json &&
	python3 - <<-\EOF &&
	import json
	jobs = json.load(open("k.json"))
	killed = {l.split()[1] for l in open("lkills")}
	names = [j["name"] for j in jobs]
	assert len(names) == len(set(names)), names
	assert "final" in names, names
	ran = 0
	for j in jobs:
	    if j["status"] == "FAILED" and j["exit_codes"] == [3]:
	        ran += 1
	        continue
	    # Killed after its row, before its rank reached the node: it never ran, and says so.
	    assert j["name"] in killed and j["status"] == "FAILED_DRIVER" and \
	        j["exit_codes"] == [] and j["reason"].startswith("never submitted"), j
	print(len(jobs), "jobs, each once:", ran, "FAILED with exit code 3,",
	      len(jobs) - ran, "killed before their rank was sent, never run")
	EOF
	python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"pragma integrity_check\").fetchone()[0])" \
		"$SKIFF_HOME/launcher.db" >ic && test "$(cat ic)" = ok &&
	timeout 60 "$SKIFF_BIN" down k1 >/dev/null
'

# ---- a full disk -----------------------------------------------------------------------
# A 4 MiB tmpfs holds SKIFF_HOME (the db, the supervisor's log and the job logs). A filler
# file takes every free byte; it is written only after checking that the tmpfs is mounted
# there, and never more than the tmpfs can hold.

full_on() {
	mountpoint -q "$FULL_MNT" && [ "$(stat -f -c %T "$FULL_MNT")" = tmpfs ] || return 1
	dd if=/dev/zero of="$FULL_MNT/filler" bs=64k count=80 2>/dev/null
	test "$(df -k --output=avail "$FULL_MNT" | tail -n 1 | tr -d " ")" = 0
}
full_off() { rm -f "$FULL_MNT/filler"; }

test_expect_success ROOT 'full disk: the supervisor serves, jobs fail clearly, results land after' '
	skiff node down >/dev/null &&
	mkdir -p "$FULL_MNT" && mount -t tmpfs -o size=4m,mode=0700 tmpfs "$FULL_MNT" &&
	export SKIFF_HOME=$FULL_HOME &&
	skiff node up --cpus 0 >/dev/null &&
	ok=$(skiff node submit --cpus 0 "echo before") &&
	wait_for "test \"\$(skiff node logs --status $ok)\" = SUCCEEDED" &&
	a=$(skiff node submit --cpus 0 "while [ ! -e \"$FULL_MNT/gate\" ]; do $(nap 0.05); done; exit 3") &&
	wait_for "test \"\$(skiff node logs --status $a)\" = RUNNING" &&
	touch "$FULL_MNT/gate.new" &&
	full_on &&
	# It keeps serving, and a submit says why it cannot take the job.
	skiff node status >/dev/null && skiff node queue >/dev/null &&
	expect_fail 1 skiff node submit --cpus 0 "echo during" 2>err &&
	grep "the disk that holds .$FULL_HOME. is full" err &&
	# A job that ends now cannot be recorded yet: it must not be lost, nor stuck after.
	mv "$FULL_MNT/gate.new" "$FULL_MNT/gate" &&
	wait_for "! pgrep -f \"$FULL_MNT/gate\" >/dev/null" &&
	sleep 2 &&
	test "$(skiff node logs --status $a)" = RUNNING &&
	kill -0 $(sup_pid) &&
	full_off &&
	wait_for "test \"\$(skiff node logs --status $a)\" = FAILED" &&
	# The shim said why once, not at every try (each try a line on the full disk), and
	# said when the database took its write.
	test "$(grep -c "skiff-shim: error: node database .*: query failed" \
		"$FULL_HOME/supervisor.log" || :)" -le 1 &&
	grep -q "skiff-shim: job $a: the node database takes writes again" "$FULL_HOME/supervisor.log" &&
	test "$(job_field $a exit_codes)" = "[3]" &&
	b=$(skiff node submit --cpus 0 "echo after") &&
	wait_for "test \"\$(skiff node logs --status $b)\" = SUCCEEDED" &&
	test "$(skiff node logs $b)" = after &&
	test "$(integrity)" = ok &&
	skiff node down >/dev/null
'

# ---- a start that races a dying supervisor --------------------------------------------

test_expect_success 'a start that finds the lock still held by a dying supervisor retries' '
	skiff node down >/dev/null &&
	# What a supervisor killed a moment ago looks like: its lock held a little longer.
	{ flock "$SKIFF_HOME/supervisor.lock" sleep 1 & } &&
	wait_for "! flock -n \"$SKIFF_HOME/supervisor.lock\" true" &&
	timeout 14 "$SKIFF_BIN" node up >out &&
	grep -q "supervisor started" out &&
	wait &&
	skiff node status >/dev/null
'

# ---- restarts and a changed boot id: what is queued stays queued --------------------

test_expect_success 'a restart (down/up, kill -9) keeps pending jobs pending' '
	skiff node down >/dev/null &&
	skiff node up --cpus 1 >/dev/null &&
	a=$(skiff node submit --cpus 1 "while [ ! -e gate1 ]; do $(nap 0.05); done") &&
	b=$(skiff node submit --cpus 1 "exit 4") &&
	wait_for "test \"\$(skiff node logs --status $a)\" = RUNNING" &&
	test "$(skiff node logs --status $b)" = PENDING &&
	skiff node down >/dev/null && skiff node up >/dev/null &&
	test "$(skiff node logs --status $b)" = PENDING &&
	kill -9 $(sup_pid) && skiff node up >/dev/null &&
	test "$(skiff node logs --status $b)" = PENDING &&
	touch "$HOME/gate1" &&
	wait_for "test \$(db_active) = 0" 20 &&
	test "$(skiff node logs --status $a)" = SUCCEEDED &&
	expect_fail 100 skiff node logs --status $b >/dev/null &&
	test "$(job_field $b exit_codes)" = "[4]"
'

test_expect_success 'a changed boot id: running jobs are FAILED_DRIVER, pending ones run' '
	a=$(skiff node submit --cpus 1 "while [ ! -e gate2 ]; do $(nap 0.05); done") &&
	b=$(skiff node submit --cpus 1 "exit 5") &&
	wait_for "test \"\$(skiff node logs --status $a)\" = RUNNING" &&
	skiff node down >/dev/null &&
	SKIFF_TEST_BOOT_ID=00000000-0000-0000-0000-0000000b0071 skiff node up >/dev/null &&
	test "$(skiff node logs --status $a)" = FAILED_DRIVER &&
	job_field $a reason | grep -q "the node rebooted before the job ended" &&
	wait_for "test \$(db_active) = 0" 20 &&
	test "$(job_field $b exit_codes)" = "[5]" &&
	touch "$HOME/gate2" &&
	test "$(integrity)" = ok
'

# ---- clock jumps -----------------------------------------------------------------------
# The host clock is never changed here. Every timeout in the supervisor and the shim is a
# CLOCK_MONOTONIC deadline (lib/util.c now_ms()), which a wall-clock step cannot move;
# the lint below keeps it so. A time namespace then runs a whole node with its monotonic
# and boot clocks 30 years ahead (unshare --time): deadlines in milliseconds past 2^31 and
# start times past 2^32 ticks must still work (cancel grace, autostop, re-adoption).

test_expect_success 'lint: supervisor/ reads no wall clock for its deadlines' '
	grep -n "CLOCK_MONOTONIC" "$SRC_DIR/lib/util.c" | grep -q . &&
	! grep -nE "CLOCK_REALTIME|gettimeofday|[^_]time\(NULL\)|\<sleep\(|usleep\(" \
		"$SRC_DIR"/supervisor/*.c
'

test_expect_success ROOT 'a node whose monotonic clock is 30 years ahead: grace, re-adoption' '
	skiff node down >/dev/null &&
	export SKIFF_HOME="$TRASH/timens-home" &&
	unshare --time --monotonic 1000000000 --boottime 1000000000 --fork \
		"$SKIFF_BIN" node up --cpus 0 --cancel-grace 1 >/dev/null &&
	a=$(skiff node submit --cpus 0 "trap \"\" TERM; while :; do $(nap 0.05); done") &&
	b=$(skiff node submit --cpus 0 "while [ ! -e gate3 ]; do $(nap 0.05); done; exit 6") &&
	wait_for "test \"\$(skiff node logs --status $a)\" = RUNNING" &&
	wait_for "test \"\$(skiff node logs --status $b)\" = RUNNING" &&
	# Re-adoption compares start times read inside the namespace.
	kill -9 $(sup_pid) &&
	unshare --time --monotonic 1000000000 --boottime 1000000000 --fork \
		"$SKIFF_BIN" node up >/dev/null &&
	grep -q "2 running job(s) re-adopted" "$SKIFF_HOME/supervisor.log" &&
	# SIGTERM is ignored: only the grace deadline (1 s) brings the SIGKILL.
	skiff node cancel $a >/dev/null &&
	wait_for "test \"\$(skiff node logs --status $a)\" = CANCELLED" 15 &&
	touch "$HOME/gate3" &&
	wait_for "test \"\$(skiff node logs --status $b)\" = FAILED" &&
	test "$(job_field $b exit_codes)" = "[6]" &&
	skiff node down >/dev/null
'

test_done
