#!/bin/sh
# Managed jobs' logs outlive their clusters: the controller keeps every rank's setup and
# run logs in its own home ($SKIFF_HOME/jobs/kept/ID/CLUSTER/JOB/rank-N/), for a job on an
# ssh node (its cluster torn down) and on the shared local pool (the pool taken down);
# `jobs logs` and `jobs logs --sync-down` read the kept copy; the copy as a tar stream
# round-trips; the retention (task_logs_gc_retention_hours, the size cap) removes ended
# jobs' logs and never a running job's. Root only for the ssh node (skipped otherwise, a
# failure in CI).
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

nodes_require_root
nodes_install_deps || { echo "Bail out! cannot install the packages the test nodes need"; exit 1; }
command -v python3 >/dev/null || test_skip_all "needs python3 to read --json"

# A short SKIFF_HOME keeps the ssh ControlMaster sockets within their path limit.
_t=${TMPDIR:-/tmp}
[ "${#_t}" -le 12 ] || _t=/tmp
export SKIFF_HOME=$_t/sk751.$$
rm -rf "$SKIFF_HOME"
mkdir -m 700 "$SKIFF_HOME" || { echo "Bail out! cannot create $SKIFF_HOME"; exit 1; }
export SKIFF_SSH_NODE_POOLS=$NODES_POOL_FILE
export SKIFF_JOBS_POLL_MS=200 SKIFF_JOBS_BACKOFF_S=1 SKIFF_JOBS_IDLE_S=5 SKIFF_JOBS_KEPT_GC_S=1
KEPT=$SKIFF_HOME/jobs/kept

# A second home for the size cap: a controller of its own, no kept logs but its jobs'.
HOME2=$_t/sk751b.$$

