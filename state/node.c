#include "state/node.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/exit.h"
#include "lib/log.h"
#include "lib/util.h"
#include "state/images.h"
#include "lib/banned.h"

static const char *const status_names[JOB_N_STATUS] = {
        "INIT",      "PENDING", "SETTING_UP",   "RUNNING",   "FAILED_DRIVER",
        "SUCCEEDED", "FAILED",  "FAILED_SETUP", "CANCELLED",
};

const char *job_status_name(int status)
{
	return enum_name(status_names, JOB_N_STATUS, status);
}

int job_status_parse(const char *name)
{
	return enum_parse(status_names, JOB_N_STATUS, name);
}

int job_exit_code(int status)
{
	switch (status) {
	case JOB_SUCCEEDED: return EXIT_OK;
	case JOB_CANCELLED: return EXIT_JOB_CANCELLED;
	case JOB_FAILED:
	case JOB_FAILED_SETUP:
	case JOB_FAILED_DRIVER: return EXIT_JOB_FAILED;
	default: return EXIT_JOB_NOT_FINISHED;
	}
}

int job_status_terminal(int status)
{
	return status >= JOB_FAILED_DRIVER && status < JOB_N_STATUS;
}

static const char *const migrations[] = {
        /* 0 -> 1 */
        "CREATE TABLE jobs ("
        "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
        "  name TEXT NOT NULL DEFAULT '',"
        "  status INTEGER NOT NULL,"
        "  priority INTEGER NOT NULL DEFAULT 0,"
        "  cpus REAL NOT NULL DEFAULT 0.5,"
        "  memory REAL NOT NULL DEFAULT 0,"
        "  gpus INTEGER NOT NULL DEFAULT 0,"
        "  setup TEXT,"
        "  run TEXT,"
        "  cwd TEXT,"
        "  log_dir TEXT NOT NULL DEFAULT '',"
        "  envs BLOB,"
        "  submitted_at REAL NOT NULL,"
        "  started_at REAL NOT NULL DEFAULT 0,"
        "  ended_at REAL NOT NULL DEFAULT 0,"
        "  exit_codes TEXT NOT NULL DEFAULT '',"
        "  gpu_ids TEXT NOT NULL DEFAULT '',"
        "  reason TEXT NOT NULL DEFAULT '',"
        "  shim_pid INTEGER NOT NULL DEFAULT 0,"
        "  shim_start INTEGER NOT NULL DEFAULT 0,"
        "  job_pid INTEGER NOT NULL DEFAULT 0,"
        "  job_start INTEGER NOT NULL DEFAULT 0,"
        "  boot_id TEXT NOT NULL DEFAULT '',"
        "  cancel_requested INTEGER NOT NULL DEFAULT 0,"
        "  bypassed INTEGER NOT NULL DEFAULT 0,"
        "  cancel_grace REAL NOT NULL DEFAULT 10"
        ");"
        "CREATE INDEX jobs_active ON jobs(status) WHERE status < 4;"
        "CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;",
        /* 1 -> 2: the job's runtime env spec (bootstrap/renv/renv.h), empty for none */
        "ALTER TABLE jobs ADD COLUMN renv BLOB;",
        /*
         * 2 -> 3: the submitter's idempotency key (one job per key, ever), and how often a
         * shim of the job failed before starting it (supervisor/policy.h)
         */
        "ALTER TABLE jobs ADD COLUMN submit_key TEXT;"
        "CREATE UNIQUE INDEX jobs_submit_key ON jobs(submit_key) WHERE submit_key IS NOT NULL;"
        "ALTER TABLE jobs ADD COLUMN failed_starts INTEGER NOT NULL DEFAULT 0;",
        /* 3 -> 4: the job starts in the home when its cwd does not exist (SkyPilot's
         * `cd ~/sky_workdir` of a task without a workdir) */
        "ALTER TABLE jobs ADD COLUMN cwd_optional INTEGER NOT NULL DEFAULT 0;",
        /*
         * 4 -> 5: the job's shell runs SkyPilot's prelude first (the login profile, conda);
         * a task's job asks for it, `node submit` only with --profile. The jobs queued
         * before ran with it.
         */
        "ALTER TABLE jobs ADD COLUMN profile INTEGER NOT NULL DEFAULT 1;",
};

