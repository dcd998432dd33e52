/*
 * `skiff jobs ...`: managed jobs. The commands parse flags, call the managed-jobs API
 * (supervisor/jobs/jobs.h: submit, cancel) and render the tables; the controller
 * (supervisor/jobs/controller.c) does the work.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "bootstrap/infra/infra.h"
#include "supervisor/jobs/jobs.h"
#include "lib/config.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/launcher.h"
#include "lib/banned.h"

/* --num-jobs: copies one command submits (each is a row and a cluster job or a cluster). */
#define JOBS_LAUNCH_MAX_COPIES 10000

const char cmd_jobs_usage[] =
        "usage: skiff jobs launch [-n NAME] [-d] [--infra INFRA] [--job-recovery STRATEGY]\n"
        "                         [--priority P] [task flags] YAML|COMMAND...\n"
        "       skiff jobs cancel ID... | -n NAME | -a|--all\n"
        "       skiff jobs queue [--json] [-s] [-l|--limit N] [-r|--refresh]\n"
        "       skiff jobs logs [ID [TASK] | -n NAME] [-f|--follow|--no-follow]\n"
        "                       [--controller] [-s|--sync-down]\n"
        "\n"
        "Managed jobs: a controller (started on demand, on this machine) launches each job\n"
        "on a cluster of its own (on local infra: the shared local cluster skiff-jobs),\n"
        "watches it, recovers it when its node fails, and releases the cluster when it\n"
        "ends. A multi-document YAML is a pipeline: its tasks run one after the other. One\n"
        "whose header says 'execution: parallel' is a job group: its tasks run at once, each\n"
        "a managed job of its own that recovers on its own, under one job id (the group's).\n"
        "\n"
        "  -n, --name NAME          the job's name\n"
        "  -d, --detach-run, --async\n"
        "                           return once submitted (default: follow the logs)\n"
        "  --infra INFRA            local (default) or ssh/POOL\n"
        "  --job-recovery S         EAGER_NEXT_REGION (default), FAILOVER or NONE\n"
        "  --priority P             -1000..1000; higher launches first (default: the task's)\n"
        "  --num-jobs N             N copies of the job, each with SKYPILOT_JOB_RANK (0..N-1)\n"
        "                           and SKYPILOT_NUM_JOBS (returns once they are submitted)\n"
        "  --config FILE|KEY=VALUE  a config layer (docs/config.md); the config in effect at\n"
        "                           submit travels with the job\n"
        "\n"
        "queue lists SkyPilot's ID, TASK, NAME, REQUESTED, SUBMITTED, TOT. DURATION, JOB\n"
        "DURATION (the time it ran, not the waits), #RECOVERIES, STATUS and POOL, then\n"
        "DETAILS (what the job is doing or waiting for, or why it failed); a pipeline is a\n"
        "row, then a row per task. -l N the newest N; --json gives id, name, status,\n"
        "schedule_state, recoveries, cluster, submitted_at, started_at, ended_at,\n"
        "exit_codes (a list), details, resources, requested, job_duration, pool,\n"
        "task_rows, ... per job. cancel is one request for any number of jobs. logs (the\n"
        "newest job, or the newest named NAME, without ID) follows the job's task logs\n"
        "across recoveries, with SkyPilot's 'Job started. Streaming logs...' and 'Job\n"
        "finished (status: S).' lines; --controller shows its launch log and transitions;\n"
        "--sync-down copies every rank's logs to ~/sky_logs. A job group is a row, then a\n"
        "row per task (TASK its index); --json gives each task as a job with group_id,\n"
        "group_name and primary. cancel of the group's id cancels every task, of another\n"
        "task's id only that task; logs ID TASK shows one task's (TASK a name or an index),\n"
        "logs ID every task's in turn. A task that asks for more\n"
        "than a node has fails its precheck (FAILED_PRECHECKS).\n"
        "\n"
        "Exit status of logs (and of launch without -d): 0 succeeded, 100 failed,\n"
        "101 not finished, 102 not found, 103 cancelled.\n";

/* ---- shared helpers ------------------------------------------------------------------- */

static int open_db(struct st_db **db)
{
	return st_launcher_open(0, db) ? -1 : 0;
}

/* ---- jobs launch ---------------------------------------------------------------------- */

