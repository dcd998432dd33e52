/*
 * The supervisor's event loop: one epoll_wait with a deadline, over the listening socket,
 * client connections, a signalfd (SIGCHLD, SIGTERM, SIGINT, SIGHUP) and one pidfd per
 * re-adopted shim (epoll, not daemon_wait(): it serves many fds); its lock and its
 * signals are the daemon skeleton's (lib/daemon.h). Nothing here sleeps or polls: an idle
 * supervisor blocks until a request, a child exit or its next autostop deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/daemon.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "state/node.h"
#include "supervisor/daemon.h"
#include "supervisor/node.h"
#include "supervisor/policy.h"
#include "supervisor/sched.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

#define TAG_LISTEN SUP_TAG_LISTEN
#define TAG_SIGNAL SUP_TAG_SIGNAL
#define TAG_CONN SUP_TAG_CONN
#define TAG_PIDFD SUP_TAG_PIDFD
#define TAG_SHIFT SUP_TAG_SHIFT
#define TAG_OF(u) ((u) >> TAG_SHIFT)
#define VAL_OF(u) ((u) & ((1ULL << TAG_SHIFT) - 1))

#define MAX_PENDING_SCAN 100000
/* How often the supervisor checks that its socket is still its own (sock_gone()). */
#define SOCK_CHECK_MS 5000
/* A dispatch round that could not be recorded (a full disk, a busy database) is retried. */
#define DISPATCH_RETRY_MS 1000
/* Adopted shims without a pidfd are looked at this often. */
#define POLL_ADOPTED_MS 1000

/* The one supervisor of this process: the loop's, handed to requests.c and autostop.c. */
static struct sup S;

