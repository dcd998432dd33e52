/*
 * `skiff status | queue | logs | cancel | down | stop | start | autostop | ssh`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/infra/infra_slurm.h"
#include "cmd/cmd.h"
#include "cmd/launcher.h"
#include "lib/json.h"
#include "lib/lock.h"
#include "lib/log.h"
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
        "usage: skiff autostop CLUSTER -i IDLE_MINUTES [--down] | --cancel\n"
        "\n"
        "Sets (or cancels) autostop on every node of the cluster.\n";

const char cmd_ssh_usage[] =
        "usage: skiff ssh CLUSTER [COMMAND...]\n"
        "\n"
        "An interactive shell on the cluster's head node (or runs COMMAND there).\n";

static int open_ldb(struct st_db **ldb)
{
	return st_launcher_open(0, ldb) ? -1 : 0;
}

/* ---- status ------------------------------------------------------------------------ */

/*
 * The status shown for a cluster: the recorded one, or ENDED for a Slurm cluster whose
 * allocation Slurm ended (time limit, preemption, scancel), said once on stderr.
 */
static const char *shown_status(struct st_db *ldb, const struct cluster *c)
{
	struct buf job = BUF_INIT(0), state = BUF_INIT(0);
	int alive = 1;

	if (starts_with(c->infra, "slurm"))
		alive = infra_slurm_cluster_state(ldb, c->name, &job, &state);
	if (!alive)
		warning("cluster %s: its Slurm allocation %s has ended (%s); 'skiff down %s' "
		        "removes it",
		        c->name, job.p, state.p, c->name);
	buf_release(&job);
	buf_release(&state);
	return alive ? cluster_status_name(c->status) : "ENDED";
}

static void status_json(struct st_db *ldb, struct cluster *v, size_t n, struct buf *out)
{
	struct json j;
	size_t i, k;

	json_init(&j, out, 1);
	json_arr_begin(&j);
	for (i = 0; i < n; i++) {
		struct cluster_node *nodes = NULL;
		size_t nn = 0;

		st_cluster_nodes(ldb, v[i].name, &nodes, &nn);
		json_obj_begin(&j);
		json_key(&j, "name");
		json_str(&j, v[i].name);
		json_key(&j, "status");
		json_str(&j, shown_status(ldb, &v[i]));
		json_key(&j, "infra");
		json_str(&j, v[i].infra);
		json_key(&j, "resources");
		json_str(&j, v[i].resources);
		json_key(&j, "num_nodes");
		json_int(&j, v[i].num_nodes);
		json_key(&j, "head");
		json_str(&j, nn ? nodes[0].ip : v[i].head_ip);
		json_key(&j, "nodes");
		json_arr_begin(&j);
		for (k = 0; k < nn; k++) {
			json_obj_begin(&j);
			json_key(&j, "rank");
			json_int(&j, nodes[k].rank);
			json_key(&j, "ip");
			json_str(&j, nodes[k].ip);
			/* What jobs get in SKYPILOT_NODE_IPS: where the node was reached at. */
			json_key(&j, "address");
			json_str(&j, *nodes[k].addr ? nodes[k].addr : nodes[k].ip);
			json_key(&j, "user");
			json_str(&j, nodes[k].user);
			json_key(&j, "port");
			json_int(&j, nodes[k].port);
			json_key(&j, "node");
			json_str(&j, nodes[k].node_key);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_key(&j, "autostop");
		if (v[i].autostop_minutes < 0) {
			json_null(&j);
		} else {
			json_obj_begin(&j);
			json_key(&j, "idle_minutes");
			json_int(&j, v[i].autostop_minutes);
			json_key(&j, "down");
			json_bool(&j, v[i].autostop_down);
			json_obj_end(&j);
		}
		json_key(&j, "launched_at");
		json_double(&j, v[i].launched_at);
		json_key(&j, "last_task");
		json_str(&j, v[i].last_task);
		json_obj_end(&j);
		cluster_nodes_free(nodes, nn);
	}
	json_arr_end(&j);
	json_finish(&j);
}

int cmd_status(int argc, char **argv)
{
	struct st_db *ldb;
	struct cluster *v = NULL;
	struct buf out = BUF_INIT(0);
	size_t n = 0, i, kept = 0;
	int as_json = 0, a, r;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--json"))
			as_json = 1;
		else if (argv[a][0] == '-')
			return usage_error("status", "unknown option '%s'", argv[a]);
	}
	if (open_ldb(&ldb))
		return EXIT_FAIL;
	r = st_cluster_list(ldb, &v, &n);
	if (r) {
		st_close(ldb);
		return EXIT_FAIL;
	}
	/* Named clusters only, when names are given. */
	for (i = 0; i < n; i++) {
		int want = 1;

		for (a = 1; a < argc; a++)
			if (argv[a][0] != '-')
				want = 0;
		for (a = 1; a < argc && !want; a++)
			if (!strcmp(argv[a], v[i].name))
				want = 1;
		if (want) {
			struct cluster tmp = v[kept];

			v[kept] = v[i];
			v[i] = tmp;
			kept++;
		}
	}
	if (as_json) {
		status_json(ldb, v, kept, &out);
	} else if (!kept) {
		buf_adds(&out, "No existing clusters.\n");
	} else {
		buf_addf(&out, "%-20s %-16s %-24s %-8s %-10s %s\n", "NAME", "INFRA", "RESOURCES",
		         "STATUS", "AUTOSTOP", "HEAD");
		for (i = 0; i < kept; i++) {
			char as[32];

			if (v[i].autostop_minutes < 0)
				xsnprintf(as, sizeof(as), "-");
			else
				xsnprintf(as, sizeof(as), "%dm%s", v[i].autostop_minutes,
				          v[i].autostop_down ? " (down)" : "");
			buf_addf(&out, "%-20s %-16s %-24s %-8s %-10s %s\n", v[i].name, v[i].infra,
			         v[i].resources, shown_status(ldb, &v[i]), as, v[i].head_ip);
		}
	}
	r = print_out(out.p, out.len);
	buf_release(&out);
	clusters_free(v, n);
	st_close(ldb);
	return r ? EXIT_FAIL : EXIT_OK;
}

