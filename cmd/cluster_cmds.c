/*
 * `skiff status | queue | logs | cancel | down | stop | start | autostop | ssh`: the flags,
 * a call to the launch engine (bootstrap/launch/engine.h), and the rendering.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/launch/engine.h"
#include "bootstrap/launch/gang.h"
#include "cmd/cmd.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/node.h"
#include "lib/banned.h"

const char cmd_status_usage[] =
        "usage: skiff status [--json] [CLUSTER...]\n"
        "\n"
        "Lists this machine's clusters: NAME, INFRA, RESOURCES, STATUS (INIT, UP, STOPPED;\n"
        "ENDED: a Slurm cluster whose allocation ended), AUTOSTOP and LAUNCHED. --json\n"
        "gives per cluster name, status, infra, resources, nodes (rank, ip, address,\n"
        "user, port), head (the head node's ip), autostop (null or {idle_minutes, down}),\n"
        "launched_at.\n";

const char cmd_queue_usage[] =
        "usage: skiff queue [--json] [-s|--skip-finished] CLUSTER\n"
        "\n"
        "Lists a cluster's jobs: ID, NAME, SUBMITTED, STATUS, EXIT CODES (one per rank).\n"
        "--json gives job objects like 'skiff node queue --json', with per-rank\n"
        "exit_codes and node_job_ids.\n";

const char cmd_logs_usage[] =
        "usage: skiff logs CLUSTER [JOB] [--follow|--no-follow] [--tail N] [--status]\n"
        "       skiff logs CLUSTER [JOB] -s|--sync-down\n"
        "\n"
        "Streams a job's logs (the latest job by default), every rank's lines prefixed\n"
        "with its rank when the job has several. Ctrl-C stops following; the job runs on.\n"
        "--sync-down copies every rank's setup.log and run.log of the job to\n"
        "~/sky_logs/CLUSTER/JOB/rank-N/ over the runner's own channel.\n"
        "Exit status: 0 succeeded, 100 failed, 101 not finished, 102 not found,\n"
        "103 cancelled.\n";

const char cmd_cancel_usage[] =
        "usage: skiff cancel CLUSTER [JOB...] [-a|--all]\n"
        "\n"
        "Cancels jobs on a cluster (every rank of each). Without JOB, the latest job.\n";

const char cmd_down_usage[] =
        "usage: skiff down CLUSTER... | -a|--all\n"
        "\n"
        "Tears clusters down: cancels their jobs, stops the supervisors, frees the nodes\n"
        "(local nodes' directories are removed; SSH pool hosts keep skiff's binary cache).\n"
        "-a: every cluster except those of managed jobs (skiff-jobs, skiff-job-ID).\n";

const char cmd_stop_usage[] =
        "usage: skiff stop CLUSTER... | -a|--all\n"
        "\n"
        "Stops a cluster: cancels its jobs and stops its supervisors; the nodes stay booked\n"
        "and 'skiff start' brings it back.\n";

const char cmd_start_usage[] =
        "usage: skiff start CLUSTER...\n"
        "\n"
        "Starts a stopped cluster again (bootstrap and supervisors up). Not on Slurm: an\n"
        "allocation cannot be stopped (use down).\n";

const char cmd_autostop_usage[] =
        "usage: skiff autostop CLUSTER [-i IDLE_MINUTES] [--down]\n"
        "                      [--wait-for jobs_and_ssh|jobs|none] | --cancel\n"
        "\n"
        "Stops (--down: tears down) the cluster once it has been idle for IDLE_MINUTES (5;\n"
        "with --down alone, 1): no job that has not ended and, with jobs_and_ssh (the\n"
        "default), no login session on the head; jobs: only jobs count; none: stop at\n"
        "the deadline whatever runs. The cluster decides by itself; 'skiff status' shows\n"
        "what it did. --cancel turns it off.\n";

const char cmd_ssh_usage[] =
        "usage: skiff ssh CLUSTER [COMMAND...]\n"
        "\n"
        "An interactive shell on the cluster's head node (or runs COMMAND there).\n";

static int open_ldb(struct st_db **ldb)
{
	return st_launcher_open(0, ldb) ? -1 : 0;
}

/* ---- status ------------------------------------------------------------------------ */

