#include "state/jobs.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/jobs_schema.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/util.h"
#include "lib/banned.h"

static const char *const status_names[MJ_N_STATUS] = {
        "PENDING",
        "STARTING",
        "RUNNING",
        "RECOVERING",
        "CANCELLING",
        "SUCCEEDED",
        "CANCELLED",
        "FAILED",
        "FAILED_SETUP",
        "FAILED_PRECHECKS",
        "FAILED_NO_RESOURCE",
        "FAILED_CONTROLLER",
};

static const char *const sched_names[MJS_N] = {
        "INACTIVE", "WAITING", "LAUNCHING", "ALIVE", "ALIVE_WAITING", "ALIVE_BACKOFF", "DONE",
};

const char *mj_status_name(int s)
{
	return enum_name(status_names, MJ_N_STATUS, s);
}

int mj_status_parse(const char *name)
{
	return enum_parse(status_names, MJ_N_STATUS, name);
}

int mj_status_terminal(int s)
{
	return s >= MJ_SUCCEEDED && s < MJ_N_STATUS;
}

const char *mj_sched_name(int s)
{
	return enum_name(sched_names, MJS_N, s);
}

int mj_sched_parse(const char *name)
{
	return enum_parse(sched_names, MJS_N, name);
}

const char *const st_jobs_migration = ST_JOBS_MIGRATION;

/* struct mjob's row, in the order of MJ_COLS. */
static const struct st_col mj_cols[] = {
        ST_COL(struct mjob, id, INT64),
        ST_COL(struct mjob, name, TEXT),
        ST_COL(struct mjob, entry, TEXT),
        ST_COL(struct mjob, spec, TEXT),
        ST_COL(struct mjob, cwd, TEXT),
        ST_COL(struct mjob, ovargs, TEXT),
        ST_COL(struct mjob, infra, TEXT),
        ST_COL(struct mjob, strategy, INT),
        ST_COL(struct mjob, max_restarts, INT),
        ST_COL(struct mjob, recover_codes, TEXT),
        ST_COL(struct mjob, priority, INT),
        ST_COL(struct mjob, status, INT),
        ST_COL(struct mjob, sched, INT),
        ST_COL(struct mjob, ntasks, INT),
        ST_COL(struct mjob, task_index, INT),
        ST_COL(struct mjob, recoveries, INT),
        ST_COL(struct mjob, restarts, INT),
        ST_COL(struct mjob, attempts, INT),
        ST_COL(struct mjob, cluster, TEXT),
        ST_COL(struct mjob, cluster_job, INT64),
        ST_COL(struct mjob, pool, INT),
        ST_COL(struct mjob, task_id, TEXT),
        ST_COL(struct mjob, reason, TEXT),
        ST_COL(struct mjob, submitted_at, DOUBLE),
        ST_COL(struct mjob, started_at, DOUBLE),
        ST_COL(struct mjob, ended_at, DOUBLE),
        ST_COL(struct mjob, next_try_at, DOUBLE),
        ST_COL(struct mjob, cancel_requested, INT),
        ST_COL(struct mjob, node_status, INT),
        ST_COL(struct mjob, exit_codes, TEXT),
        ST_COL(struct mjob, probe_error, TEXT),
        ST_COL(struct mjob, probe_failures, INT),
        ST_COL_BLOB_OF(struct mjob, overrides, overrides_len),
        ST_COL(struct mjob, resources, TEXT),
        ST_COL(struct mjob, group_id, INT64),
        ST_COL(struct mjob, group_task, INT),
        ST_COL(struct mjob, group_primary, INT),
        ST_COL(struct mjob, group_delay_s, INT64),
        ST_COL(struct mjob, group_name, TEXT),
        ST_COL(struct mjob, probe_since, DOUBLE),
        ST_COL(struct mjob, probe_gone, INT),
        ST_COL(struct mjob, launch_error, TEXT),
};

void mjob_free(struct mjob *j)
{
	if (!j)
		return;
	st_row_free(mj_cols, ARRAY_SIZE(mj_cols), j);
	free(j->task_name);
	memset(j, 0, sizeof(*j));
}

static const char *nz(const char *s)
{
	return s ? s : "";
}

static int add_event(struct st_db *db, int64_t id, double at, int status, int sched,
                     const char *reason, int node_status, const char *exit_codes)
{
	sqlite3_stmt *st = st_prepare(db, "INSERT INTO job_events (job_id, at, status, sched, "
	                                  "reason, node_status, exit_codes) "
	                                  "VALUES (?, ?, ?, ?, ?, ?, ?)");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, id);
	st_bind_double(st, 2, at);
	st_bind_int(st, 3, status);
	st_bind_int(st, 4, sched);
	st_bind_text(st, 5, nz(reason));
	st_bind_int(st, 6, node_status);
	st_bind_text(st, 7, nz(exit_codes));
	return st_step_done(db, st);
}

/* struct mj_task's row, in the order of mj_tasks()' SELECT. */
static const struct st_col mj_task_cols[] = {
        ST_COL(struct mj_task, job_id, INT64),        ST_COL(struct mj_task, task, INT),
        ST_COL(struct mj_task, name, TEXT),           ST_COL(struct mj_task, requested, TEXT),
        ST_COL(struct mj_task, submitted_at, DOUBLE), ST_COL(struct mj_task, started_at, DOUBLE),
        ST_COL(struct mj_task, ended_at, DOUBLE),     ST_COL(struct mj_task, run_s, DOUBLE),
        ST_COL(struct mj_task, run_since, DOUBLE),    ST_COL(struct mj_task, recoveries, INT),
};

void mj_tasks_free(struct mj_task *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		st_row_free(mj_task_cols, ARRAY_SIZE(mj_task_cols), &v[i]);
	free(v);
}

void mj_encode(const struct mjob *j, struct msg *m)
{
	st_row_encode(mj_cols, ARRAY_SIZE(mj_cols), j, m);
	if (j->task_name && *j->task_name)
		msg_add(m, "task_name", j->task_name);
}

void mj_decode(const struct msg *m, struct mjob *j)
{
	memset(j, 0, sizeof(*j));
	st_row_decode(mj_cols, ARRAY_SIZE(mj_cols), m, j);
	j->task_name = xstrdup(msg_get(m, "task_name") ? msg_get(m, "task_name") : "");
}

