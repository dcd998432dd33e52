/*
 * What every runner can do, built once on the one argv its ops build: run and wait with a
 * deadline, run with stdin and captured output, start in the background. See
 * bootstrap/runner.h for the contract and docs/bootstrap.md for the design.
 *
 * The wait is one poll() over the stdin pipe, the output pipes and a pidfd for the
 * process, with the caller's deadline. It ends when the process exits, not when the pipes
 * reach EOF: something the script left in the background (a daemon that kept stdout) must
 * not hold the caller. What the process wrote before it exited is still in the pipes and
 * is drained then.
 */
#include "bootstrap/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/env.h"
#include "lib/log.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

/* How much of the transport's own log we read to explain a failure. */
#define DIAG_MAX (64 << 10)
/* Without pidfds (Linux < 5.3), how often we look whether the process exited. */
#define NO_PIDFD_SLICE_MS 20

/* --- argv ------------------------------------------------------------------------------ */

void argv_init(struct argv *a)
{
	a->v = NULL;
	a->n = a->cap = 0;
}

static void argv_take(struct argv *a, char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? a->cap * 2 : 16;
		a->v = xrealloc(a->v, a->cap * sizeof(*a->v));
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

void argv_push(struct argv *a, const char *s)
{
	argv_take(a, xstrdup(s));
}

void argv_pushf(struct argv *a, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		die("argv_pushf: bad format '%s'", fmt);
	s = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	argv_take(a, s);
}

void argv_release(struct argv *a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	argv_init(a);
}

/* --- runners --------------------------------------------------------------------------- */

struct runner *runner_new(const struct runner_ops *ops, const char *name, const char *ip)
{
	struct runner *r = xcalloc(1, sizeof(*r));

	r->ops = ops;
	r->name = xstrdup(name ? name : "node");
	r->ip = xstrdup(ip ? ip : "?");
	buf_init(&r->last_error, 1 << 16);
	return r;
}

void runner_free(struct runner *r)
{
	if (!r)
		return;
	if (r->ops && r->ops->release)
		r->ops->release(r);
	free(r->name);
	free(r->ip);
	free(r->diag_dir);
	buf_release(&r->last_error);
	free(r);
}

static int node_error(struct runner *r, int code, const char *fmt, ...) SKIFF_PRINTF(3, 4);
static int node_error(struct runner *r, int code, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error("node %s (%s): %s", r->name, r->ip, msg);
	return code;
}

/* --- one call: the argv, its environment, the transport's diag file -------------------- */

struct call {
	struct argv av;
	struct env env;
	int has_env;
	char *diag; /* the transport's log for this call (unlinked on release) */
	int diag_fd;
	const char *cwd;
};

static void call_release(struct call *c)
{
	argv_release(&c->av);
	if (c->has_env)
		env_release(&c->env);
	if (c->diag_fd >= 0)
		close(c->diag_fd);
	if (c->diag) {
		unlink(c->diag);
		free(c->diag);
	}
}

static int call_prepare(struct runner *r, const char *script, int interactive, int want_diag,
                        struct call *c)
{
	int rc;

	memset(c, 0, sizeof(*c));
	argv_init(&c->av);
	c->diag_fd = -1;
	if (want_diag && r->ops->transport_status && r->diag_dir) {
		c->diag = xasprintf("%s/diag.XXXXXX", r->diag_dir);
		c->diag_fd = mkostemp(c->diag, O_CLOEXEC);
		if (c->diag_fd < 0) {
			rc = -errno;
			free(c->diag);
			c->diag = NULL;
			return node_error(r, rc, "cannot create a file in '%s': %s", r->diag_dir,
			                  strerror(-rc));
		}
	}
	r->diag_path = c->diag;
	rc = r->ops->build_argv(r, script, interactive, &c->av);
	r->diag_path = NULL;
	if (!rc && !c->av.n)
		rc = -EINVAL;
	if (rc)
		return node_error(r, rc, "cannot build the %s command: %s", r->ops->kind,
		                  strerror(-rc));
	if (r->ops->build_env) {
		struct argv kv;
		size_t i;

		argv_init(&kv);
		r->ops->build_env(r, &kv);
		env_init(&c->env, 1);
		c->has_env = 1;
		for (i = 0; i < kv.n; i++) {
			if (strchr(kv.v[i], '='))
				env_put(&c->env, kv.v[i]);
			else
				env_unset(&c->env, kv.v[i]);
		}
		argv_release(&kv);
	}
	c->cwd = r->ops->cwd ? r->ops->cwd(r) : NULL;
	return 0;
}

/*
 * Whether the process's exit status is the transport's own failure: the transport's
 * status, and a message in its log other than the host-key notice of a first contact.
 * Then r->last_error holds the message (lines joined by "; ") and it is printed.
 */
static int transport_failed(struct runner *r, struct call *c, int code)
{
	struct buf log = BUF_INIT(DIAG_MAX);
	char tmp[4096];
	char *line, *next;
	off_t off = 0;
	ssize_t n;

	if (!r->ops->transport_status || code != r->ops->transport_status || c->diag_fd < 0)
		return 0;
	while (log.len < DIAG_MAX - 1 && (n = pread(c->diag_fd, tmp, sizeof(tmp), off)) > 0) {
		size_t room = DIAG_MAX - 1 - log.len;

		buf_add(&log, tmp, (size_t)n < room ? (size_t)n : room);
		off += n;
	}
	buf_reset(&r->last_error);
	for (line = log.p; line && *line; line = next) {
		size_t len;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line += strspn(line, " \t");
		len = strcspn(line, "\r");
		while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
			len--;
		if (!len || starts_with(line, "Warning: Permanently added"))
			continue;
		if (r->last_error.len)
			buf_adds(&r->last_error, "; ");
		buf_add(&r->last_error, line, len);
	}
	buf_release(&log);
	if (!r->last_error.len)
		return 0;
	error("node %s (%s): %s", r->name, r->ip, r->last_error.p);
	return 1;
}

/* --- waiting: stdin feed, output sinks, pidfd, deadline -------------------------------- */

struct sink {
	int fd;
	struct buf *b;
};

struct pump {
	int in_fd;
	const char *in;
	size_t in_len, off;
	int epipe;
	struct sink snk[2];
	pid_t pid;
	int pidfd;
	int group;        /* the process leads its own group: kill the group */
	int64_t deadline; /* now_ms() value, or -1 */
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* One read: 1 if it read something, 0 if nothing is there (or EOF: fd closed), or -errno. */
static int sink_read(struct sink *s)
{
	char tmp[32768];
	size_t lim, room;
	ssize_t n;
	int r;

	n = read(s->fd, tmp, sizeof(tmp));
	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return 0;
		r = -errno;
		close_fd(&s->fd);
		return r;
	}
	if (n == 0) {
		close_fd(&s->fd);
		return 0;
	}
	r = buf_add(s->b, tmp, (size_t)n);
	if (r == -ENOBUFS) {
		lim = s->b->max ? s->b->max : BUF_DEFAULT_MAX;
		room = lim - s->b->len;
		if (room && buf_add(s->b, tmp, room))
			r = -ENOMEM;
	}
	if (r) {
		close_fd(&s->fd);
		return r;
	}
	return 1;
}

static int feed(struct pump *p)
{
	size_t left = p->in_len - p->off;
	ssize_t n = write(p->in_fd, p->in + p->off, left < 65536 ? left : 65536);

	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return 0;
		/* The process stopped reading its stdin: its business, not an error. */
		if (errno == EPIPE) {
			p->epipe = 1;
			close_fd(&p->in_fd);
			return 0;
		}
		n = -errno;
		close_fd(&p->in_fd);
		return (int)n;
	}
	p->off += (size_t)n;
	if (p->off == p->in_len)
		close_fd(&p->in_fd);
	return 0;
}

