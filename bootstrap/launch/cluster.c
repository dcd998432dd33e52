#include "bootstrap/launch/cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/launch/install.h"
#include "bootstrap/sync/sync.h"
#include "lib/log.h"
#include "lib/quote.h"
#include "lib/util.h"
#include "lib/banned.h"

#define BOOT_TIMEOUT_MS 120000
#define SUBMIT_TIMEOUT_MS 60000

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
			infra_release(&inf);
			return error("node %s: cannot set up its runner", nd->name);
		}
		nd->exe = *cn->skiff_exe ? xstrdup(cn->skiff_exe) : NULL;
		nd->addr = xstrdup(cn->addr && *cn->addr ? cn->addr : nd->ip);
		nd->active = -1;
	}
	infra_release(&inf);
	return 0;
}

void cl_close(struct clive *cl)
{
	size_t i;

	for (i = 0; i < cl->n; i++) {
		runner_free(cl->nodes[i].r);
		free(cl->nodes[i].name);
		free(cl->nodes[i].ip);
		free(cl->nodes[i].exe);
		free(cl->nodes[i].addr);
	}
	free(cl->nodes);
	free(cl->name);
	free(cl->infra);
	memset(cl, 0, sizeof(*cl));
}

struct boot_job {
	struct cnode *nd;
	pthread_t th;
	int started;
	int r;
	struct install_result res;
};

static void *boot_thread(void *arg)
{
	struct boot_job *j = arg;

	/* The node's runner is this thread's alone (runner.h); errors are printed. */
	j->r = boot_install_and_up(j->nd->r, &j->res);
	return NULL;
}

/*
 * One thread per node, so that N nodes bootstrap in the time of the slowest. Each
 * thread drives only its own node's runner; processes are started through lib/spawn,
 * which prepares everything before it forks.
 */
int cl_bootstrap(struct clive *cl)
{
	struct boot_job *jobs = xcalloc(cl->n ? cl->n : 1, sizeof(*jobs));
	const char *img, *sha;
	size_t i, img_len;
	int failed = 0, e;

	/* Load (and hash) our image once, before the threads start, so they share it. */
	if (boot_self_image(&img, &img_len, &sha)) {
		free(jobs);
		return -1;
	}
	for (i = 0; i < cl->n; i++) {
		jobs[i].nd = &cl->nodes[i];
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
		if (jobs[i].r) {
			failed = -1;
		} else {
			nd->copied = jobs[i].res.copied;
			nd->sup_started = jobs[i].res.sup_started;
			free(nd->exe);
			nd->exe = xstrdup(jobs[i].res.remote_exe);
			nd->active = jobs[i].res.active;
			if (jobs[i].res.address[0]) {
				free(nd->addr);
				nd->addr = xstrdup(jobs[i].res.address);
			}
		}
	}
	free(jobs);
	return failed ? -1 : 0;
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
	struct sync_manifest remote;
	struct sync_stats st = {0};
	struct buf q = BUF_INIT(4096), out = BUF_INIT(SYNC_MANIFEST_MAX), err = BUF_INIT(1 << 20);
	char *script = NULL, tmpl[] = "/tmp/skiff-sync.XXXXXX";
	int fd = -1, status = 0, r;
	unsigned flags = is_file ? SYNC_FILE : 0;

	sync_manifest_init(&remote);
	if (need_exe(nd))
		return -EINVAL;
	/* dst is expanded by the node (its own $HOME), so it is passed quoted as is. */
	sh_quote(&q, dst);
	script = xasprintf("exec %s __sync-manifest %s%s", nd->exe, is_file ? "--file " : "", q.p);
	r = runner_capture(nd->r, script, NULL, 0, &out, &err, CL_NODE_CALL_MS, &status);
	if (!r && status) {
		buf_rtrim(&err);
		r = error("node %s: cannot read what is at %s: %s", nd->name, dst, err.p);
	}
	if (r)
		goto out;
	r = sync_manifest_parse(&remote, out.p, out.len, nd->name);
	if (r)
		goto out;
	/* The stream goes through a temp file: the runner's stdin is then a plain file. */
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0) {
		r = error_errno("cannot create a temp file for the sync");
		goto out;
	}
	unlink(tmpl);
	r = sync_pack(src, &remote, fd, flags | SYNC_GZIP, &st);
	if (r)
		goto out;
	if (lseek(fd, 0, SEEK_SET) < 0) {
		r = error_errno("lseek");
		goto out;
	}
	free(script);
	script = xasprintf("exec %s __sync-recv %s%s", nd->exe, is_file ? "--file " : "", q.p);
	buf_reset(&out);
	buf_reset(&err);
	{
		struct runner_io io = {fd, RUNNER_NULL, RUNNER_INHERIT};

		r = runner_run(nd->r, script, &io, BOOT_TIMEOUT_MS, &status);
	}
	if (!r && status)
		r = error("node %s: the sync to %s failed (status %d)", nd->name, dst, status);
