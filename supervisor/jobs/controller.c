/*
 * The managed-jobs controller (`skiff __jobs-controller`): one process per $SKIFF_HOME,
 * flock()ed, started on demand by `jobs launch` and `jobs cancel`, exiting when it has
 * been idle for a while. One loop on the daemon skeleton (lib/daemon.h: its lock, a
 * signalfd, daemon_wait() to the next deadline); its decisions are pure functions
 * (policy.h). No thread per job: a job is a row, and all work that may block (launching a
 * cluster, probing nodes, tearing clusters down) runs in worker processes (worker.c):
 *
 *   launch worker   one per launching job, or per batch of pool jobs claimed together
 *                   (mj_claim_batch()), at most max_launching; writes each success (the
 *                   cluster job, ALIVE) itself, so it may outlive a crashed controller
 *   watch worker    one at a time, every poll interval: probes every ALIVE job's cluster
 *                   job and writes what it saw into the row
 *   cleanup worker  one at a time: tears down clusters / cancels pool jobs listed in
 *                   job_cleanups (keeping a cluster's logs first), then deletes the rows
 *   keep worker     one at a time, after jobs end: keeps the logs of the pool's ended
 *                   jobs; at start and every JOBS_KEPT_GC_INTERVAL_S it also runs the
 *                   logs' retention (keep-gc)
 *
 * Each worker's pid and start time go into job_holders before it is let go (it waits on
 * a pipe for the controller's byte), so a restarted controller knows every worker that
 * may be running, tells a live one from a dead one by pid and start time, and never
 * starts a second launch for a job while the first may still run. What the controller
 * decides (a launch failed, a job ended, recover, cancel) is one guarded transition per
 * job; see docs/managed-jobs.md for the state x event table.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/daemon.h"
#include "lib/exit.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "state/jobs.h"
#include "state/launcher.h"
#include "state/node.h"
#include "supervisor/jobs/jobs.h"
#include "supervisor/jobs/policy.h"
#include "lib/banned.h"

#define CLEANUP_RETRY_MS 1000

struct kid {
	pid_t pid;
	int64_t job;   /* > 0 launch worker; MJ_HOLDER_WATCH, MJ_HOLDER_CLEANUP */
	int64_t *jobs; /* a launch worker's batch, job first (njobs > 1), else NULL */
	size_t njobs;
};

static struct {
	struct st_db *db;
	struct jobs_limits lim;
	int lock_fd, sig_fd;
	struct kid *kids;
	size_t nkids, cap;
	int64_t *batch; /* room for the ids of one claim (lim.launch_batch) */
	int64_t last_watch_ms, last_holder_ms, idle_since_ms, last_cleanup_ms, last_gc_ms;
	int probes_ready, want_cancels, want_settle, want_keep, want_gc, stop, idle;
	long poll_ms, backoff_s, attempts_max, idle_s, probe_max, lost_ms, gc_ms;
} C;

static void logf_job(int64_t id, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line in the controller's log and in the job's own log. */
static void logf_job(int64_t id, const char *fmt, ...)
{
	struct buf line = BUF_INIT(64 << 10);
	char when[32];
	time_t t = time(NULL);
	struct tm tm;
	va_list ap;
	char *path;
	int fd = -1;

	va_start(ap, fmt);
	/* Past 64 KiB it is said to be too long, never cut half way through. */
	if (buf_vaddf(&line, fmt, ap))
		buf_adds(&line, "(a message too long to log)");
	va_end(ap);
	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	printf("%s job %lld: %s\n", when, (long long)id, line.p);
	fflush(stdout);
	path = jobs_job_log(id);
	if (path)
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0) {
		char *s = xasprintf("[controller %s] %s\n", when, line.p);

		write_all(fd, s, strlen(s));
		free(s);
		close(fd);
	}
	free(path);
	buf_release(&line);
}

static int take_lock(void)
{
	const struct jobs_paths *p = jobs_paths();
	int fd = p ? daemon_lock(p->lock) : -ENOENT;

	if (fd < 0)
		return fd;
	C.lock_fd = fd;
	return 0;
}

/* ---- workers -------------------------------------------------------------------------- */

static struct kid *find_kid(pid_t pid)
{
	size_t i;

	for (i = 0; i < C.nkids; i++)
		if (C.kids[i].pid == pid)
			return &C.kids[i];
	return NULL;
}

static int have_kid(int64_t job)
{
	size_t i;

	for (i = 0; i < C.nkids; i++)
		if (C.kids[i].job == job)
			return 1;
	return 0;
}

/* Workers the controller waits for before it may leave (a keep worker finishes alone). */
static int busy_kids(void)
{
	size_t i;
	int n = 0;

	for (i = 0; i < C.nkids; i++)
		n += C.kids[i].job != MJ_HOLDER_KEEP;
	return n;
}

