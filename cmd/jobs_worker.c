/*
 * The controller's workers (`skiff __jobs-worker KIND ID GOFD`), each its own process so
 * that the controller's loop never blocks on a node:
 *
 *   launch ID   launches job ID's current task with the launcher's own code (cmd_launch()
 *               on cluster skiff-job-ID..., or on the shared local pool), then records
 *               the cluster job and ALIVE itself
 *   watch       probes every ALIVE job: one `node queue --porcelain IDS` per node
 *   cleanup     tears down clusters and cancels pool jobs listed in job_cleanups
 *
 * A worker first waits for the controller's byte on GOFD: the controller writes it after
 * recording the worker's pid and start time, and a worker whose pipe closes without it
 * exits without doing anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/launch/cluster.h"
#include "bootstrap/infra/infra.h"
#include "cmd/cmd.h"
#include "cmd/jobs.h"
#include "cmd/launcher.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/jobs.h"
#include "state/launcher.h"
#include "state/node.h"
#include "lib/banned.h"

#define PROBE_TIMEOUT_MS 20000
/* Pool jobs per cancel request (the launcher's cancel takes up to 1000 per node). */
#define CANCEL_BATCH 500

const char cmd___jobs_worker_usage[] = "usage: skiff __jobs-worker launch|watch|cleanup ID GOFD\n"
                                       "\n"
                                       "A managed-jobs controller worker (internal).\n";

static int wait_go(const char *fdtext)
{
	long fd;
	char c;

	if (parse_long(fdtext, 3, 1 << 20, &fd))
		return -EINVAL;
	if (read((int)fd, &c, 1) != 1)
		return -EPIPE; /* the controller did not record us: do nothing */
	close((int)fd);
	return 0;
}

/* ---- launch --------------------------------------------------------------------------- */

/* The current task's infra, node count, and whether it syncs files to its nodes. */
static void task_facts(const struct mjob *j, char *infra, size_t size, int *nodes, int *syncs)
{
	struct task_list tl = TASK_LIST_INIT;
	struct yerrors errs = YERRORS_INIT;

	*nodes = 1;
	*syncs = 0;
	xsnprintf(infra, size, "%s", *j->infra ? j->infra : "");
	if (*j->spec && !task_parse_buf(&tl, j->entry, j->spec, strlen(j->spec), &errs) &&
	    (size_t)j->task_index < tl.n) {
		const struct task *t = tl.tasks[j->task_index];

		if (!*infra && t->nres && t->res[0].infra)
			xsnprintf(infra, size, "%s", t->res[0].infra);
		*nodes = t->num_nodes > 0 ? (int)t->num_nodes : 1;
		/* Files synced to the node would be shared with every other pool job. */
		*syncs = t->workdir.kind != TASK_WORKDIR_NONE || t->nmounts;
	}
	/* Overrides given to `jobs launch` (applied by the launch itself) count too. */
	if (strstr(j->ovargs, "--workdir"))
		*syncs = 1;
	if (strstr(j->ovargs, "--num-nodes"))
		*nodes = 2;
	if (!*infra)
		xsnprintf(infra, size, "local");
	yerr_release(&errs);
	task_list_release(&tl);
}

/* 1 if the shared pool cluster exists and is UP. */
static int pool_up(struct st_db *db, const char *cluster)
{
	struct cluster c;
	int up;

	if (st_cluster_get(db, cluster, &c))
		return 0;
	up = c.status == CLUSTER_UP;
	cluster_free(&c);
	return up;
}

