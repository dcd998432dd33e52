/*
 * The controller's workers (`skiff __jobs-worker KIND ID GOFD`), each its own process so
 * that the controller's loop never blocks on a node:
 *
 *   launch ID   launches job ID's current task with the launch engine (eng_launch() on
 *               cluster skiff-job-ID..., or on the shared local pool), then records the
 *               cluster job and ALIVE itself; with ID,ID,... (a batch of pool jobs the
 *               controller claimed together) one after the other, each job's output in
 *               its own log: at the first that fails, the rest go back to the queue
 *               untried, and the exit status is that job's
 *   watch       probes every ALIVE job: the engine's queue of its cluster jobs (one framed
 *               request per node)
 *   cleanup     tears down clusters and cancels pool jobs listed in job_cleanups, keeping
 *               a cluster's logs before it goes
 *   keep        keeps the logs of the pool's ended jobs (keep-gc: then runs the retention),
 *               and removes the uploads on a controller host that no job needs
 *               (jobs_files_gc())
 *
 * A worker first waits for the controller's byte on GOFD: the controller writes it after
 * recording the worker's pid and start time, and a worker whose pipe closes without it
 * exits without doing anything.
 */
#include <errno.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/launch/engine.h"
#include "bootstrap/launch/gang.h"
#include "lib/exit.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/jobs.h"
#include "state/launcher.h"
#include "state/node.h"
#include "supervisor/jobs/jobs.h"
#include "supervisor/jobs/policy.h"
#include "lib/banned.h"

/* The longest a launch waits at SKIFF_JOBS_LAUNCH_GATE (a test that forgot it). */
#define LAUNCH_GATE_MAX_MS (120 * 1000)

/* Pool jobs per cancel request (the launcher's cancel takes up to 1000 per node). */
#define CANCEL_BATCH 500

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

/* ---- this host's own network ------------------------------------------------------------ */

/*
 * An interface's state as the kernel tells this process's network namespace (an ioctl,
 * not /sys, which may show another namespace's links): "up" once it carries (RUNNING),
 * "lowerlayerdown" up without a carrier (a veth whose peer is down), "down", or NULL.
 */
static const char *link_state(const char *iface, void *arg)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	(void)arg;
	if (fd < 0)
		return NULL;
	if (strlen(iface) >= sizeof(ifr.ifr_name)) {
		close(fd);
		return NULL;
	}
	memset(&ifr, 0, sizeof(ifr));
	xsnprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	r = ioctl(fd, SIOCGIFFLAGS, &ifr);
	close(fd);
	if (r < 0)
		return NULL;
	if (!(ifr.ifr_flags & IFF_UP))
		return "down";
	return ifr.ifr_flags & IFF_RUNNING ? "up" : "lowerlayerdown";
}

/* 1 when this host is cut off from every network (jobs_host_cut_off()); said once. */
static int cut_off(void)
{
	struct buf routes = BUF_INIT((size_t)1 << 20);
	int r = 0;

	if (buf_read_file(&routes, "/proc/net/route") >= 0)
		r = jobs_host_cut_off(routes.p, link_state, NULL);
	buf_release(&routes);
	if (r)
		fprintf(stderr, "[watch] this host's own links are all down: nodes that do not "
		                "answer are not counted as lost until they are up again\n");
	return r;
}

/* ---- launch --------------------------------------------------------------------------- */

/*
 * The job's tasks as `jobs launch` saw them: its YAML text (or its command), with the
 * overrides it was given applied (stored as data; a row from an older skiff holds them
 * as its flags). Returns 0, or EXIT_INVALID / EXIT_FAIL with the errors printed.
 */