static int launch_kids(void)
{
	size_t i;
	int n = 0;

	for (i = 0; i < C.nkids; i++)
		n += C.kids[i].job > 0;
	return n;
}

/* Records pid as the holder of jobs[0..n), in one transaction. */
static int hold_jobs(const char *kind, const int64_t *jobs, size_t n, pid_t pid)
{
	uint64_t start = proc_start_time(pid);
	size_t i;
	int r = n > 1 ? st_begin(C.db) : 0;

	for (i = 0; !r && i < n; i++)
		r = mj_holder_set(C.db, jobs[i], kind, (int)pid, start);
	if (n > 1 && !r)
		r = st_commit(C.db);
	else if (n > 1)
		st_rollback(C.db);
	return r;
}

/*
 * Starts `skiff __jobs-worker KIND ID[,ID...] GOFD` for jobs[0..n) (a launch of one job or
 * a batch; else one MJ_HOLDER_ constant), records it as their holder, then lets it go.
 * Output goes to the first job's log (launch) or the controller's.
 */
static int start_worker(const char *kind, const int64_t *jobs, size_t n)
{
	const struct jobs_paths *p = jobs_paths();
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf ids = BUF_INIT(0);
	char fdbuf[16];
	char *argv[] = {NULL, "__jobs-worker", (char *)kind, NULL, fdbuf, NULL};
	int64_t job = jobs[0];
	char *logp = job > 0 ? jobs_job_log(job) : xstrdup(p->log);
	int go[2] = {-1, -1}, out = -1, r;
	size_t i;
	pid_t pid;

	argv[0] = (char *)self_path(NULL);
	for (i = 0; i < n; i++)
		buf_addf(&ids, "%s%lld", i ? "," : "", (long long)jobs[i]);
	argv[3] = ids.p;
	if (!argv[0] || !logp || pipe2(go, O_CLOEXEC) < 0) {
		r = error_errno("cannot start a %s worker", kind);
		goto out;
	}
	xsnprintf(fdbuf, sizeof(fdbuf), "%d", go[0]);
	out = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	o.argv = argv;
	o.fd_out = out;
	o.err_to_out = 1;
	o.pgrp = SPAWN_SESSION_NEW;
	o.keep_fds = &go[0];
	o.n_keep_fds = 1;
	r = spawn(&o, &pid);
	if (r) {
		errno = -r;
		r = error_errno("cannot start a %s worker", kind);
		goto out;
	}
	r = hold_jobs(kind, jobs, n, pid);
	if (r) {
		/* Unrecorded: it must not run. Closing the pipe without a byte stops it. */
		close(go[1]);
		go[1] = -1;
		waitpid(pid, NULL, 0);
		goto out;
	}
	if (write_all(go[1], "g", 1) < 0)
		warning("cannot release the %s worker %ld", kind, (long)pid);
	C.kids = xgrow(C.kids, C.nkids, &C.cap, sizeof(*C.kids));
	C.kids[C.nkids].pid = pid;
	C.kids[C.nkids].job = job;
	C.kids[C.nkids].jobs = NULL;
	if (n > 1) {
		C.kids[C.nkids].jobs = xcalloc(n, sizeof(*jobs));
		memcpy(C.kids[C.nkids].jobs, jobs, n * sizeof(*jobs));
	}
	C.kids[C.nkids].njobs = n;
	C.nkids++;
out:
	buf_release(&ids);
	if (go[0] >= 0)
		close(go[0]);
	if (go[1] >= 0)
		close(go[1]);
	if (out >= 0)
		close(out);
	free(logp);
	return r;
}

/* ---- decisions -------------------------------------------------------------------------- */

static double backoff_s(int attempts)
{
	/* [-1, 1]: the spread that keeps retries from marching together. */
	double jitter = ((double)(random() % 2001) - 1000.0) / 1000.0;

	return jobs_backoff_s(C.backoff_s, attempts, jitter);
}

/* 1 if the job holds a cluster (or a pool cluster job) to release. */
static int holds_cluster(const struct mjob *j)
{
	return *j->cluster && (!j->pool || j->cluster_job);
}

/* The job's current cluster is to be released (pool: its cluster job is cancelled). */
static void release_cluster(const struct mjob *j, int deferred)
{
	if (!holds_cluster(j))
		return;
	/* A pool job that has ended on its node holds nothing there any more. */
	if (j->pool && j->node_status >= 0 && job_status_terminal(j->node_status))
		return;
	if (j->pool)
		mj_cleanup_add(C.db, j->id, j->cluster, j->cluster_job);
	else
		mj_cleanup_add(C.db, j->id, j->cluster, deferred ? -1 : 0);
}

