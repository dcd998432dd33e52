/*
 * Managed jobs' state: submit, claim order and limits, guarded transitions, cancel, details,
 * the task rows `jobs queue` shows and what an event keeps of the run it ends.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/db.h"
#include "state/jobs.h"
#include "state/launcher.h"
#include "state/node.h"
#include "supervisor/jobs/jobs.h"
#include "supervisor/jobs/policy.h"
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

/* pool: the row says it runs on the local pool (jobs_submit() sets it from its task). */
static int64_t submit_as(struct st_db *db, const char *name, int prio, int pool)
{
	struct mjob j = {0};

	j.name = (char *)name;
	j.entry = "echo hi";
	j.priority = prio;
	j.ntasks = 1;
	j.pool = pool;
	return mj_submit(db, &j, NULL) ? -1 : j.id;
}

static int64_t submit(struct st_db *db, const char *name, int prio)
{
	return submit_as(db, name, prio, 0);
}

static int64_t submit_pool(struct st_db *db, const char *name, int prio)
{
	return submit_as(db, name, prio, 1);
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

static void test_row_table(void)
{
	is_int(mj_cols_check(), 0, "struct mjob's row table names its SELECTs' columns, in order");
}

/* The clusters managed jobs run on: each name made is recognised, with its job's id. */
static void test_cluster_names(void)
{
	static const char *const not_ours[] = {
	        "skiff-job-",      "skiff-job-0",
	        "skiff-job--3",    "skiff-job-x",
	        "skiff-job-5abc",  "skiff-job-5-1",
	        "skiff-job-5-1-",  "skiff-job-5-1-2-3",
	        "skiff-jobs2",     "my-skiff-job-5",
	        "skiff-job- 5",    "skiff-jobs-controller-ab",
	        "skiff-job-5-a-1", "",
	};
	static const struct {
		int64_t id;
		int task, rec, pool;
		const char *want;
	} made[] = {
	        {7, 0, 0, 0, "skiff-job-7"},
	        {7, 1, 0, 0, "skiff-job-7-1-0"},
	        {123456789012LL, 0, 3, 0, "skiff-job-123456789012-0-3"},
	        {9, 2, 5, 1, "skiff-jobs"},
	};
	char name[64];
	int64_t id;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(made); i++) {
		mj_cluster_name(made[i].id, made[i].task, made[i].rec, made[i].pool, name,
		                sizeof(name));
		is_str(name, made[i].want, "cluster of job %lld, task %d, recovery %d%s",
		       (long long)made[i].id, made[i].task, made[i].rec,
		       made[i].pool ? ", pool" : "");
		ok(mj_managed_cluster(name, &id) && id == (made[i].pool ? 0 : made[i].id),
		   "  recognised, with its job's id");
	}
	for (i = 0; i < ARRAY_SIZE(not_ours); i++)
		ok(!mj_managed_cluster(not_ours[i], &id) && !id,
		   "'%s' is not a managed-jobs cluster", not_ours[i]);
}