static void status_json(const struct eng_cluster *v, size_t n, struct buf *out)
{
	struct json j;
	size_t i, k;

	json_init(&j, out, 1);
	json_arr_begin(&j);
	for (i = 0; i < n; i++) {
		const struct cluster *c = &v[i].c;

		json_obj_begin(&j);
		json_key(&j, "name");
		json_str(&j, c->name);
		json_key(&j, "status");
		json_str(&j, v[i].shown);
		json_key(&j, "infra");
		json_str(&j, c->infra);
		json_key(&j, "resources");
		json_str(&j, c->resources);
		json_key(&j, "num_nodes");
		json_int(&j, c->num_nodes);
		json_key(&j, "head");
		json_str(&j, v[i].nnodes ? v[i].nodes[0].ip : c->head_ip);
		json_key(&j, "nodes");
		json_arr_begin(&j);
		for (k = 0; k < v[i].nnodes; k++) {
			const struct cluster_node *nd = &v[i].nodes[k];

			json_obj_begin(&j);
			json_key(&j, "rank");
			json_int(&j, nd->rank);
			json_key(&j, "ip");
			json_str(&j, nd->ip);
			/* What jobs get in SKYPILOT_NODE_IPS: where the node was reached at. */
			json_key(&j, "address");
			json_str(&j, *nd->addr ? nd->addr : nd->ip);
			json_key(&j, "user");
			json_str(&j, nd->user);
			json_key(&j, "port");
			json_int(&j, nd->port);
			json_key(&j, "node");
			json_str(&j, nd->node_key);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_key(&j, "autostop");
		if (c->autostop_minutes < 0) {
			json_null(&j);
		} else {
			json_obj_begin(&j);
			json_key(&j, "idle_minutes");
			json_int(&j, c->autostop_minutes);
			json_key(&j, "down");
			json_bool(&j, c->autostop_down);
			json_key(&j, "wait_for");
			json_str(&j, c->autostop_wait_for && *c->autostop_wait_for
			                     ? c->autostop_wait_for
			                     : "jobs_and_ssh");
			json_obj_end(&j);
		}
		json_key(&j, "launched_at");
		json_double(&j, c->launched_at);
		json_key(&j, "last_task");
		json_str(&j, c->last_task);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_finish(&j);
}

int cmd_status(int argc, char **argv)
{
	struct st_db *ldb;
	struct eng_cluster *v = NULL;
	struct buf out = BUF_INIT(0);
	char **names = xcalloc((size_t)argc, sizeof(*names));
	size_t n = 0, i, nnames = 0;
	int as_json = 0, a, r;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--json"))
			as_json = 1;
		else if (argv[a][0] == '-')
			return free(names), usage_error("status", "unknown option '%s'", argv[a]);
		else
			names[nnames++] = argv[a];
	}
	if (open_ldb(&ldb)) {
		free(names);
		return EXIT_FAIL;
	}
	r = eng_status(ldb, names, nnames, &v, &n);
	free(names);
	if (r) {
		st_close(ldb);
		return EXIT_FAIL;
	}
	if (as_json) {
		status_json(v, n, &out);
	} else if (!n) {
		buf_adds(&out, "No existing clusters.\n");
	} else {
		buf_addf(&out, "%-20s %-16s %-24s %-8s %-10s %s\n", "NAME", "INFRA", "RESOURCES",
		         "STATUS", "AUTOSTOP", "HEAD");
		for (i = 0; i < n; i++) {
			const struct cluster *c = &v[i].c;
			char as[32];

			if (c->autostop_minutes < 0)
				xsnprintf(as, sizeof(as), "-");
			else
				xsnprintf(as, sizeof(as), "%dm%s", c->autostop_minutes,
				          c->autostop_down ? " (down)" : "");
			buf_addf(&out, "%-20s %-16s %-24s %-8s %-10s %s\n", c->name, c->infra,
			         c->resources, v[i].shown, as, c->head_ip);
		}
	}
	r = print_out(out.p, out.len);
	buf_release(&out);
	eng_clusters_free(v, n);
	st_close(ldb);
	return r ? EXIT_FAIL : EXIT_OK;
}

/* ---- queue --------------------------------------------------------------------------- */

static void queue_json(const struct eng_job *v, size_t n, struct buf *out)
{
	struct json j;
	size_t i;
	int k;

	json_init(&j, out, 1);
	json_arr_begin(&j);
	for (i = 0; i < n; i++) {
		const struct eng_job *jb = &v[i];
		const struct eng_rank *r0 = jb->nranks ? &jb->ranks[0] : NULL;

		json_obj_begin(&j);
		json_key(&j, "id");
		json_int(&j, jb->id);
		json_key(&j, "name");
		json_str(&j, jb->name);
		json_key(&j, "status");
		json_str(&j, job_status_name(jb->status));
		json_key(&j, "submitted_at");
		json_double(&j, jb->submitted_at);
		json_key(&j, "started_at");
		if (jb->started_at > 0)
			json_double(&j, jb->started_at);
		else
			json_null(&j);
		json_key(&j, "ended_at");
		if (jb->ended_at > 0)
			json_double(&j, jb->ended_at);
		else
			json_null(&j);
		json_key(&j, "exit_codes");
		json_arr_begin(&j);
		for (k = 0; k < jb->nranks; k++) {
			int code = gang_rank_code(jb->status, jb->ranks[k].status,
			                          jb->ranks[k].exit_code);

			if (code >= 0)
				json_int(&j, code);
			else
				json_null(&j);
		}
		json_arr_end(&j);
		json_key(&j, "resources");
		json_obj_begin(&j);
		json_key(&j, "cpus");
		json_double(&j, r0 ? r0->cpus : 0);
		json_key(&j, "memory");
		json_double(&j, r0 ? r0->memory : 0);
		json_key(&j, "gpus");
		json_int(&j, r0 ? r0->gpus : 0);
		json_key(&j, "num_nodes");
		json_int(&j, jb->num_nodes);
		json_obj_end(&j);
		json_key(&j, "log_dir");
		json_str(&j, r0 ? r0->log_dir : "");
		json_key(&j, "node_job_ids");
		json_str(&j, jb->node_job_ids);
		json_key(&j, "reason");
		json_str(&j, jb->reason);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_finish(&j);
}

static void queue_table(const struct eng_job *v, size_t n, struct buf *out)
{
	double now = now_wall();
	size_t i;
	int k;

	buf_addf(out, "%-5s %-20s %-11s %-13s %-12s %s\n", "ID", "NAME", "SUBMITTED", "STATUS",
	         "EXIT CODES", "LOG");
	for (i = 0; i < n; i++) {
		const struct eng_job *jb = &v[i];
		struct buf codes = BUF_INIT(0);
		long ago = (long)(now - jb->submitted_at);
		char sub[32];

		for (k = 0; k < jb->nranks; k++) {
			int code = gang_rank_code(jb->status, jb->ranks[k].status,
			                          jb->ranks[k].exit_code);

			if (code >= 0)
				buf_addf(&codes, "%s%d", codes.len ? "," : "", code);
			else if (jb->ranks[k].status < 0) /* its node could not be reached */
				buf_addf(&codes, "%s?", codes.len ? "," : "");
		}
		if (ago < 60)
			xsnprintf(sub, sizeof(sub), "%lds ago", ago);
		else if (ago < 3600)
			xsnprintf(sub, sizeof(sub), "%ldm ago", ago / 60);
		else
			xsnprintf(sub, sizeof(sub), "%ldh ago", ago / 3600);
		buf_addf(out, "%-5lld %-20.20s %-11s %-13s %-12s %s\n", (long long)jb->id,
		         *jb->name ? jb->name : "-", sub, job_status_name(jb->status),
		         codes.len ? codes.p : "-", jb->nranks ? jb->ranks[0].log_dir : "");
		buf_release(&codes);
	}
}

int cmd_queue(int argc, char **argv)
{
	struct st_db *ldb;
	struct eng_job *v = NULL;
	struct buf out = BUF_INIT(0);
	const char *name = NULL;
	size_t n = 0;
	int as_json = 0, skip = 0, a, rc, r;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--json"))
			as_json = 1;
		else if (!strcmp(argv[a], "-s") || !strcmp(argv[a], "--skip-finished"))
			skip = 1;
		else if (argv[a][0] == '-')
			return usage_error("queue", "unknown option '%s'", argv[a]);
		else if (!name)
			name = argv[a];
		else
			return usage_error("queue", "one cluster at a time");
	}
	if (!name)
		return usage_error("queue", "expected a cluster name");
	if (open_ldb(&ldb))
		return EXIT_FAIL;
	/* 1: a node could not be reached (named on stderr): what is known is printed. */
	r = eng_queue(ldb, name, skip, NULL, 0, &v, &n);
	if (r < 0) {
		st_close(ldb);
		return EXIT_FAIL;
	}
	if (as_json)
		queue_json(v, n, &out);
	else
		queue_table(v, n, &out);
	rc = print_out(out.p, out.len) ? EXIT_FAIL : r ? EXIT_UNAVAILABLE : EXIT_OK;
	buf_release(&out);
	eng_jobs_free(v, n);
	st_close(ldb);
	return rc;
}

/* ---- logs, cancel -------------------------------------------------------------------- */

int cmd_logs(int argc, char **argv)
{
	struct st_db *ldb;
	const char *name = NULL;
	long tail = -1, jid = 0;
	int follow = 1, only_status = 0, sync_down = 0, a, rc, status;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-s") || !strcmp(argv[a], "--sync-down"))
			sync_down = 1;
		else if (!strcmp(argv[a], "--follow"))
			follow = 1;
		else if (!strcmp(argv[a], "--no-follow"))
			follow = 0;
		else if (!strcmp(argv[a], "--status"))
			only_status = 1;
		else if (!strcmp(argv[a], "--tail") && a + 1 < argc &&
		         !parse_long(argv[a + 1], 0, 1L << 40, &tail))
			a++;
		else if (argv[a][0] == '-')
			return usage_error("logs", "unknown option '%s'", argv[a]);
		else if (!name)
			name = argv[a];
		else if (!jid && !parse_long(argv[a], 1, INT64_MAX, &jid))
			;
		else
			return usage_error("logs", "unexpected argument '%s'", argv[a]);
	}
	if (!name)
		return usage_error("logs", "expected a cluster name");
	if (open_ldb(&ldb))
		return EXIT_FAIL;
	if (sync_down) {
		struct buf where = BUF_INIT(0);

		rc = eng_sync_down(ldb, name, jid, &where) ? EXIT_FAIL : EXIT_OK;
		if (rc == EXIT_OK)
			printf("logs synced to %s\n", where.p);
		buf_release(&where);
	} else if (only_status) {
		fflush(stdout);
		rc = eng_logs(ldb, name, jid, ENG_LOGS_STATUS, 0, 1, &status);
		if (rc != EXIT_JOB_NOT_FOUND && rc != EXIT_FAIL)
			printf("%s\n", job_status_name(status));
	} else {
		fflush(stdout);
		rc = eng_logs(ldb, name, jid, follow ? ENG_LOGS_FOLLOW : ENG_LOGS_PRINT, tail, 1,
		              NULL);
	}
	st_close(ldb);
	return rc;
}

