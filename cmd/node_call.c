/*
 * `skiff node call`: the launcher's way into a node, over the runner's channel. One framed
 * request (lib/proto.h) on stdin, framed replies on stdout; the text outputs of the other
 * node commands are for people and scripts, and skiff never parses them.
 *
 *   submit   the supervisor's reply; with "follow", the job's logs follow it, raw (with
 *            "prefix_rank" and "prefix_ip": each line prefixed as a gang rank's, as by
 *            `node logs --prefix-rank`), and the exit status is `node logs`'s; with
 *            "stdin_held" (the launcher keeps our stdin open while it reads), EOF on
 *            stdin ends the follow as a reader gone (the job runs on)
 *   queue    answered here from the node db: one frame per job ("job" = its id, then
 *            status, submitted_at, started_at, ended_at, exit_codes, cpus, memory, gpus,
 *            log_dir, name, reason, submit_key), then {"ok", "end", "count"}; the jobs are
 *            those named by "id" fields, the one of "key", or all ("active": only those
 *            that have not ended)
 *   watch    the supervisor's two replies ("watching", then "ended" with the status),
 *            each a frame as it comes; an error, with "no_job" when the node has no job
 *            of that id
 *   autostop_state  answered here, without starting a supervisor: {"ok", "running" (1
 *            while a supervisor serves), "fired" (stop, down or "": what autostop did
 *            last since it was set), "fired_at"}
 *   other    forwarded to the supervisor as is (cancel, status, autostop, config, ping)
 *
 * A reply with "error" is the node's answer; the exit status is then 1. No reply at all
 * (the supervisor cannot be started, or may not be: the node was taken down, SUP_TAKEN_DOWN):
 * a frame {"error"} and exit status 4.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/node.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/node.h"
#include "supervisor/node.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

const char node_stream_usage[] =
        "usage: skiff node stream ID LOG_DIR EXISTING WATCH_FD RANK IP\n"
        "\n"
        "Internal: started by the supervisor with a launcher's connection as stdin and\n"
        "stdout, for a followed submit that asked for its logs there (see cmd/node_call.c).\n";

const char node_call_usage[] =
        "usage: skiff node call\n"
        "\n"
        "Internal (the launcher's protocol): reads one framed request on stdin and writes\n"
        "framed replies on stdout. See cmd/node_call.c for the operations.\n";

/* How long the request may take to arrive on stdin. */
#define CALL_READ_MS 60000

static void reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* An error as the one frame of the answer. */
static void reply_error(const char *fmt, ...)
{
	struct msg m;
	va_list ap;

	msg_init(&m);
	va_start(ap, fmt);
	msg_vaddf(&m, "error", fmt, ap);
	va_end(ap);
	proto_send(1, &m);
	msg_release(&m);
}

static void add_time(struct msg *m, const char *key, double t)
{
	msg_addf(m, key, "%.3f", t);
}

/* One job, as one frame. */
static int send_job(const struct job *jb)
{
	struct msg m;
	int r;

	msg_init(&m);
	msg_add_int(&m, "job", jb->id);
	msg_add(&m, "status", job_status_name(jb->status));
	add_time(&m, "submitted_at", jb->submitted_at);
	add_time(&m, "started_at", jb->started_at);
	add_time(&m, "ended_at", jb->ended_at);
	msg_add(&m, "exit_codes", jb->exit_codes);
	msg_addf(&m, "cpus", "%g", jb->cpus);
	msg_addf(&m, "memory", "%g", jb->memory);
	msg_add_int(&m, "gpus", jb->gpus);
	msg_add(&m, "log_dir", jb->log_dir);
	msg_add(&m, "name", jb->name);
	msg_add(&m, "reason", jb->reason);
	if (jb->submit_key)
		msg_add(&m, "submit_key", jb->submit_key);
	r = proto_send(1, &m);
	msg_release(&m);
	return r;
}

