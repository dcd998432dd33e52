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
        "       skiff jobs logs [ID | -n NAME] [--follow|--no-follow] [--controller]\n"
        "                       [-s|--sync-down]\n"
        "\n"
        "Managed jobs: a controller (started on demand, on this machine) launches each job\n"
        "on a cluster of its own (on local infra: the shared local cluster skiff-jobs),\n"
        "watches it, recovers it when its node fails, and releases the cluster when it\n"
        "ends. A multi-document YAML is a pipeline: its tasks run one after the other.\n"
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
        "queue lists ID, NAME, RESOURCES, SUBMITTED, DURATION, #RECOVERIES, STATUS and\n"
        "DETAILS (what the job is doing or waiting for); -l N the newest N; --json gives\n"
        "id, name, status, schedule_state, recoveries, cluster, submitted_at, started_at,\n"
        "ended_at, exit_codes (a list), details, resources, ... per job. cancel is one request for any number\n"
        "of jobs. logs (the newest job, or the newest named NAME, without ID) follows the\n"
        "job's task logs across recoveries; --controller shows its launch log and\n"
        "transitions; --sync-down copies every rank's logs to ~/sky_logs. A task that\n"
        "asks for more than a node has fails its precheck (FAILED_PRECHECKS).\n"
        "\n"
        "Exit status of logs (and of launch without -d): 0 succeeded, 100 failed,\n"
        "101 not finished, 102 not found, 103 cancelled.\n";

/* ---- shared helpers ------------------------------------------------------------------- */

static int open_db(struct st_db **db)
{
	return st_launcher_open(0, db) ? -1 : 0;
}

/* How long `__jobs-remote` waits for a launcher's request once started. */
#define JOBS_REMOTE_RECV_MS (60 * 1000)

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
		} else if (!strcmp(a, "--infra")) {
			if (++i >= argc)
				return usage_error("jobs launch", "--infra needs a value");
			infra = argv[i];
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
	if (infra) {
		struct infra inf;

		/* Said here, once, not after launch attempts that could never succeed. */
		if (infra_parse(infra, &inf))
			return EXIT_USAGE;
		infra_release(&inf);
	}
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
	r = jobs_submit_n(db, &req, &tl, &ov, num_jobs, &id);
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
	rc = jobs_follow_logs(id, 1);
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
	int as_json, rows;
	int64_t skip_rows; /* --limit: the oldest rows left out */
	int counts[MJS_N];
	int max_launching, max_running;
	double now;
	struct buf details; /* the row's, reused */
};

static int queue_running(const struct queue_ctx *q)
{
	return q->counts[MJS_LAUNCHING] + q->counts[MJS_ALIVE] + q->counts[MJS_ALIVE_WAITING] +
	       q->counts[MJS_ALIVE_BACKOFF];
}

/*
 * The listing writes its JSON straight into the buffer, row by row; strings and numbers
 * are lib/json's (json_quote, json_put_int).
 */
static void jstr(struct buf *b, const char *s)
{
	json_quote(b, s, strlen(s));
}

/* Epoch seconds with millisecond precision, or null. */
static void jtime(struct buf *b, double v)
{
	long long ms;
	char frac[4];

	if (v <= 0) {
		buf_add(b, "null", 4);
		return;
	}
	ms = (long long)(v * 1000 + 0.5);
	json_put_int(b, ms / 1000);
	frac[0] = '.';
	frac[1] = (char)('0' + (ms / 100) % 10);
	frac[2] = (char)('0' + (ms / 10) % 10);
	frac[3] = (char)('0' + ms % 10);
	buf_add(b, frac, 4);
}

/* "0,3,?" as [0,3,null]: a list, as in `queue --json`. */
static void codes_json(struct buf *b, const char *codes)
{
	const char *p = codes;

	buf_addch(b, '[');
	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);

		if (p != codes)
			buf_addch(b, ',');
		if (end == p)
			buf_add(b, "null", 4);
		else
			json_put_int(b, v);
		p = end + strcspn(end, ",");
		if (*p)
			p++;
	}
	buf_addch(b, ']');
}

