/*
 * The control socket: accepting same-uid peers, framing, and the request handlers.
 * Requests are small and handled to completion in the event loop; a reply that does not
 * fit the socket buffer is queued and sent as the peer reads it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "lib/env.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/node.h"
#include "supervisor/daemon.h"
#include "supervisor/hold.h"
#include "lib/proto.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

/*
 * Bounds on what clients can make the supervisor hold. Connections: s->fds.conns at once
 * (policy.h); one more is answered "busy" and closed. Memory: PROTO_MAX_MSG per unfinished
 * request, and INBUF_TOTAL_MAX for all of them together (a request that would pass it is
 * refused the same way); a followed submit's logs sent from here, STREAM_INLINE_MAX per
 * connection and STREAM_INLINE_TOTAL_MAX for all (past them, a follower sends them). A
 * connection that has no request under way and watches no job
 * is closed after CONN_IDLE_MS. Out of fds, accept() is paused for ACCEPT_RETRY_MS or
 * until a connection closes, instead of failing in a loop.
 */
#define INBUF_TOTAL_MAX ((size_t)64 << 20)
#define INBUF_KEEP ((size_t)1 << 20) /* a buffer larger than this is freed once empty */
#define CONN_IDLE_MS 60000
#define CONN_SWEEP_MS 5000
/*
 * A streamed submit's connection is held here this long: a job that ends sooner gets its
 * logs from us (up to STREAM_INLINE_MAX bytes), with no follower started; one that runs
 * on gets a `node stream` then.
 */
#define STREAM_HOLD_MS 100
#define STREAM_INLINE_MAX ((size_t)1 << 20)
/* And all the logs we hold to send at once, over every connection (past it: followers). */
#define STREAM_INLINE_TOTAL_MAX ((size_t)64 << 20)
#define ACCEPT_RETRY_MS 100
#define RECV_FIRST ((size_t)1000)    /* room a new request's first read gets */
#define RECV_MORE ((size_t)64 << 10) /* and each read of one under way */

struct conn {
	struct sup *s; /* the supervisor that serves it */
	int fd;
	struct buf in;
	struct buf out;
	size_t out_off;
	int closing;     /* close once out is sent */
	int denied;      /* the peer is another user: every request gets an error */
	int64_t watch;   /* a job whose end the peer waits for (submit --follow, watch) */
	int64_t last_ms; /* now_ms() of its last request bytes */
	/*
	 * A streamed submit answered here and held (submit_reply()): when to hand the
	 * connection to a `node stream` if the job has not ended by then (0: none), and the
	 * job's log dir.
	 */
	int64_t stream_at;
	char *stream_dir;
	size_t stream_bytes; /* the logs it holds from us to send (stream_inline_total) */
};

static struct conn **conns;
static size_t nconns_cap;
static size_t nconns;
static size_t inbuf_total;         /* the capacity of every conn's in buffer */
static size_t stream_inline_total; /* every conn's stream_bytes */
/* One each: a refusal of one kind must not hide the first of another (t0215 6-8). */
static struct ratelimit accept_warned, busy_warned, inbuf_warned;

/* The listener, not watched for retry_ms (no fd left to accept with): */
static void listen_pause(struct sup *s, int retry_ms)
{
	struct epoll_event ev = {.events = 0, .data.u64 = SUP_TAG_LISTEN << SUP_TAG_SHIFT};

	if (!epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lfd, &ev))
		s->listen_retry_at = now_ms() + retry_ms;
}

/* ... until then or until a connection closes: watched again. */
void sup_listen_resume(struct sup *s)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = SUP_TAG_LISTEN << SUP_TAG_SHIFT};

	s->listen_retry_at = 0;
	if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lfd, &ev))
		s->listen_retry_at = now_ms() + 1000; /* try again rather than go deaf */
}

static int conn_watch(struct conn *c, int op, uint32_t events)
{
	struct epoll_event ev = {.events = events,
	                         .data.u64 = (SUP_TAG_CONN << SUP_TAG_SHIFT) | (uint64_t)c->fd};

	return epoll_ctl(c->s->epfd, op, c->fd, &ev);
}

struct sup *sup_conn_sup(const struct conn *c)
{
	return c->s;
}

static void conn_close(struct conn *c)
{
	struct sup *s = c->s;

	if (c->watch)
		s->nwatch--;
	conns[c->fd] = NULL;
	close(c->fd);
	free(c->stream_dir);
	stream_inline_total -= c->stream_bytes;
	inbuf_total -= c->in.cap;
	buf_release(&c->in);
	buf_release(&c->out);
	free(c);
	nconns--;
	/* A slot (and an fd) is free again. */
	if (s->listen_retry_at)
		sup_listen_resume(s);
}

static void conn_flush(struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off,
		                 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				conn_watch(c, EPOLL_CTL_MOD, EPOLLOUT | EPOLLRDHUP);
				return;
			}
			conn_close(c);
			return;
		}
		c->out_off += (size_t)n;
	}
	buf_reset(&c->out);
	c->out_off = 0;
	if (c->closing) {
		conn_close(c);
		return;
	}
	conn_watch(c, EPOLL_CTL_MOD, EPOLLIN | EPOLLRDHUP);
}

void sup_reply(struct conn *c, const struct msg *m)
{
	if (proto_put(&c->out, m)) {
		conn_close(c);
		return;
	}
	conn_flush(c);
}

