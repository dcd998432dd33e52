/*
 * `skiff node queue` and `skiff node cancel`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/node.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "state/node.h"
#include "supervisor/node.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

const char node_queue_usage[] =
        "usage: skiff node queue [--json|--porcelain] [-s|--skip-finished] [JOB...]\n"
        "\n"
        "Lists the node's jobs, newest last: ID, NAME, SUBMITTED, STARTED, DURATION,\n"
        "RESOURCES, STATUS, EXIT CODES and LOG. Starts the supervisor if it is down, so\n"
        "that the states shown are reconciled with the processes that really run.\n"
        "\n"
        "  --json                a JSON list of job objects: id, name, status, priority,\n"
        "                        submitted_at, started_at, ended_at (epoch seconds or null),\n"
        "                        exit_codes (list), resources {cpus, memory, gpus},\n"
        "                        gpu_ids, log_dir, reason\n"
        "  --porcelain           one line per job for programs: id, status, submitted_at,\n"
        "                        started_at, ended_at, exit codes, cpus, memory, gpus,\n"
        "                        log_dir, name, reason; tab-separated, with \\\\, \\t and \\n\n"
        "                        escaped in the text fields\n"
        "  -s, --skip-finished   only jobs that have not ended\n"
        "  --key KEY             only the job submitted with this idempotency key (none\n"
        "                        printed when no job has it)\n";

const char node_cancel_usage[] =
        "usage: skiff node cancel JOB... | -a|--all | --key KEY...\n"
        "\n"
        "Cancels jobs: a waiting job is dropped; a running one gets SIGTERM on its process\n"
        "group and every process that escaped it, then SIGKILL after the grace period\n"
        "(skiff node up --cancel-grace). Nothing of the job survives. Any number of jobs\n"
        "is one request.\n"
        "\n"
        "  --key KEY   the job submitted with this idempotency key; when none has arrived,\n"
        "              the key is recorded as cancelled, so that a submit with it that is\n"
        "              still on its way never runs\n";

struct st_db *node_open_db(void)
{
	const struct node_paths *p = node_paths();
	struct st_db *db;
	int fd;

	if (!p)
		return NULL;
	fd = sup_connect(SUP_AUTOSTART);
	if (fd < 0)
		return NULL;
	close(fd);
	if (st_open(p->db, &st_node_schema, ST_READONLY, &db))
		return NULL;
	return db;
}

int64_t node_parse_job_id(const char *cmdname, const char *s)
{
	long id;

	if (parse_long(s, 1, INT64_MAX, &id)) {
		usage_error(cmdname, "'%s' is not a job id", s);
		return -1;
	}
	return id;
}

struct queue {
	struct json *j;
	struct buf *out;
	int64_t *ids;
	size_t nids;
	double now;
};

static int wanted(const struct queue *q, int64_t id)
{
	size_t i;

	if (!q->nids)
		return 1;
	for (i = 0; i < q->nids; i++)
		if (q->ids[i] == id)
			return 1;
	return 0;
}

static void resources_text(const struct job *jb, char *out, size_t size)
{
	if (jb->gpus)
		xsnprintf(out, size, "CPU:%g,MEM:%g,GPU:%d", jb->cpus, jb->memory, jb->gpus);
	else if (jb->memory > 0)
		xsnprintf(out, size, "CPU:%g,MEM:%g", jb->cpus, jb->memory);
	else
		xsnprintf(out, size, "CPU:%g", jb->cpus);
}

static int emit_json(struct job *jb, void *arg)
{
	struct queue *q = arg;
	struct json *j = q->j;

	if (!wanted(q, jb->id))
		return 0;
	json_obj_begin(j);
	json_key(j, "id");
	json_int(j, jb->id);
	json_key(j, "name");
	json_str(j, jb->name);
	json_key(j, "status");
	json_str(j, job_status_name(jb->status));
	json_key(j, "priority");
	json_int(j, jb->priority);
	json_key(j, "submitted_at");
	json_time(j, jb->submitted_at);
	json_key(j, "started_at");
	json_time(j, jb->started_at);
	json_key(j, "ended_at");
	json_time(j, jb->ended_at);
	json_key(j, "exit_codes");
	json_codes(j, jb->exit_codes);
	json_key(j, "resources");
	json_obj_begin(j);
	json_key(j, "cpus");
	json_double(j, jb->cpus);
	json_key(j, "memory");
	json_double(j, jb->memory);
	json_key(j, "gpus");
	json_int(j, jb->gpus);
	json_obj_end(j);
	json_key(j, "gpu_ids");
	json_str(j, jb->gpu_ids);
	json_key(j, "log_dir");
	json_str(j, jb->log_dir);
	json_key(j, "reason");
	json_str(j, jb->reason);
	json_obj_end(j);
	return 0;
}

static void ago(double now, double t, char *out, size_t size)
{
	double d = now - t;

	if (t <= 0)
		xsnprintf(out, size, "-");
	else if (d < 60)
		xsnprintf(out, size, "%ds ago", (int)d);
	else if (d < 3600)
		xsnprintf(out, size, "%dm ago", (int)(d / 60));
	else if (d < 86400)
		xsnprintf(out, size, "%dh ago", (int)(d / 3600));
	else
		xsnprintf(out, size, "%dd ago", (int)(d / 86400));
}

static void duration(double from, double to, char *out, size_t size)
{
	long d;

	if (from <= 0) {
		xsnprintf(out, size, "-");
		return;
	}
	d = (long)(to - from);
	if (d < 0)
		d = 0;
	if (d < 60)
		xsnprintf(out, size, "%lds", d);
	else if (d < 3600)
		xsnprintf(out, size, "%ldm %lds", d / 60, d % 60);
	else
		xsnprintf(out, size, "%ldh %ldm", d / 3600, (d % 3600) / 60);
}

/* Tab-separated text with \\, \t and \n escaped: for programs (the launcher). */
static void porcelain_text(struct buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			buf_adds(b, "\\\\");
		else if (*s == '\t')
			buf_adds(b, "\\t");
		else if (*s == '\n')
			buf_adds(b, "\\n");
		else
			buf_addch(b, *s);
	}
}