/* One job as a JSON object (written directly: 10,000 rows must list in well under 200 ms). */
static void job_json(struct buf *b, const struct mjob *j, const char *details)
{
	buf_adds(b, "{\"id\":");
	json_put_int(b, j->id);
	buf_adds(b, ",\"name\":");
	jstr(b, j->name);
	buf_adds(b, ",\"status\":\"");
	buf_adds(b, mj_status_name(j->status));
	buf_adds(b, "\",\"schedule_state\":\"");
	buf_adds(b, mj_sched_name(j->sched));
	buf_adds(b, "\",\"priority\":");
	json_put_int(b, j->priority);
	buf_adds(b, ",\"recoveries\":");
	json_put_int(b, j->recoveries);
	buf_adds(b, ",\"restarts_on_errors\":");
	json_put_int(b, j->restarts);
	buf_adds(b, ",\"task\":");
	json_put_int(b, j->task_index);
	buf_adds(b, ",\"tasks\":");
	json_put_int(b, j->ntasks);
	buf_adds(b, ",\"cluster\":");
	if (*j->cluster)
		jstr(b, j->cluster);
	else
		buf_add(b, "null", 4);
	buf_adds(b, ",\"cluster_job\":");
	if (j->cluster_job)
		json_put_int(b, j->cluster_job);
	else
		buf_add(b, "null", 4);
	buf_adds(b, ",\"task_id\":");
	jstr(b, j->task_id);
	buf_adds(b, ",\"submitted_at\":");
	jtime(b, j->submitted_at);
	buf_adds(b, ",\"started_at\":");
	jtime(b, j->started_at);
	buf_adds(b, ",\"ended_at\":");
	jtime(b, j->ended_at);
	buf_adds(b, ",\"exit_codes\":");
	codes_json(b, j->exit_codes);
	buf_adds(b, ",\"details\":");
	jstr(b, details);
	buf_adds(b, ",\"resources\":");
	jstr(b, j->resources);
	buf_addch(b, '}');
}

static int queue_row(const struct mjob *j, void *arg)
{
	struct queue_ctx *q = arg;
	const char *details;
	char sub[32], dur[32];

	if (q->skip_rows > 0) {
		q->skip_rows--;
		return 0;
	}
	buf_reset(&q->details);
	mj_details(j, q->counts[MJS_LAUNCHING], q->max_launching, queue_running(q), q->max_running,
	           q->now, &q->details);
	details = q->details.p;
	if (q->as_json) {
		if (q->rows++)
			buf_addch(q->out, ',');
		job_json(q->out, j, details);
		return 0;
	}
	cmd_fmt_ago(j->submitted_at, q->now, sub, sizeof(sub));
	cmd_fmt_span(j->started_at, j->ended_at > 0 ? j->ended_at : q->now, dur, sizeof(dur));
	buf_addf(q->out, "%-6lld %-20.20s %-20.20s %-10s %-10s %-5d %-18s %s\n", (long long)j->id,
	         *j->name ? j->name : "-", *j->resources ? j->resources : "-", sub, dur,
	         j->recoveries, mj_status_name(j->status), details);
	return 0;
}

static int count_row(const struct mjob *j, void *arg)
{
	(void)j;
	++*(int64_t *)arg;
	return 0;
}

