#ifndef SKIFF_CMD_LAUNCHER_H
#define SKIFF_CMD_LAUNCHER_H

/* What the launcher commands (cmd/launch.c, cmd/cluster.c) share. */

#include <stddef.h>
#include <stdint.h>

#include "bootstrap/launch/cluster.h"
#include "lib/task.h"
#include "state/launcher.h"

/*
 * Set by a managed job's launch worker (cmd/jobs_worker.c) around cmd_launch(): which task
 * of a pipeline file to run, its stable SKYPILOT_TASK_ID, the CPUs a task that declares
 * none reserves, and (out) the cluster job id it was submitted as. NULL otherwise.
 */
struct lc_managed {
	int task_index;
	const char *task_id;
	double default_cpus;
	int64_t job; /* out */
};
extern struct lc_managed *lc_managed;

/*
 * The lock that serialises what changes one cluster (launch and exec up to their submit,
 * down, stop, start, autostop): waits for the holder, saying once who it is. Returns the
 * fd to give to lock_release() (lib/lock.h), or a negative error (printed). Never taken
 * twice by one process (flock: it would wait for itself).
 */
int lc_lock_cluster(const char *name, const char *what);
/* A cluster's live view (runners for its booked nodes). */
int lc_open_cluster(struct st_db *ldb, const struct cluster *c, struct clive *cl);
/* Loads cluster `name` and opens it; prints an error naming it when it does not exist. */
int lc_load(struct st_db *ldb, const char *name, struct cluster *c, struct clive *cl);
/* "2x[cpus=4, H100:1]"-style display text of a task's resources. */
void lc_resources_text(const struct task *t, int nodes, char *out, size_t size);
/* Sets autostop on every node (and in the launcher db); minutes < 0 cancels. */
int lc_set_autostop(struct st_db *ldb, struct clive *cl, int minutes, int down);
/*
 * Streams a cluster job's logs (all ranks, prefixed when more than one) and returns the
 * exit code `logs` gives: 0, 100, 101, 102, 103.
 */
int lc_follow_logs(struct st_db *ldb, struct clive *cl, int64_t job, int follow, long tail);
/*
 * lc_follow_logs(follow) of a job whose ranks cl_submit_follow() submitted and follows:
 * f holds one follower per rank (pid > 0); their processes, fds and bytes are taken over.
 */
int lc_follow_submitted(struct st_db *ldb, struct clive *cl, int64_t job, struct cl_follower *f);
/*
 * The cluster's jobs as a table or a JSON list (aggregated over ranks). Returns 0, 1 when
 * some node did not answer (what is known is still in out), or -1 on an error.
 */
int lc_queue(struct st_db *ldb, struct clive *cl, int as_json, int skip, struct buf *out);
/*
 * Brings every rank's log dir of a job back to ~/sky_logs/CLUSTER/JOB/rank-N (appends
 * that parent path to where).
 */
int lc_sync_down(struct st_db *ldb, struct clive *cl, int64_t job, struct buf *where);
/*
 * A cluster job whose ranks' ids are not all recorded (lc_settle_submit()):
 *   LC_SUBMIT_DONE     every rank is known (cj->node_job_ids updated), or the job was
 *                      settled: cj->final_status and cj->reason say how
 *   LC_SUBMITTING      its launcher is still submitting it: INIT, not to be judged
 *   LC_SUBMIT_UNKNOWN  its launcher is gone and a node could not be asked (printed)
 * A job cut short mid-submit is settled by asking each rank's node by its key: every rank
 * there, their ids are recorded; one missing, the ranks are cancelled by key (one still on
 * its way never starts) and the job is FAILED_DRIVER with the reason.
 */
enum { LC_SUBMIT_DONE = 0, LC_SUBMITTING, LC_SUBMIT_UNKNOWN };
/* How many ranks a node_job_ids text names ("17,3,5": 3; "": 0). */
int lc_ranks_known(const char *node_job_ids);
int lc_settle_submit(struct st_db *ldb, struct clive *cl, struct cluster_job *cj);
/* Starts the detached gang watcher of a multi-node job (first failure stops the rest). */
void lc_start_gang_watch(const char *cluster, int64_t job);

#endif
