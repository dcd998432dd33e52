/*
 * `skiff node logs`: print or follow a job's setup and run logs, and report its final
 * status through the exit code, as SkyPilot's `sky logs` does.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/node.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/node.h"
#include "supervisor/logprefix.h"
#include "supervisor/node.h"
#include "lib/proto.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

/* How often a follower re-reads the job's status when no log line arrives. */
#define FOLLOW_STATUS_MS 250
/* ... and how soon after a write to the db it looks again (see the follow loop). */
#define FOLLOW_AFTER_EVENT_MS 5
/* How long a follower looks by polling before it sets inotify watches, and how often. */
#define FOLLOW_SPIN_MS 100
#define FOLLOW_SPIN_MAX_MS 4
/* --tail reads at most this much from the end of each log. */
#define TAIL_WINDOW ((off_t)8 << 20)
/*
 * With --prefix-rank: how long a log's first output waits for its step's pid in the node
 * db (the shim records it a moment after the spawn), and how often it looks.
 */
#define PREFIX_PID_WAIT_MS 500
#define PREFIX_PID_POLL_MS 5
/* ... and how much prefixed output it gathers before a write. */
#define PREFIX_FLUSH 65536

const char node_logs_usage[] =
        "usage: skiff node logs JOB [--follow|--no-follow] [--tail N] [--status [--wait]]\n"
        "                      [--prefix-rank N [--prefix-ip IP]] [--stdin-held]\n"
        "\n"
        "Prints the job's setup log then its run log. By default it follows them until\n"
        "the job ends (Ctrl-C stops following; the job keeps running).\n"
        "\n"
        "  --no-follow   print what there is and exit\n"
        "  --tail N      start with only the last N lines\n"
        "  --status      print the job's status only\n"
        "  --wait        with --status: first wait until the job has ended\n"
        "  --prefix-rank N, --prefix-ip IP\n"
        "                each line prefixed as SkyPilot does for gang rank N:\n"
        "                (head, rank=0, pid=P) or (workerN, rank=N, pid=P, ip=IP)\n"
        "  --stdin-held  whoever reads holds our stdin open while it reads: EOF on it\n"
        "                ends the follow, as when stdout's reader is gone\n"
        "\n"
        "Exit status: 0 succeeded, 100 failed (FAILED, FAILED_SETUP, FAILED_DRIVER),\n"
        "101 not finished (0 with --no-follow), 102 not found, 103 cancelled.\n";

struct logf {
	const char *name;
	char *path;
	int fd;
	off_t off;
};

/* --prefix-rank: each line's prefix, with the pid of the job's step on this node. */
struct lprefix {
	const struct node_log_rank *rank; /* NULL: no prefixes */
	struct buf text;                  /* the prefix for the pid below */
	long pid;                         /* 0 until known */
	long setup_pid;                   /* the setup's pid, read while it was the step */
	const struct logf *last;          /* the log the last output came from */
	int bol;                          /* the next byte starts a line */
	struct buf out;
};

static int open_logf(struct logf *l)
{
	if (l->fd >= 0)
		return 0;
	l->fd = open(l->path, O_RDONLY | O_CLOEXEC);
	return l->fd >= 0 ? 0 : -errno;
}

struct jsrc;
static long step_pid(struct jsrc *s, int64_t id, long other, int *status);

/*
 * The prefix for the output of l, which is about to be written: a new log (the setup's,
 * then the run's) is a new step with a pid of its own; a pid not yet known is looked for
 * again at each output until it is.
 */
static void prefix_for(struct lprefix *px, const struct logf *l, struct jsrc *s, int64_t id)
{
	int is_run = !strcmp(l->name, "run.log"), status = -1;

	if (px->last != l) {
		if (px->last && !px->bol)
			buf_addch(&px->out, '\n'); /* the last step's unended line ends here */
		px->bol = 1;
		px->last = l;
		px->pid = 0;
	}
	if (px->pid > 0)
		return;
	/*
	 * The db holds the current step's pid: a run's lines wait for one other than the
	 * setup's, when that was seen. Once the job has moved on (logs read afterwards) the
	 * setup's lines get the run's pid: the db keeps no other.
	 */
	px->pid = step_pid(s, id, is_run ? px->setup_pid : 0, &status);
	if (!is_run && status == JOB_SETTING_UP)
		px->setup_pid = px->pid;
	buf_reset(&px->text);
	logprefix_format(&px->text, px->rank->rank, px->pid, px->rank->ip);
}