static int jobs_queue(int argc, char **argv)
{
	struct queue_ctx q = {0};
	struct buf out = BUF_INIT(0);
	struct st_db *db;
	char v[32];
	int i, as_json = 0, skip = 0, r;
	long limit = 0;

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
	r = st_launcher_open(ST_READONLY, &db);
	if (r == -ENOENT) {
		if (as_json)
			return print_out("[]\n", 3) ? EXIT_FAIL : EXIT_OK;
		printf("No managed jobs.\n");
		return EXIT_OK;
	}
	if (r)
		return EXIT_FAIL;
	if (st_version(db) < 2) {
		st_close(db);
		if (as_json)
			return print_out("[]\n", 3) ? EXIT_FAIL : EXIT_OK;
		printf("No managed jobs.\n");
		return EXIT_OK;
	}
	q.out = &out;
	buf_init(&q.details, 0);
	q.now = now_wall();
	mj_sched_counts(db, q.counts);
	mj_meta_get(db, "max_launching", v, sizeof(v));
	q.max_launching = (int)strtol(v, NULL, 10);
	mj_meta_get(db, "max_running", v, sizeof(v));
	q.max_running = (int)strtol(v, NULL, 10);
	if (!q.max_launching) {
		struct jobs_limits l;

		jobs_limits_compute(&l);
		q.max_launching = l.max_launching;
		q.max_running = l.max_running;
	}
	/* About 400 bytes a row: grown once, not copied over and over. */
	buf_grow(&out, (size_t)(mj_count(db) + 16) * (as_json ? 400 : 160));
	if (as_json) {
		q.as_json = 1;
		buf_addch(&out, '[');
	} else {
		buf_addf(&out, "%-6s %-20s %-20s %-10s %-10s %-5s %-18s %s\n", "ID", "NAME",
		         "RESOURCES", "SUBMITTED", "DURATION", "#REC", "STATUS", "DETAILS");
	}
	jobs_ensure_controller(db);
	if (limit) {
		int64_t total = 0;

		mj_each(db, skip, MJ_ANY, count_row, &total);
		q.skip_rows = total > limit ? total - limit : 0;
	}
	r = mj_each(db, skip, MJ_ANY, queue_row, &q);
	if (as_json)
		buf_adds(&out, "]\n");
	st_close(db);
	if (!r && print_out(out.p, out.len))
		r = -1;
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
	size_t n = 0;
	int i, all = 0, found, done, rc = EXIT_FAIL;

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
	if (!n && !name && !all) {
		rc = usage_error("jobs cancel", "expected job ids, -n NAME or -a");
		goto out;
	}
	if (open_db(&db))
		goto out;
	if (jobs_cancel(db, ids, n, name, all, &found, &done))
		goto out;
	if (!found && (n || name)) {
		error("no managed job %s", name ? name : "with those ids");
		rc = EXIT_JOB_NOT_FOUND;
		goto out;
	}
	printf("%d job(s) cancelled, %d being cancelled (cleaning up their clusters)\n", done,
	       found - done);
	rc = (size_t)found < n ? EXIT_JOB_NOT_FOUND : EXIT_OK;
out:
	st_close(db);
	free(ids);
	return rc;
}

/* ---- jobs logs ------------------------------------------------------------------------ */

/* Set by `__jobs-remote` for a launcher's sync-down: the logs go out as a tar stream. */
static int logs_to_tar;

static int jobs_logs(int argc, char **argv)
{
	int i, follow = 1, controller = 0, sync_down = 0;
	const char *name = NULL;
	struct st_db *db;
	long id = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--follow"))
			follow = 1;
		else if (!strcmp(argv[i], "--no-follow"))
			follow = 0;
		else if (!strcmp(argv[i], "--controller"))
			controller = 1;
		else if (!strcmp(argv[i], "-s") || !strcmp(argv[i], "--sync-down"))
			sync_down = 1;
		else if ((!strcmp(argv[i], "-n") || !strcmp(argv[i], "--name")) && i + 1 < argc)
			name = argv[++i];
		else if (argv[i][0] == '-' || id || parse_long(argv[i], 1, LONG_MAX, &id))
			return usage_error("jobs logs", "unexpected '%s'", argv[i]);
	}
	if (id && name)
		return usage_error("jobs logs", "a job id or -n NAME, not both");
	if (!id) {
		/* SkyPilot's default: the newest job (of that name, with -n). */
		if (open_db(&db))
			return EXIT_FAIL;
		id = (long)jobs_latest(db, name);
		st_close(db);
		if (!id) {
			if (name)
				error("no managed job named %s", name);
			else
				error("no managed jobs");
			return EXIT_JOB_NOT_FOUND;
		}
	}
	if (sync_down)
		return logs_to_tar ? jobs_host_sync_down(id) : jobs_sync_down(id);
	return controller ? jobs_controller_logs(id) : jobs_follow_logs(id, follow);
}