static int worker_launch(struct st_db *db, int64_t id)
{
	const struct jobs_paths *p = jobs_paths();
	struct lc_managed m = {0};
	struct argv av;
	struct mjob j;
	char cluster[128], infra[256], task_id[256], stamp[32], reason[512];
	char *specfile = NULL, *lockp = NULL;
	int nodes, syncs, pool, rc, lock_fd = -1;

	if (mj_get(db, id, &j))
		return EXIT_FAIL;
	if (j.sched != MJS_LAUNCHING) {
		mjob_free(&j);
		return EXIT_OK;
	}
	task_facts(&j, infra, sizeof(infra), &nodes, &syncs);
	pool = nodes == 1 && !syncs && jobs_use_pool(infra);
	jobs_cluster_name(&j, pool, cluster, sizeof(cluster));
	if (!*j.task_id) {
		time_t now = time(NULL);
		struct tm tm;

		gmtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%d-%H-%M-%S", &tm);
		xsnprintf(task_id, sizeof(task_id), "sky-managed-%s_%s_%lld-%d", stamp,
		          *j.name ? j.name : "job", (long long)id, j.task_index);
		mj_set_task_id(db, id, task_id);
	} else {
		xsnprintf(task_id, sizeof(task_id), "%s", j.task_id);
	}
	/* Intent first: a cluster named here is released even if we die half way. */
	mj_set_cluster(db, id, cluster, 0, pool);
	fprintf(stderr, "[launch] job %lld task %d on %s (%s), task id %s\n", (long long)id,
	        j.task_index, cluster, infra, task_id);
	argv_init(&av);
	argv_push(&av, "launch");
	argv_push(&av, "-c");
	argv_push(&av, cluster);
	argv_push(&av, "-d");
	argv_push(&av, "--infra");
	argv_push(&av, infra);
	if (*j.ovargs) {
		char *s = xstrdup(j.ovargs), *q = s, *e;

		while ((e = strchr(q, '\x1f'))) {
			*e = 0;
			argv_push(&av, q);
			q = e + 1;
		}
		argv_push(&av, q);
		free(s);
	}
	if (*j.spec) {
		specfile = xasprintf("%s/%lld.yaml", p->logs, (long long)id);
		if (write_file_atomic(specfile, j.spec, strlen(j.spec), 0600)) {
			rc = EXIT_FAIL;
			goto out;
		}
		argv_push(&av, "--");
		argv_push(&av, specfile);
	} else {
		argv_push(&av, "--");
		argv_push(&av, j.entry);
	}
	if (*j.cwd && chdir(j.cwd) < 0)
		warning("cannot change to '%s': %s", j.cwd, strerror(errno));
	/*
	 * Launches into a pool that is not up yet take turns: one creates it. Once it is up,
	 * they go on in parallel (the launch limit is the only bound).
	 */
	if (pool && !pool_up(db, cluster)) {
		lockp = xasprintf("%s/pool.lock", p->dir);
		lock_fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (lock_fd >= 0)
			flock(lock_fd, LOCK_EX);
	}
	fprintf(stderr, "[launch] job %lld: launching on %s\n", (long long)id, cluster);
	/* Test hook: a slow launch, to hit a controller crash or a cancel mid-launch. */
	if (jobs_env_long("SKIFF_JOBS_LAUNCH_DELAY_MS", 0, 0, 600000))
		poll_ms((int)jobs_env_long("SKIFF_JOBS_LAUNCH_DELAY_MS", 0, 0, 600000));
	m.task_index = j.task_index;
	m.task_id = task_id;
	m.default_cpus = pool ? 0 : 0.5;
	lc_managed = &m;
	rc = cmd_launch((int)av.n, av.v);
	lc_managed = NULL;
	if (lock_fd >= 0)
		close(lock_fd);
	if (rc == EXIT_OK && m.job > 0) {
		mj_set_cluster(db, id, cluster, m.job, pool);
		xsnprintf(reason, sizeof(reason), "running on %s (cluster job %lld)", cluster,
		          (long long)m.job);
		if (mj_transition(db, id, MJ_ACTIVE_MASK & ~MJ_MASK(MJ_CANCELLING),
		                  MJ_MASK(MJS_LAUNCHING), MJ_RUNNING, MJS_ALIVE, reason) == -ESTALE)
			mj_transition(db, id, MJ_MASK(MJ_CANCELLING), MJ_MASK(MJS_LAUNCHING), -1,
			              MJS_ALIVE, reason);
		fprintf(stderr, "[launch] job %lld: %s\n", (long long)id, reason);
	} else {
		fprintf(stderr, "[launch] job %lld: launch on %s failed (exit %d)\n", (long long)id,
		        cluster, rc);
		if (rc == EXIT_OK)
			rc = EXIT_FAIL;
	}
out:
	argv_release(&av);
	free(specfile);
	free(lockp);
	mjob_free(&j);
	return rc;
}

/* ---- watch ---------------------------------------------------------------------------- */

struct probe {
	int64_t id, cluster_job;
	char *cluster;
	char *node_ids; /* "17,3" per rank */
	int status;     /* aggregated node status, -1 unknown */
	struct buf codes;
	char err[256];
	int ranks_seen, ranks;
};