/*
 * Feeds stdin and drains the sinks until the process exits or the deadline passes.
 * Returns 0 (raw wait status in *raw), -ETIMEDOUT (the process, or its group, was
 * killed and reaped), or the first I/O error (-ENOBUFS...) after the process exited.
 */
static int pump_wait(struct pump *p, int *raw)
{
	struct timespec zero = {0, 0};
	sigset_t pipeset, old, pending;
	struct pollfd pf[4];
	int r = 0, rr, i, exited = 0, timed_out = 0, was_pending;

	/* Writing to a process that quit raises SIGPIPE: block it here, swallow ours. */
	sigemptyset(&pipeset);
	sigaddset(&pipeset, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipeset, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);

	p->pidfd = pidfd_open_pid(p->pid);
	while (!exited) {
		int wait_ms = -1;

		if (p->deadline >= 0) {
			int64_t left = p->deadline - now_ms();

			if (left <= 0) {
				timed_out = 1;
				break;
			}
			wait_ms = left > 3600000 ? 3600000 : (int)left;
		}
		if (p->pidfd < 0 && (wait_ms < 0 || wait_ms > NO_PIDFD_SLICE_MS))
			wait_ms = NO_PIDFD_SLICE_MS;
		pf[0].fd = p->in_fd;
		pf[0].events = POLLOUT;
		for (i = 0; i < 2; i++) {
			pf[i + 1].fd = p->snk[i].fd;
			pf[i + 1].events = POLLIN;
		}
		pf[3].fd = p->pidfd;
		pf[3].events = POLLIN;
		if (poll(pf, 4, wait_ms) < 0) {
			if (errno == EINTR)
				continue;
			rr = -errno;
			if (!r)
				r = rr;
			/* Cannot wait any more cleverly: kill it rather than hang. */
			timed_out = 1;
			break;
		}
		if (p->in_fd >= 0 && pf[0].revents) {
			rr = feed(p);
			if (rr && !r)
				r = rr;
		}
		for (i = 0; i < 2; i++) {
			if (p->snk[i].fd < 0 || !pf[i + 1].revents)
				continue;
			rr = sink_read(&p->snk[i]);
			if (rr < 0 && !r)
				r = rr;
		}
		if (p->pidfd < 0 || pf[3].revents) {
			pid_t w = waitpid(p->pid, raw, WNOHANG);

			if (w == p->pid)
				exited = 1;
			else if (w < 0 && errno != EINTR) {
				rr = -errno;
				if (!r)
					r = rr;
				exited = 1;
			}
		}
	}
	if (timed_out) {
		kill(p->group ? -p->pid : p->pid, SIGKILL);
		spawn_wait(p->pid, raw);
		if (!r)
			r = -ETIMEDOUT;
	} else {
		/* What it wrote before it exited is in the pipes; later writers are not ours. */
		for (i = 0; i < 2; i++)
			while (p->snk[i].fd >= 0 && (rr = sink_read(&p->snk[i])) > 0)
				;
	}
	close_fd(&p->in_fd);
	close_fd(&p->snk[0].fd);
	close_fd(&p->snk[1].fd);
	close_fd(&p->pidfd);
	if (p->epipe && !was_pending)
		sigtimedwait(&pipeset, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* A pipe whose parent end is non-blocking; both ends CLOEXEC. */
static int make_pipe(int fds[2], int parent_end)
{
	int r;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	r = set_nonblock(fds[parent_end]);
	if (r) {
		close_fd(&fds[0]);
		close_fd(&fds[1]);
	}
	return r;
}

/* The child's fd for a runner_io value: -1 is /dev/null for spawn(). */
static int io_fd(int v, int ours)
{
	if (v == RUNNER_NULL)
		return -1;
	if (v == RUNNER_INHERIT)
		return fcntl(ours, F_GETFD) < 0 ? -1 : ours;
	return v;
}

static const struct runner_io default_io = {RUNNER_NULL, RUNNER_INHERIT, RUNNER_INHERIT};

/*
 * runner_run() and runner_capture(): with capture, stdin comes from `in` and the output
 * goes to out/err through pipes; otherwise the process gets io's fds.
 */
static int run_wait(struct runner *r, const char *script, const struct runner_io *io, int capture,
                    const char *in, size_t in_len, struct buf *out, struct buf *err, int timeout_ms,
                    int *status)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct pump p = {.in_fd = -1, .snk = {{-1, out}, {-1, err}}, .pidfd = -1};
	int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
	int raw = 0, rc, step = 0, code;
	struct call c;
	int64_t t0 = now_ms();

	buf_reset(&r->last_error);
	if (!io)
		io = &default_io;
	rc = call_prepare(r, script, 0, 1, &c);
	if (rc)
		goto out;
	if (capture) {
		if ((in && in_len && (rc = make_pipe(pin, 1))) ||
		    (out && (rc = make_pipe(pout, 0))) ||
		    (err && err != out && (rc = make_pipe(perr, 0)))) {
			node_error(r, rc, "cannot make a pipe: %s", strerror(-rc));
			goto out;
		}
		o.fd_in = pin[0];
		o.fd_out = pout[1];
		o.err_to_out = err && err == out;
		o.fd_err = err ? perr[1] : io_fd(RUNNER_INHERIT, 2);
		o.pgrp = SPAWN_PGRP_NEW;
	} else {
		o.fd_in = io_fd(io->in_fd, 0);
		o.fd_out = io_fd(io->out_fd, 1);
		o.fd_err = io_fd(io->err_fd, 2);
		/* A process reading our terminal must stay in its foreground group. */
		o.pgrp =
		        io->in_fd == RUNNER_INHERIT && isatty(0) ? SPAWN_PGRP_NONE : SPAWN_PGRP_NEW;
	}
	o.argv = c.av.v;
	o.envp = c.has_env ? c.env.v : NULL;
	o.cwd = c.cwd;
	o.death_sig = SIGTERM;
	o.failed_step = &step;
	rc = spawn(&o, &p.pid);
	close_fd(&pin[0]);
	close_fd(&pout[1]);
	close_fd(&perr[1]);
	if (rc) {
		node_error(r, rc, "cannot run '%s' (%s): %s", c.av.v[0], spawn_step_name(step),
		           strerror(-rc));
		goto out;
	}
	p.in_fd = pin[1];
	p.in = in;
	p.in_len = pin[1] >= 0 ? in_len : 0;
	p.snk[0].fd = pout[0];
	p.snk[1].fd = perr[0];
	pin[1] = pout[0] = perr[0] = -1;
	p.group = o.pgrp == SPAWN_PGRP_NEW;
	p.deadline = timeout_ms >= 0 ? t0 + timeout_ms : -1;
	rc = pump_wait(&p, &raw);
	if (rc == -ETIMEDOUT) {
		node_error(r, rc, "no answer within %d.%03d s; stopped '%s'", timeout_ms / 1000,
		           timeout_ms % 1000, c.av.v[0]);
		goto out;
	}
	code = status_to_code(raw);
	if (transport_failed(r, &c, code)) {
		rc = -EHOSTUNREACH;
		goto out;
	}
	*status = code;
	if (rc == -ENOBUFS)
		node_error(r, rc, "the output of '%s' is over the limit; it was cut", c.av.v[0]);
	else if (rc)
		node_error(r, rc, "cannot talk to '%s': %s", c.av.v[0], strerror(-rc));
	debug("node %s: %s run took %lld ms, exit %d", r->name, r->ops->kind,
	      (long long)(now_ms() - t0), code);
out:
	close_fd(&pin[0]);
	close_fd(&pin[1]);
	close_fd(&pout[0]);
	close_fd(&pout[1]);
	close_fd(&perr[0]);
	close_fd(&perr[1]);
	call_release(&c);
	return rc;
}

int runner_run(struct runner *r, const char *script, const struct runner_io *io, int timeout_ms,
               int *status)
{
	return run_wait(r, script, io, 0, NULL, 0, NULL, NULL, timeout_ms, status);
}

int runner_capture(struct runner *r, const char *script, const char *in, size_t in_len,
                   struct buf *out, struct buf *err, int timeout_ms, int *status)
{
	return run_wait(r, script, NULL, 1, in, in ? in_len : 0, out, err, timeout_ms, status);
}

int runner_spawn(struct runner *r, const char *script, int interactive, const struct runner_io *io,
                 pid_t *pid)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct call c;
	int rc, step = 0;

	if (!io)
		io = &default_io;
	rc = call_prepare(r, script, interactive, 0, &c);
	if (rc)
		goto out;
	o.argv = c.av.v;
	o.envp = c.has_env ? c.env.v : NULL;
	o.cwd = c.cwd;
	o.fd_in = io_fd(io->in_fd, 0);
	o.fd_out = io_fd(io->out_fd, 1);
	o.fd_err = io_fd(io->err_fd, 2);
	o.pgrp = interactive ? SPAWN_PGRP_NONE : SPAWN_PGRP_NEW;
	o.failed_step = &step;
	rc = spawn(&o, pid);
	if (rc)
		node_error(r, rc, "cannot run '%s' (%s): %s", c.av.v[0], spawn_step_name(step),
		           strerror(-rc));
out:
	call_release(&c);
	return rc;
}
