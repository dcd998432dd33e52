/* `skiff queue`: the jobs of clusters, with SkyPilot's columns, or JSON. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/launch/engine.h"
#include "bootstrap/launch/gang.h"
#include "cmd/cmd.h"
#include "lib/json.h"
#include "lib/util.h"
#include "state/node.h"
#include "lib/banned.h"

/* The LOG column is as wide as its longest path, up to this (then ragged). */
#define QUEUE_LOG_MAXW 80

const char cmd_queue_usage[] =
        "usage: skiff queue [--json] [-s|--skip-finished] [CLUSTER...]\n"
        "\n"
        "Lists the jobs of each cluster named (names or globs; none: every UP cluster):\n"
        "SkyPilot's ID, NAME, USER, SUBMITTED, STARTED, DURATION, RESOURCES, STATUS, LOG\n"
        "and GIT COMMIT (the workdir's when the job was submitted), then EXIT CODES (one\n"
        "per rank). --json gives one array of job objects, each with its cluster, user,\n"
        "per-rank exit_codes (a list), node_job_ids and git_commit.\n";

/* The user jobs run as, for USER: this machine's user, who launched them. */
static const char *user_name(void)
{
	const char *name = own_account()->name, *u = getenv("USER");

	return *name ? name : u && *u ? u : "-";
}

static void queue_json(struct json *j, const char *cluster, const char *user,
                       const struct eng_job *v, size_t n)
{
	size_t i;
	int k;

	for (i = 0; i < n; i++) {
		const struct eng_job *jb = &v[i];
		const struct eng_rank *r0 = jb->nranks ? &jb->ranks[0] : NULL;

		json_obj_begin(j);
		json_key(j, "cluster");
		json_str(j, cluster);
		json_key(j, "id");
		json_int(j, jb->id);
		json_key(j, "name");
		json_str(j, jb->name);
		json_key(j, "user");
		json_str(j, user);
		json_key(j, "status");
		json_str(j, job_status_name(jb->status));
		json_key(j, "submitted_at");
		json_double(j, jb->submitted_at);
		json_key(j, "started_at");
		if (jb->started_at > 0)
			json_double(j, jb->started_at);
		else
			json_null(j);
		json_key(j, "ended_at");
		if (jb->ended_at > 0)
			json_double(j, jb->ended_at);
		else
			json_null(j);
		json_key(j, "exit_codes");
		json_arr_begin(j);
		for (k = 0; k < jb->nranks; k++) {
			int code = gang_rank_code(jb->status, jb->ranks[k].status,
			                          jb->ranks[k].exit_code);

			if (code >= 0)
				json_int(j, code);
			else
				json_null(j);
		}
		json_arr_end(j);
		json_key(j, "resources");
		json_obj_begin(j);
		json_key(j, "cpus");
		json_double(j, r0 ? r0->cpus : 0);
		json_key(j, "memory");
		json_double(j, r0 ? r0->memory : 0);
		json_key(j, "gpus");
		json_int(j, r0 ? r0->gpus : 0);
		json_key(j, "num_nodes");
		json_int(j, jb->num_nodes);
		json_obj_end(j);
		json_key(j, "log_dir");
		json_str(j, r0 ? r0->log_dir : "");
		json_key(j, "node_job_ids");
		json_str(j, jb->node_job_ids);
		json_key(j, "reason");
		json_str(j, jb->reason);
		json_key(j, "git_commit");
		if (jb->git_commit && *jb->git_commit)
			json_str(j, jb->git_commit);
		else
			json_null(j);
		json_obj_end(j);
	}
}

/* "2x[CPU:4, MEM:16GB, GPU:1]", as SkyPilot's queue shows a job's resources. */
static void job_resources(const struct eng_job *jb, char *out, size_t size)
{
	const struct eng_rank *r0 = jb->nranks ? &jb->ranks[0] : NULL;
	struct buf b = BUF_INIT(0);

	if (!r0) {
		xsnprintf(out, size, "-");
		return;
	}
	buf_addf(&b, "%dx[CPU:%g", jb->num_nodes ? jb->num_nodes : 1, r0->cpus);
	if (r0->memory > 0)
		buf_addf(&b, ", MEM:%gGB", r0->memory);
	if (r0->gpus > 0)
		buf_addf(&b, ", GPU:%d", r0->gpus);
	buf_addch(&b, ']');
	/* The numbers are the nodes' to say: a column's worth is shown, never fatal. */
	xsnprintf(out, size, "%.*s", (int)(size - 1), b.p);
	buf_release(&b);
}

