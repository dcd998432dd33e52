/*
 * A cluster's life: its record opened live, its lock, what `status` shows, down, stop
 * and start (autostop is autostop.c).
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/launch/cl_direct.h"
#include "bootstrap/launch/engine_internal.h"
#include "bootstrap/launch/install.h"
#include "bootstrap/launch/ssh_config.h"
#include "lib/exit.h"
#include "lib/lock.h"
#include "lib/log.h"
#include "lib/proc.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "state/jobs.h"
#include "state/node.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

/* ---- opening, locking ------------------------------------------------------------------ */

int eng_open_cluster(struct st_db *ldb, const struct cluster *c, struct clive *cl)
{
	struct cluster_node *nodes = NULL;
	size_t n = 0;
	int r = st_cluster_nodes(ldb, c->name, &nodes, &n);

	if (r)
		return error("cluster %s has no nodes recorded", c->name);
	r = cl_open(cl, c, nodes, n);
	cluster_nodes_free(nodes, n);
	return r;
}

int eng_open(struct st_db *ldb, const char *name, struct cluster *c, struct clive *cl)
{
	if (st_cluster_get(ldb, name, c))
		return error("cluster %s does not exist (see 'skiff status')", name), -ENOENT;
	if (eng_open_cluster(ldb, c, cl)) {
		cluster_free(c);
		return -EIO;
	}
	return 0;
}

static int lock_cluster(const char *name, const char *what, unsigned flags)
{
	const char *home = skiff_home();
	char *path, *subject;
	int fd;

	if (!home)
		return -ENOENT;
	if (infra_validate_cluster_name(name))
		return -EINVAL; /* printed; and never a path outside the locks dir */
	path = xasprintf("%s/locks/cluster-%s.lock", home, name);
	subject = xasprintf("cluster %s", name);
	fd = lock_take(path, subject, what, flags);
	free(path);
	free(subject);
	return fd;
}

int eng_lock_cluster(const char *name, const char *what)
{
	return lock_cluster(name, what, LOCK_TAKE_WAIT);
}

int eng_trylock_cluster(const char *name, const char *what)
{
	return lock_cluster(name, what, 0);
}

int eng_ssh(struct st_db *ldb, const char *name, const char *command, int tty)
{
	struct runner_io io = {RUNNER_INHERIT, RUNNER_INHERIT, RUNNER_INHERIT};
	struct cluster c;
	struct clive cl;
	pid_t pid;
	int status = 0, r;

	r = eng_open(ldb, name, &c, &cl);
	if (r)
		return r;
	r = cl.n ? runner_spawn(cl.nodes[0].r, command, tty, &io, &pid) : -ENODEV;
	if (!r) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		r = status_to_code(status);
	}
	cluster_free(&c);
	cl_close(&cl);
	return r;
}

int64_t eng_managed_active(struct st_db *ldb, const char *name)
{
	if (!mj_managed_cluster(name, NULL) || st_version(ldb) < 2)
		return 0;
	return mj_count_active_on(ldb, name);
}

/* ---- status ------------------------------------------------------------------------------ */

/*
 * The status shown for a cluster: the recorded one, or ENDED when what held its nodes is
 * gone (a Slurm allocation that Slurm ended: time limit, preemption, scancel), said once
 * on stderr.
 */
static const char *shown_status(struct st_db *ldb, const struct cluster *c)
{
	struct buf what = BUF_INIT(0), state = BUF_INIT(0);
	struct infra inf;
	int alive = 1;

	if (!infra_parse(c->infra, &inf)) {
		if (inf.ops->alive)
			alive = inf.ops->alive(ldb, c->name, &what, &state);
		if (!alive)
			warning("cluster %s: its %s %s has ended (%s); 'skiff down %s' removes it",
			        c->name, inf.ops->holder, what.p, state.p, c->name);
		infra_release(&inf);
	}
	buf_release(&what);
	buf_release(&state);
	return alive ? cluster_status_name(c->status) : "ENDED";
}

void eng_clusters_free(struct eng_cluster *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		cluster_free(&v[i].c);
		cl_pings_free(v[i].asked, v[i].nnodes);
		cluster_nodes_free(v[i].nodes, v[i].nnodes);
	}
	free(v);
}

