#include "bootstrap/launch/cluster.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/infra/fcall.h"
#include "bootstrap/infra/infra.h"
#include "bootstrap/launch/cl_direct.h"
#include "bootstrap/launch/cl_sync.h"
#include "bootstrap/launch/gang.h"
#include "bootstrap/launch/install.h"
#include "bootstrap/launch/selfimage.h"
#include "bootstrap/sync/sync.h"
#include "state/jobs.h"
#include "state/node.h"
#include "supervisor/hold.h"
#include "supervisor/node.h"
#include "supervisor/supervisor.h"
#include "lib/log.h"
#include "lib/quote.h"
#include "lib/self.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

#define BOOT_TIMEOUT_MS 120000
#define SUBMIT_TIMEOUT_MS 60000
/* How much of what a node said instead of an answer goes into the error. */
#define CL_WHY_MAX 512
/*
 * How long a local node's supervisor may take to answer a watch on its socket before the
 * watch goes through `node call` instead: the watches start one after another, and a
 * stopped supervisor must not hold up those of the other nodes for long.
 */
#define CL_WATCH_ANSWER_MS 2000

int cl_open(struct clive *cl, const struct cluster *c, const struct cluster_node *nodes, size_t n)
{
	struct infra inf;
	int infra = !infra_parse(c->infra, &inf);
	size_t i;

	memset(cl, 0, sizeof(*cl));
	if (!infra)
		return error("cluster %s: unknown infra '%s'", c->name, c->infra);
	cl->name = xstrdup(c->name);
	cl->infra = xstrdup(c->infra);
	cl->ops = inf.ops;
	cl->nodes = xcalloc(n ? n : 1, sizeof(*cl->nodes));
	cl->n = n;
	for (i = 0; i < n; i++) {
		const struct cluster_node *cn = &nodes[i];
		struct cnode *nd = &cl->nodes[i];

		nd->rank = cn->rank;
		nd->ip = xstrdup(*cn->ip ? cn->ip : "127.0.0.1");
		nd->name = *cn->home ? xasprintf("%s-%d", c->name, cn->rank) : xstrdup(cn->ip);
		nd->r = infra ? infra_runner(&inf, cn) : NULL;
		if (!nd->r) {
			int r = error("node %s: cannot set up its runner", nd->name);

			/* What was opened so far goes: the callers close only what opened. */
			infra_release(&inf);
			cl_close(cl);
			return r;
		}
		nd->exe = *cn->skiff_exe ? xstrdup(cn->skiff_exe) : NULL;
		nd->addr = xstrdup(cn->addr && *cn->addr ? cn->addr : nd->ip);
		nd->active = -1;
		nd->stays = cn->stays;
		nd->share = cn->share && *cn->share ? xstrdup(cn->share) : NULL;
	}
	infra_release(&inf);
	return 0;
}

void cl_spares_close(struct clive *cl)
{
	struct boot_spare **v = xcalloc(cl->n ? cl->n : 1, sizeof(*v));
	size_t i;

	for (i = 0; i < cl->n; i++) {
		v[i] = cl->nodes[i].spare;
		cl->nodes[i].spare = NULL;
	}
	boot_spares_close(v, cl->n);
	free(v);
}

void cl_close(struct clive *cl)
{
	size_t i;

	cl_spares_close(cl);
	for (i = 0; i < cl->n; i++) {
		runner_free(cl->nodes[i].r);
		free(cl->nodes[i].name);
		free(cl->nodes[i].ip);
		free(cl->nodes[i].exe);
		free(cl->nodes[i].addr);
		free(cl->nodes[i].share);
	}
	free(cl->nodes);
	free(cl->name);
	free(cl->infra);
	memset(cl, 0, sizeof(*cl));
}

struct boot_job {
	struct cnode *nd;
	unsigned flags; /* enum boot_up_flags */
	char *up_args;  /* the hold (cl_hold_args()) and the share, or NULL */
	sem_t *slots;   /* the bootstraps that may start at once (gang_boot_slots()) */
	pthread_t th;
	int started;
	int r;
	struct install_result res;
};

static void *boot_thread(void *arg)
{
	struct boot_job *j = arg;

	while (sem_wait(j->slots) && errno == EINTR)
		;
	/* The node's runner is this thread's alone (runner.h); errors are printed. */
	j->r = boot_install_and_up(j->nd->r, j->flags, j->up_args, &j->res);
	sem_post(j->slots);
	return NULL;
}

struct ping_job {
	struct cnode *nd;
	int timeout_ms;
	int r;
	struct cl_ping *out;
	pthread_t th;
	int started;
};

static void *ping_thread(void *arg)
{
	struct ping_job *j = arg;
	struct msg req, rep;
	const char *version;

	msg_init(&req);
	msg_add(&req, "op", "ping");
	j->r = cl_call(j->nd, &req, &rep, j->timeout_ms);
	if (!j->r) {
		version = msg_get(&rep, "version");
		j->out->version = xstrdup(version ? version : "");
		if (msg_get_int(&rep, "pid", &j->out->pid))
			j->out->pid = 0;
	}
	msg_release(&rep);
	msg_release(&req);
	return NULL;
}