/* ---- the group ------------------------------------------------------------------------ */

static const struct cmd jobs_cmds[] = {
        {"cancel", cmd_jobs_cancel, 0, "cancel managed jobs", cmd_jobs_usage},
        {"launch", jobs_launch, 0, "launch a managed job", cmd_jobs_usage},
        {"logs", jobs_logs, 0, "a managed job's logs", cmd_jobs_usage},
        {"queue", jobs_queue, 0, "list managed jobs", cmd_jobs_usage},
};

static int jobs_sub(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(jobs_cmds); i++)
		if (!strcmp(jobs_cmds[i].name, name))
			return 1;
	return 0;
}

int cmd_jobs(int argc, char **argv)
{
	if (argc < 2) {
		fputs(cmd_jobs_usage, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		fputs(cmd_jobs_usage, stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "launch") && jobs_sub(argv[1])) {
		/* A controller on a cluster of its own answers queue, logs and cancel. */
		char *infra;

		if (jobs_remote_infra(&infra))
			return EXIT_INVALID;
		if (infra) {
			int i, rc, sync = 0;

			for (i = 2; i < argc && !strcmp(argv[1], "logs"); i++)
				sync |= !strcmp(argv[i], "-s") || !strcmp(argv[i], "--sync-down");
			rc = sync ? jobs_remote_sync_down(infra, argc, argv)
			          : jobs_remote_cli(infra, argc, argv);

			free(infra);
			return rc;
		}
	}
	return cmd_dispatch("jobs", jobs_cmds, ARRAY_SIZE(jobs_cmds), argc - 1, argv + 1);
}

/*
 * `skiff __jobs-remote` on a controller's host: one framed request on stdin from a
 * launcher (supervisor/jobs/remote.c), answered as the command it stands for would be,
 * in the controller's home: "submit" (jobs_host_submit()); "cli" with the `skiff jobs`
 * arguments (queue, logs, cancel); "sync_down" with those of `jobs logs --sync-down`
 * (the logs as a tar stream); "count" and "stop" for `down` of the controller's cluster.
 * The keeper is made sure of first (but for "stop").
 */
int cmd___jobs_remote(int argc, char **argv)
{
	struct msg m;
	const char *op;
	char **args = NULL;
	size_t i, n = 0;
	int rc = EXIT_USAGE;

	(void)argv;
	if (argc > 1)
		return usage_error("__jobs-remote", "no arguments: the request comes on stdin");
	if (jobs_host_enter())
		return EXIT_FAIL;
	msg_init(&m);
	if (proto_recv(0, &m, JOBS_REMOTE_RECV_MS) < 0) {
		error("no request from the launcher");
		goto out;
	}
	jobs_host_env(&m);
	op = msg_get(&m, "op");
	if (op && !strcmp(op, "stop")) {
		rc = jobs_host_stop();
		goto out;
	}
	if (jobs_host_keep())
		warning("the jobs controller's keeper could not be started: a controller that "
		        "dies waits for the next command");
	if (op && !strcmp(op, "submit")) {
		rc = jobs_host_submit(&m);
		goto out;
	}
	if (op && !strcmp(op, "count")) {
		rc = jobs_host_count();
		goto out;
	}
	if (op && !strcmp(op, "sync_down"))
		logs_to_tar = 1;
	else if (!op || strcmp(op, "cli"))
		goto bad;
	args = xcalloc(m.n + 1, sizeof(*args));
	for (i = 0; i < m.n; i++)
		if (!strcmp(m.keys[i], "arg"))
			args[n++] = (char *)m.vals[i];
	if (n < 2 || strcmp(args[0], "jobs") || !strcmp(args[1], "launch") || !jobs_sub(args[1]) ||
	    (logs_to_tar && strcmp(args[1], "logs")))
		goto bad;
	rc = cmd_jobs((int)n, args);
	goto out;
bad:
	error("a malformed request from the launcher (op %s)", op ? op : "none");
out:
	free(args);
	msg_release(&m);
	return rc;
}
