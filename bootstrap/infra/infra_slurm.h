#ifndef SKIFF_INFRA_SLURM_H
#define SKIFF_INFRA_SLURM_H

/*
 * Slurm infra (slurm/PARTITION): a cluster is one Slurm allocation. The provisioner half
 * (salloc, the node list, scancel) is declared in bootstrap/infra/infra.h and called through
 * infra_pick_nodes() and infra_runner(); what the launcher commands need on top of a
 * live cluster is here. See docs/infra-slurm.md.
 *
 * Node rows: node_key "slurm/JOB/NODE" (the allocation's id and the Slurm node name),
 * ip the node's NodeAddr, home the node's own HOME (SKIFF_SLURM_NODE_ROOT, default
 * /tmp/skiff-slurm-UID, then /JOB/NODE).
 *
 * The supervisor of each node lives in a job step of its own (the "host step"), `skiff
 * init` under `srun --overlap` started by the launcher and left running in the
 * background (its srun is this machine's process; pid file and log in
 * $SKIFF_HOME/slurm/CLUSTER/). A daemon started by a short step would be killed when the
 * step ends (proctrack/cgroup) or escape the allocation (proctrack/linuxproc); hosted in
 * a step, the supervisor and every job it runs end with the allocation.
 *
 * Functions print their errors and return 0 or a negative errno unless said otherwise.
 */

#include "bootstrap/infra/live.h"
#include "lib/buf.h"
#include "state/launcher.h"

/* The allocation a node key names: malloc'd job id and node name; -EINVAL if not slurm. */
int infra_slurm_key_parse(const char *node_key, char **job, char **node);

/*
 * Whether allocation `job` still holds its nodes: 1 (RUNNING, CONFIGURING, SUSPENDED),
 * 0 when it ended (state gets Slurm's state: CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL,
 * COMPLETED..., or "GONE" once Slurm forgot it), or a negative errno when Slurm cannot
 * be asked (printed). state may be NULL.
 */
int infra_slurm_state(const char *job, struct buf *state);
/* infra_slurm_state() for a cluster's allocation (from its node rows); job may be NULL. */
int infra_slurm_cluster_state(struct st_db *ldb, const char *cluster, struct buf *job,
                              struct buf *state);

/*
 * After a bootstrap: makes sure each node's supervisor runs in a host step. A node whose
 * host step runs and whose supervisor the bootstrap did not (re)start is left alone;
 * otherwise the supervisor the bootstrap started is stopped, a new host step started
 * and waited for (30 s at most). Jobs keep running only on nodes left alone.
 */
int infra_slurm_hosts_up(struct clive *cl);
/*
 * The number of the cluster's nodes whose supervisor has jobs that have not ended
 * (pending, setting up, running), asked with the supervisor's framed `status` call; a
 * node that does not answer (or whose answer lacks a count) counts as busy. Upgrading
 * skiff restarts the host steps, and Slurm ends a step's processes with it: a busy
 * cluster keeps its skiff until its jobs have ended.
 */
int infra_slurm_busy(struct clive *cl);

/*
 * `down`: removes the nodes' home directories (while the allocation runs), stops the
 * host steps, releases the allocation (scancel) and removes $SKIFF_HOME/slurm/CLUSTER.
 * An allocation that already ended is not an error.
 */
int infra_slurm_release(struct clive *cl, const char *job);

/* `scancel JOB`; 0 also when Slurm no longer knows the job. */
int infra_slurm_cancel(const char *job);

#endif
