/* The launcher's client of skiff's frames over a runner session: see bootstrap/infra/fcall.h. */
#include "bootstrap/infra/fcall.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

/* While its stderr stays open, how often fcall_end() looks whether the process exited. */
#define FCALL_REAP_POLL_MS 50
/* How much of what a process wrote instead of a frame goes into the message. */
#define FCALL_WHY_MAX 2000

/* Writes what is left of the request without blocking; at its end, EOF unless kept open. */
static int send_some(struct fcall *c)
{
	while (c->tx_off < c->tx.len) {
		ssize_t n = write(c->p.to, c->tx.p + c->tx_off, c->tx.len - c->tx_off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0) {
			/* It ended without reading it all: its exit status tells why. */
			c->tx_off = c->tx.len;
			break;
		}
		c->tx_off += (size_t)n;
	}
	buf_release(&c->tx);
	c->tx_off = 0;
	if (!c->keep_in && c->p.to >= 0) {
		close(c->p.to);
		c->p.to = -1;
	}
	return 0;
}

int fcall_start(struct fcall *c, struct runner *r, const char *script, const struct msg *req,
                unsigned flags)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->r = r;
	buf_init(&c->rx, PROTO_MAX_MSG + PROTO_HDR);
	buf_init(&c->err, FCALL_ERR_MAX);
	buf_init(&c->tx, PROTO_MAX_MSG + PROTO_HDR);
	c->keep_in = !!(flags & FCALL_KEEP_IN);
	rc = runner_open(r, script, (flags & FCALL_ERR_KEEP) ? RUNNER_PROC_ERR : 0, &c->p);
	if (rc)
		return rc;
	fcntl(c->p.to, F_SETFL, fcntl(c->p.to, F_GETFL) | O_NONBLOCK);
	if (req)
		proto_put(&c->tx, req);
	return send_some(c);
}

void fcall_start_fd(struct fcall *c, struct runner *r, int fd, const struct msg *first)
{
	memset(c, 0, sizeof(*c));
	c->r = r;
	c->direct = 1;
	buf_init(&c->rx, PROTO_MAX_MSG + PROTO_HDR);
	buf_init(&c->err, FCALL_ERR_MAX);
	buf_init(&c->tx, PROTO_MAX_MSG + PROTO_HDR);
	c->p = (struct runner_proc){.pid = -1, .to = -1, .from = fd, .err = -1};
	if (first)
		proto_put(&c->rx, first);
}

int fcall_fd(const struct fcall *c)
{
	return c->p.from;
}

/* One read from fd into b (what is past b's bound is dropped): 1, 0 at EOF, -errno. */
static int read_into(int fd, struct buf *b, int keep_all)
{
	char blk[16384];
	ssize_t n = read(fd, blk, sizeof(blk));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : -errno;
	if (!n)
		return 0;
	if (keep_all)
		return buf_add(b, blk, (size_t)n) ? -ENOBUFS : 1;
	if (b->len < FCALL_ERR_MAX - 1)
		buf_add(b, blk,
		        (size_t)n < FCALL_ERR_MAX - 1 - b->len ? (size_t)n
		                                               : FCALL_ERR_MAX - 1 - b->len);
	return 1;
}

int fcall_read(struct fcall *c)
{
	int r;

	if (c->eof)
		return 0;
	r = read_into(c->p.from, &c->rx, 1);
	if (r <= 0)
		c->eof = 1;
	return r;
}

int fcall_take(struct fcall *c, struct msg *m)
{
	const char *why;
	int r = proto_take(&c->rx, m, &why);

	if (r < 0)
		debug("node %s: not a frame: %s", c->r->name, why);
	return r;
}