/* ---- queue --------------------------------------------------------------------------- */

int cmd_queue(int argc, char **argv)
{
	struct st_db *ldb;
	struct cluster c;
	struct clive cl;
	struct buf out = BUF_INIT(0);
	const char *name = NULL;
	int as_json = 0, skip = 0, a, rc;

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
	if (lc_load(ldb, name, &c, &cl)) {
		st_close(ldb);
		return EXIT_FAIL;
	}
	/* 1: a node could not be reached (named on stderr): what is known is printed. */
	rc = lc_queue(ldb, &cl, as_json, skip, &out);
	rc = rc < 0 || print_out(out.p, out.len) ? EXIT_FAIL : rc ? EXIT_UNAVAILABLE : EXIT_OK;
	buf_release(&out);
	cluster_free(&c);
	cl_close(&cl);
	st_close(ldb);
	return rc;
}

/* ---- logs, cancel -------------------------------------------------------------------- */

static int64_t latest_job(struct st_db *ldb, const char *cluster)
{
	struct cluster_job *v = NULL;
	size_t n = 0;
	int64_t id = 0;

	if (!st_cluster_job_list(ldb, cluster, &v, &n) && n)
		id = v[n - 1].id;
	cluster_jobs_free(v, n);
	return id;
}

int cmd_logs(int argc, char **argv)
{
	struct st_db *ldb;
	struct cluster c;
	struct clive cl;
	const char *name = NULL;
	long tail = -1, jid = 0;
	int follow = 1, only_status = 0, sync_down = 0, a, rc;

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
	if (lc_load(ldb, name, &c, &cl)) {
		st_close(ldb);
		return EXIT_FAIL;
	}
	if (!jid)
		jid = latest_job(ldb, name);
	if (!jid) {
		error("cluster %s has no jobs", name);
		rc = EXIT_JOB_NOT_FOUND;
	} else if (sync_down) {
		struct buf where = BUF_INIT(0);

		rc = lc_sync_down(ldb, &cl, jid, &where) ? EXIT_FAIL : EXIT_OK;
		if (rc == EXIT_OK)
			printf("logs of job %ld synced to %s\n", jid, where.p);
		buf_release(&where);
	} else if (only_status) {
		rc = lc_follow_logs(ldb, &cl, jid, -1, 0);
	} else {
		rc = lc_follow_logs(ldb, &cl, jid, follow, tail);
	}
	cluster_free(&c);
	cl_close(&cl);
	st_close(ldb);
	return rc;
}