struct queue_walk {
	long count;
	int err;
};

static int walk_job(struct job *jb, void *arg)
{
	struct queue_walk *w = arg;

	if (send_job(jb)) {
		w->err = -EPIPE;
		return 1;
	}
	w->count++;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * The jobs the request names ("id" keys; one that is no id names nothing) whose status is
 * in mask, by id, each looked up: a cancel's check of its batch on a node with thousands
 * of jobs must not read them all (that made `jobs cancel -a` grow as N squared).
 */
static int queue_ids(struct st_db *db, const struct msg *req, unsigned mask, struct queue_walk *w)
{
	int64_t *ids = NULL, v;
	size_t n = 0, cap = 0, i;
	int r = 0;

	for (i = 0; i < req->n; i++) {
		if (strcmp(req->keys[i], "id") || parse_long(req->vals[i], 1, INT64_MAX, &v))
			continue;
		ids = xgrow(ids, n, &cap, sizeof(*ids));
		ids[n++] = v;
	}
	if (n)
		qsort(ids, n, sizeof(*ids), cmp_id);
	for (i = 0; i < n && !r; i++) {
		struct job jb;

		if (i && ids[i] == ids[i - 1])
			continue;
		r = st_job_get(db, ids[i], &jb);
		if (r == -ENOENT) {
			r = 0;
			continue;
		}
		if (r)
			break;
		if (mask & JOB_MASK(jb.status))
			r = walk_job(&jb, w) ? w->err : 0;
		job_free(&jb);
	}
	free(ids);
	return r;
}

static int call_autostop_state(void)
{
	const struct node_paths *p = node_paths();
	struct st_db *db = NULL;
	char *fired = NULL, *at = NULL;
	struct msg m;
	int fd, r;

	if (!p) {
		reply_error("this node has no state directory");
		return EXIT_UNAVAILABLE;
	}
	/* Read only, and no supervisor started: a node with no database has no state. */
	if (!access(p->db, F_OK) && st_open(p->db, &st_node_schema, ST_READONLY, &db)) {
		reply_error("cannot open the node's database (see its supervisor.log)");
		return EXIT_UNAVAILABLE;
	}
	if (db) {
		fired = st_kv_get(db, NODE_KV_AUTOSTOP_FIRED);
		at = st_kv_get(db, NODE_KV_AUTOSTOP_FIRED_AT);
		st_close(db);
	}
	fd = unix_connect(p->sock);
	if (fd >= 0)
		close(fd);
	msg_init(&m);
	msg_add(&m, "ok", "1");
	msg_add(&m, "running", fd >= 0 ? "1" : "0");
	msg_add(&m, "fired", fired ? fired : "");
	msg_add(&m, "fired_at", at ? at : "");
	r = proto_send(1, &m) ? EXIT_FAIL : EXIT_OK;
	msg_release(&m);
	free(fired);
	free(at);
	return r;
}

static int call_queue(const struct msg *req)
{
	struct queue_walk w = {0, 0};
	unsigned mask = msg_get(req, "active") ? JOB_MASK_ACTIVE : JOB_MASK_ALL;
	const char *key = msg_get(req, "key");
	struct st_db *db = node_open_db();
	struct msg end;
	int r;

	if (!db) {
		reply_error("cannot open the node's job queue (see its supervisor.log)");
		return EXIT_UNAVAILABLE;
	}
	if (key) {
		struct job jb;

		r = st_job_find_key(db, key, &jb);
		if (!r) {
			r = send_job(&jb);
			w.count = !r;
			job_free(&jb);
		} else if (r == -ENOENT) {
			r = 0;
		}
	} else if (msg_get(req, "id")) {
		r = queue_ids(db, req, mask, &w);
	} else {
		r = st_job_each(db, mask, walk_job, &w);
		if (!r)
			r = w.err;
	}
	st_close(db);
	if (r) {
		reply_error("cannot read the node's job queue: %s", strerror(-r));
		return EXIT_FAIL;
	}
	msg_init(&end);
	msg_add(&end, "ok", "1");
	msg_add(&end, "end", "1");
	msg_add_int(&end, "count", w.count);
	r = proto_send(1, &end);
	msg_release(&end);
	return r ? EXIT_FAIL : EXIT_OK;
}

/* submit (with follow) and watch: the supervisor answers on the connection again later. */
static int call_open(const struct msg *req)
{
	struct node_log_rank lr, *plr = NULL;
	struct msg rep;
	int64_t id, rank;
	int fd, rc;

	/* An error answer goes to the caller, which says it: not printed here too. */
	fd = sup_call_open(SUP_AUTOSTART | SUP_QUIET | SUP_ANSWER_QUIET, req, &rep);
	if (fd < 0) {
		rc = EXIT_FAIL;
		if (msg_get(&rep, "error")) {
			proto_send(1, &rep);
		} else if (fd == -ESHUTDOWN) {
			reply_error("%s", SUP_TAKEN_DOWN);
			rc = EXIT_UNAVAILABLE;
		} else {
			reply_error("the node supervisor cannot be reached");
			rc = EXIT_UNAVAILABLE;
		}
		msg_release(&rep);
		return rc;
	}
	if (proto_send(1, &rep)) {
		close(fd);
		msg_release(&rep);
		return EXIT_FAIL;
	}
	if (!strcmp(msg_get(req, "op"), "watch")) {
		struct msg ended;

		rc = EXIT_OK;
		if (!msg_get(&rep, "ended")) {
			msg_init(&ended);
			if (!wait_readable_or_gone(fd, 1)) {
				rc = EXIT_FAIL; /* the watcher went: no one waits for the end */
			} else if (proto_recv(fd, &ended, -1)) {
				reply_error("the node supervisor stopped before the job ended");
				rc = EXIT_UNAVAILABLE;
			} else {
				rc = proto_send(1, &ended) ? EXIT_FAIL : EXIT_OK;
			}
			msg_release(&ended);
		}
		close(fd);
		msg_release(&rep);
		return rc;
	}
	/*
	 * submit with follow: the logs, raw (a gang rank's prefixed, with "prefix_rank" and
	 * "prefix_ip"), until the job ends; `node logs`'s exit code.
	 */
	fflush(stdout);
	if (msg_get_int(&rep, "id", &id)) {
		close(fd);
		msg_release(&rep);
		return EXIT_FAIL;
	}
	if (!msg_get_int(req, "prefix_rank", &rank) && rank >= 0 && rank < TASK_MAX_NODES) {
		lr.rank = (int)rank;
		lr.ip = msg_get(req, "prefix_ip");
		plr = &lr;
	}
	rc = node_follow_submitted(fd, id, msg_get(&rep, "log_dir"), plr,
	                           msg_get(req, "stdin_held") != NULL);
	msg_release(&rep);
	return rc;
}

/* Reads one request on stdin (waiting at most wait_ms; < 0: for ever) and answers it. */
static int call_answer(int wait_ms, int quiet_eof)
{
	struct msg req, rep;
	const char *op;
	int rc;

	msg_init(&req);
	rc = proto_recv(0, &req, wait_ms);
	if (rc == -ECONNRESET && quiet_eof) {
		msg_release(&req);
		return EXIT_OK; /* the launcher needed no call after all */
	}
	if (rc || !(op = msg_get(&req, "op"))) {
		msg_release(&req);
		reply_error("expected one framed request with an op on stdin");
		return EXIT_USAGE;
	}
	if (!strcmp(op, "queue")) {
		rc = call_queue(&req);
	} else if (!strcmp(op, "autostop_state")) {
		rc = call_autostop_state();
	} else if (!sup_forwarded_op(&req)) {
		rc = call_open(&req); /* watch, submit with follow */
	} else if ((rc = sup_request(SUP_AUTOSTART | SUP_QUIET, &req, &rep))) {
		reply_error("%s", rc == -ESHUTDOWN ? SUP_TAKEN_DOWN
		                                   : "the node supervisor cannot be reached");
		rc = EXIT_UNAVAILABLE;
		msg_release(&rep);
	} else {
		rc = proto_send(1, &rep) ? EXIT_FAIL : msg_get(&rep, "error") ? EXIT_FAIL : EXIT_OK;
		msg_release(&rep);
	}
	msg_release(&req);
	return rc;
}

int node_call(int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		return usage_error("node call", "takes no arguments (the request is on stdin)");
	log_set_level(LOG_ERROR); /* stderr is for errors; the answer is on stdout */
	return call_answer(CALL_READ_MS, 0);
}

int node_call_then(size_t skip)
{
	char blk[16384];
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	/*
	 * Nothing more goes to stderr, but the channel's stderr stays open until we exit: on
	 * `kubectl exec` (containerd's CRI), where this process is the exec'd one, its stderr
	 * pipe reaching EOF ends the whole exec session, stdin too, and the request that was
	 * still to come never arrived (the launcher saw no answer, exit status 0).
	 */
	if (fd >= 0 && fcntl(2, F_DUPFD_CLOEXEC, 3) < 0)
		debug("cannot keep stderr open: %s", strerror(errno));
	if (fd >= 0) {
		dup2(fd, 2);
		if (fd != 2)
			close(fd);
	}
	log_set_level(LOG_ERROR);
	while (skip) {
		ssize_t n = read(0, blk, skip < sizeof(blk) ? skip : sizeof(blk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return EXIT_OK; /* the launcher went away */
		skip -= (size_t)n;
	}
	/* The launcher holds the channel while it syncs and sets up: no time limit here. */
	return call_answer(-1, 1);
}

/*
 * `node stream`: the supervisor hands a followed submit's connection over to us
 * (supervisor/requests.c, stream_handoff()): it is our stdin and stdout. We send the
 * submit's answer, with "stream" (unless EXISTING is "a": the supervisor answered it and
 * held the connection while the job was young), then the job's logs, raw (a gang rank's prefixed),
 * as `node call` does after its answer, until the job ends (its end comes on WATCH_FD, the
 * supervisor's watch) or the launcher goes (EOF on the connection: the job runs on). The
 * launcher reads the job's status afterwards; our exit status goes to no one.
 */
int node_stream(int argc, char **argv)
{
	struct node_log_rank lr, *plr = NULL;
	long id, wfd, rank;
	struct msg rep;
	int r;

	log_set_level(LOG_ERROR); /* stderr is the supervisor's log */
	if (argc != 7 || parse_long(argv[1], 1, LONG_MAX, &id) || !*argv[2] ||
	    parse_long(argv[4], 3, INT32_MAX, &wfd))
		return usage_error("node stream", "expected ID LOG_DIR EXISTING WATCH_FD RANK IP");
	if (*argv[5] && !parse_long(argv[5], 0, TASK_MAX_NODES - 1, &rank)) {
		lr.rank = (int)rank;
		lr.ip = *argv[6] ? argv[6] : NULL;
		plr = &lr;
	}
	/* EXISTING "a": the supervisor answered the submit itself, and held it a while. */
	if (strcmp(argv[3], "a")) {
		msg_init(&rep);
		msg_add(&rep, "ok", "1");
		msg_add_int(&rep, "id", id);
		msg_add(&rep, "log_dir", argv[2]);
		if (!strcmp(argv[3], "1"))
			msg_add(&rep, "existing", "1");
		msg_add(&rep, "follow", "1");
		msg_add(&rep, "stream", "1");
		r = proto_send(1, &rep);
		msg_release(&rep);
		if (r) {
			close((int)wfd);
			return EXIT_FAIL;
		}
	}
	return node_follow_submitted((int)wfd, id, argv[2], plr, 1);
}