void mj_task_encode(const struct mj_task *t, struct msg *m)
{
	st_row_encode(mj_task_cols, ARRAY_SIZE(mj_task_cols), t, m);
}

void mj_task_decode(const struct msg *m, struct mj_task *t)
{
	memset(t, 0, sizeof(*t));
	st_row_decode(mj_task_cols, ARRAY_SIZE(mj_task_cols), m, t);
}

double mj_task_run_s(const struct mj_task *t, double now)
{
	double s = t->run_s;

	if (t->started_at <= 0)
		return -1;
	if (t->run_since > 0 && now > t->run_since)
		s += now - t->run_since;
	return s;
}

int mj_task_status(const struct mjob *j, int task)
{
	if (task < j->task_index)
		return MJ_SUCCEEDED;
	if (task == j->task_index)
		return j->status;
	return mj_status_terminal(j->status) ? MJ_CANCELLED : MJ_PENDING;
}

/* The job's task rows, the first one begun at `now`. */
static int add_tasks(struct st_db *db, const struct mjob *j, const struct mj_task *tasks,
                     double now)
{
	sqlite3_stmt *st = st_prepare(db, "INSERT INTO job_tasks (job_id, task, name, requested, "
	                                  "submitted_at) VALUES (?, ?, ?, ?, ?)");
	int k, r = 0;

	if (!st)
		return -EIO;
	for (k = 0; !r && k < (j->ntasks > 0 ? j->ntasks : 1); k++) {
		st_bind_int(st, 1, j->id);
		st_bind_int(st, 2, k);
		st_bind_text(st, 3, tasks ? nz(tasks[k].name) : "");
		st_bind_text(st, 4, tasks ? nz(tasks[k].requested) : "");
		if (k)
			st_bind_text(st, 5, NULL);
		else
			st_bind_double(st, 5, now);
		r = st_step_done(db, st);
	}
	return r;
}

/*
 * A transition's effect on the task rows (status is new, cur the one it leaves, task the
 * job's current task): tasks before it ended when it began; its clock runs while RUNNING.
 */
static int update_tasks(struct st_db *db, int64_t id, int task, int cur, int status, double now)
{
	sqlite3_stmt *st;
	int r;

	st = st_prepare(db, "UPDATE job_tasks SET ended_at = ?1, run_s = run_s + "
	                    "  CASE WHEN run_since IS NULL THEN 0 ELSE MAX(?1 - run_since, 0) END, "
	                    "  run_since = NULL "
	                    "WHERE job_id = ?2 AND task < ?3 AND ended_at IS NULL");
	if (!st)
		return -EIO;
	st_bind_double(st, 1, now);
	st_bind_int(st, 2, id);
	st_bind_int(st, 3, task);
	r = st_step_done(db, st);
	if (r)
		return r;
	st = st_prepare(db,
	                "UPDATE job_tasks SET submitted_at = COALESCE(submitted_at, ?1), "
	                "started_at = CASE WHEN ?2 = 2 THEN COALESCE(started_at, ?1) "
	                "  ELSE started_at END, "
	                "run_s = CASE WHEN ?2 != 2 AND run_since IS NOT NULL "
	                "  THEN run_s + MAX(?1 - run_since, 0) ELSE run_s END, "
	                "run_since = CASE WHEN ?2 = 2 THEN COALESCE(run_since, ?1) ELSE NULL END, "
	                "recoveries = recoveries + (?2 = 3 AND ?3 != 3), "
	                "ended_at = CASE WHEN ?2 >= 5 THEN COALESCE(ended_at, ?1) ELSE NULL END "
	                "WHERE job_id = ?4 AND task = ?5");
	if (!st)
		return -EIO;
	st_bind_double(st, 1, now);
	st_bind_int(st, 2, status);
	st_bind_int(st, 3, cur);
	st_bind_int(st, 4, id);
	st_bind_int(st, 5, task);
	return st_step_done(db, st);
}

/* One job's row, its events and task rows, inside the caller's transaction. */
static int insert_job(struct st_db *db, struct mjob *j, const struct mj_task *tasks, double now)
{
	sqlite3_stmt *st;
	int r;

	st = st_prepare(db, "INSERT INTO managed_jobs (name, entry, spec, cwd, ovargs, infra, "
	                    "strategy, max_restarts, recover_codes, priority, status, sched, "
	                    "ntasks, submitted_at, reason, overrides, resources, group_task, "
	                    "group_primary, group_delay_s, group_name, pool) "
	                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 1, ?, ?, 'submitted', ?, ?, "
	                    "?, ?, ?, ?, ?)");
	if (!st)
		return -EIO;
	st_bind_text(st, 1, nz(j->name));
	st_bind_text(st, 2, nz(j->entry));
	st_bind_text(st, 3, nz(j->spec));
	st_bind_text(st, 4, nz(j->cwd));
	st_bind_text(st, 5, nz(j->ovargs));
	st_bind_text(st, 6, nz(j->infra));
	st_bind_int(st, 7, j->strategy);
	st_bind_int(st, 8, j->max_restarts);
	st_bind_text(st, 9, nz(j->recover_codes));
	st_bind_int(st, 10, j->priority);
	st_bind_int(st, 11, j->ntasks > 0 ? j->ntasks : 1);
	st_bind_double(st, 12, now);
	st_bind_blob(st, 13, j->overrides ? j->overrides : "", j->overrides ? j->overrides_len : 0);
	st_bind_text(st, 14, nz(j->resources));
	st_bind_int(st, 15, j->group_task);
	st_bind_int(st, 16, j->group_name ? j->group_primary : 1);
	st_bind_int(st, 17, j->group_delay_s);
	st_bind_text(st, 18, nz(j->group_name));
	st_bind_int(st, 19, !!j->pool);
	r = st_step_done(db, st);
	if (r)
		return r;
	j->id = st_last_rowid(db);
	j->submitted_at = now;
	j->status = MJ_PENDING;
	j->sched = MJS_WAITING;
	r = add_event(db, j->id, now, MJ_PENDING, MJS_INACTIVE, "created", -1, NULL);
	if (!r)
		r = add_event(db, j->id, now, MJ_PENDING, MJS_WAITING, "submitted", -1, NULL);
	if (!r)
		r = add_tasks(db, j, tasks, now);
	return r;
}

