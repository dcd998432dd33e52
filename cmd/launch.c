/*
 * `skiff launch` and `skiff exec`: the flags, the task, and one call to the launch engine
 * (bootstrap/launch/engine.h), which does the rest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/launch/engine.h"
#include "cmd/cmd.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/launcher.h"
#include "lib/banned.h"

const char cmd_launch_usage[] =
        "usage: skiff launch [-c NAME] [-d] [-y] [-i IDLE_MIN] [--down] [--wait-for MODE]\n"
        "                    [--infra INFRA] [task flags] [YAML|COMMAND...]\n"
        "\n"
        "Runs a task on a cluster: creates the cluster NAME (or a new one) on INFRA when it\n"
        "does not exist, copies skiff to its nodes, syncs the workdir and file mounts, runs\n"
        "setup on every node and run on num_nodes nodes, and follows the logs. On an\n"
        "existing cluster it re-syncs and runs setup and run again; a stopped one is started\n"
        "first. With no YAML or command (or a task with neither setup nor run) the cluster\n"
        "is brought up and synced, and no job is made: 'skiff ssh NAME' to work on it.\n"
        "\n"
        "  -c, --cluster NAME   the cluster (default: a new name)\n"
        "  -d, --detach-run, --async\n"
        "                       submit and return; do not follow the logs\n"
        "  -y, --yes            do not ask (skiff never asks; accepted for SkyPilot scripts)\n"
        "  -i, --idle-minutes-to-autostop N   stop the cluster after N idle minutes\n"
        "  --down               tear the cluster down when idle (with -i; alone: 1 minute)\n"
        "  --wait-for MODE      what keeps it busy: jobs_and_ssh (default), jobs, none\n"
        "  --infra INFRA        local (default), ssh/POOL, podman[/POOL], docker[/POOL],\n"
        "                       k8s[/CONTEXT[/NAMESPACE]], slurm[/PARTITION]\n"
        "  --dryrun             print the plan (cluster, infra, nodes, resources) and stop\n"
        "  --no-setup           on an existing cluster, do not run setup again\n"
        "  --fast               on an existing cluster, skip setup and file mounts (the\n"
        "                       workdir is still synced)\n"
        "  -r, --retry-until-up when no node can be had, retry (5 s, doubling to 60 s)\n"
        "                       until one can, instead of failing\n"
        "  --clone-disk-from C  accepted and ignored: only a cloud clones a disk\n"
        "\n"
        "Task flags (override the YAML): --env K=V, --env-file F, --secret K=V,\n"
        "--secret-file F, --num-nodes N, --cpus N[+], --memory N[+], --gpus NAME:N,\n"
        "--workdir DIR, -n NAME, --config FILE|KEY=VALUE (a config layer, docs/config.md);\n"
        "resource flags --image-id, -t, --cloud, --region, --zone,\n"
        "--disk-size, --disk-tier, --network-tier, -p/--ports, --use-spot/--no-use-spot\n"
        "(validated; the infra says which it cannot honour). See 'skiff check --help'.\n"
        "\n"
        "The exit status is the job's, as for 'skiff logs' (0, 100 failed, 103 cancelled),\n"
        "or 0 with --detach-run once it is submitted.\n";

const char cmd_exec_usage[] =
        "usage: skiff exec [-d] [--dryrun] [task flags] [-c] CLUSTER YAML|COMMAND...\n"
        "\n"
        "Runs a task on an existing cluster without setup: syncs the workdir (not the file\n"
        "mounts) and runs the task's run step, then follows the logs (as 'skiff launch'\n"
        "does). A stopped cluster is refused: start it first.\n";

struct launch_opts {
	const char *cluster;
	const char *infra;
	int detach;
	int idle_minutes; /* -1: not given */
	int down;
	const char *wait_for; /* NULL: not given */
	int exec;
	int dryrun, no_setup, fast, retry_until_up;
};