size_t cl_ping_all(struct clive *cl, int timeout_ms, struct cl_ping *out)
{
	struct ping_job *jobs = xcalloc(cl->n ? cl->n : 1, sizeof(*jobs));
	size_t i, silent = 0;

	memset(out, 0, cl->n * sizeof(*out));
	for (i = 0; i < cl->n; i++) {
		jobs[i].nd = &cl->nodes[i];
		jobs[i].timeout_ms = timeout_ms;
		jobs[i].r = -EAGAIN;
		jobs[i].out = &out[i];
		jobs[i].started = !pthread_create(&jobs[i].th, NULL, ping_thread, &jobs[i]);
		/* Out of threads: this one is asked here, the others go on. */
		if (!jobs[i].started)
			ping_thread(&jobs[i]);
	}
	for (i = 0; i < cl->n; i++) {
		if (jobs[i].started)
			pthread_join(jobs[i].th, NULL);
		out[i].answered = !jobs[i].r;
		if (jobs[i].r) {
			silent++;
			out[i].why = xstrdup(jobs[i].r == -ENOEXEC ? "its skiff is gone"
			                     : runner_node_gone(cl->nodes[i].r, jobs[i].r)
			                             ? "the node is gone"
			                             : strerror(-jobs[i].r));
			warning("cluster %s: node %s (rank %d) does not answer: %s", cl->name,
			        cl->nodes[i].name, cl->nodes[i].rank, out[i].why);
		}
	}
	free(jobs);
	return silent;
}

void cl_pings_free(struct cl_ping *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++) {
		free(v[i].version);
		free(v[i].why);
	}
	free(v);
}

/*
 * `node up`'s words for a share (cluster_node.share "cpus=C memory=GIB gpus=N"): " --share
 * --cpus C --memory GIB --gpus N". NULL (printed) when the record is not one skiff wrote.
 */