void sup_reply_error(struct conn *c, const char *fmt, ...)
{
	struct msg m;
	va_list ap;

	msg_init(&m);
	va_start(ap, fmt);
	msg_vaddf(&m, "error", fmt, ap);
	va_end(ap);
	sup_reply(c, &m);
	msg_release(&m);
}

/* Tells the peer that its watched job has ended (final status), then closes. */
static void watch_reply(struct conn *c, const struct job *j)
{
	struct msg m;

	msg_init(&m);
	msg_add(&m, "ended", "1");
	msg_add_int(&m, "id", j->id);
	msg_add(&m, "status", job_status_name(j->status));
	msg_add(&m, "exit_codes", j->exit_codes ? j->exit_codes : "");
	c->watch = 0;
	c->closing = 1;
	sup_reply(c, &m);
	msg_release(&m);
}

static void stream_end(struct conn *c);
static int64_t stream_sweep(int64_t now);

void sup_watch_notify(struct sup *s, int64_t id)
{
	struct job j;
	size_t i;
	int loaded = 0;

	if (!s->nwatch)
		return;
	for (i = 0; i < nconns_cap; i++) {
		struct conn *c = conns[i];

		if (!c || c->watch != id)
			continue;
		if (!loaded) {
			if (st_job_get_state(s->db, id, &j))
				return;
			if (!job_status_terminal(j.status)) {
				job_free(&j);
				return;
			}
			loaded = 1;
		}
		if (c->stream_at) {
			stream_end(c);
			continue;
		}
		s->nwatch--;
		watch_reply(c, &j);
	}
	if (loaded)
		job_free(&j);
}

/* A connection on fd (ours now), not watched yet. */
static struct conn *conn_add(struct sup *s, int fd)
{
	struct conn *c;

	if ((size_t)fd >= nconns_cap) {
		size_t cap = nconns_cap ? nconns_cap : 64;

		while (cap <= (size_t)fd)
			cap *= 2;
		conns = xrealloc(conns, cap * sizeof(*conns));
		memset(conns + nconns_cap, 0, (cap - nconns_cap) * sizeof(*conns));
		nconns_cap = cap;
	}
	c = xcalloc(1, sizeof(*c));
	c->s = s;
	c->fd = fd;
	c->last_ms = now_ms();
	buf_init(&c->in, PROTO_MAX_MSG + PROTO_HDR);
	buf_init(&c->out, 0);
	conns[fd] = c;
	nconns++;
	return c;
}

/*
 * Answers a connection over the cap with one error message and closes it. What the peer
 * sent already is read first (a little, bounded), so that the close does not reset the
 * connection before the peer has read why.
 */
static void refuse_busy(struct sup *s, int fd)
{
	struct msg m;
	unsigned char hdr[PROTO_HDR];
	char junk[4096];
	int i;

	msg_init(&m);
	msg_add(&m, "busy", "1");
	msg_addf(&m, "error",
	         "the node supervisor is busy: it serves %zu connections at once (raise its "
	         "open-file limit, ulimit -n, to serve more); try again",
	         s->fds.conns);
	proto_header(&m, hdr);
	for (i = 0; i < 16 && recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
		;
	if (send(fd, hdr, sizeof(hdr), MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(hdr))
		send(fd, m.raw.p, m.raw.len, MSG_DONTWAIT | MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	close(fd);
	msg_release(&m);
}

void sup_accept(struct sup *s)
{
	for (;;) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct conn *c;
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* The peer waits in the backlog; we look again when an fd frees. */
				warning_ratelimited(
				        &accept_warned,
				        "accept: %s (%zu connections open): pausing new "
				        "connections",
				        strerror(errno), nconns);
				listen_pause(s, ACCEPT_RETRY_MS);
			} else if (errno != EAGAIN && errno != EINTR) {
				warning_ratelimited(&accept_warned, "accept: %s", strerror(errno));
			}
			return;
		}
		if (nconns >= s->fds.conns) {
			warning_ratelimited(
			        &busy_warned,
			        "%zu connections open, the most this supervisor serves: "
			        "refusing more",
			        nconns);
			refuse_busy(s, fd);
			continue;
		}
		/*
		 * The socket file is 0600 already; the peer's uid is the real check. A refused
		 * peer still gets its request read and an error reply, so that it sees why
		 * (closing with its request unread would reset the connection instead).
		 */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
			cred.uid = (uid_t)-1;
		if (cred.uid != geteuid())
			warning("refused a connection from uid %ld (pid %ld)", (long)cred.uid,
			        (long)cred.pid);
		c = conn_add(s, fd);
		c->denied = cred.uid != geteuid();
		if (conn_watch(c, EPOLL_CTL_ADD, EPOLLIN | EPOLLRDHUP))
			conn_close(c);
	}
}

int64_t sup_conns_sweep(void)
{
	int64_t now = now_ms(), next;
	size_t i;

	for (i = 0; i < nconns_cap; i++) {
		struct conn *c = conns[i];

		if (c && !c->watch && !c->in.len && !c->out.len && now - c->last_ms > CONN_IDLE_MS)
			conn_close(c);
	}
	next = stream_sweep(now);
	if (!nconns)
		return next;
	return next && next < now + CONN_SWEEP_MS ? next : now + CONN_SWEEP_MS;
}

/* --- handlers ------------------------------------------------------------------------- */