int mj_submit(struct st_db *db, struct mjob *j, const struct mj_task *tasks)
{
	int r = st_begin(db);

	if (r)
		return r;
	r = insert_job(db, j, tasks, now_wall());
	if (r) {
		st_rollback(db);
		return r;
	}
	return st_commit(db);
}

int mj_submit_group(struct st_db *db, struct mjob *v, size_t n, const struct mj_task *tasks)
{
	sqlite3_stmt *st;
	double now = now_wall();
	size_t k;
	int r;

	if (!n)
		return -EINVAL;
	r = st_begin(db);
	if (r)
		return r;
	for (k = 0; !r && k < n; k++)
		r = insert_job(db, &v[k], &tasks[k], now);
	if (r)
		goto fail;
	/* One writer holds the transaction: the ids are consecutive. */
	st = st_prepare(db, "UPDATE managed_jobs SET group_id = ? WHERE id BETWEEN ? AND ?");
	if (!st) {
		r = -EIO;
		goto fail;
	}
	st_bind_int(st, 1, v[0].id);
	st_bind_int(st, 2, v[0].id);
	st_bind_int(st, 3, v[n - 1].id);
	r = st_step_done(db, st);
	if (r)
		goto fail;
	for (k = 0; k < n; k++)
		v[k].group_id = v[0].id;
	return st_commit(db);
fail:
	st_rollback(db);
	return r;
}

#define MJ_COLS                                                                                    \
	"id, name, entry, spec, cwd, ovargs, infra, strategy, max_restarts, recover_codes, "       \
	"priority, status, sched, ntasks, task_index, recoveries, restarts, attempts, cluster, "   \
	"cluster_job, pool, task_id, reason, submitted_at, started_at, ended_at, next_try_at, "    \
	"cancel_requested, node_status, exit_codes, probe_error, probe_failures, overrides, "      \
	"resources, group_id, group_task, group_primary, group_delay_s, group_name, probe_since, " \
	"probe_gone, launch_error"

/* Columns without the spec text: what the queue and the controller need. */
#define MJ_COLS_LIGHT                                                                              \
	"id, name, entry, '', cwd, ovargs, infra, strategy, max_restarts, recover_codes, "         \
	"priority, status, sched, ntasks, task_index, recoveries, restarts, attempts, cluster, "   \
	"cluster_job, pool, task_id, reason, submitted_at, started_at, ended_at, next_try_at, "    \
	"cancel_requested, node_status, exit_codes, probe_error, probe_failures, overrides, "      \
	"resources, group_id, group_task, group_primary, group_delay_s, group_name, probe_since, " \
	"probe_gone, launch_error"

/* A row of MJ_COLS or MJ_COLS_LIGHT into j (zeroed by the caller). */
static void read_row(sqlite3_stmt *st, struct mjob *j)
{
	st_row_load(st, mj_cols, ARRAY_SIZE(mj_cols), j);
	j->task_name = xstrdup("");
}

int mj_cols_check(void)
{
	char *have = st_cols_text(mj_cols, ARRAY_SIZE(mj_cols));
	struct buf light = BUF_INIT(0);
	const char *spec = strstr(have, ", spec, ");
	int r = 0;

	if (spec)
		buf_addf(&light, "%.*s, '', %s", (int)(spec - have), have,
		         spec + strlen(", spec, "));
	if (strcmp(have, MJ_COLS))
		r = error("managed_jobs: the row table reads '%s', the SELECT '%s'", have, MJ_COLS);
	else if (!light.p || strcmp(light.p, MJ_COLS_LIGHT))
		r = error(
		        "managed_jobs: the light SELECT '%s' is not the full one without the spec",
		        MJ_COLS_LIGHT);
	buf_release(&light);
	free(have);
	return r;
}

int mj_group(struct st_db *db, int64_t gid, struct mjob **out, size_t *n)
{
	/* The task's name is its one job_tasks row's (the inner `name` is job_tasks'). */
	sqlite3_stmt *st = st_prepare(db, "SELECT " MJ_COLS_LIGHT ", (SELECT name FROM job_tasks "
	                                  "WHERE job_id = managed_jobs.id AND task = 0) "
	                                  "FROM managed_jobs WHERE group_id = ? ORDER BY id");
	size_t cap = 0;
	int r;

	*out = NULL;
	*n = 0;
	if (!st)
		return -EIO;
	st_bind_int(st, 1, gid);
	while ((r = st_step(db, st)) > 0) {
		struct mjob *j;

		*out = xgrow(*out, *n, &cap, sizeof(**out));
		j = &(*out)[(*n)++];
		read_row(st, j);
		free(j->task_name);
		j->task_name = xstrdup(st_col_text(st, (int)ARRAY_SIZE(mj_cols)));
	}
	sqlite3_reset(st);
	return r < 0 ? r : 0;
}

int mj_groups_with_aux(struct st_db *db, int64_t **out, size_t *n)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT DISTINCT group_id FROM managed_jobs "
	                                  "WHERE group_id != 0 AND group_primary = 0 "
	                                  "AND status < 5 AND cancel_requested = 0 "
	                                  "ORDER BY group_id");
	size_t cap = 0;
	int r;

	*out = NULL;
	*n = 0;
	if (!st)
		return -EIO;
	while ((r = st_step(db, st)) > 0) {
		*out = xgrow(*out, *n, &cap, sizeof(**out));
		(*out)[(*n)++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_reset(st);
	return r < 0 ? r : 0;
}

int mj_group_status(const int *status, const int *primary, size_t n)
{
	size_t k;
	int all_ok = 1;

	for (k = 0; k < n; k++)
		if (status[k] == MJ_RUNNING)
			return MJ_RUNNING;
	for (k = 0; k < n; k++)
		if (!mj_status_terminal(status[k]))
			return status[k];
	for (k = 0; k < n; k++) {
		if (status[k] >= MJ_FAILED)
			return status[k];
		if (primary[k] && status[k] != MJ_SUCCEEDED)
			all_ok = 0;
	}
	return n && all_ok ? MJ_SUCCEEDED : MJ_CANCELLED;
}

int mj_get(struct st_db *db, int64_t id, struct mjob *out)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT " MJ_COLS " FROM managed_jobs WHERE id = ?");
	int r;

	memset(out, 0, sizeof(*out));
	if (!st)
		return -EIO;
	st_bind_int(st, 1, id);
	r = st_step(db, st);
	if (r < 0)
		return r;
	if (!r)
		return -ENOENT;
	read_row(st, out);
	sqlite3_reset(st);
	return 0;
}

