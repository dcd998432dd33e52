#!/bin/sh
# Managed jobs whose sizes the user chooses, on local infra: 121 failing ranks (their exit
# codes outgrew the controller's 512-byte reason, and every restarted controller died on
# the same probe), a 150-character job name (it outgrew the launch's task id: every attempt
# died, the job ended FAILED_NO_RESOURCE), names at and past TASK_NAME_MAX (255), and a
# k8s/CONTEXT infra of 300 characters (it outgrew the launch worker's copy). None of them
# may leave a BUG: line in a log (lib.sh's daemon-log scan checks that too, at the end).
. "$(dirname "$0")/lib.sh"

export SKIFF_JOBS_POLL_MS=200 SKIFF_JOBS_BACKOFF_S=1 SKIFF_JOBS_IDLE_S=3

test_cleanup_hook() {
	f=$SKIFF_HOME/jobs/controller.lock
	[ -f "$f" ] && ! flock -n "$f" true 2>/dev/null && kill -KILL "$(head -1 "$f")" 2>/dev/null
	skiff status --json 2>/dev/null | python3 -c "
import json,sys
for c in json.load(sys.stdin): print(c['name'])" 2>/dev/null | while read -r c; do
		timeout 120 "$SKIFF_BIN" down --purge "$c" >/dev/null 2>&1
	done
}

# jfield ID FIELD: one field of a job in `jobs queue --json`.
jfield() {
	skiff jobs queue --json | python3 -c "
import json,sys
for j in json.load(sys.stdin):
    if j['id'] == $1: print(j['$2'])"
}

# no_bug: no log under SKIFF_HOME holds a BUG: line (a daemon that died on its input).
no_bug() {
	! grep -rs "BUG:" "$SKIFF_HOME" --include='*.log'
}

# no_clusters: the launcher has no cluster left (a job's own, or the pool).
no_clusters() {
	skiff status >st && grep -q "^No existing clusters" st
}

NAME150=$(printf 'n%.0s' $(seq 150))
NAME255=$(printf 'm%.0s' $(seq 255))
NAME256=${NAME255}m

test_expect_success '121 ranks fail: the job is FAILED with its codes counted, its cluster released' '
	cat >ranks.yaml <<-\EOF &&
	num_nodes: 121
	run: exit 100
	EOF
	why="the task failed (exit codes 100 x 121)" &&
	id=$(skiff jobs launch -d ranks.yaml) &&
	wait_for "test \"\$(jfield $id schedule_state)\" = DONE" 120 &&
	test "$(jfield $id status)" = FAILED &&
	skiff jobs queue >q &&
	grep -q "FAILED  *-  *$why\$" q &&
	skiff jobs queue --json >q.json &&
	python3 - "$id" <<-\EOF &&
	import json, sys
	j = [j for j in json.load(open("q.json")) if j["id"] == int(sys.argv[1])][0]
	assert j["exit_codes"] == [100] * 121, j["exit_codes"]
	assert j["details"] == "the task failed (exit codes 100 x 121)", j["details"]
	EOF
	# The row is written before the log line; logs exits 100: the job failed.
	wait_for "expect_fail 100 skiff jobs logs --controller $id >ctl &&
		grep -q \"FAILED: $why\" ctl" 10 &&
	wait_for no_clusters 120 &&
	no_bug
'

test_expect_success 'a 150-character job name is carried whole: the job SUCCEEDS' '
	id=$(skiff jobs launch -d -n "$NAME150" "echo hi \$SKYPILOT_TASK_ID") &&
	wait_for "test \"\$(jfield $id schedule_state)\" = DONE" 60 &&
	test "$(jfield $id status)" = SUCCEEDED &&
	test "$(jfield $id name)" = "$NAME150" &&
	skiff jobs logs --no-follow $id >log &&
	grep -q "^hi sky-managed-.*_${NAME150}_${id}-0\$" log &&
	no_bug
'

test_expect_success 'a 255-character name works, from -n and from the YAML' '
	id=$(skiff jobs launch -d -n "$NAME255" "echo at the limit") &&
	printf "name: %s\nrun: echo from yaml\n" "$NAME255" >n255.yaml &&
	id2=$(skiff jobs launch -d n255.yaml) &&
	wait_for "test \"\$(jfield $id schedule_state)\" = DONE" 60 &&
	wait_for "test \"\$(jfield $id2 schedule_state)\" = DONE" 60 &&
	test "$(jfield $id status)" = SUCCEEDED &&
	test "$(jfield $id2 status)" = SUCCEEDED &&
	test "$(jfield $id2 name)" = "$NAME255" &&
	no_bug
'

test_expect_success 'a 256-character name is refused where it is given, saying the limit' '
	skiff jobs queue --json >before &&
	expect_fail 2 skiff jobs launch -d -n "$NAME256" "echo never" 2>err &&
	grep -q "^skiff: error: --name .* is 256 characters long, more than 255\$" err &&
	test "$(wc -l <err)" = 1 &&
	expect_fail 2 skiff launch -n "$NAME256" "echo never" 2>err &&
	grep -q "is 256 characters long, more than 255" err &&
	printf "name: %s\nrun: echo never\n" "$NAME256" >n256.yaml &&
	expect_fail 3 skiff jobs launch -d n256.yaml 2>err &&
	grep -q "n256.yaml:1:7: .*name .* is 256 characters long, more than 255" err &&
	printf "name: %s\n---\nrun: echo never\n" "$NAME256" >p256.yaml &&
	expect_fail 3 skiff jobs launch -d p256.yaml 2>err &&
	grep -q "is 256 characters long, more than 255" err &&
	skiff jobs queue --json >after &&
	test_cmp before after
'

test_expect_success 'an infra past 256 characters is refused where it is given' '
	ctx=$(printf "c%.0s" $(seq 300)) &&
	skiff jobs queue --json >before &&
	expect_fail 2 skiff jobs launch -d --infra "k8s/$ctx" "echo never" 2>err &&
	grep -q "^skiff: error: infra .* is 304 characters long, more than 256\$" err &&
	test "$(wc -l <err)" = 1 &&
	printf "resources:\n  infra: k8s/%s\nrun: echo never\n" "$ctx" >k300.yaml &&
	expect_fail 3 skiff jobs launch -d k300.yaml 2>err &&
	grep -q "k300.yaml:2:10: .* is 304 characters long, more than 256" err &&
	skiff jobs queue --json >after &&
	test_cmp before after
'

test_expect_success 'a 256-character k8s/CONTEXT reaches the launch whole; no worker dies' '
	ctx=$(printf "c%.0s" $(seq 252)) &&
	id=$(skiff jobs launch -d --infra "k8s/$ctx" "echo never") &&
	wait_for "test \"\$(jfield $id schedule_state)\" = DONE" 60 &&
	test "$(jfield $id status)" != SUCCEEDED &&
	grep -q "^\[launch\] job $id task 0 on skiff-job-$id (k8s/$ctx)" \
		"$SKIFF_HOME/jobs/logs/$id.log" &&
	no_bug
'

test_done