static int jobs_launch(int argc, char **argv)
{
	struct task_overrides ov = TASK_OVERRIDES_INIT;
	struct task_list tl = TASK_LIST_INIT;
	struct yerrors errs = YERRORS_INIT;
	struct buf entry = BUF_INIT(0), spec = BUF_INIT(64 << 20);
	struct jobs_submit_req req = {0};
	const char *infra = NULL, *recovery = NULL;
	struct st_db *db = NULL;
	char cwd[PATH_MAX];
	int i, r, detach = 0, rc = EXIT_FAIL, have_prio = 0, strategy, max_restarts;
	long prio = 0, num_jobs = 1;
	int64_t id = 0;
	char *ctl = NULL;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "-d") || !strcmp(a, "--detach-run") || !strcmp(a, "--async")) {
			/* --async: no API server here; the nearest is to return once submitted. */
			detach = 1;
		} else if (!strcmp(a, "-y") || !strcmp(a, "--yes")) {
			continue;
		} else if (!strcmp(a, "--infra") || starts_with(a, "--infra=")) {
			if (a[7] == '=')
				infra = a + 8;
			else if (++i < argc)
				infra = argv[i];
			if (!infra || !*infra)
				return usage_error("jobs launch", "--infra needs a value");
		} else if (!strcmp(a, "--job-recovery")) {
			if (++i >= argc)
				return usage_error("jobs launch",
				                   "--job-recovery needs a strategy");
			recovery = argv[i];
			if (jobs_parse_strategy(recovery, &strategy, &max_restarts))
				return usage_error("jobs launch",
				                   "--job-recovery: '%s' is not EAGER_NEXT_REGION, "
				                   "FAILOVER or NONE",
				                   recovery);
		} else if (!strcmp(a, "--num-jobs")) {
			if (++i >= argc ||
			    parse_long(argv[i], 1, JOBS_LAUNCH_MAX_COPIES, &num_jobs))
				return usage_error("jobs launch", "--num-jobs needs 1..%d",
				                   JOBS_LAUNCH_MAX_COPIES);
		} else if (!strcmp(a, "--priority")) {
			if (++i >= argc || parse_long(argv[i], -1000, 1000, &prio))
				return usage_error("jobs launch", "--priority needs -1000..1000");
			have_prio = 1;
		} else {
			r = task_overrides_arg(&ov, argc, argv, &i);
			if (r < 0)
				return EXIT_USAGE;
			if (!r)
				return usage_error("jobs launch", "unknown option '%s'", a);
			i--;
		}
	}
	if (i >= argc)
		return usage_error("jobs launch", "expected a task YAML or a command");
	/* Said here, once, not after launch attempts that could never succeed. */
	if (infra && (r = cmd_infra_arg(infra)))
		return r;
	if (!getcwd(cwd, sizeof(cwd)))
		return error_errno("cannot get the working directory"), EXIT_FAIL;
	if (i == argc - 1 && task_entrypoint_is_yaml(argv[i])) {
		buf_adds(&entry, argv[i]);
		if ((r = buf_read_file(&spec, argv[i])) < 0) {
			error("cannot read '%s': %s", argv[i], buf_read_strerror(r));
			goto out;
		}
		r = task_parse_buf(&tl, argv[i], spec.p, spec.len, &errs);
	} else {
		for (; i < argc; i++)
			buf_addf(&entry, "%s%s", entry.len ? " " : "", argv[i]);
		task_from_command(&tl, entry.p);
		r = 0;
	}
	if (r || task_list_apply_overrides(&tl, &ov, &errs) ||
	    task_list_check_required(&tl, &errs, 0) || task_list_check_paths(&tl, &errs)) {
		yerr_print(&errs, stderr);
		rc = EXIT_INVALID;
		goto out;
	}
	yerr_print(&errs, stderr);
	if (tl.parallel && num_jobs > 1) {
		rc = usage_error("jobs launch",
		                 "--num-jobs: '%s' is job group '%s', which runs as one managed "
		                 "job; launch it once",
		                 entry.p, tl.name);
		goto out;
	}
	/* The config in effect now travels with the job (frozen into its overrides). */
	if (config_resolve(&ov, &tl, CONFIG_ALL_TASKS, 1, NULL)) {
		rc = EXIT_INVALID;
		goto out;
	}
	req.tl = &tl;
	req.ov = &ov;
	req.entry = entry.p;
	req.spec = spec.len ? spec.p : NULL;
	req.cwd = cwd;
	req.infra = infra;
	req.recovery = recovery;
	req.priority = (int)prio;
	req.have_priority = have_prio;
	if (jobs_remote_infra(&ctl)) {
		rc = EXIT_INVALID;
		goto out;
	}
	if (ctl) {
		rc = jobs_remote_submit(ctl, &req, &tl, &ov, num_jobs, detach);
		goto out;
	}
	if (open_db(&db))
		goto out;
	r = jobs_submit_n(db, &req, &tl, &ov, num_jobs, NULL, NULL, &id);
	if (r) {
		rc = r == -EINVAL ? EXIT_INVALID : EXIT_FAIL;
		goto out;
	}
	if (num_jobs > 1 && !detach)
		fprintf(stderr,
		        "(%ld jobs: not following their logs; 'skiff jobs logs ID' "
		        "follows one)\n",
		        num_jobs);
	if (detach || num_jobs > 1) {
		rc = EXIT_OK;
		goto out;
	}
	st_close(db);
	db = NULL;
	rc = jobs_logs_task(id, NULL, 1);