/*
 * A job whose ranks are not all recorded (its launcher is submitting it, or was cut short)
 * is cancelled by key on every rank: a rank that arrives later finds its key cancelled and
 * never runs. 0, or -1 when a node could not be reached (printed).
 */
static int cancel_unsubmitted(struct clive *cl, const struct cluster_job *cj)
{
	int i, r = 0;

	if (cj->final_status >= 0 || lc_ranks_known(cj->node_job_ids) >= cj->num_nodes ||
	    !*cj->submit_key)
		return 0;
	for (i = 0; i < cj->num_nodes && i < (int)cl->n; i++)
		if (cl_cancel_key(&cl->nodes[i], cj->submit_key, i))
			r = -1;
	return r;
}

int cmd_cancel(int argc, char **argv)
{
	struct st_db *ldb;
	struct cluster c;
	struct clive cl;
	struct buf *args;
	const char *name = NULL;
	int all = 0, a, rc = EXIT_OK, any = 0;
	size_t i;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-a") || !strcmp(argv[a], "--all"))
			all = 1;
		else if (!strcmp(argv[a], "-y") || !strcmp(argv[a], "--yes"))
			;
		else if (argv[a][0] == '-')
			return usage_error("cancel", "unknown option '%s'", argv[a]);
		else if (!name)
			name = argv[a];
	}
	if (!name)
		return usage_error("cancel", "expected a cluster name");
	if (open_ldb(&ldb))
		return EXIT_FAIL;
	if (lc_load(ldb, name, &c, &cl)) {
		st_close(ldb);
		return EXIT_FAIL;
	}
	/* One `node cancel` per node, naming all of that node's rank jobs at once. */
	args = xcalloc(cl.n, sizeof(*args));
	for (i = 0; i < cl.n; i++) {
		buf_init(&args[i], 0);
		buf_adds(&args[i], all ? "node cancel --all" : "node cancel");
	}
	if (!all) {
		int named = 0;

		for (a = 1; a < argc; a++) {
			struct cluster_job cj;
			long id;

			if (argv[a][0] == '-' || argv[a] == name)
				continue;
			named = 1;
			if (parse_long(argv[a], 1, INT64_MAX, &id) ||
			    st_cluster_job_get(ldb, name, id, &cj)) {
				error("cluster %s has no job %s", name, argv[a]);
				rc = EXIT_JOB_NOT_FOUND;
				continue;
			}
			if (cancel_unsubmitted(&cl, &cj)) {
				rc = EXIT_FAIL;
				cluster_job_free(&cj);
				continue;
			}
			for (const char *p = cj.node_job_ids; *p && (size_t)any < cl.n * 1000;) {
				char *end;
				long long nid = strtoll(p, &end, 10);
				size_t rank = 0;

				for (const char *q = cj.node_job_ids; q < p; q++)
					rank += *q == ',';
				if (rank < cl.n)
					buf_addf(&args[rank], " %lld", nid);
				any++;
				p = *end == ',' ? end + 1 : end;
			}
			cluster_job_free(&cj);
		}
		if (!named) {
			int64_t last = latest_job(ldb, name);
			struct cluster_job cj;

			if (last && !st_cluster_job_get(ldb, name, last, &cj)) {
				size_t rank = 0;

				if (cancel_unsubmitted(&cl, &cj))
					rc = EXIT_FAIL;
				for (const char *p = cj.node_job_ids; *p; rank++) {
					char *end;
					long long nid = strtoll(p, &end, 10);

					if (rank < cl.n)
						buf_addf(&args[rank], " %lld", nid);
					any++;
					p = *end == ',' ? end + 1 : end;
				}
				cluster_job_free(&cj);
			}
		}
	}
	for (i = 0; i < cl.n; i++) {
		int status;

		if (!all && !strcmp(args[i].p, "node cancel"))
			continue;
		buf_adds(&args[i], " >/dev/null");
		if (cl_exec_skiff(&cl.nodes[i], args[i].p, CL_NODE_CALL_MS, &status) || status == 1)
			rc = EXIT_FAIL;
	}
	if (rc == EXIT_OK)
		printf("cancelled %s on cluster %s\n", all ? "all jobs" : "the job(s)", name);
	for (i = 0; i < cl.n; i++)
		buf_release(&args[i]);
	free(args);
	cluster_free(&c);
	cl_close(&cl);
	st_close(ldb);
	return rc;
}

