/*
 * `skiff status | queue | logs | cancel | down | stop | start | autostop | ssh`: the flags,
 * a call to the launch engine (bootstrap/launch/engine.h), and the rendering.
 */
#include <errno.h>
#include <fnmatch.h>
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
#include "supervisor/jobs/jobs.h"
#include "lib/banned.h"

const char cmd_status_usage[] =
        "usage: skiff status [--json] [-r] [-v] [CLUSTER...]\n"
        "       skiff status --ip | --endpoints | --endpoint PORT  CLUSTER\n"
        "\n"
        "Lists this machine's clusters (CLUSTER: names or globs such as 'dev-*'): NAME,\n"
        "INFRA, RESOURCES, STATUS (INIT, UP, STOPPED; ENDED: a Slurm cluster whose\n"
        "allocation ended), AUTOSTOP and LAUNCHED; -v adds HEAD_IP and PORTS. A named\n"
        "cluster that does not exist is an error (exit 1).\n"
        "\n"
        "  -r, --refresh     ask every node of each UP cluster; one that does not answer\n"
        "                    makes the cluster INIT (the warning names it)\n"
        "  --ip              the head's address\n"
        "  --endpoints       each open port (resources.ports) as PORT: ADDRESS:PORT\n"
        "  --endpoint PORT   ADDRESS:PORT of one open port\n"
        "  -a, -u            accepted: every cluster here is this user's\n"
        "\n"
        "--json gives per cluster name, status, infra, resources, num_nodes, head, nodes\n"
        "(rank, ip, address, user, port, node), autostop (null or {idle_minutes, down,\n"
        "wait_for}), launched_at, last_task and ports.\n";

const char cmd_queue_usage[] =
        "usage: skiff queue [--json] [-s|--skip-finished] [CLUSTER...]\n"
        "\n"
        "Lists the jobs of each cluster named (names or globs; none: every UP cluster):\n"
        "ID, NAME, USER, SUBMITTED, STARTED, DURATION, RESOURCES, STATUS, EXIT CODES (one\n"
        "per rank) and LOG. --json gives one array of job objects, each with its cluster,\n"
        "user, per-rank exit_codes (a list) and node_job_ids.\n";

const char cmd_logs_usage[] =
        "usage: skiff logs CLUSTER [JOB] [--follow|--no-follow] [--tail[=]N] [--status]\n"
        "       skiff logs CLUSTER [JOB...] -s|--sync-down\n"
        "\n"
        "Streams a job's logs (the latest job by default), every rank's lines prefixed\n"
        "with its rank when the job has several. Ctrl-C stops following; the job runs on.\n"
        "--sync-down copies every rank's setup.log and run.log of the job to\n"
        "~/sky_logs/CLUSTER/JOB/rank-N/ over the runner's own channel (each JOB named).\n"
        "--status prints 'Job N: STATUS' (SkyPilot's form).\n"
        "Exit status: 0 succeeded, 100 failed, 101 not finished, 102 not found,\n"
        "103 cancelled.\n";

const char cmd_cancel_usage[] =
        "usage: skiff cancel CLUSTER [JOB...] [-a|--all]\n"
        "\n"
        "Cancels jobs on a cluster (every rank of each) and says which. Without JOB, the\n"
        "latest job that has not ended; -a: every job.\n";

const char cmd_down_usage[] =
        "usage: skiff down [-p|--purge] [-y] CLUSTER... | -a|--all\n"
        "\n"
        "Tears clusters down (names or globs such as 'dev-*'): cancels their jobs, stops\n"
        "the supervisors, frees the nodes (local nodes' directories are removed; SSH pool\n"
        "hosts keep skiff's binary cache). -a: every cluster except those of managed jobs\n"
        "(skiff-jobs, skiff-job-ID). A cluster of managed jobs that have not ended is\n"
        "refused. -p/--purge forgets a cluster even when its nodes cannot all be removed\n"
        "(what is left is yours to clean up) and takes down one of managed jobs anyway\n"
        "(they are recovered elsewhere).\n";

const char cmd_stop_usage[] =
        "usage: skiff stop [-y] CLUSTER... | -a|--all\n"
        "\n"
        "Stops clusters (names or globs): cancels their jobs and stops their supervisors;\n"
        "the nodes stay booked and 'skiff start' brings them back.\n";

