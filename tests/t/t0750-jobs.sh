#!/bin/sh
# Managed jobs on local infra: pipelines, recovery from a lost node and from listed exit
# codes, controller kill -9 during LAUNCHING and RUNNING, cancel of 1000 jobs; the lines
# SkyPilot's users and smoke tests parse in `jobs queue` and `jobs logs`.
. "$(dirname "$0")/lib.sh"

export SKIFF_JOBS_POLL_MS=200 SKIFF_JOBS_BACKOFF_S=1 SKIFF_JOBS_IDLE_S=3

test_cleanup_hook() {
	pid=$(skiff_ctl_pid)
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	for h in "$SKIFF_HOME" "$TRASH/home2" "$TRASH/home3"; do
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

# jfield ID FIELD: one field of a job in `jobs queue --json`.
jfield() {
	skiff jobs queue --json | python3 -c "
import json,sys
for j in json.load(sys.stdin):
    if j['id'] == $1: print(j['$2'])"
}

# Tests 1-5 share the pool in $SKIFF_HOME; the retried pipeline uses $TRASH/home3 and the
# controller kill -9 tests $TRASH/home2, with a cluster per job.

# all_final: every job has a final status (SUCCEEDED, CANCELLED, FAILED...), its cluster released.
all_final() {
	skiff jobs queue --json | python3 -c "
import json,sys
sys.exit(0 if all(j['schedule_state'] == 'DONE' and j['status'] != 'CANCELLING'
                  for j in json.load(sys.stdin)) else 1)"
}

# no_job_clusters: no skiff-job-* cluster is left in the launcher db.
no_job_clusters() {
	skiff status >st.out && ! grep -q '^skiff-job-' st.out
}

test_expect_success 'a pipeline runs its tasks in order with stable task ids' '
	cat >pipe.yaml <<-\EOF &&
	name: pipe
	---
	name: one
	run: echo "one $SKYPILOT_TASK_ID"
	---
	name: two
	run: echo "two $SKYPILOT_TASK_ID"
	EOF
	skiff jobs launch pipe.yaml >out 2>err &&
	id=$(head -1 out) &&
	grep -q "^one sky-managed-.*_pipe_${id}-0\$" out &&
	grep -q "^two sky-managed-.*_pipe_${id}-1\$" out &&
	test "$(grep -c "Job started\. Streaming logs\.\.\." out)" = 2 &&
	test "$(grep -c " Job finished (status: SUCCEEDED)\.\$" out)" = 2 &&
	tail -n 1 out | grep -q " Managed job finished: $id (status: SUCCEEDED)\.\$" &&
	test "$(jfield $id status)" = SUCCEEDED &&
	test "$(jfield $id schedule_state)" = DONE &&
	skiff jobs logs --controller $id >ctl &&
	grep -q "STARTING .*LAUNCHING" ctl &&
	grep -q "task 1 succeeded; next task 2" ctl &&
	grep -q "SUCCEEDED .*DONE" ctl &&
	# SkyPilot'"'"'s pipeline rows: the job (TASK empty, REQUESTED -), then a row per task
	# (ID " ↳", its index and name), each with its own status (sky/jobs/utils.py).
	skiff jobs queue >q &&
	grep -A 2 "^$id  *pipe  *-  " q >rows &&
	test "$(wc -l <rows)" = 3 &&
	sed -n 1p rows | grep -q "  0  *SUCCEEDED  *skiff-jobs  *task 2 of 2: succeeded\$" &&
	sed -n 2p rows | grep -q "^ ↳  *0  *one  *1x\[CPU:1+\]  .* 0  *SUCCEEDED  *-  *-\$" &&
	sed -n 3p rows | grep -q "^ ↳  *1  *two  *1x\[CPU:1+\]  .* 0  *SUCCEEDED  *skiff-jobs  *-\$"
'

test_expect_success 'queue --json has the documented fields; --skip-finished hides ended jobs' '
	skiff jobs queue --json >q.json &&
	python3 - <<-\EOF &&
	import json
	j = json.load(open("q.json"))[0]
	for k in ("id", "name", "status", "schedule_state", "recoveries", "cluster",
	          "submitted_at", "ended_at", "details", "requested", "job_duration", "pool",
	          "task_rows"):
	    assert k in j, k
	assert j["ended_at"] >= j["submitted_at"] > 0, j
	# The pipeline of test 1: each task its own times; together they ran as long as the job.
	t = j["task_rows"]
	assert [(r["task"], r["name"], r["status"]) for r in t] == \
	    [(0, "one", "SUCCEEDED"), (1, "two", "SUCCEEDED")], t
	assert t[0]["ended_at"] <= t[1]["submitted_at"] <= t[1]["started_at"] <= t[1]["ended_at"], t
	assert 0 < t[0]["job_duration"] <= t[0]["ended_at"] - t[0]["submitted_at"], t
	assert abs(j["job_duration"] - t[0]["job_duration"] - t[1]["job_duration"]) < 0.01, j
	EOF
	skiff jobs queue -s >q && test "$(wc -l <q)" = 1
'

test_expect_success 'a job whose node lost it (supervisor and shim killed) is recovered' '
	cat >lost.yaml <<-EOF &&
	name: lost
	run: |
	  if [ -e "$TRASH/lost.mark" ]; then echo "second run \$SKYPILOT_TASK_ID"; exit 0; fi
	  echo "\$SKYPILOT_TASK_ID" >"$TRASH/lost.tid"
	  echo \$PPID >"$TRASH/lost.shim"; touch "$TRASH/lost.mark"; sleep 300
	EOF
	id=$(skiff jobs launch -d lost.yaml) &&
	wait_for "test -s $TRASH/lost.shim" 20 &&
	test "$(jfield $id status)" = RUNNING &&
	lock=$SKIFF_HOME/local/skiff-jobs/0/.skiff/supervisor.lock &&
	kill -KILL $(head -1 "$lock") $(cat "$TRASH/lost.shim") &&
	wait_for "test \"\$(jfield $id status)\" = SUCCEEDED" 40 &&
	test "$(jfield $id recoveries)" = 1 &&
	skiff jobs logs --no-follow $id >log &&
	grep -q "second run $(cat lost.tid)" log &&
	skiff jobs logs --controller $id >ctl &&
	grep -q "RECOVERING" ctl
'

test_expect_success 'listed exit codes are recovered; others only max_restarts_on_errors times' '
	cat >codes.yaml <<-EOF &&
	name: codes
	resources:
	  job_recovery:
	    max_restarts_on_errors: 1
	    recover_on_exit_codes: [42]
	run: |
	  n=\$(cat "$TRASH/codes.n" 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n >"$TRASH/codes.n"
	  [ \$n -le 2 ] && exit 42
	  exit 7
	EOF
	id=$(skiff jobs launch -d codes.yaml) &&
	wait_for "test \"\$(jfield $id schedule_state)\" = DONE" 60 &&
	test "$(jfield $id status)" = FAILED &&
	test "$(cat codes.n)" = 4 &&
	test "$(jfield $id recoveries)" = 3 &&
	test "$(jfield $id restarts_on_errors)" = 1 &&
	expect_fail 100 skiff jobs logs --no-follow $id
'

test_expect_success 'a task with a workdir gets a cluster of its own, released at the end' '
	mkdir -p wd && echo "from the workdir" >wd/note &&
	cat >wd.yaml <<-\EOF &&
	workdir: wd
	run: cat note
	EOF
	skiff jobs launch wd.yaml >out 2>err &&
	id=$(head -1 out) &&
	grep -q "^from the workdir\$" out &&
	test "$(jfield $id cluster)" = skiff-job-$id &&
	wait_for no_job_clusters 30
'

# SkyPilot's test_managed_jobs_retry_logs (tests/smoke_tests/test_managed_job.py) on its
# tests/test_yamls/test_managed_jobs_retry.yaml (cpus: 1 here, not 2+, for small machines)
# greps the followed log for what SkyPilot prints:
#   f'cat {log_file.name} | grep "Job started. Streaming logs..."'   (twice, one per attempt)
#   f'cat {log_file.name} | grep "Job 1 failed"'                      (twice)
#   f'! cat {log_file.name} | grep "Job 2"'                           (task 2 never runs)
# The lines are SkyPilot's job driver's, in its run.log (sky/backends/task_codegen.py):
#   f'{ux_utils.INDENT_LAST_SYMBOL}Job started. Streaming logs... '
#   print('ERROR: {colorama.Fore.RED}Job {self.job_id} failed with '
#         'return code list:{colorama.Style.RESET_ALL}', returncodes, reason, flush=True)
# its log tail's (sky/skylet/log_lib.py):
#   print(ux_utils.finishing_message(f'Job finished (status: {status_str}).'), flush=True)
# and its `jobs logs`' (sky/jobs/utils.py, stream_logs_by_id()), on stdout:
#   ux_utils.finishing_message(f'Managed job finished: {job_id} '
#                              f'(status: {managed_job_status.value}).')
# Each attempt is a cluster of its own (as in SkyPilot), so each is its cluster's job 1.
# Every launch waits 1.5 s first: JOB DURATION (the time it ran) leaves both waits out,
# TOT. DURATION (submitted to ended) does not.
test_expect_success 'jobs logs and jobs queue say what SkyPilot'"'"'s say of a failing, retried pipeline' '
	export SKIFF_HOME=$TRASH/home3 SKIFF_JOBS_LOCAL_POOL=0 SKIFF_JOBS_LAUNCH_DELAY_MS=1500 &&
	cat >retry.yaml <<-\EOF &&
	resources:
	  cpus: 1
	  job_recovery:
	    max_restarts_on_errors: 1

	# Task 1: Always fails
	run: |
	  echo "Task 1 starting"
	  exit 1
	---
	# Task 2: Never reached due to Task 1 failure
	run: |
	  echo "Task 2 starting"
	  exit 0
	EOF
	id=$(skiff jobs launch -d -n retry retry.yaml) &&
	test "$id" = 1 &&
	{ skiff jobs logs -n retry >log 2>err; rc=$?; } &&
	cat log && test $rc = 100 &&
	test "$(grep -c "Job started. Streaming logs..." log)" = 2 &&
	test "$(grep -c "Job 1 failed" log)" = 2 &&
	! grep "Job 2" log &&
	test "$(grep -c "^ERROR: Job 1 failed with return code list: \[1\]\$" log)" = 2 &&
	test "$(grep -c "^Task 1 starting\$" log)" = 2 &&
	! grep -q "Task 2 starting" log &&
	test "$(grep -c " Job finished (status: FAILED)\.\$" log)" = 2 &&
	tail -n 1 log | grep -q " Managed job finished: 1 (status: FAILED)\.\$" &&
	# Replayed once it ended: no tail lines per attempt, the job'"'"'s status at the end.
	expect_fail 100 skiff jobs logs --no-follow 1 >log2 &&
	test "$(grep -c "Job started. Streaming logs..." log2)" = 2 &&
	test "$(grep -c "Job 1 failed" log2)" = 2 &&
	test "$(grep -c " Job finished (status: FAILED)\.\$" log2)" = 1 &&
	tail -n 1 log2 | grep -q " Job finished (status: FAILED)\.\$" &&
	skiff jobs queue >q && cat q &&
	grep -A 2 "^1  *retry  *-  " q >rows &&
	sed -n 1p rows | grep -q "  1  *FAILED  *-  *task 1 of 2: the task failed (exit codes 1)\$" &&
	sed -n 2p rows | grep -q "^ ↳  *0  *-  *1x\[CPU:1\]  .* 1  *FAILED  *-  *-\$" &&
	sed -n 3p rows | grep -q "^ ↳  *1  *-  *1x\[CPU:1+\]  *-  *-  *-  *0  *CANCELLED  *-  *-\$" &&
	skiff jobs queue --json >q.json &&
	python3 - <<-\EOF
	import json
	j = [j for j in json.load(open("q.json")) if j["id"] == 1][0]
	total = j["ended_at"] - j["submitted_at"]
	assert j["task_rows"][0]["recoveries"] == 1, j
	assert j["task_rows"][1]["job_duration"] is None, j
	assert 0 < j["job_duration"] and total - j["job_duration"] >= 2.9, (total, j)
	EOF
'

test_expect_success 'recover_on_exit_codes may not list 137' '
	cat >bad.yaml <<-\EOF &&
	resources:
	  job_recovery:
	    recover_on_exit_codes: [137]
	run: echo never
	EOF
	expect_fail 3 skiff jobs launch -d bad.yaml 2>err &&
	grep -q "reserved" err
'

# Own clusters per job (no pool) from here on, in a second home.
test_expect_success 'controller kill -9 during LAUNCHING: each job runs once, no cluster leaks' '
	export SKIFF_HOME=$TRASH/home2 SKIFF_JOBS_LOCAL_POOL=0 SKIFF_JOBS_LAUNCH_DELAY_MS=1500 &&
	for i in 1 2 3; do
		skiff jobs launch -d -n k$i "echo run >>$TRASH/runs.k$i; sleep 1" >/dev/null || return 1
	done &&
	wait_for "test \"\$(skiff jobs queue --json | grep -o LAUNCHING | wc -l)\" = 3" 20 &&
	kill -KILL $(skiff_ctl_pid) &&
	wait_for "test -z \"\$(skiff_ctl_pid)\"" 10 &&
	skiff jobs queue >/dev/null &&
	wait_for all_final 90 &&
	for i in 1 2 3; do
		test "$(jfield $i status)" = SUCCEEDED && test "$(wc -l <runs.k$i)" = 1 || return 1
	done &&
	wait_for no_job_clusters 30 &&
	! ls "$SKIFF_HOME/local" 2>/dev/null | grep -q skiff-job
'

test_expect_success 'controller kill -9 during RUNNING: the job finishes, its cluster is released, its logs kept' '
	export SKIFF_HOME=$TRASH/home2 SKIFF_JOBS_LOCAL_POOL=0 SKIFF_JOBS_LAUNCH_DELAY_MS=0 &&
	# It runs until the test has seen it RUNNING and killed the controller (a fixed
	# "sleep 4" ended first once, on a loaded machine, and RUNNING was never seen).
	skiff jobs launch -d -n r1 "echo hello-r1; echo run >>$TRASH/runs.r1; while [ ! -e $TRASH/go.r1 ]; do $(nap 0.1); done" >id &&
	id=$(cat id) &&
	wait_for "test \"\$(jfield $id status)\" = RUNNING" 30 &&
	kill -KILL $(skiff_ctl_pid) &&
	skiff status | grep -q "^skiff-job-$id " &&
	touch "$TRASH/go.r1" &&
	skiff jobs queue >/dev/null &&
	wait_for "test \"\$(jfield $id status)\" = SUCCEEDED" 40 &&
	test "$(wc -l <runs.r1)" = 1 &&
	wait_for no_job_clusters 30 &&
	skiff jobs logs --no-follow $id >log &&
	grep -q "^hello-r1\$" log
'

test_expect_success 'a vanished node (own cluster, EAGER_NEXT_REGION): relaunched elsewhere, both released' '
	export SKIFF_HOME=$TRASH/home2 SKIFF_JOBS_LOCAL_POOL=0 SKIFF_JOBS_LAUNCH_DELAY_MS=0 &&
	cat >gone.yaml <<-EOF &&
	name: gone
	run: |
	  if [ -e "$TRASH/gone.mark" ]; then echo "second run on \$SKIFF_CLUSTER"; exit 0; fi
	  echo \$PPID >"$TRASH/gone.shim"; touch "$TRASH/gone.mark"; sleep 300
	EOF
	id=$(skiff jobs launch -d gone.yaml) &&
	wait_for "test -s $TRASH/gone.shim" 30 &&
	node=$SKIFF_HOME/local/skiff-job-$id &&
	kill -KILL $(head -1 "$node/0/.skiff/supervisor.lock") $(cat "$TRASH/gone.shim") &&
	# The controller, asking the node meanwhile, may start its supervisor again (a
	# node call revives a node whose supervisor died), which writes under the directory
	# while rm removes it: remove until it is gone.
	wait_for "rm -rf \"$node\" 2>/dev/null; test ! -e \"$node\"" 10 &&
	wait_for "test \"\$(jfield $id status)\" = SUCCEEDED" 60 &&
	test "$(jfield $id recoveries)" = 1 &&
	skiff jobs logs --controller $id >ctl &&
	grep -q "RECOVERING" ctl && grep -q "skiff-job-$id-0-1" ctl &&
	wait_for no_job_clusters 30
'

test_expect_success 'cancel during LAUNCHING releases the cluster it was launching' '
	export SKIFF_HOME=$TRASH/home2 SKIFF_JOBS_LOCAL_POOL=0 SKIFF_JOBS_LAUNCH_DELAY_MS=1500 &&
	# The launch delay is the controller'"'"'s environment: the one of the test above,
	# started without it, must have ended (SKIFF_JOBS_IDLE_S) before this launch starts
	# another, else the launch takes no time to watch.
	wait_for "test -z \"\$(skiff_ctl_pid)\"" 20 &&
	id=$(skiff jobs launch -d -n c1 "sleep 100") &&
	wait_for "test \"\$(jfield $id schedule_state)\" = LAUNCHING" 20 &&
	skiff jobs cancel $id &&
	wait_for "test \"\$(jfield $id status)\" = CANCELLED" 40 &&
	wait_for no_job_clusters 30
'

test_expect_success 'cancel of 1000 jobs is one request' '
	export SKIFF_HOME=$TRASH/home SKIFF_JOBS_LOCAL_POOL=1 SKIFF_JOBS_MAX_LAUNCHING=1 \
		SKIFF_JOBS_LAUNCH_DELAY_MS=0 &&
	pid=$(skiff_ctl_pid) && { [ -z "$pid" ] || kill -TERM $pid; } &&
	wait_for "test -z \"\$(skiff_ctl_pid)\"" 10 &&
	# A job that outlasts the submits on any machine: under ASan beside other work 1000
	# launches took nine minutes once, and 421 "sleep 100" jobs had ended before the
	# cancel. 100 come one launch each (many clients), 900 in one --num-jobs request.
	i=0 &&
	while [ $i -lt 100 ]; do
		skiff jobs launch -d -n many "sleep 100000" >/dev/null || return 1
		i=$((i + 1))
	done &&
	skiff jobs launch -d -n many --num-jobs 900 "sleep 100000" >/dev/null &&
	skiff jobs cancel -n many >out &&
	grep -q "cancelled" out &&
	wait_for all_final 60 &&
	test "$(skiff jobs queue --json | python3 -c "
import json,sys
print(sum(1 for j in json.load(sys.stdin) if j[\"name\"] == \"many\" and j[\"status\"] == \"CANCELLED\"))")" = 1000 &&
	skiff queue skiff-jobs --json | python3 -c "
import json,sys
live = [j for j in json.load(sys.stdin) if j[\"status\"] in (\"PENDING\", \"RUNNING\", \"SETTING_UP\")]
assert not live, live"
'

test_done