static void finish(const struct mjob *j, int status, const char *reason)
{
	release_cluster(j, 0);
	C.want_keep = 1;
	/* What the last probe saw of its run goes with the event (`jobs logs` says it). */
	if (!mj_transition_run(C.db, j->id, MJ_ACTIVE_MASK, MJ_ANY, status, MJS_DONE, reason,
	                       j->node_status, j->exit_codes))
		logf_job(j->id, "%s: %s", mj_status_name(status), reason);
}

/*
 * Relaunches j. When its node said the old copy ended, at once (EAGER_NEXT_REGION keeps the
 * old cluster booked meanwhile). When a node could not be asked, the old copy may still
 * run: its cluster is released first (the cleanup worker's down is confirmed, a pool job's
 * cancel is seen to end it), and the job waits in backoff until that is done
 * (jobs_backoff_over()): never two copies at once.
 */
static void recover(const struct mjob *j, const char *reason, int counts_restart)
{
	int gone = jobs_old_copy_gone(j);
	char *why = gone ? xstrdup(reason)
	                 : xasprintf("%s; the new attempt waits until %s is released (a node "
	                             "could not be asked: the old copy may still run)",
	                             reason, *j->cluster ? j->cluster : "its cluster");

	release_cluster(j, gone && j->strategy == MJ_EAGER_NEXT_REGION);
	C.want_keep = 1;
	mj_set_counters(C.db, j->id, j->task_index, j->recoveries + 1, j->restarts + counts_restart,
	                0, gone ? 0 : now_wall());
	mj_set_cluster(C.db, j->id, "", 0, 0);
	if (!mj_transition_run(C.db, j->id, MJ_ACTIVE_MASK & ~MJ_MASK(MJ_CANCELLING), MJ_ANY,
	                       MJ_RECOVERING, gone ? MJS_ALIVE_WAITING : MJS_ALIVE_BACKOFF, why,
	                       j->node_status, j->exit_codes))
		logf_job(j->id, "RECOVERING (recovery %d): %s", j->recoveries + 1, why);
	free(why);
}

/*
 * Why a launch attempt failed, after what reason says: the worker's last error, or where
 * to look (code: the worker's exit code, -1 when it died).
 */
static void launch_why(struct buf *reason, const struct mjob *j, int code)
{
	if (code < 0)
		buf_adds(reason, " (its worker died)");
	else if (j->launch_error && *j->launch_error)
		buf_addf(reason, ": %s", j->launch_error);
	else
		buf_addf(reason, " (see 'skiff jobs logs --controller %lld')", (long long)j->id);
}

/* A launch worker is gone (code: its exit code, -1 unknown) and the job may be LAUNCHING. */
static void launch_done(int64_t id, int code)
{
	struct mjob j;
	/* Grows with the worker's error, which names the user's infra, hosts, files. */
	struct buf reason = BUF_INIT(0);
	double wait;

	if (mj_get(C.db, id, &j))
		return;
	mj_holder_clear(C.db, id, 0);
	switch (jobs_launch_decide(&j, j.sched == MJS_LAUNCHING, code, C.attempts_max)) {
	case JL_NONE: break;
	case JL_CANCEL:
		/* CANCELLING first: the cleanup worker's CANCELLED must find it so. */
		mj_transition(
		        C.db, id, MJ_ACTIVE_MASK, MJ_ANY,
		        holds_cluster(&j) ? MJ_CANCELLING : MJ_CANCELLED, MJS_DONE,
		        j.cancel_requested == MJ_CANCEL_BY_GROUP
		                ? "cancelled during launch: its job group's primary tasks ended"
		                : "cancelled by the user during launch");
		release_cluster(&j, 0);
		break;
	case JL_FAIL_PRECHECKS:
		buf_adds(&reason, "launch refused: the task cannot run there");
		launch_why(&reason, &j, code);
		finish(&j, MJ_FAILED_PRECHECKS, reason.p);
		break;
	case JL_FAIL_NO_RESOURCE:
		buf_addf(&reason, "no resources after %d launch attempts", j.attempts + 1);
		launch_why(&reason, &j, code);
		finish(&j, MJ_FAILED_NO_RESOURCE, reason.p);
		break;
	case JL_OFFLINE:
		wait = backoff_s(j.attempts + 1);
		mj_set_counters(C.db, id, j.task_index, j.recoveries, j.restarts, j.attempts,
		                now_wall() + wait);
		buf_addf(&reason,
		         "launch attempt %d could not reach the infra (this host is cut off); not "
		         "counted",
		         j.attempts + 1);
		mj_transition(C.db, id, MJ_ACTIVE_MASK, MJ_MASK(MJS_LAUNCHING),
		              j.status == MJ_STARTING ? MJ_PENDING : -1, MJS_ALIVE_BACKOFF,
		              reason.p);
		logf_job(id, "%s; retry in %.0f s", reason.p, wait);
		break;
	case JL_BACKOFF:
		wait = backoff_s(j.attempts + 1);
		mj_set_counters(C.db, id, j.task_index, j.recoveries, j.restarts, j.attempts + 1,
		                now_wall() + wait);
		buf_addf(&reason, "launch attempt %d failed", j.attempts + 1);
		launch_why(&reason, &j, code);
		mj_transition(C.db, id, MJ_ACTIVE_MASK, MJ_MASK(MJS_LAUNCHING),
		              j.status == MJ_STARTING ? MJ_PENDING : -1, MJS_ALIVE_BACKOFF,
		              reason.p);
		logf_job(id, "%s; retry in %.0f s", reason.p, wait);
		break;
	}
	buf_release(&reason);
	mjob_free(&j);
}