static void queue_table(const char *user, const struct eng_job *v, size_t n, struct buf *out)
{
	double now = now_wall();
	size_t i;
	int k, logw = 3;

	/* SkyPilot's columns, then skiff's EXIT CODES: LOG is as wide as its longest. */
	for (i = 0; i < n; i++) {
		const char *log = v[i].nranks ? v[i].ranks[0].log_dir : "";
		int w = (int)strlen(log ? log : "");

		if (w > logw)
			logw = w > QUEUE_LOG_MAXW ? QUEUE_LOG_MAXW : w;
	}
	buf_addf(out, "%-5s %-16s %-10s %-10s %-10s %-10s %-20s %-13s %-*s %-40s %s\n", "ID",
	         "NAME", "USER", "SUBMITTED", "STARTED", "DURATION", "RESOURCES", "STATUS", logw,
	         "LOG", "GIT COMMIT", "EXIT CODES");
	for (i = 0; i < n; i++) {
		const struct eng_job *jb = &v[i];
		struct buf codes = BUF_INIT(0);
		char sub[32], started[32], dur[32], res[64], name[17], commit[64];

		for (k = 0; k < jb->nranks; k++) {
			int code = gang_rank_code(jb->status, jb->ranks[k].status,
			                          jb->ranks[k].exit_code);

			if (code >= 0)
				buf_addf(&codes, "%s%d", codes.len ? "," : "", code);
			else if (jb->ranks[k].status < 0) /* its node could not be reached */
				buf_addf(&codes, "%s?", codes.len ? "," : "");
		}
		cmd_fmt_ago(jb->submitted_at, now, sub, sizeof(sub));
		cmd_fmt_ago(jb->started_at, now, started, sizeof(started));
		cmd_fmt_span(jb->started_at, jb->ended_at > 0 ? jb->ended_at : now, dur,
		             sizeof(dur));
		job_resources(jb, res, sizeof(res));
		buf_addf(out,
		         "%-5lld %-16.16s %-10.10s %-10s %-10s %-10s %-20s %-13s %-*s %-40s %s\n",
		         (long long)jb->id,
		         *jb->name ? buf_cell(name, sizeof(name), jb->name) : "-", user, sub,
		         started, dur, res, job_status_name(jb->status), logw,
		         jb->nranks && jb->ranks[0].log_dir ? jb->ranks[0].log_dir : "-",
		         jb->git_commit && *jb->git_commit
		                 ? buf_cell(commit, sizeof(commit), jb->git_commit)
		                 : "-",
		         codes.len ? codes.p : "-");
		buf_release(&codes);
	}
}

int cmd_queue(int argc, char **argv)
{
	struct st_db *ldb;
	struct eng_cluster *cs = NULL;
	struct buf out = BUF_INIT(0);
	struct json j;
	char **names = xcalloc((size_t)argc, sizeof(*names));
	size_t nc = 0, nnames = 0, i;
	int as_json = 0, skip = 0, a, rc = EXIT_OK, r, missing;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--json"))
			as_json = 1;
		else if (!strcmp(argv[a], "-s") || !strcmp(argv[a], "--skip-finished"))
			skip = 1;
		else if (!strcmp(argv[a], "-a") || !strcmp(argv[a], "--all-users") ||
		         !strcmp(argv[a], "-u"))
			continue; /* every job here is this user's */
		else if (argv[a][0] == '-')
			return free(names), usage_error("queue", "unknown option '%s'", argv[a]);
		else
			names[nnames++] = argv[a];
	}
	if (cmd_open_ldb(&ldb))
		return free(names), EXIT_FAIL;
	missing = cmd_find_clusters(ldb, names, nnames, 0, &cs, &nc);
	if (missing < 0) {
		free(names);
		st_close(ldb);
		return EXIT_FAIL;
	}
	if (as_json) {
		json_init(&j, &out, 1);
		json_arr_begin(&j);
	}
	for (i = 0; i < nc; i++) {
		struct eng_job *v = NULL;
		size_t n = 0;

		/* Unnamed, a cluster that is not UP has no node to ask: said, not asked. */
		if (!nnames && strcmp(cs[i].shown, "UP")) {
			if (!as_json)
				buf_addf(&out, "%sCluster %s is %s: its jobs are not listed.\n",
				         out.len ? "\n" : "", cs[i].c.name, cs[i].shown);
			continue;
		}
		/* 1: a node could not be reached (named on stderr): what is known is printed. */
		r = eng_queue(ldb, cs[i].c.name, skip, NULL, 0, &v, &n);
		if (r < 0) {
			rc = EXIT_FAIL;
			continue;
		}
		if (r && rc == EXIT_OK)
			rc = EXIT_UNAVAILABLE;
		if (as_json) {
			queue_json(&j, cs[i].c.name, user_name(), v, n);
		} else {
			if (nc > 1 || !nnames)
				buf_addf(&out, "%sJob queue of cluster %s\n", out.len ? "\n" : "",
				         cs[i].c.name);
			queue_table(user_name(), v, n, &out);
		}
		eng_jobs_free(v, n);
	}
	if (as_json) {
		json_arr_end(&j);
		json_finish(&j);
	} else if (!nc && !missing) {
		buf_adds(&out, "No existing clusters.\n");
	}
	if (print_out(out.p, out.len))
		rc = EXIT_FAIL;
	buf_release(&out);
	eng_clusters_free(cs, nc);
	free(names);
	st_close(ldb);
	return missing && rc == EXIT_OK ? EXIT_FAIL : rc;
}