/*
 * Writes blk (from l) with its lines prefixed; -1 on a write error. A line at a time
 * into px->out, written each PREFIX_FLUSH bytes: a block of short lines and a long
 * prefix (a host's name) never makes a buffer without bound.
 */
static int drain_prefixed(struct lprefix *px, const struct logf *l, struct jsrc *s, int64_t id,
                          const char *blk, size_t n)
{
	buf_reset(&px->out);
	prefix_for(px, l, s, id);
	while (n) {
		const char *nl = memchr(blk, '\n', n);
		size_t len = nl ? (size_t)(nl - blk) + 1 : n;

		if (logprefix_lines(&px->out, blk, len, px->text.p, px->text.len, &px->bol))
			return -1;
		if (px->out.len >= PREFIX_FLUSH) {
			if (write_all(1, px->out.p, px->out.len))
				return -1;
			buf_reset(&px->out);
		}
		blk += len;
		n -= len;
	}
	return px->out.len ? write_all(1, px->out.p, px->out.len) : 0;
}

/* Copies what is new in l to stdout, prefixed per px; returns -1 on a write error. */
static int drain(struct logf *l, struct lprefix *px, struct jsrc *s, int64_t id)
{
	char blk[65536];

	if (open_logf(l))
		return 0;
	for (;;) {
		ssize_t n = pread(l->fd, blk, sizeof(blk), l->off);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		if (!px->rank)
			r = write_all(1, blk, (size_t)n);
		else
			r = drain_prefixed(px, l, s, id, blk, (size_t)n);
		if (r)
			return -1;
		l->off += n;
	}
}

/* Positions l so that only its last `*left` lines remain to print; counts them off. */
static void seek_tail(struct logf *l, long *left)
{
	struct stat st;
	off_t start;
	char *blk;
	ssize_t n, i;

	if (open_logf(l) || fstat(l->fd, &st) || !st.st_size)
		return;
	start = st.st_size > TAIL_WINDOW ? st.st_size - TAIL_WINDOW : 0;
	blk = xmalloc((size_t)(st.st_size - start));
	n = pread(l->fd, blk, (size_t)(st.st_size - start), start);
	l->off = st.st_size;
	if (n <= 0 || *left <= 0)
		goto out;
	i = n;
	if (blk[i - 1] == '\n')
		i--; /* the final newline ends the last line; it does not start one */
	for (; i > 0; i--)
		if (blk[i - 1] == '\n' && --*left == 0)
			break;
	if (i == 0 && *left > 0)
		--*left; /* the first line has no newline before it */
	l->off = start + i;
out:
	free(blk);
}

/* An inotify fd watching a job's log dir (none if log_dir is NULL), or -1 (then: polling). */
static int watch_logs(const char *log_dir)
{
	int inf = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	if (inf < 0)
		return -1;
	if (log_dir && mkdir_p(log_dir, 0700) == 0)
		inotify_add_watch(inf, log_dir, IN_MODIFY | IN_CREATE | IN_CLOSE_WRITE);
	return inf;
}

/* Status changes are writes to the node db's WAL: wake on those too. */
static void watch_wal(int inf)
{
	char *wal = xasprintf("%s-wal", node_paths()->db);

	inotify_add_watch(inf, wal, IN_MODIFY);
	free(wal);
}

