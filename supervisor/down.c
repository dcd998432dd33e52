/*
 * `node down --all`: the node's part of the launcher's `down` and `stop`. Every job is
 * cancelled, the supervisor is asked to stop, and then it returns only once nothing of the
 * node runs any more: no process whose executable is one of the node's skiff binaries
 * ($SKIFF_HOME/bin: the supervisor, its shims, followers, `node call` sessions, install
 * stubs) and no process of a job those shims ran (its group and session, its
 * SKIFF_JOB_TAG: lib/proc.h). The steps and their deadlines are down_step()
 * (supervisor/policy.h); what survives SIGKILL is named in the answer.
 *
 * Plain `node down` is not this: it leaves the jobs running for the next `node up`.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

static int keep_job(struct job *j, void *arg)
{
	struct down_jobs *d = arg;
	struct down_job *k;

	if (!j->shim_pid)
		return 0;
	if (job_status_terminal(j->status) && !proc_is(j->shim_pid, j->shim_start))
		return 0;
	d->v = xgrow(d->v, d->n, &d->alloc, sizeof(*d->v));
	k = &d->v[d->n++];
	k->id = j->id;
	proc_job_tag(j->shim_pid, j->shim_start, k->tag);
	k->leader = j->job_pid;
	k->leader_start = j->job_start;
	if (j->cancel_grace > d->grace_s)
		d->grace_s = j->cancel_grace;
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

/*
 * Sends sig (0: none) to every live process whose executable is in bin (a path ending in
 * '/'), but us and our parent; returns how many there are. names: described there, at most
 * *named of them (counted down).
 */
static int node_procs(const char *bin, int sig, struct buf *names, int *named)
{
	pid_t self = getpid(), parent = getppid();
	/* Tests: a process that outlives SIGKILL, as one in D state does (docs/testing.md). */
	const char *spare_s = getenv("SKIFF_TEST_DOWN_SPARE");
	long spare = 0;
	struct dirent *e;
	int n = 0;
	DIR *d;

	if (spare_s && parse_long(spare_s, 1, INT_MAX, &spare))
		spare = 0;
	d = opendir("/proc");

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[64], exe[PATH_MAX], state = 0;
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
		if (!starts_with(exe, bin))
			continue;
		/* /proc may number processes as another pid namespace does (lib/proc.h). */
		pid = proc_ours(nr);
		if (pid <= 1 || pid == self || pid == parent || !proc_stat(pid, &state) ||
		    state == 'Z')
			continue;
		if (sig && pid != spare)
			kill(pid, sig);
		n++;
		if (names && *named > 0) {
			describe(names, nr, pid, state);
			--*named;
		}
	}
	closedir(d);
	return n;
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
 * What is left: the node's skiff processes and, once they are gone (a live shim ends its
 * job itself, and looking for a job's processes reads all of /proc), the jobs'. sig is
 * sent to all of them; names: they are described there.
 */
static int left(const char *bin, const struct down_jobs *jobs, int sig, struct buf *names)
{
	int named = DOWN_NAMED_MAX, n = node_procs(bin, sig, names, &named), k;
	size_t i;

	if (n && !sig && !names)
		return n;
	for (i = 0; i < jobs->n; i++) {
		struct proc_scope s = job_scope(&jobs->v[i]);

		k = proc_scope_signal(&s, sig);
		n += k;
		if (k && names)
			buf_addf(names, "%sjob %lld: %d process(es)", names->len ? ", " : "",
			         (long long)jobs->v[i].id, k);
	}
	return n;
}

/* Cancels every job and asks the supervisor to stop; 0 when it was running and did. */
static int cancel_and_stop(void)
{
	struct msg req, rep;
	int fd = sup_connect(SUP_QUIET), r;

	if (fd < 0)
		return -ENOTCONN;
	close(fd);
	msg_init(&req);
	msg_add(&req, "op", "cancel");
	msg_add(&req, "all", "1");
	r = sup_call(0, &req, &rep);
	msg_release(&req);
	msg_release(&rep);
	msg_init(&req);
	msg_add(&req, "op", "shutdown");
	if (sup_call(0, &req, &rep))
		r = -EIO;
	msg_release(&req);
	msg_release(&rep);
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

int sup_down_all(struct buf *what)
{
	const struct node_paths *p = node_paths();
	struct down_jobs jobs = {0};
	struct st_db *db = NULL;
	char real[PATH_MAX], why[256], *bin;
	int64_t start, grace;
	int n, r, termed = 0;

	if (!p)
		return -ENOENT;
	bin = xasprintf("%s/bin/", realpath(p->home, real) ? real : p->home);
	mark_taken_down(p);
	r = cancel_and_stop();
	/*
	 * The rows are read once the supervisor stopped: no job starts after this. A node
	 * released (or never up) has no database: no job either, and nothing to say.
	 */
	if (!access(p->db, F_OK) && !st_open(p->db, &st_node_schema, ST_READONLY, &db)) {
		st_job_each(db, JOB_MASK_ALL, keep_job, &jobs);
		st_close(db);
	}
	/* The cluster lets the node go: the next one there starts without its autostop. */
	if (!access(p->db, F_OK) && sup_autostop_forget(p->db))
		warning("cannot clear this node's autostop setting in %s", p->db);
	if (proc_ns_check(why, sizeof(why))) {
		buf_addf(what, "cannot tell which processes are left: %s", why);
		r = -ENOTSUP;
		goto out;
	}
	/* No cancel reached the shims (no supervisor ran): nothing ends by itself. */
	grace = r ? 0 : down_grace_ms(jobs.grace_s);
	start = now_ms();
	for (;;) {
		enum down_step step = down_step(now_ms() - start, grace, left(bin, &jobs, 0, NULL));

		if (step == DOWN_DONE) {
			r = 0;
			break;
		}
		if (step == DOWN_GIVE_UP) {
			n = left(bin, &jobs, 0, what);
			r = n ? -EBUSY : 0;
			break;
		}
		if (step == DOWN_TERM && !termed++)
			left(bin, &jobs, SIGTERM, NULL);
		else if (step == DOWN_KILL)
			left(bin, &jobs, SIGKILL, NULL);
		poll_ms(DOWN_POLL_MS);
	}
out:
	free(jobs.v);
	free(bin);
	return r;
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
