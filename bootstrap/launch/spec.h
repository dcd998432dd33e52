#ifndef SKIFF_SPEC_H
#define SKIFF_SPEC_H

/*
 * One rank's submit message (lib/proto.h fields, the node's `submit`): the task's scripts,
 * envs and resources, and SkyPilot's gang envs, as a pure function of what is given
 * (tests/unit/test-spec.c). Ranks 0..nranks-1 run the task (setup, then run); ranks
 * nranks..nsetup-1, the rest of the cluster's nodes, run its setup only, as SkyPilot runs
 * setup on every node. The job starts in ~/sky_workdir, as SkyPilot's job script does
 * ("cwd_optional" when the task brought no workdir: there when it exists), in SkyPilot's
 * shell ("profile": the login profile and conda's first).
 */

#include <stdint.h>

#include "lib/proto.h"
#include "lib/task.h"

struct eng_spec {
	const struct task *task;
	const struct task_resources *res; /* the alternative chosen; NULL: none written */
	const char *cluster;              /* its name (SKIFF_CLUSTER, SKYPILOT_CLUSTER_INFO) */
	const char *infra;                /* its infra spec ("ssh/POOL": cloud ssh, region POOL) */
	const char *const *addrs;         /* the nodes' addresses, rank order, nsetup of them */
	/*
	 * addrs' first nranks and all nsetup joined by newlines (eng_spec_join()), made once
	 * for every rank of a gang, which would otherwise join them once a rank (a 1,000-node
	 * gang: a million addresses); NULL: joined here.
	 */
	const char *ips, *setup_ips;
	int rank, nranks, nsetup;
	int64_t cluster_job;    /* the id `queue` shows (SKYPILOT_INTERNAL_JOB_ID) */
	const char *submit_key; /* the cluster job's; rank r's is KEY/r (node idempotency) */
	const char *task_id;    /* SKYPILOT_TASK_ID */
	int with_setup;         /* the task's setup runs (not exec, --fast, --no-setup) */
	double default_cpus;    /* what a task that names no CPUs reserves */
	/*
	 * The node takes "env_copy" (it runs the launcher's own build): a gang env whose
	 * value another one has already (skiff's names, the setup's address list) is sent as
	 * a copy of it, not again (lib/env.h).
	 */
	int env_copy;
};

/* addrs[0..n) joined by newlines (malloc'd; "" for none). */
char *eng_spec_join(const char *const *addrs, int n);

/* Appends rank s->rank's submit fields to m. */
void eng_build_spec(struct msg *m, const struct eng_spec *s);

/* SkyPilot's SKYPILOT_CLUSTER_INFO for a cluster on infra spec (malloc'd JSON). */
char *eng_cluster_info(const char *cluster, const char *infra);

#endif