int mj_list(struct st_db *db, int skip_finished, unsigned sched_mask, struct mjob **out, size_t *n)
{
	size_t cap = 0;
	sqlite3_stmt *st;
	int r;

	*out = NULL;
	*n = 0;
	if (sched_mask == MJ_CANCEL_REQUESTED) {
		st = st_prepare(db, "SELECT " MJ_COLS_LIGHT " FROM managed_jobs "
		                    "WHERE sched != 6 AND cancel_requested != 0 AND status < 5 "
		                    "ORDER BY id");
	} else if (sched_mask != MJ_ANY) {
		/* Through the schedule-state index: DONE rows are never read. */
		st = st_prepare(db, "SELECT " MJ_COLS_LIGHT " FROM managed_jobs "
		                    "WHERE sched != 6 AND ((1 << sched) & ?) != 0 ORDER BY id");
		if (st)
			st_bind_int(st, 1, sched_mask);
	} else if (skip_finished) {
		st = st_prepare(db, "SELECT " MJ_COLS_LIGHT " FROM managed_jobs "
		                    "WHERE status < 5 ORDER BY id");
	} else {
		st = st_prepare(db, "SELECT " MJ_COLS_LIGHT " FROM managed_jobs ORDER BY id");
	}
	if (!st)
		return -EIO;
	while ((r = st_step(db, st)) > 0) {
		*out = xgrow(*out, *n, &cap, sizeof(**out));
		read_row(st, &(*out)[(*n)++]);
	}
	sqlite3_reset(st);
	if (r < 0) {
		while (*n)
			mjob_free(&(*out)[--*n]);
		free(*out);
		*out = NULL;
		return r;
	}
	return 0;
}

int mj_each(struct st_db *db, int skip_finished, unsigned sched_mask,
            int (*fn)(const struct mjob *j, void *arg), void *arg)
{
	struct mjob *v;
	size_t n, i;
	int r, stop = 0;

	/*
	 * Rows are read first and handed out after the statement is reset: callers write
	 * (transitions), and a write under a live read snapshot could fail to upgrade.
	 */
	r = mj_list(db, skip_finished, sched_mask, &v, &n);
	if (r)
		return r;
	for (i = 0; i < n; i++) {
		if (!stop)
			stop = fn(&v[i], arg);
		mjob_free(&v[i]);
	}
	free(v);
	return 0;
}

/*
 * reason NULL keeps the row's reason; the event then says ev_reason. node_status and
 * exit_codes: what the last probe saw of the run it ends (-1, NULL: none).
 */
static int transition_ev(struct st_db *db, int64_t id, unsigned status_mask, unsigned sched_mask,
                         int status, int sched, const char *reason, const char *ev_reason,
                         double now, int node_status, const char *exit_codes)
{
	sqlite3_stmt *st;
	int cur_status, cur_sched, task, r;

	st = st_prepare(db, "SELECT status, sched, task_index FROM managed_jobs WHERE id = ?");
	if (!st)
		return -EIO;
	st_bind_int(st, 1, id);
	r = st_step(db, st);
	if (r < 0)
		return r;
	if (!r)
		return -ENOENT;
	cur_status = sqlite3_column_int(st, 0);
	cur_sched = sqlite3_column_int(st, 1);
	task = sqlite3_column_int(st, 2);
	sqlite3_reset(st);
	if (!(status_mask & MJ_MASK(cur_status)) || !(sched_mask & MJ_MASK(cur_sched)))
		return -ESTALE;
	if (status < 0)
		status = cur_status;
	if (sched < 0)
		sched = cur_sched;
	st = st_prepare(db,
	                "UPDATE managed_jobs SET status = ?1, sched = ?2, "
	                "reason = COALESCE(?3, reason), "
	                "ended_at = CASE WHEN ?1 >= 5 THEN COALESCE(ended_at, ?4) ELSE NULL END, "
	                "started_at = CASE WHEN ?1 = 2 THEN COALESCE(started_at, ?4) "
	                "  ELSE started_at END "
	                "WHERE id = ?5");
	if (!st)
		return -EIO;
	st_bind_int(st, 1, status);
	st_bind_int(st, 2, sched);
	st_bind_text(st, 3, reason);
	st_bind_double(st, 4, now);
	st_bind_int(st, 5, id);
	r = st_step_done(db, st);
	if (!r)
		r = update_tasks(db, id, task, cur_status, status, now);
	if (r)
		return r;
	if (status == cur_status && sched == cur_sched && !reason)
		return 0;
	return add_event(db, id, now, status, sched, reason ? reason : ev_reason, node_status,
	                 exit_codes);
}

static int transition_locked(struct st_db *db, int64_t id, unsigned status_mask,
                             unsigned sched_mask, int status, int sched, const char *reason,
                             double now)
{
	return transition_ev(db, id, status_mask, sched_mask, status, sched, reason, NULL, now, -1,
	                     NULL);
}

int mj_transition_run(struct st_db *db, int64_t id, unsigned status_mask, unsigned sched_mask,
                      int status, int sched, const char *reason, int node_status,
                      const char *exit_codes)
{
	int own = !st_in_tx(db), r = own ? st_begin(db) : 0;

	if (r)
		return r;
	r = transition_ev(db, id, status_mask, sched_mask, status, sched, reason, NULL, now_wall(),
	                  node_status, exit_codes);
	if (!own)
		return r; /* the caller's transaction: it commits, or rolls back */
	if (r) {
		st_rollback(db);
		return r;
	}
	return st_commit(db);
}

int mj_transition(struct st_db *db, int64_t id, unsigned status_mask, unsigned sched_mask,
                  int status, int sched, const char *reason)
{
	return mj_transition_run(db, id, status_mask, sched_mask, status, sched, reason, -1, NULL);
}

