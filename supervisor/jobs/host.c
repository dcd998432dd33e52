/*
 * The controller host's side of a managed-jobs controller on a cluster of its own
 * (docs/managed-jobs.md, "Placement"): its home, the files launchers send it (the pools
 * and keys their jobs use), the submit a launcher hands it, and the keeper that starts the
 * controller again whenever it has work and none runs (a kill -9, a crash), with no
 * launcher alive. The launcher's side is supervisor/jobs/remote.c.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/renv/renv.h"
#include "lib/buf.h"
#include "lib/daemon.h"
#include "lib/exit.h"
#include "lib/log.h"
#include "lib/proc.h"
#include "lib/proto.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/jobs.h"
#include "supervisor/jobs/jobs.h"
#include "supervisor/jobs/policy.h"
#include "lib/banned.h"

/* How soon the keeper starts a controller that died (kill -9) again. */
#define KEEPER_CHECK_MS 1000
/* How long an older keeper or controller gets to leave after SIGTERM (an upgrade). */
#define KEEPER_STOP_WAIT_MS 10000
/*
 * How long stopping the host waits for its launch and cleanup workers to end: with the
 * keeper's and the controller's KEEPER_STOP_WAIT_MS, within the launcher's call
 * (REMOTE_CALL_MS, 120 s, supervisor/jobs/remote.c).
 */
#define JOBS_HOST_STOP_WORKERS_MS 90000
/* --num-jobs as `jobs launch` bounds it. */
#define HOST_MAX_COPIES 100000

int jobs_host_enter(void)
{
	const char *home = user_home();
	char *dot, *dir, *files;
	int r = 0;

	if (!home)
		return error("the jobs controller's host has no home directory");
	dot = xasprintf("%s/.skiff", home);
	dir = xasprintf("%s/" JOBS_CONTROLLER_HOME, home);
	files = xasprintf("%s/" JOBS_FILES_DIR, dir);
	/* files/: the jobs' workdirs and mounts, as private as the rest. */
	if (ensure_private_dir(dot) || ensure_private_dir(dir) || ensure_private_dir(files))
		r = error_errno("cannot create '%s'", dir);
	else if (setenv("SKIFF_HOME", dir, 1) || setenv(JOBS_ON_CONTROLLER_ENV, "1", 1))
		r = error_errno("setenv");
	else if (!skiff_home() || strcmp(skiff_home(), dir))
		r = error("the jobs controller's home was decided too early (%s)", skiff_home());
	free(dot);
	free(dir);
	free(files);
	return r;
}

void jobs_host_env(const struct msg *m)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		const char *v = m->vals[i], *eq = strchr(v, '=');
		char *k;

		if (strcmp(m->keys[i], "env") || !eq || !starts_with(v, "SKIFF_JOBS_") ||
		    strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != (size_t)(eq - v))
			continue;
		k = xstrndup(v, (size_t)(eq - v));
		setenv(k, eq + 1, 1);
		free(k);
	}
}

/* ---- the files a launcher sends ------------------------------------------------------- */

/* One upload under files/, by its token, as the collector counts its jobs. */
struct upload {
	char token[JOBS_FILES_TOKEN_HEX + 1];
	struct jobs_files f;
	int64_t last_job; /* the job counted last: once per job, however many paths */
};

struct uploads {
	struct upload *v;
	size_t n;
	int unknown; /* a live job's paths could not be read */
};

static int by_token(const void *a, const void *b)
{
	return strcmp(((const struct upload *)a)->token, ((const struct upload *)b)->token);
}

/* Whether name is a token ship_files() (remote.c) makes: JOBS_FILES_TOKEN_HEX hex digits. */
static int is_token(const char *name, size_t len)
{
	return len == JOBS_FILES_TOKEN_HEX && strspn(name, "0123456789abcdef") >= len;
}

/* Counts j toward every upload a path of its overrides points into. */
static int count_job(const struct mjob *j, void *arg)
{
	static const char mark[] = "/" JOBS_CONTROLLER_HOME "/" JOBS_FILES_DIR "/";
	struct uploads *u = arg;
	struct task_overrides o = TASK_OVERRIDES_INIT;
	size_t i;

	if (!j->overrides_len)
		return 0;
	if (task_overrides_decode(&o, j->overrides, j->overrides_len)) {
		task_overrides_release(&o);
		if (mj_status_terminal(j->status))
			return 0;
		/* What a live job needs is not known: nothing is removed this round. */
		u->unknown = 1;
		return 1;
	}
	for (i = 0; i < o.npaths; i++) {
		const char *p = strstr(o.path_to[i], mark), *end;
		struct upload key, *hit;

		if (!p)
			continue;
		p += sizeof(mark) - 1;
		end = strchr(p, '/');
		if (!end || !is_token(p, (size_t)(end - p)))
			continue;
		memcpy(key.token, p, JOBS_FILES_TOKEN_HEX);
		key.token[JOBS_FILES_TOKEN_HEX] = '\0';
		hit = bsearch(&key, u->v, u->n, sizeof(*u->v), by_token);
		if (!hit)
			continue;
		if (hit->last_job == j->id)
			continue;
		hit->last_job = j->id;
		hit->f.jobs++;
		hit->f.live += !mj_status_terminal(j->status);
	}
	task_overrides_release(&o);
	return 0;
}