const struct st_schema st_node_schema = {"node", migrations,    5,
                                         0,      st_node_image, st_node_image_end};

#define JOB_COLS                                                                                   \
	"id, name, status, priority, cpus, memory, gpus, setup, run, cwd, log_dir, envs, "         \
	"submitted_at, started_at, ended_at, exit_codes, gpu_ids, reason, shim_pid, shim_start, "  \
	"job_pid, job_start, boot_id, cancel_requested, bypassed, cancel_grace, renv, "            \
	"submit_key, failed_starts, cwd_optional, profile"

/* struct job's row, in the order of JOB_COLS. */
static const struct st_col job_cols[] = {
        ST_COL(struct job, id, INT64),
        ST_COL(struct job, name, TEXT),
        ST_COL(struct job, status, INT),
        ST_COL(struct job, priority, INT),
        ST_COL(struct job, cpus, DOUBLE),
        ST_COL(struct job, memory, DOUBLE),
        ST_COL(struct job, gpus, INT),
        ST_COL(struct job, setup, TEXT_NULL),
        ST_COL(struct job, run, TEXT_NULL),
        ST_COL(struct job, cwd, TEXT_NULL),
        ST_COL(struct job, log_dir, TEXT),
        ST_COL_BLOB_OF(struct job, envs, envs_len),
        ST_COL(struct job, submitted_at, DOUBLE),
        ST_COL(struct job, started_at, DOUBLE),
        ST_COL(struct job, ended_at, DOUBLE),
        ST_COL(struct job, exit_codes, TEXT),
        ST_COL(struct job, gpu_ids, TEXT),
        ST_COL(struct job, reason, TEXT),
        ST_COL(struct job, shim_pid, INT),
        ST_COL(struct job, shim_start, INT64),
        ST_COL(struct job, job_pid, INT),
        ST_COL(struct job, job_start, INT64),
        ST_COL(struct job, boot_id, CHARS),
        ST_COL(struct job, cancel_requested, INT),
        ST_COL(struct job, bypassed, INT),
        ST_COL(struct job, cancel_grace, DOUBLE),
        ST_COL_BLOB_OF(struct job, renv, renv_len),
        ST_COL(struct job, submit_key, TEXT_NULL),
        ST_COL(struct job, failed_starts, INT),
        ST_COL(struct job, cwd_optional, INT),
        ST_COL(struct job, profile, INT),
};

/*
 * What a job's state is, without what it runs (scripts, environment, runtime env): what
 * the supervisor reads at every shim's end and every watcher's answer. A gang rank's
 * environment alone is tens of kilobytes at a thousand nodes.
 */
#define JOB_STATE_COLS                                                                             \
	"id, status, exit_codes, shim_pid, shim_start, job_pid, job_start, boot_id, "              \
	"cancel_requested, failed_starts"

static const struct st_col job_state_cols[] = {
        ST_COL(struct job, id, INT64),
        ST_COL(struct job, status, INT),
        ST_COL(struct job, exit_codes, TEXT),
        ST_COL(struct job, shim_pid, INT),
        ST_COL(struct job, shim_start, INT64),
        ST_COL(struct job, job_pid, INT),
        ST_COL(struct job, job_start, INT64),
        ST_COL(struct job, boot_id, CHARS),
        ST_COL(struct job, cancel_requested, INT),
        ST_COL(struct job, failed_starts, INT),
};

int st_node_cols_check(void)
{
	char *have = st_cols_text(job_cols, ARRAY_SIZE(job_cols));
	int r = 0;

	if (strcmp(have, JOB_COLS))
		r = error("jobs: the row table reads '%s', the SELECT '%s'", have, JOB_COLS);
	free(have);
	have = st_cols_text(job_state_cols, ARRAY_SIZE(job_state_cols));
	if (strcmp(have, JOB_STATE_COLS))
		r = error("jobs: the state's row table reads '%s', the SELECT '%s'", have,
		          JOB_STATE_COLS);
	free(have);
	return r;
}

void job_free(struct job *j)
{
	if (!j)
		return;
	st_row_free(job_cols, ARRAY_SIZE(job_cols), j);
	memset(j, 0, sizeof(*j));
}

