/* Managed jobs' state: submit, claim order and limits, guarded transitions, cancel, details. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "state/db.h"
#include "state/jobs.h"
#include "state/launcher.h"
#include "tests/unit/harness.h"

static char dir[] = "/tmp/skiff-unit-jobs.XXXXXX";

static struct st_db *open_db(void)
{
	struct st_db *db = NULL;
	char *path = xasprintf("%s/launcher.db", dir);

	unlink(path);
	if (st_open(path, &st_launcher_schema, 0, &db))
		db = NULL;
	free(path);
	return db;
}

static int64_t submit(struct st_db *db, const char *name, int prio)
{
	struct mjob j = {0};

	j.name = (char *)name;
	j.entry = "echo hi";
	j.priority = prio;
	j.ntasks = 1;
	return mj_submit(db, &j) ? -1 : j.id;
}

static int status_of(struct st_db *db, int64_t id, int *sched)
{
	struct mjob j;
	int s;

	if (mj_get(db, id, &j))
		return -1;
	s = j.status;
	if (sched)
		*sched = j.sched;
	mjob_free(&j);
	return s;
}

static void test_names(void)
{
	int i;

	for (i = 0; i < MJ_N_STATUS; i++)
		is_int(mj_status_parse(mj_status_name(i)), i, "status %s round-trips",
		       mj_status_name(i));
	for (i = 0; i < MJS_N; i++)
		is_int(mj_sched_parse(mj_sched_name(i)), i, "schedule state %s round-trips",
		       mj_sched_name(i));
	is_str(mj_status_name(MJ_FAILED_NO_RESOURCE), "FAILED_NO_RESOURCE", "SkyPilot's name");
	is_str(mj_sched_name(MJS_ALIVE_BACKOFF), "ALIVE_BACKOFF", "SkyPilot's name");
	ok(!mj_status_terminal(MJ_CANCELLING) && mj_status_terminal(MJ_FAILED_CONTROLLER),
	   "CANCELLING is not terminal, FAILED_CONTROLLER is");
}

static int count_events(double at, int status, int sched, const char *reason, void *arg)
{
	(void)at;
	(void)status;
	(void)sched;
	(void)reason;
	(*(int *)arg)++;
	return 0;
}

static void test_submit_and_claim(void)
{
	struct st_db *db = open_db();
	int64_t a, b, c, d, id;
	int sched = -1, n = 0, counts[MJS_N];

	ok(db != NULL, "the launcher db opens with the jobs tables");
	if (!db)
		return;
	is_int(st_version(db), 8, "schema version 8");
	a = submit(db, "a", 0);
	b = submit(db, "b", 10);
	c = submit(db, "c", 0);
	d = submit(db, "d", 10);
	ok(a == 1 && b == 2 && c == 3 && d == 4, "ids count from 1");
	is_int(status_of(db, a, &sched), MJ_PENDING, "a new job is PENDING");
	is_int(sched, MJS_WAITING, "... and WAITING");
	mj_events(db, a, count_events, &n);
	is_int(n, 2, "INACTIVE and WAITING are recorded as events");

	ok(!mj_claim_next(db, 2, 100, &id) && id == b, "priority first: b");
	is_int(status_of(db, b, &sched), MJ_STARTING, "a claimed job is STARTING");
	is_int(sched, MJS_LAUNCHING, "... and LAUNCHING");
	ok(!mj_claim_next(db, 2, 100, &id) && id == d, "then d (same priority, later id)");
	ok(!mj_claim_next(db, 2, 100, &id) && id == 0, "two launching of two: nothing more");
	mj_sched_counts(db, counts);
	is_int(counts[MJS_LAUNCHING], 2, "two LAUNCHING counted");

	ok(!mj_transition(db, b, MJ_ACTIVE_MASK, MJ_MASK(MJS_LAUNCHING), MJ_RUNNING, MJS_ALIVE,
	                  "running"),
	   "b launched: RUNNING, ALIVE");
	ok(!mj_claim_next(db, 2, 3, &id) && id == a, "a launch slot is free again: a");
	ok(!mj_claim_next(db, 3, 3, &id) && id == 0, "three of three run slots: c waits");

	/* A job that holds a run slot and needs a launch goes before WAITING ones. */
	ok(!mj_transition(db, b, MJ_ACTIVE_MASK, MJ_MASK(MJS_ALIVE), MJ_RECOVERING,
	                  MJS_ALIVE_WAITING, "node lost"),
	   "b recovers: RECOVERING, ALIVE_WAITING");
	ok(!mj_claim_next(db, 3, 3, &id) && id == b, "b relaunches though run slots are full");
	is_int(status_of(db, b, NULL), MJ_RECOVERING, "... and stays RECOVERING");

	is_int(mj_transition(db, c, MJ_MASK(MJ_RUNNING), MJ_ANY, MJ_SUCCEEDED, MJS_DONE, "x"),
	       -ESTALE, "a guarded transition from the wrong status is refused");
	ok(!mj_transition(db, a, MJ_ACTIVE_MASK, MJ_ANY, MJ_FAILED, MJS_DONE, "boom"), "a fails");
	is_int(mj_transition(db, a, MJ_ACTIVE_MASK, MJ_ANY, MJ_SUCCEEDED, MJS_DONE, "late"),
	       -ESTALE, "the first final word stands");
	{
		struct mjob j;

		ok(!mj_get(db, a, &j) && j.ended_at > 0 && !strcmp(j.reason, "boom"),
		   "ended_at and reason are set");
		mjob_free(&j);
	}
	st_close(db);
}

