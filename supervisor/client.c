/*
 * The CLI's side of the control socket, and starting the supervisor on demand.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/daemon.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "supervisor/node.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

#define START_TIMEOUT_MS 15000
/*
 * While the supervisor we started has not said it listens (its readiness pipe), how long
 * one wait on the pipe may last before we look whether it exited: the pipe may outlive
 * it in a child of its own. Without the pipe (it ended, or another supervisor won the
 * race), the socket is tried every START_POLL_MS.
 */
#define READY_WAIT_MS 100
#define START_POLL_MS 2
#define REPLACE_TIMEOUT_MS 10000
/* A supervisor that answers "busy" (all its connections taken) is asked again this long. */
#define BUSY_WAIT_MS 3000

/* The last lines of the supervisor's log, to explain a failed start. */
static void show_log_tail(const char *path)
{
	struct buf b = BUF_INIT(1 << 20);
	const char *p;
	int lines = 0;

	if (buf_read_file(&b, path) || !b.len)
		goto out;
	p = b.p + b.len - 1;
	while (p > b.p && lines < 6)
		if (*--p == '\n')
			lines++;
	if (*p == '\n')
		p++;
	fprintf(stderr, "--- last lines of %s ---\n%s", path, p);
out:
	buf_release(&b);
}

/*
 * Stops the running supervisor of another skiff binary and waits (bounded) until it has
 * let go of the lock, so that ours can take it. Its jobs keep running under their shims;
 * ours re-adopts them. The lock, not the pid, says it is gone: a dead supervisor may
 * linger as a zombie until its parent reaps it.
 */
static int stop_other(const struct node_paths *p, pid_t pid)
{
	int64_t deadline = now_ms() + REPLACE_TIMEOUT_MS;
	int fd, held;

	fd = unix_connect(p->sock);
	if (fd >= 0) {
		struct msg req, rep;

		msg_init(&req);
		msg_init(&rep);
		msg_add(&req, "op", "shutdown");
		if (!proto_send(fd, &req))
			proto_recv(fd, &rep, 5000);
		msg_release(&req);
		msg_release(&rep);
		close(fd);
	}
	while ((held = daemon_lock_held(p->lock)) > 0 && now_ms() <= deadline)
		poll(NULL, 0, 5);
	if (held < 0)
		return error("cannot lock '%s': %s", p->lock, strerror(-held));
	if (held)
		return error("the supervisor of another skiff (pid %ld) did not stop within %d s",
		             (long)pid, REPLACE_TIMEOUT_MS / 1000);
	return 0;
}

/*
 * Waits until the supervisor we started (child) listens: 1 when it said so itself (its
 * readiness line: it holds the lock and listens), 0 when a supervisor answers at the
 * socket (ours, or another that won the lock). Else -EAGAIN when it found the lock taken
 * by one that is gone now (it lost to one that was still dying, killed a moment ago) and
 * may_respawn, -EIO when it failed (its log's tail printed), -ETIMEDOUT. Closes ready, the
 * read end of its readiness pipe.
 */
static int await_listening(const struct node_paths *p, pid_t child, int ready, int may_respawn)
{
	int64_t deadline = now_ms() + START_TIMEOUT_MS;
	int r, exited = 0;

	for (;;) {
		int status, fd;

		if (ready >= 0 && !exited) {
			struct pollfd pf = {ready, POLLIN, 0};
			char c;
			ssize_t n = 0;

			/* Its line, or the end of the pipe (then the socket tells). */
			if (poll(&pf, 1, READY_WAIT_MS) > 0 && (n = read(ready, &c, 1)) <= 0) {
				close(ready);
				ready = -1;
			}
			if (n == 1) {
				r = 1;
				break;
			}
		}
		fd = unix_connect(p->sock);

		if (fd >= 0) {
			close(fd);
			r = 0;
			break;
		}
		if (!exited && waitpid(child, &status, WNOHANG) == child) {
			exited = 1;
			if (!(WIFEXITED(status) &&
			      WEXITSTATUS(status) == SUP_EXIT_ALREADY_RUNNING)) {
				error("the supervisor exited at start-up (status %d)",
				      status_to_code(status));
				show_log_tail(p->log);
				r = -EIO;
				break;
			}
		}
		/* No supervisor serves and none holds the lock now: start one again. */
		if (exited && may_respawn && daemon_lock_held(p->lock) == 0) {
			r = -EAGAIN;
			break;
		}
		if (now_ms() > deadline) {
			error("the supervisor did not accept requests within %d s",
			      START_TIMEOUT_MS / 1000);
			show_log_tail(p->log);
			r = -ETIMEDOUT;
			break;
		}
		if (ready < 0 || exited)
			poll(NULL, 0, START_POLL_MS);
	}
	if (ready >= 0)
		close(ready);
	return r;
}