static int count_events(const struct mj_event *e, void *arg)
{
	(void)e;
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
	is_int(st_version(db), 16, "schema version 16");
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

/* A fresh db with n pool jobs of priority 0, their ids in p[0..n). */
static struct st_db *pool_db(int64_t *p, int n)
{
	struct st_db *db = open_db();
	int i;

	for (i = 0; db && i < n; i++)
		p[i] = submit_pool(db, "p", 0);
	return db;
}

static void test_claim_batch(void)
{
	struct st_db *db = open_db();
	int64_t ids[16], p[8], n3, x;
	size_t n;
	int i, found, done, ended;

	if (!db)
		return;
	p[0] = submit_pool(db, "p", 0);
	p[1] = submit_pool(db, "p", 0);
	n3 = submit(db, "own", 0);
	p[2] = submit_pool(db, "p", 0);
	ok(!mj_claim_batch(db, 100, 100, 10, ids, &n) && n == 2 && ids[0] == p[0] && ids[1] == p[1],
	   "pool jobs in a row are claimed together, up to a job of its own");
	is_int(status_of(db, p[1], NULL), MJ_STARTING, "each of the batch is STARTING");
	ok(!mj_claim_batch(db, 100, 100, 10, ids, &n) && n == 1 && ids[0] == n3,
	   "a job with a cluster of its own is claimed alone");
	ok(!mj_claim_batch(db, 100, 100, 10, ids, &n) && n == 1 && ids[0] == p[2],
	   "then the next pool job");
	ok(!mj_claim_batch(db, 100, 100, 10, ids, &n) && n == 0, "nothing left");
	st_close(db);

	db = pool_db(p, 5);
	if (!db)
		return;
	ok(!mj_claim_batch(db, 100, 100, 3, ids, &n) && n == 3 && ids[2] == p[2],
	   "a batch holds at most max_batch");
	ok(!mj_claim_batch(db, 6, 100, 3, ids, &n) && n == 2 && ids[0] == p[3] && ids[1] == p[4],
	   "and at most what the launch limit leaves (3 of 6 launching: 2 of 3)");
	for (i = 0; i < 3; i++)
		submit_pool(db, "p", 0);
	ok(!mj_claim_batch(db, 6, 100, 3, ids, &n) && n == 1, "5 of 6 launching: one more, alone");
	ok(!mj_claim_batch(db, 6, 100, 3, ids, &n) && n == 0, "6 of 6 launching: none");
	st_close(db);

	db = pool_db(p, 5);
	if (!db)
		return;
	ok(!mj_claim_batch(db, 100, 2, 10, ids, &n) && n == 2 && ids[1] == p[1],
	   "and at most what the run limit leaves (2)");
	ok(!mj_transition(db, p[0], MJ_ACTIVE_MASK, MJ_MASK(MJS_LAUNCHING), MJ_RECOVERING,
	                  MJS_ALIVE_WAITING, "back") &&
	           !mj_transition(db, p[1], MJ_ACTIVE_MASK, MJ_MASK(MJS_LAUNCHING), MJ_RECOVERING,
	                          MJS_ALIVE_WAITING, "back"),
	   "both wait for a launch again, holding their run slots");
	ok(!mj_claim_batch(db, 100, 2, 10, ids, &n) && n == 2 && ids[0] == p[0] && ids[1] == p[1],
	   "jobs that hold run slots relaunch together, whatever the run limit");
	ok(!mj_claim_batch(db, 100, 2, 10, ids, &n) && n == 0,
	   "WAITING ones do not join them (the run limit is full)");
	st_close(db);

	db = open_db();
	if (!db)
		return;
	p[0] = submit_pool(db, "p", 5);
	n3 = submit(db, "own", 3);
	p[1] = submit_pool(db, "p", 1);
	p[2] = submit_pool(db, "p", 1);
	x = submit_pool(db, "p", 1);
	ok(!mj_cancel(db, &x, 1, NULL, 0, &found, &done, &ended) && done == 1,
	   "one pool job is cancelled");
	p[3] = submit_pool(db, "p", 1);
	ok(!mj_claim_batch(db, 100, 100, 10, ids, &n) && n == 1 && ids[0] == p[0],
	   "a batch never jumps a job of higher priority (the next is of its own cluster)");
	ok(!mj_claim_batch(db, 100, 100, 10, ids, &n) && n == 1 && ids[0] == n3, "then that one");
	ok(!mj_claim_batch(db, 100, 100, 10, ids, &n) && n == 3 && ids[0] == p[1] &&
	           ids[1] == p[2] && ids[2] == p[3],
	   "a cancelled job is never claimed, nor breaks the batch");
	ok(!mj_claim_batch(db, 100, 100, 0, ids, &n) && n == 0, "max_batch 0 claims nothing");
	st_close(db);
}

static void test_cancel(void)
{
	struct st_db *db = open_db();
	int64_t ids[3], id, x;
	int found, done, ended, i;

	if (!db)
		return;
	for (i = 0; i < 3; i++)
		ids[i] = submit(db, "many", 0);
	x = submit(db, "other", 0);
	mj_claim_next(db, 1, 10, &id);
	ok(id == ids[0], "the first is LAUNCHING");
	ok(!mj_cancel(db, NULL, 0, "many", 0, &found, &done, &ended), "cancel by name");
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
	ok(!mj_cancel(db, &ids[1], 1, NULL, 0, &found, &done, &ended) && found == 0 && done == 0 &&
	           ended == 1,
	   "cancelling a cancelled job again is harmless: it is said to have ended");
	ok(!mj_cancel(db, NULL, 0, NULL, 1, &found, &done, &ended) && found == 2,
	   "-a finds every active job");
	st_close(db);
}

static void test_many(void)
{
	struct st_db *db = open_db();
	int64_t t0, id;
	int i, found, done, ended;

	if (!db)
		return;
	for (i = 0; i < 1000; i++)
		submit(db, "bulk", 0);
	t0 = now_ms();
	ok(!mj_cancel(db, NULL, 0, NULL, 1, &found, &done, &ended) && found == 1000 && done == 1000,
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
	ok(!mj_cleanup_add(db, 4, "skiff-jobs", 13), "a second cleanup of job 4");
	is_int(mj_cleanup_count_job(db, 4), 2, "a job's cleanups are counted");
	is_int(mj_cleanup_count_job(db, 3), 0, "a job with none left: 0");
	{
		/* Found through the index, never a scan of every job's cleanups. */
		sqlite3_stmt *plan;
		int by_index = 0;

		ok(sqlite3_prepare_v2(st_handle(db),
		                      "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM job_cleanups "
		                      "WHERE job_id = 4",
		                      -1, &plan, NULL) == SQLITE_OK,
		   "the count's plan");
		while (sqlite3_step(plan) == SQLITE_ROW)
			by_index |= strstr((const char *)sqlite3_column_text(plan, 3),
			                   "INDEX job_cleanups_job") != NULL;
		sqlite3_finalize(plan);
		ok(by_index, "uses the index job_cleanups_job");
	}
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

/* The last event of a job, copied. */
struct last_event {
	int status, node_status;
	char codes[64];
};

static int keep_last(const struct mj_event *e, void *arg)
{
	struct last_event *l = arg;

	l->status = e->status;
	l->node_status = e->node_status;
	xsnprintf(l->codes, sizeof(l->codes), "%.63s", e->exit_codes);
	return 0;
}

/* Task k of job id (NULL when it has no row): *v to free with mj_tasks_free(). */
static struct mj_task *task_of(struct st_db *db, int64_t id, int k, struct mj_task **v, size_t *n)
{
	size_t i;

	*v = NULL;
	*n = 0;
	if (mj_tasks(db, id, v, n))
		return NULL;
	for (i = 0; i < *n; i++)
		if ((*v)[i].job_id == id && (*v)[i].task == k)
			return &(*v)[i];
	return NULL;
}

static void test_tasks(void)
{
	struct st_db *db = open_db();
	struct mj_task in[2] = {{0}}, *v = NULL, *t;
	struct last_event last;
	struct mjob j = {0};
	size_t n;
	double now;

	if (!db)
		return;
	in[0].name = "prep";
	in[0].requested = "1x[CPU:1+]";
	in[1].name = "train";
	in[1].requested = "2x[H100:8]";
	j.name = "pipe";
	j.entry = "pipe.yaml";
	j.ntasks = 2;
	ok(!mj_submit(db, &j, in), "a pipeline of two tasks is submitted");
	ok(!mj_tasks(db, 0, &v, &n) && n == 2, "it has a row per task");
	if (n == 2) {
		is_str(v[1].name, "train", "with each task's name");
		is_str(v[1].requested, "2x[H100:8]", "and what it asks for");
		ok(v[0].submitted_at > 0 && v[1].submitted_at == 0,
		   "the first task begins at submit, the second not yet");
		ok(mj_task_run_s(&v[0], now_wall()) < 0, "a task that never ran has no duration");
	}
	mj_tasks_free(v, n);

	/* Task 0 runs, is recovered (its clock stops), runs again and succeeds. */
	mj_transition(db, j.id, MJ_ACTIVE_MASK, MJ_ANY, MJ_STARTING, MJS_LAUNCHING, "claimed");
	mj_transition(db, j.id, MJ_ACTIVE_MASK, MJ_ANY, MJ_RUNNING, MJS_ALIVE, "running");
	t = task_of(db, j.id, 0, &v, &n);
	ok(t && t->started_at > 0 && t->run_since > 0, "RUNNING starts the task's clock");
	mj_tasks_free(v, n);
	ok(!mj_transition_run(db, j.id, MJ_ACTIVE_MASK, MJ_ANY, MJ_RECOVERING, MJS_ALIVE_WAITING,
	                      "failed (exit codes 1,0)", JOB_FAILED, "1,0"),
	   "a run ends in a recovery");
	mj_events(db, j.id, keep_last, &last);
	ok(last.status == MJ_RECOVERING && last.node_status == JOB_FAILED &&
	           !strcmp(last.codes, "1,0"),
	   "its event keeps what the last probe saw of the run");
	t = task_of(db, j.id, 0, &v, &n);
	ok(t && t->run_since == 0 && t->recoveries == 1 && t->ended_at == 0,
	   "a recovery stops the clock and counts, the task goes on");
	now = now_wall();
	ok(t && mj_task_run_s(t, now + 100) == t->run_s,
	   "time spent recovering is not running time");
	mj_tasks_free(v, n);
	mj_transition(db, j.id, MJ_ACTIVE_MASK, MJ_ANY, MJ_RUNNING, MJS_ALIVE, "running again");
	mj_transition(db, j.id, MJ_ACTIVE_MASK, MJ_ANY, MJ_RECOVERING, MJS_ALIVE_BACKOFF, "x");
	mj_transition(db, j.id, MJ_ACTIVE_MASK, MJ_ANY, MJ_RECOVERING, MJS_ALIVE_WAITING, "y");
	mj_transition(db, j.id, MJ_ACTIVE_MASK, MJ_ANY, MJ_RUNNING, MJS_ALIVE, "running at last");
	t = task_of(db, j.id, 0, &v, &n);
	is_int(t ? t->recoveries : -1, 2, "a recovery through a backoff counts once");
	mj_tasks_free(v, n);

	/* The next task: the controller moves task_index first, then transitions. */
	mj_set_counters(db, j.id, 1, 2, 0, 0, 0);
	mj_transition_run(db, j.id, MJ_ACTIVE_MASK, MJ_ANY, MJ_STARTING, MJS_ALIVE_WAITING,
	                  "task 1 succeeded; next task 2", JOB_SUCCEEDED, "0");
	t = task_of(db, j.id, 0, &v, &n);
	ok(t && t->ended_at > 0 && t->run_since == 0 && t->run_s >= 0,
	   "the task before the current one ended when it began");
	ok(n == 2 && v[1].submitted_at >= v[0].ended_at && v[1].started_at == 0,
	   "the next task began then, and has not run yet");
	mj_tasks_free(v, n);
	ok(!mj_get(db, j.id, &j), "get");
	is_int(mj_task_status(&j, 0), MJ_SUCCEEDED, "a task before the current one SUCCEEDED");
	is_int(mj_task_status(&j, 1), MJ_STARTING, "the current one has the job's status");
	mjob_free(&j);
	mj_transition(db, 1, MJ_ACTIVE_MASK, MJ_ANY, MJ_FAILED, MJS_DONE, "boom");
	t = task_of(db, 1, 1, &v, &n);
	ok(t && t->ended_at > 0, "a final status ends the current task");
	mj_tasks_free(v, n);
	ok(!mj_get(db, 1, &j), "get");
	j.task_index = 0;
	is_int(mj_task_status(&j, 1), MJ_CANCELLED,
	       "a task after the current one of an ended job is CANCELLED (as in SkyPilot)");
	j.status = MJ_RUNNING;
	is_int(mj_task_status(&j, 1), MJ_PENDING, "... and PENDING while the job runs");
	mjob_free(&j);
	st_close(db);
}

/* REQUESTED of a one-task YAML. */
static const char *requested(const char *yaml, struct buf *out)
{
	struct task_list tl = TASK_LIST_INIT;
	struct yerrors errs = YERRORS_INIT;

	buf_reset(out);
	if (task_parse_buf(&tl, "t.yaml", yaml, strlen(yaml), &errs) || !tl.n)
		buf_adds(out, "(parse error)");
	else
		jobs_requested_text(tl.tasks[0], out);
	yerr_release(&errs);
	task_list_release(&tl);
	return out->p;
}

/*
 * The keep worker judges whether a pool run has ended by the job's row; a row listed
 * before a launch went on does not know the run that launch recorded (cluster_job 0), and
 * by it that run looks ended: its logs would be kept before its job wrote a line.
 */
static void test_runs_with_row(void)
{
	struct st_db *db = open_db();
	struct jobs_runs *runs = xcalloc(1, sizeof(*runs));
	struct mjob listed, j;
	int64_t id;

	if (!db) {
		free(runs);
		return;
	}
	id = submit_pool(db, "keep", 0);
	ok(!mj_get(db, id, &listed), "the row as a listing read it, before the launch");
	/* The launch worker: claimed, submitted, its cluster job recorded, then ALIVE. */
	mj_transition(db, id, MJ_ACTIVE_MASK, MJ_ANY, MJ_STARTING, MJS_LAUNCHING, "claimed");
	ok(!mj_set_cluster(db, id, "skiff-jobs", 33, 1), "the launch records its cluster job");
	ok(!mj_transition(db, id, MJ_ACTIVE_MASK, MJ_MASK(MJS_LAUNCHING), MJ_RUNNING, MJS_ALIVE,
	                  "running on skiff-jobs (cluster job 33)"),
	   "and the run begins");
	ok(!jobs_runs(db, id, runs) && runs->n == 1 && runs->job[0] == 33, "one run: job 33");
	ok(jobs_run_ended(&listed, 0, runs->n, runs->job[0]),
	   "by the row listed before it, the run looks ended");
	ok(!jobs_runs_with_row(db, id, runs, &j), "the runs with the row read after them");
	ok(runs->n == 1 && !jobs_run_ended(&j, 0, runs->n, runs->job[0]),
	   "by that row the run has not ended");
	mjob_free(&j);
	/* A probe of run 33 that comes back after the job moved on to run 34 is dropped. */
	ok(!mj_set_probe(db, id, "skiff-jobs", 33, JOB_RUNNING, "", "", 0, 100),
	   "a probe of run 33");
	ok(!mj_set_cluster(db, id, "skiff-jobs", 34, 1), "the job moves on to run 34");
	is_int(mj_set_probe(db, id, "skiff-jobs", 33, JOB_FAILED, "1", "", 0, 100), -ENOENT,
	       "a late probe of run 33 is not written");
	is_int(mj_set_probe(db, id, "other", 34, JOB_FAILED, "1", "", 0, 100), -ENOENT,
	       "nor one of another cluster's job 34");
	ok(!mj_get(db, id, &j) && j.node_status == -1 && j.cluster_job == 34,
	   "the row knows nothing of run 34's end");
	mjob_free(&j);
	ok(!mj_set_probe(db, id, "skiff-jobs", 34, JOB_SUCCEEDED, "0", "", 0, 100),
	   "a probe of run 34");
	ok(!mj_get(db, id, &j) && j.node_status == JOB_SUCCEEDED, "is written");
	mjob_free(&j);
	/* Failed probes in a row: counted, the first one's time kept, a gone node said. */
	mj_set_probe(db, id, "skiff-jobs", 34, -1, "", "unreachable", 0, 200);
	mj_set_probe(db, id, "skiff-jobs", 34, -1, "", "unreachable", 0, 205);
	ok(!mj_get(db, id, &j) && j.probe_failures == 2 && j.probe_since == 200 && !j.probe_gone,
	   "two failed probes: 2, since the first (%d, %.0f, %d)", j.probe_failures, j.probe_since,
	   j.probe_gone);
	mjob_free(&j);
	mj_set_probe(db, id, "skiff-jobs", 34, -1, "", "gone", 1, 210);
	ok(!mj_get(db, id, &j) && j.probe_failures == 3 && j.probe_since == 200 && j.probe_gone,
	   "a third that found the node gone says so");
	mjob_free(&j);
	mj_set_probe(db, id, "skiff-jobs", 34, JOB_SUCCEEDED, "0", "", 1, 215);
	ok(!mj_get(db, id, &j) && !j.probe_failures && !j.probe_since && !j.probe_gone,
	   "a probe that answers clears all three");
	mjob_free(&j);
	ok(!mj_transition(db, id, MJ_ACTIVE_MASK, MJ_ANY, MJ_SUCCEEDED, MJS_DONE, "succeeded"),
	   "the job succeeds");
	ok(!jobs_runs_with_row(db, id, runs, &j) && jobs_run_ended(&j, 0, runs->n, runs->job[0]),
	   "then its run has ended");
	mjob_free(&j);
	is_int(jobs_runs_with_row(db, id + 100, runs, &j), -ENOENT, "no such job: -ENOENT");
	mjob_free(&listed);
	free(runs);
	st_close(db);
}

static void test_requested(void)
{
	struct buf b = BUF_INIT(0);

	is_str(requested("run: echo\n", &b), "1x[CPU:1+]", "nothing asked: SkyPilot's 1x[CPU:1+]");
	is_str(requested("resources:\n  cpus: 4+\nrun: echo\n", &b), "1x[CPU:4+]", "CPUs");
	is_str(requested("num_nodes: 2\nresources:\n  cpus: 4\n  accelerators: H100:8\nrun: x\n",
	                 &b),
	       "2x[H100:8]", "accelerators, not CPUs, with the nodes");
	is_str(requested("resources:\n  accelerators: A100:1\n  use_spot: true\nrun: x\n", &b),
	       "1x[A100:1][Spot]", "spot");
	is_str(requested("resources:\n  any_of:\n    - accelerators: A100:1\n"
	                 "    - accelerators: H100:1\n    - accelerators: A100:1\nrun: x\n",
	                 &b),
	       "1x[A100:1, H100:1]", "each alternative's accelerator once");
	buf_release(&b);
}

static void test_groups(void)
{
	struct st_db *db = open_db();
	struct mjob v[3] = {{0}}, *m = NULL;
	struct mj_task t[3] = {{0}};
	static const char *const names[] = {"trainer", "buffer", "eval"};
	int64_t lone, *gids = NULL;
	size_t n = 0, k;
	int found, done, ended, st[3], pr[3];

	ok(db != NULL, "db");
	if (!db)
		return;
	lone = submit(db, "lone", 0);
	for (k = 0; k < 3; k++) {
		v[k].name = v[k].group_name = "rl";
		v[k].entry = "g.yaml";
		v[k].ntasks = 1;
		v[k].group_task = (int)k;
		v[k].group_primary = k == 0;
		v[k].group_delay_s = (long)k * 30;
		t[k].name = (char *)names[k];
	}
	ok(!mj_submit_group(db, v, 3, t), "a group of three submitted");
	ok(v[0].id == lone + 1 && v[1].id == lone + 2 && v[2].id == lone + 3,
	   "  consecutive ids after the lone job");
	ok(v[2].group_id == v[0].id, "  the group's id is its first member's");
	ok(!mj_group(db, v[0].id, &m, &n) && n == 3, "mj_group reads the three");
	ok(n == 3 && !strcmp(m[1].task_name, "buffer") && !m[1].group_primary &&
	           m[0].group_primary && m[2].group_delay_s == 60 && m[2].group_task == 2 &&
	           !strcmp(m[2].group_name, "rl") && m[2].group_id == v[0].id,
	   "  with their task names, roles and delays");
	for (k = 0; k < n; k++)
		mjob_free(&m[k]);
	free(m);
	ok(!mj_group(db, lone, &m, &n) && n == 0, "a lone job is in no group");
	free(m);
	ok(!mj_groups_with_aux(db, &gids, &n) && n == 1 && gids[0] == v[0].id,
	   "the group has auxiliary members to watch");
	free(gids);
	ok(!mj_cancel(db, &v[1].id, 1, NULL, 0, &found, &done, &ended) && found == 1 && done == 1,
	   "cancel of a member that is not the first cancels it alone");
	is_int(status_of(db, v[0].id, NULL), MJ_PENDING, "  the others go on");
	ok(!mj_cancel_aux(db, v[2].id), "the controller cancels an auxiliary member");
	{
		struct mjob j;
		char why[MJ_CANCEL_REASON_MAX];

		ok(!mj_get(db, v[2].id, &j) && j.status == MJ_CANCELLED &&
		           !strcmp(j.reason, "auxiliary task of job group rl: its primary tasks "
		                             "ended") &&
		           !strcmp(mj_cancel_reason(&j, why, sizeof(why)), "cancelled by the user"),
		   "  its reason names the group (a WAITING one is cancelled at once)");
		mjob_free(&j);
	}
	ok(!mj_groups_with_aux(db, &gids, &n) && n == 0, "  no auxiliary member left to watch");
	free(gids);
	ok(!mj_cancel(db, &v[0].id, 1, NULL, 0, &found, &done, &ended) && found == 1 && done == 1 &&
	           ended == 2,
	   "cancel of the group's id reaches every member (two had ended)");
	ok(!mj_cancel(db, &v[0].id, 1, NULL, 0, &found, &done, &ended) && found == 0 && done == 0 &&
	           ended == 3,
	   "again: all three have ended, none is said to be cancelled");
	is_int(status_of(db, lone, NULL), MJ_PENDING, "  not the lone job");

	st[0] = MJ_RUNNING, st[1] = MJ_PENDING, st[2] = MJ_SUCCEEDED;
	pr[0] = 1, pr[1] = 0, pr[2] = 1;
	is_int(mj_group_status(st, pr, 3), MJ_RUNNING, "group status: RUNNING while one runs");
	st[0] = MJ_RECOVERING;
	is_int(mj_group_status(st, pr, 3), MJ_RECOVERING, "  else the first active one's");
	st[0] = MJ_SUCCEEDED, st[1] = MJ_CANCELLED;
	is_int(mj_group_status(st, pr, 3), MJ_SUCCEEDED,
	       "  SUCCEEDED: the primaries did, the auxiliary one was cancelled");
	st[2] = MJ_FAILED_SETUP;
	is_int(mj_group_status(st, pr, 3), MJ_FAILED_SETUP, "  a failure is the group's");
	st[2] = MJ_CANCELLED;
	is_int(mj_group_status(st, pr, 3), MJ_CANCELLED, "  a cancelled primary: CANCELLED");
	st_close(db);
}

struct taker {
	struct jobs_snap *s;
	size_t alloc[3];
};

static int take_frame(const struct msg *m, void *arg)
{
	struct taker *t = arg;
	struct msg d;
	const char *why;
	int r;

	/* Through the wire's bytes, as a host's answer comes. */
	msg_init(&d);
	r = msg_decode(&d, m->raw.p, m->raw.len, &why) ? -1 : jobs_snap_take(t->s, &d, t->alloc);
	msg_release(&d);
	return r;
}

/*
 * The queue as data (supervisor/jobs/queue.c): a controller's snapshot, sent as frames
 * and taken back, is the same snapshot (what a launcher formats from a controller host).
 */
static void test_snapshot_frames(void)
{
	struct st_db *db = open_db();
	struct jobs_snap a, b = {0};
	struct mjob v[2] = {{0}};
	struct mj_task t[2] = {{0}};
	size_t alloc[3] = {0}, k;
	struct taker tk = {&b, {0}};
	const char *hostile = "a\tb \"c\" <img src=x> \xe2\x86\xb3 $(x)";
	int64_t lone, pipe_id;

	ok(db != NULL, "db");
	if (!db)
		return;
	lone = submit(db, hostile, 7);
	for (k = 0; k < 2; k++) {
		v[k].name = v[k].group_name = "g";
		v[k].entry = "g.yaml";
		v[k].ntasks = 1;
		v[k].group_task = (int)k;
		v[k].group_primary = 1;
		t[k].name = k ? "two" : "one";
		t[k].requested = "1x[CPU:1+]";
	}
	ok(!mj_submit_group(db, v, 2, t), "a group of two");
	pipe_id = submit(db, "after", 0);
	ok(!mj_transition(db, lone, MJ_ACTIVE_MASK, MJ_ANY, MJ_SUCCEEDED, MJS_DONE, "done"),
	   "the lone job ends");
	ok(!jobs_snap_load(db, 0, &a), "the snapshot loads");
	is_int(a.njobs, 4, "  four jobs listed");
	is_int(a.nmembers, 2, "  the group's two members");
	ok(!jobs_snap_send(&a, take_frame, &tk), "sent as frames and taken back");
	is_int(b.njobs, a.njobs, "  as many jobs");
	is_int(b.nmembers, a.nmembers, "  as many members");
	is_int(b.ntasks, a.ntasks, "  as many task rows");
	ok(b.now == a.now && b.max_launching == a.max_launching && b.max_running == a.max_running &&
	           !memcmp(b.counts, a.counts, sizeof(a.counts)),
	   "  the same time, limits and counts (exactly)");
	for (k = 0; k < a.njobs && k < b.njobs; k++)
		ok(b.jobs[k].id == a.jobs[k].id && !strcmp(b.jobs[k].name, a.jobs[k].name) &&
		           b.jobs[k].status == a.jobs[k].status &&
		           b.jobs[k].submitted_at == a.jobs[k].submitted_at &&
		           b.jobs[k].ended_at == a.jobs[k].ended_at &&
		           b.jobs[k].priority == a.jobs[k].priority &&
		           b.jobs[k].group_id == a.jobs[k].group_id &&
		           !strcmp(b.jobs[k].reason, a.jobs[k].reason),
		   "  job %lld the same", (long long)a.jobs[k].id);
	ok(b.njobs && !strcmp(b.jobs[0].name, hostile), "  a hostile name verbatim");
	ok(b.nmembers == 2 && !strcmp(b.members[1].task_name, "two") &&
	           b.members[1].group_task == 1,
	   "  the members' task names and places");
	ok(b.ntasks == a.ntasks && b.ntasks &&
	           !strcmp(b.tasks[b.ntasks - 1].requested, a.tasks[a.ntasks - 1].requested) &&
	           b.tasks[0].job_id == a.tasks[0].job_id,
	   "  the task rows");
	jobs_snap_free(&b);
	jobs_snap_free(&a);
	ok(!jobs_snap_load(db, 1, &a) && a.njobs == 3 && a.jobs[0].id != lone,
	   "skip_finished leaves the ended job out");
	ok(a.njobs == 3 && a.jobs[2].id == pipe_id, "  the others in id order");
	jobs_snap_free(&a);
	{
		struct msg m;
		struct mjob j;

		msg_init(&m);
		msg_add(&m, "row", "job");
		msg_add(&m, "id", "9");
		msg_add(&m, "name", "older host");
		msg_add(&m, "a_field_of_a_newer_host", "x");
		memset(&b, 0, sizeof(b));
		memset(alloc, 0, sizeof(alloc));
		jobs_snap_take(&b, &m, alloc);
		msg_release(&m);
		msg_init(&m);
		msg_add(&m, "row", "a_row_of_a_newer_host");
		ok(!jobs_snap_take(&b, &m, alloc), "a row of an unknown kind is passed over");
		msg_release(&m);
		j = b.njobs ? b.jobs[0] : (struct mjob){0};
		ok(b.njobs == 1 && j.id == 9 && !strcmp(j.name, "older host") && !*j.entry &&
		           j.status == 0 && j.submitted_at == 0,
		   "a row with fields missing (another build): zero and empty, no crash");
		jobs_snap_free(&b);
	}
	st_close(db);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	log_set_level(LOG_ERROR);
	plan_run(test_names);
	plan_run(test_cluster_names);
	plan_run(test_row_table);
	plan_run(test_submit_and_claim);
	plan_run(test_claim_batch);
	plan_run(test_cancel);
	plan_run(test_many);
	plan_run(test_holders_cleanups);
	plan_run(test_details);
	plan_run(test_tasks);
	plan_run(test_runs_with_row);
	plan_run(test_requested);
	plan_run(test_groups);
	plan_run(test_snapshot_frames);
	{
		char *cmd = xasprintf("rm -rf %s", dir);

		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
		free(cmd);
	}
	return done_testing();
}