static int parse_launch_args(int argc, char **argv, struct launch_opts *lo,
                             struct task_overrides *ov, int *first)
{
	const char *cmd = lo->exec ? "exec" : "launch";
	int i, r;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		long v;

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1]) {
			/* exec CLUSTER: options may come before or after the cluster name. */
			if (lo->exec && !lo->cluster) {
				lo->cluster = a;
				continue;
			}
			break;
		}
		if (!strcmp(a, "-c") || !strcmp(a, "--cluster")) {
			if (++i >= argc)
				return usage_error(cmd, "%s needs a cluster name", a);
			if (lo->cluster && lo->exec)
				return usage_error(cmd, "the cluster is named twice ('%s', '%s')",
				                   lo->cluster, argv[i]);
			lo->cluster = argv[i];
		} else if (!strcmp(a, "-d") || !strcmp(a, "--detach-run") ||
		           !strcmp(a, "--async")) {
			/* --async: SkyPilot returns once its API server has the request; there is
			 * no server here, and the nearest is to return once submitted. */
			lo->detach = 1;
		} else if (!strcmp(a, "--dryrun")) {
			lo->dryrun = 1;
		} else if (!lo->exec && !strcmp(a, "--no-setup")) {
			lo->no_setup = 1;
		} else if (!lo->exec && !strcmp(a, "--fast")) {
			lo->fast = 1;
		} else if (!lo->exec && (!strcmp(a, "-r") || !strcmp(a, "--retry-until-up"))) {
			lo->retry_until_up = 1;
		} else if (!lo->exec && !strcmp(a, "--clone-disk-from")) {
			if (++i >= argc)
				return usage_error(cmd, "%s needs a cluster name", a);
			warning("--clone-disk-from is ignored: only a cloud clones a disk (the "
			        "nodes here keep their own)");
		} else if (!strcmp(a, "-y") || !strcmp(a, "--yes")) {
			continue;
		} else if (!lo->exec &&
		           (!strcmp(a, "-i") || !strcmp(a, "--idle-minutes-to-autostop"))) {
			if (++i >= argc || parse_long(argv[i], 0, TASK_AUTOSTOP_MINUTES_MAX, &v))
				return usage_error("launch", "%s needs minutes (0..%d)", a,
				                   TASK_AUTOSTOP_MINUTES_MAX);
			lo->idle_minutes = v ? (int)v : 1; /* as SkyPilot: 0 means 1 */
		} else if (!lo->exec && !strcmp(a, "--down")) {
			lo->down = 1;
		} else if (!lo->exec && !strcmp(a, "--wait-for")) {
			if (++i >= argc || !task_wait_for_valid(argv[i]))
				return usage_error("launch", "%s needs jobs_and_ssh, jobs or none",
				                   a);
			lo->wait_for = argv[i];
		} else if (!lo->exec && (!strcmp(a, "--infra") || starts_with(a, "--infra="))) {
			if (a[7] == '=')
				lo->infra = a + 8;
			else if (++i < argc)
				lo->infra = argv[i];
			if (!lo->infra || !*lo->infra)
				return usage_error("launch",
				                   "--infra needs a value (local, ssh/POOL)");
			/* Said here, before a cluster is named or made. */
			r = cmd_infra_arg(lo->infra);
			if (r)
				return r;
		} else {
			r = task_overrides_arg(ov, argc, argv, &i);
			if (r < 0)
				return EXIT_USAGE;
			if (!r)
				return usage_error(cmd, "unknown option '%s'", a);
			i--;
		}
	}
	*first = i;
	return 0;
}