/* ---- down, stop, start, autostop, ssh ------------------------------------------------ */

static int stop_nodes(struct clive *cl)
{
	size_t i;
	int status, r = 0;

	for (i = 0; i < cl->n; i++) {
		if (!cl->nodes[i].exe)
			continue;
		char *script = xasprintf("%s node cancel --all >/dev/null 2>&1; exec %s node down "
		                         ">/dev/null",
		                         cl->nodes[i].exe, cl->nodes[i].exe);

		if (runner_run(cl->nodes[i].r, script, NULL, CL_NODE_CALL_MS, &status) ==
		    -EHOSTUNREACH)
			r = -EHOSTUNREACH;
		free(script);
	}
	return r;
}

/* Slurm has no stopped allocation: stop and start are refused there (1, printed). */
static int slurm_refuses(const struct cluster *c, const char *cmd)
{
	if (!starts_with(c->infra, "slurm"))
		return 0;
	error("cluster %s is a Slurm allocation: '%s' is not supported there (an allocation "
	      "cannot be paused and resumed); 'skiff down %s' releases it",
	      c->name, cmd, c->name);
	return 1;
}

static int down_one(struct st_db *ldb, const char *name, int keep)
{
	struct cluster c;
	struct clive cl;
	struct buf job = BUF_INIT(0), state = BUF_INIT(0);
	int r, slurm, alive = 1, lock_fd;

	if (st_cluster_get(ldb, name, &c))
		return error("cluster %s does not exist (see 'skiff status')", name), EXIT_FAIL;
	cluster_free(&c);
	/* A launch, exec, start or another down of it finishes first. */
	lock_fd = lc_lock_cluster(name, keep ? "skiff stop" : "skiff down");
	if (lock_fd < 0)
		return EXIT_FAIL;
	if (st_cluster_get(ldb, name, &c)) {
		lock_release(lock_fd);
		if (keep)
			return error("cluster %s was taken down by another command meanwhile",
			             name),
			       EXIT_FAIL;
		printf("cluster %s terminated (by another command meanwhile)\n", name);
		return EXIT_OK;
	}
	cluster_free(&c);
	if (lc_load(ldb, name, &c, &cl)) {
		lock_release(lock_fd);
		return EXIT_FAIL;
	}
	slurm = starts_with(c.infra, "slurm");
	if (slurm && keep) {
		slurm_refuses(&c, "stop");
		r = -ENOTSUP;
		goto done;
	}
	/* An allocation that ended took the supervisors with it: nothing to stop. */
	if (slurm) {
		alive = infra_slurm_cluster_state(ldb, name, &job, &state);
		if (!alive)
			info("cluster %s: its Slurm allocation %s had already ended (%s)", name,
			     job.p, state.p);
	}
	r = alive ? stop_nodes(&cl) : 0;
	if (r && !keep)
		warning("cluster %s: some nodes could not be reached; their bookings are released "
		        "anyway",
		        name);
	if (!keep) {
		struct infra inf;

		/*
		 * local: the node dirs; containers, pods: those skiff started. The cluster is
		 * forgotten only once they are gone, so that `down` can be run again.
		 */
		r = 0;
		if (!infra_parse(c.infra, &inf)) {
			r = infra_teardown(&inf, name);
			if (r)
				error("cluster %s: its %s nodes could not be removed; it is kept, run "
				      "'skiff down %s' again",
				      name, inf.spec, name);
			infra_release(&inf);
		}
		if (!r && slurm && job.len && (r = infra_slurm_release(&cl, job.p)))
			error("cluster %s: its Slurm allocation %s could not be released; it is kept, "
			      "run 'skiff down %s' again",
			      name, job.p, name);
		if (!r && (r = st_cluster_delete(ldb, name)))
			error("cluster %s: its nodes are gone, but it cannot be forgotten (%s); run "
			      "'skiff down %s' again",
			      name, strerror(-r), name);
		if (!r)
			printf("cluster %s terminated\n", name);
	} else {
		struct infra inf;

		/* Containers skiff started stop too (`start` starts them again). */
		r = 0;
		if (!infra_parse(c.infra, &inf)) {
			if ((inf.kind == INFRA_PODMAN || inf.kind == INFRA_DOCKER) &&
			    infra_container_stop(&inf, name))
				r = error("cluster %s: its containers could not be stopped", name);
			infra_release(&inf);
		}
		if (!r)
			r = st_cluster_set_status(ldb, name, CLUSTER_MASK_ALL, CLUSTER_STOPPED);
		if (!r)
			printf("cluster %s stopped\n", name);
	}
done:
	lock_release(lock_fd);
	buf_release(&job);
	buf_release(&state);
	cluster_free(&c);
	cl_close(&cl);
	return r ? EXIT_FAIL : EXIT_OK;
}