/* What the watch worker saw of an ALIVE job (decided by jobs_probe_decide()). */
static int apply_probe(const struct mjob *j, void *arg)
{
	struct jobs_probe_decision d = jobs_probe_decide(j, C.probe_max, C.lost_ms, now_wall());
	/* Grows with the ranks: the codes are summarised (jobs_codes_summary()), never cut. */
	struct buf reason = BUF_INIT(0), codes = BUF_INIT(0);

	(void)arg;
	jobs_codes_summary(&codes, j->exit_codes, JOBS_REASON_CODES_MAX);
	switch (d.act) {
	case JP_NONE: break;
	case JP_NEXT_TASK:
		release_cluster(j, 0);
		C.want_keep = 1;
		mj_set_counters(C.db, j->id, j->task_index + 1, j->recoveries, j->restarts, 0, 0);
		mj_set_task_id(C.db, j->id, "");
		mj_set_cluster(C.db, j->id, "", 0, 0);
		buf_addf(&reason, "task %d succeeded; next task %d", j->task_index + 1,
		         j->task_index + 2);
		mj_transition_run(C.db, j->id, MJ_ACTIVE_MASK, MJ_MASK(MJS_ALIVE), MJ_STARTING,
		                  MJS_ALIVE_WAITING, reason.p, j->node_status, j->exit_codes);
		logf_job(j->id, "%s", reason.p);
		break;
	case JP_SUCCEED:
		finish(j, MJ_SUCCEEDED,
		       d.before_cancel ? "succeeded (before the cancel took effect)" : "succeeded");
		break;
	case JP_FAIL:
		if (d.before_cancel)
			buf_adds(&reason, "the task failed (before the cancel took effect)");
		else
			buf_addf(&reason, "%s (exit codes %s)",
			         d.status == MJ_FAILED ? "the task failed" : "setup failed",
			         codes.p);
		finish(j, d.status, reason.p);
		break;
	case JP_RESTART:
		buf_addf(&reason, "failed (exit codes %s); restart %d of max_restarts_on_errors %d",
		         codes.p, j->restarts + 1, j->max_restarts);
		recover(j, reason.p, 1);
		break;
	case JP_RECOVER:
		if (d.code >= 0)
			buf_addf(&reason, "exit code %d is in recover_on_exit_codes, attempt %d",
			         d.code, j->recoveries + 1);
		else
			buf_addf(&reason, "%s, attempt %d",
			         *j->probe_error ? j->probe_error : "its node lost the job",
			         j->recoveries + 1);
		recover(j, reason.p, 0);
		break;
	case JP_CANCELLED: finish(j, MJ_CANCELLED, "cancelled on its cluster"); break;
	}
	buf_release(&codes);
	buf_release(&reason);
	return 0;
}

/*
 * Job groups: once a group's primary members have all ended, each auxiliary member is
 * cancelled at the last primary's end plus its delay (jobs_group_decide()), by the path of
 * `jobs cancel` (its reason names the group). Returns the earliest such time still ahead
 * (0: none): the loop wakes then.
 */
static double group_cancels(void)
{
	int64_t *gids = NULL;
	size_t ngids = 0, g;
	double next = 0, now = now_wall();

	if (mj_groups_with_aux(C.db, &gids, &ngids))
		return now + (double)CLEANUP_RETRY_MS / 1000;
	for (g = 0; g < ngids; g++) {
		struct jobs_group_member *v;
		struct mjob *m = NULL;
		size_t n = 0, k;
		double due;

		if (mj_group(C.db, gids[g], &m, &n))
			continue;
		v = xcalloc(n ? n : 1, sizeof(*v));
		for (k = 0; k < n; k++) {
			v[k].primary = m[k].group_primary;
			v[k].ended = mj_status_terminal(m[k].status);
			v[k].cancel_asked = m[k].cancel_requested != 0;
			v[k].ended_at = m[k].ended_at;
			v[k].delay_s = (double)m[k].group_delay_s;
		}
		due = jobs_group_decide(v, n, now);
		if (due > 0 && (!next || due < next))
			next = due;
		for (k = 0; k < n; k++) {
			if (!v[k].cancel || mj_cancel_aux(C.db, m[k].id))
				continue;
			logf_job(m[k].id,
			         "cancelling: auxiliary task of job group %s, its primary "
			         "tasks ended",
			         m[k].group_name);
			C.want_cancels = 1;
		}
		for (k = 0; k < n; k++)
			mjob_free(&m[k]);
		free(m);
		free(v);
	}
	free(gids);
	return next;
}