const char cmd_start_usage[] =
        "usage: skiff start [-y] [-i IDLE_MINUTES] [--down] [--wait-for MODE]\n"
        "                   CLUSTER... | -a|--all\n"
        "\n"
        "Starts stopped clusters again (names or globs; -a: every stopped one): bootstrap\n"
        "and supervisors up, their autostop set again. -i, --down, --wait-for then set\n"
        "autostop as 'skiff autostop' does. -f/--force and -r/--retry-until-up are\n"
        "accepted: a start brings every node up or fails saying why. Not on Slurm: an\n"
        "allocation cannot be stopped (use down).\n";

const char cmd_autostop_usage[] =
        "usage: skiff autostop [-i IDLE_MINUTES] [--down] [--wait-for MODE] [--cancel]\n"
        "                      CLUSTER... | -a|--all\n"
        "\n"
        "Stops (--down: tears down) each cluster named (names or globs; -a: every UP one)\n"
        "once it has been idle for IDLE_MINUTES (5; with --down alone, 1): no job that has\n"
        "not ended and, with jobs_and_ssh (the default), no login session on the head;\n"
        "jobs: only jobs count; none: stop at the deadline whatever runs. The cluster\n"
        "decides by itself; 'skiff status' shows what it did. --cancel turns it off.\n";

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
		json_key(&j, "ports");
		json_str(&j, c->ports);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_finish(&j);
}

/* The clusters named (names or globs), or all; each name that matches none is reported. */
static int find_clusters(struct st_db *ldb, char **names, size_t n, unsigned flags,
                         struct eng_cluster **v, size_t *nv)
{
	size_t i, k;
	int missing = 0;

	if (eng_status(ldb, names, n, flags, v, nv))
		return -1;
	for (i = 0; i < n; i++) {
		for (k = 0; k < *nv; k++)
			if (!fnmatch(names[i], (*v)[k].c.name, 0))
				break;
		if (k == *nv) {
			error("cluster %s does not exist", names[i]);
			missing = 1;
		}
	}
	return missing;
}

static void status_table(const struct eng_cluster *v, size_t n, int verbose, struct buf *out)
{
	double now = now_wall();
	size_t i;

	buf_addf(out, "%-20s %-16s %-24s %-8s %-10s %s\n", "NAME", "INFRA", "RESOURCES", "STATUS",
	         "AUTOSTOP", verbose ? "LAUNCHED   HEAD_IP         PORTS" : "LAUNCHED");
	for (i = 0; i < n; i++) {
		const struct cluster *c = &v[i].c;
		char as[32], launched[32];

		if (c->autostop_minutes < 0)
			xsnprintf(as, sizeof(as), "-");
		else
			xsnprintf(as, sizeof(as), "%dm%s", c->autostop_minutes,
			          c->autostop_down ? " (down)" : "");
		cmd_fmt_ago(c->launched_at, now, launched, sizeof(launched));
		buf_addf(out, "%-20s %-16s %-24s %-8s %-10s ", c->name, c->infra, c->resources,
		         v[i].shown, as);
		if (verbose)
			buf_addf(out, "%-10s %-15s %s\n", launched, *c->head_ip ? c->head_ip : "-",
			         *c->ports ? c->ports : "-");
		else
			buf_addf(out, "%s\n", launched);
	}
}

/* --ip, --endpoints, --endpoint PORT: about one cluster. */
static int status_one(const struct eng_cluster *ec, int ip, long port, struct buf *out)
{
	const struct cluster *c = &ec->c;
	const char *head = ec->nnodes ? ec->nodes[0].ip : c->head_ip;
	const char *p = c->ports;

	if (strcmp(ec->shown, "UP") || !*head)
		return error("cluster %s is %s: it has no address", c->name, ec->shown);
	if (ip) {
		buf_addf(out, "%s\n", head);
		return 0;
	}
	if (port > 0) {
		if (!task_ports_has(c->ports, port))
			return error("port %ld is not open on cluster %s (%s); launch a task with "
			             "'resources.ports: [%ld]' (or -p %ld) on it",
			             port, c->name, *c->ports ? c->ports : "no ports", port, port);
		buf_addf(out, "%s:%ld\n", head, port);
		return 0;
	}
	if (!*p)
		info("cluster %s has no ports open (resources.ports)", c->name);
	while (*p) {
		size_t len = strcspn(p, ",");

		buf_addf(out, "%.*s: %s:%.*s\n", (int)len, p, head, (int)len, p);
		p += len + (p[len] == ',');
	}
	return 0;
}