static int load_tasks(const struct mjob *j, struct task_list *tl, struct cfg_node **config)
{
	struct task_overrides ov = TASK_OVERRIDES_INIT;
	struct yerrors errs = YERRORS_INIT;
	int r = 0;

	if (j->overrides_len) {
		if (task_overrides_decode(&ov, j->overrides, j->overrides_len))
			r = EXIT_FAIL;
	} else if (*j->ovargs) {
		char *s = xstrdup(j->ovargs), *q = s, *e;
		struct argv av;
		int i;

		argv_init(&av);
		argv_push(&av, "jobs");
		for (;; q = e + 1) {
			e = strchr(q, '\x1f');
			if (e)
				*e = '\0';
			argv_push(&av, q);
			if (!e)
				break;
		}
		free(s);
		for (i = 1; i < (int)av.n && !r;)
			if (task_overrides_arg(&ov, (int)av.n, av.v, &i) <= 0)
				r = EXIT_FAIL;
		argv_release(&av);
	}
	if (!r && *j->spec)
		r = task_parse_buf(tl, j->entry, j->spec, strlen(j->spec), &errs) ? EXIT_INVALID
		                                                                  : 0;
	else if (!r)
		task_from_command(tl, j->entry);
	/* A job group's member runs its own task alone, told the group's name. */
	if (!r && j->group_id) {
		if (task_list_keep(tl, (size_t)j->group_task)) {
			error("job %lld: its job group's file has no task %d", (long long)j->id,
			      j->group_task);
			r = EXIT_INVALID;
		} else {
			task_kvs_set(&tl->tasks[0]->envs, "SKYPILOT_JOBGROUP_NAME", j->group_name,
			             0, 0);
		}
	}
	if (!r &&
	    (task_list_apply_overrides(tl, &ov, &errs) || task_list_check_required(tl, &errs, 0)))
		r = EXIT_INVALID;
	if (!r && (size_t)j->task_index >= tl->n) {
		error("job %lld has no task %d", (long long)j->id, j->task_index);
		r = EXIT_INVALID;
	}
	yerr_print(&errs, stderr);
	/* The config as it was at submit (frozen in the overrides), with the task's config:. */
	if (!r && config_resolve(&ov, tl, (size_t)j->task_index, 0, config))
		r = EXIT_INVALID;
	yerr_release(&errs);
	task_overrides_release(&ov);
	return r;
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

/*
 * A job of a batch that is not to be launched here goes back to waiting for a launch
 * (as the controller requeues a launch that never began); one the user cancelled stays
 * LAUNCHING, and the controller cancels it when the worker is gone.
 */
static void hand_back(struct st_db *db, int64_t id, const char *why)
{
	struct mjob j;

	if (mj_get(db, id, &j))
		return;
	if (j.sched == MJS_LAUNCHING &&
	    !mj_transition(db, id, MJ_ACTIVE_MASK & ~MJ_MASK(MJ_CANCELLING), MJ_MASK(MJS_LAUNCHING),
	                   j.status == MJ_STARTING ? MJ_PENDING : -1, MJS_ALIVE_WAITING, why))
		fprintf(stderr, "[launch] job %lld: %s\n", (long long)id, why);
	mjob_free(&j);
}

/* batch: other jobs share this worker (a job that is not a pool job goes back). */
static int worker_launch(struct st_db *db, int64_t id, int batch)
{
	const struct jobs_paths *p = jobs_paths();
	struct task_list tl = TASK_LIST_INIT;
	struct eng_launch req = {0};
	struct eng_launched res;
	struct cfg_node *config = NULL;
	const struct task *t;
	struct mjob j;
	/* The cluster's name is ours (jobs_cluster_name()); infra and task id are the user's. */
	char cluster[128], reason[192];
	const char *infra;
	char *task_id = NULL, *lockp = NULL;
	int pool, rc, r, lock_fd = -1;
	/* A batch launches many jobs in this process: only this one's errors are its own. */
	unsigned long errors = log_error_count();

	if (mj_get(db, id, &j))
		return EXIT_FAIL;
	if (j.sched != MJS_LAUNCHING || (batch && j.cancel_requested)) {
		if (j.sched == MJS_LAUNCHING)
			fprintf(stderr,
			        "[launch] job %lld: cancelled before its turn in the batch\n",
			        (long long)id);
		mjob_free(&j);
		return EXIT_OK;
	}
	if (*j.cwd && chdir(j.cwd) < 0)
		warning("cannot change to '%s': %s", j.cwd, strerror(errno));
	rc = load_tasks(&j, &tl, &config);
	if (rc)
		goto out;
	t = tl.tasks[j.task_index];
	infra = *j.infra ? j.infra : t->nres && t->res[0].infra ? t->res[0].infra : INFRA_DEFAULT;
	{
		struct infra inf;

		/* No attempt makes a spec parse (a row from before `jobs launch` checked it). */
		if (infra_parse(infra, &inf)) {
			rc = EXIT_INVALID;
			goto out;
		}
		infra_release(&inf);
	}
	pool = jobs_task_on_pool(t, infra);
	if (batch && !pool) {
		/* The row said the pool; its own launch finds its cluster. */
		mj_set_cluster(db, id, "", 0, 0);
		hand_back(db, id,
		          "back in the queue: it does not run on the pool, so it "
		          "launches on its own");
		goto out;
	}
	jobs_cluster_name(&j, pool, cluster, sizeof(cluster));
	if (!*j.task_id) {
		task_id = jobs_task_id(j.submitted_at, j.name, id, j.task_index);
		mj_set_task_id(db, id, task_id);
	} else {
		task_id = xstrdup(j.task_id);
	}
	/* Every task sees the pipeline's ids, as SkyPilot's SKYPILOT_TASK_IDS. */
	{
		char *ids =
		        jobs_task_ids(j.submitted_at, j.name, id, (int)tl.n, j.task_index, task_id);

		task_kvs_set(&tl.tasks[j.task_index]->envs, "SKYPILOT_TASK_IDS", ids, 0, 0);
		task_kvs_set(&tl.tasks[j.task_index]->envs, "SKIFF_TASK_IDS", ids, 0, 0);
		free(ids);
	}
	/* Intent first: a cluster named here is released even if we die half way. */
	mj_set_cluster(db, id, cluster, 0, pool);
	fprintf(stderr, "[launch] job %lld task %d on %s (%s), task id %s\n", (long long)id,
	        j.task_index, cluster, infra, task_id);
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
	/* Test hooks: a slow launch, to hit a controller crash or a cancel mid-launch; a
	 * gate (a file the test removes), to hold launches at this point together. */
	if (jobs_env_long("SKIFF_JOBS_LAUNCH_DELAY_MS", 0, 0, 600000))
		poll_ms((int)jobs_env_long("SKIFF_JOBS_LAUNCH_DELAY_MS", 0, 0, 600000));
	if (getenv("SKIFF_JOBS_LAUNCH_GATE")) {
		int64_t until = now_ms() + LAUNCH_GATE_MAX_MS;

		while (!access(getenv("SKIFF_JOBS_LAUNCH_GATE"), F_OK) && now_ms() < until)
			poll_ms(20);
	}
	req.cluster = cluster;
	req.infra = infra;
	req.task = t;
	req.entrypoint = j.entry;
	req.detach = 1;
	req.idle_minutes = -1;
	req.always_submit = 1; /* the controller follows the job it makes */
	req.task_id = task_id;
	req.no_default_cpus = pool;
	req.config = config;
	r = eng_launch(db, &req, &res);
	/* A node that can never run it: the precheck fails, no retry makes it fit. */
	rc = r == -E2BIG ? EXIT_INVALID : r ? EXIT_FAIL : EXIT_OK;
	if (lock_fd >= 0)
		close(lock_fd);
	if (rc == EXIT_OK && res.job > 0) {
		mj_set_cluster(db, id, cluster, res.job, pool);
		xsnprintf(reason, sizeof(reason), "running on %s (cluster job %lld)", cluster,
		          (long long)res.job);
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
		/* Not an attempt: this host could reach nothing (its own links are down). */
		if (rc != EXIT_INVALID && rc != EXIT_USAGE && cut_off())
			rc = EXIT_UNAVAILABLE;
	}
out:
	/* The controller says why in the attempt's transition (`jobs queue` DETAILS). */
	{
		char err[512] = "";

		if (rc != EXIT_OK && log_error_count() != errors)
			log_last_error(err, sizeof(err));
		if (*err || *j.launch_error)
			mj_set_launch_error(db, id, err);
	}
	free(task_id);
	free(lockp);
	cfg_free(config);
	task_list_release(&tl);
	mjob_free(&j);
	return rc;
}

/* The job's own log takes this process's stdout and stderr (a batch's next job). */
static void output_to(int64_t id)
{
	char *path = jobs_job_log(id);
	int fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;

	fflush(stdout);
	fflush(stderr);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	free(path);
}

/*
 * The batch ids[0..n), in order. A job is done with when it is no longer LAUNCHING (or
 * its cancel waits for the controller); the first one that is not stops the batch, and
 * its exit status is the worker's, which the controller reads as that job's.
 */
static int worker_launch_batch(struct st_db *db, const int64_t *ids, size_t n)
{
	size_t i;
	int rc = EXIT_OK;

	for (i = 0; i < n; i++) {
		struct mjob j;
		int stuck = 1;

		if (n > 1)
			output_to(ids[i]);
		rc = worker_launch(db, ids[i], n > 1);
		if (!mj_get(db, ids[i], &j)) {
			stuck = j.sched == MJS_LAUNCHING && !j.cancel_requested;
			mjob_free(&j);
		}
		if (stuck) {
			if (rc == EXIT_OK)
				rc = EXIT_FAIL;
			break;
		}
	}
	for (i++; i < n; i++) {
		output_to(ids[i]);
		hand_back(db, ids[i],
		          "back in the queue: the launch before it in its batch failed");
	}
	return rc;
}

/* ---- watch ---------------------------------------------------------------------------- */

struct probe {
	int64_t id, cluster_job;
	char *cluster;
	int status;       /* the gang's status (gang_status()), -1 unknown */
	struct buf codes; /* every rank's, in rank order (PROBE_CODES_MAX) */
	char err[256];    /* numbers and a cluster name (at most INFRA_CLUSTER_NAME_MAX) */
	int gone;         /* a rank's node is gone (runner_node_gone()): lost at once */
};

/* Room for every rank's exit code: TASK_MAX_NODES of ",-2147483648". */
#define PROBE_CODES_MAX ((size_t)TASK_MAX_NODES * 12)

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
	buf_init(&p->codes, PROBE_CODES_MAX);
	return 0;
}

