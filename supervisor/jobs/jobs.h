#ifndef SKIFF_SUP_JOBS_H
#define SKIFF_SUP_JOBS_H

/*
 * The launcher's daemons and what the managed-jobs commands share with them: `skiff jobs
 * ...` (cmd/jobs.c), the controller (supervisor/jobs/controller.c), its workers
 * (supervisor/jobs/worker.c), and the gang watcher (supervisor/jobs/gang.c); their
 * decisions are in supervisor/jobs/policy.h. docs/managed-jobs.md is the design note.
 *
 *   $SKIFF_HOME/jobs/controller.lock   flock()ed by the running controller; holds its pid
 *   $SKIFF_HOME/jobs/controller.log    the controller's own log
 *   $SKIFF_HOME/jobs/logs/ID.log       one job's launch and cleanup output, its transitions
 */

#include <stdint.h>

#include "state/db.h"
#include "state/jobs.h"

#define JOBS_POOL_CLUSTER "skiff-jobs" /* the shared local cluster (docs/managed-jobs.md) */

struct jobs_paths {
	char *dir, *lock, *log, *logs;
};

/* Paths under $SKIFF_HOME/jobs (created 0700); NULL (printed) without a home. */
const struct jobs_paths *jobs_paths(void);
/* The per-job log path (caller frees). */
char *jobs_job_log(int64_t id);

/*
 * Makes sure a controller runs and looks at the table now: signals the running one
 * (SIGUSR1), else starts one (`skiff __jobs-controller`, own session, detached). Returns
 * 0 once it is signalled or started.
 */
int jobs_controller_kick(void);
/* The running controller's pid, or 0. */
int jobs_controller_pid(void);

/* The daemons' entry points: `skiff __jobs-controller`, `__jobs-worker`, `__gang`. */
int jobs_controller_main(int argc, char **argv);
int jobs_worker_main(int argc, char **argv);
int gang_main(int argc, char **argv);

/* Long integer from the environment within [min, max], else def. */
long jobs_env_long(const char *name, long def, long min, long max);

/* Controller limits (computed, or overridden by SKIFF_JOBS_MAX_LAUNCHING/RUNNING). */
struct jobs_limits {
	int max_launching, max_running;
	int cores;
	long long mem_bytes;
	long long job_cost_bytes; /* the per-running-job cost the running limit is based on */
};
void jobs_limits_compute(struct jobs_limits *l);

/* Cluster a job's current task launches on: the pool, or skiff-job-ID[-TASK-RECOVERY]. */
void jobs_cluster_name(const struct mjob *j, int pool, char *out, size_t size);
/* 1 when jobs on infra go to the shared local pool (local infra, unless turned off). */
int jobs_use_pool(const char *infra);

#endif