static void test_cancel(void)
{
	struct st_db *db = open_db();
	int64_t ids[3], id, x;
	int found, done, i;

	if (!db)
		return;
	for (i = 0; i < 3; i++)
		ids[i] = submit(db, "many", 0);
	x = submit(db, "other", 0);
	mj_claim_next(db, 1, 10, &id);
	ok(id == ids[0], "the first is LAUNCHING");
	ok(!mj_cancel(db, NULL, 0, "many", 0, &found, &done), "cancel by name");
	is_int(found, 3, "three found");
	is_int(done, 2, "the two WAITING ones are cancelled at once");
	is_int(status_of(db, ids[1], NULL), MJ_CANCELLED, "WAITING -> CANCELLED");
	is_int(status_of(db, ids[0], NULL), MJ_STARTING, "the launching one is asked to cancel");
	{
		struct mjob j;

		ok(!mj_get(db, ids[0], &j) && j.cancel_requested, "... with cancel_requested");
		mjob_free(&j);
	}
	is_int(status_of(db, x, NULL), MJ_PENDING, "another name is untouched");
	ok(!mj_claim_next(db, 5, 10, &id) && id == x, "a cancel-requested job is never claimed");
	ok(!mj_cancel(db, &ids[1], 1, NULL, 0, &found, &done) && found == 1 && done == 0,
	   "cancelling a cancelled job again is harmless");
	ok(!mj_cancel(db, NULL, 0, NULL, 1, &found, &done) && found == 2,
	   "-a finds every active job");
	st_close(db);
}

static void test_many(void)
{
	struct st_db *db = open_db();
	int64_t t0, id;
	int i, found, done;

	if (!db)
		return;
	for (i = 0; i < 1000; i++)
		submit(db, "bulk", 0);
	t0 = now_ms();
	ok(!mj_cancel(db, NULL, 0, NULL, 1, &found, &done) && found == 1000 && done == 1000,
	   "1000 WAITING jobs cancelled in one transaction (%lld ms)", (long long)(now_ms() - t0));
	ok(!mj_claim_next(db, 5, 10, &id) && id == 0, "nothing left to claim");
	st_close(db);
}