static int update_one(struct st_db *db, sqlite3_stmt *st)
{
	int r;

	if (!st)
		return -EIO;
	r = st_step_done(db, st);
	if (r)
		return r;
	return st_changes(db) ? 0 : -ENOENT;
}

int mj_set_cluster(struct st_db *db, int64_t id, const char *cluster, int64_t cluster_job, int pool)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE managed_jobs SET cluster = ?, cluster_job = ?, "
	                                  "pool = ?, node_status = -1, exit_codes = '', "
	                                  "probe_error = '', probe_failures = 0, probe_since = 0, "
	                                  "probe_gone = 0 WHERE id = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, nz(cluster));
	st_bind_int(st, 2, cluster_job);
	st_bind_int(st, 3, pool);
	st_bind_int(st, 4, id);
	return update_one(db, st);
}

int mj_set_launch_error(struct st_db *db, int64_t id, const char *err)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE managed_jobs SET launch_error = ? WHERE id = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, nz(err));
	st_bind_int(st, 2, id);
	return update_one(db, st);
}

int mj_set_task_id(struct st_db *db, int64_t id, const char *task_id)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE managed_jobs SET task_id = ? WHERE id = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, nz(task_id));
	st_bind_int(st, 2, id);
	return update_one(db, st);
}

int mj_set_counters(struct st_db *db, int64_t id, int task_index, int recoveries, int restarts,
                    int attempts, double next_try_at)
{
	sqlite3_stmt *st =
	        st_prepare(db, "UPDATE managed_jobs SET task_index = ?, recoveries = ?, "
	                       "restarts = ?, attempts = ?, next_try_at = ? WHERE id = ?");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, task_index);
	st_bind_int(st, 2, recoveries);
	st_bind_int(st, 3, restarts);
	st_bind_int(st, 4, attempts);
	st_bind_double(st, 5, next_try_at);
	st_bind_int(st, 6, id);
	return update_one(db, st);
}

int mj_set_probe(struct st_db *db, int64_t id, const char *cluster, int64_t cluster_job,
                 int node_status, const char *exit_codes, const char *probe_error, int gone,
                 double at)
{
	/* The SET's expressions read the row as it was. */
	sqlite3_stmt *st = st_prepare(
	        db, "UPDATE managed_jobs SET node_status = ?1, exit_codes = ?2, probe_error = ?3, "
	            "probe_failures = CASE WHEN ?3 = '' THEN 0 ELSE probe_failures + 1 END, "
	            "probe_since = CASE WHEN ?3 = '' THEN 0 WHEN probe_failures = 0 THEN ?8 "
	            "ELSE probe_since END, "
	            "probe_gone = CASE WHEN ?3 = '' THEN 0 ELSE ?7 END "
	            "WHERE id = ?4 AND cluster = ?5 AND cluster_job = ?6");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, node_status);
	st_bind_text(st, 2, nz(exit_codes));
	st_bind_text(st, 3, nz(probe_error));
	st_bind_int(st, 4, id);
	st_bind_text(st, 5, nz(cluster));
	st_bind_int(st, 6, cluster_job);
	st_bind_int(st, 7, !!gone);
	st_bind_double(st, 8, at);
	return update_one(db, st);
}

int64_t mj_count(struct st_db *db)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT COUNT(*) FROM managed_jobs");
	int64_t n = 0;

	if (st && st_step(db, st) > 0)
		n = sqlite3_column_int64(st, 0);
	if (st)
		sqlite3_reset(st);
	return n;
}

void mj_cluster_name(int64_t id, int task_index, int recoveries, int pool, char *out, size_t size)
{
	if (pool)
		xsnprintf(out, size, "%s", MJ_POOL_CLUSTER);
	else if (!task_index && !recoveries)
		xsnprintf(out, size, MJ_CLUSTER_PREFIX "%lld", (long long)id);
	else
		xsnprintf(out, size, MJ_CLUSTER_PREFIX "%lld-%d-%d", (long long)id, task_index,
		          recoveries);
}

int mj_managed_cluster(const char *name, int64_t *id)
{
	long long v;
	int n = 0;

	if (id)
		*id = 0;
	if (!strcmp(name, MJ_POOL_CLUSTER))
		return 1;
	/* skiff-job-ID or skiff-job-ID-TASK-RECOVERY, ID a positive number. */
	if (!starts_with(name, MJ_CLUSTER_PREFIX) ||
	    sscanf(name + strlen(MJ_CLUSTER_PREFIX), "%lld%n", &v, &n) != 1 || v <= 0 ||
	    !isdigit((unsigned char)name[strlen(MJ_CLUSTER_PREFIX)]))
		return 0;
	if (name[strlen(MJ_CLUSTER_PREFIX) + n]) {
		int t, r, m = 0;

		if (sscanf(name + strlen(MJ_CLUSTER_PREFIX) + n, "-%d-%d%n", &t, &r, &m) != 2 ||
		    name[strlen(MJ_CLUSTER_PREFIX) + n + m])
			return 0;
	}
	if (id)
		*id = v;
	return 1;
}

int64_t mj_count_active_on(struct st_db *db, const char *cluster)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT COUNT(*) FROM managed_jobs "
	                                  "WHERE cluster = ? AND status < ?");
	int64_t n = 0;

	if (!st)
		return 0;
	st_bind_text(st, 1, cluster);
	sqlite3_bind_int(st, 2, MJ_SUCCEEDED);
	if (st_step(db, st) > 0)
		n = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return n;
}

int mj_sched_counts(struct st_db *db, int counts[MJS_N])
{
	sqlite3_stmt *st = st_prepare(db, "SELECT sched, COUNT(*) FROM managed_jobs "
	                                  "WHERE sched != 6 GROUP BY sched");
	int r;

	memset(counts, 0, sizeof(int) * MJS_N);
	if (!st)
		return -EIO;
	while ((r = st_step(db, st)) > 0) {
		int s = sqlite3_column_int(st, 0);

		if (s >= 0 && s < MJS_N)
			counts[s] = sqlite3_column_int(st, 1);
	}
	sqlite3_reset(st);
	return r;
}

