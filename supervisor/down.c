/*
 * `node down --all`: the node's part of the launcher's `down` and `stop`. Every job is
 * cancelled, the supervisor is asked to stop, and then it returns only once nothing of the
 * node runs any more: no process whose executable is one of the node's skiff binaries
 * ($SKIFF_HOME/bin: the supervisor, its shims, followers, `node call` sessions, install
 * stubs), no process of a job those shims ran (its group and session, its
 * SKIFF_JOB_TAG: lib/proc.h), and none holding the supervisor's lock (a supervisor that
 * /proc no longer names as it ends). The steps and their deadlines are down_step()
 * (supervisor/policy.h); what survives SIGKILL is named in the answer.
 *
 * Plain `node down` is not this: it leaves the jobs running for the next `node up`.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/daemon.h"
#include "lib/log.h"
#include "lib/proc.h"
#include "lib/util.h"
#include "state/db.h"
#include "state/node.h"
#include "supervisor/node.h"
#include "supervisor/policy.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

/* At most this many processes are named in the answer; the rest are counted. */
#define DOWN_NAMED_MAX 8
/* Of each, the start of its command line. */
#define DOWN_CMDLINE_MAX 96

/* A job whose shim may still run, as the node db has it. */
struct down_job {
	int64_t id;
	char tag[PROC_TAG_MAX];
	pid_t leader;
	uint64_t leader_start;
};

struct down_jobs {
	struct down_job *v;
	size_t n, alloc;
	double grace_s; /* the longest cancel grace among them */
};

/* Whether a down waits for the job: its shim may still run. */
static int down_keeps(const struct job_shim *j)
{
	return j->shim_pid &&
	       (!job_status_terminal(j->status) || proc_is(j->shim_pid, j->shim_start));
}

static void keep(struct down_jobs *d, int64_t id, pid_t shim, uint64_t shim_start, pid_t leader,
                 uint64_t leader_start, double grace)
{
	struct down_job *k;

	d->v = xgrow(d->v, d->n, &d->alloc, sizeof(*d->v));
	k = &d->v[d->n++];
	k->id = id;
	proc_job_tag(shim, shim_start, k->tag);
	k->leader = leader;
	k->leader_start = leader_start;
	if (grace > d->grace_s)
		d->grace_s = grace;
}

static int keep_job(const struct job_shim *j, void *arg)
{
	if (down_keeps(j))
		keep(arg, j->id, j->shim_pid, j->shim_start, j->job_pid, j->job_start,
		     j->cancel_grace);
	return 0;
}

/*
 * The rows in the supervisor's answer to a shutdown that asks for them (DOWN_ROWS_FIELD):
 * a job a field, "ID SHIM_PID SHIM_START LEADER LEADER_START GRACE", read by its own
 * connection as it stops, so that a down of a thousand nodes opens none of their
 * databases again; more than DOWN_ROWS_MAX, or a supervisor that does not send them
 * (another build's), and the database is read as before.
 */
#define DOWN_ROWS_FIELD "job"
#define DOWN_ROWS_MAX 100000

struct rows_out {
	struct msg *m;
	size_t n;
};

static int row_out(const struct job_shim *j, void *arg)
{
	struct rows_out *o = arg;

	if (!down_keeps(j))
		return 0;
	if (o->n++ < DOWN_ROWS_MAX)
		msg_addf(o->m, DOWN_ROWS_FIELD, "%lld %ld %llu %ld %llu %.17g", (long long)j->id,
		         (long)j->shim_pid, (unsigned long long)j->shim_start, (long)j->job_pid,
		         (unsigned long long)j->job_start, j->cancel_grace);
	return 0;
}

void sup_down_rows(struct st_db *db, struct msg *m)
{
	struct rows_out o = {m, 0};

	if (st_job_each_shim(db, row_out, &o) || o.n > DOWN_ROWS_MAX)
		return;
	/* The cluster lets the node go: the next one there starts without its autostop. */
	if (sup_autostop_forget_in(db))
		msg_add(m, "autostop_kept", "1");
	msg_add(m, "rows", "1");
}