/* Whether name is one of names[0..n), or n is 0 (every name). */
/* Names and globs ("dev-*", "run?") as SkyPilot's commands take them; none: all. */
static int named(const char *name, char *const *names, size_t n)
{
	size_t k;

	for (k = 0; k < n; k++)
		if (!fnmatch(names[k], name, 0))
			return 1;
	return !n;
}

/*
 * -r: every node of an UP cluster is asked; one that does not answer makes the cluster
 * INIT, SkyPilot's abnormal cluster (a dead worker host is as much a broken cluster as a
 * dead head). Each such node is named in a warning; what each said goes in ec->asked,
 * by rank (a node the cluster records but cannot open is one that did not answer).
 */
static const char *refreshed(struct st_db *ldb, struct eng_cluster *ec)
{
	struct cl_ping *got;
	struct clive cl;
	size_t silent, i, k;

	if (ec->c.status != CLUSTER_UP || strcmp(ec->shown, "UP") || !ec->c.num_nodes)
		return ec->shown;
	if (eng_open_cluster(ldb, &ec->c, &cl))
		return "INIT";
	if (!cl.n) {
		cl_close(&cl);
		warning("cluster %s: no node is recorded: shown INIT", ec->c.name);
		return "INIT";
	}
	got = xcalloc(cl.n, sizeof(*got));
	silent = cl_ping_all(&cl, ENG_REFRESH_CALL_MS, got);
	ec->asked = xcalloc(ec->nnodes ? ec->nnodes : 1, sizeof(*ec->asked));
	for (k = 0; k < ec->nnodes; k++) {
		for (i = 0; i < cl.n && cl.nodes[i].rank != ec->nodes[k].rank; i++)
			;
		if (i < cl.n) {
			ec->asked[k] = got[i];
			memset(&got[i], 0, sizeof(got[i]));
		} else {
			ec->asked[k].why = xstrdup("not opened");
		}
	}
	cl_pings_free(got, cl.n);
	cl_close(&cl);
	if (silent)
		warning("cluster %s: %zu of its %d nodes do not answer: shown INIT", ec->c.name,
		        silent, ec->c.num_nodes);
	return silent ? "INIT" : ec->shown;
}

int eng_status(struct st_db *ldb, char *const *names, size_t n_names, unsigned flags,
               struct eng_cluster **out, size_t *nout)
{
	struct cluster *v = NULL;
	struct eng_cluster *res;
	size_t n = 0, i, kept = 0;
	int r = st_cluster_list(ldb, &v, &n), looked = 0;

	*out = NULL;
	*nout = 0;
	if (r)
		return r;
	/* Those whose autostop may have fired first: they may be stopped or gone now. */
	for (i = 0; i < n; i++)
		if (v[i].status == CLUSTER_UP && v[i].autostop_minutes >= 0 &&
		    named(v[i].name, names, n_names)) {
			eng_autostop_look(ldb, v[i].name);
			looked = 1;
		}
	if (looked) {
		for (i = 0; i < n; i++)
			cluster_free(&v[i]);
		free(v);
		v = NULL;
		n = 0;
		r = st_cluster_list(ldb, &v, &n);
		if (r)
			return r;
	}
	res = xcalloc(n ? n : 1, sizeof(*res));
	for (i = 0; i < n; i++) {
		if (!named(v[i].name, names, n_names)) {
			cluster_free(&v[i]);
			continue;
		}
		res[kept].c = v[i];
		st_cluster_nodes(ldb, v[i].name, &res[kept].nodes, &res[kept].nnodes);
		res[kept].shown = shown_status(ldb, &res[kept].c);
		if (flags & ENG_STATUS_REFRESH)
			res[kept].shown = refreshed(ldb, &res[kept]);
		kept++;
	}
	free(v);
	*out = res;
	*nout = kept;
	return 0;
}

/* ---- the launcher's own processes for a cluster ----------------------------------------- */

char *eng_gang_env(const char *cluster)
{
	const char *home = skiff_home();

	return xasprintf(ENG_GANG_ENV "=%s/%s", home ? home : "", cluster);
}

/*
 * Ends the cluster's gang watchers on this machine, and what they started (their `node
 * call` sessions): left alone, one would read its ranks' nodes going away as the job
 * failing, and outlive the cluster.
 */