static void op_ping(struct conn *c, const struct msg *req)
{
	/* Which binary we are: a `node up` by another one replaces us (sup_start()). */
	const char *sha = self_sha256_cached();
	struct msg m;

	(void)req;
	msg_init(&m);
	msg_add(&m, "ok", "1");
	msg_add_int(&m, "pid", getpid());
	msg_add(&m, "version", skiff_version);
	if (sha)
		msg_add(&m, "sha256", sha);
	sup_reply(c, &m);
	msg_release(&m);
}

/* For the active statuses only (< 4): the partial index answers without a table scan. */
static int count_status(struct sup *s, int status)
{
	sqlite3_stmt *st =
	        st_prepare(s->db, "SELECT count(*) FROM jobs WHERE status < 4 AND status = ?");
	int n = 0;

	if (!st)
		return -1;
	st_bind_int(st, 1, status);
	if (st_step(s->db, st) == 1)
		n = sqlite3_column_int(st, 0);
	sqlite3_reset(st);
	return n;
}

static void op_status(struct conn *c, const struct msg *req)
{
	struct sup *s = c->s;
	struct msg m;

	(void)req;
	msg_init(&m);
	msg_add(&m, "ok", "1");
	msg_add_int(&m, "pid", getpid());
	msg_add(&m, "version", skiff_version);
	msg_add(&m, "commit", skiff_commit);
	msg_addf(&m, "started_at", "%.3f", s->started_at);
	msg_addf(&m, "uptime", "%.3f", now_wall() - s->started_at);
	msg_addf(&m, "cpus", "%g", s->cap.cpus);
	msg_addf(&m, "memory", "%g", s->cap.memory);
	msg_add_int(&m, "gpus", s->cap.gpus);
	msg_addf(&m, "cpus_free", "%g", s->free.cpus);
	msg_addf(&m, "memory_free", "%g", s->free.memory);
	msg_add_int(&m, "gpus_free", s->free.gpus);
	msg_add_int(&m, "running", count_status(s, JOB_RUNNING));
	msg_add_int(&m, "setting_up", count_status(s, JOB_SETTING_UP));
	msg_add_int(&m, "pending", count_status(s, JOB_PENDING));
	msg_add_int(&m, "shims", (int64_t)s->nrun);
	msg_addf(&m, "autostop_idle_minutes", "%.15g", s->idle_minutes);
	msg_add_int(&m, "autostop_down", s->autostop_down);
	msg_add(&m, "autostop_wait_for",
	        s->wait_for == WAIT_JOBS   ? "jobs"
	        : s->wait_for == WAIT_NONE ? "none"
	                                   : "jobs_and_ssh");
	msg_add_int(&m, "max_bypass", s->max_bypass);
	msg_addf(&m, "cancel_grace", "%g", s->cancel_grace);
	sup_reply(c, &m);
	msg_release(&m);
}

/* 1 if the state dir's file system has (almost) no room left: a failed write's likely cause. */
static int disk_full(void)
{
	struct statvfs v;

	return !statvfs(node_paths()->home, &v) &&
	       (uint64_t)v.f_bavail * v.f_frsize < ((uint64_t)1 << 20);
}

/*
 * A followed submit whose peer asked for the job's logs on this very connection
 * ("stream": a launcher with no process on this node, on our socket or on an ssh forward
 * of it, bootstrap/launch/cl_direct.h). We answer it and hold it (submit_reply()): a job
 * that ends within STREAM_HOLD_MS gets its logs from us (stream_end()); one that runs on,
 * or whose ranks' lines are prefixed, gets a follower of its own, `node stream`
 * (cmd/node_call.c), which writes the logs, raw, as `node call` does after its answer
 * (and the answer too, when we gave none), the job's end coming to it on a socket pair
 * whose other end is watched here like any watcher's connection.
 */

/*
 * Hands c to a `node stream` for job id (answered: the submit's answer went already).
 * 0 once handed over (c is gone), or -1 with nothing done.
 */