static void load_row(sqlite3_stmt *st, struct job *j)
{
	memset(j, 0, sizeof(*j));
	st_row_load(st, job_cols, ARRAY_SIZE(job_cols), j);
}

int st_job_insert(struct st_db *db, struct job *j)
{
	sqlite3_stmt *st = st_prepare(
	        db,
	        "INSERT INTO jobs (name, status, priority, cpus, memory, gpus, setup, run, cwd, "
	        "log_dir, envs, submitted_at, cancel_grace, renv, submit_key, cwd_optional, "
	        "profile) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
	int r;

	if (!st)
		return -EIO;
	j->submitted_at = now_wall();
	st_bind_text(st, 1, j->name ? j->name : "");
	st_bind_int(st, 2, JOB_PENDING);
	st_bind_int(st, 3, j->priority);
	st_bind_double(st, 4, j->cpus);
	st_bind_double(st, 5, j->memory);
	st_bind_int(st, 6, j->gpus);
	st_bind_text(st, 7, j->setup);
	st_bind_text(st, 8, j->run);
	st_bind_text(st, 9, j->cwd);
	st_bind_text(st, 10, j->log_dir ? j->log_dir : "");
	st_bind_blob(st, 11, j->envs ? j->envs : "", j->envs ? j->envs_len : 0);
	st_bind_double(st, 12, j->submitted_at);
	st_bind_double(st, 13, j->cancel_grace);
	st_bind_blob(st, 14, j->renv ? j->renv : "", j->renv ? j->renv_len : 0);
	st_bind_text(st, 15, j->submit_key && *j->submit_key ? j->submit_key : NULL);
	st_bind_int(st, 16, j->cwd_optional);
	st_bind_int(st, 17, j->profile);
	r = st_step_done(db, st);
	if (r)
		return r;
	j->id = st_last_rowid(db);
	j->status = JOB_PENDING;
	return 0;
}

int st_job_get(struct st_db *db, int64_t id, struct job *out)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT " JOB_COLS " FROM jobs WHERE id = ?");
	int r;

	if (!st)
		return -EIO;
	st_bind_int(st, 1, id);
	r = st_step(db, st);
	if (r == 1)
		load_row(st, out);
	sqlite3_reset(st);
	return r == 1 ? 0 : r == 0 ? -ENOENT : r;
}

int st_job_get_state(struct st_db *db, int64_t id, struct job *out)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT " JOB_STATE_COLS " FROM jobs WHERE id = ?");
	int r;

	if (!st)
		return -EIO;
	st_bind_int(st, 1, id);
	r = st_step(db, st);
	if (r == 1) {
		memset(out, 0, sizeof(*out));
		st_row_load(st, job_state_cols, ARRAY_SIZE(job_state_cols), out);
	}
	sqlite3_reset(st);
	return r == 1 ? 0 : r == 0 ? -ENOENT : r;
}

int st_job_find_key(struct st_db *db, const char *key, struct job *out)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT " JOB_COLS " FROM jobs WHERE submit_key = ?");
	int r;

	if (!st)
		return -EIO;
	st_bind_text(st, 1, key);
	r = st_step(db, st);
	if (r == 1)
		load_row(st, out);
	sqlite3_reset(st);
	return r == 1 ? 0 : r == 0 ? -ENOENT : r;
}

int st_job_each(struct st_db *db, unsigned mask, int (*fn)(struct job *j, void *arg), void *arg)
{
	struct job *v = NULL;
	size_t n = 0, cap = 0, i;
	sqlite3_stmt *st;
	int r;

	/* The partial index covers the active statuses, the common query. */
	if ((mask & ~JOB_MASK_ACTIVE) == 0)
		st = st_prepare(db, "SELECT " JOB_COLS " FROM jobs WHERE status < 4 "
		                    "AND ((1 << status) & ?) ORDER BY id");
	else
		st = st_prepare(db, "SELECT " JOB_COLS " FROM jobs WHERE ((1 << status) & ?) "
		                    "ORDER BY id");
	if (!st)
		return -EIO;
	st_bind_int(st, 1, mask);
	/*
	 * Every row is read before fn sees the first: a write by fn while the SELECT is open
	 * would have to upgrade this connection's read snapshot, which SQLite refuses at once
	 * (SQLITE_BUSY, no busy handler) when another connection (a shim) wrote meanwhile.
	 * The reconcile of a node up lost its FAILED_DRIVER that way.
	 */
	while ((r = st_step(db, st)) == 1) {
		v = xgrow(v, n, &cap, sizeof(*v));
		load_row(st, &v[n++]);
	}
	sqlite3_reset(st);
	/* r: st_step's 0 at the end, or its error; then fn's, whose nonzero stops the rest. */
	for (i = 0; i < n; i++) {
		if (!r)
			r = fn(&v[i], arg);
		job_free(&v[i]);
	}
	free(v);
	return r < 0 ? r : 0;
}

