/* The state layer: WAL, migrations, guarded transitions, the job table. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/util.h"
#include "state/db.h"
#include "state/node.h"
#include "tests/unit/harness.h"

static char dir[] = "/tmp/skiff-unit-state.XXXXXX";

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void test_open_and_migrate(void)
{
	static const char *const v2[] = {"CREATE TABLE a (x INTEGER)",
	                                 "ALTER TABLE a ADD COLUMN y TEXT"};
	struct st_schema s1 = {"t", v2, 1}, s2 = {"t", v2, 2};
	char *path = xasprintf("%s/m.db", dir);
	char *wal = xasprintf("%s-wal", path), *shm = xasprintf("%s-shm", path);
	struct st_db *db;
	struct stat st;
	sqlite3_stmt *q;
	mode_t old = umask(0);

	/* Private whatever the umask, and the umask left alone (it is the whole process's). */
	ok(!st_open(path, &s1, 0, &db), "open at version 1");
	is_int(umask(old), 0, "the umask is left as it was");
	is_int(st_version(db), 1, "user_version 1");
	q = st_prepare(db, "PRAGMA journal_mode");
	ok(q && st_step(db, q) == 1 && !strcmp(st_col_text(q, 0), "wal"), "WAL mode");
	sqlite3_reset(q);
	ok(!stat(wal, &st) && (st.st_mode & 0777) == 0600, "-wal is 0600 under umask 0");
	ok(!stat(shm, &st) && (st.st_mode & 0777) == 0600, "-shm is 0600 under umask 0");
	st_close(db);
	ok(!stat(path, &st) && (st.st_mode & 0777) == 0600, "file is 0600");
	free(wal);
	free(shm);
	ok(!st_open(path, &s2, 0, &db), "reopen migrates forward");
	is_int(st_version(db), 2, "user_version 2");
	ok(!st_exec(db, "INSERT INTO a (x, y) VALUES (1, 'z')"), "new column usable");
	st_close(db);
	ok(st_open(path, &s1, 0, &db) < 0 && !db, "an older binary refuses a newer db");
	ok(!st_open(path, &s2, ST_READONLY, &db), "read-only open");
	ok(st_exec(db, "INSERT INTO a (x) VALUES (2)") < 0, "read-only refuses writes");
	ok(!st_integrity_check(db), "integrity_check ok");
	st_close(db);
	free(path);
}

/*
 * A new database opened while another process writes it (still in rollback mode): the
 * switch to WAL waits for the writer instead of failing with "database is locked".
 */
static void test_open_beside_a_writer(void)
{
	static const char *const v1[] = {"CREATE TABLE a (x INTEGER)"};
	struct st_schema s1 = {"t", v1, 1};
	char *path = xasprintf("%s/w.db", dir), c = 0;
	struct st_db *db = NULL;
	sqlite3_stmt *q;
	int p[2], status = -1;
	pid_t pid;

	if (pipe(p) < 0 || (pid = fork()) < 0) {
		ok(0, "pipe and fork");
		return;
	}
	if (!pid) {
		sqlite3 *h;
		int r = sqlite3_open(path, &h) ||
		        sqlite3_exec(h, "BEGIN IMMEDIATE; CREATE TABLE hold (y)", NULL, NULL, NULL);

		/* Holds its write lock while the parent opens, then lets go. */
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		usleep(300 * 1000);
		r = r || sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
		_exit(r ? 1 : 0);
	}
	close(p[1]);
	ok(read(p[0], &c, 1) == 1, "the writer holds its lock");
	close(p[0]);
	ok(!st_open(path, &s1, 0, &db), "open beside the writer waits for it");
	q = db ? st_prepare(db, "PRAGMA journal_mode") : NULL;
	ok(q && st_step(db, q) == 1 && !strcmp(st_col_text(q, 0), "wal"), "and is in WAL mode");
	if (q)
		sqlite3_reset(q);
	st_close(db);
	ok(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	   "the writer committed");
	free(path);
}

static void test_tx(void)
{
	static const char *const m[] = {"CREATE TABLE k (v INTEGER)"};
	struct st_schema s = {"t", m, 1};
	char *path = xasprintf("%s/tx.db", dir);
	struct st_db *db;
	sqlite3_stmt *q;

	ok(!st_open(path, &s, 0, &db), "open");
	ok(!st_begin(db), "begin");
	ok(st_begin(db) < 0, "nested begin is refused");
	st_exec(db, "INSERT INTO k VALUES (1)");
	st_rollback(db);
	q = st_prepare(db, "SELECT count(*) FROM k");
	ok(st_step(db, q) == 1 && sqlite3_column_int(q, 0) == 0, "rollback undid the insert");
	sqlite3_reset(q);
	ok(!st_begin(db) && !st_exec(db, "INSERT INTO k VALUES (1)") && !st_commit(db), "commit");
	q = st_prepare(db, "SELECT count(*) FROM k");
	ok(st_step(db, q) == 1 && sqlite3_column_int(q, 0) == 1, "commit kept it");
	sqlite3_reset(q);
	ok(st_prepare(db, "SELEC nonsense") == NULL, "bad SQL is an error, not a crash");
	st_close(db);
	free(path);
}