static int ep_add(int fd, uint64_t tag, uint64_t val, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.u64 = (tag << TAG_SHIFT) | val};

	if (epoll_ctl(S.epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return error_errno("epoll_ctl");
	return 0;
}

/* --- running jobs ---------------------------------------------------------------------- */

static struct runjob *sup_find_run(int64_t id)
{
	size_t i;

	for (i = 0; i < S.nrun; i++)
		if (S.run[i].id == id)
			return &S.run[i];
	return NULL;
}

static struct runjob *find_run_pid(pid_t pid)
{
	size_t i;

	for (i = 0; i < S.nrun; i++)
		if (S.run[i].shim_pid == pid)
			return &S.run[i];
	return NULL;
}

static struct runjob *add_run(int64_t id)
{
	struct runjob *r;

	if (S.nrun == S.caprun) {
		S.caprun = S.caprun ? S.caprun * 2 : 64;
		S.run = xrealloc(S.run, S.caprun * sizeof(*S.run));
	}
	r = &S.run[S.nrun++];
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->pidfd = -1;
	return r;
}

static void reserve(struct runjob *r, double cpus, double memory, int gpus, uint64_t gpu_mask)
{
	r->cpus = cpus;
	r->memory = memory;
	r->gpus = gpus;
	r->gpu_mask = gpu_mask;
	S.free.cpus -= cpus;
	S.free.memory -= memory;
	S.free.gpus -= gpus;
	S.gpu_free &= ~gpu_mask;
}

static void drop_run(struct runjob *r)
{
	S.free.cpus += r->cpus;
	S.free.memory += r->memory;
	S.free.gpus += r->gpus;
	S.gpu_free |= r->gpu_mask;
	if (r->pidfd >= 0) {
		close(r->pidfd); /* also removes it from the epoll set */
		S.npidfds--;
	}
	*r = S.run[--S.nrun];
}

/* SIGKILL to whatever is left of a job whose shim is gone (struct proc_scope). */
static void kill_job_scope(const struct job *j)
{
	char tag[PROC_TAG_MAX];
	struct proc_scope scope = {0, tag, 0};

	proc_job_tag(j->shim_pid, j->shim_start, tag);
	/* The recorded leader's group, unless that pid is another process by now. */
	if (proc_is(j->job_pid, j->job_start))
		scope.pgid = j->job_pid;
	proc_scope_kill(&scope);
}

/*
 * Acts on a job's fate (supervisor/policy.h) once its shim is found gone: queued again,
 * cancelled or failed; in the last two cases nothing of the job is left running. `how`
 * says what became of the shim, for the reason.
 */
static void settle_gone(struct job *j, enum job_fate fate, const char *how, int failed)
{
	char reason[200];

	switch (fate) {
	case FATE_REQUEUE:
		if (!st_job_requeue(S.db, j->id, j->shim_pid, failed))
			info("job %lld: its shim (pid %ld) %s before it started the job: queued "
			     "again",
			     (long long)j->id, (long)j->shim_pid, how);
		S.sched_needed = 1;
		/* A shim that failed may fail again: not in a tight loop. */
		if (failed)
			S.dispatch_retry_at = now_ms() + DISPATCH_RETRY_MS;
		break;
	case FATE_CANCEL:
		kill_job_scope(j);
		if (!st_job_finish(S.db, j->id, JOB_CANCELLED, j->exit_codes,
		                   j->status == JOB_PENDING
		                           ? "cancelled by the user before it started"
		                           : "cancelled by the user (its driver stopped at once)"))
			info("job %lld: cancelled; its shim (pid %ld) %s", (long long)j->id,
			     (long)j->shim_pid, how);
		break;
	case FATE_FAIL_DRIVER:
		kill_job_scope(j);
		if (j->status == JOB_PENDING)
			xsnprintf(
			        reason, sizeof(reason),
			        "its shims failed %d times before starting it (the last, pid %ld, "
			        "%s; see supervisor.log)",
			        j->failed_starts + failed, (long)j->shim_pid, how);
		else
			xsnprintf(reason, sizeof(reason), "job driver (shim pid %ld) %s",
			          (long)j->shim_pid, how);
		if (!st_job_finish(S.db, j->id, JOB_FAILED_DRIVER, j->exit_codes, reason))
			warning("job %lld: %s: FAILED_DRIVER", (long long)j->id, reason);
		break;
	case FATE_FAIL_REBOOTED:
		st_job_finish(S.db, j->id, JOB_FAILED_DRIVER, j->exit_codes,
		              "the node rebooted before the job ended");
		break;
	default: break;
	}
}

/*
 * A shim is gone. If it recorded a final status, that stands; a job it never started is
 * queued again; otherwise the job lost its driver: FAILED_DRIVER (or CANCELLED when that
 * was asked), and nothing of the job is left running.
 */
static void shim_gone(struct runjob *r, const char *how, int failed)
{
	struct job j;
	int64_t id = r->id;
	pid_t pid = r->shim_pid;

	drop_run(r);
	S.sched_needed = 1;
	if (st_job_get_state(S.db, id, &j))
		return;
	if (j.shim_pid == pid) {
		struct job_facts f = {j.status,
		                      1,
		                      !strcmp(j.boot_id, S.boot),
		                      0,
		                      j.cancel_requested,
		                      j.failed_starts + failed};

		settle_gone(&j, job_fate(&f), how, failed);
	}
	job_free(&j);
	sup_watch_notify(&S, id);
}

/* --- scheduling and dispatch ------------------------------------------------------------ */

struct pending_scan {
	struct sched_job *jobs;
	size_t n, cap;
};

static int collect_pending(const struct job_sched *j, void *arg)
{
	struct pending_scan *ps = arg;
	struct sched_job *s;

	/* Dispatch records shim_pid in the round's transaction, so none is running yet. */
	if (ps->n == ps->cap) {
		if (ps->cap >= MAX_PENDING_SCAN)
			return 1;
		ps->cap = ps->cap ? ps->cap * 2 : 64;
		ps->jobs = xrealloc(ps->jobs, ps->cap * sizeof(*ps->jobs));
	}
	s = &ps->jobs[ps->n++];
	memset(s, 0, sizeof(*s));
	s->id = j->id;
	s->priority = j->priority;
	s->req.cpus = j->cpus;
	s->req.memory = j->memory;
	s->req.gpus = j->gpus;
	s->bypassed = j->bypassed;
	return 0;
}

/* Spawns the shim for job id; returns 0 and the write end of its go-pipe in *go_fd. */
static int dispatch(const struct sched_job *sj, int *go_fd)
{
	char idbuf[32], gpus[4 * SCHED_MAX_GPUS];
	char *argv[] = {"skiff", "__shim", idbuf, NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	uint64_t mask = 0;
	struct runjob *r;
	int p[2], rc;
	pid_t pid;

	if (sj->req.gpus > 0) {
		mask = sched_take_gpus(&S.gpu_free, sj->req.gpus);
		S.gpu_free |= mask; /* reserve() takes it for real */
		if (!mask)
			return error("job %lld: no free GPU indices", (long long)sj->id);
	}
	xsnprintf(idbuf, sizeof(idbuf), "%lld", (long long)sj->id);
	if (pipe2(p, O_CLOEXEC) < 0)
		return error_errno("pipe");
	o.argv = argv;
	argv[0] = (char *)self_exec_path();
	if (!argv[0]) {
		close(p[0]);
		close(p[1]);
		return error("cannot find skiff's own executable to start the job shim");
	}
	o.fd_in = p[0];
	o.fd_out = S.log_fd;
	o.err_to_out = 1;
	o.pgrp = SPAWN_SESSION_NEW;
	rc = spawn(&o, &pid);
	close(p[0]);
	if (rc) {
		close(p[1]);
		errno = -rc;
		return error_errno("job %lld: cannot start its shim", (long long)sj->id);
	}
	sched_gpu_list(mask, gpus, sizeof(gpus));
	r = add_run(sj->id);
	r->shim_pid = pid;
	r->shim_start = proc_start_time(pid);
	r->child = 1;
	reserve(r, sj->req.cpus, sj->req.memory, sj->req.gpus, mask);
	rc = st_job_set_shim(S.db, sj->id, pid, r->shim_start, S.boot, gpus);
	if (rc) {
		/* Without the row the shim must not run: closing the pipe makes it exit. */
		close(p[1]);
		drop_run(r);
		return -EIO;
	}
	*go_fd = p[1];
	return 0;
}

/* Undoes a round that could not be recorded: its shims exit on EOF and free nothing. */
static void undo_round(const int64_t *ids, int *go, size_t ngo)
{
	size_t i;

	for (i = 0; i < ngo; i++) {
		struct runjob *r = sup_find_run(ids[i]);

		close(go[i]);
		if (r)
			drop_run(r);
	}
}

static void sup_schedule(void)
{
	struct pending_scan ps = {0};
	int *go = NULL, failed = 0;
	int64_t *ids = NULL;
	size_t i, ngo = 0;
	struct sched_res avail = S.free;

	S.sched_needed = 0;
	if (S.stopping || (S.dispatch_retry_at && now_ms() < S.dispatch_retry_at))
		return;
	S.dispatch_retry_at = 0;
	if (st_job_each_pending(S.db, collect_pending, &ps) || !ps.n)
		goto out;
	sched_sort(ps.jobs, ps.n);
	if (!sched_pick(&avail, ps.jobs, ps.n, S.max_bypass))
		goto out;
	go = xcalloc(ps.n, sizeof(*go));
	ids = xcalloc(ps.n, sizeof(*ids));
	/* One transaction for the whole round: records every shim before any may start. */
	if (st_begin(S.db)) {
		failed = 1;
		goto out;
	}
	for (i = 0; i < ps.n && !failed; i++) {
		struct sched_job *sj = &ps.jobs[i];
		int r;

		if (sj->bypass_add)
			for (int k = 0; k < sj->bypass_add; k++)
				st_job_add_bypass(S.db, sj->id);
		if (!sj->start)
			continue;
		if (ngo >= S.fds.dispatch) {
			/* The round holds a go-pipe per shim until its commit: the next goes on. */
			S.sched_needed = 1;
			break;
		}
		r = dispatch(sj, &go[ngo]);
		if (r == -EIO)
			failed = 1; /* the round's transaction cannot be trusted any more */
		else if (!r)
			ids[ngo++] = sj->id;
		else
			S.dispatch_retry_at = now_ms() + DISPATCH_RETRY_MS;
	}
	if (failed || st_commit(S.db)) {
		/* The shims were not recorded: they exit on EOF, the jobs stay PENDING. */
		if (failed)
			st_rollback(S.db);
		undo_round(ids, go, ngo);
		ngo = 0;
		failed = 1;
		goto out;
	}
	for (i = 0; i < ngo; i++) {
		if (write(go[i], "g", 1) != 1)
			warning("cannot signal a job shim to start: %s", strerror(errno));
		close(go[i]);
	}
	if (ngo)
		sup_autostop_activity(&S);
out:
	if (failed) {
		S.dispatch_retry_at = now_ms() + DISPATCH_RETRY_MS;
		warning_ratelimited(&S.dispatch_warned,
		                    "cannot record a dispatch round in the node database (see "
		                    "above); the jobs stay PENDING and it is tried again in %d ms",
		                    DISPATCH_RETRY_MS);
	}
	free(go);
	free(ids);
	free(ps.jobs);
}

/* --- children --------------------------------------------------------------------------- */

static void reap_children(void)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		struct runjob *r;
		char how[64];

		if (pid <= 0)
			break;
		r = find_run_pid(pid);
		if (!r) {
			sup_hook_reaped(&S, pid, status);
			continue;
		}
		if (WIFSIGNALED(status))
			xsnprintf(how, sizeof(how), "was killed by signal %d", WTERMSIG(status));
		else
			xsnprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(status));
		/* Status 0 before a start: it found its go missing, no failure of its own. */
		shim_gone(r, how, !(WIFEXITED(status) && WEXITSTATUS(status) == 0));
	}
}