/* Jobs that hold a run slot. */
static int running_count(const int c[MJS_N])
{
	return c[MJS_LAUNCHING] + c[MJS_ALIVE] + c[MJS_ALIVE_WAITING] + c[MJS_ALIVE_BACKOFF];
}

static int64_t first_in(struct st_db *db, int sched)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT id FROM managed_jobs WHERE sched = ? "
	                                  "AND sched != 6 AND cancel_requested = 0 "
	                                  "ORDER BY priority DESC, id LIMIT 1");
	int64_t id = 0;

	if (!st)
		return -EIO;
	st_bind_int(st, 1, sched);
	if (st_step(db, st) > 0)
		id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return id;
}

/*
 * Up to max ids of the jobs after first in the claim order of sched `from` (first itself
 * left out), as far as they run unbroken on the local pool (their rows' pool hint).
 */
static int pool_run_after(struct st_db *db, int from, int64_t first, int64_t *ids, size_t max,
                          size_t *n)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT id, pool FROM managed_jobs WHERE sched = ? "
	                                  "AND sched != 6 AND cancel_requested = 0 AND id != ? "
	                                  "ORDER BY priority DESC, id LIMIT ?");
	int r;

	*n = 0;
	if (!st)
		return -EIO;
	st_bind_int(st, 1, from);
	st_bind_int(st, 2, first);
	st_bind_int(st, 3, (int64_t)max);
	while ((r = st_step(db, st)) > 0 && sqlite3_column_int(st, 1))
		ids[(*n)++] = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return r < 0 ? r : 0;
}

static int pool_hint(struct st_db *db, int64_t id)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT pool FROM managed_jobs WHERE id = ?");
	int pool = 0;

	if (!st)
		return 0;
	st_bind_int(st, 1, id);
	if (st_step(db, st) > 0)
		pool = sqlite3_column_int(st, 0);
	sqlite3_reset(st);
	return pool;
}

static int claim_one(struct st_db *db, int64_t id, int from)
{
	return transition_ev(db, id, MJ_ACTIVE_MASK & ~MJ_MASK(MJ_CANCELLING), MJ_MASK(from),
	                     from == MJS_WAITING ? MJ_STARTING : -1, MJS_LAUNCHING,
	                     from == MJS_WAITING ? "launch slot taken" : NULL, "launch slot taken",
	                     now_wall(), -1, NULL);
}

int mj_claim_batch(struct st_db *db, int max_launching, int max_running, size_t max_batch,
                   int64_t *ids, size_t *n)
{
	int c[MJS_N], r, from;
	int64_t pick = 0;
	size_t more = 0, k, room;

	*n = 0;
	r = st_begin(db);
	if (r)
		return r;
	r = mj_sched_counts(db, c);
	if (r)
		goto fail;
	if (c[MJS_LAUNCHING] >= max_launching || !max_batch)
		goto none;
	from = MJS_ALIVE_WAITING;
	pick = first_in(db, from);
	if (!pick && running_count(c) < max_running) {
		from = MJS_WAITING;
		pick = first_in(db, from);
	}
	if (pick < 0) {
		r = (int)pick;
		goto fail;
	}
	if (!pick)
		goto none;
	r = claim_one(db, pick, from);
	if (r)
		goto fail;
	ids[(*n)++] = pick;
	/* The batch: what follows it on the pool, within the launch and run limits. */
	room = max_batch - 1;
	if ((size_t)(max_launching - c[MJS_LAUNCHING] - 1) < room)
		room = (size_t)(max_launching - c[MJS_LAUNCHING] - 1);
	if (from == MJS_WAITING && (size_t)(max_running - running_count(c) - 1) < room)
		room = (size_t)(max_running - running_count(c) - 1);
	if (room && pool_hint(db, pick)) {
		r = pool_run_after(db, from, pick, ids + 1, room, &more);
		for (k = 0; !r && k < more; k++)
			r = claim_one(db, ids[1 + k], from);
		if (r)
			goto fail;
		*n += more;
	}
none:
	r = st_commit(db);
	if (r)
		*n = 0;
	return r;
fail:
	*n = 0;
	st_rollback(db);
	return r;
}

int mj_claim_next(struct st_db *db, int max_launching, int max_running, int64_t *id)
{
	size_t n;
	int r = mj_claim_batch(db, max_launching, max_running, 1, id, &n);

	if (r || !n)
		*id = 0;
	return r;
}

const char *mj_cancel_reason(const struct mjob *j, char *out, size_t size)
{
	if (j->cancel_requested != MJ_CANCEL_BY_GROUP)
		return "cancelled by the user";
	snprintf(out, size, "auxiliary task of job group %s: its primary tasks ended",
	         j->group_name);
	return out;
}

/* by: MJ_CANCEL_BY_USER or MJ_CANCEL_BY_GROUP. */
static int cancel_one(struct st_db *db, int64_t id, int by, int *found, int *done, int *ended,
                      double now)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT status, sched, cluster, group_name "
	                                  "FROM managed_jobs WHERE id = ?");
	char why[MJ_CANCEL_REASON_MAX];
	struct mjob g = {0};
	int status, sched, holds, r;

	if (!st)
		return -EIO;
	st_bind_int(st, 1, id);
	r = st_step(db, st);
	if (r <= 0)
		return r;
	status = sqlite3_column_int(st, 0);
	sched = sqlite3_column_int(st, 1);
	holds = *st_col_text(st, 2) != 0;
	g.group_name = xstrdup(st_col_text(st, 3));
	sqlite3_reset(st);
	g.cancel_requested = by;
	if (mj_status_terminal(status)) {
		(*ended)++;
		goto out;
	}
	(*found)++;
	if (sched == MJS_WAITING || sched == MJS_INACTIVE ||
	    (sched == MJS_ALIVE_BACKOFF && !holds)) {
		r = transition_locked(db, id, MJ_ACTIVE_MASK, MJ_ANY, MJ_CANCELLED, MJS_DONE,
		                      mj_cancel_reason(&g, why, sizeof(why)), now);
		if (!r)
			(*done)++;
		r = r == -ESTALE ? 0 : r;
		goto out;
	}
	st = st_prepare(db, "UPDATE managed_jobs SET cancel_requested = ? WHERE id = ?");
	if (!st) {
		r = -EIO;
		goto out;
	}
	st_bind_int(st, 1, by);
	st_bind_int(st, 2, id);
	r = st_step_done(db, st);