/* The clusters the managed-jobs controller launches and releases (cmd/jobs.c). */
static int managed_cluster(const char *name)
{
	long long id;
	char rest;

	return !strcmp(name, "skiff-jobs") || (starts_with(name, "skiff-job-") &&
	                                       sscanf(name, "skiff-job-%lld%c", &id, &rest) >= 1);
}

/* -a: every cluster but those of managed jobs (as `sky down -a` spares its controllers). */
static int all_clusters(struct st_db *ldb, int keep)
{
	struct cluster *v = NULL;
	size_t n = 0, i;
	int rc = EXIT_OK;

	if (st_cluster_list(ldb, &v, &n))
		return EXIT_FAIL;
	for (i = 0; i < n; i++) {
		if (managed_cluster(v[i].name)) {
			info("cluster %s belongs to managed jobs: left alone ('skiff jobs cancel' "
			     "releases it)",
			     v[i].name);
			continue;
		}
		if (down_one(ldb, v[i].name, keep))
			rc = EXIT_FAIL;
	}
	if (!n)
		printf("No existing clusters.\n");
	clusters_free(v, n);
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

/*
 * The containers skiff started for cluster c, started again; c and cl are loaded again
 * (a container may come back with another address). 0, or -1 (printed).
 */
static int start_containers(struct st_db *ldb, struct cluster *c, struct clive *cl)
{
	struct infra inf;
	char *name;
	int r = 0;

	if (infra_parse(c->infra, &inf))
		return 0;
	if (inf.kind != INFRA_PODMAN && inf.kind != INFRA_DOCKER) {
		infra_release(&inf);
		return 0;
	}
	name = xstrdup(c->name);
	if (infra_container_start(&inf, ldb, name))
		r = error("cluster %s: its containers could not be started", name);
	infra_release(&inf);
	cluster_free(c);
	cl_close(cl);
	if (lc_load(ldb, name, c, cl))
		r = -1;
	free(name);
	return r;
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
		struct cluster c;
		struct clive cl;
		size_t i;
		int lock_fd;

		if (argv[a][0] == '-')
			continue;
		lock_fd = lc_lock_cluster(argv[a], "skiff start");
		if (lock_fd < 0 || lc_load(ldb, argv[a], &c, &cl)) {
			lock_release(lock_fd);
			rc = EXIT_FAIL;
			continue;
		}
		if (slurm_refuses(&c, "start") || start_containers(ldb, &c, &cl) ||
		    cl_bootstrap(&cl)) {
			rc = EXIT_FAIL;
		} else {
			for (i = 0; i < cl.n; i++) {
				st_cluster_node_set_exe(ldb, c.name, cl.nodes[i].rank,
				                        cl.nodes[i].exe);
				st_cluster_node_set_addr(ldb, c.name, cl.nodes[i].rank,
				                         cl.nodes[i].addr);
			}
			st_cluster_set_status(ldb, c.name, CLUSTER_MASK_ALL, CLUSTER_UP);
			if (c.autostop_minutes >= 0)
				lc_set_autostop(ldb, &cl, c.autostop_minutes, c.autostop_down);
			printf("cluster %s started\n", c.name);
		}
		lock_release(lock_fd);
		cluster_free(&c);
		cl_close(&cl);
	}
	st_close(ldb);
	return rc;
}