int node_logs(int argc, char **argv)
{
	int i, follow = 1, only_status = 0, wait = 0, stdin_held = 0, rc;
	long tail = -1, rank = -1;
	struct node_log_rank lr = {0, NULL};
	int64_t id = 0;
	struct st_db *db;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--follow") || !strcmp(argv[i], "-f")) {
			follow = 1;
		} else if (!strcmp(argv[i], "--no-follow")) {
			follow = 0;
		} else if (!strcmp(argv[i], "--status")) {
			only_status = 1;
		} else if (!strcmp(argv[i], "--wait")) {
			wait = 1;
		} else if (!strcmp(argv[i], "--stdin-held")) {
			stdin_held = 1;
		} else if (!strcmp(argv[i], "--tail")) {
			if (i + 1 >= argc || parse_long(argv[i + 1], 0, 1L << 40, &tail))
				return usage_error("node logs", "--tail needs a number of lines");
			i++;
		} else if (!strcmp(argv[i], "--prefix-rank")) {
			if (i + 1 >= argc || parse_long(argv[i + 1], 0, TASK_MAX_NODES - 1, &rank))
				return usage_error("node logs",
				                   "--prefix-rank needs a rank (0..%d)",
				                   TASK_MAX_NODES - 1);
			i++;
		} else if (!strcmp(argv[i], "--prefix-ip")) {
			if (i + 1 >= argc)
				return usage_error("node logs", "--prefix-ip needs an address");
			lr.ip = argv[++i];
		} else if (argv[i][0] == '-') {
			return usage_error("node logs", "unknown option '%s'", argv[i]);
		} else if (!id) {
			id = node_parse_job_id("node logs", argv[i]);
			if (id < 0)
				return EXIT_USAGE;
		} else {
			return usage_error("node logs", "unexpected argument '%s'", argv[i]);
		}
	}
	if (!id)
		return usage_error("node logs", "expected a job id");
	db = node_open_db();
	if (!db)
		return EXIT_UNAVAILABLE;
	lr.rank = (int)rank;
	rc = node_logs_job(db, id, follow, tail, only_status, wait, rank >= 0 ? &lr : NULL,
	                   stdin_held);
	st_close(db);
	return rc;
}

/*
 * Where a follower learns the job's status. The supervisor tells a watching connection
 * when the job has ended (op "watch", or submit with "follow"): no polling, no delay.
 * Without one (an older supervisor, or it went away) the follower reads the node db, on
 * inotify events on its WAL and every FOLLOW_STATUS_MS.
 */
struct jsrc {
	struct st_db *db;    /* NULL while the watch connection tells */
	struct st_db *spare; /* the caller's db, for when the watch fails */
	int own_db;          /* db was opened here */
	int fd;              /* the watch connection, or -1 */
	int in_held; /* stdin is the reader's channel, held open: its EOF, the reader gone */
	struct job jb;
};

