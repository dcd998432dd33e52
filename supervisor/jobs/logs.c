/*
 * A managed job's logs (`skiff jobs logs`, supervisor/jobs/jobs.h): its task logs,
 * followed across its pipeline tasks and recoveries, or its transitions and its launch
 * and cleanup log.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/jobs/jobs.h"
#include "bootstrap/launch/engine.h"
#include "lib/exit.h"
#include "lib/log.h"
#include "lib/util.h"
#include "state/jobs.h"
#include "state/launcher.h"
#include "lib/banned.h"

static int mj_exit_code(int status)
{
	switch (status) {
	case MJ_SUCCEEDED: return EXIT_OK;
	case MJ_CANCELLED: return EXIT_JOB_CANCELLED;
	default: return mj_status_terminal(status) ? EXIT_JOB_FAILED : EXIT_JOB_NOT_FINISHED;
	}
}

static int print_event(double at, int status, int sched, const char *reason, void *arg)
{
	char when[32];
	time_t t = (time_t)at;
	struct tm tm;

	(void)arg;
	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s  %-18s %-14s %s\n", when, mj_status_name(status), mj_sched_name(sched), reason);
	return 0;
}

int jobs_controller_logs(int64_t id)
{
	struct buf b = BUF_INIT(64 << 20);
	struct st_db *db;
	char *path = jobs_job_log(id);
	struct mjob j;
	int r;

	if (st_launcher_open(0, &db))
		return EXIT_FAIL;
	r = mj_get(db, id, &j);
	if (r) {
		st_close(db);
		free(path);
		error("no managed job %lld", (long long)id);
		return EXIT_JOB_NOT_FOUND;
	}
	printf("--- transitions of managed job %lld ---\n", (long long)id);
	mj_events(db, id, print_event, NULL);
	if (path && !buf_read_file(&b, path)) {
		printf("--- launch and cleanup log (%s) ---\n", path);
		fflush(stdout);
		/* A closed stdout (a pager quit) is no error. */
		(void)write_all(1, b.p, b.len);
	}
	r = mj_exit_code(j.status);
	if (r == EXIT_JOB_NOT_FINISHED)
		r = EXIT_OK;
	mjob_free(&j);
	buf_release(&b);
	free(path);
	st_close(db);
	return r;
}

/* The cluster jobs a managed job ran as, in order (from its events). */
struct runs {
	char cluster[64][128];
	int64_t job[64];
	int n;
};

static int collect_run(double at, int status, int sched, const char *reason, void *arg)
{
	struct runs *r = arg;
	char name[128];
	long long id;

	(void)at;
	(void)status;
	if (sched == MJS_ALIVE && r->n < 64 &&
	    sscanf(reason, "running on %127[^ ] (cluster job %lld)", name, &id) == 2) {
		xsnprintf(r->cluster[r->n], sizeof(r->cluster[0]), "%s", name);
		r->job[r->n++] = id;
	}
	return 0;
}

/* Logs saved when the job's own cluster was torn down (~/sky_logs/CLUSTER/JOB/rank-N). */
static void show_saved(int64_t id, const char *cluster, int64_t job)
{
	const char *home = user_home();
	static const char *const files[] = {"setup.log", "run.log"};
	int rank, shown = 0;
	size_t k;

	for (rank = 0; home && rank < 4096; rank++) {
		char *dir = xasprintf("%s/sky_logs/%s/%lld/rank-%d", home, cluster, (long long)job,
		                      rank);
		int any = 0;

		for (k = 0; k < ARRAY_SIZE(files); k++) {
			struct buf b = BUF_INIT((size_t)256 << 20);
			char *path = xasprintf("%s/%s", dir, files[k]);

			if (!buf_read_file(&b, path)) {
				any = 1;
				fflush(stdout);
				/* A closed stdout (a pager quit) is no error. */
				(void)write_all(1, b.p, b.len);
			}
			buf_release(&b);
			free(path);
		}
		free(dir);
		if (!any)
			break;
		shown++;
	}
	if (!shown)
		fprintf(stderr, "(cluster %s of managed job %lld is gone, and its logs with it)\n",
		        cluster, (long long)id);
}