out:
	free(g.group_name);
	return r;
}

/* ids, and every member of a group that one of them is (its first member's id), into v. */
static int expand_groups(struct st_db *db, const int64_t *ids, size_t n, int64_t **v, size_t *nv)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT id FROM managed_jobs WHERE group_id = ?1 "
	                                  "AND id != ?1 ORDER BY id");
	size_t cap = 0, i;
	int r = 0;

	if (!st)
		return -EIO;
	for (i = 0; i < n; i++) {
		*v = xgrow(*v, *nv, &cap, sizeof(**v));
		(*v)[(*nv)++] = ids[i];
		st_bind_int(st, 1, ids[i]);
		while ((r = st_step(db, st)) > 0) {
			*v = xgrow(*v, *nv, &cap, sizeof(**v));
			(*v)[(*nv)++] = sqlite3_column_int64(st, 0);
		}
		sqlite3_reset(st);
		if (r < 0)
			return r;
	}
	return 0;
}

int mj_cancel(struct st_db *db, const int64_t *ids, size_t n, const char *name, int all, int *found,
              int *done, int *ended)
{
	double now = now_wall();
	int64_t *v = NULL;
	size_t nv = 0, cap = 0, i;
	int r;

	*found = *done = *ended = 0;
	r = st_begin(db);
	if (r)
		return r;
	if (all || name) {
		sqlite3_stmt *st =
		        all ? st_prepare(db, "SELECT id FROM managed_jobs WHERE status < 5")
		            : st_prepare(db, "SELECT id FROM managed_jobs WHERE name = ? "
		                             "AND status < 5");

		if (!st) {
			r = -EIO;
			goto fail;
		}
		if (!all)
			st_bind_text(st, 1, name);
		while ((r = st_step(db, st)) > 0) {
			v = xgrow(v, nv, &cap, sizeof(*v));
			v[nv++] = sqlite3_column_int64(st, 0);
		}
		sqlite3_reset(st);
		if (r < 0)
			goto fail;
	} else {
		r = expand_groups(db, ids, n, &v, &nv);
		if (r < 0)
			goto fail;
	}
	ids = v;
	n = nv;
	for (i = 0; i < n; i++) {
		r = cancel_one(db, ids[i], MJ_CANCEL_BY_USER, found, done, ended, now);
		if (r < 0)
			goto fail;
	}
	free(v);
	return st_commit(db);
fail:
	free(v);
	st_rollback(db);
	return r;
}

int mj_cancel_aux(struct st_db *db, int64_t id)
{
	int found = 0, done = 0, ended = 0, r = st_begin(db);

	if (r)
		return r;
	r = cancel_one(db, id, MJ_CANCEL_BY_GROUP, &found, &done, &ended, now_wall());
	if (r < 0) {
		st_rollback(db);
		return r;
	}
	return st_commit(db);
}

int mj_holder_set(struct st_db *db, int64_t job_id, const char *kind, int pid, uint64_t start)
{
	sqlite3_stmt *st = st_prepare(db, "INSERT OR REPLACE INTO job_holders (job_id, kind, pid, "
	                                  "pid_start, since) VALUES (?, ?, ?, ?, ?)");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, job_id);
	st_bind_text(st, 2, kind);
	st_bind_int(st, 3, pid);
	st_bind_int(st, 4, (int64_t)start);
	st_bind_double(st, 5, now_wall());
	return st_step_done(db, st);
}

int mj_holder_clear(struct st_db *db, int64_t job_id, int pid)
{
	sqlite3_stmt *st = st_prepare(db, "DELETE FROM job_holders WHERE job_id = ? "
	                                  "AND (? = 0 OR pid = ?)");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, job_id);
	st_bind_int(st, 2, pid);
	st_bind_int(st, 3, pid);
	return st_step_done(db, st);
}

int mj_holders(struct st_db *db, struct mj_holder **out, size_t *n)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT job_id, kind, pid, pid_start, since "
	                                  "FROM job_holders ORDER BY job_id");
	size_t cap = 0;
	int r;

	*out = NULL;
	*n = 0;
	if (!st)
		return -EIO;
	while ((r = st_step(db, st)) > 0) {
		struct mj_holder *h;

		*out = xgrow(*out, *n, &cap, sizeof(**out));
		h = &(*out)[(*n)++];
		h->job_id = sqlite3_column_int64(st, 0);
		xsnprintf(h->kind, sizeof(h->kind), "%.*s", (int)sizeof(h->kind) - 1,
		          st_col_text(st, 1));
		h->pid = sqlite3_column_int(st, 2);
		h->pid_start = (uint64_t)sqlite3_column_int64(st, 3);
		h->since = sqlite3_column_double(st, 4);
	}
	sqlite3_reset(st);
	return r;
}

int mj_cleanup_add(struct st_db *db, int64_t job_id, const char *cluster, int64_t cluster_job)
{
	sqlite3_stmt *st = st_prepare(db, "INSERT INTO job_cleanups (job_id, cluster, cluster_job) "
	                                  "VALUES (?, ?, ?)");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, job_id);
	st_bind_text(st, 2, cluster);
	st_bind_int(st, 3, cluster_job);
	return st_step_done(db, st);
}

int mj_cleanups(struct st_db *db, struct mj_cleanup **out, size_t *n)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT id, job_id, cluster, cluster_job "
	                                  "FROM job_cleanups ORDER BY id");
	size_t cap = 0;
	int r;

	*out = NULL;
	*n = 0;
	if (!st)
		return -EIO;
	while ((r = st_step(db, st)) > 0) {
		struct mj_cleanup *c;

		*out = xgrow(*out, *n, &cap, sizeof(**out));
		c = &(*out)[(*n)++];
		c->id = sqlite3_column_int64(st, 0);
		c->job_id = sqlite3_column_int64(st, 1);
		c->cluster = xstrdup(st_col_text(st, 2));
		c->cluster_job = sqlite3_column_int64(st, 3);
		c->picked = 0;
	}
	sqlite3_reset(st);
	return r;
}