int cmd_status(int argc, char **argv)
{
	struct st_db *ldb;
	struct eng_cluster *v = NULL;
	struct buf out = BUF_INIT(0);
	char **names = xcalloc((size_t)argc, sizeof(*names));
	size_t n = 0, nnames = 0;
	int as_json = 0, verbose = 0, ip = 0, endpoints = 0, a, r, missing;
	unsigned flags = 0;
	long port = 0;

	for (a = 1; a < argc; a++) {
		const char *arg = argv[a];

		if (!strcmp(arg, "--json")) {
			as_json = 1;
		} else if (!strcmp(arg, "-r") || !strcmp(arg, "--refresh")) {
			flags |= ENG_STATUS_REFRESH;
		} else if (!strcmp(arg, "-v") || !strcmp(arg, "--verbose")) {
			verbose = 1;
		} else if (!strcmp(arg, "--ip")) {
			ip = 1;
		} else if (!strcmp(arg, "--endpoints")) {
			endpoints = 1;
		} else if (!strcmp(arg, "--endpoint") || !strncmp(arg, "--endpoint=", 11)) {
			const char *pv = arg[10] == '=' ? arg + 11 : a + 1 < argc ? argv[++a] : "";

			if (parse_long(pv, 1, 65535, &port))
				return free(names), usage_error("status",
				                                "--endpoint needs a port "
				                                "(1-65535), not '%s'",
				                                pv);
		} else if (!strcmp(arg, "-a") || !strcmp(arg, "--all-users") ||
		           !strcmp(arg, "-u")) {
			continue; /* every cluster here is this user's */
		} else if (arg[0] == '-') {
			return free(names), usage_error("status", "unknown option '%s'", arg);
		} else {
			names[nnames++] = argv[a];
		}
	}
	if ((ip || endpoints || port) && nnames != 1)
		return free(names), usage_error("status", "%s needs exactly one cluster",
		                                ip          ? "--ip"
		                                : endpoints ? "--endpoints"
		                                            : "--endpoint");
	if (open_ldb(&ldb)) {
		free(names);
		return EXIT_FAIL;
	}
	missing = find_clusters(ldb, names, nnames, flags, &v, &n);
	free(names);
	if (missing < 0) {
		st_close(ldb);
		return EXIT_FAIL;
	}
	r = 0;
	if (ip || endpoints || port)
		r = n == 1 ? status_one(&v[0], ip, port, &out) : -1;
	else if (as_json)
		status_json(v, n, &out);
	else if (!n && !missing)
		buf_adds(&out, "No existing clusters.\n");
	else if (n)
		status_table(v, n, verbose, &out);
	if (print_out(out.p, out.len))
		r = -1;
	buf_release(&out);
	eng_clusters_free(v, n);
	st_close(ldb);
	return r || missing ? EXIT_FAIL : EXIT_OK;
}