int jobs_files_gc(struct st_db *db)
{
	const char *home = skiff_home();
	struct uploads u = {NULL, 0, 0};
	size_t cap = 0, i;
	struct dirent *de;
	char *dir;
	DIR *d;
	int r = 0, failed = 0;

	if (!home)
		return -ENOENT;
	dir = xasprintf("%s/" JOBS_FILES_DIR, home);
	d = opendir(dir);
	if (!d) {
		r = errno == ENOENT ? 0 : error_errno("cannot read '%s'", dir);
		free(dir);
		return r;
	}
	while ((de = readdir(d))) {
		struct upload *up;
		struct stat st;
		char *path;

		if (!is_token(de->d_name, strlen(de->d_name)))
			continue; /* not an upload: left alone */
		path = xasprintf("%s/%s", dir, de->d_name);
		if (!lstat(path, &st) && S_ISDIR(st.st_mode)) {
			u.v = xgrow(u.v, u.n, &cap, sizeof(*u.v));
			up = &u.v[u.n++];
			memset(up, 0, sizeof(*up));
			memcpy(up->token, de->d_name, sizeof(up->token));
			up->f.mtime = (double)st.st_mtime;
		}
		free(path);
	}
	closedir(d);
	if (u.n) {
		qsort(u.v, u.n, sizeof(*u.v), by_token);
		r = mj_each(db, 0, MJ_ANY, count_job, &u);
		if (!r && u.unknown)
			r = error(
			        "a live managed job's paths cannot be read: no upload is removed");
	}
	for (i = 0; !r && i < u.n; i++) {
		char *path;

		if (!jobs_files_gc_decide(&u.v[i].f, now_wall(), JOBS_FILES_GRACE_S))
			continue;
		path = xasprintf("%s/%s", dir, u.v[i].token);
		fprintf(stderr, "[keep] removing %s: %s\n", path,
		        u.v[i].f.jobs ? "every job that used these files has ended"
		                      : "no job named these files within the grace period");
		if (rm_rf(path))
			failed = -EIO;
		free(path);
	}
	free(u.v);
	free(dir);
	return r ? r : failed;
}

/*
 * config.yaml, keys/NAME or pools.d/NAME.yaml, NAME of [A-Za-z0-9._-] not starting with
 * a dot.
 */
static int rel_ok(const char *rel)
{
	const char *name = starts_with(rel, "keys/")      ? rel + 5
	                   : starts_with(rel, "pools.d/") ? rel + 8
	                                                  : NULL;
	size_t n;

	if (!strcmp(rel, "config.yaml"))
		return 1;
	if (!name || !*name || *name == '.')
		return 0;
	n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-");
	if (name[n] || n > NAME_MAX - 16)
		return 0;
	return name == rel + 5 || (n > 5 && !strcmp(name + n - 5, ".yaml"));
}

int jobs_host_put(const char *rel, const char *data, int *changed)
{
	const char *home = skiff_home();
	struct buf old = BUF_INIT((size_t)16 << 20);
	char *path, *dir;
	size_t len = strlen(data);
	int r = 0;

	*changed = 0;
	if (!home || !rel_ok(rel))
		return error("the jobs controller refuses to write '%s'", rel);
	path = xasprintf("%s/%s", home, rel);
	dir = strchr(rel, '/') ? xasprintf("%s/%.*s", home, (int)strcspn(rel, "/"), rel)
	                       : xstrdup(home);
	if (ensure_private_dir(dir)) {
		r = error_errno("cannot create '%s'", dir);
	} else if (buf_read_file(&old, path) < 0 || old.len != len || memcmp(old.p, data, len)) {
		*changed = 1;
		r = write_file_atomic(path, data, len, 0600);
	}
	buf_release(&old);
	free(path);
	free(dir);
	return r;
}

static int yaml_name(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 5 && !strcmp(d->d_name + n - 5, ".yaml");
}