static void pidfd_ready(int64_t id)
{
	struct runjob *r = sup_find_run(id);

	if (r)
		shim_gone(r, "exited", 0);
}

/* --- start-up: lock, reconcile, listen ------------------------------------------------- */

static int take_lock(void)
{
	int fd = daemon_lock(node_paths()->lock);

	if (fd < 0)
		return fd;
	S.lock_fd = fd;
	return 0;
}

struct reconcile {
	int adopted, requeued, failed, rebooted;
};

/* Watches an adopted shim: a pidfd while the budget allows, else polling. */
static void watch_adopted(struct runjob *r)
{
	r->pidfd = S.npidfds < S.fds.pidfds ? pidfd_open_pid(r->shim_pid) : -1;
	if (r->pidfd >= 0) {
		S.npidfds++;
		if (!ep_add(r->pidfd, TAG_PIDFD, (uint64_t)r->id, EPOLLIN))
			return;
		close(r->pidfd);
		r->pidfd = -1;
		S.npidfds--;
	}
	S.poll_orphans = 1;
}

static int reconcile_one(struct job *j, void *arg)
{
	struct reconcile *rc = arg;
	struct job_facts f = {j->status, j->shim_pid != 0,    !strcmp(j->boot_id, S.boot),
	                      0,         j->cancel_requested, j->failed_starts};
	enum job_fate fate;
	struct runjob *r;

	if (f.dispatched && f.same_boot)
		f.shim_alive = proc_alive(j->shim_pid, j->shim_start);
	fate = job_fate(&f);
	switch (fate) {
	case FATE_KEEP: return 0; /* pending, not dispatched: the scheduler will take it */
	case FATE_ADOPT:
		r = add_run(j->id);
		r->shim_pid = j->shim_pid;
		r->shim_start = j->shim_start;
		reserve(r, j->cpus, j->memory, j->gpus, sched_gpu_parse(j->gpu_ids));
		watch_adopted(r);
		rc->adopted++;
		if (f.shim_alive < 0)
			warning("job %lld: cannot tell whether its shim (pid %ld) lives (%s): "
			        "watching it",
			        (long long)j->id, (long)j->shim_pid, strerror(-f.shim_alive));
		return 0;
	case FATE_REQUEUE: rc->requeued++; break;
	case FATE_FAIL_REBOOTED: rc->rebooted++; break;
	default: rc->failed++; break;
	}
	settle_gone(j, fate, "died while the supervisor was down", 0);
	return 0;
}

