#!/bin/sh
# Job groups (SkyPilot's JobGroup): a header with `execution: parallel`, then tasks that
# run at once, each a managed job of its own under the group's id; auxiliary tasks are
# cancelled after their termination_delay once the primary ones ended; queue, cancel and
# logs of the group; a controller kill -9 while a group runs.
. "$(dirname "$0")/lib.sh"

export SKIFF_JOBS_POLL_MS=200 SKIFF_JOBS_BACKOFF_S=1 SKIFF_JOBS_IDLE_S=3

test_cleanup_hook() {
	for h in "$SKIFF_HOME" "$TRASH/home2"; do
		f=$h/jobs/controller.lock
		if [ -f "$f" ] && ! flock -n "$f" true 2>/dev/null; then
			kill -KILL "$(head -1 "$f")" 2>/dev/null
		fi
		SKIFF_HOME=$h skiff status --json 2>/dev/null | python3 -c "
import json,sys
for c in json.load(sys.stdin): print(c['name'])" 2>/dev/null | while read -r c; do
			SKIFF_HOME=$h skiff down "$c" >/dev/null 2>&1
		done
	done
}

skiff_ctl_pid() {
	f=$SKIFF_HOME/jobs/controller.lock
	[ -f "$f" ] && flock -n "$f" true 2>/dev/null && return 0
	[ -f "$f" ] && head -1 "$f"
}

# jfield ID FIELD: one field of a job (a group's member) in `jobs queue --json`.
jfield() {
	skiff jobs queue --json | python3 -c "
import json,sys
for j in json.load(sys.stdin):
    if j['id'] == $1: print(j['$2'])"
}

all_final() {
	skiff jobs queue --json | python3 -c "
import json,sys
sys.exit(0 if all(j['schedule_state'] == 'DONE' and j['status'] != 'CANCELLING'
                  for j in json.load(sys.stdin)) else 1)"
}

no_job_clusters() {
	skiff status >st.out && ! grep -q '^skiff-job-' st.out
}

# A trainer and a replay buffer that each wait for the other's file: run one after the
# other, they would never end. The buffer serves until it is cancelled.
cat >"$TRASH/group.yaml" <<EOF
name: rl
execution: parallel
primary_tasks: [trainer]
termination_delay:
  default: 1s
  buffer: 4s
---
name: trainer
run: |
  echo "trainer of \$SKYPILOT_JOBGROUP_NAME" >>$TRASH/runs.trainer
  touch $TRASH/trainer.up
  while [ ! -e $TRASH/buffer.up ]; do $(nap 0.1); done
  echo "trainer saw the buffer"
---
name: buffer
run: |
  echo "buffer of \$SKYPILOT_JOBGROUP_NAME" >>$TRASH/runs.buffer
  touch $TRASH/buffer.up
  while [ ! -e $TRASH/trainer.up ]; do $(nap 0.1); done
  echo "buffer serving"
  sleep 100000
EOF

test_expect_success 'check says what a job group is; launch and exec refuse it' '
	skiff check "$TRASH/group.yaml" >out &&
	grep -q "ok (job group rl of 2 tasks" out &&
	expect_fail 2 skiff launch "$TRASH/group.yaml" 2>err &&
	grep -q "is job group .rl. (execution: parallel).*skiff jobs launch" err &&
	expect_fail 2 skiff exec c "$TRASH/group.yaml" 2>err &&
	grep -q "skiff jobs launch" err &&
	expect_fail 2 skiff jobs launch --num-jobs 2 "$TRASH/group.yaml" 2>err &&
	grep -q "num-jobs: .* is job group .rl." err
'

test_expect_success 'a bad group file: the error at its line and column, exit 3' '
	cat >bad.yaml <<-\EOF &&
	name: g
	execution: parallel
	primary_tasks: [trainer, nope]
	---
	name: trainer
	run: x
	EOF
	expect_fail 3 skiff jobs launch -d bad.yaml 2>err &&
	grep -q "^bad.yaml:3:26: primary_tasks names .nope., which is no task of job group .g.\$" err &&
	cat >dup.yaml <<-\EOF &&
	name: g
	execution: parallel
	---
	name: a
	run: x
	---
	name: a
	run: y
	EOF
	expect_fail 3 skiff jobs launch -d dup.yaml 2>err &&
	grep -q "^dup.yaml:7:7: task name .a. is used twice" err &&
	skiff jobs queue --json >q &&
	test "$(cat q)" = "[]"
'