static int emit_porcelain(struct job *jb, void *arg)
{
	struct queue *q = arg;

	if (!wanted(q, jb->id))
		return 0;
	buf_addf(q->out, "%lld\t%s\t%.3f\t%.3f\t%.3f\t%s\t%g\t%g\t%d\t", (long long)jb->id,
	         job_status_name(jb->status), jb->submitted_at, jb->started_at, jb->ended_at,
	         *jb->exit_codes ? jb->exit_codes : "-", jb->cpus, jb->memory, jb->gpus);
	porcelain_text(q->out, jb->log_dir);
	buf_addch(q->out, '\t');
	porcelain_text(q->out, jb->name);
	buf_addch(q->out, '\t');
	porcelain_text(q->out, jb->reason);
	buf_addch(q->out, '\n');
	return 0;
}

static int emit_row(struct job *jb, void *arg)
{
	struct queue *q = arg;
	char sub[32], start[32], dur[32], res[64];

	if (!wanted(q, jb->id))
		return 0;
	ago(q->now, jb->submitted_at, sub, sizeof(sub));
	ago(q->now, jb->started_at, start, sizeof(start));
	duration(jb->started_at, jb->ended_at > 0 ? jb->ended_at : q->now, dur, sizeof(dur));
	resources_text(jb, res, sizeof(res));
	buf_addf(q->out, "%-6lld %-16.16s %-10s %-10s %-9s %-20s %-13s %-6s %s\n",
	         (long long)jb->id, *jb->name ? jb->name : "-", sub, start, dur, res,
	         job_status_name(jb->status), *jb->exit_codes ? jb->exit_codes : "-", jb->log_dir);
	return 0;
}