/* Cancels asked for by `jobs cancel` (or by a job group, for its auxiliary tasks). */
static int apply_cancel(const struct mjob *j, void *arg)
{
	char why[MJ_CANCEL_REASON_MAX];

	(void)arg;
	if (!j->cancel_requested || mj_status_terminal(j->status))
		return 0;
	if (j->sched == MJS_LAUNCHING) {
		/* Its worker finishes first (never killed half way: nothing is left behind). */
		if (j->status != MJ_CANCELLING)
			mj_transition(C.db, j->id, MJ_ACTIVE_MASK, MJ_MASK(MJS_LAUNCHING),
			              MJ_CANCELLING, -1,
			              "cancelling: waiting for its launch to end");
		return 0;
	}
	if (holds_cluster(j)) {
		mj_transition(C.db, j->id, MJ_ACTIVE_MASK, MJ_ANY, MJ_CANCELLING, MJS_DONE,
		              "cancelling: releasing its cluster");
		release_cluster(j, 0);
		logf_job(j->id, "CANCELLING: releasing %s", j->cluster);
	} else {
		finish(j, MJ_CANCELLED, mj_cancel_reason(j, why, sizeof(why)));
	}
	return 0;
}

/* CANCELLING jobs whose clusters are all released (a crash between the two steps). */
static int settle_cancel(const struct mjob *j, void *arg)
{
	char why[MJ_CANCEL_REASON_MAX], *reason;

	(void)arg;
	if (j->status != MJ_CANCELLING || j->sched != MJS_DONE)
		return 0;
	/* Asked per job (an index): a scan of every cleanup per job grew as N squared. */
	if (mj_cleanup_count_job(C.db, j->id))
		return 0;
	reason = xasprintf("%s; its cluster is released", mj_cancel_reason(j, why, sizeof(why)));
	mj_transition(C.db, j->id, MJ_MASK(MJ_CANCELLING), MJ_MASK(MJS_DONE), MJ_CANCELLED, -1,
	              reason);
	free(reason);
	return 0;
}

static void settle_cancels(void)
{
	mj_each(C.db, 1, MJ_ANY, settle_cancel, NULL);
}

struct backoffs {
	double next;           /* the earliest backoff still running; 0 none */
	struct mj_cleanup *cu; /* the releases still to be done */
	size_t n;
};

/*
 * Backoffs that have run out go back to waiting for a launch slot, once no release of the
 * job's clusters is left to do (a recovery whose old copy may still run waits for it).
 */
static int apply_backoff(const struct mjob *j, void *arg)
{
	struct backoffs *b = arg;
	double now = now_wall();

	if (jobs_backoff_over(j, b->cu, b->n, now))
		mj_transition(C.db, j->id, MJ_ACTIVE_MASK, MJ_MASK(MJS_ALIVE_BACKOFF), -1,
		              MJS_ALIVE_WAITING, NULL);
	else if (j->next_try_at > now && (!b->next || j->next_try_at < b->next))
		b->next = j->next_try_at;
	return 0;
}

/* The backoffs' turn; returns when the earliest one still running ends (0: none). */
static double backoffs(void)
{
	struct backoffs b = {0};

	/* Without the list nothing may leave a backoff: a release might be pending. */
	if (mj_cleanups(C.db, &b.cu, &b.n))
		return now_wall() + (double)CLEANUP_RETRY_MS / 1000;
	mj_each(C.db, 0, MJ_MASK(MJS_ALIVE_BACKOFF), apply_backoff, &b);
	mj_cleanups_free(b.cu, b.n);
	return b.next;
}

/* A LAUNCHING job nobody holds (the controller died before letting a worker go). */
static int requeue_unheld(const struct mjob *j, void *arg)
{
	struct mj_holder *h = ((struct mj_holder **)arg)[0];
	size_t n = (size_t)(uintptr_t)((void **)arg)[1], i;

	for (i = 0; i < n; i++)
		if (h[i].job_id == j->id)
			return 0;
	mj_transition(C.db, j->id, MJ_ACTIVE_MASK, MJ_MASK(MJS_LAUNCHING),
	              j->status == MJ_STARTING ? MJ_PENDING : -1, MJS_ALIVE_WAITING,
	              "the controller restarted before its launch began");
	return 0;
}