static int stream_handoff(struct conn *c, int64_t id, const char *log_dir, int existing,
                          const char *rank, const char *ip, int answered)
{
	struct sup *s = c->s;
	char idbuf[32], wfd[16];
	char *argv[] = {(char *)self_exec_path(),
	                "node",
	                "stream",
	                idbuf,
	                (char *)log_dir,
	                answered   ? "a"
	                : existing ? "1"
	                           : "0",
	                wfd,
	                (char *)(rank ? rank : ""),
	                (char *)(ip ? ip : ""),
	                NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct conn *w;
	int sp[2], fl, r;
	pid_t pid;

	if (!argv[0] || !log_dir || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return -1;
	xsnprintf(idbuf, sizeof(idbuf), "%lld", (long long)id);
	xsnprintf(wfd, sizeof(wfd), "%d", sp[1]);
	/* The follower's stdin and stdout are the connection: blocking, as a pipe would be. */
	fl = fcntl(c->fd, F_GETFL);
	if (fl < 0 || fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ||
	    fcntl(sp[0], F_SETFL, O_NONBLOCK) < 0) {
		close(sp[0]);
		close(sp[1]);
		if (fl >= 0)
			fcntl(c->fd, F_SETFL, fl);
		return -1;
	}
	o.argv = argv;
	o.fd_in = c->fd;
	o.fd_out = c->fd;
	o.fd_err = 2; /* our log */
	o.keep_fds = &sp[1];
	o.n_keep_fds = 1;
	o.pgrp = SPAWN_SESSION_NEW; /* it outlives us, as a shim does */
	r = spawn(&o, &pid);
	close(sp[1]);
	if (r) {
		close(sp[0]);
		fcntl(c->fd, F_SETFL, fl);
		warning("job %lld: cannot start the follower of its logs: %s", (long long)id,
		        strerror(-r));
		return -1;
	}
	/*
	 * Out of our epoll set first: the follower's copies keep the connection open, and a
	 * registration lasts until the last copy closes, so a close alone would leave its
	 * events (the launcher's hang-up) coming to us under a number that is no longer it.
	 */
	conn_watch(c, EPOLL_CTL_DEL, 0);
	if (c->watch) {
		c->watch = 0;
		s->nwatch--;
	}
	conn_close(c);
	w = conn_add(s, sp[0]);
	w->watch = id;
	s->nwatch++;
	if (conn_watch(w, EPOLL_CTL_ADD, EPOLLIN | EPOLLRDHUP))
		conn_close(w); /* its watch ends at once: it finds the end in the db */
	else
		sup_watch_notify(s, id); /* told at once when it has ended already */
	return 0;
}

/* c held STREAM_HOLD_MS from now: the supervisor's sweep comes for it by then. */
static void stream_arm(struct conn *c)
{
	struct sup *s = c->s;

	c->stream_at = now_ms() + STREAM_HOLD_MS;
	if (!s->conn_sweep_at || s->conn_sweep_at > c->stream_at)
		s->conn_sweep_at = c->stream_at;
}

/*
 * Appends the log file NAME of c's job to c->out, within *left bytes: 0 (also when there
 * is none), or -1 when it does not fit or is no regular file (a node stream then says
 * why, as any follower does).
 */
static int stream_add_log(struct conn *c, const char *name, size_t *left)
{
	char *path = xasprintf("%s/%s", c->stream_dir, name);
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC), r = 0;
	struct stat st;

	free(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1; /* no setup, or no output: nothing */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size > *left) {
		close(fd);
		return -1;
	}
	for (;;) {
		ssize_t n;

		if (buf_grow(&c->out, 4096)) {
			r = -1;
			break;
		}
		n = read(fd, c->out.p + c->out.len, c->out.cap - c->out.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (size_t)n > *left) {
			r = n ? -1 : 0;
			break;
		}
		c->out.len += (size_t)n;
		*left -= (size_t)n;
	}
	close(fd);
	return r;
}

/*
 * A held stream ends here, once what it holds is sent: with its logs, or (no follower
 * could be started) without, and then the launcher asks the node another way.
 */
static void stream_close(struct conn *c)
{
	c->s->nwatch--;
	c->watch = 0;
	c->closing = 1;
	conn_flush(c);
}

/*
 * A held streamed submit's job has ended: its logs (the setup's, then the run's, as a
 * follower writes them) from us, then the close; past STREAM_INLINE_MAX, a node stream.
 */
static void stream_end(struct conn *c)
{
	size_t len0 = c->out.len, left = STREAM_INLINE_MAX;
	int64_t id = c->watch;

	c->stream_at = 0;
	if (stream_inline_total + left > STREAM_INLINE_TOTAL_MAX)
		left = STREAM_INLINE_TOTAL_MAX - stream_inline_total;
	if (stream_add_log(c, "setup.log", &left) || stream_add_log(c, "run.log", &left)) {
		buf_setlen(&c->out, len0);
		if (len0) { /* its answer is not all sent: the sweep hands it over then */
			stream_arm(c);
			return;
		}
		if (stream_handoff(c, id, c->stream_dir, 0, NULL, NULL, 1))
			stream_close(c);
		return;
	}
	c->stream_bytes = c->out.len - len0;
	stream_inline_total += c->stream_bytes;
	stream_close(c);
}

/* The held streams whose jobs run on past STREAM_HOLD_MS: each to a node stream. */
static int64_t stream_sweep(int64_t now)
{
	int64_t next = 0;
	size_t i;

	for (i = 0; i < nconns_cap; i++) {
		struct conn *c = conns[i];

		if (!c || !c->stream_at)
			continue;
		/* Not due, or its answer is not all sent yet (a slow reader): later. */
		if (now < c->stream_at || c->out.len) {
			if (now >= c->stream_at)
				c->stream_at = now + STREAM_HOLD_MS;
			if (!next || c->stream_at < next)
				next = c->stream_at;
			continue;
		}
		c->stream_at = 0;
		if (stream_handoff(c, c->watch, c->stream_dir, 0, NULL, NULL, 1))
			stream_close(c);
	}
	return next;
}

/*
 * The answer to a submit: the job's id and log dir ("existing" when its key named a job
 * submitted before). With follow, the peer stays connected and is told when the job ends
 * (at once when it has ended already).
 */
static void submit_reply(struct conn *c, const struct msg *req, const struct job *j, int existing)
{
	struct sup *s = c->s;
	int fd = c->fd, hold = 0;
	struct msg m;

	if (msg_get(req, "follow") && msg_get(req, "stream") && j->log_dir) {
		const char *rank = msg_get(req, "prefix_rank");

		/* Prefixed lines (a gang's ranks) need a follower: it knows the rank's pid. */
		if (rank && !stream_handoff(c, j->id, j->log_dir, existing, rank,
		                            msg_get(req, "prefix_ip"), 0))
			return;
		hold = !rank;
	}
	msg_init(&m);
	msg_add(&m, "ok", "1");
	msg_add_int(&m, "id", j->id);
	msg_add(&m, "log_dir", j->log_dir ? j->log_dir : "");
	if (existing)
		msg_add(&m, "existing", "1");
	/*
	 * Where a launcher's ssh master may forward a socket of its own to (cluster.c); a
	 * held stream came on that socket or its forward already.
	 */
	if (!hold && node_paths()->sock[0] == '/')
		msg_add(&m, "sock", node_paths()->sock);
	if (msg_get(req, "follow")) {
		msg_add(&m, "follow", "1");
		if (hold)
			msg_add(&m, "stream", "1");
		/* One job's end per connection: a second followed submit takes its place. */
		if (!c->watch)
			s->nwatch++;
		c->watch = j->id;
		c->stream_at = 0; /* a plain follow now, should a held stream have come first */
	}
	sup_reply(c, &m);
	msg_release(&m);
	/* c is gone if the reply could not be sent; a conn at its fd now is still c. */
	if (!conns[fd] || conns[fd]->watch != j->id)
		return;
	if (hold) {
		free(c->stream_dir);
		c->stream_dir = xstrdup(j->log_dir);
		stream_arm(c);
	}
	if (existing)
		sup_watch_notify(s, j->id);
}

static void op_submit(struct conn *c, const struct msg *req)
{
	struct sup *s = c->s;
	struct job j = {0}, dup;
	struct buf envs = BUF_INIT(PROTO_MAX_MSG), renv = BUF_INIT(PROTO_MAX_MSG),
	           bad = BUF_INIT(0);
	struct sched_res want, cap;
	int64_t prio = 0;
	size_t i;
	int copy;
	char *log_dir = NULL;

	j.cpus = 0.5;
	j.cancel_grace = s->cancel_grace;
	if (msg_get(req, "cpus") && (msg_get_double(req, "cpus", &j.cpus) || j.cpus < 0))
		return sup_reply_error(c, "bad cpus '%s': expected a number >= 0",
		                       msg_get(req, "cpus"));
	if (msg_get(req, "memory") && (msg_get_double(req, "memory", &j.memory) || j.memory < 0))
		return sup_reply_error(c, "bad memory '%s': expected GiB >= 0",
		                       msg_get(req, "memory"));
	if (msg_get(req, "gpus")) {
		int64_t g;

		if (msg_get_int(req, "gpus", &g) || g < 0 || g > SCHED_MAX_GPUS)
			return sup_reply_error(c, "bad gpus '%s': expected 0..%d",
			                       msg_get(req, "gpus"), SCHED_MAX_GPUS);
		j.gpus = (int)g;
	}
	if (msg_get(req, "priority") &&
	    (msg_get_int(req, "priority", &prio) || prio < -1000 || prio > 1000))
		return sup_reply_error(c, "bad priority '%s': expected -1000..1000",
		                       msg_get(req, "priority"));
	j.priority = (int)prio;
	if (!msg_get(req, "run") && !msg_get(req, "setup"))
		return sup_reply_error(c, "nothing to run: the job has neither run nor setup");
	want = (struct sched_res){j.cpus, j.memory, j.gpus};
	cap = (struct sched_res){s->cap.cpus, s->cap.memory, s->cap.gpus};
	if (!sched_fits(&cap, &want)) {
		/* "too_big": no wait makes it fit here (a managed job fails its precheck). */
		struct msg m;
		char *why = xasprintf("the job asks for %g CPUs, %g GiB and %d GPUs, but this "
		                      "node has %g CPUs, %.1f GiB and %d GPUs in all",
		                      j.cpus, j.memory, j.gpus, s->cap.cpus, s->cap.memory,
		                      s->cap.gpus);

		msg_init(&m);
		msg_add(&m, "error", why);
		msg_add(&m, "too_big", "1");
		sup_reply(c, &m);
		msg_release(&m);
		free(why);
		return;
	}
	for (i = 0; i < req->n; i++) {
		/* The runtime env's fields (bootstrap/renv/), kept as they came for the shim. */
		if (!strncmp(req->keys[i], "renv_", 5)) {
			buf_add(&renv, req->keys[i], strlen(req->keys[i]) + 1);
			buf_add(&renv, req->vals[i], strlen(req->vals[i]) + 1);
			continue;
		}
		copy = !strcmp(req->keys[i], "env_copy");
		if (!copy && strcmp(req->keys[i], "env"))
			continue;
		if (env_blob_add(&envs, req->vals[i], copy, TASK_ENV_ENTRY_MAX, &bad)) {
			buf_release(&envs);
			buf_release(&renv);
			sup_reply_error(c, "%s", bad.p);
			buf_release(&bad);
			return;
		}
	}
	j.submit_key = (char *)msg_get(req, "submit_key");
	if (j.submit_key && (!*j.submit_key || strlen(j.submit_key) > SUBMIT_KEY_MAX)) {
		buf_release(&envs);
		buf_release(&renv);
		return sup_reply_error(c, "bad submit_key: expected 1 to %d bytes", SUBMIT_KEY_MAX);
	}
	/* The same key again (a launcher that retries, or asks after a crash): the same job. */
	if (j.submit_key && !st_job_find_key(s->db, j.submit_key, &dup)) {
		buf_release(&envs);
		buf_release(&renv);
		submit_reply(c, req, &dup, 1);
		job_free(&dup);
		return;
	}
	j.name = (char *)msg_get(req, "name");
	j.setup = (char *)msg_get(req, "setup");
	j.run = (char *)msg_get(req, "run");
	j.cwd = (char *)msg_get(req, "cwd");
	j.cwd_optional = msg_get(req, "cwd_optional") && !strcmp(msg_get(req, "cwd_optional"), "1");
	j.profile = msg_get(req, "profile") && !strcmp(msg_get(req, "profile"), "1");
	j.log_dir = (char *)msg_get(req, "log_dir");
	j.envs = envs.p;
	j.envs_len = envs.len;
	j.renv = renv.len ? renv.p : NULL;
	j.renv_len = renv.len;
	if (st_begin(s->db))
		goto fail;
	if (st_job_insert(s->db, &j))
		goto fail_tx;
	if (!j.log_dir) {
		log_dir = xasprintf("%s/%lld", node_paths()->logs, (long long)j.id);
		if (st_job_set_log_dir(s->db, j.id, log_dir))
			goto fail_tx;
	}
	if (st_commit(s->db))
		goto fail;
	if (!j.log_dir)
		j.log_dir = log_dir;
	submit_reply(c, req, &j, 0);
	/*
	 * Every job that fits was started by the last round, so a new job that does not fit
	 * what is free cannot change anything: with a long queue, accepting stays O(1).
	 */
	if (sched_fits(&s->free, &want))
		s->sched_needed = 1;
	free(log_dir);
	buf_release(&envs);
	buf_release(&renv);
	return;
fail_tx:
	st_rollback(s->db);
fail:
	free(log_dir);
	buf_release(&envs);
	buf_release(&renv);
	if (disk_full())
		sup_reply_error(c, "cannot record the job: the disk that holds '%s' is full",
		                node_paths()->home);
	else
		sup_reply_error(c, "cannot record the job in the node database (see "
		                   "supervisor.log)");
}

struct cancel_ctx {
	struct sup *s;
	struct msg *m;
	int all;
	int64_t *ids;
	size_t n;
	pid_t *kill_pids;
	uint64_t *kill_starts;
	size_t nkill, kill_alloc;
	int64_t *dropped; /* never dispatched, now CANCELLED: their watchers are told */
	size_t ndropped, dropped_alloc;
	int err;
};

static int cancel_one(struct cancel_ctx *cc, struct job *j)
{
	struct sup *s = cc->s;

	if (job_status_terminal(j->status)) {
		msg_add_int(cc->m, "finished", j->id);
		return 0;
	}
	if (!j->shim_pid) {
		/* Never dispatched: nothing runs, the row is the whole job. */
		if (st_job_finish(s->db, j->id, JOB_CANCELLED, "", "cancelled by the user") == 0) {
			msg_add_int(cc->m, "cancelled", j->id);
			cc->dropped = xgrow(cc->dropped, cc->ndropped, &cc->dropped_alloc,
			                    sizeof(*cc->dropped));
			cc->dropped[cc->ndropped++] = j->id;
		}
		return 0;
	}
	if (st_job_request_cancel(s->db, j->id))
		return -1;
	/* As many as the database holds: it may know shims the running set does not. */
	if (cc->nkill == cc->kill_alloc) {
		cc->kill_alloc = cc->kill_alloc ? 2 * cc->kill_alloc : 64;
		cc->kill_pids = xrealloc(cc->kill_pids, cc->kill_alloc * sizeof(*cc->kill_pids));
		cc->kill_starts =
		        xrealloc(cc->kill_starts, cc->kill_alloc * sizeof(*cc->kill_starts));
	}
	cc->kill_pids[cc->nkill] = j->shim_pid;
	cc->kill_starts[cc->nkill] = j->shim_start;
	cc->nkill++;
	msg_add_int(cc->m, "cancelled", j->id);
	return 0;
}

/*
 * The job submitted with key, cancelled; or, when none has arrived, a CANCELLED row that
 * holds the key, so that a submit still on its way finds it and never runs (the launcher
 * that sent it is gone, and its job was judged without it).
 */
static int cancel_key(struct cancel_ctx *cc, const char *key)
{
	struct sup *s = cc->s;
	struct job j = {0};
	int r = st_job_find_key(s->db, key, &j);

	if (!r) {
		r = cancel_one(cc, &j);
		job_free(&j);
		return r;
	}
	if (r != -ENOENT)
		return r;
	j.submit_key = (char *)key;
	j.cpus = 0;
	j.cancel_grace = s->cancel_grace;
	if (st_job_insert(s->db, &j) ||
	    st_job_finish(s->db, j.id, JOB_CANCELLED, "",
	                  "never arrived: its submitter was gone, and the job was cancelled by "
	                  "its key"))
		return -1;
	msg_add(cc->m, "buried", key);
	return 0;
}

static int cancel_each(struct job *j, void *arg)
{
	return cancel_one(arg, j);
}

static void op_cancel(struct conn *c, const struct msg *req)
{
	struct sup *s = c->s;
	struct cancel_ctx cc = {0};
	struct msg m;
	/* of_key: the ids given are cancelled only while their job is the one of that key. */
	const char *of_key = msg_get(req, "of_key");
	size_t i, nids = 0;
	int r = 0;

	msg_init(&m);
	cc.s = s;
	cc.m = &m;
	cc.all = msg_get(req, "all") != NULL;
	for (i = 0; i < req->n; i++) {
		nids += !strcmp(req->keys[i], "id") || !strcmp(req->keys[i], "key");
		if (!strcmp(req->keys[i], "key") &&
		    (!*req->vals[i] || strlen(req->vals[i]) > SUBMIT_KEY_MAX)) {
			msg_release(&m);
			return sup_reply_error(c, "bad key: expected 1 to %d bytes",
			                       SUBMIT_KEY_MAX);
		}
	}
	if (!cc.all && !nids) {
		msg_release(&m);
		return sup_reply_error(c, "nothing to cancel: give job ids, keys or all");
	}
	if (of_key && (!*of_key || strlen(of_key) > SUBMIT_KEY_MAX)) {
		msg_release(&m);
		return sup_reply_error(c, "bad of_key: expected 1 to %d bytes", SUBMIT_KEY_MAX);
	}
	if (st_begin(s->db)) {
		r = -1;
		goto out;
	}
	if (cc.all) {
		r = st_job_each(s->db, JOB_MASK_ACTIVE, cancel_each, &cc);
	} else {
		for (i = 0; i < req->n && !r; i++) {
			struct job j;
			long id;

			if (!strcmp(req->keys[i], "key")) {
				r = cancel_key(&cc, req->vals[i]);
				continue;
			}
			if (strcmp(req->keys[i], "id"))
				continue;
			if (parse_long(req->vals[i], 1, INT64_MAX, &id)) {
				msg_add(&m, "missing", req->vals[i]);
				continue;
			}
			if (st_job_get(s->db, id, &j)) {
				msg_add_int(&m, "missing", id);
				continue;
			}
			if (of_key && strcmp(j.submit_key ? j.submit_key : "", of_key)) {
				/* Another job has that id now (the node's state was made anew). */
				msg_add_int(&m, "missing", id);
				job_free(&j);
				continue;
			}
			r = cancel_one(&cc, &j);
			job_free(&j);
		}
	}
	if (r) {
		st_rollback(s->db);
		goto out;
	}
	if (st_commit(s->db)) {
		r = -1;
		goto out;
	}
	/* Committed: now the shims may look at cancel_requested. */
	for (i = 0; i < cc.nkill; i++)
		if (proc_is(cc.kill_pids[i], cc.kill_starts[i]))
			kill(cc.kill_pids[i], SIGTERM);
	for (i = 0; i < cc.ndropped; i++)
		sup_watch_notify(s, cc.dropped[i]);
	s->sched_needed = 1;
out:
	free(cc.kill_pids);
	free(cc.kill_starts);
	free(cc.dropped);
	if (r) {
		msg_release(&m);
		return sup_reply_error(c,
		                       "cannot cancel: node database error (see supervisor.log)");
	}
	msg_add(&m, "ok", "1");
	sup_reply(c, &m);
	msg_release(&m);
}

/*
 * watch ID: the reply ({"watching": 1}) comes at once, then, when the job ends, one more
 * message with its final status ({"ended": 1, "status", "exit_codes"}), and the
 * connection closes. A job that has ended already gets only the second message.
 */
static void op_watch(struct conn *c, const struct msg *req)
{
	struct sup *s = c->s;
	struct job j;
	struct msg m;
	int64_t id;

	if (msg_get_int(req, "id", &id) || id <= 0)
		return sup_reply_error(c, "watch: expected a job id");
	if (c->watch)
		return sup_reply_error(c, "watch: this connection watches job %lld already",
		                       (long long)c->watch);
	if (st_job_get_state(s->db, id, &j)) {
		/* "no_job": the gang watcher's sign that the rank's job is not on this node. */
		msg_init(&m);
		msg_addf(&m, "error", "job %lld not found", (long long)id);
		msg_add(&m, "no_job", "1");
		sup_reply(c, &m);
		msg_release(&m);
		return;
	}
	if (job_status_terminal(j.status)) {
		watch_reply(c, &j);
		job_free(&j);
		return;
	}
	job_free(&j);
	c->watch = id;
	s->nwatch++;
	msg_init(&m);
	msg_add(&m, "ok", "1");
	msg_add(&m, "watching", "1");
	sup_reply(c, &m);
	msg_release(&m);
}

/* Validates every value, then stores them all in one transaction: all or nothing. */
static void op_config(struct conn *c, const struct msg *req)
{
	struct sup *s = c->s;
	static const char *const keys[] = {"cpus", "memory", "gpus", "max_bypass", "cancel_grace"};
	const char *ids;
	uint64_t mask;
	struct msg m;
	size_t i;
	double v;
	int r = 0;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		const char *val = msg_get(req, keys[i]);

		if (val && *val && (parse_double(val, &v) || v < 0))
			return sup_reply_error(c, "bad %s '%s': expected a number >= 0", keys[i],
			                       val);
	}
	/* A share of the node's GPUs (supervisor/hold.h): their indexes, "" for all. */
	ids = msg_get(req, "gpu_ids");
	if (ids && *ids && hold_gpus_parse(ids, &mask))
		return sup_reply_error(c,
		                       "bad gpu_ids '%.80s': expected GPU indexes 0 to %d, "
		                       "each once, as I,J,...",
		                       ids, HOLD_GPUS_MAX - 1);
	if (st_begin(s->db))
		return sup_reply_error(c, "cannot store the settings: node database error (see "
		                          "supervisor.log)");
	for (i = 0; i < ARRAY_SIZE(keys) && !r; i++) {
		const char *val = msg_get(req, keys[i]);

		/* "" goes back to the detected value. */
		if (val)
			r = st_kv_set(s->db, keys[i], *val ? val : NULL);
	}
	if (ids && !r)
		r = st_kv_set(s->db, "gpu_ids", *ids ? ids : NULL);
	if (r || st_commit(s->db)) {
		if (r)
			st_rollback(s->db);
		return sup_reply_error(c, "cannot store the settings (none was changed): node "
		                          "database error (see supervisor.log)");
	}
	s->reload_needed = 1; /* the loop applies them once this request is answered */
	msg_init(&m);
	msg_add(&m, "ok", "1");
	sup_reply(c, &m);
	msg_release(&m);
}