static char *share_args(const char *cluster, const char *share)
{
	static const char *const keys[] = {"cpus=", "memory=", "gpus="};
	struct buf b = BUF_INIT(0);
	const char *p = share;
	size_t k, n;

	buf_adds(&b, " --share");
	for (k = 0; k < ARRAY_SIZE(keys); k++) {
		if (!starts_with(p, keys[k]))
			break;
		p += strlen(keys[k]);
		n = strspn(p, "0123456789.e+");
		if (!n || (p[n] && p[n] != ' '))
			break;
		buf_addf(&b, " --%.*s %.*s", (int)strlen(keys[k]) - 1, keys[k], (int)n, p);
		p += n + (p[n] == ' ');
	}
	if (k < ARRAY_SIZE(keys) || *p) {
		buf_release(&b);
		error("cluster %s: its share of a host ('%.80s') is not one skiff wrote", cluster,
		      share);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

/*
 * One thread per node, so that N nodes bootstrap in the time of the slowest. Each
 * thread drives only its own node's runner; processes are started through lib/spawn,
 * which prepares everything before it forks.
 */
int cl_bootstrap(struct clive *cl)
{
	uint64_t nofile = nofile_raise();
	size_t i, img_len, nslots = gang_boot_slots(nofile, cl->n);
	struct boot_job *jobs;
	const char *img, *sha;
	char *hold = NULL;
	int failed = 0, held = 0, e;
	sem_t slots;

	if (cl->n && !nslots)
		return error("cannot bootstrap the %zu nodes of cluster %s: each holds %d "
		             "descriptors here until its job is submitted or followed, and this "
		             "process may open %llu (raise `ulimit -n` and its hard limit `ulimit "
		             "-Hn`, or launch fewer nodes)",
		             cl->n, cl->name, GANG_FDS_HELD, (unsigned long long)nofile);
	if (nslots < cl->n)
		debug("cluster %s: %zu of its %zu nodes bootstrap at once (%llu descriptors)",
		      cl->name, nslots, cl->n, (unsigned long long)nofile);
	/* Load (and hash) our image once, before the threads start, so they share it. */
	if (boot_self_image(&img, &img_len, &sha))
		return -1;
	jobs = xcalloc(cl->n ? cl->n : 1, sizeof(*jobs));
	sem_init(&slots, 0,
	         nslots ? (unsigned)(nslots > SEM_VALUE_MAX ? SEM_VALUE_MAX : nslots) : 1);
	for (i = 0; i < cl->n && !hold; i++)
		if (cl->nodes[i].stays && !(hold = cl_hold_args(cl->name, 1))) {
			free(jobs);
			sem_destroy(&slots);
			return -1;
		}
	for (i = 0; i < cl->n; i++) {
		char *share = NULL;

		if (cl->nodes[i].share && !(share = share_args(cl->name, cl->nodes[i].share))) {
			failed = -1;
			break;
		}
		jobs[i].nd = &cl->nodes[i];
		jobs[i].up_args =
		        cl->nodes[i].stays ? xasprintf("%s%s", hold, share ? share : "") : NULL;
		free(share);
		/* The cluster's record: this node was bootstrapped with this very binary. */
		if (cl->nodes[i].exe && strstr(cl->nodes[i].exe, sha))
			jobs[i].flags |= BOOT_HAS_SKIFF;
		jobs[i].flags |= BOOT_KEEP_CALL | BOOT_LINK_HERE;
		jobs[i].slots = &slots;
		e = pthread_create(&jobs[i].th, NULL, boot_thread, &jobs[i]);
		if (e) {
			failed = error("cannot start a thread to bootstrap node %s: %s",
			               cl->nodes[i].name, strerror(e));
			break;
		}
		jobs[i].started = 1;
	}
	for (i = 0; i < cl->n; i++) {
		struct cnode *nd = &cl->nodes[i];

		if (!jobs[i].started)
			continue;
		pthread_join(jobs[i].th, NULL);
		nd->held = jobs[i].r == -EADDRINUSE;
		if (nd->held) {
			held++;
		} else if (jobs[i].r) {
			failed = -1;
		} else {
			nd->copied = jobs[i].res.copied;
			nd->linked = jobs[i].res.linked;
			nd->sup_started = jobs[i].res.sup_started;
			free(nd->exe);
			nd->exe = xstrdup(jobs[i].res.remote_exe);
			nd->active = jobs[i].res.active;
			boot_spare_close(nd->spare);
			nd->spare = jobs[i].res.spare;
			if (jobs[i].res.address[0]) {
				free(nd->addr);
				nd->addr = xstrdup(jobs[i].res.address);
			}
		}
	}
	for (i = 0; i < cl->n; i++)
		free(jobs[i].up_args);
	free(jobs);
	free(hold);
	sem_destroy(&slots);
	return failed ? -1 : held ? -EADDRINUSE : 0;
}

/* This launcher's id ($SKIFF_HOME/launcher-id), made on first use; out: HOLD_ID_HEX + 1. */
static int launcher_id(char *out)
{
	const char *home = skiff_home();
	struct buf b = BUF_INIT(256);
	char *path, *tmp = NULL;
	int r;

	if (!home)
		return -ENOENT;
	path = xasprintf("%s/launcher-id", home);
	r = buf_read_file(&b, path);
	if (!r) {
		buf_rtrim(&b);
		if (b.len == HOLD_ID_HEX && strspn(b.p, "0123456789abcdef") == HOLD_ID_HEX) {
			memcpy(out, b.p, HOLD_ID_HEX + 1);
			goto out;
		}
		r = error("%s is not an id skiff wrote (%d hex digits): move it away", path,
		          HOLD_ID_HEX);
		goto out;
	}
	if (r != -ENOENT) {
		errno = -r;
		r = error_errno("cannot read '%s'", path);
		goto out;
	}
	/*
	 * Made whole beside it, then linked to its name, which fails if another launch made
	 * one meanwhile: then that one is the id (two would hold hosts under two ids).
	 */
	random_hex(out, HOLD_ID_HEX / 2);
	buf_reset(&b);
	buf_addf(&b, "%s\n", out);
	tmp = xasprintf("%s.%ld.tmp", path, (long)getpid());
	r = mkdir_p(home, 0700);
	if (!r)
		r = write_file_atomic(tmp, b.p, b.len, 0600);
	if (!r && link(tmp, path) < 0)
		r = -errno;
	unlink(tmp);
	if (r == -EEXIST) {
		free(tmp);
		free(path);
		buf_release(&b);
		return launcher_id(out);
	}
	if (r) {
		errno = -r;
		r = error_errno("cannot write '%s'", path);
	}
out:
	buf_release(&b);
	free(path);
	free(tmp);
	return r;
}

char *cl_hold_args(const char *cluster, int up)
{
	char id[HOLD_ID_HEX + 1], host[256] = "", from[HOLD_FROM_MAX + 1];
	const struct account *me = own_account();
	struct buf b = BUF_INIT(0);
	size_t i;

	/*
	 * The managed-jobs controller's cluster is every launcher's of the user (the same
	 * name from each: supervisor/jobs/remote.c), so its hold is the same from each.
	 */
	if (starts_with(cluster, JOBS_CONTROLLER_CLUSTER_PREFIX)) {
		char hex[SHA256_HEX_LEN + 1];

		sha256_hex(cluster, strlen(cluster), hex);
		memcpy(id, hex, HOLD_ID_HEX);
		id[HOLD_ID_HEX] = '\0';
	} else if (launcher_id(id)) {
		return NULL;
	}
	buf_adds(&b, " --hold ");
	sh_quote(&b, cluster);
	buf_addf(&b, " --launcher %s", id);
	if (up) {
		/* For people reading a refusal: "user@host", odd bytes made '_'. */
		gethostname(host, sizeof(host) - 1);
		xsnprintf(from, sizeof(from), "%.60s@%.60s", me ? me->name : "?",
		          *host ? host : "?");
		for (i = 0; from[i]; i++)
			if (!strchr(HOLD_FROM_CHARS, from[i]))
				from[i] = '_';
		buf_addf(&b, " --from %s", from);
	}
	return buf_detach(&b, NULL);
}

static int need_exe(struct cnode *nd)
{
	if (!nd->exe || !*nd->exe)
		return error("node %s: skiff is not installed there (relaunch the cluster)",
		             nd->name);
	return 0;
}

int cl_exec_skiff(struct cnode *nd, const char *args, int timeout_ms, int *status)
{
	struct runner_io io = {RUNNER_NULL, RUNNER_INHERIT, RUNNER_INHERIT};
	char *script;
	int r;

	if (need_exe(nd))
		return -EINVAL;
	script = xasprintf("%s %s", nd->exe, args);
	r = runner_run(nd->r, script, &io, timeout_ms, status);
	free(script);
	return r;
}

int cl_capture_skiff(struct cnode *nd, const char *args, struct buf *out, int timeout_ms,
                     int *status)
{
	struct buf err = BUF_INIT(1 << 20);
	char *script;
	int r;

	if (need_exe(nd))
		return -EINVAL;
	script = xasprintf("%s %s", nd->exe, args);
	r = runner_capture(nd->r, script, NULL, 0, out, &err, timeout_ms, status);
	if (!r && *status) {
		buf_rtrim(&err);
		if (err.len)
			fprintf(stderr, "%s\n", err.p);
	}
	free(script);
	buf_release(&err);
	return r;
}

int cl_sync(struct cnode *nd, const char *src, const char *dst, int is_file)
{
	/* One node is a cluster of one (bootstrap/launch/cl_sync.h). */
	return cl_sync_many(&nd, 1, src, dst, is_file);
}

void cl_replies_free(struct msg *v, int n)
{
	fcall_replies_free(v, n);
}

/* The frames of what an install session's spare call wrote (out), into *replies. */
static int spare_replies(struct cnode *nd, const struct msg *req, struct buf *out, int status,
                         struct msg **replies)
{
	size_t n = 0, alloc = 0;
	struct msg *v = NULL, m;
	const char *why;
	int r;

	msg_init(&m);
	while ((r = proto_take(out, &m, &why)) > 0) {
		v = xgrow(v, n, &alloc, sizeof(*v));
		v[n++] = m;
		msg_init(&m);
	}
	msg_release(&m);
	if (!r && !out->len && n) {
		*replies = v;
		return (int)n;
	}
	fcall_replies_free(v, (int)n);
	if (status == 127)
		return -ENOEXEC;
	buf_rtrim(out);
	if (out->len)
		error("node %s: no answer to '%s': %.*s", nd->name, msg_get(req, "op"),
		      (int)(out->len > CL_WHY_MAX ? CL_WHY_MAX : out->len), out->p);
	else
		error("node %s: no answer to '%s' (exit status %d)", nd->name, msg_get(req, "op"),
		      status);
	return -EPROTO;
}

int cl_node_ours(const struct cnode *nd)
{
	const char *sha = self_sha256_cached();
	char word[PATH_MAX];

	if (!sha || !nd->exe)
		return 0;
	boot_exe_word(sha, word, sizeof(word));
	return !strcmp(nd->exe, word);
}

/*
 * What `node call` would pass to the node's supervisor as it is goes to its socket
 * straight (cl_direct.h), without the processes of a node call. 0 when that is not to be
 * (nothing sent, or through an ssh forward nothing answered: the caller goes through
 * `node call`, which starts a supervisor where none listens); else as cl_call_many().
 */
static int direct_call(struct cnode *nd, const struct msg *req, struct msg **replies,
                       int timeout_ms)
{
	struct msg *rep;
	char *sock;
	int r, fwd;

	if (!sup_forwarded_op(req) || !(sock = cl_direct_sock(nd, &fwd)))
		return 0;
	if (fwd && !cl_direct_fwd_may(req)) {
		free(sock);
		return 0;
	}
	rep = xcalloc(1, sizeof(*rep));
	if (fwd) {
		int fd = sup_call_open_at(sock, req, rep, timeout_ms);

		r = fd < 0 ? fd : 0;
		if (fd >= 0)
			close(fd);
		else if (fd != -ETIMEDOUT)
			debug("node %s: '%s' got no answer through the ssh forward (%s): through "
			      "'node call'",
			      nd->name, msg_get(req, "op"), strerror(-fd));
	} else {
		r = sup_request_at(sock, req, rep, timeout_ms);
	}
	free(sock);
	if (r) {
		msg_release(rep);
		free(rep);
		if (r == -ETIMEDOUT && fwd) /* it took the request, said nothing: no second try */
			return error("node %s: no answer from its supervisor to '%s' in %d s",
			             nd->name, msg_get(req, "op"), timeout_ms / 1000);
		return r > 0 || fwd ? 0 : -EPROTO;
	}
	debug("node %s: '%s' went to its supervisor's socket%s", nd->name, msg_get(req, "op"),
	      fwd ? " (ssh forward)" : "");
	*replies = rep;
	return 1;
}

int cl_node_watch(struct cnode *nd, struct fcall *c, int64_t node_job)
{
	struct msg req, first;
	int fd, fwd;
	char *sock = cl_direct_sock(nd, &fwd);

	if (!sock)
		return live_node_watch(nd, c, node_job);
	/* The supervisor's answers on its connection are what `node call` would write. */
	msg_init(&req);
	msg_add(&req, "op", "watch");
	msg_add_int(&req, "id", node_job);
	fd = sup_call_open_at(sock, &req, &first, CL_WATCH_ANSWER_MS);
	msg_release(&req);
	free(sock);
	if (fd < 0) {
		/* None listens (the node call starts one), or it did not answer in time. */
		if (fd != -ENOENT && fd != -ECONNREFUSED && !fwd)
			info("node %s: its supervisor did not answer the watch of job %lld (%s): "
			     "watching it through 'node call'",
			     nd->name, (long long)node_job, strerror(-fd));
		msg_release(&first);
		return live_node_watch(nd, c, node_job);
	}
	fcall_start_fd(c, nd->r, fd, &first);
	msg_release(&first);
	return 0;
}

int cl_call_many(struct cnode *nd, const struct msg *req, struct msg **replies, int timeout_ms)
{
	char who[256];
	char *script;
	int r;

	*replies = NULL;
	if (need_exe(nd))
		return -EINVAL;
	if (nd->spare) {
		/* The install session's channel, still open: no new one. */
		struct buf in = BUF_INIT(PROTO_MAX_MSG + PROTO_HDR),
		           out = BUF_INIT(CL_CALL_OUT_MAX);
		int status = 0;

		proto_put(&in, req);
		r = boot_spare_call(nd->spare, in.p, in.len, &out, timeout_ms, &status);
		nd->spare = NULL;
		if (r != -EAGAIN) {
			debug("node %s: '%s' went over the install session", nd->name,
			      msg_get(req, "op"));
			if (!r)
				r = spare_replies(nd, req, &out, status, replies);
			if (r > 0)
				cl_direct_learn(nd, &(*replies)[r - 1]);
		}
		buf_release(&in);
		buf_release(&out);
		if (r != -EAGAIN)
			return r;
	}
	r = direct_call(nd, req, replies, timeout_ms);
	if (r)
		return r;
	script = live_node_call_script(nd);
	xsnprintf(who, sizeof(who), "node %.200s", nd->name);
	r = fcall_many(nd->r, who, script, req, replies, timeout_ms);
	if (r == -ENOEXEC)
		debug("node %s: skiff is gone from the node", nd->name);
	if (r > 0)
		cl_direct_learn(nd, &(*replies)[r - 1]);
	free(script);
	return r;
}

int cl_call(struct cnode *nd, const struct msg *req, struct msg *reply, int timeout_ms)
{
	struct msg *v;
	int n = cl_call_many(nd, req, &v, timeout_ms), i;

	msg_init(reply);
	if (n < 0)
		return n;
	/* One request, one answer: the last frame is it. */
	msg_release(reply);
	*reply = v[n - 1];
	for (i = 0; i < n - 1; i++)
		msg_release(&v[i]);
	free(v);
	if (msg_get(reply, "error"))
		return error("node %s: %s", nd->name, msg_get(reply, "error"));
	return 0;
}

int cl_submit(struct cnode *nd, const struct msg *spec, int64_t *job_id)
{
	struct msg rep;
	int64_t id;
	int r = cl_call(nd, spec, &rep, SUBMIT_TIMEOUT_MS);

	if (r && msg_get(&rep, "too_big"))
		r = -E2BIG; /* the node can never run it (printed) */
	if (!r && (msg_get_int(&rep, "id", &id) || id <= 0))
		r = error("node %s: the submit's answer has no job id", nd->name);
	if (!r)
		*job_id = id;
	msg_release(&rep);
	return r;
}

/* A submit's answer: 0 and the job id in *id, or the refusal (printed; -E2BIG: never). */
static int submit_answer(const struct cnode *nd, const struct msg *rep, int64_t *id)
{
	if (msg_get(rep, "error")) {
		int r = error("node %s: submit failed: %s", nd->name, msg_get(rep, "error"));

		return msg_get(rep, "too_big") ? -E2BIG : r; /* -E2BIG: it can never run there */
	}
	if (msg_get_int(rep, "id", id) || *id <= 0)
		return error("node %s: the submit's answer has no job id", nd->name);
	return 0;
}

/*
 * The followed submit req over the node's install session, still open (nd->spare, used
 * up here): its answer into rep and f the follower, 1; 0 when the session could not
 * carry it (nothing was sent); or -errno (printed; nothing runs).
 */
static int spare_submit_follow(struct cnode *nd, const struct msg *req, struct msg *rep,
                               struct cl_follower *f)
{
	struct buf in = BUF_INIT(PROTO_MAX_MSG + PROTO_HDR);
	struct boot_spare *sp = nd->spare;
	int r, rc, from, status = 0;
	struct fcall c;
	pid_t none;

	nd->spare = NULL;
	proto_put(&in, req);
	r = boot_spare_open(sp, in.p, in.len, &from);
	buf_release(&in);
	if (r)
		return r == -EAGAIN ? 0 : r;
	debug("node %s: the followed submit went over the install session", nd->name);
	/* Its answers are read as a connection's: the session's process is the spare's. */
	fcall_start_fd(&c, nd->r, from, NULL);
	r = fcall_recv(&c, rep, now_ms() + SUBMIT_TIMEOUT_MS);
	if (r == 1) {
		r = fcall_detach(&c, &none, &f->fd, NULL, &f->rest);
		if (!r) {
			f->sp = sp;
			return 1;
		}
		r = error("node %s: cannot keep the job's first log bytes: %s", nd->name,
		          strerror(-r));
	}
	if (r)
		boot_spare_kill(sp, SIGKILL);
	fcall_end(&c, &status); /* closes from */
	fcall_release(&c);
	rc = boot_spare_end(sp, &status);
	if (r == -ETIMEDOUT)
		return error("node %s: no answer to the submit in %d s", nd->name,
		             SUBMIT_TIMEOUT_MS / 1000);
	if (r < 0)
		return error("node %s: cannot read the submit's answer: %s", nd->name,
		             strerror(-r));
	if (rc == -EHOSTUNREACH)
		return error("node %s: submit failed: the connection failed (see above)", nd->name);
	return rc ? rc : error("node %s: submit failed (exit status %d)", nd->name, status);
}

/* A watch's "ended" answer: the job's `node logs` exit code, or -1. */
static int ended_code(const struct msg *m)
{
	const char *st = msg_get(m, "status");

	return st && job_status_parse(st) >= 0 ? job_exit_code(job_status_parse(st)) : -1;
}

static int direct_watch(const char *sock, int64_t id, int *code);

/*
 * The followed submit req on the node's supervisor's socket, reached straight
 * (cl_direct.h), with its logs asked for on the same connection ("stream": the
 * supervisor hands it to a follower of its own): 1 with the answer in rep and, unless it
 * is a refusal, f the follower; 0 when it did not go that way (nothing answered, or an
 * answer without "stream"): the caller goes through `node call`, where the submit's key
 * finds a job already made. No error is printed here.
 */
static int direct_submit_follow(struct cnode *nd, const struct msg *req, struct msg *rep,
                                struct cl_follower *f)
{
	struct msg sreq;
	int64_t id;
	int fd, fwd;
	char *sock;

	if (!msg_get(req, "submit_key") || !(sock = cl_direct_sock(nd, &fwd)))
		return 0;
	msg_init(&sreq);
	for (size_t k = 0; k < req->n; k++)
		msg_add(&sreq, req->keys[k], req->vals[k]);
	msg_add(&sreq, "stream", "1");
	fd = sup_call_open_at(sock, &sreq, rep, SUBMIT_TIMEOUT_MS);
	msg_release(&sreq);
	if (fd == -ETIMEDOUT) { /* it took the request and says nothing: no second try */
		free(sock);
		return error("node %s: no answer to the submit in %d s", nd->name,
		             SUBMIT_TIMEOUT_MS / 1000);
	}
	if (fd < 0) {
		free(sock);
		debug("node %s: its supervisor's socket%s took no followed submit (%s): through "
		      "'node call'",
		      nd->name, fwd ? " (ssh forward)" : "", strerror(-fd));
		return 0;
	}
	if (msg_get(rep, "error")) {
		free(sock);
		close(fd);
		return 1;
	}
	if (!msg_get(rep, "stream") || msg_get_int(rep, "id", &id) || id <= 0) {
		/* An older supervisor, or one that could not hand the connection over. */
		free(sock);
		close(fd);
		msg_release(rep);
		msg_init(rep);
		debug("node %s: its supervisor did not stream the job's logs: through 'node call'",
		      nd->name);
		return 0;
	}
	debug("node %s: the followed submit went to its supervisor's socket%s", nd->name,
	      fwd ? " (ssh forward)" : "");
	f->fd = fd;
	f->direct_id = id;
	/*
	 * The job's end code comes on a watch opened now, while the job runs: when its logs
	 * end, the end is there already, with no round trip after them.
	 */
	f->watch = direct_watch(sock, id, &f->end_code);
	free(sock);
	return 1;
}

/*
 * A watch of job id on sock: its connection, on which the end comes; or -1 when the first
 * answer already told the end (its `node logs` exit code into *code) or none came.
 */
static int direct_watch(const char *sock, int64_t id, int *code)
{
	struct msg req, rep;
	int fd;

	msg_init(&req);
	msg_add(&req, "op", "watch");
	msg_add_int(&req, "id", id);
	fd = sup_call_open_at(sock, &req, &rep, CL_WATCH_ANSWER_MS);
	msg_release(&req);
	if (fd >= 0 && msg_get(&rep, "error")) {
		close(fd);
		fd = -1;
	} else if (fd >= 0 && msg_get(&rep, "ended")) {
		*code = ended_code(&rep);
		close(fd);
		fd = -1;
	}
	msg_release(&rep);
	return fd < 0 ? -1 : fd;
}

/*
 * A direct follower's end (its connection closed): the job's `node logs` exit code, from
 * its watch (or, when it has none, a new one, which answers at once for a job that has
 * ended); -1 when the job runs on (the stream ended early) or no answer came in time.
 */
static int direct_end_code(struct cnode *nd, struct cl_follower *f)
{
	int code = f->end_code, fwd;
	char *sock;

	if (code < 0 && f->watch >= 0) {
		struct msg m;

		msg_init(&m);
		if (!proto_recv(f->watch, &m, CL_WATCH_ANSWER_MS) && msg_get(&m, "ended"))
			code = ended_code(&m);
		msg_release(&m);
	}
	if (f->watch >= 0)
		close(f->watch);
	f->watch = -1;
	if (code < 0 && (sock = cl_direct_sock(nd, &fwd))) {
		int fd = direct_watch(sock, f->direct_id, &code);

		if (fd >= 0)
			close(fd); /* watching: it has not ended */
		free(sock);
	}
	return code;
}

void cl_follower_none(struct cl_follower *f)
{
	f->pid = -1;
	f->sp = NULL;
	f->fd = -1;
	f->in = -1;
	f->direct_id = 0;
	f->watch = -1;
	f->end_code = -1;
}

int cl_follower_live(const struct cl_follower *f)
{
	return f->pid > 0 || f->sp || f->direct_id > 0;
}

void cl_follower_signal(const struct cl_follower *f, int sig)
{
	if (f->sp)
		boot_spare_kill(f->sp, sig);
	else if (f->pid > 0)
		kill(-f->pid, sig);
}

int cl_follower_end(struct cl_follower *f, struct cnode *nd, int *lost)
{
	int code = -1, wst = 0, rc;

	*lost = 0;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (f->in >= 0)
		close(f->in);
	f->in = -1;
	if (f->direct_id > 0) {
		code = direct_end_code(nd, f);
		f->direct_id = 0;
		f->end_code = -1;
		return code;
	}
	if (f->sp) {
		struct boot_spare *sp = f->sp;

		f->sp = NULL; /* its EOF came after its end: nothing left to signal */
		rc = boot_spare_end(sp, &code);
		if (rc == -EHOSTUNREACH)
			*lost = 1, code = 255;
		else if (rc)
			code = -1;
		return code;
	}
	if (f->pid <= 0)
		return -1;
	while (waitpid(f->pid, &wst, 0) < 0 && errno == EINTR)
		;
	f->pid = -1;
	code = WIFEXITED(wst) ? WEXITSTATUS(wst) : -1;
	/* ssh's 255, or that of the exec runners' wrapper: the node is gone. */
	*lost = code == 255 && nd->r->ops->transport_status == 255;
	return code;
}

int cl_submit_follow(struct cnode *nd, const struct msg *spec, int64_t *job_id,
                     struct cl_follower *f)
{
	struct msg rep, req;
	struct fcall c;
	int64_t id;
	int r, got, status = 0;

	cl_follower_none(f);
	buf_init(&f->rest, PROTO_MAX_MSG + PROTO_HDR);
	if (need_exe(nd))
		return -EINVAL;
	msg_init(&rep);
	msg_init(&req);
	/* The spec, and "follow": the node answers, then streams the job's logs. */
	for (size_t k = 0; k < spec->n; k++)
		msg_add(&req, spec->keys[k], spec->vals[k]);
	msg_add(&req, "follow", "1");
	/*
	 * Its stdin stays open while we read (the install session's, or FCALL_KEEP_IN): its
	 * EOF tells the node we are gone, over a channel that carries no hang-up of our end
	 * (ssh's: sshd holds the follower's stdout).
	 */
	msg_add(&req, "stdin_held", "1");
	if ((nd->spare && (r = spare_submit_follow(nd, &req, &rep, f))) ||
	    (!nd->spare && (r = direct_submit_follow(nd, &req, &rep, f)))) {
		/* The install session or the socket carried it: its answer is in rep, as below. */
		msg_release(&req);
		if (r < 0) {
			buf_release(&f->rest);
			msg_release(&rep);
			return r;
		}
		r = submit_answer(nd, &rep, &id);
		if (!r) {
			*job_id = id;
			cl_direct_learn(nd, &rep);
			msg_release(&rep);
			return 0;
		}
		cl_follower_signal(f, SIGKILL); /* a refusal: it ends by itself, or now */
		cl_follower_end(f, nd, &got);
		buf_release(&f->rest);
		msg_release(&rep);
		return r;
	}
	r = live_node_call_start(nd, &c, &req, FCALL_KEEP_IN);
	msg_release(&req);
	if (r) {
		buf_release(&f->rest);
		return r;
	}
	r = fcall_recv(&c, &rep, now_ms() + SUBMIT_TIMEOUT_MS);
	got = r == 1;
	if (got)
		r = submit_answer(nd, &rep, &id); /* a refusal is printed */
	if (got && !r) {
		/* The call goes on as the job's follower; what came after the answer is its log. */
		r = fcall_detach(&c, &f->pid, &f->fd, &f->in, &f->rest);
		if (!r) {
			*job_id = id;
			cl_direct_learn(nd, &rep);
			msg_release(&rep);
			return 0;
		}
		r = error("node %s: cannot keep the job's first log bytes: %s", nd->name,
		          strerror(-r));
	} else if (!got && r == -ETIMEDOUT) {
		fcall_kill(&c);
		r = error("node %s: no answer to the submit in %d s", nd->name,
		          SUBMIT_TIMEOUT_MS / 1000);
	} else if (!got && r < 0) {
		r = error("node %s: cannot read the submit's answer: %s", nd->name, strerror(-r));
	}
	if (!got && r == 0) {
		/* No answer: the process's end tells why. */
		int rc = fcall_end(&c, &status);

		if (rc == -EHOSTUNREACH)
			r = error("node %s: submit failed: the connection failed (see above)",
			          nd->name);
		else if (rc)
			r = rc;
		else if (status == 127)
			r = -ENOEXEC; /* skiff is gone from the node: the caller bootstraps */
		else
			r = error("node %s: submit failed (exit status %d)", nd->name, status);
	} else {
		/* A refusal (it ends by itself), or no answer in time: either way, it goes. */
		fcall_kill(&c);
		fcall_end(&c, &status);
	}
	fcall_release(&c);
	msg_release(&rep);
	buf_release(&f->rest);
	return r;
}

int cl_queue(struct cnode *nd, const int64_t *ids, size_t nids, const char *key,
             int (*fn)(const struct msg *job, void *arg), void *arg)
{
	struct msg req, *v = NULL;
	int n, i, r = 0;
	size_t k;

	msg_init(&req);
	msg_add(&req, "op", "queue");
	for (k = 0; k < nids; k++)
		msg_add_int(&req, "id", ids[k]);
	if (key)
		msg_add(&req, "key", key);
	n = cl_call_many(nd, &req, &v, CL_NODE_CALL_MS);
	msg_release(&req);
	if (n < 0)
		return n;
	if (msg_get(&v[n - 1], "error") || !msg_get(&v[n - 1], "end"))
		r = error("node %s: cannot read its queue: %s", nd->name,
		          msg_get(&v[n - 1], "error") ? msg_get(&v[n - 1], "error")
		                                      : "the answer was cut short");
	for (i = 0; i < n - 1 && !r; i++)
		if (msg_get(&v[i], "job"))
			r = fn(&v[i], arg);
	cl_replies_free(v, n);
	return r;
}

/* Sends the cancel request req (released here): cl_call()'s result. */
static int send_cancel(struct cnode *nd, struct msg *req)
{
	struct msg rep;
	int r = cl_call(nd, req, &rep, CL_NODE_CALL_MS);

	msg_release(req);
	msg_release(&rep);
	return r;
}

int cl_cancel_jobs(struct cnode *nd, const int64_t *ids, size_t nids, int all)
{
	struct msg req;
	size_t k;

	msg_init(&req);
	msg_add(&req, "op", "cancel");
	if (all)
		msg_add(&req, "all", "1");
	for (k = 0; k < nids; k++)
		msg_add_int(&req, "id", ids[k]);
	return send_cancel(nd, &req);
}

/* The first job record's id, for cl_find_key(). */
static int first_id(const struct msg *job, void *arg)
{
	int64_t *id = arg;

	if (!*id && msg_get_int(job, "job", id))
		*id = 0;
	return 0;
}

int cl_find_key(struct cnode *nd, const char *key, int rank, int64_t *job_id)
{
	char *k = xasprintf("%s/%d", key, rank);
	int64_t id = 0;
	int r = cl_queue(nd, NULL, 0, k, first_id, &id);

	free(k);
	if (r)
		return r;
	if (!id)
		return -ENOENT;
	*job_id = id;
	return 0;
}

int cl_cancel_rank(struct cnode *nd, int64_t id, const char *key, int rank)
{
	struct msg req;

	msg_init(&req);
	msg_add(&req, "op", "cancel");
	msg_add_int(&req, "id", id);
	msg_addf(&req, "of_key", "%s/%d", key, rank);
	return send_cancel(nd, &req);
}

int cl_cancel_key(struct cnode *nd, const char *key, int rank)
{
	struct msg req;

	msg_init(&req);
	msg_add(&req, "op", "cancel");
	msg_addf(&req, "key", "%s/%d", key, rank);
	return send_cancel(nd, &req);
}