/*
 * Every scheduling round runs it. "status < 4" lets SQLite use the partial index of
 * active jobs (it does not infer it from "status = 1"): without it, each round read the
 * whole table, every job ever run on the node.
 */
const char st_job_pending_sql[] = "SELECT id, priority, cpus, memory, gpus, bypassed "
                                  "FROM jobs WHERE status < 4 AND status = 1 AND shim_pid = 0 "
                                  "ORDER BY id";

int st_job_each_pending(struct st_db *db, int (*fn)(const struct job_sched *j, void *arg),
                        void *arg)
{
	sqlite3_stmt *st = st_prepare(db, st_job_pending_sql);
	int r;

	if (!st)
		return -EIO;
	while ((r = st_step(db, st)) == 1) {
		struct job_sched j;

		j.id = sqlite3_column_int64(st, 0);
		j.priority = sqlite3_column_int(st, 1);
		j.cpus = sqlite3_column_double(st, 2);
		j.memory = sqlite3_column_double(st, 3);
		j.gpus = sqlite3_column_int(st, 4);
		j.bypassed = sqlite3_column_int(st, 5);
		r = fn(&j, arg);
		if (r)
			break;
	}
	sqlite3_reset(st);
	return r < 0 ? r : 0;
}

int st_job_each_shim(struct st_db *db, int (*fn)(const struct job_shim *j, void *arg), void *arg)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT id, status, shim_pid, shim_start, job_pid, "
	                                  "job_start, cancel_grace FROM jobs WHERE shim_pid != 0 "
	                                  "ORDER BY id");
	int r;

	if (!st)
		return -EIO;
	while ((r = st_step(db, st)) == 1) {
		struct job_shim j;

		j.id = sqlite3_column_int64(st, 0);
		j.status = sqlite3_column_int(st, 1);
		j.shim_pid = (pid_t)sqlite3_column_int64(st, 2);
		j.shim_start = (uint64_t)sqlite3_column_int64(st, 3);
		j.job_pid = (pid_t)sqlite3_column_int64(st, 4);
		j.job_start = (uint64_t)sqlite3_column_int64(st, 5);
		j.cancel_grace = sqlite3_column_double(st, 6);
		r = fn(&j, arg);
		if (r)
			break;
	}
	sqlite3_reset(st);
	return r < 0 ? r : 0;
}

int st_job_set_status(struct st_db *db, int64_t id, unsigned from_mask, int status,
                      const char *reason)
{
	sqlite3_stmt *st;
	double now = now_wall();
	int r;

	st = st_prepare(db, "UPDATE jobs SET status = ?2, "
	                    "started_at = CASE WHEN ?2 = 3 AND started_at = 0 THEN ?3 "
	                    "ELSE started_at END, "
	                    "ended_at = CASE WHEN ?2 >= 4 THEN ?3 ELSE 0 END, "
	                    "reason = CASE WHEN ?4 IS NULL THEN reason ELSE ?4 END "
	                    "WHERE id = ?1 AND ((1 << status) & ?5)");
	if (!st)
		return -EIO;
	st_bind_int(st, 1, id);
	st_bind_int(st, 2, status);
	st_bind_double(st, 3, now);
	st_bind_text(st, 4, reason);
	st_bind_int(st, 5, from_mask);
	r = st_step_done(db, st);
	if (r)
		return r;
	return st_changes(db) ? 0 : -ESTALE;
}

