/*
 * The task logs the controller keeps (supervisor/jobs/jobs.h): each cluster job a managed
 * job ran as, copied from its nodes into $SKIFF_HOME/jobs/kept/ID/CLUSTER/JOB/rank-N/ of
 * the controller's own home, before its cluster is torn down (the cleanup worker) or once
 * it has ended on the shared pool (the keep worker); and the retention that removes them
 * (jobs_kept_gc_decide() decides). docs/managed-jobs.md describes both.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/launch/engine.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/util.h"
#include "state/jobs.h"
#include "state/launcher.h"
#include "supervisor/jobs/jobs.h"
#include "supervisor/jobs/policy.h"
#include "lib/banned.h"

static int is_dir(const char *path)
{
	struct stat st;

	return !lstat(path, &st) && S_ISDIR(st.st_mode);
}

/* nftw() has no user pointer: the collector is one thread. */
static uint64_t du_bytes;

static int du_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)path;
	(void)flag;
	(void)f;
	if (S_ISREG(st->st_mode))
		du_bytes += (uint64_t)st->st_blocks * 512;
	return 0;
}

static uint64_t du(const char *path)
{
	du_bytes = 0;
	nftw(path, du_entry, 16, FTW_PHYS | FTW_MOUNT);
	return du_bytes;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT)
		warning("cannot remove '%s': %s", path, strerror(errno));
	return 0;
}

static void rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_PHYS | FTW_MOUNT | FTW_DEPTH);
}

int jobs_run_live(struct st_db *db, const char *cluster, int64_t job, double at)
{
	struct cluster_job cj;
	struct cluster c;
	int live;

	if (st_cluster_get(db, cluster, &c))
		return 0;
	cluster_free(&c);
	if (st_cluster_job_get(db, cluster, job, &cj))
		return 0;
	/* A job that never reached a node has no logs anywhere. */
	live = *cj.node_job_ids && (!at || cj.submitted_at <= at);
	cluster_job_free(&cj);
	return live;
}

int jobs_keep_run(struct st_db *db, int64_t id, const char *cluster, int64_t job, double at)
{
	char *dir = jobs_kept_run_dir(id, cluster, job), *tmp = NULL;
	struct buf where = BUF_INIT(0);
	int r = 0;

	if (!dir || !jobs_name_ok(cluster)) {
		free(dir);
		return -EINVAL;
	}
	if (is_dir(dir))
		goto out; /* kept already */
	if (!jobs_run_live(db, cluster, job, at)) {
		r = -ENOENT;
		goto out;
	}
	tmp = xasprintf("%s.tmp.%ld", dir, (long)getpid());
	rm_tree(tmp);
	r = eng_sync_down_to(db, cluster, job, tmp, &where);
	/*
	 * A rank that could not be reached leaves the others' logs: for a cluster about to go
	 * they are all there will ever be, so they are kept as they are.
	 */
	if (is_dir(tmp) && rename(tmp, dir) < 0) {
		r = error_errno("cannot rename '%s'", tmp);
		rm_tree(tmp);
	} else if (!r) {
		fprintf(stderr, "[keep] logs of %s job %lld kept in %s\n", cluster, (long long)job,
		        dir);
	}
out:
	buf_release(&where);
	free(tmp);
	free(dir);
	return r;
}

/*
 * Keeps the ended pool runs of one job. Its row is read again with its runs: mj_each()
 * listed the rows before this ran, and by that listing's row a run recorded since (a launch
 * that went on meanwhile) would look ended and be kept before its job wrote a line.
 */
static int keep_pool_job(const struct mjob *listed, void *arg)
{
	struct st_db *db = arg;
	struct jobs_runs *runs;
	char *dir = jobs_kept_dir(listed->id), *tomb;
	struct mjob j;
	int i;

	if (!dir)
		return 0;
	/* What the retention removed is never fetched again. */
	tomb = xasprintf("%s/%s", dir, JOBS_KEPT_REMOVED);
	free(dir);
	if (!access(tomb, F_OK)) {
		free(tomb);
		return 0;
	}
	free(tomb);
	runs = xcalloc(1, sizeof(*runs));
	if (!jobs_runs_with_row(db, listed->id, runs, &j)) {
		for (i = 0; i < runs->n; i++)
			if (!strcmp(runs->cluster[i], JOBS_POOL_CLUSTER) &&
			    jobs_run_ended(&j, i, runs->n, runs->job[i]))
				jobs_keep_run(db, j.id, runs->cluster[i], runs->job[i],
				              runs->at[i]);
		mjob_free(&j);
	}
	free(runs);
	return 0;
}