int jobs_host_pools_rebuild(void)
{
	const char *home = skiff_home();
	struct yerrors errs = YERRORS_INIT;
	struct infra_pools pools = {0};
	struct buf all = BUF_INIT(0);
	struct dirent **v = NULL;
	char *dir, *path, *tmp;
	int n, i, r = 0;

	if (!home)
		return -ENOENT;
	dir = xasprintf("%s/pools.d", home);
	path = xasprintf("%s/" INFRA_POOLS_FILE, home);
	tmp = xasprintf("%s/.pools-check.yaml", home);
	n = scandir(dir, &v, yaml_name, alphasort);
	for (i = 0; i < n; i++) {
		struct buf one = BUF_INIT((size_t)16 << 20);
		char *f = xasprintf("%s/%s", dir, v[i]->d_name);

		if (buf_read_file(&one, f) < 0)
			r = error_errno("cannot read '%s'", f);
		buf_add(&all, one.p, one.len);
		buf_release(&one);
		free(f);
		free(v[i]);
	}
	free(v);
	/* Checked before it replaces the file the controller's launches read. */
	if (!r && n > 0 && !(r = write_file_atomic(tmp, all.p, all.len, 0600))) {
		r = infra_pools_load(&pools, tmp, &errs);
		yerr_print(&errs, stderr);
		infra_pools_release(&pools);
		if (!r)
			r = rename(tmp, path) ? error_errno("cannot rename '%s'", tmp) : 0;
		unlink(tmp);
	}
	yerr_release(&errs);
	buf_release(&all);
	free(dir);
	free(path);
	free(tmp);
	return r;
}

/* ---- the keeper ------------------------------------------------------------------------- */

/* 1 when pid runs this very binary. */
static int runs_us(int pid)
{
	char a[PATH_MAX], b[PATH_MAX], p[64];
	ssize_t n, m = readlink("/proc/self/exe", b, sizeof(b) - 1);

	/* Its number in /proc, which may be another pid namespace's (lib/proc.h). */
	n = proc_pid_path(pid, "exe", p, sizeof(p)) ? -1 : readlink(p, a, sizeof(a) - 1);
	if (n < 0 || m < 0)
		return 0;
	a[n] = b[m] = '\0';
	return !strcmp(a, b);
}

/* Waits (KEEPER_STOP_WAIT_MS at most) for pid to let go of lock. */
static int wait_unlocked(const char *lock, int pid, const char *what)
{
	int64_t until = now_ms() + KEEPER_STOP_WAIT_MS;

	if (!pid)
		return 0;
	while (jobs_lock_holder(lock) == pid && now_ms() < until)
		poll_ms(50);
	if (jobs_lock_holder(lock) != pid)
		return 0;
	warning("the jobs %s (pid %d) did not stop", what, pid);
	return -EBUSY;
}

/* SIGTERM to the holder of lock (when it is not us), then waits for it to let go. */
static void stop_other(const char *lock, const char *what)
{
	int pid = jobs_lock_holder(lock);

	if (!pid || runs_us(pid))
		return;
	info("the jobs %s (pid %d) runs another skiff build: restarting it with this one", what,
	     pid);
	kill(pid, SIGTERM);
	wait_unlocked(lock, pid, what);
}

/*
 * The workers the stopped controller left (holders whose process still runs): the
 * watcher and the keeper are told to stop; launch and cleanup workers are waited for
 * (jobs_host_stop_action()), JOBS_HOST_STOP_WORKERS_MS at most. How many still run then,
 * each named; -1 when the db cannot be read.
 */
static int workers_wait(void)
{
	/* SKIFF_JOBS_HOST_STOP_WAIT_S shortens it (the tests). */
	int64_t until = now_ms() + 1000 * jobs_env_long("SKIFF_JOBS_HOST_STOP_WAIT_S",
	                                                JOBS_HOST_STOP_WORKERS_MS / 1000, 0,
	                                                JOBS_HOST_STOP_WORKERS_MS / 1000);
	struct mj_holder *h = NULL;
	struct st_db *db = NULL;
	size_t n = 0, i;
	int left = 0, signalled = 0;

	if (st_launcher_open(0, &db))
		return -1;
	for (;;) {
		free(h);
		h = NULL;
		if (mj_holders(db, &h, &n)) {
			left = -1;
			break;
		}
		left = 0;
		for (i = 0; i < n; i++) {
			/* "Cannot tell" is alive: a worker is never taken for gone. */
			if (!proc_alive(h[i].pid, h[i].pid_start))
				continue;
			left++;
			if (!signalled && jobs_host_stop_action(h[i].job_id) == JOBS_STOP_SIGNAL)
				kill(h[i].pid, SIGTERM);
		}
		signalled = 1;
		if (!left || now_ms() >= until)
			break;
		poll_ms(100);
	}
	for (i = 0; left > 0 && i < n; i++)
		if (proc_alive(h[i].pid, h[i].pid_start))
			error("the jobs %s worker (pid %d) still runs", h[i].kind, h[i].pid);
	free(h);
	st_close(db);
	return left;
}