static int reconcile(void)
{
	struct reconcile rc = {0};
	int r;

	r = st_job_each(S.db, JOB_MASK_ACTIVE, reconcile_one, &rc);
	if (r)
		return r;
	if (rc.adopted || rc.requeued || rc.failed || rc.rebooted)
		info("reconciled: %d running job(s) re-adopted, %d queued again (their shim "
		     "never started them), %d lost their shim, %d predate a reboot",
		     rc.adopted, rc.requeued, rc.failed, rc.rebooted);
	return 0;
}

static int open_listener(void)
{
	const struct node_paths *p = node_paths();
	mode_t old;
	int fd, r;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return error_errno("socket");
	/* We hold the lock, so any socket file left here is stale. */
	unlink(p->sock);
	old = umask(077);
	/* Any length: a long SKIFF_HOME is bound through its directory (lib/util.h). */
	r = unix_bind(fd, p->sock);
	umask(old);
	if (r) {
		close(fd);
		errno = -r;
		return error_errno("cannot bind '%s'", p->sock);
	}
	if (chmod(p->sock, 0600) < 0 || listen(fd, 4096) < 0) {
		close(fd);
		return error_errno("cannot listen on '%s'", p->sock);
	}
	S.lfd = fd;
	{
		struct stat st;

		if (!stat(p->sock, &st)) {
			S.sock_dev = st.st_dev;
			S.sock_ino = st.st_ino;
		}
	}
	S.sock_check_at = now_ms() + SOCK_CHECK_MS;
	return 0;
}