static void op_shutdown(struct conn *c, const struct msg *req)
{
	struct sup *s = c->s;
	struct msg m;

	msg_init(&m);
	msg_add(&m, "ok", "1");
	msg_add_int(&m, "pid", getpid());
	msg_add_int(&m, "running", (int64_t)s->nrun);
	/* `node down --all`: no job starts after this, and it needs to know which ran. */
	if (msg_get(req, "rows"))
		sup_down_rows(s->db, &m);
	sup_reply(c, &m);
	msg_release(&m);
	s->stopping = 1;
}

static const struct {
	const char *name;
	void (*fn)(struct conn *c, const struct msg *req);
} ops[] = {
        {"autostop", sup_op_autostop}, {"cancel", op_cancel},
        {"config", op_config},         {"ping", op_ping},
        {"shutdown", op_shutdown},     {"status", op_status},
        {"submit", op_submit},         {"watch", op_watch},
};

static void handle(struct conn *c, const struct msg *req)
{
	const char *op = msg_get(req, "op");
	size_t i;

	if (c->denied) {
		c->closing = 1;
		return sup_reply_error(c, "permission denied: the supervisor serves only its "
		                          "own user");
	}
	if (!op)
		return sup_reply_error(c, "request has no op");
	for (i = 0; i < ARRAY_SIZE(ops); i++)
		if (!strcmp(ops[i].name, op))
			return ops[i].fn(c, req);
	sup_reply_error(c, "unknown op '%.32s' (a newer client? upgrade the node's skiff)", op);
}