static void test_jobs(void)
{
	char *path = xasprintf("%s/node.db", dir);
	struct st_db *db;
	struct job j = {0}, g;
	static char envs[] = "A=1\0B=two words\0";

	ok(!st_open(path, &st_node_schema, 0, &db), "node schema");
	j.name = "n";
	j.cpus = 0.5;
	j.run = "echo hi";
	j.envs = envs;
	j.envs_len = sizeof(envs) - 1;
	j.cancel_grace = 10;
	ok(!st_job_insert(db, &j) && j.id == 1, "insert job 1");
	ok(!st_job_get(db, 1, &g), "get it");
	is_str(g.run, "echo hi", "run");
	ok(g.envs_len == sizeof(envs) - 1 && !memcmp(g.envs, envs, g.envs_len), "envs blob");
	is_int(g.status, JOB_PENDING, "PENDING");
	ok(g.setup == NULL, "no setup is NULL");
	ok(g.submit_key == NULL && g.renv_len == 0 && g.boot_id[0] == '\0',
	   "no key is NULL, no renv has length 0, no boot id is empty");
	is_int(st_node_cols_check(), 0,
	       "struct job's row table names its SELECT's columns, in order");
	job_free(&g);
	is_int(st_job_get(db, 99, &g), -ENOENT, "missing job");
	ok(!st_job_set_status(db, 1, JOB_MASK(JOB_PENDING), JOB_RUNNING, NULL), "PENDING->RUNNING");
	is_int(st_job_set_status(db, 1, JOB_MASK(JOB_PENDING), JOB_RUNNING, NULL), -ESTALE,
	       "guarded: not PENDING any more");
	ok(!st_job_finish(db, 1, JOB_FAILED, "3", NULL), "finish FAILED");
	is_int(st_job_finish(db, 1, JOB_FAILED_DRIVER, "", "late"), -ESTALE,
	       "the first final word stands");
	ok(!st_job_get(db, 1, &g), "get");
	is_int(g.status, JOB_FAILED, "still FAILED");
	is_str(g.exit_codes, "3", "exit code kept");
	ok(g.started_at > 0 && g.ended_at >= g.started_at, "times set");
	job_free(&g);
	ok(!st_kv_set(db, "k", "1.5"), "kv set");
	ok(st_kv_get_double(db, "k", 0) == 1.5, "kv get");
	ok(!st_kv_set(db, "k", NULL) && st_kv_get_double(db, "k", 7) == 7, "kv delete");
	{
		/* The scheduler's scan must not read every job the node ever ran. */
		char *q = xasprintf("EXPLAIN QUERY PLAN %s", st_job_pending_sql);
		sqlite3_stmt *st = st_prepare(db, q);
		int r = st ? st_step(db, st) : -1;

		ok(r == 1 && strstr(st_col_text(st, 3), "USING INDEX jobs_active"),
		   "the pending scan uses the index of active jobs");
		if (st)
			sqlite3_reset(st);
		free(q);
	}
	is_str(job_status_name(JOB_FAILED_SETUP), "FAILED_SETUP", "status names");
	is_int(job_status_parse("CANCELLED"), JOB_CANCELLED, "parse");
	ok(job_status_terminal(JOB_FAILED_DRIVER) && !job_status_terminal(JOB_RUNNING),
	   "terminal states");
	st_close(db);
	free(path);
}

/* A down's light read: the jobs that were given a shim, with what it needs of each. */
static int shim_seen(const struct job_shim *j, void *arg)
{
	struct buf *b = arg;

	buf_addf(b, "%lld:%d:%ld:%llu:%ld:%llu:%g ", (long long)j->id, j->status, (long)j->shim_pid,
	         (unsigned long long)j->shim_start, (long)j->job_pid,
	         (unsigned long long)j->job_start, j->cancel_grace);
	return 0;
}

static void test_jobs_with_shims(void)
{
	char *path = xasprintf("%s/shims.db", dir);
	struct buf seen = BUF_INIT(0), want = BUF_INIT(0);
	struct st_db *db;
	struct job j = {0};
	int i;

	ok(!st_open(path, &st_node_schema, 0, &db), "node schema");
	j.run = "true";
	for (i = 0; i < 4; i++) {
		j.id = 0;
		j.cancel_grace = i;
		st_job_insert(db, &j);
	}
	ok(!st_job_set_shim(db, 2, 4242, 77, "boot", NULL) && !st_job_set_proc(db, 2, 4243, 78) &&
	           !st_job_set_shim(db, 4, 5252, 88, "boot", NULL),
	   "jobs 2 and 4 given shims, job 2's leader recorded");
	ok(!st_job_finish(db, 4, JOB_SUCCEEDED, "0", NULL), "job 4 ended");
	ok(!st_job_each_shim(db, shim_seen, &seen), "read");
	buf_addf(&want, "2:%d:4242:77:4243:78:1 4:%d:5252:88:0:0:3 ", JOB_PENDING, JOB_SUCCEEDED);
	is_str(seen.p, want.p,
	       "only those, in id order, each with its status, shim, leader and grace");
	buf_release(&seen);
	buf_release(&want);
	st_close(db);
	free(path);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	plan_run(test_open_and_migrate);
	plan_run(test_open_beside_a_writer);
	plan_run(test_tx);
	plan_run(test_jobs);
	plan_run(test_jobs_with_shims);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return done_testing();
}