int node_queue(int argc, char **argv)
{
	struct buf out = BUF_INIT(0);
	struct queue q = {0};
	struct st_db *db;
	struct json j;
	int i, as_json = 0, skip = 0, r, rc = EXIT_FAIL;
	const char *key = NULL;

	q.ids = xcalloc((size_t)argc, sizeof(*q.ids));
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--key")) {
			if (++i >= argc) {
				rc = usage_error("node queue", "--key needs a value");
				goto out;
			}
			key = argv[i];
		} else if (!strcmp(argv[i], "--json")) {
			as_json = 1;
		} else if (!strcmp(argv[i], "--porcelain")) {
			as_json = 2;
		} else if (!strcmp(argv[i], "-s") || !strcmp(argv[i], "--skip-finished")) {
			skip = 1;
		} else if (argv[i][0] == '-') {
			rc = usage_error("node queue", "unknown option '%s'", argv[i]);
			goto out;
		} else {
			int64_t id = node_parse_job_id("node queue", argv[i]);

			if (id < 0) {
				rc = EXIT_USAGE;
				goto out;
			}
			q.ids[q.nids++] = id;
		}
	}
	db = node_open_db();
	if (!db) {
		rc = EXIT_UNAVAILABLE;
		goto out;
	}
	q.out = &out;
	q.now = now_wall();
	if (key) {
		struct job jb;

		r = st_job_find_key(db, key, &jb);
		if (!r) {
			/* Just that job, in whichever form was asked for. */
			if (as_json == 1) {
				json_init(&j, &out, 1);
				q.j = &j;
				json_arr_begin(&j);
			}
			if (as_json == 2)
				emit_porcelain(&jb, &q);
			else if (as_json)
				emit_json(&jb, &q);
			else
				emit_row(&jb, &q);
			job_free(&jb);
			if (as_json == 1) {
				json_arr_end(&j);
				r = json_finish(&j);
			}
		} else if (r == -ENOENT) {
			r = as_json == 1 ? buf_adds(&out, "[]\n") : 0;
		}
	} else if (as_json == 2) {
		r = st_job_each(db, skip ? JOB_MASK_ACTIVE : JOB_MASK_ALL, emit_porcelain, &q);
	} else if (as_json) {
		json_init(&j, &out, 1);
		q.j = &j;
		json_arr_begin(&j);
		r = st_job_each(db, skip ? JOB_MASK_ACTIVE : JOB_MASK_ALL, emit_json, &q);
		json_arr_end(&j);
		if (!r)
			r = json_finish(&j);
	} else {
		buf_addf(&out, "%-6s %-16s %-10s %-10s %-9s %-20s %-13s %-6s %s\n", "ID", "NAME",
		         "SUBMITTED", "STARTED", "DURATION", "RESOURCES", "STATUS", "EXIT", "LOG");
		r = st_job_each(db, skip ? JOB_MASK_ACTIVE : JOB_MASK_ALL, emit_row, &q);
	}
	st_close(db);
	if (!r && !print_out(out.p, out.len))
		rc = EXIT_OK;
out:
	free(q.ids);
	buf_release(&out);
	return rc;
}

int node_cancel(int argc, char **argv)
{
	struct msg req, rep;
	int i, all = 0, nids = 0, rc = EXIT_OK;
	size_t k;

	msg_init(&req);
	msg_add(&req, "op", "cancel");
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-a") || !strcmp(argv[i], "--all")) {
			all = 1;
		} else if (!strcmp(argv[i], "--key")) {
			if (++i >= argc || msg_add(&req, "key", argv[i])) {
				msg_release(&req);
				return usage_error("node cancel", "--key needs a value");
			}
			nids++;
		} else if (argv[i][0] == '-') {
			msg_release(&req);
			return usage_error("node cancel", "unknown option '%s'", argv[i]);
		} else {
			if (node_parse_job_id("node cancel", argv[i]) < 0) {
				msg_release(&req);
				return EXIT_USAGE;
			}
			msg_add(&req, "id", argv[i]);
			nids++;
		}
	}
	if (all == !!nids) {
		msg_release(&req);
		return usage_error("node cancel", "give job ids or --all (not both)");
	}
	if (all)
		msg_add(&req, "all", "1");
	if (sup_call(SUP_AUTOSTART, &req, &rep)) {
		msg_release(&req);
		msg_release(&rep);
		return EXIT_FAIL;
	}
	{
		struct buf b = BUF_INIT(0);
		size_t n = 0;

		for (k = 0; k < rep.n; k++)
			if (!strcmp(rep.keys[k], "cancelled"))
				buf_addf(&b, "%s%s", n++ ? " " : "", rep.vals[k]);
		if (n)
			printf("cancelled %zu job(s): %s\n", n, b.p);
		else if (all)
			printf("no job to cancel\n");
		buf_release(&b);
	}
	for (k = 0; k < rep.n; k++)
		if (!strcmp(rep.keys[k], "buried"))
			printf("key %s: no job had arrived; one that arrives will not run\n",
			       rep.vals[k]);
	for (k = 0; k < rep.n; k++) {
		if (!strcmp(rep.keys[k], "finished")) {
			printf("job %s has already ended\n", rep.vals[k]);
		} else if (!strcmp(rep.keys[k], "missing")) {
			error("job %s not found", rep.vals[k]);
			rc = EXIT_JOB_NOT_FOUND;
		}
	}
	msg_release(&req);
	msg_release(&rep);
	return rc;
}