out:
	st_close(db);
	buf_release(&entry);
	buf_release(&spec);
	yerr_release(&errs);
	task_list_release(&tl);
	task_overrides_release(&ov);
	free(ctl);
	return rc;
}

/* ---- jobs queue ----------------------------------------------------------------------- */

struct queue_ctx {
	struct buf *out;
	struct json js; /* --json: the list, on out */
	int as_json;
	int64_t skip_rows; /* --limit: the oldest rows left out */
	int counts[MJS_N];
	int max_launching, max_running;
	double now;
	struct buf details;           /* the row's, reused */
	const struct mj_task *tasks;  /* every job's task rows, by job then task */
	size_t ntasks, next;          /* next: the first one of a job not listed yet */
	const struct jobs_snap *snap; /* a job group's members are its members */
	int64_t last_group; /* the group listed last: its other members are not rows again */
};

static int queue_running(const struct queue_ctx *q)
{
	return q->counts[MJS_LAUNCHING] + q->counts[MJS_ALIVE] + q->counts[MJS_ALIVE_WAITING] +
	       q->counts[MJS_ALIVE_BACKOFF];
}

/* Seconds as a number with millisecond precision, or null (negative). */
static void jsecs(struct json *js, double v)
{
	if (v < 0)
		json_null(js);
	else /* json_time()'s null is for "no time": 0 s is 0.000 */
		json_time(js, v > 0 ? v : 0.0001);
}

/* A job's tasks, t[0..n), as `task_rows`. */
static void tasks_json(struct json *js, const struct mjob *j, const struct mj_task *t, size_t n,
                       double now)
{
	size_t k;

	json_arr_begin(js);
	for (k = 0; k < n; k++) {
		json_obj_begin(js);
		json_key(js, "task");
		json_int(js, t[k].task);
		json_key(js, "name");
		json_str(js, t[k].name);
		json_key(js, "requested");
		json_str(js, t[k].requested);
		json_key(js, "status");
		json_str(js, mj_status_name(mj_task_status(j, t[k].task)));
		json_key(js, "submitted_at");
		json_time(js, t[k].submitted_at);
		json_key(js, "started_at");
		json_time(js, t[k].started_at);
		json_key(js, "ended_at");
		json_time(js, t[k].ended_at);
		json_key(js, "job_duration");
		jsecs(js, mj_task_run_s(&t[k], now));
		json_key(js, "recoveries");
		json_int(js, t[k].recoveries);
		json_obj_end(js);
	}
	json_arr_end(js);
}

/* The seconds a job ran: its tasks' (-1: none ran, or its tasks were not kept). */
static double job_run_s(const struct mj_task *t, size_t n, double now)
{
	double sum = -1;
	size_t k;

	for (k = 0; k < n; k++) {
		double s = mj_task_run_s(&t[k], now);

		if (s >= 0)
			sum = (sum < 0 ? 0 : sum) + s;
	}
	return sum;
}