int jobs_host_stop(void)
{
	const struct jobs_paths *p = jobs_paths();
	const char *home = skiff_home();
	int pid, left;

	if (!p || !home)
		return EXIT_FAIL;
	/* The keeper first: else it would start the controller again. */
	if ((pid = jobs_lock_holder(p->keeper)))
		kill(pid, SIGTERM);
	if (wait_unlocked(p->keeper, pid, "keeper"))
		return error("the jobs controller's keeper did not stop: nothing removed"),
		       EXIT_FAIL;
	if ((pid = jobs_lock_holder(p->lock)))
		kill(pid, SIGTERM);
	if (wait_unlocked(p->lock, pid, "controller"))
		goto busy;
	/*
	 * Only what has stopped goes: a launch or cleanup worker still books or releases a
	 * cluster and records it in launcher.db; removed under it, that cluster would be
	 * recorded nowhere.
	 */
	left = workers_wait();
	if (left)
		goto busy;
	/* Its state goes with it, as with a controller VM: the keys and pools first. */
	if (rm_rf(home))
		return error("cannot remove '%s'", home), EXIT_FAIL;
	printf("the jobs controller stopped; %s removed\n", home);
	return EXIT_OK;
busy:
	/* Not stopped: the keeper takes the controller up again, and nothing is removed. */
	if (jobs_host_keep())
		warning("the jobs controller's keeper could not be started again");
	error("the jobs controller host is still busy: nothing removed; try again once its "
	      "workers have ended");
	return EXIT_FAIL;
}

int jobs_host_keep(void)
{
	const struct jobs_paths *p = jobs_paths();
	char *argv[] = {"skiff", "__jobs-keeper", NULL};
	pid_t pid;

	if (!p)
		return -ENOENT;
	stop_other(p->keeper, "keeper");
	stop_other(p->lock, "controller");
	if (jobs_lock_holder(p->keeper))
		return 0;
	return daemon_spawn(argv, p->log, -1, &pid);
}

int jobs_keeper_main(int argc, char **argv)
{
	const struct jobs_paths *p;
	struct st_db *db = NULL;
	sigset_t set;
	int lock, sig, stop = 0;

	(void)argv;
	if (argc > 1)
		return error("usage: skiff __jobs-keeper (no arguments)"), EXIT_USAGE;
	if (jobs_host_enter() || !(p = jobs_paths()))
		return EXIT_FAIL;
	lock = daemon_lock(p->keeper);
	if (lock == -EEXIST)
		return EXIT_OK; /* one keeps it already */
	if (lock < 0)
		return EXIT_FAIL;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sig = daemon_signals(&set);
	if (sig < 0 || st_launcher_open(0, &db))
		return EXIT_FAIL;
	printf("keeper %ld up: starting the controller whenever it has work and none runs\n",
	       (long)getpid());
	fflush(stdout);
	while (!stop) {
		struct daemon_fd fd = {sig, 0};
		struct signalfd_siginfo si;

		jobs_ensure_controller(db);
		if (daemon_wait(&fd, 1, now_ms() + KEEPER_CHECK_MS) > 0)
			while (read(sig, &si, sizeof(si)) == (ssize_t)sizeof(si))
				stop = 1;
	}
	printf("keeper %ld exiting (signalled)\n", (long)getpid());
	st_close(db);
	close(lock);
	return EXIT_OK;
}

/* ---- a submit --------------------------------------------------------------------------- */