struct probes {
	struct probe *v;
	size_t n, cap;
};

static int collect(const struct mjob *j, void *arg)
{
	struct probes *ps = arg;
	struct probe *p;

	if (!*j->cluster || !j->cluster_job)
		return 0;
	ps->v = xgrow(ps->v, ps->n, &ps->cap, sizeof(*ps->v));
	p = &ps->v[ps->n++];
	memset(p, 0, sizeof(*p));
	p->id = j->id;
	p->cluster_job = j->cluster_job;
	p->cluster = xstrdup(j->cluster);
	p->status = -1;
	buf_init(&p->codes, 4096);
	return 0;
}

static int by_cluster(const void *a, const void *b)
{
	return strcmp(((const struct probe *)a)->cluster, ((const struct probe *)b)->cluster);
}

/* The rank's node job id in "17,3,5", or 0. */
static long long rank_id(const char *ids, int rank)
{
	const char *p = ids;
	int i;

	for (i = 0; i < rank && p; i++) {
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return p && *p ? strtoll(p, NULL, 10) : 0;
}

/* Merges one rank's status: failures win, then the least advanced running one. */
static void merge(struct probe *p, int st, const char *code)
{
	static const int order[] = {JOB_FAILED_SETUP, JOB_FAILED, JOB_FAILED_DRIVER, JOB_CANCELLED};
	int a = -1, b = -1;
	size_t k;

	if (*code && strcmp(code, "-"))
		buf_addf(&p->codes, "%s%s", p->codes.len ? "," : "", code);
	p->ranks_seen++;
	if (p->status < 0) {
		p->status = st;
		return;
	}
	for (k = 0; k < ARRAY_SIZE(order); k++) {
		if (order[k] == p->status && a < 0)
			a = (int)k;
		if (order[k] == st && b < 0)
			b = (int)k;
	}
	if (b >= 0 && (a < 0 || b < a))
		p->status = st;
	else if (a < 0 && b < 0 && !job_status_terminal(st) &&
	         (job_status_terminal(p->status) || st < p->status))
		p->status = st;
}

/* Probes the jobs v[0..n) that all run on one cluster. */
static void probe_cluster(struct st_db *db, struct probe *v, size_t n)
{
	struct cluster c;
	struct clive cl;
	size_t i, r;

	if (st_cluster_get(db, v[0].cluster, &c)) {
		for (i = 0; i < n; i++) {
			v[i].status = JOB_FAILED_DRIVER;
			xsnprintf(v[i].err, sizeof(v[i].err), "cluster %s is gone", v[i].cluster);
		}
		return;
	}
	cluster_free(&c);
	if (lc_load(db, v[0].cluster, &c, &cl)) {
		for (i = 0; i < n; i++)
			xsnprintf(v[i].err, sizeof(v[i].err), "cluster %s cannot be opened",
			          v[i].cluster);
		return;
	}
	for (i = 0; i < n; i++) {
		struct cluster_job cj;

		if (!st_cluster_job_get(db, v[i].cluster, v[i].cluster_job, &cj)) {
			v[i].node_ids = xstrdup(cj.node_job_ids);
			v[i].ranks = cj.num_nodes;
			cluster_job_free(&cj);
		} else {
			v[i].node_ids = xstrdup("");
		}
	}
	for (r = 0; r < cl.n; r++) {
		struct buf args = BUF_INIT(0), out = BUF_INIT((size_t)64 << 20);
		int status = 0, any = 0, rc;

		buf_adds(&args, "node queue --porcelain");
		for (i = 0; i < n; i++) {
			long long nid = rank_id(v[i].node_ids, (int)r);

			if (nid > 0 && (int)r < v[i].ranks) {
				buf_addf(&args, " %lld", nid);
				any = 1;
			}
		}
		if (!any) {
			buf_release(&args);
			continue;
		}
		rc = cl_capture_skiff(&cl.nodes[r], args.p, &out, PROBE_TIMEOUT_MS, &status);
		for (i = 0; i < n; i++) {
			long long nid = rank_id(v[i].node_ids, (int)r);
			const char *line = out.p;
			int found = 0;

			if (nid <= 0 || (int)r >= v[i].ranks)
				continue;
			if (rc || status) {
				const char *why = cl.nodes[r].r && cl.nodes[r].r->last_error.len
				                          ? cl.nodes[r].r->last_error.p
				                          : "no answer";

				xsnprintf(v[i].err, sizeof(v[i].err), "node %s unreachable: %.160s",
				          cl.nodes[r].name, why);
				v[i].err[strcspn(v[i].err, "\n")] = 0;
				continue;
			}
			while (line && *line) {
				char stname[32], codes[64];
				long long jid;

				if (sscanf(line,
				           "%lld\t%31[^\t]\t%*[^\t]\t%*[^\t]\t%*[^\t]\t%63[^\t]",
				           &jid, stname, codes) == 3 &&
				    jid == nid) {
					merge(&v[i], job_status_parse(stname), codes);
					found = 1;
					break;
				}
				line = strchr(line, '\n');
				if (line)
					line++;
			}
			if (!found) {
				merge(&v[i], JOB_FAILED_DRIVER, "");
				xsnprintf(v[i].err, sizeof(v[i].err), "node %s lost the job",
				          cl.nodes[r].name);
			}
		}
		buf_release(&args);
		buf_release(&out);
	}
	cluster_free(&c);
	cl_close(&cl);
}

static int worker_watch(struct st_db *db)
{
	struct probes ps = {0};
	size_t i, start;

	if (mj_each(db, 0, MJ_MASK(MJS_ALIVE), collect, &ps))
		return EXIT_FAIL;
	if (ps.n)
		qsort(ps.v, ps.n, sizeof(*ps.v), by_cluster);
	for (start = 0; start < ps.n; start = i) {
		for (i = start; i < ps.n && !strcmp(ps.v[i].cluster, ps.v[start].cluster); i++)
			;
		probe_cluster(db, &ps.v[start], i - start);
	}
	if (!st_begin(db)) {
		for (i = 0; i < ps.n; i++) {
			struct probe *p = &ps.v[i];
			/* A rank unreachable: the gang's status is unknown whatever the others say.
			 */
			int st = *p->err && p->status != JOB_FAILED_DRIVER ? -1 : p->status;

			mj_set_probe(db, p->id, st, p->codes.p,
			             st == JOB_FAILED_DRIVER && !*p->err ? "its node lost the job"
			                                                 : p->err);
		}
		st_commit(db);
	}
	for (i = 0; i < ps.n; i++) {
		free(ps.v[i].cluster);
		free(ps.v[i].node_ids);
		buf_release(&ps.v[i].codes);
	}
	free(ps.v);
	return EXIT_OK;
}

/* ---- cleanup -------------------------------------------------------------------------- */

/* A deferred release (EAGER_NEXT_REGION) waits until the job's relaunch is over. */
static int deferred(struct st_db *db, const struct mj_cleanup *cu)
{
	struct mjob j;
	int wait;

	if (cu->cluster_job != -1 || mj_get(db, cu->job_id, &j))
		return 0;
	wait = !j.cancel_requested && !mj_status_terminal(j.status) &&
	       (j.sched == MJS_LAUNCHING || j.sched == MJS_ALIVE_WAITING ||
	        j.sched == MJS_ALIVE_BACKOFF);
	mjob_free(&j);
	return wait;
}

static void maybe_cancelled(struct st_db *db, int64_t job)
{
	struct mj_cleanup *cu = NULL;
	size_t n = 0, i;
	int left = 0;

	mj_cleanups(db, &cu, &n);
	for (i = 0; i < n; i++)
		left += cu[i].job_id == job;
	mj_cleanups_free(cu, n);
	if (!left)
		mj_transition(db, job, MJ_MASK(MJ_CANCELLING), MJ_MASK(MJS_DONE), MJ_CANCELLED, -1,
		              "cancelled by the user; its cluster is released");
}

/*
 * Before a job's own cluster goes, its jobs' logs come back to ~/sky_logs/CLUSTER/JOB
 * (as `logs --sync-down`), where `jobs logs` finds them afterwards. Best effort: an
 * unreachable node does not keep the cluster alive.
 */
static void save_logs(struct st_db *db, const char *name)
{
	struct cluster_job *v = NULL;
	struct cluster c;
	struct clive cl;
	size_t n = 0, i;

	if (st_cluster_job_list(db, name, &v, &n) || !n || lc_load(db, name, &c, &cl)) {
		cluster_jobs_free(v, n);
		return;
	}
	for (i = 0; i < n; i++) {
		struct buf where = BUF_INIT(0);

		if (*v[i].node_job_ids && !lc_sync_down(db, &cl, v[i].id, &where))
			fprintf(stderr, "[cleanup] logs of %s job %lld saved in %s\n", name,
			        (long long)v[i].id, where.p);
		buf_release(&where);
	}
	cluster_free(&c);
	cl_close(&cl);
	cluster_jobs_free(v, n);
}

static int worker_cleanup(struct st_db *db)
{
	struct mj_cleanup *cu = NULL;
	size_t n = 0, i, k;
	int rc = EXIT_OK;

	if (mj_cleanups(db, &cu, &n))
		return EXIT_FAIL;
	for (i = 0; i < n; i++) {
		struct cluster c;
		int r = EXIT_OK;

		if (!cu[i].cluster || deferred(db, &cu[i]))
			continue;
		if (st_cluster_get(db, cu[i].cluster, &c)) {
			/* Gone already. */
		} else if (cu[i].cluster_job > 0) {
			/* Up to CANCEL_BATCH pool jobs of this cluster in one cancel request. */
			struct argv av;
			size_t picked = 0;

			cluster_free(&c);
			argv_init(&av);
			argv_push(&av, "cancel");
			argv_push(&av, cu[i].cluster);
			for (k = i; k < n && picked < CANCEL_BATCH; k++) {
				if (!cu[k].cluster || cu[k].cluster_job <= 0 ||
				    strcmp(cu[k].cluster, cu[i].cluster))
					continue;
				argv_pushf(&av, "%lld", (long long)cu[k].cluster_job);
				cu[k].picked = 1;
				picked++;
			}
			fprintf(stderr, "[cleanup] cancelling %zu job(s) on %s\n", picked,
			        cu[i].cluster);
			r = cmd_cancel((int)av.n, av.v);
			argv_release(&av);
			if (r != EXIT_OK)
				rc = EXIT_FAIL; /* the rows stay: tried again */
			for (k = n; k-- > i;) {
				if (!cu[k].picked)
					continue;
				cu[k].picked = 0;
				if (r == EXIT_OK) {
					mj_cleanup_done(db, cu[k].id);
					maybe_cancelled(db, cu[k].job_id);
				}
				if (k != i) {
					free(cu[k].cluster);
					cu[k].cluster = NULL;
				}
			}
			continue;
		} else {
			char *av[] = {"down", cu[i].cluster, NULL};

			cluster_free(&c);
			save_logs(db, cu[i].cluster);
			fprintf(stderr, "[cleanup] tearing down %s (job %lld)\n", cu[i].cluster,
			        (long long)cu[i].job_id);
			r = cmd_down(2, av);
			if (r != EXIT_OK && !st_cluster_get(db, cu[i].cluster, &c)) {
				/*
				 * It could not even be opened (a local node whose directory is
				 * gone): drop the record and what is left of it, as down --purge.
				 */
				fprintf(stderr, "[cleanup] purging %s\n", cu[i].cluster);
				if (!strcmp(c.infra, "local"))
					infra_local_remove(cu[i].cluster);
				cluster_free(&c);
				r = st_cluster_delete(db, cu[i].cluster) ? EXIT_FAIL : EXIT_OK;
			}
		}
		if (r != EXIT_OK && r != EXIT_JOB_NOT_FOUND)
			rc = EXIT_FAIL; /* the row stays: tried again */
		else {
			mj_cleanup_done(db, cu[i].id);
			maybe_cancelled(db, cu[i].job_id);
		}
	}
	mj_cleanups_free(cu, n);
	return rc;
}

int cmd___jobs_worker(int argc, char **argv)
{
	struct st_db *db;
	long id = 0;
	int rc;

	if (argc != 4 || parse_long(argv[2], -2, INT64_MAX, &id))
		return usage_error("__jobs-worker", "expected KIND ID GOFD");
	if (wait_go(argv[3]))
		return EXIT_FAIL;
	if (st_launcher_open(0, &db))
		return EXIT_FAIL;
	if (!strcmp(argv[1], "launch"))
		rc = worker_launch(db, id);
	else if (!strcmp(argv[1], "watch"))
		rc = worker_watch(db);
	else if (!strcmp(argv[1], "cleanup"))
		rc = worker_cleanup(db);
	else
		rc = usage_error("__jobs-worker", "unknown kind '%s'", argv[1]);
	st_close(db);
	return rc;
}
