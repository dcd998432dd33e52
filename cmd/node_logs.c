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
#include "lib/util.h"
#include "state/node.h"
#include "supervisor/node.h"
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

const char node_logs_usage[] =
        "usage: skiff node logs JOB [--follow|--no-follow] [--tail N] [--status [--wait]]\n"
        "\n"
        "Prints the job's setup log then its run log. By default it follows them until\n"
        "the job ends (Ctrl-C stops following; the job keeps running).\n"
        "\n"
        "  --no-follow   print what there is and exit\n"
        "  --tail N      start with only the last N lines\n"
        "  --status      print the job's status only\n"
        "  --wait        with --status: first wait until the job has ended\n"
        "\n"
        "Exit status: 0 succeeded, 100 failed (FAILED, FAILED_SETUP, FAILED_DRIVER),\n"
        "101 not finished (0 with --no-follow), 102 not found, 103 cancelled.\n";

int job_exit_code(int status)
{
	switch (status) {
	case JOB_SUCCEEDED: return EXIT_OK;
	case JOB_CANCELLED: return EXIT_JOB_CANCELLED;
	case JOB_FAILED:
	case JOB_FAILED_SETUP:
	case JOB_FAILED_DRIVER: return EXIT_JOB_FAILED;
	default: return EXIT_JOB_NOT_FINISHED;
	}
}

struct logf {
	const char *name;
	char *path;
	int fd;
	off_t off;
};

static int open_logf(struct logf *l)
{
	if (l->fd >= 0)
		return 0;
	l->fd = open(l->path, O_RDONLY | O_CLOEXEC);
	return l->fd >= 0 ? 0 : -errno;
}

/* Copies what is new in l to stdout; returns -1 on a write error. */
static int drain(struct logf *l)
{
	char blk[65536];

	if (open_logf(l))
		return 0;
	for (;;) {
		ssize_t n = pread(l->fd, blk, sizeof(blk), l->off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		if (write_all(1, blk, (size_t)n))
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

/* Watches a job's log dir and the node db's WAL; the inotify fd, or -1 (then: polling). */
static int watch_job(const char *log_dir)
{
	int inf = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	char *wal;

	if (inf < 0)
		return -1;
	if (mkdir_p(log_dir, 0700) == 0)
		inotify_add_watch(inf, log_dir, IN_MODIFY | IN_CREATE | IN_CLOSE_WRITE);
	/* Status changes are writes to the db's WAL: wake on those too. */
	wal = xasprintf("%s-wal", node_paths()->db);
	inotify_add_watch(inf, wal, IN_MODIFY);
	free(wal);
	return inf;
}

int node_logs(int argc, char **argv)
{
	int i, follow = 1, only_status = 0, wait = 0, rc;
	long tail = -1;
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
		} else if (!strcmp(argv[i], "--tail")) {
			if (i + 1 >= argc || parse_long(argv[i + 1], 0, 1L << 40, &tail))
				return usage_error("node logs", "--tail needs a number of lines");
			i++;
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
	rc = node_logs_job(db, id, follow, tail, only_status, wait);
	st_close(db);
	return rc;
}

int node_logs_job(struct st_db *db, int64_t id, int follow, long tail, int only_status, int wait)
{
	struct logf logs[2] = {{"setup.log", NULL, -1, 0}, {"run.log", NULL, -1, 0}};
	int i, inf = -1, watched = 0, spin = 1, rc = EXIT_FAIL, woke = 0;
	int64_t t0;
	struct job jb = {0};

	if (st_job_get(db, id, &jb)) {
		error("job %lld not found", (long long)id);
		rc = EXIT_JOB_NOT_FOUND;
		goto out;
	}
	if (only_status && !wait) {
		printf("%s\n", job_status_name(jb.status));
		rc = job_exit_code(jb.status);
		goto out;
	}
	if (only_status)
		follow = 1; /* --status --wait: follow the status, print no log */
	for (i = 0; i < 2 && !only_status; i++)
		logs[i].path = xasprintf("%s/%s", jb.log_dir, logs[i].name);
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
	 * common case of `exec`, never pays it.
	 */
	t0 = now_ms();
	for (;;) {
		int done = job_status_terminal(jb.status);

		if (!only_status && (drain(&logs[0]) || drain(&logs[1])))
			goto out;
		if (done || !follow)
			break;
		if (inf < 0 && !watched && now_ms() - t0 >= FOLLOW_SPIN_MS) {
			watched = 1;
			inf = watch_job(jb.log_dir);
			/* The job may have ended before the watches were in place: look again. */
			woke = 1;
		}
		if (inf >= 0) {
			struct pollfd pfd = {inf, POLLIN, 0};
			char evbuf[4096];

			/*
			 * A commit writes the WAL (an event) a moment before it becomes visible
			 * (the wal-index in shared memory: no event). So after an event, look
			 * again shortly even if nothing else arrives.
			 */
			woke = poll(&pfd, 1, woke ? FOLLOW_AFTER_EVENT_MS : FOLLOW_STATUS_MS) > 0;
			if (woke)
				while (read(inf, evbuf, sizeof(evbuf)) > 0)
					;
		} else {
			poll_ms(watched ? FOLLOW_STATUS_MS : spin);
			if (spin < FOLLOW_SPIN_MAX_MS)
				spin *= 2;
		}
		job_free(&jb);
		if (st_job_get(db, id, &jb)) {
			error("job %lld vanished from the queue", (long long)id);
			goto out;
		}
	}
	if (only_status)
		printf("%s\n", job_status_name(jb.status));
	else if (follow && log_get_level() >= LOG_INFO)
		fprintf(stderr, "skiff: job %lld %s (status: %s)\n", (long long)id,
		        job_status_terminal(jb.status) ? "finished" : "is still running",
		        job_status_name(jb.status));
	rc = job_exit_code(jb.status);
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
	job_free(&jb);
	return rc;
}