/* The rows of a shutdown's answer into d; 0, or -1 when it has none to trust. */
static int rows_in(const struct msg *m, struct down_jobs *d)
{
	size_t i;

	if (!msg_get(m, "rows"))
		return -1;
	for (i = 0; i < m->n; i++) {
		long long id;
		long shim, leader;
		unsigned long long shim_start, leader_start;
		double grace;

		if (strcmp(m->keys[i], DOWN_ROWS_FIELD))
			continue;
		if (sscanf(m->vals[i], "%lld %ld %llu %ld %llu %lf", &id, &shim, &shim_start,
		           &leader, &leader_start, &grace) != 6) {
			d->n = 0;
			d->grace_s = 0;
			return -1;
		}
		keep(d, id, (pid_t)shim, shim_start, (pid_t)leader, leader_start, grace);
	}
	return 0;
}

/* "pid N (skiff node logs ..., state S)" of a process (/proc's nr, our pid), for the answer. */
static void describe(struct buf *out, long nr, pid_t pid, char state)
{
	char path[64], cmd[DOWN_CMDLINE_MAX];
	ssize_t n = -1, i;
	int fd;

	xsnprintf(path, sizeof(path), "/proc/%ld/cmdline", nr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
	}
	for (i = 0; i < n; i++)
		if ((unsigned char)cmd[i] < ' ')
			cmd[i] = ' ';
	while (n > 0 && cmd[n - 1] == ' ')
		n--;
	cmd[n > 0 ? n : 0] = '\0';
	buf_addf(out, "%spid %ld (%s, state %c)", out->len ? ", " : "", (long)pid,
	         n > 0 ? cmd : "?", state ? state : '?');
}

/* One node of a down: its paths, its jobs, where it stands. */
struct down_node {
	struct sup_down *out;
	struct node_paths *paths;
	char *bin; /* its skiff binaries' directory, real path, with its '/' */
	struct down_jobs jobs;
	int stopped; /* cancel_and_stop()'s */
	int rows;    /* its supervisor answered with the rows (rows_in()) */
	int64_t grace;
	int termed, done;
	/* Of one look: the signal to send (0: none), whether to name what is left (in
	 * out->what, named counting down), and how many processes are left. */
	int sig, name, named, left;
};

/* The nodes by bin, sorted, for a process's executable: the node it is of, or NULL. */
static int by_bin(const void *a, const void *b)
{
	return strcmp((*(struct down_node *const *)a)->bin, (*(struct down_node *const *)b)->bin);
}

static struct down_node *node_of_exe(struct down_node **v, size_t n, const char *exe)
{
	size_t len = strlen(exe), lo, hi;

	/* bin is a directory of exe's: each '/' of exe, from the last, ends a candidate. */
	while (len > 0) {
		while (len > 0 && exe[len - 1] != '/')
			len--;
		for (lo = 0, hi = n; lo < hi;) {
			size_t mid = lo + (hi - lo) / 2;
			int c = strncmp(v[mid]->bin, exe, len);

			if (!c && v[mid]->bin[len])
				c = 1; /* longer than the candidate: after it */
			if (!c)
				return v[mid];
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		len--;
	}
	return NULL;
}

/*
 * The nodes' own processes (every live one whose executable is in a node's bin, but us
 * and our parent), in one reading of /proc: each counted in its node's left, sent its
 * node's sig, and named when its node names.
 */
static void node_procs(struct down_node **byb, size_t n)
{
	pid_t self = getpid(), parent = getppid();
	/* Tests: a process that outlives SIGKILL, as one in D state does (docs/testing.md). */
	const char *spare_s = getenv("SKIFF_TEST_DOWN_SPARE");
	long spare = 0;
	struct dirent *e;
	DIR *d;

	if (spare_s && parse_long(spare_s, 1, INT_MAX, &spare))
		spare = 0;
	d = opendir("/proc");
	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[64], exe[PATH_MAX], state = 0;
		struct down_node *dn;
		ssize_t len;
		pid_t pid;
		long nr;

		if (parse_long(e->d_name, 2, INT_MAX, &nr))
			continue;
		xsnprintf(path, sizeof(path), "/proc/%ld/exe", nr);
		len = readlink(path, exe, sizeof(exe) - 1);
		if (len <= 0)
			continue;
		exe[len] = '\0';
		dn = node_of_exe(byb, n, exe);
		if (!dn || dn->done)
			continue;
		/* /proc may number processes as another pid namespace does (lib/proc.h). */
		pid = proc_ours(nr);
		if (pid <= 1 || pid == self || pid == parent || !proc_stat(pid, &state) ||
		    state == 'Z')
			continue;
		if (dn->sig && pid != spare)
			kill(pid, dn->sig);
		dn->left++;
		if (dn->name && dn->named > 0) {
			describe(&dn->out->what, nr, pid, state);
			dn->named--;
		}
	}
	closedir(d);
}