static void stop_gang_watchers(const char *cluster)
{
	char *entry = eng_gang_env(cluster);
	struct proc_scope scope = {0};

	scope.env = entry;
	if (proc_scope_kill(&scope))
		debug("cluster %s: its gang watchers are stopped", cluster);
	free(entry);
}

/* The ssh masters of the cluster's nodes (ControlPersist would keep them for minutes). */
static void close_masters(struct clive *cl)
{
	size_t i;

	for (i = 0; i < cl->n; i++) {
		runner_ssh_close_master(cl->nodes[i].r);
		cl_direct_forget(&cl->nodes[i]);
	}
}

/* ---- down, stop, start ------------------------------------------------------------------- */

static void log_at(enum log_level lvl, const char *fmt, ...) SKIFF_PRINTF(2, 3);
static void log_at(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog_msg(lvl, fmt, ap);
	va_end(ap);
}

/* One node's part of down and stop: `node down --all` and its answer (a thread a node). */
struct stop_job {
	struct cnode *nd;
	pthread_t th;
	int started;
	/* down: then `node release` (the node's answer is the stop's; a build without that
	 * command, or a node whose supervisor stopped by itself, only loses the cleanup) */
	int release;
	int release_only; /* the head that autodown stopped: its release alone */
	const char *hold; /* release: the cluster's hold to let go of (cl_hold_args()) */
	int r;            /* runner_capture()'s */
	int status;       /* the node's exit status */
	struct buf out, err;
};

static void *stop_thread(void *arg)
{
	struct stop_job *j = arg;
	const char *hold = j->hold ? j->hold : "";
	char *script = j->release_only ? xasprintf("%s node release%s >&2 || :", j->nd->exe, hold)
	               : j->release
	                       ? xasprintf("%s node down --all && { %s node release%s >&2 || :; }",
	                                   j->nd->exe, j->nd->exe, hold)
	                       : xasprintf("exec %s node down --all", j->nd->exe);

	/* The node's runner is this thread's alone (runner.h); errors are printed. */
	j->r = runner_capture(j->nd->r, script, NULL, 0, &j->out, &j->err, ENG_DOWN_NODE_MS,
	                      &j->status);
	free(script);
	return NULL;
}

/*
 * The nodes that are directories here with our own skiff: their `node down --all` runs
 * in this process, all of them at once (sup_down_nodes()), so that what is left of them
 * is looked for in one reading of /proc a look, not one a node: a thousand local nodes
 * cost a thousand scans of three thousand processes otherwise. A node with another skiff
 * (an earlier build's), or whose skiff is gone, is asked as any node is.
 */
struct here_down {
	struct stop_job **jobs;
	struct sup_down *d;
	size_t n;
};

/* The node's state dir here (malloc'd) when it can be taken down in this process. */
static char *down_here_home(const struct cnode *nd)
{
	const char *home = nd->r->ops->home_here ? nd->r->ops->home_here(nd->r) : NULL;
	char *exe;
	int ours;

	if (!home || !cl_node_ours(nd))
		return NULL;
	exe = boot_exe_path_here(nd->exe, home);
	ours = exe && !access(exe, X_OK);
	free(exe);
	return ours ? xasprintf("%s/" SKIFF_HOME_DIR, home) : NULL;
}

/*
 * A local node whose skiff is gone (its directory removed by hand, say, or made again
 * since by a late request without the binary): there is nothing to ask `node down --all`
 * with, and what may still run as the node is the teardown's to kill
 * (infra_local_remove() finds it by its HOME).
 */
static int local_node_bare(const struct cnode *nd)
{
	const char *home = nd->r->ops->home_here ? nd->r->ops->home_here(nd->r) : NULL;
	char *exe = home ? boot_exe_path_here(nd->exe, home) : NULL;
	int bare = exe && access(exe, X_OK) < 0 && errno == ENOENT;

	free(exe);
	return bare;
}

/* Takes them down; each node's answer as its `node down --all` would give it. */
static void here_down(struct here_down *h)
{
	size_t i;

	debug("%zu node(s) that are directories here: taken down in this process", h->n);
	sup_down_nodes(h->d, h->n);
	for (i = 0; i < h->n; i++) {
		struct stop_job *j = h->jobs[i];

		j->r = 0;
		j->status = h->d[i].r ? EXIT_FAIL << 8 : 0;
		sup_down_say(h->d[i].r, &h->d[i].what, &j->out);
		buf_release(&h->d[i].what);
		free((char *)h->d[i].home);
	}
}