/* Asks the supervisor to tell us when job id ends; the connection's fd, or -1. */
static int watch_open(struct jsrc *s, int64_t id)
{
	struct msg req, rep;
	int fd = sup_connect(SUP_QUIET), r;

	if (fd < 0)
		return -1;
	msg_init(&req);
	msg_init(&rep);
	msg_add(&req, "op", "watch");
	msg_add_int(&req, "id", id);
	r = proto_send(fd, &req);
	if (!r)
		r = proto_recv(fd, &rep, 10000);
	if (!r && msg_get(&rep, "ended")) {
		/* It ended since we read the db: that is its final word. */
		s->jb.status = job_status_parse(msg_get(&rep, "status"));
		r = -1;
	} else if (!r && !msg_get(&rep, "watching")) {
		r = -1; /* an error (an older supervisor has no "watch") */
	}
	msg_release(&req);
	msg_release(&rep);
	if (r) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The watch connection is readable: the job's end, or the supervisor went away. */
static int watch_read(struct jsrc *s)
{
	const struct node_paths *p = node_paths();
	struct msg m;
	int r;

	msg_init(&m);
	r = proto_recv(s->fd, &m, 10000);
	close(s->fd);
	s->fd = -1;
	if (!r && msg_get(&m, "ended")) {
		s->jb.status = job_status_parse(msg_get(&m, "status"));
		msg_release(&m);
		return 0;
	}
	msg_release(&m);
	/* No word from the supervisor: the db has the job's status. */
	s->db = s->spare;
	if (!s->db) {
		if (!p || st_open(p->db, &st_node_schema, ST_READONLY, &s->db))
			return -1;
		s->own_db = 1;
	}
	return 0;
}

/*
 * The pid of job id's current step as the node db has it, once it is a pid other than
 * `other` (the setup's, when the run's is wanted), and the job's status then; 0 when none
 * comes in PREFIX_PID_WAIT_MS. The db is the follower's, or opened for this while the
 * watch connection tells.
 */
static long step_pid(struct jsrc *s, int64_t id, long other, int *status)
{
	const struct node_paths *p = node_paths();
	struct st_db *db = s->db ? s->db : s->spare;
	int64_t end = now_ms() + PREFIX_PID_WAIT_MS;
	long pid = 0;
	int own = 0;

	if (!db) {
		if (!p || st_open(p->db, &st_node_schema, ST_READONLY, &db))
			return 0;
		own = 1;
	}
	for (;;) {
		struct job j;

		if (!st_job_get(db, id, &j)) {
			pid = j.job_pid;
			*status = j.status;
			job_free(&j);
		}
		if ((pid > 0 && pid != other) || now_ms() >= end)
			break;
		poll(NULL, 0, PREFIX_PID_POLL_MS);
	}
	if (own)
		st_close(db);
	return pid > 0 && pid != other ? pid : 0;
}

static int jsrc_refresh(struct jsrc *s, int64_t id)
{
	if (!s->db)
		return 0; /* the watch connection tells */
	job_free(&s->jb);
	if (st_job_get(s->db, id, &s->jb))
		return error("job %lld vanished from the queue", (long long)id);
	return 0;
}

/*
 * Prints a job's logs and follows them until it ends. s holds the job as far as it is
 * known (its log dir, its status), and how to learn its status.
 */
static int follow_job(struct jsrc *s, int64_t id, int follow, long tail, int only_status,
                      const struct node_log_rank *rank)
{
	struct logf logs[2] = {{"setup.log", NULL, -1, 0}, {"run.log", NULL, -1, 0}};
	struct lprefix px = {.rank = rank, .bol = 1};
	int i, inf = -1, watched = 0, wal_watched = 0, spin = 1, rc = EXIT_FAIL, woke = 0;
	int out_open = 1;
	int64_t t0;

	buf_init(&px.text, 0);
	buf_init(&px.out, 0);
	for (i = 0; i < 2 && !only_status; i++)
		logs[i].path = xasprintf("%s/%s", s->jb.log_dir, logs[i].name);
	if (tail >= 0 && !only_status) {
		/* Count from the end: the run log's lines first, then the setup log's. */
		long left = tail;

		seek_tail(&logs[1], &left);
		if (left > 0)
			seek_tail(&logs[0], &left);
		else if (!open_logf(&logs[0]))
			logs[0].off = lseek(logs[0].fd, 0, SEEK_END);
		if (!tail) {
			for (i = 0; i < 2; i++)
				if (!open_logf(&logs[i]))
					logs[i].off = lseek(logs[i].fd, 0, SEEK_END);
		}
	}
	/*
	 * Following: first by looking often (1 ms, doubling to 4 ms), for about the first
	 * 100 ms; then on inotify events. The last close of an inotify instance that had
	 * watches waits for the kernel's teardown (an SRCU grace period, 5-20 ms), which
	 * delays our exit and whoever waits on it (sshd, the launcher): a short job, the
	 * common case of `exec`, never pays it. The job's end comes on the watch connection
	 * at once, whatever we are doing.
	 */
	t0 = now_ms();
	for (;;) {
		struct pollfd pfd[4];
		int done = job_status_terminal(s->jb.status), nfd = 0, timeout, at_watch = -1;
		int at_inf = -1, at_out = -1, at_in = -1;

		if (!only_status && (drain(&logs[0], &px, s, id) || drain(&logs[1], &px, s, id)))
			goto out;
		if (done || !follow)
			break;
		if (!watched && now_ms() - t0 >= FOLLOW_SPIN_MS) {
			watched = 1;
			inf = watch_logs(only_status ? NULL : s->jb.log_dir);
			/* The job may have ended before the watches were in place: look again. */
			woke = 1;
		}
		if (inf >= 0 && s->fd < 0 && !wal_watched) {
			wal_watched = 1;
			watch_wal(inf);
		}
		if (!watched)
			timeout = spin;
		else if (s->fd >= 0 && inf >= 0)
			timeout = -1;
		else if (inf >= 0)
			/*
			 * A commit writes the WAL (an event) a moment before it becomes visible
			 * (the wal-index in shared memory: no event). So after an event, look
			 * again shortly even if nothing else arrives.
			 */
			timeout = woke ? FOLLOW_AFTER_EVENT_MS : FOLLOW_STATUS_MS;
		else
			timeout = FOLLOW_STATUS_MS;
		if (s->fd >= 0) {
			at_watch = nfd;
			pfd[nfd++] = (struct pollfd){s->fd, POLLIN, 0};
		}
		if (inf >= 0) {
			at_inf = nfd;
			pfd[nfd++] = (struct pollfd){inf, POLLIN, 0};
		}
		/*
		 * Whoever reads us may go without a word (a killed `skiff logs`, a browser's
		 * tab let go, an ssh client gone) while the log writes nothing: our stdout's
		 * hang-up tells (OUT_GONE).
		 */
		if (out_open) {
			at_out = nfd;
			pfd[nfd++] = (struct pollfd){1, 0, 0};
		}
		/*
		 * Over a channel that carries no hang-up to stdout (ssh's: sshd holds it), the
		 * reader that went is told by our stdin, which it held open: EOF (in_held).
		 */
		if (s->in_held) {
			at_in = nfd;
			pfd[nfd++] = (struct pollfd){0, POLLIN, 0};
		}
		woke = poll(pfd, (nfds_t)nfd, timeout) > 0;
		if (!watched && spin < FOLLOW_SPIN_MAX_MS)
			spin *= 2;
		if (at_out >= 0 && OUT_GONE(pfd[at_out].revents))
			goto out; /* no one reads what we would print */
		if (at_out >= 0 && (pfd[at_out].revents & POLLNVAL))
			out_open = 0; /* no stdout at all: nothing to watch */
		if (at_in >= 0 && pfd[at_in].revents) {
			char junk[256];
			ssize_t n = read(0, junk, sizeof(junk));

			if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
				goto out; /* the reader is gone: no one reads what we would print */
		}
		if (at_inf >= 0 && pfd[at_inf].revents) {
			char evbuf[4096];

			while (read(inf, evbuf, sizeof(evbuf)) > 0)
				;
		}
		if (at_watch >= 0 && pfd[at_watch].revents && watch_read(s))
			goto out;
		if (jsrc_refresh(s, id))
			goto out;
	}
	if (px.rank && !px.bol && write_all(1, "\n", 1))
		goto out; /* the last line, ended: the launcher's lines come next */
	if (only_status)
		printf("%s\n", job_status_name(s->jb.status));
	else if (follow && log_get_level() >= LOG_INFO)
		fprintf(stderr, "skiff: job %lld %s (status: %s)\n", (long long)id,
		        job_status_terminal(s->jb.status) ? "finished" : "is still running",
		        job_status_name(s->jb.status));
	rc = job_exit_code(s->jb.status);
	if (!follow && rc == EXIT_JOB_NOT_FINISHED)
		rc = EXIT_OK;
out:
	for (i = 0; i < 2; i++) {
		free(logs[i].path);
		if (logs[i].fd >= 0)
			close(logs[i].fd);
	}
	if (inf >= 0)
		close(inf);
	buf_release(&px.text);
	buf_release(&px.out);
	return rc;
}

static void jsrc_release(struct jsrc *s)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->own_db)
		st_close(s->db);
	job_free(&s->jb);
}

