/*
 * What every runner can do, built once on the one argv its ops build: run and wait with a
 * deadline, run with stdin and captured output, start in the background. See
 * bootstrap/infra/runner.h for the contract and docs/bootstrap.md for the design.
 *
 * The wait is one poll() over the stdin pipe, the output pipes and a pidfd for the
 * process, with the caller's deadline. It ends when the process exits, not when the pipes
 * reach EOF: something the script left in the background (a daemon that kept stdout) must
 * not hold the caller. What the process wrote before it exited is still in the pipes and
 * is drained then.
 */
#include "bootstrap/infra/runner.h"

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
/* How often runner_close_within() looks, where there is no pidfd to wait on. */
#define CLOSE_POLL_MS 10

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

struct runner *runner_twin(const struct runner *r)
{
	struct runner *t = runner_new(r->ops, r->name, r->ip);

	t->priv = r->priv;
	t->diag_dir = r->diag_dir;
	t->twin = 1;
	return t;
}

void runner_free(struct runner *r)
{
	if (!r)
		return;
	if (!r->twin && r->ops && r->ops->release)
		r->ops->release(r);
	free(r->name);
	free(r->ip);
	if (!r->twin)
		free(r->diag_dir);
	buf_release(&r->last_error);
	free(r);
}

int runner_node_gone(struct runner *r, int rc)
{
	const char *home = r->ops && r->ops->home_here ? r->ops->home_here(r) : NULL;

	if (rc == -EHOSTUNREACH && r->last_gone)
		return 1;
	return home && access(home, F_OK) < 0 && errno == ENOENT;
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

struct runner_call {
	struct argv av;
	struct env env;
	int has_env;
	char *diag; /* the transport's log for this call (unlinked on release) */
	int diag_fd;
	const char *cwd;
};

static void call_release(struct runner_call *c)
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

static int call_prepare(struct runner *r, const char *script, char *const *cmd, int interactive,
                        int want_diag, struct runner_call *c)
{
	const char *home;
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
	if (cmd)
		rc = r->ops->build_exec ? r->ops->build_exec(r, cmd, &c->av) : -ENOTSUP;
	else
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
		/* A terminal session keeps the terminal's type, as ssh -t passes it on. */
		if (interactive && getenv("TERM"))
			env_set(&c->env, "TERM", getenv("TERM"));
	}
	c->cwd = r->ops->cwd ? r->ops->cwd(r) : NULL;
	/* A node that is a directory here, removed: gone, said as such (runner_node_gone()). */
	home = r->ops->home_here ? r->ops->home_here(r) : NULL;
	if (home && access(home, F_OK) < 0 && errno == ENOENT) {
		buf_reset(&r->last_error);
		buf_addf(&r->last_error, "its directory '%s' is gone", home);
		r->last_gone = 1;
		return node_error(r, -EHOSTUNREACH, "%s", r->last_error.p);
	}
	return 0;
}

/*
 * Whether the process's exit status is the transport's own failure: the transport's
 * status, and a message in its log other than the host-key notice of a first contact.
 * Then r->last_error holds the message (lines joined by "; ") and it is printed.
 */
static int transport_failed(struct runner *r, struct runner_call *c, int code)
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
	r->last_gone = 0;
	for (line = log.p; line && *line; line = next) {
		size_t len;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line += strspn(line, " \t");
		len = strcspn(line, "\r");
		while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
			len--;
		if (len == strlen(RUNNER_GONE_LINE) && !strncmp(line, RUNNER_GONE_LINE, len)) {
			r->last_gone = 1;
			continue;
		}
		if (!len || starts_with(line, "Warning: Permanently added"))
			continue;
		if (r->last_error.len)
			buf_adds(&r->last_error, "; ");
		buf_add(&r->last_error, line, len);
	}
	buf_release(&log);
	if (!r->last_error.len) {
		r->last_gone = 0;
		return 0;
	}
	error("node %s (%s): %s", r->name, r->ip, r->last_error.p);
	return 1;
}

