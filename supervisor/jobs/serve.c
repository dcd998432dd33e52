/*
 * `skiff __jobs-remote` on a managed-jobs controller's host: the server of the requests a
 * launcher sends (supervisor/jobs/remote.c), one per process, in frames (lib/proto.h).
 *
 * The request is one frame on stdin: "op" and the controller's knobs ("env"). The answers
 * are frames on stdout, and nothing else is: whatever else would write to stdout writes to
 * stderr, which the launcher shows as the host's messages. The last answer is {end, code}
 * (code: the exit status of the command the request stands for) or {error, code}; an op
 * this build does not know gets {error, unknown_op}. A request for logs is answered by
 * {stream} and then the logs' bytes until EOF, the process's exit status being the
 * command's.
 *
 *   submit     the job's fields and files          {id} per job, then {end}
 *   queue      skip_finished                       jobs_snap_send()'s rows, then {end}
 *   cancel     id..., name, all                    {found, done}, then {end}
 *   logs       struct jobs_logs_req's fields       {stream} and the logs (a tar stream
 *                                                  with sync_down)
 *   count      -                                   {count}, then {end}
 *   stop       -                                   {end}
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/exit.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/util.h"
#include "state/launcher.h"
#include "supervisor/jobs/jobs.h"
#include "lib/banned.h"

/* How long the launcher has to send its request. */
#define SERVE_RECV_MS (60 * 1000)

/* Frames are written in blocks of about this much (a queue of 10,000 jobs is 20,000). */
#define SERVE_WRITE_BLOCK ((size_t)64 << 10)

struct server {
	int out; /* where the frames go: our stdout as we started */
	int failed;
	struct buf pending; /* frames not written yet */
};

static int flush_frames(struct server *sv)
{
	if (!sv->failed && sv->pending.len && write_all(sv->out, sv->pending.p, sv->pending.len))
		sv->failed = 1; /* the launcher went away: nothing to tell it any more */
	buf_reset(&sv->pending);
	return sv->failed;
}

static int send_frame(const struct msg *m, void *arg)
{
	struct server *sv = arg;

	/* A frame that cannot be held is never half sent: the answer stops there, and the
	 * launcher, with no end frame, says the controller gave no answer. */
	if (proto_put(&sv->pending, m))
		sv->failed = 1;
	return sv->pending.len >= SERVE_WRITE_BLOCK ? flush_frames(sv) : sv->failed;
}

static int send_end(struct server *sv, int code)
{
	struct msg m;

	msg_init(&m);
	msg_add(&m, "end", "1");
	msg_add_int(&m, "code", code);
	send_frame(&m, sv);
	msg_release(&m);
	return code;
}

static int send_error(struct server *sv, int code, const char *why, int unknown_op)
{
	struct msg m;

	msg_init(&m);
	msg_add(&m, "error", why);
	msg_add_int(&m, "code", code);
	if (unknown_op)
		msg_add(&m, "unknown_op", "1");
	send_frame(&m, sv);
	msg_release(&m);
	return code;
}

static void send_id(int64_t id, void *arg)
{
	struct msg m;

	msg_init(&m);
	msg_add_int(&m, "id", id);
	send_frame(&m, arg);
	msg_release(&m);
}

static int serve_queue(struct server *sv, const struct msg *req)
{
	struct jobs_snap snap;
	struct st_db *db;
	int64_t skip = 0;
	int r;

	msg_get_int(req, "skip_finished", &skip);
	if (st_launcher_open(0, &db))
		return send_end(sv, EXIT_FAIL);
	jobs_ensure_controller(db);
	r = jobs_snap_load(db, skip != 0, &snap);
	st_close(db);
	if (r)
		return send_end(sv, EXIT_FAIL);
	r = jobs_snap_send(&snap, send_frame, sv);
	jobs_snap_free(&snap);
	return send_end(sv, r ? EXIT_FAIL : EXIT_OK);
}

static int serve_cancel(struct server *sv, const struct msg *req)
{
	int64_t *ids = xcalloc(req->n + 1, sizeof(*ids));
	struct st_db *db = NULL;
	struct msg m;
	size_t i, n = 0;
	int found = 0, done = 0, ended = 0, rc = EXIT_FAIL;

	for (i = 0; i < req->n; i++) {
		long v;

		if (!strcmp(req->keys[i], "id") && !parse_long(req->vals[i], 1, LONG_MAX, &v))
			ids[n++] = v;
	}
	if (!st_launcher_open(0, &db) &&
	    !jobs_cancel(db, ids, n, msg_get(req, "name"), msg_get(req, "all") != NULL, &found,
	                 &done, &ended)) {
		msg_init(&m);
		msg_add_int(&m, "found", found);
		msg_add_int(&m, "done", done);
		msg_add_int(&m, "ended", ended);
		send_frame(&m, sv);
		msg_release(&m);
		rc = EXIT_OK;
	}
	st_close(db);
	free(ids);
	return send_end(sv, rc);
}