out:
	if (fd >= 0)
		close(fd);
	free(script);
	sync_manifest_release(&remote);
	buf_release(&q);
	buf_release(&out);
	buf_release(&err);
	return r;
}

int cl_submit(struct cnode *nd, const struct msg *spec, int64_t *job_id)
{
	struct buf in = BUF_INIT(PROTO_MAX_MSG + PROTO_HDR), out = BUF_INIT(1 << 16);
	struct buf err = BUF_INIT(1 << 16);
	unsigned char hdr[PROTO_HDR];
	char *script;
	int status = 0, r;
	long id;

	if (need_exe(nd))
		return -EINVAL;
	proto_header(spec, hdr);
	buf_add(&in, hdr, sizeof(hdr));
	buf_add(&in, spec->raw.p, spec->raw.len);
	script = xasprintf("exec %s node submit --spec -", nd->exe);
	r = runner_capture(nd->r, script, in.p, in.len, &out, &err, SUBMIT_TIMEOUT_MS, &status);
	if (!r && status == 127) {
		/* The shell found no skiff there: the caller may bootstrap and retry. */
		debug("node %s: skiff is gone from the node (%s)", nd->name, err.p);
		r = -ENOEXEC;
	} else if (!r && status) {
		buf_rtrim(&err);
		r = error("node %s: submit failed: %s", nd->name, err.len ? err.p : "no message");
	}
	if (!r) {
		buf_rtrim(&out);
		if (parse_long(out.p, 1, INT64_MAX, &id))
			r = error("node %s: submit answered '%.80s', not a job id", nd->name,
			          out.p);
		else
			*job_id = id;
	}
	free(script);
	buf_release(&in);
	buf_release(&out);
	buf_release(&err);
	return r;
}

/* Reads from fd until a newline is in b, EOF, an error or the deadline: 1, 0 (EOF), -errno. */
static int read_line_until(int fd, struct buf *b, int64_t deadline)
{
	for (;;) {
		struct pollfd pf = {fd, POLLIN, 0};
		char blk[4096];
		int64_t left = deadline - now_ms();
		ssize_t got;

		if (memchr(b->p, '\n', b->len))
			return 1;
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pf, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got = read(fd, blk, sizeof(blk));
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return 0;
		if (buf_add(b, blk, (size_t)got))
			return -ENOBUFS;
	}
}

int cl_submit_follow(struct cnode *nd, const struct msg *spec, int64_t *job_id,
                     struct cl_follower *f)
{
	struct runner_io io = {-1, -1, RUNNER_INHERIT};
	unsigned char hdr[PROTO_HDR];
	int in[2] = {-1, -1}, out[2] = {-1, -1}, r, wst = 0;
	char *script, *nl;
	long id;