test_expect_success 'the tasks run at once; the auxiliary one is cancelled after its delay' '
	rm -f "$TRASH"/*.up "$TRASH"/runs.* &&
	# Bounded: run one after the other, the two would wait for each other for ever.
	timeout 120 "$SKIFF_BIN" jobs launch "$TRASH/group.yaml" >out 2>err &&
	id=$(head -1 out) &&
	grep -q "^Managed job $id submitted: job group rl of 2 tasks (jobs $id to $((id + 1)))" err &&
	grep -q "^Hint: This job has 2 tasks. Use .skiff jobs logs $id TASK. to view logs for a specific task (TASK can be task ID or name)\.\$" err &&
	grep -q "^trainer saw the buffer\$" out &&
	grep -q "^buffer serving\$" out &&
	test "$(cat "$TRASH/runs.trainer")" = "trainer of rl" &&
	test "$(cat "$TRASH/runs.buffer")" = "buffer of rl" &&
	test "$(jfield $id status)" = SUCCEEDED &&
	test "$(jfield $((id + 1)) status)" = CANCELLED &&
	test "$(jfield $((id + 1)) group_id)" = $id &&
	test "$(jfield $((id + 1)) group_name)" = rl &&
	test "$(jfield $((id + 1)) primary)" = False &&
	test "$(jfield $id primary)" = True &&
	jfield $((id + 1)) details >why &&
	grep -q "^auxiliary task of job group rl: its primary tasks ended" why &&
	# Not before the buffer'"'"'s 4 s after the trainer ended.
	python3 -c "
import sys
t, b = float(sys.argv[1]), float(sys.argv[2])
assert b - t >= 4, (t, b)" "$(jfield $id ended_at)" "$(jfield $((id + 1)) ended_at)" &&
	echo $id >"$TRASH/gid"
'

test_expect_success 'queue shows the group as one job, a row per task' '
	id=$(cat "$TRASH/gid") &&
	skiff jobs queue >q &&
	grep -A 2 "^$id  *rl  *-  " q >rows &&
	test "$(wc -l <rows)" = 3 &&
	sed -n 1p rows | grep -q " SUCCEEDED  *-  *job group: 2 tasks at once, 1 primary\$" &&
	sed -n 2p rows | grep -q "^ ↳  *0  *trainer  *1x\[CPU:1+\] .* SUCCEEDED  .*(job $id)\$" &&
	sed -n 3p rows | grep -q "^ ↳  *1  *buffer  *1x\[CPU:1+\] .* CANCELLED  .*(job $((id + 1)), auxiliary)\$" &&
	test "$(grep -c "^$((id + 1)) " q)" = 0
'

test_expect_success 'logs of one task by name or index; of all with the hint' '
	id=$(cat "$TRASH/gid") &&
	skiff jobs logs $id trainer >out 2>err &&
	grep -q "^trainer saw the buffer\$" out &&
	test "$(grep -c "buffer serving" out)" = 0 &&
	test "$(grep -c "^Hint:" err)" = 0 &&
	expect_fail 103 skiff jobs logs $id 1 >out &&
	grep -q "^buffer serving\$" out &&
	test "$(grep -c "trainer saw" out)" = 0 &&
	skiff jobs logs $id >out 2>err &&
	grep -q "^trainer saw the buffer\$" out && grep -q "^buffer serving\$" out &&
	grep -q "^Hint: This job has 2 tasks" err &&
	expect_fail 102 skiff jobs logs $id nope 2>err &&
	grep -q "job group rl (job $id) has no task .nope." err &&
	expect_fail 2 skiff jobs logs $((id + 1)) trainer 2>err &&
	grep -q "is not a job group" err
'

test_expect_success 'cancel of the group id cancels every task; of a member only it' '
	cat >sleepers.yaml <<-\EOF &&
	name: sleepers
	execution: parallel
	---
	name: a
	run: sleep 100000
	---
	name: b
	run: sleep 100000
	---
	name: c
	run: sleep 100000
	EOF
	id=$(skiff jobs launch -d sleepers.yaml) &&
	wait_for "test \"\$(jfield $((id + 2)) status)\" = RUNNING" 30 &&
	skiff jobs cancel $((id + 2)) &&
	wait_for "test \"\$(jfield $((id + 2)) status)\" = CANCELLED" 30 &&
	test "$(jfield $id status)" = RUNNING &&
	test "$(jfield $((id + 1)) status)" = RUNNING &&
	skiff jobs cancel $id >out &&
	grep -q "being cancelled" out &&
	wait_for "test \"\$(jfield $id status)\" = CANCELLED" 30 &&
	wait_for "test \"\$(jfield $((id + 1)) status)\" = CANCELLED" 30 &&
	jfield $id details >why &&
	grep -q "^cancelled by the user" why &&
	skiff jobs queue >q &&
	grep -q "^$id  *sleepers  .* CANCELLED  " q
'

test_expect_success 'controller kill -9 while a group runs: each task runs once, no cluster leaks' '
	export SKIFF_HOME=$TRASH/home2 SKIFF_JOBS_LOCAL_POOL=0 &&
	rm -f "$TRASH"/*.up "$TRASH"/runs.* &&
	id=$(skiff jobs launch -d "$TRASH/group.yaml") &&
	wait_for "test -e $TRASH/buffer.up -a -e $TRASH/trainer.up" 60 &&
	wait_for "test \"\$(jfield $((id + 1)) status)\" = RUNNING" 30 &&
	kill -KILL $(skiff_ctl_pid) &&
	wait_for "test -z \"\$(skiff_ctl_pid)\"" 10 &&
	skiff jobs queue >/dev/null &&
	wait_for all_final 90 &&
	test "$(jfield $id status)" = SUCCEEDED &&
	test "$(jfield $((id + 1)) status)" = CANCELLED &&
	test "$(wc -l <"$TRASH/runs.trainer")" = 1 &&
	test "$(wc -l <"$TRASH/runs.buffer")" = 1 &&
	wait_for no_job_clusters 30
'

test_done