static int by_cluster(const void *a, const void *b)
{
	return strcmp(((const struct probe *)a)->cluster, ((const struct probe *)b)->cluster);
}

static int cmp_probe_job(const void *a, const void *b)
{
	int64_t x = ((const struct probe *)a)->cluster_job,
	        y = ((const struct probe *)b)->cluster_job;

	return x < y ? -1 : x > y;
}

/*
 * Probes the jobs v[0..n) that all run on one cluster: the engine's queue of just those
 * cluster jobs (one request per node), their gang statuses as `queue` shows them. v is
 * put in cluster job order, where each answer finds its probe (thousands on a pool).
 */
static void probe_cluster(struct st_db *db, struct probe *v, size_t n)
{
	int64_t *want = xcalloc(n, sizeof(*want));
	struct eng_job *jobs = NULL;
	struct cluster c;
	size_t i, k, got = 0;
	int r;

	if (st_cluster_get(db, v[0].cluster, &c)) {
		for (i = 0; i < n; i++) {
			v[i].status = JOB_FAILED_DRIVER;
			xsnprintf(v[i].err, sizeof(v[i].err), "cluster %.100s is gone",
			          v[i].cluster);
		}
		free(want);
		return;
	}
	cluster_free(&c);
	qsort(v, n, sizeof(*v), cmp_probe_job);
	for (i = 0; i < n; i++)
		want[i] = v[i].cluster_job;
	r = eng_queue(db, v[0].cluster, 0, want, n, &jobs, &got);
	if (r < 0)
		for (i = 0; i < n; i++)
			xsnprintf(v[i].err, sizeof(v[i].err), "cluster %.100s cannot be opened",
			          v[i].cluster);
	for (k = 0; k < got; k++) {
		const struct eng_job *jb = &jobs[k];
		struct probe key = {.cluster_job = jb->id}, *p;
		int rank, full = 0;

		p = bsearch(&key, v, n, sizeof(*v), cmp_probe_job);
		if (!p)
			continue;
		p->status = jb->status;
		for (rank = 0; rank < jb->nranks; rank++) {
			const struct eng_rank *rk = &jb->ranks[rank];

			/* Past PROBE_CODES_MAX (more ranks than a task has): left out. */
			if (rk->exit_code >= 0 && !full &&
			    buf_addf(&p->codes, "%s%d", p->codes.len ? "," : "", rk->exit_code)) {
				fprintf(stderr,
				        "[watch] job %lld: exit codes from rank %d on left out\n",
				        (long long)p->id, rank);
				full = 1;
			}
			/*
			 * Only what could not be asked is an error (jobs_old_copy_gone()): a
			 * node that answered without the job (rk->lost) said it is gone there.
			 */
			if (rk->status < 0 && rk->gone && !p->gone) {
				xsnprintf(p->err, sizeof(p->err), "the node of rank %d is gone",
				          rank);
				p->gone = 1;
			} else if (rk->status < 0 && !p->err[0]) {
				xsnprintf(p->err, sizeof(p->err),
				          "the node of rank %d is unreachable", rank);
			}
		}
	}
	eng_jobs_free(jobs, got);
	free(want);
}

