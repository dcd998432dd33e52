/* `skiff down | stop | start | autostop`: a cluster's life, for one cluster or many. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/launch/engine.h"
#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "supervisor/jobs/jobs.h"
#include "lib/banned.h"

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

/*
 * The clusters of a down, stop, start or autostop: names and globs, or every cluster (-a;
 * but those of managed jobs and the managed-jobs controller's). Each name or glob that matches none
 * is reported (*missing).
 */
static int pick_many(struct st_db *ldb, char **names, size_t n, int all, struct eng_cluster **v,
                     size_t *nv, int *missing)
{
	size_t i, kept = 0;

	*missing = cmd_find_clusters(ldb, names, n, 0, v, nv);
	if (*missing < 0)
		return -1;
	if (!all)
		return 0;
	if (!*nv)
		printf("No existing clusters.\n");
	for (i = 0; i < *nv; i++) {
		int ctl = starts_with((*v)[i].c.name, JOBS_CONTROLLER_CLUSTER_PREFIX);

		if (ctl || mj_managed_cluster((*v)[i].c.name, NULL)) {
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
	if (cmd_open_ldb(ldb))
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