int st_job_set_shim(struct st_db *db, int64_t id, pid_t pid, uint64_t start, const char *boot,
                    const char *gpu_ids)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE jobs SET shim_pid = ?, shim_start = ?, "
	                                  "boot_id = ?, gpu_ids = ? WHERE id = ?");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, pid);
	st_bind_int(st, 2, (int64_t)start);
	st_bind_text(st, 3, boot);
	st_bind_text(st, 4, gpu_ids ? gpu_ids : "");
	st_bind_int(st, 5, id);
	return st_step_done(db, st);
}

int st_job_requeue(struct st_db *db, int64_t id, pid_t shim_pid, int failed)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE jobs SET shim_pid = 0, shim_start = 0, "
	                                  "boot_id = '', gpu_ids = '', job_pid = 0, job_start = 0, "
	                                  "failed_starts = failed_starts + ? "
	                                  "WHERE id = ? AND status = 1 AND shim_pid = ?");
	int r;

	if (!st)
		return -EIO;
	st_bind_int(st, 1, failed ? 1 : 0);
	st_bind_int(st, 2, id);
	st_bind_int(st, 3, shim_pid);
	r = st_step_done(db, st);
	if (r)
		return r;
	return st_changes(db) ? 0 : -ESTALE;
}

int st_job_set_proc(struct st_db *db, int64_t id, pid_t pid, uint64_t start)
{
	sqlite3_stmt *st =
	        st_prepare(db, "UPDATE jobs SET job_pid = ?, job_start = ? WHERE id = ?");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, pid);
	st_bind_int(st, 2, (int64_t)start);
	st_bind_int(st, 3, id);
	return st_step_done(db, st);
}

int st_job_finish(struct st_db *db, int64_t id, int status, const char *exit_codes,
                  const char *reason)
{
	sqlite3_stmt *st;
	int r;

	/* Only a job that is still active takes a final status: the first result wins. */
	st = st_prepare(db, "UPDATE jobs SET status = ?, exit_codes = ?, ended_at = ?, "
	                    "reason = CASE WHEN ? IS NULL THEN reason ELSE ? END "
	                    "WHERE id = ? AND status < 4");
	if (!st)
		return -EIO;
	st_bind_int(st, 1, status);
	st_bind_text(st, 2, exit_codes ? exit_codes : "");
	st_bind_double(st, 3, now_wall());
	st_bind_text(st, 4, reason);
	st_bind_text(st, 5, reason);
	st_bind_int(st, 6, id);
	r = st_step_done(db, st);
	if (r)
		return r;
	return st_changes(db) ? 0 : -ESTALE;
}

int st_job_add_bypass(struct st_db *db, int64_t id)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE jobs SET bypassed = bypassed + 1 WHERE id = ?");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, id);
	return st_step_done(db, st);
}

int st_job_request_cancel(struct st_db *db, int64_t id)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE jobs SET cancel_requested = 1 WHERE id = ?");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, id);
	return st_step_done(db, st);
}

int st_job_set_log_dir(struct st_db *db, int64_t id, const char *dir)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE jobs SET log_dir = ? WHERE id = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, dir);
	st_bind_int(st, 2, id);
	return st_step_done(db, st);
}

int st_kv_set(struct st_db *db, const char *key, const char *value)
{
	sqlite3_stmt *st;

	if (!value) {
		st = st_prepare(db, "DELETE FROM kv WHERE key = ?");
		if (!st)
			return -EIO;
		st_bind_text(st, 1, key);
		return st_step_done(db, st);
	}
	st = st_prepare(db, "INSERT INTO kv (key, value) VALUES (?, ?) "
	                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
	if (!st)
		return -EIO;
	st_bind_text(st, 1, key);
	st_bind_text(st, 2, value);
	return st_step_done(db, st);
}

char *st_kv_get(struct st_db *db, const char *key)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT value FROM kv WHERE key = ?");
	char *v = NULL;

	if (!st)
		return NULL;
	st_bind_text(st, 1, key);
	if (st_step(db, st) == 1)
		v = xstrdup(st_col_text(st, 0));
	sqlite3_reset(st);
	return v;
}

double st_kv_get_double(struct st_db *db, const char *key, double def)
{
	char *v = st_kv_get(db, key);
	double d;

	if (v && !parse_double(v, &d))
		def = d;
	free(v);
	return def;
}