/* ---- queue --------------------------------------------------------------------------- */

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
	int k;

	buf_addf(out, "%-5s %-16s %-10s %-10s %-10s %-10s %-20s %-13s %-10s %s\n", "ID", "NAME",
	         "USER", "SUBMITTED", "STARTED", "DURATION", "RESOURCES", "STATUS", "EXIT CODES",
	         "LOG");
	for (i = 0; i < n; i++) {
		const struct eng_job *jb = &v[i];
		struct buf codes = BUF_INIT(0);
		char sub[32], started[32], dur[32], res[64];

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
		buf_addf(out, "%-5lld %-16.16s %-10.10s %-10s %-10s %-10s %-20s %-13s %-10s %s\n",
		         (long long)jb->id, *jb->name ? jb->name : "-", user, sub, started, dur,
		         res, job_status_name(jb->status), codes.len ? codes.p : "-",
		         jb->nranks ? jb->ranks[0].log_dir : "");
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
	if (open_ldb(&ldb))
		return free(names), EXIT_FAIL;
	missing = find_clusters(ldb, names, nnames, 0, &cs, &nc);
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

/* ---- logs, cancel -------------------------------------------------------------------- */

int cmd_logs(int argc, char **argv)
{
	struct st_db *ldb;
	const char *name = NULL;
	int64_t *ids = xcalloc((size_t)argc, sizeof(*ids));
	size_t nids = 0, i;
	long tail = -1, jid;
	int follow = 1, only_status = 0, sync_down = 0, a, rc = EXIT_OK, status;

	for (a = 1; a < argc; a++) {
		const char *arg = argv[a];

		if (!strcmp(arg, "-s") || !strcmp(arg, "--sync-down")) {
			sync_down = 1;
		} else if (!strcmp(arg, "--follow")) {
			follow = 1;
		} else if (!strcmp(arg, "--no-follow")) {
			follow = 0;
		} else if (!strcmp(arg, "--status")) {
			only_status = 1;
		} else if (!strcmp(arg, "--tail") || !strncmp(arg, "--tail=", 7)) {
			const char *v = arg[6] == '=' ? arg + 7 : a + 1 < argc ? argv[++a] : "";

			if (parse_long(v, 0, 1L << 40, &tail))
				return free(ids), usage_error("logs",
				                              "--tail needs a number of lines, "
				                              "not '%s'",
				                              v);
		} else if (arg[0] == '-') {
			return free(ids), usage_error("logs", "unknown option '%s'", arg);
		} else if (!name) {
			name = arg;
		} else if (!parse_long(arg, 1, INT64_MAX, &jid)) {
			ids[nids++] = jid;
		} else {
			return free(ids), usage_error("logs", "'%s' is not a job id", arg);
		}
	}
	if (!name)
		return free(ids), usage_error("logs", "expected a cluster name");
	if (nids > 1 && !sync_down)
		return free(ids), usage_error("logs", "one job at a time (several with "
		                                      "--sync-down)");
	if (open_ldb(&ldb))
		return free(ids), EXIT_FAIL;
	if (sync_down) {
		for (i = 0; i < (nids ? nids : 1); i++) {
			struct buf where = BUF_INIT(0);

			if (eng_sync_down(ldb, name, nids ? ids[i] : 0, &where))
				rc = EXIT_FAIL;
			else
				printf("logs synced to %s\n", where.p);
			buf_release(&where);
		}
	} else if (only_status) {
		int64_t job = nids ? ids[0] : eng_latest_job(ldb, name);

		fflush(stdout);
		rc = eng_logs(ldb, name, job, ENG_LOGS_STATUS, 0, 1, &status);
		/* SkyPilot's form: scripts parse it. */
		if (rc != EXIT_JOB_NOT_FOUND && rc != EXIT_FAIL)
			printf("Job %lld: %s\n", (long long)job, job_status_name(status));
	} else {
		fflush(stdout);
		rc = eng_logs(ldb, name, nids ? ids[0] : 0,
		              follow ? ENG_LOGS_FOLLOW : ENG_LOGS_PRINT, tail, 1, NULL);
	}
	free(ids);
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
	if (!r && all) {
		printf("cancelled all jobs on cluster %s\n", name);
	} else if (!r && res.n) {
		struct buf which = BUF_INIT(0);
		size_t i;

		for (i = 0; i < res.n; i++)
			buf_addf(&which, "%s%lld", i ? ", " : "", (long long)res.jobs[i]);
		printf("cancelled job%s %s on cluster %s\n", res.n > 1 ? "s" : "", which.p, name);
		buf_release(&which);
	}
	eng_cancelled_release(&res);
	free(ids);
	st_close(ldb);
	return rc;
}

/* ---- down, stop, start, autostop, ssh ------------------------------------------------ */

/*
 * The clusters of a down, stop, start or autostop: names and globs, or every cluster (-a;
 * but those of managed jobs and the managed-jobs controller's). Each name or glob that matches none
 * is reported (*missing).
 */
static int pick_many(struct st_db *ldb, char **names, size_t n, int all, struct eng_cluster **v,
                     size_t *nv, int *missing)
{
	size_t i, kept = 0;

	*missing = find_clusters(ldb, names, n, 0, v, nv);
	if (*missing < 0)
		return -1;
	if (!all)
		return 0;
	if (!*nv)
		printf("No existing clusters.\n");
	for (i = 0; i < *nv; i++) {
		int ctl = starts_with((*v)[i].c.name, JOBS_CONTROLLER_CLUSTER_PREFIX);

		if (ctl || eng_managed_cluster((*v)[i].c.name)) {
			if (ctl)
				info("cluster %s is the managed-jobs controller: left alone (name it to "
				     "take it down)",
				     (*v)[i].c.name);
			else
				info("cluster %s belongs to managed jobs: left alone ('skiff jobs "
				     "cancel' releases it)",
				     (*v)[i].c.name);
			cluster_free(&(*v)[i].c);
			cluster_nodes_free((*v)[i].nodes, (*v)[i].nnodes);
			continue;
		}
		(*v)[kept++] = (*v)[i];
	}
	*nv = kept;
	return 0;
}

/* The flags down, stop, start and autostop share; 1 if taken, -1 on a bad value. */
struct life_opts {
	int all, purge, idle_minutes, down, cancel;
	const char *wait_for;
	char **names;
	size_t nnames;
};

static int life_arg(const char *cmd, int argc, char **argv, int *a, struct life_opts *o,
                    int autostop_flags)
{
	const char *arg = argv[*a];
	long minutes;

	if (!strcmp(arg, "-y") || !strcmp(arg, "--yes"))
		return 1;
	if (!strcmp(arg, "-a") || !strcmp(arg, "--all")) {
		o->all = 1;
		return 1;
	}
	if (!autostop_flags)
		return 0;
	if (!strcmp(arg, "-i") || !strcmp(arg, "--idle-minutes") ||
	    !strcmp(arg, "--idle-minutes-to-autostop")) {
		if (*a + 1 >= argc ||
		    parse_long(argv[*a + 1], 0, TASK_AUTOSTOP_MINUTES_MAX, &minutes))
			return usage_error(cmd, "%s needs minutes (0..%d)", arg,
			                   TASK_AUTOSTOP_MINUTES_MAX),
			       -1;
		o->idle_minutes = (int)minutes;
		++*a;
		return 1;
	}
	if (!strcmp(arg, "--down")) {
		o->down = 1;
		return 1;
	}
	if (!strcmp(arg, "--wait-for")) {
		if (*a + 1 >= argc || !task_wait_for_valid(argv[*a + 1]))
			return usage_error(cmd, "--wait-for needs jobs_and_ssh, jobs or none"), -1;
		o->wait_for = argv[++*a];
		return 1;
	}
	return 0;
}

static int down_one(struct st_db *ldb, const char *name, unsigned how)
{
	int keep = (how & ENG_DOWN_STOP) != 0;
	int64_t busy = keep ? 0 : eng_managed_active(ldb, name);
	int r;

	/* A jobs controller's cluster: its controller says (it holds the jobs' state). */
	if (!keep && !(how & ENG_DOWN_PURGE) && starts_with(name, JOBS_CONTROLLER_CLUSTER_PREFIX) &&
	    (busy = jobs_remote_active(ldb, name)) < 0) {
		error("the jobs controller on cluster %s does not answer: it may have managed "
		      "jobs that have not ended; take it down anyway with --purge",
		      name);
		return EXIT_FAIL;
	}
	if (busy && !(how & ENG_DOWN_PURGE)) {
		error("cluster %s runs %lld managed job(s) that have not ended: 'skiff jobs "
		      "cancel' them, or take it down anyway with --purge (their cluster jobs "
		      "are cancelled with it)",
		      name, (long long)busy);
		return EXIT_FAIL;
	}
	if (!keep && jobs_remote_stop(ldb, name) && !(how & ENG_DOWN_PURGE)) {
		error("cluster %s: its jobs controller could not be stopped; take it down anyway "
		      "with --purge",
		      name);
		return EXIT_FAIL;
	}
	r = eng_down(ldb, name, how);
	if (r == ENG_DOWN_BY_OTHER)
		printf("cluster %s terminated (by another command meanwhile)\n", name);
	else if (!r)
		printf("cluster %s %s\n", name, keep ? "stopped" : "terminated");
	return r < 0 ? EXIT_FAIL : EXIT_OK;
}

/*
 * The clusters o names, or every one with -a (one or the other: else a usage error), from
 * the launcher db (*ldb, opened). EXIT_OK with *v[*n] (a name matching none is said, and
 * counted in *missing), or the exit code with nothing open.
 */
static int pick_named(const char *cmd, const struct life_opts *o, struct st_db **ldb,
                      struct eng_cluster **v, size_t *n, int *missing)
{
	if (o->all && o->nnames)
		return usage_error(cmd, "-a takes no cluster names");
	if (!o->all && !o->nnames)
		return usage_error(cmd, "expected a cluster name (or -a for all)");
	if (open_ldb(ldb))
		return EXIT_FAIL;
	if (pick_many(*ldb, o->names, o->nnames, o->all, v, n, missing) < 0) {
		eng_clusters_free(*v, *n);
		st_close(*ldb);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static int many(int argc, char **argv, const char *cmd, unsigned how)
{
	struct life_opts o = {0};
	struct eng_cluster *v = NULL;
	struct st_db *ldb;
	size_t n = 0, i;
	int a, r, rc = EXIT_OK, missing;

	o.names = xcalloc((size_t)argc, sizeof(*o.names));
	for (a = 1; a < argc; a++) {
		r = life_arg(cmd, argc, argv, &a, &o, 0);
		if (r < 0)
			return free(o.names), EXIT_USAGE;
		if (r)
			continue;
		if (!(how & ENG_DOWN_STOP) &&
		    (!strcmp(argv[a], "-p") || !strcmp(argv[a], "--purge")))
			o.purge = 1;
		else if (argv[a][0] == '-')
			return free(o.names), usage_error(cmd, "unknown option '%s'", argv[a]);
		else
			o.names[o.nnames++] = argv[a];
	}
	rc = pick_named(cmd, &o, &ldb, &v, &n, &missing);
	if (rc != EXIT_OK)
		return free(o.names), rc;
	for (i = 0; i < n; i++)
		if (down_one(ldb, v[i].c.name, how | (o.purge ? ENG_DOWN_PURGE : 0)))
			rc = EXIT_FAIL;
	if (missing)
		rc = EXIT_FAIL;
	eng_clusters_free(v, n);
	free(o.names);
	st_close(ldb);
	return rc;
}

int cmd_down(int argc, char **argv)
{
	return many(argc, argv, "down", ENG_DOWN_CONFIRM);
}

int cmd_stop(int argc, char **argv)
{
	return many(argc, argv, "stop", ENG_DOWN_STOP);
}

/* After start or alone: -i/--down/--wait-for set (or --cancel turns off) autostop. */
static int set_autostop(struct st_db *ldb, const char *name, const struct life_opts *o)
{
	int minutes = o->cancel ? -1 : o->idle_minutes >= 0 ? o->idle_minutes : o->down ? 1 : 5;

	if (eng_autostop(ldb, name, minutes, o->down, o->wait_for))
		return EXIT_FAIL;
	if (minutes >= 0)
		printf("autostop for %s: %s after %d idle minute(s)\n", name,
		       o->down ? "down" : "stop", minutes);
	else
		printf("autostop for %s cancelled\n", name);
	return EXIT_OK;
}

/* start and autostop: the same flags, the same choice of clusters. */
static int life_many(int argc, char **argv, const char *cmd, int start)
{
	struct life_opts o = {0};
	struct eng_cluster *v = NULL;
	struct st_db *ldb;
	size_t n = 0, i;
	int a, r, rc = EXIT_OK, missing;

	o.idle_minutes = -1;
	o.names = xcalloc((size_t)argc, sizeof(*o.names));
	for (a = 1; a < argc; a++) {
		r = life_arg(cmd, argc, argv, &a, &o, 1);
		if (r < 0)
			return free(o.names), EXIT_USAGE;
		if (r)
			continue;
		if (!start && !strcmp(argv[a], "--cancel"))
			o.cancel = 1;
		else if (start && (!strcmp(argv[a], "-f") || !strcmp(argv[a], "--force") ||
		                   !strcmp(argv[a], "-r") || !strcmp(argv[a], "--retry-until-up")))
			continue; /* a start always brings every node up, or fails saying why */
		else if (argv[a][0] == '-')
			return free(o.names), usage_error(cmd, "unknown option '%s'", argv[a]);
		else
			o.names[o.nnames++] = argv[a];
	}
	if (o.cancel && (o.idle_minutes >= 0 || o.down || o.wait_for))
		return free(o.names),
		       usage_error(cmd, "--cancel takes no -i, --down or --wait-for");
	rc = pick_named(cmd, &o, &ldb, &v, &n, &missing);
	if (rc != EXIT_OK)
		return free(o.names), rc;
	for (i = 0; i < n; i++) {
		const char *name = v[i].c.name;

		if (!start && o.all && v[i].c.status != CLUSTER_UP)
			continue; /* -a: a stopped cluster has nothing to stop */
		if (start) {
			/* -a: the stopped ones; a named one that is UP is started again anyway. */
			if (o.all && v[i].c.status != CLUSTER_STOPPED)
				continue;
			if (eng_start(ldb, name)) {
				rc = EXIT_FAIL;
				continue;
			}
			printf("cluster %s started\n", name);
			if (o.idle_minutes < 0 && !o.down && !o.wait_for)
				continue;
		}
		if (set_autostop(ldb, name, &o))
			rc = EXIT_FAIL;
	}
	if (missing)
		rc = EXIT_FAIL;
	eng_clusters_free(v, n);
	free(o.names);
	st_close(ldb);
	return rc;
}

int cmd_start(int argc, char **argv)
{
	return life_many(argc, argv, "start", 1);
}

int cmd_autostop(int argc, char **argv)
{
	return life_many(argc, argv, "autostop", 0);
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
