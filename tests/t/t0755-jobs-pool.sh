#!/bin/sh
# Managed jobs on the shared local pool: once the pool is up, launches into it go on in
# parallel, bounded only by the launch limit (they take turns only to create the pool);
# pool jobs claimed together launch as a batch in one worker, each in its own log, and
# a batch that fails or dies loses no job and runs none twice.
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
	export SKIFF_JOBS_LAUNCH_BATCH=1 &&
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

# One launch slot, held at the gate by a first job: the jobs submitted meanwhile wait in
# the queue, and the next claim takes them together.
hold_slot() {
	wait_for "flock -n \"$SKIFF_HOME/jobs/controller.lock\" true" 30 &&
	: >"$TRASH/gate" &&
	skiff jobs launch -d "true" | head -1 >first &&
	wait_for "started $(cat first)" 30
}
# batched ID: its launch came in a batch of pool jobs.
batched() { grep -q "LAUNCHING (in a batch on the pool)" "$SKIFF_HOME/jobs/logs/$1.log"; }
# ran WORD: how many times a job appended WORD to $TRASH/ran (each job runs once).
ran() { grep -cx "$1" "$TRASH/ran" 2>/dev/null; }

test_expect_success 'pool jobs claimed together launch as one batch, each in its own log' '
	export SKIFF_JOBS_MAX_LAUNCHING=1 SKIFF_JOBS_LAUNCH_GATE="$TRASH/gate" &&
	hold_slot &&
	skiff jobs launch -d -n b --num-jobs 5 "echo rank-\$SKYPILOT_JOB_RANK" >ids &&
	test "$(wc -l <ids)" = 5 &&
	! started "$(head -1 ids)" &&
	rm "$TRASH/gate" &&
	for id in $(cat first ids); do
		wait_for "test \"\$(jfield $id status)\" = SUCCEEDED" 60 || exit 1
	done &&
	k=0 &&
	for id in $(cat ids); do
		batched $id || { echo "job $id was not in a batch"; exit 1; }
		skiff jobs logs $id >log.$id || exit 1
		grep -qx "rank-$k" log.$id || { echo "job $id:"; cat log.$id; exit 1; }
		grep -q "rank-[^$k]" log.$id && { echo "job $id has another job'"'"'s output"; exit 1; }
		k=$((k + 1))
	done &&
	! batched "$(cat first)"
'

# The batch [ok, too big for the node, ok]: the first runs, the second fails its precheck
# (its own status, its own reason), the third goes back to the queue untried and runs.
test_expect_success 'a launch that fails in a batch: the jobs after it go back, none lost' '
	export SKIFF_JOBS_MAX_LAUNCHING=1 SKIFF_JOBS_LAUNCH_GATE="$TRASH/gate" &&
	hold_slot &&
	skiff jobs launch -d "echo one >>$TRASH/ran; echo one" | head -1 >a &&
	skiff jobs launch -d --cpus 100000 "echo never >>$TRASH/ran" | head -1 >b &&
	skiff jobs launch -d "echo three >>$TRASH/ran; echo three" | head -1 >c &&
	rm "$TRASH/gate" &&
	wait_for "test \"\$(jfield $(cat a) status)\" = SUCCEEDED" 60 &&
	wait_for "test \"\$(jfield $(cat b) status)\" = FAILED_PRECHECKS" 60 &&
	wait_for "test \"\$(jfield $(cat c) status)\" = SUCCEEDED" 60 &&
	for f in a b c; do
		batched "$(cat $f)" || { echo "job $(cat $f) was not in a batch"; exit 1; }
	done &&
	grep -q "back in the queue: the launch before it in its batch failed" \
		"$SKIFF_HOME/jobs/logs/$(cat c).log" &&
	skiff jobs logs "$(cat c)" >log.c &&
	{ grep -qx three log.c || { echo "job $(cat c)'"'"'s logs:"; cat log.c; exit 1; }; } &&
	cat "$TRASH/ran" &&
	test "$(ran one)" = 1 && test "$(ran never)" = 0 && test "$(ran three)" = 1
'

# kill -9 of a batch's worker while its first job's launch waits (a delay before every
# launch): each of the batch's jobs is launched again, and runs once.
test_expect_success 'a batch whose worker is killed: every job launched again, each once' '
	wait_for "flock -n \"$SKIFF_HOME/jobs/controller.lock\" true" 30 &&
	export SKIFF_JOBS_MAX_LAUNCHING=1 SKIFF_JOBS_LAUNCH_DELAY_MS=2000 &&
	skiff jobs launch -d "true" | head -1 >first &&
	wait_for "started $(cat first)" 30 &&
	skiff jobs launch -d -n k --num-jobs 3 "echo killed-\$SKYPILOT_JOB_RANK >>$TRASH/ran" >ids &&
	wait_for "started $(head -1 ids)" 30 &&
	pid=$(own_pids $(pgrep -f "__jobs-worker launch $(paste -sd, ids) ")) &&
	test -n "$pid" &&
	kill -KILL $pid &&
	for id in $(cat first ids); do
		wait_for "test \"\$(jfield $id status)\" = SUCCEEDED" 90 || exit 1
	done &&
	for k in 0 1 2; do
		test "$(ran killed-$k)" = 1 || { echo "rank $k ran $(ran killed-$k) times"; exit 1; }
	done &&
	grep -q "its worker died" "$SKIFF_HOME/jobs/logs/$(tail -1 ids).log"
'

test_done