static void test_holders_cleanups(void)
{
	struct st_db *db = open_db();
	struct mj_holder *h = NULL;
	struct mj_cleanup *cu = NULL;
	size_t n = 0;

	if (!db)
		return;
	ok(!mj_holder_set(db, 7, "launch", 123, 456) && !mj_holder_set(db, -1, "watch", 9, 10),
	   "holders recorded");
	ok(!mj_holders(db, &h, &n) && n == 2 && h[1].job_id == 7 && h[1].pid == 123 &&
	           h[1].pid_start == 456,
	   "and listed with pid and start time");
	free(h);
	ok(!mj_holder_clear(db, 7, 999) && !mj_holders(db, &h, &n) && n == 2,
	   "clearing with another pid leaves it");
	free(h);
	ok(!mj_holder_clear(db, 7, 123) && !mj_holders(db, &h, &n) && n == 1, "cleared");
	free(h);
	ok(!mj_cleanup_add(db, 3, "skiff-job-3", 0) && !mj_cleanup_add(db, 4, "skiff-jobs", 12),
	   "cleanups recorded");
	ok(!mj_cleanups(db, &cu, &n) && n == 2 && !strcmp(cu[1].cluster, "skiff-jobs") &&
	           cu[1].cluster_job == 12,
	   "and listed");
	ok(!mj_cleanup_done(db, cu[0].id), "one done");
	mj_cleanups_free(cu, n);
	ok(!mj_cleanups(db, &cu, &n) && n == 1, "one left");
	mj_cleanups_free(cu, n);
	st_close(db);
}

/* mj_details() into a fresh out, for is_str(). */
static const char *details(const struct mjob *j, int launching, int max_launching, int running,
                           int max_running, struct buf *out)
{
	buf_reset(out);
	mj_details(j, launching, max_launching, running, max_running, 0, out);
	return out->p;
}

static void test_details(void)
{
	struct buf out = BUF_INIT(0), big = BUF_INIT(0);
	struct mjob j = {0};
	int i;

	j.name = j.cluster = j.reason = j.probe_error = j.exit_codes = "";
	j.ntasks = 1;
	j.status = MJ_PENDING;
	j.sched = MJS_WAITING;
	is_str(details(&j, 8, 8, 8, 100, &out), "waiting for a launch slot (8 of 8 in use)",
	       "WAITING for a launch slot");
	is_str(details(&j, 1, 8, 100, 100, &out), "waiting for a run slot (100 of 100 in use)",
	       "WAITING for a run slot");
	j.status = MJ_RECOVERING;
	j.sched = MJS_LAUNCHING;
	j.reason = "node tn2 unreachable";
	j.recoveries = 2;
	is_str(details(&j, 1, 8, 1, 100, &out), "recovering: node tn2 unreachable, attempt 2",
	       "RECOVERING in words");
	j.status = MJ_RUNNING;
	j.sched = MJS_ALIVE;
	j.cluster = "skiff-jobs";
	j.cluster_job = 5;
	j.ntasks = 3;
	j.task_index = 1;
	is_str(details(&j, 0, 8, 1, 100, &out),
	       "task 2 of 3: running on skiff-jobs (cluster job 5)", "RUNNING in words");
	/* A reason of any length comes out whole (it was cut at 512 bytes, mid-number). */
	for (i = 0; i < 1000; i++)
		buf_addf(&big, "%s100", i ? "," : "the task failed (exit codes ");
	buf_addch(&big, ')');
	j.status = MJ_FAILED;
	j.sched = MJS_DONE;
	j.reason = big.p;
	is_str(details(&j, 0, 8, 1, 100, &out) + strlen("task 2 of 3: "), big.p,
	       "a %zu-byte reason whole", big.len);
	j.status = MJ_RECOVERING;
	j.sched = MJS_ALIVE_BACKOFF;
	j.ntasks = 1;
	ok(ends_with(details(&j, 0, 8, 1, 100, &out), ",100)"), "and in a retry's details");
	buf_release(&big);
	buf_release(&out);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	log_set_level(LOG_ERROR);
	plan_run(test_names);
	plan_run(test_submit_and_claim);
	plan_run(test_cancel);
	plan_run(test_many);
	plan_run(test_holders_cleanups);
	plan_run(test_details);
	{
		char *cmd = xasprintf("rm -rf %s", dir);

		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
		free(cmd);
	}
	return done_testing();
}
