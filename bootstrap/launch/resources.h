#ifndef SKIFF_RESOURCES_H
#define SKIFF_RESOURCES_H

/*
 * A task's resource alternatives against the nodes that would run it, as pure functions
 * (tests/unit/test-resources.c): what a job asks a node for, whether that fits a node's
 * capacity, and how it reads in `status`. The launcher tries the alternatives in the
 * order written (`ordered`: the user's preference; `any_of`: any will do, and with no
 * prices to rank them by, the order written is as good as any), and takes the first
 * whose infra gives it nodes that fit.
 */

#include <stddef.h>

#include "lib/task.h"

/* What a job asks one node for when a task says nothing about CPUs. */
#define ENG_DEFAULT_CPUS TASK_DEFAULT_CPUS

/* A job's ask, or a node's capacity (its supervisor's `status`: cpus, memory, gpus). */
struct eng_res {
	double cpus;
	double memory; /* GiB */
	int gpus;
};

/*
 * What a job asks of each node under alternative res (NULL: nothing written):
 * default_cpus when it names no CPUs, memory per CPU multiplied out, a fraction of a GPU
 * as a whole one.
 */
struct eng_res eng_job_ask(const struct task_resources *res, double default_cpus);

/*
 * The first of nodes[0..n) that ask does not fit in, or -1 when it fits in every one. A
 * node fits what its whole capacity holds (what runs there now only delays a job).
 */
int eng_res_misfit(const struct eng_res *ask, const struct eng_res *nodes, size_t n);

/* "2x[cpus=4, mem=16, H100:1]": alternative res (NULL: the defaults) on `nodes` nodes. */
void eng_resources_text(const struct task_resources *res, int nodes, char *out, size_t size);

#endif