/* Holders of a previous controller: gone ones are reclaimed. */
static void check_holders(int at_start)
{
	struct mj_holder *h = NULL;
	size_t n = 0, i;

	if (mj_holders(C.db, &h, &n))
		return;
	for (i = 0; i < n; i++) {
		if (find_kid(h[i].pid))
			continue;
		/* Alive, or it cannot be told: it will finish on its own, never launched twice. */
		if (h[i].pid > 0 && h[i].pid_start && proc_alive(h[i].pid, h[i].pid_start) != 0)
			continue;
		if (h[i].job_id > 0) {
			logf_job(h[i].job_id, "its launch worker (pid %d) is gone", h[i].pid);
			launch_done(h[i].job_id, -1);
			C.want_cancels = 1;
		} else {
			mj_holder_clear(C.db, h[i].job_id, h[i].pid);
		}
	}
	if (at_start) {
		void *arg[2] = {h, (void *)(uintptr_t)n};

		mj_each(C.db, 0, MJ_MASK(MJS_LAUNCHING), requeue_unheld, arg);
	}
	free(h);
}

/* Clusters named skiff-job-ID that no live job uses any more (left by a crash). */
static void reclaim_clusters(void)
{
	struct cluster *v = NULL;
	size_t n = 0, i;
	struct mj_cleanup *cu = NULL;
	size_t ncu = 0, k;

	if (st_cluster_list(C.db, &v, &n))
		return;
	mj_cleanups(C.db, &cu, &ncu);
	for (i = 0; i < n; i++) {
		int64_t id;
		struct mjob j;
		int keep = 0;

		if (!mj_managed_cluster(v[i].name, &id) || !id)
			continue;
		for (k = 0; k < ncu; k++)
			keep |= !strcmp(cu[k].cluster, v[i].name);
		if (keep)
			continue;
		if (!mj_get(C.db, id, &j)) {
			keep = !mj_status_terminal(j.status) && j.status != MJ_CANCELLING &&
			       (!strcmp(j.cluster, v[i].name) || j.sched == MJS_LAUNCHING ||
			        j.sched == MJS_ALIVE_WAITING || j.sched == MJS_ALIVE_BACKOFF);
			mjob_free(&j);
		}
		if (!keep) {
			logf_job(id, "releasing cluster %s, which no job uses", v[i].name);
			mj_cleanup_add(C.db, id, v[i].name, 0);
		}
	}
	mj_cleanups_free(cu, ncu);
	clusters_free(v, n);
}

static int count_cleanups(void)
{
	return mj_cleanup_count(C.db);
}

static void reap(void)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct kid *k = find_kid(pid);
		int64_t job, *jobs;
		size_t njobs;

		if (!k)
			continue;
		job = k->job;
		jobs = k->jobs;
		njobs = k->njobs;
		*k = C.kids[--C.nkids];
		if (job > 0) {
			int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
			size_t i;

			/*
			 * A batch's worker stopped at its first failure, which its code is; the
			 * ones launched before it are ALIVE, those after it waiting again.
			 */
			for (i = 0; i < (jobs ? njobs : 1); i++)
				launch_done(jobs ? jobs[i] : job, code);
			C.want_cancels = 1; /* a cancel may have waited for this launch */
		} else {
			mj_holder_clear(C.db, job, pid);
			if (job == MJ_HOLDER_WATCH)
				C.probes_ready = 1;
			else if (job == MJ_HOLDER_CLEANUP)
				C.want_settle = C.want_keep = 1; /* a cancelled pool job ended */
		}
		free(jobs);
	}
}

static void publish_meta(int counts[MJS_N])
{
	char v[64];
	long rss_kb = 0, pages;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		long size;

		if (fscanf(f, "%ld %ld", &size, &pages) == 2)
			rss_kb = pages * (sysconf(_SC_PAGESIZE) / 1024);
		fclose(f);
	}
	xsnprintf(v, sizeof(v), "%ld", rss_kb);
	mj_meta_set(C.db, "controller_rss_kb", v);
	xsnprintf(v, sizeof(v), "%d", counts[MJS_ALIVE]);
	mj_meta_set(C.db, "alive", v);
}