int cmd_autostop(int argc, char **argv)
{
	struct st_db *ldb;
	struct cluster c;
	struct clive cl;
	const char *name = NULL;
	long minutes = -2;
	int down = 0, cancel = 0, a, rc, lock_fd;

	for (a = 1; a < argc; a++) {
		if ((!strcmp(argv[a], "-i") || !strcmp(argv[a], "--idle-minutes")) &&
		    a + 1 < argc) {
			if (parse_long(argv[++a], 0, 525600, &minutes))
				return usage_error("autostop", "bad minutes '%s'", argv[a]);
		} else if (!strcmp(argv[a], "--down")) {
			down = 1;
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
	lock_fd = lc_lock_cluster(name, "skiff autostop");
	if (lock_fd < 0 || lc_load(ldb, name, &c, &cl)) {
		lock_release(lock_fd);
		st_close(ldb);
		return EXIT_FAIL;
	}
	rc = lc_set_autostop(ldb, &cl, (int)minutes, down) ? EXIT_FAIL : EXIT_OK;
	lock_release(lock_fd);
	if (rc == EXIT_OK && minutes >= 0)
		printf("autostop for %s: %s after %ld idle minute(s)\n", name,
		       down ? "down" : "stop", minutes);
	else if (rc == EXIT_OK)
		printf("autostop for %s cancelled\n", name);
	cluster_free(&c);
	cl_close(&cl);
	st_close(ldb);
	return rc;
}

int cmd_ssh(int argc, char **argv)
{
	struct st_db *ldb;
	struct cluster c;
	struct clive cl;
	struct buf cmd = BUF_INIT(0);
	struct runner_io io = {RUNNER_INHERIT, RUNNER_INHERIT, RUNNER_INHERIT};
	pid_t pid;
	int a, status = 0, rc;

	if (argc < 2 || argv[1][0] == '-')
		return usage_error("ssh", "expected a cluster name");
	for (a = 2; a < argc; a++)
		buf_addf(&cmd, "%s%s", a > 2 ? " " : "", argv[a]);
	if (open_ldb(&ldb))
		return EXIT_FAIL;
	if (lc_load(ldb, argv[1], &c, &cl)) {
		st_close(ldb);
		return EXIT_FAIL;
	}
	rc = runner_spawn(cl.nodes[0].r, cmd.len ? cmd.p : NULL, !cmd.len && isatty(0), &io, &pid);
	if (!rc) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	} else {
		rc = EXIT_UNAVAILABLE;
	}
	buf_release(&cmd);
	cluster_free(&c);
	cl_close(&cl);
	st_close(ldb);
	return rc;
}