int fcall_recv(struct fcall *c, struct msg *m, int64_t deadline)
{
	for (;;) {
		struct pollfd pf[3];
		int np = 0, r, timeout = -1;

		r = fcall_take(c, m);
		if (r)
			return r;
		if (c->eof)
			return c->rx.len ? -EPROTO : 0;
		if (deadline >= 0) {
			int64_t left = deadline - now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			timeout = left > INT_MAX ? INT_MAX : (int)left;
		}
		pf[np++] = (struct pollfd){c->p.from, POLLIN, 0};
		if (c->p.err >= 0)
			pf[np++] = (struct pollfd){c->p.err, POLLIN, 0};
		if (c->tx.len)
			pf[np++] = (struct pollfd){c->p.to, POLLOUT, 0};
		if (poll(pf, (nfds_t)np, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < np; i++) {
			if (!pf[i].revents)
				continue;
			if (pf[i].fd == c->p.to) {
				send_some(c);
			} else if (pf[i].fd == c->p.err) {
				if (read_into(c->p.err, &c->err, 0) <= 0) {
					close(c->p.err);
					c->p.err = -1;
				}
			} else if ((r = fcall_read(c)) < 0) {
				return r;
			}
		}
	}
}

int fcall_detach(struct fcall *c, pid_t *pid, int *fd, int *in, struct buf *rest)
{
	int r = buf_add(rest, c->rx.p, c->rx.len);

	if (r)
		return r;
	*pid = c->p.pid;
	*fd = c->p.from;
	c->p.pid = -1;
	c->p.from = -1;
	runner_proc_forget(&c->p);
	if (in) {
		*in = c->p.to;
		c->p.to = -1;
	} else if (c->p.to >= 0) {
		close(c->p.to);
		c->p.to = -1;
	}
	fcall_release(c);
	return 0;
}

void fcall_kill(struct fcall *c)
{
	if (c->direct)
		return;
	runner_proc_kill(&c->p);
}

/* Reads its stderr until it would block: 0, or 1 at EOF. */
static int drain_err(struct fcall *c)
{
	for (;;) {
		char blk[4096];
		ssize_t n = read(c->p.err, blk, sizeof(blk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return 1;
		if (c->err.len < FCALL_ERR_MAX - 1)
			buf_add(&c->err, blk,
			        (size_t)n < FCALL_ERR_MAX - 1 - c->err.len
			                ? (size_t)n
			                : FCALL_ERR_MAX - 1 - c->err.len);
	}
}

int fcall_end(struct fcall *c, int *status)
{
	int64_t deadline = now_ms() + FCALL_CLOSE_MS, left;

	/*
	 * Its stdin and stdout first: all it will be sent has been (FCALL_KEEP_IN held stdin
	 * until now), and what it would still write (a caller that stopped reading) is not
	 * wanted: the next write fails and it ends, rather than block while we wait.
	 */
	if (!c->direct) {
		if (c->p.to >= 0)
			close(c->p.to);
		if (c->p.from >= 0)
			close(c->p.from);
		c->p.to = c->p.from = -1;
	}
	/*
	 * What it writes to stderr until it exits is kept (ssh may pass the remote stderr on
	 * after the stdout's EOF); not what a process it left behind writes after. It has
	 * FCALL_CLOSE_MS in all to exit.
	 */
	if (c->p.err >= 0 && c->p.pid > 0) {
		fcntl(c->p.err, F_SETFL, fcntl(c->p.err, F_GETFL) | O_NONBLOCK);
		while (!drain_err(c) && now_ms() < deadline) {
			struct pollfd pf = {c->p.err, POLLIN, 0};
			pid_t w = waitpid(c->p.pid, &c->p.raw, WNOHANG);

			if (w == c->p.pid) {
				c->p.reaped = 1;
				drain_err(c);
				break;
			}
			poll(&pf, 1, FCALL_REAP_POLL_MS);
		}
	}
	buf_release(&c->tx);
	if (c->direct) {
		if (c->p.from >= 0)
			close(c->p.from);
		c->p.from = -1;
		*status = 0;
		return 0;
	}
	left = deadline - now_ms();
	return runner_close_within(c->r, &c->p, left > 0 ? (int)left : 0, status);
}

void fcall_release(struct fcall *c)
{
	buf_release(&c->rx);
	buf_release(&c->err);
	buf_release(&c->tx);
}

void fcall_replies_free(struct msg *v, int n)
{
	while (n > 0)
		msg_release(&v[--n]);
	free(v);
}

int fcall_many(struct runner *r, const char *who, const char *script, const struct msg *req,
               struct msg **replies, int timeout_ms)
{
	const char *op = msg_get(req, "op") ? msg_get(req, "op") : "?";
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	size_t n = 0, alloc = 0;
	struct msg *v = NULL, m;
	struct fcall c;
	int rc, got, status = 0;

	*replies = NULL;
	rc = fcall_start(&c, r, script, req, FCALL_ERR_KEEP);
	if (rc) {
		fcall_release(&c);
		return rc;
	}
	msg_init(&m);
	while ((got = fcall_recv(&c, &m, deadline)) > 0) {
		v = xgrow(v, n, &alloc, sizeof(*v));
		v[n++] = m;
		msg_init(&m);
	}
	msg_release(&m);
	if (got == -ETIMEDOUT)
		fcall_kill(&c);
	rc = fcall_end(&c, &status);
	if (!rc && got == -ETIMEDOUT) {
		error("%s: no answer to '%s' within %d.%03d s; stopped it", who, op,
		      timeout_ms / 1000, timeout_ms % 1000);
		rc = -ETIMEDOUT;
	} else if (!rc && status == 127 && !n)
		rc = -ENOEXEC; /* the caller bootstraps the node again, quietly */
	else if (!rc && (got < 0 || !n)) {
		/* What it said instead: its stderr, else what it wrote that is no frame. */
		struct buf *why = c.err.len ? &c.err : &c.rx;

		buf_rtrim(why);
		if (why->len)
			error("%s: no answer to '%s': %.*s", who, op,
			      (int)(why->len < FCALL_WHY_MAX ? why->len : FCALL_WHY_MAX), why->p);
		else
			error("%s: no answer to '%s' (exit status %d)", who, op, status);
		rc = -EPROTO;
	}
	fcall_release(&c);
	if (rc) {
		fcall_replies_free(v, (int)n);
		return rc;
	}
	*replies = v;
	return (int)n;
}