test_cleanup_hook() {
	for h in "$SKIFF_HOME" "$HOME2"; do
		f=$h/jobs/controller.lock
		[ -f "$f" ] && ! flock -n "$f" true 2>/dev/null && kill -KILL "$(head -1 "$f")" 2>/dev/null
		for c in $(SKIFF_HOME=$h skiff status --json 2>/dev/null | python3 -c "
import json,sys
for c in json.load(sys.stdin): print(c['name'])" 2>/dev/null); do
			SKIFF_HOME=$h timeout 60 skiff down "$c" >/dev/null 2>&1
		done
	done
	nodes_down
	cp -a "$SKIFF_HOME" "$TRASH/home" 2>/dev/null
	cp -a "$HOME2" "$TRASH/home2" 2>/dev/null
	rm -rf "$SKIFF_HOME" "$HOME2"
}

jfield() {
	skiff jobs queue --json | python3 -c "
import json,sys
for j in json.load(sys.stdin):
    if j['id'] == $1: print(j['$2'])"
}
no_job_clusters() { skiff status >st.out && ! grep -q '^skiff-job-' st.out; }
# bytes DIR: what the kept logs under DIR take, as the collector counts (file blocks).
bytes() { find "$1" -type f ! -name REMOVED -printf "%b\n" | awk "{ s += \$1 } END { print s * 512 }"; }
# mode PATH: its permission bits, in octal.
mode() { stat -c %a "$1"; }

test_expect_success 'an ssh node comes up' '
	nodes_up 1
'

test_expect_success 'a job on an ssh node: its logs are kept when its cluster goes' '
	cat >ssh.yaml <<-\EOF &&
	name: onssh
	setup: echo "setup-on-$(hostname)"
	run: echo "run-on-$(hostname)"
	EOF
	id=$(skiff jobs launch -d --infra ssh/$NODES_POOL ssh.yaml) &&
	echo $id >ssh.id &&
	wait_for "test \"\$(jfield $id status)\" = SUCCEEDED" 90 &&
	wait_for no_job_clusters 60 &&
	kept=$KEPT/$id/skiff-job-$id/1/rank-0 &&
	grep -q "^run-on-tn1\$" $kept/run.log &&
	grep -q "^setup-on-tn1\$" $kept/setup.log &&
	test "$(mode $KEPT)" = 700 && test "$(mode $KEPT/$id)" = 700 &&
	test "$(mode $kept/run.log)" = 600
'

test_expect_success 'jobs logs prints the kept copy once the cluster is gone' '
	id=$(cat ssh.id) &&
	skiff jobs logs --no-follow $id >log 2>err &&
	grep -q "^setup-on-tn1\$" log &&
	grep -q "^run-on-tn1\$" log &&
	! grep -q "is gone" err
'

test_expect_success 'jobs logs --sync-down copies it to ~/sky_logs/CLUSTER/JOB' '
	id=$(cat ssh.id) &&
	skiff jobs logs --sync-down $id >out &&
	grep -q "logs synced to $HOME/sky_logs/skiff-job-$id/1" out &&
	grep -q "^run-on-tn1\$" "$HOME/sky_logs/skiff-job-$id/1/rank-0/run.log" &&
	grep -q "^setup-on-tn1\$" "$HOME/sky_logs/skiff-job-$id/1/rank-0/setup.log"
'

test_expect_success 'a job on the shared pool: its logs are kept when it ends' '
	id=$(skiff jobs launch -d "echo pool-output-\$SKYPILOT_TASK_ID") &&
	echo $id >pool.id &&
	wait_for "test \"\$(jfield $id status)\" = SUCCEEDED" 60 &&
	wait_for "test -s $KEPT/$id/skiff-jobs/1/rank-0/run.log" 30 &&
	grep -q "^pool-output-sky-managed-" $KEPT/$id/skiff-jobs/1/rank-0/run.log
'

test_expect_success 'after the pool is taken down, jobs logs still prints them' '
	id=$(cat pool.id) &&
	skiff down skiff-jobs >/dev/null &&
	skiff status >st.out && ! grep -q "^skiff-jobs " st.out &&
	skiff jobs logs --no-follow $id >log &&
	grep -q "^pool-output-sky-managed-" log
'

test_expect_success 'a new pool numbers its jobs from 1 again: no job takes another one'"'"'s logs' '
	old=$(cat pool.id) &&
	id=$(skiff jobs launch -d "echo newer-pool-job") &&
	wait_for "test \"\$(jfield $id status)\" = SUCCEEDED" 60 &&
	wait_for "test -s $KEPT/$id/skiff-jobs/1/rank-0/run.log" 30 &&
	grep -q "^newer-pool-job\$" $KEPT/$id/skiff-jobs/1/rank-0/run.log &&
	skiff jobs logs --no-follow $old >log &&
	grep -q "^pool-output-sky-managed-" log && ! grep -q newer-pool-job log
'

test_expect_success 'a cancelled pool job'"'"'s logs are kept too' '
	id=$(skiff jobs launch -d "echo before-the-cancel; sleep 100") &&
	wait_for "skiff jobs logs --no-follow $id 2>/dev/null | grep -q before-the-cancel" 60 &&
	skiff jobs cancel $id >/dev/null &&
	wait_for "test \"\$(jfield $id status)\" = CANCELLED" 60 &&
	wait_for "grep -rqs ^before-the-cancel\$ $KEPT/$id" 30
'

test_expect_success 'the kept copy round-trips as a tar stream' '
	id=$(cat ssh.id) &&
	skiff __jobs-kept-tar $id >kept.tar &&
	tar tf kept.tar >list &&
	grep -q "^skiff-job-$id/1/rank-0/run.log\$" list &&
	skiff __jobs-kept-untar back <kept.tar &&
	diff -r "$KEPT/$id" back &&
	test "$(mode back/skiff-job-$id/1/rank-0/run.log)" = 600 &&
	expect_fail 1 skiff __jobs-kept-tar 999 2>err &&
	grep -q "no logs are kept of managed job 999" err
'

test_expect_success 'a tar stream with a link, a ".." or an absolute path is refused' '
	mkdir -p evil && ln -s /etc evil/link &&
	tar cf link.tar -C evil link &&
	expect_fail 1 skiff __jobs-kept-untar out1 <link.tar 2>err &&
	grep -q "refused" err && ! test -e out1/link &&
	echo x >dotdot.txt &&
	tar cPf dotdot.tar --transform "s,^,../," dotdot.txt &&
	expect_fail 1 skiff __jobs-kept-untar out2/in <dotdot.tar 2>err &&
	grep -q "refused" err && ! test -e out2/dotdot.txt &&
	tar cPf abs.tar "$PWD/dotdot.txt" &&
	expect_fail 1 skiff __jobs-kept-untar out3 <abs.tar 2>err &&
	! find out3 -name dotdot.txt | grep -q .
'

# A pipeline whose first task ends at once and whose second waits for a file: while it
# runs its first task's logs are kept, and no retention pass removes them.
test_expect_success 'the retention removes ended jobs'"'"' logs, never a running job'"'"'s' '
	cat >pipe.yaml <<-EOF &&
	name: pipe
	---
	run: echo first-task-done
	---
	run: |
	  i=0; while [ ! -e "$TRASH/go" ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
	  echo second-task-done
	EOF
	run=$(skiff jobs launch -d pipe.yaml) &&
	wait_for "test \"\$(jfield $run task)\" = 1" 60 &&
	wait_for "test -s $KEPT/$run/skiff-jobs/\$(ls $KEPT/$run/skiff-jobs | head -1)/rank-0/run.log" 30 &&
	printf "jobs:\n  controller:\n    task_logs_gc_retention_hours: 0.0001\n" \
		>"$SKIFF_HOME/config.yaml" &&
	ssh=$(cat ssh.id) &&
	wait_for "test -e $KEPT/$ssh/REMOVED" 30 &&
	! test -e $KEPT/$ssh/skiff-job-$ssh &&
	skiff jobs logs --no-follow $ssh >log 2>err &&
	grep -q "logs of managed job $ssh were removed after 0.0001 hours (jobs.controller.task_logs_gc_retention_hours)" err &&
	test "$(jfield $run status)" = RUNNING &&
	! test -e $KEPT/$run/REMOVED &&
	grep -rq "^first-task-done\$" $KEPT/$run &&
	: >"$TRASH/go" &&
	wait_for "test \"\$(jfield $run status)\" = SUCCEEDED" 60 &&
	wait_for "test -e $KEPT/$run/REMOVED" 30 &&
	skiff jobs logs --sync-down $ssh 2>err &&
	grep -q "were removed after 0.0001 hours" err
'

test_expect_success 'the size cap removes the oldest ended job first' '
	export SKIFF_HOME=$HOME2 && KEPT=$HOME2/jobs/kept &&
	a=$(skiff jobs launch -d "echo cap-a") &&
	wait_for "test \"\$(jfield $a status)\" = SUCCEEDED" 60 &&
	wait_for "test -d $KEPT/$a/skiff-jobs" 30 &&
	b=$(skiff jobs launch -d "echo cap-b") &&
	wait_for "test \"\$(jfield $b status)\" = SUCCEEDED" 60 &&
	wait_for "test -d $KEPT/$b/skiff-jobs" 30 &&
	size=$(bytes $KEPT/$b) && all=$(bytes $KEPT) &&
	test "$size" -gt 0 && test "$all" -eq $((size + $(bytes $KEPT/$a))) &&
	lock=$SKIFF_HOME/jobs/controller.lock &&
	{ flock -n $lock true || kill -TERM $(head -1 $lock); } &&
	wait_for "flock -n $lock true" 10 &&
	export SKIFF_JOBS_KEPT_MAX_BYTES=$((all + size / 2)) &&
	c=$(skiff jobs launch -d "echo cap-c") &&
	wait_for "test \"\$(jfield $c status)\" = SUCCEEDED" 60 &&
	wait_for "test -e $KEPT/$a/REMOVED" 30 &&
	grep -q "SKIFF_JOBS_KEPT_MAX_BYTES" $KEPT/$a/REMOVED &&
	! test -e $KEPT/$b/REMOVED
'

test_done