/* SkyPilot's POOL: here, the shared local cluster a job runs on; NULL none. */
static const char *job_pool(const struct mjob *j)
{
	return j->pool && *j->cluster ? j->cluster : NULL;
}

/* One job as a JSON object (compact: 10,000 rows must list in well under 200 ms). */
static void job_json(struct json *js, const struct mjob *j, const char *details,
                     const struct mj_task *t, size_t nt, double now)
{
	json_obj_begin(js);
	json_key(js, "id");
	json_int(js, j->id);
	json_key(js, "name");
	json_str(js, j->name);
	json_key(js, "status");
	json_str(js, mj_status_name(j->status));
	json_key(js, "schedule_state");
	json_str(js, mj_sched_name(j->sched));
	json_key(js, "priority");
	json_int(js, j->priority);
	json_key(js, "recoveries");
	json_int(js, j->recoveries);
	json_key(js, "restarts_on_errors");
	json_int(js, j->restarts);
	json_key(js, "task");
	json_int(js, j->task_index);
	json_key(js, "tasks");
	json_int(js, j->ntasks);
	json_key(js, "cluster");
	json_str(js, *j->cluster ? j->cluster : NULL);
	json_key(js, "cluster_job");
	if (j->cluster_job)
		json_int(js, j->cluster_job);
	else
		json_null(js);
	json_key(js, "task_id");
	json_str(js, j->task_id);
	json_key(js, "submitted_at");
	json_time(js, j->submitted_at);
	json_key(js, "started_at");
	json_time(js, j->started_at);
	json_key(js, "ended_at");
	json_time(js, j->ended_at);
	json_key(js, "exit_codes");
	json_codes(js, j->exit_codes);
	json_key(js, "details");
	json_str(js, details);
	json_key(js, "resources");
	json_str(js, j->resources);
	json_key(js, "requested");
	json_str(js, nt && *t[0].requested ? t[0].requested : j->resources);
	json_key(js, "job_duration");
	jsecs(js, job_run_s(t, nt, now));
	json_key(js, "pool");
	json_str(js, job_pool(j));
	json_key(js, "task_rows");
	tasks_json(js, j, t, nt, now);
	/* A job group's member: the group (its first member's id), its name, its role. */
	json_key(js, "group_id");
	if (j->group_id)
		json_int(js, j->group_id);
	else
		json_null(js);
	json_key(js, "group_name");
	json_str(js, j->group_id ? j->group_name : NULL);
	json_key(js, "group_task");
	if (j->group_id)
		json_int(js, j->group_task);
	else
		json_null(js);
	json_key(js, "primary");
	if (j->group_id)
		json_bool(js, j->group_primary);
	else
		json_null(js);
	json_obj_end(js);
}

/* SkyPilot's columns, then DETAILS; `id` holds extra_bytes more bytes than it shows. */
static void table_row(struct buf *b, const char *id, int extra_bytes, const char *task,
                      const char *name, const char *requested, const char *submitted,
                      const char *total, const char *ran, int recoveries, const char *status,
                      const char *pool, const char *details)
{
	/* "%-6s %-4s %-20.20s %-16s %-10s %-13s %-12s %-11d %-18s %-10s %s\n", without printf. */
	buf_add_col(b, id, 6 + (size_t)extra_bytes, SIZE_MAX);
	buf_addch(b, ' ');
	buf_add_col(b, task, 4, SIZE_MAX);
	buf_addch(b, ' ');
	buf_add_col(b, *name ? name : "-", 20, 20);
	buf_addch(b, ' ');
	buf_add_col(b, *requested ? requested : "-", 16, SIZE_MAX);
	buf_addch(b, ' ');
	buf_add_col(b, submitted, 10, SIZE_MAX);
	buf_addch(b, ' ');
	buf_add_col(b, total, 13, SIZE_MAX);
	buf_addch(b, ' ');
	buf_add_col(b, ran, 12, SIZE_MAX);
	buf_addch(b, ' ');
	buf_add_int_col(b, recoveries, 11);
	buf_addch(b, ' ');
	buf_add_col(b, status, 18, SIZE_MAX);
	buf_addch(b, ' ');
	buf_add_col(b, pool, 10, SIZE_MAX);
	buf_addch(b, ' ');
	buf_add_col(b, details, 0, SIZE_MAX);
	buf_addch(b, '\n');
}