int cmd_cancel(int argc, char **argv)
{
	struct eng_cancelled res;
	struct st_db *ldb;
	const char *name = NULL;
	int64_t *ids = xcalloc((size_t)argc, sizeof(*ids));
	size_t nids = 0;
	int all = 0, a, r, rc;

	for (a = 1; a < argc; a++) {
		long id;

		if (!strcmp(argv[a], "-a") || !strcmp(argv[a], "--all"))
			all = 1;
		else if (!strcmp(argv[a], "-y") || !strcmp(argv[a], "--yes"))
			;
		else if (argv[a][0] == '-')
			return free(ids), usage_error("cancel", "unknown option '%s'", argv[a]);
		else if (!name)
			name = argv[a];
		else if (parse_long(argv[a], 1, INT64_MAX, &id))
			return free(ids), usage_error("cancel", "'%s' is not a job id", argv[a]);
		else
			ids[nids++] = id;
	}
	if (!name) {
		free(ids);
		return usage_error("cancel", "expected a cluster name");
	}
	if (open_ldb(&ldb)) {
		free(ids);
		return EXIT_FAIL;
	}
	r = eng_cancel(ldb, name, ids, nids, all, &res);
	rc = r == -ENOENT && res.missing ? EXIT_JOB_NOT_FOUND : r ? EXIT_FAIL : EXIT_OK;
	if (!r)
		printf("cancelled %s on cluster %s\n", all ? "all jobs" : "the job(s)", name);
	eng_cancelled_release(&res);
	free(ids);
	st_close(ldb);
	return rc;
}