int jobs_keep_pool_runs(struct st_db *db)
{
	return mj_each(db, 0, MJ_ANY, keep_pool_job, db) ? -EIO : 0;
}

/* The retention: the config's hours (the controller's own config file), the size cap. */
static double retention_hours(void)
{
	struct yerrors errs = YERRORS_INIT;
	struct cfg_node *cfg = NULL;
	char *path = config_file_path();
	double h = JOBS_KEPT_RETENTION_HOURS;

	if (path && !config_load_file(path, &cfg, &errs))
		h = config_task_logs_retention_hours(cfg, JOBS_KEPT_RETENTION_HOURS);
	yerr_print(&errs, stderr);
	yerr_release(&errs);
	cfg_free(cfg);
	free(path);
	return h;
}

/* Removes what kept/ID holds, leaving kept/ID/REMOVED with why. */
static void remove_kept(int64_t id, const char *why)
{
	char *dir = jobs_kept_dir(id), *path;
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;

	if (!d) {
		free(dir);
		return;
	}
	while ((de = readdir(d))) {
		char *sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, JOBS_KEPT_REMOVED))
			continue;
		sub = xasprintf("%s/%s", dir, de->d_name);
		rm_tree(sub);
		free(sub);
	}
	closedir(d);
	/* Last: a kept copy with this file is gone whole (a crash before it: the next pass). */
	path = xasprintf("%s/%s", dir, JOBS_KEPT_REMOVED);
	if (write_file_atomic(path, why, strlen(why), 0600))
		warning("cannot write '%s'", path);
	free(path);
	free(dir);
}

/* Every job with logs kept (removed ones left out), as the collector sees it. */
static int list_kept(struct st_db *db, struct jobs_kept **out, size_t *n)
{
	const struct jobs_paths *p = jobs_paths();
	DIR *d = p ? opendir(p->kept) : NULL;
	struct jobs_kept *v = NULL;
	struct dirent *de;
	size_t cap = 0;

	*n = 0;
	if (!d)
		return p ? 0 : -ENOENT;
	while ((de = readdir(d))) {
		char *dir, *tomb;
		struct jobs_kept *k;
		struct mjob j;
		long id;

		if (parse_long(de->d_name, 1, INT64_MAX, &id))
			continue; /* a temp dir, or not ours */
		dir = xasprintf("%s/%s", p->kept, de->d_name);
		tomb = xasprintf("%s/%s", dir, JOBS_KEPT_REMOVED);
		if (!access(tomb, F_OK) || !is_dir(dir)) {
			free(dir);
			free(tomb);
			continue;
		}
		v = xgrow(v, *n, &cap, sizeof(*v));
		k = &v[(*n)++];
		memset(k, 0, sizeof(*k));
		k->id = id;
		k->bytes = du(dir);
		if (!mj_get(db, id, &j)) {
			k->ended = mj_status_terminal(j.status);
			k->ended_at = j.ended_at;
			mjob_free(&j);
		} else {
			/* No row (another database): what is kept is all there is of it. */
			struct stat st;

			k->ended = 1;
			k->ended_at = !stat(dir, &st) ? (double)st.st_mtime : 0;
		}
		free(dir);
		free(tomb);
	}
	closedir(d);
	*out = v;
	return 0;
}

int jobs_kept_gc(struct st_db *db)
{
	double hours = retention_hours(), now = now_wall();
	long long max =
	        jobs_env_long("SKIFF_JOBS_KEPT_MAX_BYTES", JOBS_KEPT_MAX_BYTES, 0, INT64_MAX);
	struct jobs_kept *v = NULL;
	size_t n = 0, i;

	if (list_kept(db, &v, &n))
		return -EIO;
	jobs_kept_gc_decide(v, n, now, hours < 0 ? -1 : hours * 3600, (uint64_t)max);
	for (i = 0; i < n; i++) {
		char *why;

		if (v[i].gc == JOBS_GC_KEEP)
			continue;
		if (v[i].gc == JOBS_GC_AGE)
			why = xasprintf(
			        "after %g hours (jobs.controller.task_logs_gc_retention_hours)\n",
			        hours);
		else
			why = xasprintf("to keep all kept logs under %lld bytes "
			                "(SKIFF_JOBS_KEPT_MAX_BYTES)\n",
			                max);
		fprintf(stderr, "[keep] job %lld: removing its kept logs %s", (long long)v[i].id,
		        why);
		remove_kept(v[i].id, why);
		free(why);
	}
	free(v);
	return 0;
}