static void show_run(struct st_db *db, int64_t id, const char *cluster, int64_t job, int follow)
{
	struct cluster c;

	if (st_cluster_get(db, cluster, &c)) {
		show_saved(id, cluster, job);
		return;
	}
	cluster_free(&c);
	fflush(stdout);
	eng_logs(db, cluster, job, follow ? ENG_LOGS_FOLLOW : ENG_LOGS_PRINT, -1, 1, NULL);
}

/*
 * Shows the job's task logs: each cluster job it ran as (pipeline tasks, recoveries) in
 * order, following the current one until the managed job ends. Returns the `logs` exit
 * code.
 */
int jobs_follow_logs(int64_t id, int follow)
{
	struct st_db *db;
	int shown = 0, rc = EXIT_JOB_NOT_FINISHED, waited = 0;

	if (st_launcher_open(0, &db))
		return EXIT_FAIL;
	for (;;) {
		struct runs *runs = xcalloc(1, sizeof(*runs));
		struct mjob j;

		if (mj_get(db, id, &j)) {
			error("no managed job %lld", (long long)id);
			free(runs);
			rc = EXIT_JOB_NOT_FOUND;
			break;
		}
		mj_events(db, id, collect_run, runs);
		if (shown < runs->n) {
			int last = shown == runs->n - 1;

			show_run(db, id, runs->cluster[shown], runs->job[shown],
			         follow && last && !mj_status_terminal(j.status));
			shown++;
			mjob_free(&j);
			free(runs);
			continue;
		}
		free(runs);
		if (mj_status_terminal(j.status) || !follow) {
			rc = mj_exit_code(j.status);
			if (mj_status_terminal(j.status))
				fprintf(stderr, "Managed job %lld finished (status: %s).\n",
				        (long long)id, mj_status_name(j.status));
			else if (rc == EXIT_JOB_NOT_FINISHED)
				rc = EXIT_OK;
			mjob_free(&j);
			break;
		}
		if (waited % 40 == 39 && !jobs_controller_pid())
			jobs_controller_kick();
		if (!waited++ || (waited % 40) == 0)
			fprintf(stderr, "Waiting for managed job %lld (status: %s)\n",
			        (long long)id, mj_status_name(j.status));
		mjob_free(&j);
		poll_ms(250);
	}
	st_close(db);
	return rc;
}

struct latest {
	const char *name;
	int64_t id;
};

static int latest_row(const struct mjob *j, void *arg)
{
	struct latest *l = arg;

	if ((!l->name || !strcmp(j->name, l->name)) && j->id > l->id)
		l->id = j->id;
	return 0;
}

int64_t jobs_latest(struct st_db *db, const char *name)
{
	struct latest l = {name, 0};

	mj_each(db, 0, MJ_ANY, latest_row, &l);
	return l.id;
}

int jobs_sync_down(int64_t id)
{
	struct runs *runs = xcalloc(1, sizeof(*runs));
	const char *home = user_home();
	struct st_db *db;
	struct mjob j;
	int i, rc = EXIT_OK;

	if (st_launcher_open(0, &db)) {
		free(runs);
		return EXIT_FAIL;
	}
	if (mj_get(db, id, &j)) {
		error("no managed job %lld", (long long)id);
		rc = EXIT_JOB_NOT_FOUND;
		goto out;
	}
	mjob_free(&j);
	mj_events(db, id, collect_run, runs);
	if (!runs->n)
		info("managed job %lld has not run yet: no logs", (long long)id);
	for (i = 0; i < runs->n; i++) {
		struct buf where = BUF_INIT(0);
		struct cluster c;

		if (!st_cluster_get(db, runs->cluster[i], &c)) {
			cluster_free(&c);
			if (eng_sync_down(db, runs->cluster[i], runs->job[i], &where))
				rc = EXIT_FAIL;
			else
				printf("logs synced to %s\n", where.p);
		} else {
			/* Its cluster is gone: what was saved when it went down is all there is. */
			char *dir = xasprintf("%s/sky_logs/%s/%lld", home ? home : "~",
			                      runs->cluster[i], (long long)runs->job[i]);

			if (access(dir, F_OK))
				warning("cluster %s of managed job %lld is gone, and its logs with it",
				        runs->cluster[i], (long long)id);
			else
				printf("logs synced to %s\n", dir);
			free(dir);
		}
		buf_release(&where);
	}
out:
	free(runs);
	st_close(db);
	return rc;
}