void sup_conn_event(struct sup *s, int fd, uint32_t events)
{
	struct conn *c = (size_t)fd < nconns_cap ? conns[fd] : NULL;

	(void)s; /* each connection holds its supervisor (c->s) */

	if (!c)
		return;
	if (events & EPOLLOUT) {
		conn_flush(c);
		return;
	}
	for (;;) {
		size_t need, cap0 = c->in.cap;
		const char *why;
		struct msg req;
		ssize_t n;
		/*
		 * A request under way is read RECV_MORE at a time; a new one first into a small
		 * buffer: most requests fit, and musl maps a block over half a page by itself (an
		 * mmap and a munmap for every request, each unmap a TLB shootdown).
		 */
		int r = buf_grow(&c->in, c->in.len ? RECV_MORE : RECV_FIRST);

		if (r == -ENOBUFS)
			r = buf_grow(&c->in, c->in.max - c->in.len);
		if (r) {
			c->closing = 1;
			sup_reply_error(c, "request too large (max %zu bytes)",
			                (size_t)PROTO_MAX_MSG);
			return;
		}
		inbuf_total += c->in.cap - cap0;
		if (c->in.cap > cap0 && inbuf_total > INBUF_TOTAL_MAX) {
			warning_ratelimited(
			        &inbuf_warned,
			        "%zu MiB of unfinished requests held: refusing one more",
			        inbuf_total >> 20);
			c->closing = 1;
			sup_reply_error(
			        c,
			        "the node supervisor is busy: it holds %zu MiB of unfinished "
			        "requests; try again",
			        inbuf_total >> 20);
			return;
		}
		c->last_ms = now_ms();
		n = recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len - 1, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				conn_close(c);
			return;
		}
		if (n == 0) {
			conn_close(c);
			return;
		}
		c->in.len += (size_t)n;
		/* Handle every complete request in the buffer. */
		while (c->in.len >= PROTO_HDR) {
			if (proto_parse_header((unsigned char *)c->in.p, &need)) {
				c->closing = 1;
				sup_reply_error(c, "request too large (max %zu bytes)",
				                (size_t)PROTO_MAX_MSG);
				return;
			}
			if (c->in.len < PROTO_HDR + need)
				break;
			msg_init(&req);
			if (msg_decode(&req, c->in.p + PROTO_HDR, need, &why)) {
				msg_release(&req);
				c->closing = 1;
				sup_reply_error(c, "malformed request: %s", why);
				return;
			}
			memmove(c->in.p, c->in.p + PROTO_HDR + need, c->in.len - PROTO_HDR - need);
			c->in.len -= PROTO_HDR + need;
			if (!c->in.len && c->in.cap > INBUF_KEEP) {
				inbuf_total -= c->in.cap;
				buf_release(&c->in);
			}
			handle(c, &req);
			msg_release(&req);
			if (!conns[fd])
				return; /* closed while replying */
		}
	}
}
