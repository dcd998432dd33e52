#!/bin/sh
# Managed jobs whose node cannot be asked (issue 23: 6): a node that does not answer is not
# a node that lost the job. Before a new attempt the controller knows the old copy is gone:
# its node said so, or its cluster was torn down and every node confirmed that nothing of
# it runs. Never two copies at once. See docs/managed-jobs.md, "Recovery".
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || test_skip_all "needs python3 to read --json"

# A cluster per job, probes every 200 ms, one failed probe makes a node lost (and no time
# is asked for beside it).
export SKIFF_JOBS_POLL_MS=200 SKIFF_JOBS_BACKOFF_S=1 SKIFF_JOBS_IDLE_S=3 \
	SKIFF_JOBS_LOCAL_POOL=0 SKIFF_JOBS_PROBE_FAILURES=1 SKIFF_JOBS_LOST_MS=0

test_cleanup_hook() {
	for p in $(cat "$TRASH"/stopped.* 2>/dev/null); do kill -CONT $p; done 2>/dev/null
	for c in $(skiff status --json 2>/dev/null | python3 -c "import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		timeout 60 "$SKIFF_BIN" down --purge "$c" >/dev/null 2>&1
	done
	pkill -KILL -f "$TRASH" 2>/dev/null
}

# jfield ID FIELD: one field of a job in `jobs queue --json`.
jfield() {
	skiff jobs queue --json | python3 -c "
import json,sys
for j in json.load(sys.stdin):
    if j['id'] == $1: print(j['$2'])"
}

# alive PID: PID runs (a zombie, killed but not reaped yet, does not).
alive() {
	_st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case $_st in Z*) return 1 ;; esac
}

no_job_clusters() {
	skiff status >st.out && ! grep -q '^skiff-job-' st.out
}

# A job that says when two copies of it run at once: each copy takes a lock that the first
# one holds for as long as it runs. The first copy runs until it is killed; a later one
# ends at once.
cat >"$TRASH/lost.yaml" <<EOF
name: lost
run: |
  exec 9>>"$TRASH/copy.lock"
  if ! flock -n 9; then echo "two copies at once" >>"$TRASH/double"; exit 0; fi
  if [ -e "$TRASH/ran" ]; then echo "second run"; exit 0; fi
  touch "$TRASH/ran"; echo \$PPID >"$TRASH/shim.pid"
  sleep 300
EOF

test_expect_success 'a node that cannot be asked: its cluster goes first, the job runs again once' '
	id=$(skiff jobs launch -d lost.yaml) &&
	wait_for "test -s shim.pid" 60 &&
	test "$(jfield $id status)" = RUNNING &&
	node=$SKIFF_HOME/local/skiff-job-$id/0/.skiff &&
	sup=$(head -1 "$node/supervisor.lock") &&
	# The node does not answer: its supervisor stopped, its socket away. The job runs on.
	kill -STOP $sup && echo $sup >stopped.1 &&
	mv "$node/supervisor.sock" "$node/supervisor.sock.away" &&
	alive "$(cat shim.pid)" &&
	wait_for "test \"\$(jfield $id status)\" = SUCCEEDED" 150 &&
	skiff jobs logs --controller $id >ctl &&
	cat ctl &&
	test ! -e double &&
	test "$(jfield $id recoveries)" = 1 &&
	grep -q "the new attempt waits until skiff-job-$id is released" ctl &&
	! alive "$(cat shim.pid)" &&
	skiff jobs logs --no-follow $id >log &&
	grep -q "^second run\$" log &&
	wait_for no_job_clusters 60
'

test_done