/* ---- down, stop, start, autostop, ssh ------------------------------------------------ */

static int down_one(struct st_db *ldb, const char *name, int keep)
{
	int r = eng_down(ldb, name, keep);

	if (r == ENG_DOWN_BY_OTHER)
		printf("cluster %s terminated (by another command meanwhile)\n", name);
	else if (!r)
		printf("cluster %s %s\n", name, keep ? "stopped" : "terminated");
	return r < 0 ? EXIT_FAIL : EXIT_OK;
}

/* -a: every cluster but those of managed jobs (as `sky down -a` spares its controllers). */
static int all_clusters(struct st_db *ldb, int keep)
{
	struct eng_cluster *v = NULL;
	size_t n = 0, i;
	int rc = EXIT_OK;

	if (eng_status(ldb, NULL, 0, &v, &n))
		return EXIT_FAIL;
	for (i = 0; i < n; i++) {
		if (eng_managed_cluster(v[i].c.name)) {
			info("cluster %s belongs to managed jobs: left alone ('skiff jobs cancel' "
			     "releases it)",
			     v[i].c.name);
			continue;
		}
		if (down_one(ldb, v[i].c.name, keep))
			rc = EXIT_FAIL;
	}
	if (!n)
		printf("No existing clusters.\n");
	eng_clusters_free(v, n);
	return rc;
}