static int serve_logs(struct server *sv, const struct msg *req)
{
	struct jobs_logs_req lr = {0};
	struct msg m;
	int64_t v = 0, id;
	int rc;

	if (!msg_get_int(req, "id", &v))
		lr.id = v;
	lr.name = msg_get(req, "name");
	lr.task = msg_get(req, "task");
	lr.follow = !msg_get_int(req, "follow", &v) && v;
	lr.controller = !msg_get_int(req, "controller", &v) && v;
	lr.sync_down = !msg_get_int(req, "sync_down", &v) && v;
	rc = jobs_logs_resolve(&lr, &id);
	if (rc)
		return send_end(sv, rc);
	msg_init(&m);
	msg_add(&m, "stream", "1");
	msg_add_int(&m, "id", id);
	send_frame(&m, sv);
	msg_release(&m);
	if (flush_frames(sv))
		return EXIT_FAIL;
	/* From here our stdout is the stream's. */
	fflush(stdout);
	if (dup2(sv->out, 1) < 0)
		return error_errno("cannot write the logs"), EXIT_FAIL;
	rc = jobs_logs_run(&lr, id, 1);
	fflush(stdout);
	return rc;
}

static int serve_submit(struct server *sv, const struct msg *req)
{
	return send_end(sv, jobs_host_submit(req, send_id, sv));
}

static int serve_count(struct server *sv, const struct msg *req)
{
	int64_t n = jobs_host_count();
	struct msg m;

	(void)req;
	if (n < 0)
		return send_end(sv, EXIT_FAIL);
	msg_init(&m);
	msg_add_int(&m, "count", n);
	send_frame(&m, sv);
	msg_release(&m);
	return send_end(sv, EXIT_OK);
}

static int serve_stop(struct server *sv, const struct msg *req)
{
	(void)req;
	return send_end(sv, jobs_host_stop());
}

static const struct op {
	const char *name;
	int (*fn)(struct server *sv, const struct msg *req);
	int keep; /* the keeper is made sure of first */
} ops[] = {
        {"cancel", serve_cancel, 1}, {"count", serve_count, 1}, {"logs", serve_logs, 1},
        {"queue", serve_queue, 1},   {"stop", serve_stop, 0},   {"submit", serve_submit, 1},
};

static int serve(struct server *sv, const struct msg *req)
{
	const char *op = msg_get(req, "op");
	char *why;
	size_t i;
	int rc;

	for (i = 0; op && i < ARRAY_SIZE(ops); i++) {
		if (strcmp(op, ops[i].name))
			continue;
		if (ops[i].keep && jobs_host_keep())
			warning("the jobs controller's keeper could not be started: a controller "
			        "that dies waits for the next command");
		return ops[i].fn(sv, req);
	}
	why = xasprintf("unknown op '%.64s' (the host's skiff is another build: relaunch the "
	                "controller with this one)",
	                op ? op : "");
	rc = send_error(sv, EXIT_USAGE, why, 1);
	free(why);
	return rc;
}

int jobs_host_serve(void)
{
	struct server sv = {-1, 0, BUF_INIT(0)};
	struct msg req;
	int rc;

	if (jobs_host_enter())
		return EXIT_FAIL;
	/* Frames only on the launcher's channel: anything else we write goes to stderr. */
	fflush(stdout);
	sv.out = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (sv.out < 0 || dup2(2, 1) < 0)
		return error_errno("cannot set up the answer's channel"), EXIT_FAIL;
	msg_init(&req);
	if (proto_recv(0, &req, SERVE_RECV_MS) < 0) {
		msg_release(&req);
		rc = send_error(&sv, EXIT_USAGE, "no request from the launcher", 0);
		flush_frames(&sv);
		buf_release(&sv.pending);
		return rc;
	}
	jobs_host_env(&req);
	rc = serve(&sv, &req);
	msg_release(&req);
	fflush(stdout);
	flush_frames(&sv);
	buf_release(&sv.pending);
	close(sv.out);
	return rc;
}