int node_logs_job(struct st_db *db, int64_t id, int follow, long tail, int only_status, int wait,
                  const struct node_log_rank *rank, int stdin_held)
{
	struct jsrc s = {.db = db, .fd = -1, .in_held = stdin_held};
	int rc;

	if (st_job_get(db, id, &s.jb)) {
		error("job %lld not found", (long long)id);
		return EXIT_JOB_NOT_FOUND;
	}
	if (only_status && !wait) {
		printf("%s\n", job_status_name(s.jb.status));
		rc = job_exit_code(s.jb.status);
		job_free(&s.jb);
		return rc;
	}
	if (only_status)
		follow = 1; /* --status --wait: follow the status, print no log */
	if (follow && !job_status_terminal(s.jb.status)) {
		s.fd = watch_open(&s, id);
		if (s.fd >= 0) {
			s.spare = db;
			s.db = NULL; /* the supervisor tells; the db again only if it goes away */
		}
	}
	rc = follow_job(&s, id, follow, tail, only_status, rank);
	jsrc_release(&s);
	return rc;
}

int node_follow_submitted(int fd, int64_t id, const char *log_dir, const struct node_log_rank *rank,
                          int stdin_held)
{
	struct jsrc s = {.fd = fd, .in_held = stdin_held};
	int rc;

	s.jb.status = JOB_PENDING;
	s.jb.log_dir = xstrdup(log_dir);
	rc = follow_job(&s, id, 1, -1, 0, rank);
	jsrc_release(&s);
	return rc;
}