/*
 * Cancels the jobs and stops everything of the cluster on nodes from..cl->n, all at once;
 * with release (down), each then removes what the cluster put there (`node release`), and
 * the nodes before from (stopped by themselves) are asked for that alone, best effort.
 * Returns how many nodes may still run something of it (did not answer, or said so), each
 * said in one line: an error when fail, else a warning. *unreachable: how many of them
 * could not be reached.
 */
static size_t stop_nodes(struct clive *cl, size_t from, int fail, int release, size_t *unreachable)
{
	struct stop_job *jobs = xcalloc(cl->n ? cl->n : 1, sizeof(*jobs));
	enum log_level say = fail ? LOG_ERROR : LOG_WARN;
	/* As many as the cluster has nodes, at most. */
	struct here_down here = {xcalloc(cl->n ? cl->n : 1, sizeof(*here.jobs)),
	                         xcalloc(cl->n ? cl->n : 1, sizeof(*here.d)), 0};
	char *hold = NULL, *home;
	size_t i, bad = 0;

	/* Only nodes that outlive the cluster are released (the others go with it). */
	for (i = 0; release && i < cl->n && !hold; i++)
		if (cl->nodes[i].stays && cl->nodes[i].exe)
			/* Without it the release goes on, and the hosts stay held: said there. */
			hold = cl_hold_args(cl->name, 0);
	*unreachable = 0;
	for (i = release ? 0 : from; i < cl->n; i++) {
		if (!cl->nodes[i].exe)
			continue; /* never bootstrapped: nothing of skiff runs there */
		if (i < from && !cl->nodes[i].stays)
			continue; /* stopped by itself, and nothing to release */
		if (release && cl->ops->kind == INFRA_LOCAL && local_node_bare(&cl->nodes[i]))
			continue; /* the teardown kills what still runs as it */
		jobs[i].nd = &cl->nodes[i];
		jobs[i].release = release && cl->nodes[i].stays;
		jobs[i].hold = hold;
		jobs[i].release_only = i < from;
		buf_init(&jobs[i].out, 1 << 16);
		buf_init(&jobs[i].err, 1 << 16);
		if (!jobs[i].release && !jobs[i].release_only &&
		    (home = down_here_home(&cl->nodes[i]))) {
			here.jobs[here.n] = &jobs[i];
			here.d[here.n].home = home;
			buf_init(&here.d[here.n++].what, 1 << 10);
			continue;
		}
		jobs[i].started = !pthread_create(&jobs[i].th, NULL, stop_thread, &jobs[i]);
		/* Out of threads: this one is stopped here, the others go on. */
		if (!jobs[i].started)
			stop_thread(&jobs[i]);
	}
	/* Meanwhile, those here; their answers are filled in as the others' come. */
	if (here.n)
		here_down(&here);
	for (i = release ? 0 : from; i < cl->n; i++) {
		struct stop_job *j = &jobs[i];

		if (!j->nd)
			continue;
		if (j->started)
			pthread_join(j->th, NULL);
		if (j->release && !j->r) {
			/* The release is best effort; what it could not do is said. */
			const char *e =
			        strstr(j->err.p ? j->err.p : "", "cannot release this node: ");

			if (e)
				warning("cluster %s: node %s (rank %d): %.*s", cl->name,
				        j->nd->name, j->nd->rank, (int)strcspn(e, "\n"), e);
		}
		if (j->release_only) {
			buf_release(&j->out);
			buf_release(&j->err);
			continue;
		}
		buf_rtrim(&j->out);
		if (j->r == -EHOSTUNREACH) {
			++*unreachable;
			log_at(say,
			       "cluster %s: node %s (rank %d) does not answer: cannot tell whether "
			       "anything of the cluster still runs there",
			       cl->name, j->nd->name, j->nd->rank);
		} else if (j->r && j->r != -ENOBUFS) {
			log_at(say,
			       "cluster %s: node %s (rank %d) did not say that everything of the "
			       "cluster stopped there: %s",
			       cl->name, j->nd->name, j->nd->rank, strerror(-j->r));
		} else if (status_to_code(j->status)) {
			const char *line = strrchr(j->out.p, '\n');

			line = line ? line + 1 : j->out.p;
			log_at(say, "cluster %s: node %s (rank %d): %s", cl->name, j->nd->name,
			       j->nd->rank,
			       *line ? line : "its skiff could not stop everything of the cluster");
		} else {
			buf_release(&j->out);
			buf_release(&j->err);
			continue;
		}
		bad++;
		buf_release(&j->out);
		buf_release(&j->err);
	}
	free(jobs);
	free(here.jobs);
	free(here.d);
	free(hold);
	return bad;
}