/* --- waiting: stdin feed, output sinks, pidfd, deadline -------------------------------- */

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
	struct spawn_io sio = {.timeout_ms = timeout_ms};
	int raw = -1, rc, step = 0, code;
	struct runner_call c;
	int64_t t0 = now_ms();

	buf_reset(&r->last_error);
	r->last_gone = 0;
	if (!io)
		io = &default_io;
	rc = call_prepare(r, script, NULL, 0, 1, &c);
	if (rc)
		goto out;
	if (capture) {
		sio.in = in ? in : "";
		sio.in_len = in ? in_len : 0;
		sio.out = out;
		sio.err = err;
		o.fd_err = io_fd(RUNNER_INHERIT, 2); /* when err is NULL */
		o.pgrp = SPAWN_PGRP_NEW;
	} else {
		sio.pid_out = io->pid_out;
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
	rc = spawn_run(&o, &sio, &raw);
	if (raw == -1) { /* it never started: no wait status */
		node_error(r, rc, "cannot run '%s' (%s): %s", c.av.v[0], spawn_step_name(step),
		           strerror(-rc));
		goto out;
	}
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
	struct runner_call c;
	int rc, step = 0;

	buf_reset(&r->last_error);
	r->last_gone = 0;
	if (!io)
		io = &default_io;
	rc = call_prepare(r, script, NULL, interactive, 0, &c);
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

/* Closes fd if open and marks it closed. */
static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int proc_open(struct runner *r, const char *script, char *const *argv, unsigned flags,
                     struct runner_proc *p)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
	int rc, step = 0;

	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->to = p->from = p->err = -1;
	buf_reset(&r->last_error);
	r->last_gone = 0;
	p->call = xcalloc(1, sizeof(*p->call));
	rc = call_prepare(r, script, argv, 0, 1, p->call);
	if (rc)
		goto fail;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) ||
	    ((flags & RUNNER_PROC_ERR) && pipe2(err, O_CLOEXEC))) {
		rc = node_error(r, -errno, "cannot make a pipe: %s", strerror(errno));
		goto fail;
	}
	o.argv = p->call->av.v;
	o.envp = p->call->has_env ? p->call->env.v : NULL;
	o.cwd = p->call->cwd;
	o.fd_in = in[0];
	o.fd_out = out[1];
	if (flags & RUNNER_PROC_ERR)
		o.fd_err = err[1];
	else if (flags & RUNNER_PROC_MERGE_ERR)
		o.err_to_out = 1;
	else
		o.fd_err = io_fd(RUNNER_INHERIT, 2);
	/*
	 * No death signal: PR_SET_PDEATHSIG fires when the thread that spawned it ends, and a
	 * session outlives the thread that opened it (a submit thread's follower).
	 */
	o.pgrp = SPAWN_PGRP_NEW;
	o.failed_step = &step;
	rc = spawn(&o, &p->pid);
	if (rc) {
		node_error(r, rc, "cannot run '%s' (%s): %s", p->call->av.v[0],
		           spawn_step_name(step), strerror(-rc));
		p->pid = -1;
		goto fail;
	}
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&err[1]);
	p->to = in[1];
	p->from = out[0];
	p->err = err[0];
	p->t0 = now_ms();
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		close_fd(&in[i]);
		close_fd(&out[i]);
		close_fd(&err[i]);
	}
	call_release(p->call);
	free(p->call);
	p->call = NULL;
	return rc;
}

int runner_open(struct runner *r, const char *script, unsigned flags, struct runner_proc *p)
{
	return proc_open(r, script, NULL, flags, p);
}

int runner_open_argv(struct runner *r, char *const *argv, unsigned flags, struct runner_proc *p)
{
	return proc_open(r, NULL, argv, flags, p);
}

void runner_proc_kill(struct runner_proc *p)
{
	if (p->pid > 0)
		kill(-p->pid, SIGKILL);
}

void runner_proc_forget(struct runner_proc *p)
{
	if (p->call) {
		call_release(p->call);
		free(p->call);
		p->call = NULL;
	}
}

/*
 * 1 once p's process has exited within ms (not reaped: a pidfd tells; without one it is
 * reaped here, p->reaped), 0 while it still runs.
 */
static int exits_within(struct runner_proc *p, int ms)
{
	int64_t end = now_ms() + ms;
	int fd = pidfd_open_pid(p->pid);

	if (fd >= 0) {
		struct pollfd w = {fd, POLLIN, 0};
		int64_t left;

		do {
			left = end - now_ms();
			w.revents = 0;
		} while (poll(&w, 1, left > 0 ? (int)left : 0) < 0 && errno == EINTR);
		close(fd);
		return w.revents != 0;
	}
	for (;;) {
		pid_t got = waitpid(p->pid, &p->raw, WNOHANG);

		if (got == p->pid || (got < 0 && errno != EINTR)) {
			p->reaped = got == p->pid;
			return 1; /* ended, or not ours to wait for: runner_close() says */
		}
		if (now_ms() >= end)
			return 0;
		poll_ms(CLOSE_POLL_MS);
	}
}

int runner_close_within(struct runner *r, struct runner_proc *p, int ms, int *status)
{
	close_fd(&p->to);
	close_fd(&p->from);
	close_fd(&p->err);
	if (ms >= 0 && p->pid > 0 && !p->reaped && !exits_within(p, ms)) {
		warning("node %s: the %s session still ran %d ms after its end; killed", r->name,
		        r->ops->kind, ms);
		runner_proc_kill(p);
	}
	return runner_close(r, p, status);
}

int runner_close(struct runner *r, struct runner_proc *p, int *status)
{
	int raw = 0, rc = 0, code;

	close_fd(&p->to);
	close_fd(&p->from);
	close_fd(&p->err);
	if (p->pid <= 0) {
		runner_proc_forget(p);
		return -EINVAL;
	}
	if (p->reaped)
		raw = p->raw;
	else
		rc = spawn_wait(p->pid, &raw);
	__atomic_store_n(&p->pid, -1, __ATOMIC_RELEASE);
	if (rc) {
		runner_proc_forget(p);
		return node_error(r, rc, "cannot wait for the %s process: %s", r->ops->kind,
		                  strerror(-rc));
	}
	code = status_to_code(raw);
	if (p->call && transport_failed(r, p->call, code)) {
		rc = -EHOSTUNREACH;
	} else {
		*status = code;
		debug("node %s: %s session took %lld ms, exit %d", r->name, r->ops->kind,
		      (long long)(now_ms() - p->t0), code);
	}
	runner_proc_forget(p);
	return rc;
}