static int many(int argc, char **argv, const char *cmd, int keep)
{
	struct st_db *ldb;
	int a, rc = EXIT_OK, n = 0, all = 0;

	for (a = 1; a < argc; a++)
		if (!strcmp(argv[a], "-a") || !strcmp(argv[a], "--all"))
			all = 1;
	if (open_ldb(&ldb))
		return EXIT_FAIL;
	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-y") || !strcmp(argv[a], "--yes") || !strcmp(argv[a], "-p") ||
		    !strcmp(argv[a], "--purge") || !strcmp(argv[a], "-a") ||
		    !strcmp(argv[a], "--all"))
			continue;
		if (argv[a][0] == '-') {
			st_close(ldb);
			return usage_error(cmd, "unknown option '%s'", argv[a]);
		}
		if (all) {
			st_close(ldb);
			return usage_error(cmd, "-a takes no cluster names");
		}
		n++;
		if (down_one(ldb, argv[a], keep))
			rc = EXIT_FAIL;
	}
	if (all)
		rc = all_clusters(ldb, keep);
	st_close(ldb);
	if (!n && !all)
		return usage_error(cmd, "expected a cluster name (or -a for all)");
	return rc;
}

int cmd_down(int argc, char **argv)
{
	return many(argc, argv, "down", 0);
}