/* An infra where nothing can be paused (slurm) refuses stop and start (printed). */
static int stop_refused(const struct clive *cl, const char *cmd)
{
	if (!(cl->ops->flags & INFRA_NO_STOP))
		return 0;
	return error("cluster %s is a %s: '%s' is not supported there (it cannot be paused "
	             "and resumed); 'skiff down %s' releases it",
	             cl->name, cl->ops->holder, cmd, cl->name),
	       -ENOTSUP;
}

int eng_down_locked(struct st_db *ldb, const char *name, unsigned flags)
{
	struct cluster c;
	struct clive cl;
	struct buf what = BUF_INIT(0), state = BUF_INIT(0);
	struct infra inf;
	int r, alive = 1, keep = (flags & ENG_DL_KEEP) != 0;
	size_t left = 0, unreachable = 0;
	/* Machines that stay after down (local, ssh): what runs there does not go with them. */
	int confirm;

	r = eng_open(ldb, name, &c, &cl);
	if (r && (flags & ENG_DL_PURGE) && !keep) {
		/* Not even opened (its pool file is gone, say): forgotten as it is. */
		warning("cluster %s cannot be opened; forgotten anyway (--purge)", name);
		return st_cluster_delete(ldb, name);
	}
	if (r)
		return r;
	if (keep && (r = stop_refused(&cl, "stop")))
		goto done;
	confirm = !keep && (flags & ENG_DL_CONFIRM) && !(flags & ENG_DL_PURGE) &&
	          (cl.ops->flags & INFRA_PROCS_STAY);
	r = infra_parse(c.infra, &inf);
	if (r)
		goto done;
	/* What held the nodes is gone (an allocation that ended): nothing to stop. */
	if (inf.ops->alive) {
		alive = inf.ops->alive(ldb, name, &what, &state);
		if (!alive && !(flags & ENG_DL_HEAD_STOPPED))
			info("cluster %s: its %s %s had already ended (%s)", name, inf.ops->holder,
			     what.p, state.p);
	}
	/* Before the nodes: a watcher would take their going for the job failing. */
	stop_gang_watchers(name);
	/* Where hosts outlive the cluster, what it put there goes (elsewhere, with the node). */
	if (alive)
		left = stop_nodes(&cl, (flags & ENG_DL_HEAD_STOPPED) ? 1 : 0, confirm, !keep,
		                  &unreachable);
	close_masters(&cl);
	if (confirm && left) {
		error("cluster %s is kept: %zu of its nodes may still run something of it "
		      "(above); run 'skiff down %s' again once they answer, or with --purge to "
		      "forget it anyway",
		      name, left, name);
		r = -EBUSY;
		goto release;
	}
	if (left && !keep && (flags & ENG_DL_PURGE))
		warning("cluster %s: forgotten anyway (--purge), though %zu of its nodes may still "
		        "run something of it (above): that is yours to clean up",
		        name, left);
	else if (unreachable && !keep)
		warning("cluster %s: some nodes could not be reached; their bookings are released "
		        "anyway",
		        name);
	if (!keep) {
		/*
		 * local: the node dirs; containers, pods: those skiff started; slurm: the
		 * allocation. The cluster is forgotten only once they are gone, so that `down`
		 * can be run again.
		 */
		r = infra_teardown(&inf, ldb, &cl, name);
		if (r && (flags & ENG_DL_PURGE)) {
			warning("cluster %s: its %s nodes could not all be removed; forgotten anyway "
			        "(--purge): what is left of them is yours to clean up",
			        name, inf.spec);
			r = 0;
		} else if (r) {
			error("cluster %s: its %s nodes could not be removed; it is kept, run "
			      "'skiff down %s' again (or with --purge to forget it anyway)",
			      name, inf.spec, name);
		}
		if (!r && (r = st_cluster_delete(ldb, name)))
			error("cluster %s: its nodes are gone, but it cannot be forgotten (%s); run "
			      "'skiff down %s' again",
			      name, strerror(-r), name);
		if (!r)
			eng_ssh_config_remove(name);
	} else {
		/* What the infra stops beyond the supervisors (`start` starts it again). */
		r = inf.ops->stop ? inf.ops->stop(&inf, name) : 0;
		if (r)
			r = error("cluster %s: its %s nodes could not be stopped", name, inf.spec);
		if (!r)
			r = st_cluster_set_status(ldb, name, CLUSTER_MASK_ALL, CLUSTER_STOPPED);
	}
release:
	infra_release(&inf);
done:
	buf_release(&what);
	buf_release(&state);
	cluster_free(&c);
	cl_close(&cl);
	return r;
}