static struct proc_scope job_scope(const struct down_job *j)
{
	struct proc_scope s = {0};

	s.env = j->tag;
	/* The recorded leader's group, unless that pid is another process by now. */
	if (proc_is(j->leader, j->leader_start))
		s.pgid = j->leader;
	return s;
}

/*
 * A supervisor that has stopped but not yet ended: /proc no longer names it (its memory
 * is being torn down) while it still holds its lock, and the node's release, or a new
 * supervisor, would meet that lock (daemon_lock_held()). Counted as left until it lets go.
 */
static void supervisor_ending(struct down_node *dn)
{
	if (dn->done || daemon_lock_held(dn->paths->lock) <= 0)
		return;
	dn->left++;
	if (dn->name && dn->named > 0) {
		buf_addf(&dn->out->what, "%sa process holding %s (a supervisor ending)",
		         dn->out->what.len ? ", " : "", dn->paths->lock);
		dn->named--;
	}
}

/*
 * One look at what is left of the nodes not done: their skiff processes, whatever holds
 * their supervisor's lock and, of a node whose are gone (a live shim ends its job
 * itself) or that is signalled or named, its jobs'. Each node's left, its sig sent; /proc is read
 * once for the skiff processes and once for all the jobs, whatever the number of nodes.
 */
static void look(struct down_node *v, struct down_node **byb, size_t n)
{
	struct proc_scope *scopes = NULL;
	struct down_job **of = NULL;
	struct down_node **node = NULL;
	int *sig = NULL, *hit = NULL;
	size_t i, k, ns = 0, alloc = 0;

	for (i = 0; i < n; i++) {
		v[i].left = 0;
		v[i].named = DOWN_NAMED_MAX;
	}
	node_procs(byb, n);
	for (i = 0; i < n; i++)
		supervisor_ending(&v[i]);
	for (i = 0; i < n; i++) {
		struct down_node *dn = &v[i];

		if (dn->done || (dn->left && !dn->sig && !dn->name))
			continue;
		for (k = 0; k < dn->jobs.n; k++) {
			if (ns == alloc) {
				alloc = alloc ? 2 * alloc : 64;
				scopes = xrealloc(scopes, alloc * sizeof(*scopes));
				of = xrealloc(of, alloc * sizeof(*of));
				node = xrealloc(node, alloc * sizeof(*node));
				sig = xrealloc(sig, alloc * sizeof(*sig));
			}
			scopes[ns] = job_scope(&dn->jobs.v[k]);
			of[ns] = &dn->jobs.v[k];
			node[ns] = dn;
			sig[ns++] = dn->sig;
		}
	}
	if (ns) {
		hit = xcalloc(ns, sizeof(*hit));
		proc_scopes_signal(scopes, ns, sig, hit);
	}
	for (i = 0; i < ns; i++) {
		struct buf *names = &node[i]->out->what;

		node[i]->left += hit[i];
		if (hit[i] && node[i]->name)
			buf_addf(names, "%sjob %lld: %d process(es)", names->len ? ", " : "",
			         (long long)of[i]->id, hit[i]);
	}
	free(scopes);
	free(of);
	free(node);
	free(sig);
	free(hit);
}

/*
 * Cancels every job and asks the supervisor to stop; 0 when it was running and did.
 * *rows: whether its answer brought the rows (rows_in()), the database then unread.
 */