/* Seconds as a duration ("1m 5s"), "-" when negative. */
static void fmt_secs(double s, char *out, size_t size)
{
	/* cmd_fmt_span() takes times: any start after 0 does. */
	cmd_fmt_span(1, s < 0 ? 0 : 1 + s, out, size);
}

/*
 * A pipeline's task rows, as SkyPilot's (sky/jobs/utils.py: format_job_table()): ID a
 * space and U+21B3 (a down-right arrow), TASK its index, its own name, REQUESTED, times
 * and STATUS.
 */
static void task_rows(struct queue_ctx *q, const struct mjob *j, const struct mj_task *t, size_t n)
{
	size_t k;

	for (k = 0; k < n; k++) {
		char idx[16], sub[32], total[32], ran[32];
		int current = t[k].task == j->task_index;

		xsnprintf(idx, sizeof(idx), "%d", t[k].task);
		cmd_fmt_ago(t[k].submitted_at, q->now, sub, sizeof(sub));
		cmd_fmt_span(t[k].submitted_at, t[k].ended_at > 0 ? t[k].ended_at : q->now, total,
		             sizeof(total));
		fmt_secs(mj_task_run_s(&t[k], q->now), ran, sizeof(ran));
		table_row(q->out, " \xe2\x86\xb3", 2, idx, t[k].name, t[k].requested, sub, total,
		          ran, t[k].recoveries, mj_status_name(mj_task_status(j, t[k].task)),
		          current && job_pool(j) ? job_pool(j) : "-", "-");
	}
}

/* Job id's task row (its first), at or after q->next; NULL when it has none. */
static const struct mj_task *task_row_of(const struct queue_ctx *q, int64_t id)
{
	size_t k;

	for (k = q->next; k < q->ntasks && q->tasks[k].job_id <= id; k++)
		if (q->tasks[k].job_id == id)
			return &q->tasks[k];
	return NULL;
}

/*
 * A job group: its row (its first member's id, the group's name, the group's status, the
 * longest run, the recoveries of all), then a row per member as a pipeline's task rows,
 * TASK its index in the file, NAME its task's, DETAILS its own.
 */
static void group_rows(struct queue_ctx *q, int64_t gid)
{
	char id[32], sub[32], total[32], ran[32], idx[16];
	const struct mjob *m = NULL;
	int *status = NULL, *primary = NULL, recoveries = 0, nprimary = 0;
	double ended = 0, longest = -1;
	size_t n = 0, k;

	/* Its members are consecutive in the snapshot's, by id. */
	for (k = 0; k < q->snap->nmembers && !m; k++)
		if (q->snap->members[k].group_id == gid)
			m = &q->snap->members[k];
	while (m && m + n < q->snap->members + q->snap->nmembers && m[n].group_id == gid)
		n++;
	if (!n)
		goto out;
	status = xcalloc(n, sizeof(*status));
	primary = xcalloc(n, sizeof(*primary));
	for (k = 0; k < n; k++) {
		const struct mj_task *t = task_row_of(q, m[k].id);
		double s = t ? mj_task_run_s(t, q->now) : -1;

		status[k] = m[k].status;
		primary[k] = m[k].group_primary;
		nprimary += primary[k];
		recoveries += m[k].recoveries;
		if (s > longest)
			longest = s;
		if (!mj_status_terminal(m[k].status))
			ended = -1;
		else if (ended >= 0 && m[k].ended_at > ended)
			ended = m[k].ended_at;
	}
	xsnprintf(id, sizeof(id), "%lld", (long long)gid);
	cmd_fmt_ago(m[0].submitted_at, q->now, sub, sizeof(sub));
	cmd_fmt_span(m[0].submitted_at, ended > 0 ? ended : q->now, total, sizeof(total));
	fmt_secs(longest, ran, sizeof(ran));
	buf_reset(&q->details);
	buf_addf(&q->details, "job group: %zu tasks at once, %d primary", n, nprimary);
	table_row(q->out, id, 0, "", m[0].group_name, "-", sub, total, ran, recoveries,
	          mj_status_name(mj_group_status(status, primary, n)), "-", q->details.p);
	for (k = 0; k < n; k++) {
		const struct mj_task *t = task_row_of(q, m[k].id);

		buf_reset(&q->details);
		mj_details(&m[k], q->counts[MJS_LAUNCHING], q->max_launching, queue_running(q),
		           q->max_running, q->now, &q->details);
		buf_addf(&q->details, "%s(job %lld%s)", q->details.len ? " " : "",
		         (long long)m[k].id, m[k].group_primary ? "" : ", auxiliary");
		xsnprintf(idx, sizeof(idx), "%d", m[k].group_task);
		cmd_fmt_ago(m[k].submitted_at, q->now, sub, sizeof(sub));
		cmd_fmt_span(m[k].submitted_at, m[k].ended_at > 0 ? m[k].ended_at : q->now, total,
		             sizeof(total));
		fmt_secs(t ? mj_task_run_s(t, q->now) : -1, ran, sizeof(ran));
		table_row(q->out, " \xe2\x86\xb3", 2, idx, m[k].task_name,
		          t ? t->requested : m[k].resources, sub, total, ran, m[k].recoveries,
		          mj_status_name(m[k].status), job_pool(&m[k]) ? job_pool(&m[k]) : "-",
		          q->details.p);
	}
out:
	free(status);
	free(primary);
}