/* One pass over what may have changed; returns the ms until the next timed duty. */
static int tick(void)
{
	int counts[MJS_N], active, wait = 60000;
	double next_backoff = 0, next_group = 0, wake;
	int64_t now = now_ms();

	reap();
	if (now - C.last_holder_ms >= 1000) {
		check_holders(0);
		C.last_holder_ms = now;
	}
	/* What the nodes said first: a job that ended before its cancel keeps its end. */
	if (C.probes_ready) {
		C.probes_ready = 0;
		mj_each(C.db, 0, MJ_MASK(MJS_ALIVE), apply_probe, NULL);
	}
	/* After the probes (a primary's end), before the cancels (which carry it out). */
	next_group = group_cancels();
	if (C.want_cancels) {
		C.want_cancels = 0;
		mj_each(C.db, 1, MJ_CANCEL_REQUESTED, apply_cancel, NULL);
	}
	if (C.want_settle) {
		C.want_settle = 0;
		settle_cancels();
	}
	next_backoff = backoffs();
	while (launch_kids() < C.lim.max_launching) {
		size_t n, i;

		/* A worker launches one job or a batch of pool jobs (each counts as launching). */
		if (mj_claim_batch(C.db, C.lim.max_launching * C.lim.launch_batch,
		                   C.lim.max_running, (size_t)C.lim.launch_batch, C.batch, &n) ||
		    !n)
			break;
		for (i = 0; i < n; i++)
			logf_job(C.batch[i], "LAUNCHING%s",
			         n > 1 ? " (in a batch on the pool)" : "");
		if (start_worker("launch", C.batch, n)) {
			for (i = 0; i < n; i++)
				launch_done(C.batch[i], -1);
			break;
		}
	}
	mj_sched_counts(C.db, counts);
	if (counts[MJS_ALIVE] && !have_kid(MJ_HOLDER_WATCH)) {
		if (now - C.last_watch_ms >= C.poll_ms) {
			C.last_watch_ms = now;
			publish_meta(counts);
			start_worker("watch", &(int64_t){MJ_HOLDER_WATCH}, 1);
		} else if (C.poll_ms - (now - C.last_watch_ms) < wait) {
			wait = (int)(C.poll_ms - (now - C.last_watch_ms));
		}
	}
	/*
	 * Logs of jobs that ended are kept soon; the retention runs when the controller
	 * starts, then every gc_ms (not on every turn: it reads every kept job's size).
	 */
	if (now - C.last_gc_ms >= C.gc_ms)
		C.want_gc = 1;
	else if (C.gc_ms - (now - C.last_gc_ms) < wait)
		wait = (int)(C.gc_ms - (now - C.last_gc_ms));
	if ((C.want_keep || C.want_gc) && !have_kid(MJ_HOLDER_KEEP)) {
		if (C.want_gc)
			C.last_gc_ms = now;
		start_worker(C.want_gc ? "keep-gc" : "keep", &(int64_t){MJ_HOLDER_KEEP}, 1);
		C.want_keep = C.want_gc = 0;
	}
	/*
	 * A cleanup left rows (deferred ones, an unreachable node): the next run waits a
	 * while, so that the worker is not restarted in a loop.
	 */
	if (!have_kid(MJ_HOLDER_CLEANUP) && count_cleanups()) {
		if (now - C.last_cleanup_ms >= CLEANUP_RETRY_MS) {
			C.last_cleanup_ms = now;
			start_worker("cleanup", &(int64_t){MJ_HOLDER_CLEANUP}, 1);
		} else if (CLEANUP_RETRY_MS - (now - C.last_cleanup_ms) < wait) {
			wait = (int)(CLEANUP_RETRY_MS - (now - C.last_cleanup_ms));
		}
	}
	/* The loop wakes for the first backoff to end, or auxiliary task to cancel. */
	wake = next_backoff > 0 && (!next_group || next_backoff < next_group) ? next_backoff
	                                                                      : next_group;
	if (wake > 0) {
		double ms = (wake - now_wall()) * 1000 + 5;

		if (ms < wait)
			wait = ms < 0 ? 0 : (int)ms;
	}
	active = counts[MJS_WAITING] + counts[MJS_LAUNCHING] + counts[MJS_ALIVE] +
	         counts[MJS_ALIVE_WAITING] + counts[MJS_ALIVE_BACKOFF] + counts[MJS_INACTIVE];
	/* A keep still to start (one was running) holds the exit: an ended job's logs wait. */
	if (active || busy_kids() || count_cleanups() || C.want_keep) {
		C.idle_since_ms = 0;
	} else {
		if (!C.idle_since_ms)
			C.idle_since_ms = now;
		if (now - C.idle_since_ms >= C.idle_s * 1000)
			C.stop = C.idle = 1;
		else if (C.idle_s * 1000 - (now - C.idle_since_ms) < wait)
			wait = (int)(C.idle_s * 1000 - (now - C.idle_since_ms));
	}
	{
		/* Workers of a previous controller (no SIGCHLD for them): checked each second. */
		struct mj_holder *h = NULL;
		size_t n = 0;

		mj_holders(C.db, &h, &n);
		if (n > C.nkids && wait > 1000)
			wait = 1000;
		free(h);
	}
	return wait;
}