int eng_down(struct st_db *ldb, const char *name, unsigned how)
{
	struct cluster c;
	int keep = (how & ENG_DOWN_STOP) != 0, r, lock_fd;

	if (st_cluster_get(ldb, name, &c))
		return error("cluster %s does not exist (see 'skiff status')", name), -ENOENT;
	cluster_free(&c);
	/* A launch, exec, start or another down of it finishes first. */
	lock_fd = eng_lock_cluster(name, keep ? "skiff stop" : "skiff down");
	if (lock_fd < 0)
		return lock_fd;
	if (st_cluster_get(ldb, name, &c)) {
		lock_release(lock_fd);
		if (keep)
			return error("cluster %s was taken down by another command meanwhile",
			             name),
			       -ENOENT;
		return ENG_DOWN_BY_OTHER;
	}
	cluster_free(&c);
	r = eng_down_locked(ldb, name,
	                    (keep ? ENG_DL_KEEP : 0) | (how & ENG_DOWN_PURGE ? ENG_DL_PURGE : 0) |
	                            (how & ENG_DOWN_CONFIRM ? ENG_DL_CONFIRM : 0));
	lock_release(lock_fd);
	return r ? r : ENG_DOWN_DONE;
}

int eng_start_nodes(struct st_db *ldb, struct cluster *c, struct clive *cl)
{
	struct infra inf;
	char *name;
	int r = 0;

	if (!cl->ops->start || infra_parse(c->infra, &inf))
		return 0;
	name = xstrdup(c->name);
	if (inf.ops->start(&inf, ldb, name))
		r = error("cluster %s: its %s nodes could not be started", name, inf.spec);
	infra_release(&inf);
	cluster_free(c);
	cl_close(cl);
	if (eng_open(ldb, name, c, cl))
		r = -1;
	free(name);
	return r;
}

int eng_start(struct st_db *ldb, const char *name)
{
	struct cluster c;
	struct clive cl;
	size_t i;
	int lock_fd, r;

	lock_fd = eng_lock_cluster(name, "skiff start");
	if (lock_fd < 0)
		return lock_fd;
	r = eng_open(ldb, name, &c, &cl);
	if (r) {
		lock_release(lock_fd);
		return r;
	}
	r = stop_refused(&cl, "start");
	if (!r)
		r = eng_start_nodes(ldb, &c, &cl);
	if (!r)
		r = cl_bootstrap(&cl);
	if (!r) {
		for (i = 0; i < cl.n; i++) {
			st_cluster_node_set_exe(ldb, c.name, cl.nodes[i].rank, cl.nodes[i].exe);
			st_cluster_node_set_addr(ldb, c.name, cl.nodes[i].rank, cl.nodes[i].addr);
		}
		st_cluster_set_status(ldb, c.name, CLUSTER_MASK_ALL, CLUSTER_UP);
		if (c.autostop_minutes >= 0)
			eng_set_autostop(ldb, &cl, c.autostop_minutes, c.autostop_down,
			                 c.autostop_wait_for);
	}
	lock_release(lock_fd);
	cluster_free(&c);
	cl_close(&cl);
	return r;
}