static int queue_row(const struct mjob *j, void *arg)
{
	struct queue_ctx *q = arg;
	const struct mj_task *t;
	const char *details;
	char id[32], sub[32], total[32], ran[32], status[48];
	size_t nt = 0;

	if (q->skip_rows > 0) {
		q->skip_rows--;
		return 0;
	}
	/* Its task rows: the listing and the tasks are both in id order. */
	while (q->next < q->ntasks && q->tasks[q->next].job_id < j->id)
		q->next++;
	t = q->tasks + q->next;
	while (q->next + nt < q->ntasks && t[nt].job_id == j->id)
		nt++;
	buf_reset(&q->details);
	mj_details(j, q->counts[MJS_LAUNCHING], q->max_launching, queue_running(q), q->max_running,
	           q->now, &q->details);
	details = q->details.p;
	if (q->as_json) {
		job_json(&q->js, j, details, t, nt, q->now);
		return 0;
	}
	if (j->group_id) {
		/* Its members are consecutive: the first one listed shows them all. */
		if (j->group_id != q->last_group)
			group_rows(q, j->group_id);
		q->last_group = j->group_id;
		return 0;
	}
	xsnprintf(id, sizeof(id), "%lld", (long long)j->id);
	cmd_fmt_ago(j->submitted_at, q->now, sub, sizeof(sub));
	cmd_fmt_span(j->submitted_at, j->ended_at > 0 ? j->ended_at : q->now, total, sizeof(total));
	fmt_secs(job_run_s(t, nt, q->now), ran, sizeof(ran));
	if (j->ntasks <= 1) {
		table_row(q->out, id, 0, "-", j->name,
		          nt && *t[0].requested ? t[0].requested : j->resources, sub, total, ran,
		          j->recoveries, mj_status_name(j->status), job_pool(j) ? job_pool(j) : "-",
		          details);
		return 0;
	}
	/* A pipeline: its row (TASK empty, REQUESTED "-"), then one per task, as SkyPilot's. */
	xsnprintf(status, sizeof(status), "%s", mj_status_name(j->status));
	if (!mj_status_terminal(j->status))
		xsnprintf(status, sizeof(status), "%s (task: %d)", mj_status_name(j->status),
		          j->task_index);
	table_row(q->out, id, 0, "", j->name, "-", sub, total, ran, j->recoveries, status,
	          job_pool(j) ? job_pool(j) : "-", details);
	task_rows(q, j, t, nt);
	return 0;
}

