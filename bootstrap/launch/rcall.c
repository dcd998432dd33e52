/* A runner call with pipes, in a thread of its own: see bootstrap/launch/rcall.h. */
#include "bootstrap/launch/rcall.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

/* Bigger pipes: fewer wake-ups between us and ssh on a fast link. */
#define PIPE_SIZE (1 << 20)

static void *call_main(void *arg)
{
	struct rcall *c = arg;
	struct runner_io io = {c->child_in, c->child_out,
	                       c->flags & RCALL_MERGE_ERR ? c->child_out : RUNNER_INHERIT, &c->pid};

	c->rc = runner_run(c->r, c->script, &io, c->timeout_ms, &c->status);
	/* Now the reader sees EOF, whatever the transport still holds. */
	close(c->child_in);
	close(c->child_out);
	return NULL;
}

int rcall_start(struct rcall *c, struct runner *r, const char *script, int timeout_ms,
                unsigned flags, int *to, int *from)
{
	int in[2], out[2];

	memset(c, 0, sizeof(*c));
	if (pipe2(in, O_CLOEXEC) < 0)
		return error_errno("cannot make a pipe");
	if (pipe2(out, O_CLOEXEC) < 0) {
		int e = error_errno("cannot make a pipe");

		close(in[0]);
		close(in[1]);
		return e;
	}
	fcntl(in[1], F_SETPIPE_SZ, PIPE_SIZE);
	fcntl(out[1], F_SETPIPE_SZ, PIPE_SIZE);
	c->r = r;
	c->script = xstrdup(script);
	c->timeout_ms = timeout_ms;
	c->flags = flags;
	c->child_in = in[0];
	c->child_out = out[1];
	if (pthread_create(&c->th, NULL, call_main, c)) {
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		free(c->script);
		c->script = NULL;
		return error("cannot start a thread: out of resources");
	}
	c->started = 1;
	*to = in[1];
	*from = out[0];
	return 0;
}

void rcall_kill(struct rcall *c)
{
	pid_t pid = c->started ? __atomic_load_n(&c->pid, __ATOMIC_ACQUIRE) : 0;

	/* Its own group (runner_run(): stdin is our pipe, not a terminal). */
	if (pid > 0)
		kill(-pid, SIGKILL);
}

int rcall_wait(struct rcall *c, int *status)
{
	if (!c->started)
		return -EINVAL;
	pthread_join(c->th, NULL);
	c->started = 0;
	free(c->script);
	c->script = NULL;
	*status = c->status;
	return c->rc;
}