static int load_task(int argc, char **argv, int i, int exec, struct task_list *tl,
                     const struct task_overrides *ov, struct buf *entry)
{
	struct yerrors errs = YERRORS_INIT;
	int r;

	if (i >= argc && exec)
		return usage_error("exec", "expected a task YAML or a command");
	if (i >= argc) {
		/* As sky launch: a cluster of the flags' resources, workdir synced, no job. */
		task_empty(tl);
	} else if (i == argc - 1 && task_entrypoint_is_yaml(argv[i])) {
		buf_adds(entry, argv[i]);
		r = task_parse_file(tl, argv[i], &errs);
		if (r) {
			yerr_print(&errs, stderr);
			yerr_release(&errs);
			return r == -EINVAL ? EXIT_INVALID : EXIT_FAIL;
		}
	} else {
		for (; i < argc; i++) {
			if (entry->len)
				buf_addch(entry, ' ');
			buf_adds(entry, argv[i]);
		}
		task_from_command(tl, entry->p);
	}
	if (tl->parallel) {
		yerr_release(&errs);
		return usage_error(exec ? "exec" : "launch",
		                   "'%s' is job group '%s' (execution: parallel): its tasks run "
		                   "at once as managed jobs; run it with 'skiff jobs launch %s'",
		                   entry->p, tl->name, entry->p);
	}
	if (tl->n != 1) {
		yerr_release(&errs);
		return usage_error("launch",
		                   "'%s' is a pipeline of %zu tasks: run it with "
		                   "'skiff jobs launch'",
		                   entry->p, tl->n);
	}
	/* The local paths too: a missing one is news before any node is made, not after. */
	if (task_list_apply_overrides(tl, ov, &errs) || task_list_check_required(tl, &errs, 0) ||
	    task_list_check_paths(tl, &errs)) {
		yerr_print(&errs, stderr);
		yerr_release(&errs);
		return EXIT_INVALID;
	}
	yerr_print(&errs, stderr); /* warnings */
	yerr_release(&errs);
	return 0;
}

static int run_task(int argc, char **argv, struct launch_opts *lo)
{
	struct task_overrides ov = TASK_OVERRIDES_INIT;
	struct task_list tl = TASK_LIST_INIT;
	struct buf entry = BUF_INIT(0);
	struct eng_launch req = {0};
	struct eng_launched res;
	struct st_db *ldb = NULL;
	struct cfg_node *config = NULL;
	int i = 0, r, rc = EXIT_FAIL;

	r = parse_launch_args(argc, argv, lo, &ov, &i);
	if (r)
		return r;
	if (lo->exec && !lo->cluster)
		return usage_error("exec", "expected a cluster name");
	r = load_task(argc, argv, i, lo->exec, &tl, &ov, &entry);
	if (!r && config_resolve(&ov, &tl, 0, 0, &config))
		r = EXIT_INVALID;
	if (r) {
		rc = r;
		goto out;
	}
	if (st_launcher_open(0, &ldb))
		goto out;
	req.cluster = lo->cluster;
	req.infra = lo->infra;
	req.task = tl.tasks[0];
	req.entrypoint = entry.p;
	req.exec = lo->exec;
	req.detach = lo->detach;
	req.idle_minutes = lo->idle_minutes;
	req.wait_for = lo->wait_for;
	req.down = lo->down;
	req.no_setup = lo->no_setup;
	req.fast = lo->fast;
	req.retry_until_up = lo->retry_until_up;
	req.config = config;
	if (lo->dryrun) {
		rc = eng_launch_plan(ldb, &req) ? EXIT_FAIL : EXIT_OK;
		goto out;
	}
	r = eng_launch(ldb, &req, &res);
	/* -EINVAL: the cluster name given, or once it is named, an input (a pool file). */
	rc = r == -EINVAL && !*res.cluster ? EXIT_USAGE
	     : r == -EINVAL                ? EXIT_INVALID
	     : r == -E2BIG                 ? EXIT_INVALID /* more than a node has */
	     : r                           ? EXIT_FAIL
	                                   : res.rc;
out:
	st_close(ldb);
	buf_release(&entry);
	task_list_release(&tl);
	task_overrides_release(&ov);
	cfg_free(config);
	return rc;
}

int cmd_launch(int argc, char **argv)
{
	struct launch_opts lo = {.idle_minutes = -1};

	return run_task(argc, argv, &lo);
}

int cmd_exec(int argc, char **argv)
{
	struct launch_opts lo = {.idle_minutes = -1, .exec = 1};

	return run_task(argc, argv, &lo);
}