static int cancel_and_stop(const char *sock, struct down_jobs *jobs, int *rows)
{
	static const char *const ops[] = {"cancel", "shutdown"};
	struct msg req, rep;
	size_t i;
	int r = 0, q;

	*rows = 0;
	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		msg_init(&req);
		msg_add(&req, "op", ops[i]);
		msg_add(&req, i ? "rows" : "all", "1");
		q = sup_request_at(sock, &req, &rep, SUP_CALL_TIMEOUT_MS);
		if (q > 0)
			r = -ENOTCONN; /* none listens there: nothing was sent */
		else if (q || msg_get(&rep, "error"))
			r = -EIO;
		else if (i && !rows_in(&rep, jobs)) {
			*rows = 1;
			if (msg_get(&rep, "autostop_kept"))
				warning("cannot clear this node's autostop setting");
		}
		msg_release(&req);
		msg_release(&rep);
		if (q > 0)
			break;
	}
	return r;
}

/*
 * First of all: from now on no request starts a supervisor here (sup_connect()), or one
 * that comes while we wait (a watcher's, a follower's) would bring it back to be killed
 * at the deadline, or outlive us on a node the cluster let go. `node up` takes it away.
 */
static void mark_taken_down(const struct node_paths *p)
{
	struct buf b = BUF_INIT(0);
	int r = mkdir_p(p->home, 0700);

	buf_addf(&b, "taken down by 'skiff node down --all' (pid %ld) at %.0f\n", (long)getpid(),
	         now_wall());
	if (!r)
		r = write_file_quick(p->taken_down, b.p, b.len, 0600);
	if (r)
		warning("cannot write %s: %s (a late request may start the supervisor again)",
		        p->taken_down, strerror(-r));
	buf_release(&b);
}

/* A node's stop: taken down, its jobs cancelled, its supervisor stopped, its rows read. */
static void stop_node(struct down_node *dn)
{
	const struct node_paths *p = dn->paths;
	struct st_db *db = NULL;
	char real[PATH_MAX];

	dn->bin = xasprintf("%s/bin/", realpath(p->home, real) ? real : p->home);
	mark_taken_down(p);
	dn->stopped = cancel_and_stop(p->sock, &dn->jobs, &dn->rows);
	/*
	 * The rows are read once the supervisor stopped: no job starts after this (it read
	 * them itself as it stopped, else they are read here). A node released (or never
	 * up) has no database: no job either, and nothing to say.
	 */
	if (!dn->rows && !access(p->db, F_OK)) {
		/* One open for both (a thousand nodes' down): for reading alone if need be. */
		int ro = st_open(p->db, &st_node_schema, 0, &db) != 0;

		if (ro && st_open(p->db, &st_node_schema, ST_READONLY, &db))
			db = NULL;
		if (db)
			st_job_each_shim(db, keep_job, &dn->jobs);
		/* The cluster lets the node go: the next one there starts without its autostop. */
		if (ro || sup_autostop_forget_in(db))
			warning("cannot clear this node's autostop setting in %s", p->db);
		if (db)
			st_close(db);
	}
	/* No cancel reached the shims (no supervisor ran): nothing ends by itself. */
	dn->grace = dn->stopped ? 0 : down_grace_ms(dn->jobs.grace_s);
}

/* The nodes' stops, DOWN_STOP_THREADS at a time: each waits on its own supervisor. */
struct stop_pool {
	struct down_node *v;
	size_t n, next;
};

static void *stop_thread(void *arg)
{
	struct stop_pool *sp = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&sp->next, 1, __ATOMIC_RELAXED)) < sp->n)
		stop_node(&sp->v[i]);
	return NULL;
}