/* The request's files; says which pools the host holds now that it did not before. */
static int put_files(const struct msg *m)
{
	const char *host = getenv("HOSTNAME");
	size_t i;
	int r = 0, pools = 0, keys = 0;
	struct buf names = BUF_INIT(0);
	char hn[256];

	for (i = 0; i + 1 < m->n && !r; i++) {
		int changed;

		if (strcmp(m->keys[i], "file_path") || strcmp(m->keys[i + 1], "file_data"))
			continue;
		r = jobs_host_put(m->vals[i], m->vals[i + 1], &changed);
		if (!strcmp(m->vals[i], "config.yaml")) {
			if (!r && changed)
				info("the jobs controller's host now holds this launcher's config file "
				     "(~/%s/config.yaml): its jobs.controller keys apply there",
				     JOBS_CONTROLLER_HOME);
		} else if (!r && changed && starts_with(m->vals[i], "pools.d/")) {
			buf_addf(&names, "%s%.*s", pools++ ? ", " : "",
			         (int)strlen(m->vals[i] + 8) - 5, m->vals[i] + 8);
		} else if (!r && changed) {
			keys++;
		}
		i++;
	}
	if (!r && pools && (r = jobs_host_pools_rebuild()) == 0) {
		if (!host && !gethostname(hn, sizeof(hn)))
			host = hn;
		/* The first time (or when they change): the user learns what the host holds. */
		info("the jobs controller's host %s now holds ssh pool(s) %s and %d key file(s) "
		     "they use (0600, in ~/%s): it launches the jobs' clusters with them",
		     host ? host : "", names.p, keys, JOBS_CONTROLLER_HOME);
	}
	buf_release(&names);
	return r;
}

int jobs_host_submit(const struct msg *m, void (*on_id)(int64_t id, void *arg), void *arg)
{
	struct task_overrides ov = TASK_OVERRIDES_INIT;
	struct task_list tl = TASK_LIST_INIT;
	struct yerrors errs = YERRORS_INIT;
	struct jobs_submit_req req = {0};
	struct msg om;
	struct st_db *db = NULL;
	const char *entry = msg_get(m, "entry"), *spec = msg_get(m, "spec");
	int64_t n = 1, prio = 0, id = 0;
	size_t i;
	int rc = EXIT_FAIL, r;

	msg_init(&om);
	if (!entry || (msg_get(m, "num_jobs") &&
	               (msg_get_int(m, "num_jobs", &n) || n < 1 || n > HOST_MAX_COPIES))) {
		error("a malformed submit: no entry, or a bad num_jobs");
		rc = EXIT_USAGE;
		goto out;
	}
	if (put_files(m))
		goto out;
	for (i = 0; i < m->n; i++) {
		const char *eq;

		if (strcmp(m->keys[i], "ov"))
			continue;
		eq = strchr(m->vals[i], '=');
		if (eq) {
			char *k = xstrndup(m->vals[i], (size_t)(eq - m->vals[i]));

			r = msg_add(&om, k, eq + 1);
			free(k);
			if (r)
				eq = NULL;
		}
		if (!eq) {
			error("a malformed submit: bad overrides");
			rc = EXIT_USAGE;
			goto out;
		}
	}
	if (om.n && task_overrides_decode(&ov, om.raw.p, om.raw.len))
		goto out;
	if (spec)
		r = task_parse_buf(&tl, entry, spec, strlen(spec), &errs);
	else
		r = (task_from_command(&tl, entry), 0);
	if (r || task_list_apply_overrides(&tl, &ov, &errs) ||
	    task_list_check_required(&tl, &errs, 0)) {
		yerr_print(&errs, stderr);
		rc = EXIT_INVALID;
		goto out;
	}
	req.entry = entry;
	req.spec = spec;
	req.cwd = skiff_home();
	req.infra = msg_get(m, "infra");
	req.recovery = msg_get(m, "recovery");
	if (msg_get(m, "priority") && !msg_get_int(m, "priority", &prio)) {
		req.priority = (int)prio;
		req.have_priority = 1;
	}
	if (st_launcher_open(0, &db))
		goto out;
	r = jobs_submit_n(db, &req, &tl, &ov, (long)n, on_id, arg, &id);
	rc = !r ? EXIT_OK : r == -EINVAL ? EXIT_INVALID : EXIT_FAIL;
out:
	st_close(db);
	msg_release(&om);
	yerr_release(&errs);
	task_list_release(&tl);
	task_overrides_release(&ov);
	return rc;
}

/* ---- a sync-down ------------------------------------------------------------------------ */

int jobs_host_sync_down(int64_t id)
{
	char *tmp = xasprintf("%s/.sync-down.XXXXXX", skiff_home());
	int rc;

	if (!mkdtemp(tmp)) {
		rc = (error_errno("cannot create '%s'", tmp), EXIT_FAIL);
		free(tmp);
		return rc;
	}
	rc = jobs_sync_down_to(id, tmp);
	if (jobs_tar_dir(tmp, 1) && rc == EXIT_OK)
		rc = EXIT_FAIL;
	rm_rf(tmp);
	free(tmp);
	return rc;
}

int64_t jobs_host_count(void)
{
	struct st_db *db;
	int64_t n;

	if (st_launcher_open(0, &db))
		return -1;
	n = jobs_unfinished(db);
	st_close(db);
	return n;
}