int mj_cleanup_count(struct st_db *db)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT COUNT(*) FROM job_cleanups");
	int n = 0;

	if (st && st_step(db, st) > 0)
		n = sqlite3_column_int(st, 0);
	if (st)
		sqlite3_reset(st);
	return n;
}

int mj_cleanup_count_job(struct st_db *db, int64_t job_id)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT COUNT(*) FROM job_cleanups WHERE job_id = ?");
	int n = 0;

	if (!st)
		return -EIO;
	st_bind_int(st, 1, job_id);
	if (st_step(db, st) > 0)
		n = sqlite3_column_int(st, 0);
	sqlite3_reset(st);
	return n;
}

int mj_cleanup_done(struct st_db *db, int64_t id)
{
	sqlite3_stmt *st = st_prepare(db, "DELETE FROM job_cleanups WHERE id = ?");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, id);
	return st_step_done(db, st);
}

void mj_cleanups_free(struct mj_cleanup *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		free(v[i].cluster);
	free(v);
}

int mj_events(struct st_db *db, int64_t id, int (*fn)(const struct mj_event *e, void *arg),
              void *arg)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT at, status, sched, reason, node_status, "
	                                  "exit_codes FROM job_events "
	                                  "WHERE job_id = ? ORDER BY at, rowid");
	int r;

	if (!st)
		return -EIO;
	st_bind_int(st, 1, id);
	while ((r = st_step(db, st)) > 0) {
		struct mj_event e;

		e.at = sqlite3_column_double(st, 0);
		e.status = sqlite3_column_int(st, 1);
		e.sched = sqlite3_column_int(st, 2);
		e.reason = st_col_text(st, 3);
		e.node_status = sqlite3_column_int(st, 4);
		e.exit_codes = st_col_text(st, 5);
		if (fn(&e, arg))
			break;
	}
	sqlite3_reset(st);
	return r < 0 ? r : 0;
}

int mj_tasks(struct st_db *db, int64_t min_id, struct mj_task **out, size_t *n)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT job_id, task, name, requested, submitted_at, "
	                                  "started_at, ended_at, run_s, run_since, recoveries "
	                                  "FROM job_tasks WHERE job_id >= ? ORDER BY job_id, task");
	size_t cap = 0;
	int r;

	*out = NULL;
	*n = 0;
	if (!st)
		return -EIO;
	st_bind_int(st, 1, min_id);
	while ((r = st_step(db, st)) > 0) {
		struct mj_task *t;

		*out = xgrow(*out, *n, &cap, sizeof(**out));
		t = &(*out)[(*n)++];
		memset(t, 0, sizeof(*t));
		st_row_load(st, mj_task_cols, ARRAY_SIZE(mj_task_cols), t);
	}
	sqlite3_reset(st);
	return r < 0 ? r : 0;
}

int mj_meta_set(struct st_db *db, const char *key, const char *value)
{
	sqlite3_stmt *st = st_prepare(db, "INSERT OR REPLACE INTO jobs_meta (key, value) "
	                                  "VALUES (?, ?)");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, key);
	st_bind_text(st, 2, value);
	return st_step_done(db, st);
}

int mj_meta_get(struct st_db *db, const char *key, char *out, size_t size)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT value FROM jobs_meta WHERE key = ?");
	int r;

	out[0] = 0;
	if (!st)
		return -EIO;
	st_bind_text(st, 1, key);
	r = st_step(db, st);
	if (r > 0) {
		/* Ours are numbers; a longer value (another writer's) is cut, never fatal. */
		const char *v = st_col_text(st, 0);
		size_t n = strlen(v);

		if (n >= size)
			n = size - 1;
		memcpy(out, v, n);
		out[n] = '\0';
	}
	sqlite3_reset(st);
	return r < 0 ? r : 0;
}

void mj_details(const struct mjob *j, int launching, int max_launching, int running,
                int max_running, double now, struct buf *out)
{
	if (j->ntasks > 1)
		buf_addf(out, "task %d of %d: ", j->task_index + 1, j->ntasks);
	if (mj_status_terminal(j->status)) {
		buf_adds(out, j->reason);
		return;
	}
	if (j->cancel_requested || j->status == MJ_CANCELLING) {
		buf_addf(out, "cancelling: releasing %s", *j->cluster ? j->cluster : "its launch");
		return;
	}
	switch (j->sched) {
	case MJS_INACTIVE:
	case MJS_WAITING:
		if (max_running && running >= max_running)
			buf_addf(out, "waiting for a run slot (%d of %d in use)", running,
			         max_running);
		else if (max_launching)
			buf_addf(out, "waiting for a launch slot (%d of %d in use)", launching,
			         max_launching);
		else
			buf_adds(out, "waiting for the controller");
		return;
	case MJS_ALIVE_WAITING:
		buf_addf(out, "%s: waiting for a launch slot (%d of %d in use), attempt %d",
		         j->status == MJ_RECOVERING ? "recovering" : "next task", launching,
		         max_launching, j->recoveries);
		return;
	case MJS_ALIVE_BACKOFF:
		/* Its time is up: what holds it is a release (its reason says which). */
		if (j->next_try_at <= now)
			buf_addf(out, "%s: %s",
			         j->status == MJ_RECOVERING ? "recovering" : "launch failed",
			         j->reason);
		else
			buf_addf(out, "%s: retry in %.0f s after: %s",
			         j->status == MJ_RECOVERING ? "recovering" : "launch failed",
			         j->next_try_at - now, j->reason);
		return;
	case MJS_LAUNCHING:
		if (j->status == MJ_RECOVERING)
			buf_addf(out, "recovering: %s, attempt %d", j->reason, j->recoveries);
		else
			buf_addf(out, "launching (attempt %d)", j->attempts + 1);
		return;
	case MJS_ALIVE:
		if (*j->probe_error)
			buf_addf(out, "running on %s; last check failed (%d in a row): %s",
			         j->cluster, j->probe_failures, j->probe_error);
		else
			buf_addf(out, "running on %s (cluster job %lld)", j->cluster,
			         (long long)j->cluster_job);
		return;
	default: buf_adds(out, j->reason);
	}
}
