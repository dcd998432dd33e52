#!/bin/sh
# Managed jobs on the shared local pool: once the pool is up, launches into it go on in
# parallel, bounded only by the launch limit (they take turns only to create the pool).
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || test_skip_all "needs python3 to read --json"

export SKIFF_JOBS_POLL_MS=200 SKIFF_JOBS_BACKOFF_S=1 SKIFF_JOBS_IDLE_S=3

test_cleanup_hook() {
	f=$SKIFF_HOME/jobs/controller.lock
	[ -f "$f" ] && kill -KILL "$(head -1 "$f")" 2>/dev/null
	skiff down skiff-jobs >/dev/null 2>&1
	pkill -KILL -f "$TRASH" 2>/dev/null
}

jfield() {
	skiff jobs queue --json | python3 -c "
import json,sys
for j in json.load(sys.stdin):
    if j['id'] == $1: print(j['$2'])"
}
# started ID: the job's launch worker has begun (its log says so, before any lock).
started() { grep -q "^\[launch\] job $1 task" "$SKIFF_HOME/jobs/logs/$1.log" 2>/dev/null; }
# submitted ID: its launch is done (it runs on the pool).
submitted() { grep -q "running on skiff-jobs" "$SKIFF_HOME/jobs/logs/$1.log" 2>/dev/null; }
pool_lock_free() { flock -n "$SKIFF_HOME/jobs/pool.lock" true; }

test_expect_success 'the first managed job brings the pool up' '
	skiff jobs launch -d "true" >out &&
	id=$(head -1 out) &&
	wait_for "test \"\$(jfield $id status)\" = SUCCEEDED" 60 &&
	skiff status skiff-jobs | grep -q "^skiff-jobs .*UP"
'

# Each launch waits at a gate (SKIFF_JOBS_LAUNCH_GATE, a test hook) before it launches,
# after the pool's lock if it takes it. All three reach the gate, none has submitted, and
# the pool's lock is free: had they taken it, one would hold it now and the others would
# wait on it, never reaching the gate. The gate opens; all three succeed.
test_expect_success 'launches into an UP pool do not take the pool lock' '
	wait_for "flock -n \"$SKIFF_HOME/jobs/controller.lock\" true" 30 &&
	: >"$TRASH/gate" &&
	export SKIFF_JOBS_MAX_LAUNCHING=3 SKIFF_JOBS_LAUNCH_GATE="$TRASH/gate" &&
	: >ids &&
	for i in 1 2 3; do
		skiff jobs launch -d "true" | head -1 >>ids || exit 1
	done &&
	for id in $(cat ids); do
		wait_for "started $id" 30 || exit 1
	done &&
	for id in $(cat ids); do
		! submitted $id || { echo "job $id had submitted already"; exit 1; }
	done &&
	pool_lock_free &&
	rm "$TRASH/gate" &&
	for id in $(cat ids); do
		wait_for "test \"\$(jfield $id status)\" = SUCCEEDED" 60 || exit 1
	done
'

test_done