/*
 * 1 when our socket is no longer at its path: the state directory was removed (a
 * cluster torn down under us, maybe while a client had just started us again) or
 * another supervisor took the path. No client can reach us then, so we stop rather
 * than live on as an orphan. Looked at every SOCK_CHECK_MS.
 */
static int sock_gone(void)
{
	const struct node_paths *p = node_paths();
	struct stat st;

	if (stat(p->sock, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR;
	return st.st_dev != S.sock_dev || st.st_ino != S.sock_ino;
}

static void load_config(void)
{
	struct node_resources det;

	node_detect_resources(&det);
	S.cap.cpus = st_kv_get_double(S.db, "cpus", det.cpus);
	S.cap.memory = st_kv_get_double(S.db, "memory", det.memory);
	char *ids = st_kv_get(S.db, "gpu_ids");

	S.cap.gpus = (int)st_kv_get_double(S.db, "gpus", det.gpus);
	if (S.cap.gpus > SCHED_MAX_GPUS)
		S.cap.gpus = SCHED_MAX_GPUS;
	S.gpu_all = S.cap.gpus >= 64 ? ~0ULL : ((1ULL << S.cap.gpus) - 1);
	/* A share of a node (supervisor/hold.h): its own GPUs, by the node's indexes. */
	if (ids && *ids) {
		S.gpu_all = sched_gpu_parse(ids);
		S.cap.gpus = __builtin_popcountll(S.gpu_all);
	}
	free(ids);
	S.max_bypass = (int)st_kv_get_double(S.db, "max_bypass", 20);
	S.cancel_grace = st_kv_get_double(S.db, "cancel_grace", 10);
}

/* Recomputes what is free from the capacity and the running set (after a config change). */
static void sup_recompute_free(void)
{
	size_t i;

	S.free.cpus = S.cap.cpus;
	S.free.memory = S.cap.memory;
	S.free.gpus = S.cap.gpus;
	S.gpu_free = S.gpu_all;
	for (i = 0; i < S.nrun; i++) {
		S.free.cpus -= S.run[i].cpus;
		S.free.memory -= S.run[i].memory;
		S.free.gpus -= S.run[i].gpus;
		S.gpu_free &= ~S.run[i].gpu_mask;
	}
}

static void sup_reload_config(void)
{
	load_config();
	sup_recompute_free();
	S.sched_needed = 1;
}

/*
 * The soft limit goes up to the hard one; what there is, is shared out (fd_budget()) so
 * that no kind of fd can starve the others: the listener, a reconcile's /proc reads and a
 * dispatch round always find one.
 */
static void raise_nofile(void)
{
	uint64_t n = nofile_raise();

	fd_budget(n, &S.fds);
	if (n < 2 * FD_RESERVE)
		warning("only %llu file descriptors (ulimit -n): the supervisor keeps %d for "
		        "itself, and serves %zu connections at once",
		        (unsigned long long)n, FD_RESERVE, S.fds.conns);
}

static int setup_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	S.sig_fd = daemon_signals(&set);
	return S.sig_fd < 0 ? -1 : 0;
}

static void handle_signals(void)
{
	struct signalfd_siginfo si;

	while (read(S.sig_fd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD: reap_children(); break;
		case SIGTERM:
		case SIGINT:
			info("signal %d: shutting down (jobs keep running)", (int)si.ssi_signo);
			S.stopping = 1;
			break;
		case SIGHUP:
			info("SIGHUP: reloading configuration");
			sup_reload_config();
			break;
		}
	}
}

/* Without pidfds (old kernels), adopted shims are checked at each wake-up and every 1 s. */
static void poll_adopted(void)
{
	size_t i = 0;

	while (i < S.nrun) {
		struct runjob *r = &S.run[i];

		if (!r->child && r->pidfd < 0 && proc_alive(r->shim_pid, r->shim_start) == 0) {
			shim_gone(r, "exited", 0);
			continue;
		}
		i++;
	}
}

static int next_timeout(void)
{
	int64_t now = now_ms(), t = -1;

	if (S.autostop_deadline > 0)
		t = S.autostop_deadline - now;
	if (S.hook_deadline > 0 && (t < 0 || S.hook_deadline - now < t))
		t = S.hook_deadline - now;
	if (t < 0 && (S.autostop_deadline > 0 || S.hook_deadline > 0))
		t = 0;
	if (S.poll_orphans && (t < 0 || t > POLL_ADOPTED_MS))
		t = POLL_ADOPTED_MS;
	if (S.dispatch_retry_at > 0 && (t < 0 || S.dispatch_retry_at - now < t))
		t = S.dispatch_retry_at > now ? S.dispatch_retry_at - now : 0;
	if (S.listen_retry_at > 0 && (t < 0 || S.listen_retry_at - now < t))
		t = S.listen_retry_at > now ? S.listen_retry_at - now : 0;
	if (S.conn_sweep_at > 0 && (t < 0 || S.conn_sweep_at - now < t))
		t = S.conn_sweep_at > now ? S.conn_sweep_at - now : 0;
	if (S.sched_needed)
		t = 0;
	if (S.sock_check_at > 0 && (t < 0 || S.sock_check_at - now < t))
		t = S.sock_check_at > now ? S.sock_check_at - now : 0;
	if (t < 0)
		return -1;
	return t > 3600000 ? 3600000 : (int)t;
}

/* Says on the starter's pipe that we listen, once (sup_main()). */
static void say_ready(int *fd)
{
	if (*fd < 0)
		return;
	if (write(*fd, "\n", 1) < 0)
		debug("cannot write to the readiness pipe: %s", strerror(errno));
	close(*fd);
	*fd = -1;
}

int sup_main(int ready_fd)
{
	const struct node_paths *p = node_paths();
	struct epoll_event evs[64];
	char why[256];
	int r, i;

	/* Not for the jobs: a shim or hook started before we listen would hold it open. */
	if (ready_fd >= 0 && fcntl(ready_fd, F_SETFD, FD_CLOEXEC) < 0)
		ready_fd = -1;
	memset(&S, 0, sizeof(S));
	S.lock_fd = S.lfd = S.sig_fd = S.epfd = -1;
	if (!p || node_ensure_dirs())
		return 1;
	S.log_fd = open(p->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (S.log_fd < 0)
		return error_errno("cannot open '%s'", p->log), 1;
	log_set_fd(S.log_fd, 1);
	log_set_prog("skiff-supervisor");
	/* A /proc that cannot be mapped would make live shims look dead (lib/proc.h). */
	if (proc_ns_check(why, sizeof(why)))
		return error("cannot start: %s", why), 1;
	r = take_lock();
	if (r == -EEXIST)
		return SUP_EXIT_ALREADY_RUNNING;
	if (r)
		return 1;
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		warning("cannot become a subreaper: %s", strerror(errno));
	raise_nofile();
	if (setup_signals())
		return 1;
	S.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (S.epfd < 0)
		return error_errno("epoll_create1"), 1;
	if (st_open(p->db, &st_node_schema, 0, &S.db))
		return 1;
	boot_id(S.boot);
	S.started_at = now_wall();
	load_config();
	sup_recompute_free();
	if (reconcile())
		return 1;
	if (open_listener())
		return 1;
	if (ep_add(S.lfd, TAG_LISTEN, 0, EPOLLIN) || ep_add(S.sig_fd, TAG_SIGNAL, 0, EPOLLIN))
		return 1;
	sup_autostop_load(&S);
	info("supervisor %s started (pid %ld, %g CPUs, %.1f GiB, %d GPUs)", skiff_version,
	     (long)getpid(), S.cap.cpus, S.cap.memory, S.cap.gpus);
	say_ready(&ready_fd);
	/* Jobs may have ended while we were down. */
	reap_children();
	S.sched_needed = 1;

	while (!S.stopping) {
		int n = epoll_wait(S.epfd, evs, (int)ARRAY_SIZE(evs), next_timeout());

		if (n < 0 && errno != EINTR) {
			error_errno("epoll_wait");
			break;
		}
		for (i = 0; i < n; i++) {
			uint64_t u = evs[i].data.u64;

			switch (TAG_OF(u)) {
			case TAG_LISTEN:
				sup_accept(&S);
				if (!S.conn_sweep_at)
					S.conn_sweep_at = now_ms() + 1;
				break;
			case TAG_SIGNAL: handle_signals(); break;
			case TAG_CONN: sup_conn_event(&S, (int)VAL_OF(u), evs[i].events); break;
			case TAG_PIDFD: pidfd_ready((int64_t)VAL_OF(u)); break;
			}
		}
		if (S.poll_orphans)
			poll_adopted();
		if (S.reload_needed) {
			S.reload_needed = 0;
			sup_reload_config();
		}
		if (S.listen_retry_at && now_ms() >= S.listen_retry_at)
			sup_listen_resume(&S);
		if (S.conn_sweep_at && now_ms() >= S.conn_sweep_at)
			S.conn_sweep_at = sup_conns_sweep();
		if (S.dispatch_retry_at && now_ms() >= S.dispatch_retry_at)
			S.sched_needed = 1;
		if (S.sched_needed)
			sup_schedule();
		sup_autostop_check(&S);
		if (S.sock_check_at > 0 && now_ms() >= S.sock_check_at) {
			S.sock_check_at = now_ms() + SOCK_CHECK_MS;
			if (sock_gone()) {
				info("the control socket %s is gone (the state directory was removed, "
				     "or another supervisor took it): stopping",
				     node_paths()->sock);
				S.stopping = 1;
			}
		}
	}

	info("supervisor stopping; %zu job(s) keep running under their shims", S.nrun);
	unlink(p->sock);
	/*
	 * The process ends here with its database connection, its clients' connections, its
	 * descriptors and its memory held: the kernel takes them all at once, the lock and
	 * the database's locks with them (everything written is committed; a close would not
	 * checkpoint either: NO_CKPT_ON_CLOSE). Freeing them one by one unmapped each emptied
	 * allocator group, SQLite's cached statements' among them: 27 of the 58 unmaps of a
	 * node's down, each a TLB shootdown on every CPU the supervisor ran on. What is held
	 * stays reachable from S for leak checkers, as the shim's does.
	 */
	return 0;
}