static int jobs_queue(int argc, char **argv)
{
	struct queue_ctx q = {0};
	struct jobs_snap snap = {0};
	struct buf out = BUF_INIT(0);
	struct st_db *db = NULL;
	int i, as_json = 0, skip = 0, r;
	long limit = 0;
	char *ctl = NULL;
	size_t k;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json")) {
			as_json = 1;
		} else if (!strcmp(a, "-s") || !strcmp(a, "--skip-finished")) {
			skip = 1;
		} else if (!strcmp(a, "-l") || !strcmp(a, "--limit") ||
		           !strncmp(a, "--limit=", 8)) {
			const char *n = a[7] == '=' ? a + 8 : i + 1 < argc ? argv[++i] : "";

			if (parse_long(n, 1, LONG_MAX, &limit))
				return usage_error("jobs queue",
				                   "--limit needs a number of jobs, "
				                   "not '%s'",
				                   n);
		} else if (!strcmp(a, "-a") || !strcmp(a, "-u") || !strcmp(a, "--all-users") ||
		           !strcmp(a, "-v") || !strcmp(a, "--verbose") || !strcmp(a, "-r") ||
		           !strcmp(a, "--refresh")) {
			/* One user; the table is always what the controller knows now. */
			continue;
		} else {
			return usage_error("jobs queue", "unknown option '%s'", a);
		}
	}
	if (jobs_remote_infra(&ctl))
		return EXIT_INVALID;
	if (ctl) {
		r = jobs_remote_queue(ctl, skip, &snap);
		free(ctl);
		if (r)
			return r;
	} else {
		r = st_launcher_open(ST_READONLY, &db);
		if (r == -ENOENT || (!r && st_version(db) < 2)) {
			st_close(db);
			if (as_json)
				return print_out("[]\n", 3) ? EXIT_FAIL : EXIT_OK;
			printf("No managed jobs.\n");
			return EXIT_OK;
		}
		if (r)
			return EXIT_FAIL;
		jobs_ensure_controller(db);
		r = jobs_snap_load(db, skip, &snap);
		st_close(db);
		if (r)
			return EXIT_FAIL;
	}
	q.out = &out;
	buf_init(&q.details, 0);
	q.snap = &snap;
	q.now = snap.now;
	memcpy(q.counts, snap.counts, sizeof(q.counts));
	q.max_launching = snap.max_launching;
	q.max_running = snap.max_running;
	q.tasks = snap.tasks;
	q.ntasks = snap.ntasks;
	q.skip_rows = limit && (int64_t)snap.njobs > limit ? (int64_t)snap.njobs - limit : 0;
	/* About 400 bytes a row: grown once, not copied over and over. */
	buf_grow(&out, (snap.njobs + 16) * (as_json ? 400 : 160));
	if (as_json) {
		q.as_json = 1;
		json_init(&q.js, &out, 0);
		json_arr_begin(&q.js);
	} else {
		/* SkyPilot's `sky jobs queue` columns (sky/jobs/utils.py), then DETAILS. */
		buf_addf(&out, "%-6s %-4s %-20s %-16s %-10s %-13s %-12s %-11s %-18s %-10s %s\n",
		         "ID", "TASK", "NAME", "REQUESTED", "SUBMITTED", "TOT. DURATION",
		         "JOB DURATION", "#RECOVERIES", "STATUS", "POOL", "DETAILS");
	}
	for (k = 0, r = 0; k < snap.njobs; k++)
		queue_row(&snap.jobs[k], &q);
	if (as_json) {
		json_arr_end(&q.js);
		if (json_finish(&q.js))
			r = -ENOBUFS;
		buf_addch(&out, '\n');
	}
	if (!r && print_out(out.p, out.len))
		r = -1;
	jobs_snap_free(&snap);
	buf_release(&q.details);
	buf_release(&out);
	return r ? EXIT_FAIL : EXIT_OK;
}

/* ---- jobs cancel ---------------------------------------------------------------------- */

