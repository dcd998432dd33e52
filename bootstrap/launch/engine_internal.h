#ifndef SKIFF_ENGINE_INTERNAL_H
#define SKIFF_ENGINE_INTERNAL_H

/* What the engine's files (bootstrap/launch/) share. Nothing outside them includes this. */

#include "bootstrap/launch/engine.h"

/* The live view of a loaded cluster (runners for its booked nodes). */
int eng_open_cluster(struct st_db *ldb, const struct cluster *c, struct clive *cl);
/* Autostop on every node (minutes < 0: off), and in the launcher db (autostop.c). */
int eng_set_autostop(struct st_db *ldb, struct clive *cl, int minutes, int down,
                     const char *wait_for);

/*
 * A cluster job whose ranks' ids are not all recorded (eng_settle_submit()):
 *   ENG_SUBMIT_DONE     every rank is known (cj->node_job_ids updated), or the job was
 *                       settled: cj->final_status and cj->reason say how
 *   ENG_SUBMITTING      its launcher is still submitting it: INIT, not to be judged
 *   ENG_SUBMIT_UNKNOWN  its launcher is gone and a node could not be asked (printed)
 * A job cut short mid-submit is settled by asking each rank's node by its key: every rank
 * there, their ids are recorded; one missing, the ranks are cancelled by key (one still on
 * its way never starts) and the job is FAILED_DRIVER with the reason.
 */
enum { ENG_SUBMIT_DONE = 0, ENG_SUBMITTING, ENG_SUBMIT_UNKNOWN };
int eng_settle_submit(struct st_db *ldb, struct clive *cl, struct cluster_job *cj);
/* How many ranks a node_job_ids text names ("17,3,5": 3; "": 0). */
int eng_ranks_known(const char *node_job_ids);

/*
 * Follows a job's logs (mode as eng_logs()); pre, when not NULL, holds one follower per
 * rank started by cl_submit_follow() (pid > 0), taken over. Returns the `logs` exit code.
 */
int eng_follow(struct st_db *ldb, struct clive *cl, int64_t job, int mode, long tail, int fd,
               struct cl_follower *pre, int *status);

/*
 * Starts the detached gang watcher of a multi-node job (first failure stops the rest), the
 * job submitted with key (its row's submit_key).
 */
void eng_start_gang_watch(const char *cluster, int64_t job, const char *key);
/*
 * The environment entry every gang watcher of the cluster carries, and its children
 * (ENG_GANG_ENV=SKIFF_HOME/CLUSTER), by which `down` and `stop` find and end them.
 * Owned by the caller.
 */
#define ENG_GANG_ENV "SKIFF_GANG_CLUSTER"
char *eng_gang_env(const char *cluster);

/*
 * The workdir to every node, and the file mounts unless with_mounts is 0 (exec, --fast);
 * *commit: the workdir's git commit (malloc'd), NULL when it has none (task_sync.c).
 */
int eng_sync_task(struct clive *cl, const struct task *t, int with_mounts, char **commit);

/* The resource alternatives (alternatives.c). */
/* Alternative k of the task (NULL: it has no resources), and how many there are (>= 1). */
const struct task_resources *eng_alternative(const struct task *t, size_t k);
size_t eng_n_alternatives(const struct task *t);
/* The infra alternative res launches on: --infra over what it names, else the default. */
const char *eng_alternative_infra(const struct eng_launch *req, const struct task_resources *res);
/* 0 when alternative res fits the cluster's ranks' nodes, else -ENOSPC with *why said. */
int eng_check_fit(struct clive *cl, const struct eng_launch *req, const struct task_resources *res,
                  struct buf *why);
/* Why each of n alternatives was not taken: n bufs, freed with eng_whys_free(). */
struct buf *eng_whys_new(size_t n);
void eng_whys_free(struct buf *why, size_t n);
/* The last error printed, as why. */
void eng_why_last_error(struct buf *why);
/* The one error when no alternative could be taken, each and why; -ENOSPC. */
int eng_none_taken(const struct eng_launch *req, const struct buf *why);
/* Seconds before --retry-until-up's attempt + 1: 5, doubling up to 60. */
int eng_retry_wait_s(int attempt);

/* eng_lock_cluster() that does not wait: -EBUSY while another holds it. */
int eng_trylock_cluster(const char *name, const char *what);

enum eng_down_flags {
	ENG_DL_KEEP = 1 << 0,         /* stop: the nodes stay booked */
	ENG_DL_HEAD_STOPPED = 1 << 1, /* autostop stopped the head already: the others only */
	ENG_DL_PURGE = 1 << 2,        /* down: forget it even if its nodes cannot be removed */
	ENG_DL_CONFIRM = 1 << 3,      /* down: kept (an error) when a node whose machine stays
	                                 (INFRA_PROCS_STAY) may still run something of it */
};
/* eng_down() of a cluster whose lock the caller holds. */
int eng_down_locked(struct st_db *ldb, const char *name, unsigned flags);

/*
 * What the infra starts again beyond the supervisors (the containers skiff started); c
 * and cl are loaded again (a container may come back with another address). 0, or -1
 * (printed).
 */
int eng_start_nodes(struct st_db *ldb, struct cluster *c, struct clive *cl);

/*
 * The launcher's look at a cluster whose autostop is set (autostop.c): when its head
 * stopped it (or tore it down), the stop or the down is finished on every node and
 * recorded, said on stderr. 0, or -errno (printed); a cluster another command holds is
 * not looked at (_locked: the caller holds its lock).
 */
int eng_autostop_look(struct st_db *ldb, const char *name);
int eng_autostop_look_locked(struct st_db *ldb, const char *name);

#endif