/* may_replace: a running supervisor of another binary is stopped and ours started. */
static int start(pid_t *pid, int *already, int may_replace)
{
	const struct node_paths *p = node_paths();
	char ready_arg[16], *argv[] = {"skiff", "__supervisor", "--ready-fd", ready_arg, NULL};
	char why[256];
	pid_t child;
	int fd, r, replace = 0, respawns = 0, ready[2];

	*already = 0;
	if (!p)
		return -ENOENT;
	fd = unix_connect(p->sock);
	if (fd >= 0) {
		struct msg req, rep;
		int64_t v = 0;

		msg_init(&req);
		msg_init(&rep);
		msg_add(&req, "op", "ping");
		if (!proto_send(fd, &req) && !proto_recv(fd, &rep, 5000) && msg_get(&rep, "busy")) {
			/* It runs, and serves others: not one to replace or start again. */
			r = error("%s", msg_get(&rep, "error"));
			msg_release(&req);
			msg_release(&rep);
			close(fd);
			return r;
		}
		if (!msg_get_int(&rep, "pid", &v)) {
			const char *theirs = msg_get(&rep, "sha256"), *ours = NULL;

			*pid = (pid_t)v;
			*already = 1;
			/*
			 * An older skiff says no sha256 at all. Ours is taken only to compare: a
			 * binary not named by its sha256 hashes itself for it.
			 */
			if (may_replace)
				ours = self_sha256_cached();
			if (may_replace && ours && (!theirs || strcmp(theirs, ours))) {
				debug("replacing the supervisor (pid %ld, sha256 %.12s) with this "
				      "skiff's (sha256 %.12s)",
				      (long)v, theirs ? theirs : "unknown", ours);
				replace = 1;
			}
		}
		msg_release(&req);
		msg_release(&rep);
		close(fd);
		if (*already && !replace)
			return 0;
		*already = 0;
		if (replace && (r = stop_other(p, (pid_t)v)))
			return r;
	}
	/* Where /proc cannot tell our processes apart, no supervisor may judge its jobs. */
	if (proc_ns_check(why, sizeof(why)))
		return error("cannot start the node supervisor: %s", why), -ENOTSUP;
	if (node_ensure_dirs())
		return -EIO;
again:
	/*
	 * The supervisor writes a line to the pipe once it listens (sup_main()): we wait on
	 * it instead of trying the socket every few ms, which a thousand nodes' `node up`
	 * starting at once did hundreds of times each, on the CPUs their supervisors needed.
	 */
	if (pipe2(ready, O_CLOEXEC) < 0)
		return error_errno("pipe");
	xsnprintf(ready_arg, sizeof(ready_arg), "%d", ready[1]);
	r = daemon_spawn(argv, p->log, ready[1], &child);
	close(ready[1]);
	if (r) {
		close(ready[0]);
		return r;
	}
	r = await_listening(p, child, ready[0], respawns < 5);
	if (r == -EAGAIN) {
		respawns++;
		goto again;
	}
	if (r == 1) {
		/* Ours listens, and said so: no round trip to learn what we know. */
		*pid = child;
		return 0;
	}
	if (r)
		return r;
	r = start(pid, already, 0);
	if (!r)
		*already = 0;
	/* If another start won the race, the running one is as good. */
	return r;
}

int sup_start(pid_t *pid, int *already)
{
	const struct node_paths *p = node_paths();

	/* Up again on purpose: requests may start it once more (sup_connect()). */
	if (p && unlink(p->taken_down) < 0 && errno != ENOENT)
		return error_errno("cannot remove '%s'", p->taken_down);
	return start(pid, already, 1);
}

int sup_connect(unsigned flags)
{
	const struct node_paths *p = node_paths();
	int fd, already;
	pid_t pid;

	if (!p)
		return -ENOENT;
	fd = unix_connect(p->sock);
	if (fd >= 0)
		return fd;
	if (!(flags & SUP_AUTOSTART)) {
		if (!(flags & SUP_QUIET))
			error("the node supervisor is not running in '%s' (start it with 'skiff "
			      "node up')",
			      p->home);
		return fd;
	}
	if (!access(p->taken_down, F_OK)) {
		if (!(flags & SUP_QUIET))
			error("%s", SUP_TAKEN_DOWN);
		return -ESHUTDOWN;
	}
	/* Not sup_start(): a down may mark the node between the look above and here. */
	if (start(&pid, &already, 1))
		return -EIO;
	fd = unix_connect(p->sock);
	if (fd < 0) {
		errno = -fd;
		return error_errno("cannot connect to '%s'", p->sock);
	}
	return fd;
}