static int cmd_jobs_cancel(int argc, char **argv)
{
	int64_t *ids = xcalloc((size_t)argc, sizeof(*ids));
	const char *name = NULL;
	struct st_db *db = NULL;
	char *ctl = NULL;
	size_t n = 0;
	int i, all = 0, found, done, ended, rc = EXIT_FAIL;

	for (i = 1; i < argc; i++) {
		long v;

		if (!strcmp(argv[i], "-a") || !strcmp(argv[i], "--all")) {
			all = 1;
		} else if (!strcmp(argv[i], "-y") || !strcmp(argv[i], "--yes")) {
			continue;
		} else if (!strcmp(argv[i], "-n") || !strcmp(argv[i], "--name")) {
			if (++i >= argc) {
				rc = usage_error("jobs cancel", "-n needs a job name");
				goto out;
			}
			name = argv[i];
		} else if (argv[i][0] == '-' || parse_long(argv[i], 1, LONG_MAX, &v)) {
			rc = usage_error("jobs cancel", "'%s' is not a job id", argv[i]);
			goto out;
		} else {
			ids[n++] = v;
		}
	}
	if (!!n + !!name + all != 1) {
		rc = usage_error("jobs cancel", "expected one of: job ids, -n NAME, -a");
		goto out;
	}
	if (jobs_remote_infra(&ctl)) {
		rc = EXIT_INVALID;
		goto out;
	}
	if (ctl) {
		rc = jobs_remote_cancel(ctl, ids, n, name, all, &found, &done, &ended);
		if (rc)
			goto out;
		rc = EXIT_FAIL;
	} else if (open_db(&db) || jobs_cancel(db, ids, n, name, all, &found, &done, &ended)) {
		goto out;
	}
	if (!found && !ended && (n || name)) {
		error("no managed job %s", name ? name : "with those ids");
		rc = EXIT_JOB_NOT_FOUND;
		goto out;
	}
	printf("%d job(s) cancelled, %d being cancelled (cleaning up their clusters)", done,
	       found - done);
	if (ended)
		printf("; %d had ended already", ended);
	printf("\n");
	rc = (size_t)(found + ended) < n ? EXIT_JOB_NOT_FOUND : EXIT_OK;
out:
	st_close(db);
	free(ids);
	free(ctl);
	return rc;
}

/* ---- jobs logs ------------------------------------------------------------------------ */

static int jobs_logs(int argc, char **argv)
{
	struct jobs_logs_req req = {.follow = 1};
	char *ctl = NULL;
	int64_t id;
	long v = 0;
	int i, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--follow") || !strcmp(argv[i], "-f"))
			req.follow = 1;
		else if (!strcmp(argv[i], "--no-follow"))
			req.follow = 0;
		else if (!strcmp(argv[i], "--controller"))
			req.controller = 1;
		else if (!strcmp(argv[i], "-s") || !strcmp(argv[i], "--sync-down"))
			req.sync_down = 1;
		else if ((!strcmp(argv[i], "-n") || !strcmp(argv[i], "--name")) && i + 1 < argc)
			req.name = argv[++i];
		else if (req.id && !req.task && argv[i][0] != '-')
			req.task = argv[i]; /* a job group's task: its name or index */
		else if (argv[i][0] == '-' || req.id || parse_long(argv[i], 1, LONG_MAX, &v))
			return usage_error("jobs logs", "unexpected '%s'", argv[i]);
		else
			req.id = v;
	}
	if (req.id && req.name)
		return usage_error("jobs logs", "a job id or -n NAME, not both");
	if (req.task && (req.controller || req.sync_down))
		return usage_error("jobs logs", "a TASK is for a job group's task logs, not with "
		                                "--controller or --sync-down");
	if (jobs_remote_infra(&ctl))
		return EXIT_INVALID;
	if (ctl) {
		/* A controller on a cluster of its own: it resolves the job itself. */
		rc = jobs_remote_logs(ctl, &req);
		free(ctl);
		return rc;
	}
	rc = jobs_logs_resolve(&req, &id);
	return rc ? rc : jobs_logs_run(&req, id, 0);
}

/* ---- the group ------------------------------------------------------------------------ */

static const struct cmd jobs_cmds[] = {
        {"cancel", cmd_jobs_cancel, 0, "cancel managed jobs", cmd_jobs_usage},
        {"launch", jobs_launch, 0, "launch a managed job", cmd_jobs_usage},
        {"logs", jobs_logs, 0, "a managed job's logs", cmd_jobs_usage},
        {"queue", jobs_queue, 0, "list managed jobs", cmd_jobs_usage},
};

int cmd_jobs(int argc, char **argv)
{
	if (argc < 2) {
		fputs(cmd_jobs_usage, stderr);
		return usage_error("jobs", "expected a command");
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		fputs(cmd_jobs_usage, stdout);
		return EXIT_OK;
	}
	return cmd_dispatch("jobs", jobs_cmds, ARRAY_SIZE(jobs_cmds), argc - 1, argv + 1);
}

/* `skiff __jobs-remote` on a controller's host: supervisor/jobs/serve.c answers. */
int cmd___jobs_remote(int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		return usage_error("__jobs-remote", "no arguments: the request comes on stdin");
	return jobs_host_serve();
}