static int setup_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	C.sig_fd = daemon_signals(&set);
	return C.sig_fd < 0 ? -1 : 0;
}

static void read_signals(void)
{
	struct signalfd_siginfo si;

	while (read(C.sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGUSR1)
			C.want_cancels = 1;
		else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT ||
		         si.ssi_signo == SIGHUP)
			C.stop = 1;
	}
}

int jobs_controller_main(int argc, char **argv)
{
	char v[32], why[256];
	int r;

	(void)argv;
	if (argc > 1)
		return error("usage: skiff __jobs-controller (no arguments)"), EXIT_USAGE;
	memset(&C, 0, sizeof(C));
	C.lock_fd = C.sig_fd = -1;
	/* Its workers are told alive from dead by pid and start time: /proc must say them. */
	if (proc_ns_check(why, sizeof(why)))
		return error("cannot start the jobs controller: %s", why), EXIT_UNAVAILABLE;
	r = take_lock();
	if (r == -EEXIST)
		return EXIT_OK; /* one runs already: it does the work */
	if (r)
		return EXIT_FAIL;
	if (st_launcher_open(0, &C.db))
		return EXIT_FAIL;
	srandom((unsigned)(getpid() ^ now_ms()));
	jobs_limits_compute(&C.lim);
	C.batch = xcalloc((size_t)C.lim.launch_batch, sizeof(*C.batch));
	C.poll_ms = jobs_env_long("SKIFF_JOBS_POLL_MS", 2000, 50, 600000);
	C.backoff_s = jobs_env_long("SKIFF_JOBS_BACKOFF_S", 60, 0, 3600);
	C.attempts_max = jobs_env_long("SKIFF_JOBS_LAUNCH_ATTEMPTS", 3, 1, 1000);
	C.idle_s = jobs_env_long("SKIFF_JOBS_IDLE_S", 60, 0, 86400);
	C.probe_max = jobs_env_long("SKIFF_JOBS_PROBE_FAILURES", 3, 1, 1000);
	C.lost_ms = jobs_env_long("SKIFF_JOBS_LOST_MS", JOBS_LOST_MS, 0, 86400000);
	C.gc_ms =
	        1000 * jobs_env_long("SKIFF_JOBS_KEPT_GC_S", JOBS_KEPT_GC_INTERVAL_S, 1, 86400 * 7);
	xsnprintf(v, sizeof(v), "%d", C.lim.max_launching);
	mj_meta_set(C.db, "max_launching", v);
	xsnprintf(v, sizeof(v), "%d", C.lim.max_running);
	mj_meta_set(C.db, "max_running", v);
	xsnprintf(v, sizeof(v), "%ld", (long)getpid());
	mj_meta_set(C.db, "controller_pid", v);
	printf("controller %ld up: %d launching, %d running (%d cores, %lld MiB, %lld KiB per "
	       "running job; pool jobs launched in batches of up to %d)\n",
	       (long)getpid(), C.lim.max_launching, C.lim.max_running, C.lim.cores,
	       C.lim.mem_bytes >> 20, C.lim.job_cost_bytes >> 10, C.lim.launch_batch);
	fflush(stdout);
	if (setup_signals())
		goto out;
	/* Reconcile what a previous controller left: holders, unheld launches, clusters. */
	check_holders(1);
	reclaim_clusters();
	C.want_cancels = 1;
	C.want_settle = 1;
	C.probes_ready = 0;
	while (!C.stop) {
		struct daemon_fd fd = {C.sig_fd, 0};
		int wait = tick(), n;

		if (C.stop)
			break;
		n = daemon_wait(&fd, 1, wait < 0 ? -1 : now_ms() + wait);
		if (n < 0) {
			errno = -n;
			error_errno("poll");
			break;
		}
		if (n > 0)
			read_signals();
	}
	printf("controller %ld exiting (%s)\n", (long)getpid(), C.stop ? "idle or signalled" : "");
out:
	/* Workers run on: each finishes and records its own result. */
	for (size_t i = 0; i < C.nkids; i++)
		free(C.kids[i].jobs);
	free(C.kids);
	free(C.batch);
	if (C.sig_fd >= 0)
		close(C.sig_fd);
	if (C.lock_fd >= 0)
		close(C.lock_fd);
	/*
	 * A job submitted while we decided to leave may have signalled us too late. Now that
	 * the lock is free, a `jobs launch` after this point starts a new controller; one
	 * before it is in the table: look once more, and start a successor for it.
	 */
	if (C.idle && C.db && jobs_unfinished(C.db) > 0)
		jobs_controller_kick();
	st_close(C.db);
	return EXIT_OK;
}