/*
 * req out on fd and its reply in, then fd closed. Even if the send failed, the supervisor
 * may have said why before closing. 0, or -errno.
 */
static int exchange(int fd, const struct msg *req, struct msg *reply, int timeout_ms)
{
	int r = proto_send(fd, req);

	if (!r || r == -EPIPE || r == -ECONNRESET) {
		int r2 = proto_recv(fd, reply, timeout_ms);

		if (!r2 || !r)
			r = r2;
	}
	close(fd);
	return r;
}

/* A "busy" reply is asked again while the time lasts: 1 (then *delay has grown), else 0. */
static int busy_again(struct msg *reply, int64_t busy_until, int *delay)
{
	if (!msg_get(reply, "busy") || now_ms() + *delay >= busy_until)
		return 0;
	msg_release(reply);
	poll_ms(*delay);
	*delay = *delay < 400 ? *delay * 2 : 400;
	return 1;
}

/*
 * sup_request() and sup_request_at(): sock NULL asks this node's own supervisor (as flags
 * say: a failed connect returns its error), else the one at sock (a failed connect
 * returns 1: nothing was sent).
 */
static int request(const char *sock, unsigned flags, const struct msg *req, struct msg *reply,
                   int timeout_ms)
{
	int64_t busy_until = now_ms() + BUSY_WAIT_MS;
	int fd, r, delay = 20;

	do {
		msg_init(reply);
		fd = sock ? unix_connect(sock) : sup_connect(flags);
		if (fd < 0)
			return sock ? 1 : fd;
		r = exchange(fd, req, reply, timeout_ms);
		if (r) {
			errno = r == -ECONNRESET ? ECONNRESET : -r;
			return error_errno("no answer from the node supervisor%s%s%s",
			                   sock ? " at '" : "", sock ? sock : "", sock ? "'" : "");
		}
	} while (busy_again(reply, busy_until, &delay));
	return 0;
}

int sup_request(unsigned flags, const struct msg *req, struct msg *reply)
{
	return request(NULL, flags, req, reply, SUP_CALL_TIMEOUT_MS);
}

int sup_request_at(const char *sock, const struct msg *req, struct msg *reply, int timeout_ms)
{
	return request(sock, 0, req, reply, timeout_ms);
}

int sup_forwarded_op(const struct msg *req)
{
	const char *op = msg_get(req, "op");

	return op && strcmp(op, "queue") && strcmp(op, "autostop_state") && strcmp(op, "watch") &&
	       !(!strcmp(op, "submit") && msg_get(req, "follow"));
}

/*
 * req on a connection of its own (sock NULL: this node's supervisor, as flags say) and
 * its first reply in *reply, whatever it says but "busy" (asked again while BUSY_WAIT_MS
 * lasts): the fd, still open; or -errno, printed for this node's own supervisor only.
 */
static int open_call(const char *sock, unsigned flags, const struct msg *req, struct msg *reply,
                     int timeout_ms)
{
	int64_t busy_until = now_ms() + BUSY_WAIT_MS;
	int fd, r, delay = 20;

again:
	fd = sock ? unix_connect(sock) : sup_connect(flags);
	msg_init(reply);
	if (fd < 0)
		return fd;
	r = proto_send(fd, req);
	/* Even if the send failed, the supervisor may have said why before closing. */
	if (!r || r == -EPIPE || r == -ECONNRESET) {
		int r2 = proto_recv(fd, reply, timeout_ms);

		if (!r2 || !r)
			r = r2;
	}
	if (r) {
		close(fd);
		if (sock)
			return r; /* the caller says what it does instead */
		errno = r == -ECONNRESET ? ECONNRESET : -r;
		return error_errno("no answer from the node supervisor");
	}
	if (msg_get(reply, "error") && msg_get(reply, "busy") && now_ms() + delay < busy_until) {
		/* Its connections are all taken for now: a moment later, one is free. */
		close(fd);
		msg_release(reply);
		poll_ms(delay);
		delay = delay < 400 ? delay * 2 : 400;
		goto again;
	}
	return fd;
}

int sup_call_open(unsigned flags, const struct msg *req, struct msg *reply)
{
	int fd = open_call(NULL, flags, req, reply, SUP_CALL_TIMEOUT_MS);

	if (fd >= 0 && msg_get(reply, "error")) {
		close(fd);
		return flags & SUP_ANSWER_QUIET ? -EIO : error("%s", msg_get(reply, "error"));
	}
	return fd;
}

int sup_call_open_at(const char *sock, const struct msg *req, struct msg *reply, int timeout_ms)
{
	return open_call(sock, 0, req, reply, timeout_ms);
}

int sup_call(unsigned flags, const struct msg *req, struct msg *reply)
{
	int fd = sup_call_open(flags, req, reply);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}
