#!/bin/sh
# Managed jobs on local infra: pipelines, recovery from a lost node and from listed exit
# codes, controller kill -9 during LAUNCHING and RUNNING, cancel of 1000 jobs.
. "$(dirname "$0")/lib.sh"

export SKIFF_JOBS_POLL_MS=200 SKIFF_JOBS_BACKOFF_S=1 SKIFF_JOBS_IDLE_S=3

test_cleanup_hook() {
	pid=$(skiff_ctl_pid)
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	for h in "$SKIFF_HOME" "$TRASH/home2"; do
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

# Tests 1-5 share the pool in $SKIFF_HOME; 6-8 use $TRASH/home2 with a cluster per job.

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
	test "$(jfield $id status)" = SUCCEEDED &&
	test "$(jfield $id schedule_state)" = DONE &&
	skiff jobs logs --controller $id >ctl &&
	grep -q "STARTING .*LAUNCHING" ctl &&
	grep -q "task 1 succeeded; next task 2" ctl &&
	grep -q "SUCCEEDED .*DONE" ctl
'

test_expect_success 'queue --json has the documented fields; --skip-finished hides ended jobs' '
	skiff jobs queue --json >q.json &&
	python3 - <<-\EOF &&
	import json
	j = json.load(open("q.json"))[0]
	for k in ("id", "name", "status", "schedule_state", "recoveries", "cluster",
	          "submitted_at", "ended_at", "details"):
	    assert k in j, k
	assert j["ended_at"] >= j["submitted_at"] > 0, j
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
	skiff jobs launch -d -n r1 "echo hello-r1; echo run >>$TRASH/runs.r1; sleep 4" >id &&
	id=$(cat id) &&
	wait_for "test \"\$(jfield $id status)\" = RUNNING" 30 &&
	kill -KILL $(skiff_ctl_pid) &&
	skiff status | grep -q "^skiff-job-$id " &&
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
	rm -rf "$node" &&
	wait_for "test \"\$(jfield $id status)\" = SUCCEEDED" 60 &&
	test "$(jfield $id recoveries)" = 1 &&
	skiff jobs logs --controller $id >ctl &&
	grep -q "RECOVERING" ctl && grep -q "skiff-job-$id-0-1" ctl &&
	wait_for no_job_clusters 30
'

test_expect_success 'cancel during LAUNCHING releases the cluster it was launching' '
	export SKIFF_HOME=$TRASH/home2 SKIFF_JOBS_LOCAL_POOL=0 SKIFF_JOBS_LAUNCH_DELAY_MS=1500 &&
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
	i=0 &&
	while [ $i -lt 1000 ]; do
		skiff jobs launch -d -n many "sleep 100" >/dev/null || return 1
		i=$((i + 1))
	done &&
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