static void stop_all(struct down_node *v, size_t n)
{
	struct stop_pool sp = {v, n, 0};
	pthread_t th[DOWN_STOP_THREADS];
	size_t i, started = 0;

	for (i = 0; n > 1 && i < DOWN_STOP_THREADS && i < n; i++)
		if (!pthread_create(&th[started], NULL, stop_thread, &sp))
			started++;
	stop_thread(&sp); /* and this one: all of them when no thread could start */
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

size_t sup_down_nodes(struct sup_down *out, size_t n)
{
	struct down_node *v = xcalloc(n ? n : 1, sizeof(*v)), **byb;
	char why[256];
	size_t i, live = n, bad = 0, looks = 0, rows = 0;
	int64_t start;

	for (i = 0; i < n; i++) {
		v[i].out = &out[i];
		v[i].paths = node_paths_of(out[i].home);
		out[i].r = 0;
	}
	start = now_ms();
	stop_all(v, n);
	for (i = 0; i < n; i++)
		rows += v[i].rows;
	debug("down of %zu node(s): their supervisors stopped in %lld ms, %zu of them "
	      "answered with their jobs' rows",
	      n, (long long)(now_ms() - start), rows);
	byb = xcalloc(n ? n : 1, sizeof(*byb));
	for (i = 0; i < n; i++)
		byb[i] = &v[i];
	qsort(byb, n, sizeof(*byb), by_bin);
	if (proc_ns_check(why, sizeof(why))) {
		for (i = 0; i < n; i++) {
			buf_addf(&out[i].what, "cannot tell which processes are left: %s", why);
			out[i].r = -ENOTSUP;
		}
		live = 0;
	}
	start = now_ms();
	while (live) {
		int act = 0;

		looks++;
		look(v, byb, n);
		for (i = 0; i < n; i++) {
			struct down_node *dn = &v[i];
			enum down_step step;

			dn->sig = 0;
			if (dn->done)
				continue;
			step = down_step(now_ms() - start, dn->grace, dn->left);
			if (step == DOWN_DONE) {
				dn->done = 1;
				live--;
			} else if (step == DOWN_GIVE_UP) {
				dn->name = act = 1;
			} else if ((step == DOWN_TERM && !dn->termed++) || step == DOWN_KILL) {
				dn->sig = step == DOWN_TERM ? SIGTERM : SIGKILL;
				act = 1;
			}
		}
		if (act)
			look(v, byb, n);
		for (i = 0; i < n; i++) {
			struct down_node *dn = &v[i];

			if (dn->done || !dn->name)
				continue;
			dn->out->r = dn->left ? -EBUSY : 0;
			dn->done = 1;
			live--;
		}
		if (live)
			poll_ms(DOWN_POLL_MS);
	}
	debug("down of %zu node(s): %zu look(s) at what is left, %lld ms", n, looks,
	      (long long)(now_ms() - start));
	for (i = 0; i < n; i++) {
		bad += out[i].r != 0;
		free(v[i].jobs.v);
		free(v[i].bin);
		node_paths_free(v[i].paths);
	}
	free(byb);
	free(v);
	return bad;
}

int sup_down_all(struct buf *what)
{
	const struct node_paths *p = node_paths();
	struct sup_down d = {0};

	if (!p)
		return -ENOENT;
	d.home = p->home;
	d.what = *what;
	sup_down_nodes(&d, 1);
	*what = d.what;
	return d.r;
}

void sup_down_say(int r, const struct buf *what, struct buf *line)
{
	if (r == -EBUSY)
		buf_addf(line, "left running after SIGKILL: %s", what->p);
	else if (r)
		buf_addf(line, "%s", what->len ? what->p : strerror(-r));
	else
		buf_adds(line, "stopped: nothing of this node runs any more");
}

/* What a cluster leaves on a node that outlives it, under $HOME and $SKIFF_HOME. */
static const char *const release_home[] = {"sky_workdir"};
static const char *const release_state[] = {"node.db", "node.db-wal", "node.db-shm", "logs",
                                            "hooks"};

int sup_release(struct buf *what)
{
	const struct node_paths *p = node_paths();
	const char *home = user_home();
	char *path;
	size_t i;
	int fd, r = 0, e;

	if (!p)
		return -ENOENT;
	/* Held while removing: no supervisor starts on a half-removed state dir. */
	fd = daemon_lock(p->lock);
	if (fd == -EEXIST) {
		buf_adds(what, "the supervisor runs: 'skiff node down --all' first");
		return -EBUSY;
	}
	if (fd < 0)
		return fd;
	for (i = 0; home && i < ARRAY_SIZE(release_home) && !r; i++) {
		path = node_tilde_path(release_home[i]); /* a cluster home's own workdir */
		if (!path)
			continue;
		if ((e = rm_rf(path)))
			buf_addf(what, "cannot remove %s: %s", path, strerror(-e)), r = e;
		free(path);
	}
	for (i = 0; i < ARRAY_SIZE(release_state) && !r; i++) {
		path = xasprintf("%s/%s", p->home, release_state[i]);
		if ((e = rm_rf(path)))
			buf_addf(what, "cannot remove %s: %s", path, strerror(-e)), r = e;
		free(path);
	}
	close(fd);
	return r;
}