int cmd_stop(int argc, char **argv)
{
	return many(argc, argv, "stop", 1);
}

int cmd_start(int argc, char **argv)
{
	struct st_db *ldb;
	int a, rc = EXIT_OK;

	if (argc < 2)
		return usage_error("start", "expected a cluster name");
	if (open_ldb(&ldb))
		return EXIT_FAIL;
	for (a = 1; a < argc; a++) {
		if (argv[a][0] == '-')
			continue;
		if (eng_start(ldb, argv[a]))
			rc = EXIT_FAIL;
		else
			printf("cluster %s started\n", argv[a]);
	}
	st_close(ldb);
	return rc;
}

int cmd_autostop(int argc, char **argv)
{
	struct st_db *ldb;
	const char *name = NULL, *wait_for = NULL;
	long minutes = -2;
	int down = 0, cancel = 0, a, rc;

	for (a = 1; a < argc; a++) {
		if ((!strcmp(argv[a], "-i") || !strcmp(argv[a], "--idle-minutes")) &&
		    a + 1 < argc) {
			if (parse_long(argv[++a], 0, 525600, &minutes))
				return usage_error("autostop", "bad minutes '%s'", argv[a]);
		} else if (!strcmp(argv[a], "--down")) {
			down = 1;
		} else if (!strcmp(argv[a], "--wait-for") && a + 1 < argc) {
			if (!task_wait_for_valid(argv[++a]))
				return usage_error(
				        "autostop",
				        "bad --wait-for '%s': expected jobs_and_ssh, jobs or "
				        "none",
				        argv[a]);
			wait_for = argv[a];
		} else if (!strcmp(argv[a], "--cancel")) {
			cancel = 1;
		} else if (!strcmp(argv[a], "-y") || !strcmp(argv[a], "--yes")) {
			continue;
		} else if (argv[a][0] == '-') {
			return usage_error("autostop", "unknown option '%s'", argv[a]);
		} else {
			name = argv[a];
		}
	}
	if (!name)
		return usage_error("autostop", "expected a cluster name");
	if (cancel)
		minutes = -1;
	else if (minutes == -2)
		minutes = down ? 1 : 5;
	if (open_ldb(&ldb))
		return EXIT_FAIL;
	rc = eng_autostop(ldb, name, (int)minutes, down, wait_for) ? EXIT_FAIL : EXIT_OK;
	if (rc == EXIT_OK && minutes >= 0)
		printf("autostop for %s: %s after %ld idle minute(s)\n", name,
		       down ? "down" : "stop", minutes);
	else if (rc == EXIT_OK)
		printf("autostop for %s cancelled\n", name);
	st_close(ldb);
	return rc;
}

int cmd_ssh(int argc, char **argv)
{
	struct st_db *ldb;
	struct buf cmd = BUF_INIT(0);
	int a, rc;

	if (argc < 2 || argv[1][0] == '-')
		return usage_error("ssh", "expected a cluster name");
	for (a = 2; a < argc; a++)
		buf_addf(&cmd, "%s%s", a > 2 ? " " : "", argv[a]);
	if (open_ldb(&ldb))
		return EXIT_FAIL;
	rc = eng_ssh(ldb, argv[1], cmd.len ? cmd.p : NULL, !cmd.len && isatty(0));
	if (rc < 0)
		rc = rc == -ENOENT ? EXIT_FAIL : EXIT_UNAVAILABLE;
	buf_release(&cmd);
	st_close(ldb);
	return rc;
}