	f->pid = -1;
	f->fd = -1;
	buf_init(&f->rest, 1 << 20);
	if (need_exe(nd))
		return -EINVAL;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
		r = error_errno("cannot make a pipe");
		goto fail;
	}
	/* 127 without the shell's own "not found" line: the caller bootstraps quietly. */
	script = xasprintf("[ -x %s ] || exit 127; exec %s -q node submit --follow --spec -",
	                   nd->exe, nd->exe);
	io.in_fd = in[0];
	io.out_fd = out[1];
	r = runner_spawn(nd->r, script, 0, &io, &f->pid);
	free(script);
	close(in[0]);
	close(out[1]);
	in[0] = out[1] = -1;
	if (r)
		goto fail;
	proto_header(spec, hdr);
	/* A node that quit early makes these fail (EPIPE): its exit status tells why. */
	if (!write_all(in[1], hdr, sizeof(hdr)))
		write_all(in[1], spec->raw.p, spec->raw.len);
	close(in[1]);
	in[1] = -1;
	r = read_line_until(out[0], &f->rest, now_ms() + SUBMIT_TIMEOUT_MS);
	if (r == 1) {
		nl = memchr(f->rest.p, '\n', f->rest.len);
		*nl = '\0';
		if (parse_long(f->rest.p, 1, INT64_MAX, &id)) {
			r = error("node %s: submit answered '%.80s', not a job id", nd->name,
			          f->rest.p);
			goto fail;
		}
		*job_id = id;
		{
			size_t skip = (size_t)(nl - f->rest.p) + 1;

			memmove(f->rest.p, f->rest.p + skip, f->rest.len - skip);
			buf_setlen(&f->rest, f->rest.len - skip);
		}
		f->fd = out[0];
		return 0;
	}
	if (r == -ETIMEDOUT) {
		kill(-f->pid, SIGKILL);
		r = error("node %s: no answer to the submit in %d s", nd->name,
		          SUBMIT_TIMEOUT_MS / 1000);
	} else if (r < 0) {
		r = error("node %s: cannot read the submit's answer: %s", nd->name, strerror(-r));
	}
	while (waitpid(f->pid, &wst, 0) < 0 && errno == EINTR)
		;
	f->pid = -1;
	if (r)
		goto fail;
	if (WIFEXITED(wst) && WEXITSTATUS(wst) == 127) {
		debug("node %s: skiff is gone from the node", nd->name);
		r = -ENOEXEC;
	} else if (WIFEXITED(wst) && WEXITSTATUS(wst) == nd->r->ops->transport_status &&
	           nd->r->ops->transport_status) {
		r = error("node %s: submit failed: the connection failed (see above)", nd->name);
	} else {
		r = error("node %s: submit failed (exit status %d)", nd->name,
		          WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst));
	}
fail:
	if (f->pid > 0) {
		kill(-f->pid, SIGTERM);
		while (waitpid(f->pid, &wst, 0) < 0 && errno == EINTR)
			;
	}
	f->pid = -1;
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	buf_release(&f->rest);
	return r;
}

int cl_queue_json(struct cnode *nd, struct buf *out)
{
	int status = 0;
	int r = cl_capture_skiff(nd, "node queue --json", out, CL_NODE_CALL_MS, &status);

	if (!r && status)
		r = error("node %s: cannot read its queue (status %d)", nd->name, status);
	return r;
}

/* "KEY/RANK", quoted for the node's shell. */
static void rank_key(struct buf *q, const char *key, int rank)
{
	char *k = xasprintf("%s/%d", key, rank);

	sh_quote(q, k);
	free(k);
}

int cl_find_key(struct cnode *nd, const char *key, int rank, int64_t *job_id)
{
	struct buf q = BUF_INIT(0), out = BUF_INIT(1 << 16);
	char *args;
	int status = 0, r;
	long id;

	rank_key(&q, key, rank);
	args = xasprintf("node queue --porcelain --key %s", q.p);
	r = cl_capture_skiff(nd, args, &out, CL_NODE_CALL_MS, &status);
	if (!r && status)
		r = error("node %s: cannot look up rank %d's job (status %d)", nd->name, rank,
		          status);
	if (!r) {
		char *tab = strchr(out.p, '\t');

		if (!out.len)
			r = -ENOENT;
		else if (!tab || (*tab = '\0', parse_long(out.p, 1, INT64_MAX, &id)))
			r = error("node %s: its queue answered '%.80s'", nd->name, out.p);
		else
			*job_id = id;
	}
	free(args);
	buf_release(&q);
	buf_release(&out);
	return r;
}

int cl_cancel_key(struct cnode *nd, const char *key, int rank)
{
	struct buf q = BUF_INIT(0);
	char *args;
	int status = 0, r;

	rank_key(&q, key, rank);
	args = xasprintf("node cancel --key %s >/dev/null", q.p);
	r = cl_exec_skiff(nd, args, CL_NODE_CALL_MS, &status);
	if (!r && status)
		r = error("node %s: cannot cancel rank %d's job (status %d)", nd->name, rank,
		          status);
	free(args);
	buf_release(&q);
	return r;
}