static int worker_watch(struct st_db *db)
{
	struct probes ps = {0};
	size_t i, start;
	int offline;

	if (mj_each(db, 0, MJ_MASK(MJS_ALIVE), collect, &ps))
		return EXIT_FAIL;
	if (ps.n)
		qsort(ps.v, ps.n, sizeof(*ps.v), by_cluster);
	for (start = 0; start < ps.n; start = i) {
		for (i = start; i < ps.n && !strcmp(ps.v[i].cluster, ps.v[start].cluster); i++)
			;
		probe_cluster(db, &ps.v[start], i - start);
	}
	offline = ps.n && cut_off();
	if (!st_begin(db)) {
		for (i = 0; i < ps.n; i++) {
			struct probe *p = &ps.v[i];

			/* Cut off, a node that did not answer is no news about it. */
			if (offline && p->status < 0)
				continue;
			mj_set_probe(db, p->id, p->cluster, p->cluster_job, p->status, p->codes.p,
			             p->err, p->gone, now_wall());
		}
		st_commit(db);
	}
	for (i = 0; i < ps.n; i++) {
		free(ps.v[i].cluster);
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

static int maybe_cancelled(struct st_db *db, int64_t job)
{
	int r = 0;

	if (!mj_cleanup_count_job(db, job)) {
		struct mjob j;
		char why[MJ_CANCEL_REASON_MAX], *reason;

		if (mj_get(db, job, &j))
			return 0;
		reason = xasprintf("%s; its cluster is released",
		                   mj_cancel_reason(&j, why, sizeof(why)));
		r = mj_transition(db, job, MJ_MASK(MJ_CANCELLING), MJ_MASK(MJS_DONE), MJ_CANCELLED,
		                  -1, reason);
		free(reason);
		mjob_free(&j);
	}
	return r == -ESTALE || r == -ENOENT ? 0 : r;
}

/*
 * The cleanups of a cancel batch that are done (done[k]: cu[k].id and its job), in one
 * transaction (a batch is hundreds of pool jobs): each row deleted, and each job whose
 * last cleanup it was CANCELLED. All or nothing: what failed is done again next round.
 */
static void cleanups_done(struct st_db *db, const int64_t *row, const int64_t *job, size_t n)
{
	size_t k;
	int r;

	if (!n)
		return;
	r = st_begin(db);
	for (k = 0; k < n && !r; k++) {
		r = mj_cleanup_done(db, row[k]);
		if (!r)
			r = maybe_cancelled(db, job[k]);
	}
	if (!r && !st_commit(db))
		return;
	if (st_in_tx(db))
		st_rollback(db);
	fprintf(stderr, "[cleanup] %zu ended job(s) could not be recorded; tried again\n", n);
}

/*
 * Before a job's own cluster goes, the controller keeps its jobs' logs (kept.c), where
 * `jobs logs` finds them afterwards. Best effort: an unreachable node does not keep the
 * cluster alive. Every cluster job on it belongs to the managed job id.
 */
static void save_logs(struct st_db *db, int64_t id, const char *name)
{
	struct cluster_job *v = NULL;
	size_t n = 0, i;

	if (st_cluster_job_list(db, name, &v, &n) || !n) {
		cluster_jobs_free(v, n);
		return;
	}
	for (i = 0; i < n; i++)
		if (*v[i].node_job_ids && jobs_keep_run(db, id, name, v[i].id, 0))
			fprintf(stderr, "[cleanup] logs of %s job %lld could not all be kept\n",
			        name, (long long)v[i].id);
	cluster_jobs_free(v, n);
}

/*
 * Which of the pool jobs ids[0..n) on cluster have ended, as their node says (or that the
 * cluster no longer has): ended[i] 1. A cancel only asks; the row of a job whose old copy
 * may still run stays until it is seen to end, so that no new attempt overlaps it.
 */
static void pool_ended(struct st_db *db, const char *cluster, const int64_t *ids, size_t n,
                       int *ended)
{
	struct eng_job *jobs = NULL;
	size_t got = 0, i, k;

	memset(ended, 0, n * sizeof(*ended));
	if (eng_queue(db, cluster, 0, ids, n, &jobs, &got) < 0)
		return;
	for (i = 0; i < n; i++) {
		int st = JOB_SUCCEEDED; /* one the cluster does not have: nothing to wait for */

		for (k = 0; k < got; k++)
			if (jobs[k].id == ids[i])
				st = jobs[k].status;
		ended[i] = st >= 0 && job_status_terminal(st);
	}
	eng_jobs_free(jobs, got);
}

/*
 * A cluster whose down failed (down: its error): forgotten as by down --purge only where
 * that leaves nothing of it running: the infra takes the machines with it (containers,
 * pods, allocations), or its own teardown ends what still runs there and says so (local:
 * also a node whose directory is gone). Elsewhere (ssh) a node that cannot be asked may
 * still run the job: the cluster and its row stay, tried again, and no new attempt of the
 * job starts meanwhile. EXIT_OK once it is forgotten.
 */
static int purge(struct st_db *db, const struct cluster *c, int down)
{
	struct infra inf;
	int r;

	if (infra_parse(c->infra, &inf))
		return EXIT_FAIL;
	if ((inf.ops->flags & INFRA_PROCS_STAY) && !(inf.ops->flags & INFRA_TEARDOWN_ENDS_PROCS)) {
		fprintf(stderr,
		        "[cleanup] %s is kept (%s): a node that cannot say so may still run some "
		        "of it; tried again ('skiff down --purge %s' forgets it)\n",
		        c->name, strerror(-down), c->name);
		infra_release(&inf);
		return EXIT_FAIL;
	}
	fprintf(stderr, "[cleanup] purging %s\n", c->name);
	r = infra_teardown(&inf, db, NULL, c->name);
	infra_release(&inf);
	if (r)
		return EXIT_FAIL;
	return st_cluster_delete(db, c->name) ? EXIT_FAIL : EXIT_OK;
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
		int r = EXIT_OK, down;

		if (!cu[i].cluster || deferred(db, &cu[i]))
			continue;
		if (st_cluster_get(db, cu[i].cluster, &c)) {
			/* Gone already. */
		} else if (cu[i].cluster_job > 0) {
			/* Up to CANCEL_BATCH pool jobs of this cluster in one cancel request. */
			int64_t *ids = xcalloc(CANCEL_BATCH, sizeof(*ids));
			int64_t *done_row = xcalloc(CANCEL_BATCH, sizeof(*done_row));
			int64_t *done_job = xcalloc(CANCEL_BATCH, sizeof(*done_job));
			int *ended = xcalloc(CANCEL_BATCH, sizeof(*ended));
			struct eng_cancelled res;
			size_t picked = 0, waiting = 0, ndone = 0, x;

			cluster_free(&c);
			for (k = i; k < n && picked < CANCEL_BATCH; k++) {
				if (!cu[k].cluster || cu[k].cluster_job <= 0 ||
				    strcmp(cu[k].cluster, cu[i].cluster))
					continue;
				ids[picked++] = cu[k].cluster_job;
				cu[k].picked = 1;
			}
			fprintf(stderr, "[cleanup] cancelling %zu job(s) on %s\n", picked,
			        cu[i].cluster);
			r = eng_cancel(db, cu[i].cluster, ids, picked, 0, &res);
			/* A job the cluster no longer has needs no cancel. */
			r = r && !(r == -ENOENT && res.missing) ? EXIT_FAIL : EXIT_OK;
			eng_cancelled_release(&res);
			if (r == EXIT_OK)
				pool_ended(db, cu[i].cluster, ids, picked, ended);
			if (r != EXIT_OK)
				rc = EXIT_FAIL; /* the rows stay: tried again */
			for (k = n; k-- > i;) {
				if (!cu[k].picked)
					continue;
				cu[k].picked = 0;
				for (x = 0; x < picked && ids[x] != cu[k].cluster_job; x++)
					;
				if (r == EXIT_OK && x < picked && ended[x]) {
					done_row[ndone] = cu[k].id;
					done_job[ndone++] = cu[k].job_id;
				} else if (r == EXIT_OK) {
					waiting++; /* asked, not ended yet: looked at again */
				}
				if (k != i) {
					free(cu[k].cluster);
					cu[k].cluster = NULL;
				}
			}
			cleanups_done(db, done_row, done_job, ndone);
			if (waiting)
				fprintf(stderr, "[cleanup] %zu job(s) on %s are stopping\n",
				        waiting, cu[i].cluster);
			free(ids);
			free(ended);
			free(done_row);
			free(done_job);
			continue;
		} else {
			cluster_free(&c);
			save_logs(db, cu[i].job_id, cu[i].cluster);
			fprintf(stderr, "[cleanup] tearing down %s (job %lld)\n", cu[i].cluster,
			        (long long)cu[i].job_id);
			/*
			 * Confirmed: a node that does not answer, or still runs some of it,
			 * keeps the cluster (-EBUSY) and the row, tried again; a recovery that
			 * could not ask its node waits for this (jobs_old_copy_gone()).
			 */
			down = eng_down(db, cu[i].cluster, ENG_DOWN_CONFIRM);
			r = down < 0 ? EXIT_FAIL : EXIT_OK;
			if (r != EXIT_OK && !st_cluster_get(db, cu[i].cluster, &c)) {
				r = purge(db, &c, down);
				cluster_free(&c);
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

/* ---- keep ----------------------------------------------------------------------------- */

/* Keeps the ended pool jobs' logs, then (gc) runs the retention. */
static int worker_keep(struct st_db *db, int gc)
{
	int rc = jobs_keep_pool_runs(db) ? EXIT_FAIL : EXIT_OK;

	if (gc && jobs_kept_gc(db))
		rc = EXIT_FAIL;
	if (jobs_files_gc(db))
		rc = EXIT_FAIL;
	return rc;
}

int jobs_worker_main(int argc, char **argv)
{
	struct st_db *db;
	int64_t *ids = NULL;
	size_t nids = 0;
	long id = 0;
	int rc;

	if (argc == 4 && !strcmp(argv[1], "launch")) {
		int n = gang_parse_ids(argv[2], &ids);
		size_t i;

		/* "ID" or "ID,ID,...": none empty. */
		for (i = 0; n > 0 && i < (size_t)n; i++)
			if (ids[i] <= 0)
				n = -EINVAL;
		if (n <= 0) {
			free(ids);
			return error("__jobs-worker launch: '%s' is not a list of job ids",
			             argv[2]),
			       EXIT_USAGE;
		}
		nids = (size_t)n;
	} else if (argc != 4 || parse_long(argv[2], MJ_HOLDER_KEEP, INT64_MAX, &id)) {
		return error("usage: skiff __jobs-worker launch|watch|cleanup|keep|keep-gc ID GOFD"),
		       EXIT_USAGE;
	}
	if (wait_go(argv[3]) || st_launcher_open(0, &db)) {
		free(ids);
		return EXIT_FAIL;
	}
	if (!strcmp(argv[1], "launch"))
		rc = worker_launch_batch(db, ids, nids);
	else if (!strcmp(argv[1], "watch"))
		rc = worker_watch(db);
	else if (!strcmp(argv[1], "cleanup"))
		rc = worker_cleanup(db);
	else if (!strcmp(argv[1], "keep") || !strcmp(argv[1], "keep-gc"))
		rc = worker_keep(db, !strcmp(argv[1], "keep-gc"));
	else
		rc = (error("__jobs-worker: unknown kind '%s'", argv[1]), EXIT_USAGE);
	st_close(db);
	free(ids);
	return rc;
}
