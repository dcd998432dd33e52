#ifndef SKIFF_ENGINE_H
#define SKIFF_ENGINE_H

/*
 * The launch engine: clusters and the jobs that run on them, as `skiff launch`, `exec`,
 * `status`, `queue`, `logs`, `cancel`, `down`, `stop`, `start`, `autostop` (cmd/) and the
 * managed-jobs controller (supervisor/jobs/) use them. Requests are structs, never argv;
 * results are structs that the caller renders. The only output the engine makes itself
 * is what a launch is for: its step lines on stderr (progress.h), and the job's logs on
 * the fd the caller names. Errors are printed (lib/log.h) and returned as -errno.
 *
 * Concurrency: every call that changes a cluster (launch and exec up to their submit,
 * down, stop, start, autostop) holds the cluster's lock (eng_lock_cluster()); reads
 * (status, queue, logs) take none. A process takes a cluster's lock once at most.
 *
 * The launcher's database is the caller's (opened with st_launcher_open()); the engine
 * keeps nothing between calls.
 */

#include <stddef.h>
#include <stdint.h>

#include "bootstrap/launch/cluster.h"
#include "lib/config.h"
#include "lib/task.h"
#include "state/launcher.h"

/* ---- launch and exec --------------------------------------------------------------- */

struct eng_launch {
	const char *cluster;     /* NULL: a new name (launch only) */
	const char *infra;       /* NULL: the task's resources.infra, else local */
	const struct task *task; /* the task to run, overrides applied (not owned) */
	const char *entrypoint;  /* the YAML path or command, for status and queue */
	int exec;                /* exec: the cluster must exist; no setup, no bootstrap */
	int detach;              /* return once submitted: do not follow the logs */
	int idle_minutes;        /* autostop after this many idle minutes; -1: as it is */
	int down;                /* autodown (with idle_minutes, or alone: one minute) */
	const char *wait_for;    /* what autostop waits for (jobs_and_ssh, jobs, none); NULL:
	                            the default, jobs_and_ssh */
	int log_fd;              /* where the followed logs go (default 1 when 0) */
	int no_setup;            /* launch without the task's setup (--no-setup) */
	int fast;                /* an existing UP cluster: no setup, no file mounts (--fast) */
	int retry_until_up;      /* a new cluster: try again until an alternative launches */
	/* The config in effect (lib/config.h): the nodes of a new cluster honour it (docker
	 * run options, the pod spec, salloc options); NULL: none. Not owned. */
	const struct cfg_node *config;
	/* For the managed-jobs controller; 0 / NULL otherwise. */
	const char *task_id; /* SKYPILOT_TASK_ID; NULL: sky-TIME_CLUSTER_JOB */
	int no_default_cpus; /* a task that declares no CPUs reserves none (else 0.5) */
	int always_submit;   /* a task with neither setup nor run still makes a job (else
	                        none is made: the cluster is only brought up and synced) */
	int quiet;           /* no "Launching" line */
};

struct eng_launched {
	char cluster[128]; /* the cluster it ran on (its new name, when none was given) */
	int64_t job;       /* the cluster job id; 0 when nothing was submitted */
	int rc;            /* followed: the job's exit code as `logs` gives it; else 0 */
};

/*
 * Creates the cluster when a launch names one that does not exist (picks and books
 * nodes), bootstraps its nodes when needed, syncs the workdir and file mounts, submits the
 * task on every rank and, unless detached, follows the job's logs until it ends. A task
 * with nothing to run (no run, and no setup that runs) makes no job (out->job 0) unless
 * always_submit. Returns
 * 0 (the job's outcome is in out->rc), or -errno when it could not be submitted (printed;
 * a cluster created by this call is not left behind).
 */
int eng_launch(struct st_db *ldb, const struct eng_launch *req, struct eng_launched *out);

/*
 * What eng_launch() would do with req, on stdout, doing none of it (--dryrun): the
 * cluster (new, or existing with its status), the alternatives in the order they would
 * be tried, what is synced and what runs where. 0, or -errno (printed: a bad cluster name,
 * exec of a cluster that does not exist).
 */
int eng_launch_plan(struct st_db *ldb, const struct eng_launch *req);

/* ---- the cluster's jobs -------------------------------------------------------------- */

/* One rank of a cluster job, as its node says. */
struct eng_rank {
	int64_t node_job; /* its id on the rank's node; 0: never submitted */
	int status;       /* enum job_status; -1: its node could not be asked */
	int gone;         /* status -1, and the node is gone (runner_node_gone()) */
	int lost;         /* its node answered, without the job: FAILED_DRIVER */
	int exit_code;    /* -1: none yet */
	double submitted_at, started_at, ended_at;
	double cpus, memory;
	int gpus;
	char *log_dir;
};

/* A cluster job: the id users see, and its ranks. */
struct eng_job {
	int64_t id;
	char *name;
	char *entrypoint;
	int status; /* the gang's (gang_status()); -1 unknown */
	double submitted_at, started_at, ended_at;
	char *reason; /* why, when the launcher decided it ("never submitted") */
	char *node_job_ids;
	char *git_commit; /* the workdir's commit when it was submitted; "" none */
	int num_nodes;    /* ranks it was submitted to */
	struct eng_rank *ranks;
	int nranks; /* ranks known (num_nodes once submitted) */
};

void eng_jobs_free(struct eng_job *v, size_t n);

/*
 * The cluster's jobs, oldest first (only those of ids[0..nids) when nids > 0), each with
 * its ranks as the nodes say (skip_finished: only the jobs that have not ended). Outcomes
 * decided now are recorded. Returns 0; 1 when a node could not be reached (its ranks are
 * unknown; the rest is in *out); -errno.
 */
int eng_queue(struct st_db *ldb, const char *cluster, int skip_finished, const int64_t *ids,
              size_t nids, struct eng_job **out, size_t *n);

enum eng_logs_mode { ENG_LOGS_STATUS = -1, ENG_LOGS_PRINT = 0, ENG_LOGS_FOLLOW = 1 };

/*
 * Prints a job's logs to fd (every rank's, each line prefixed with its rank when there
 * are several), following them until the job ends (ENG_LOGS_FOLLOW), or only the gang's
 * status (ENG_LOGS_STATUS: *status). job 0: the latest. tail < 0: everything. Returns the
 * exit code `logs` gives (0, 100, 101, 102, 103) or 4 when a node could not be reached;
 * *status (may be NULL) gets the gang's status, -1 unknown.
 */
int eng_logs(struct st_db *ldb, const char *cluster, int64_t job, int mode, long tail, int fd,
             int *status);

/*
 * Brings every rank's log dir of a job back to ~/sky_logs/CLUSTER/JOB/rank-N; where gets
 * that parent path. 0 or -errno.
 */
int eng_sync_down(struct st_db *ldb, const char *cluster, int64_t job, struct buf *where);
/*
 * The same into dir/rank-N (dir NULL: ~/sky_logs/CLUSTER/JOB, as eng_sync_down()). A dir
 * given is taken as a fresh copy: no sync manifest of it is kept in $SKIFF_HOME/sync.
 */
int eng_sync_down_to(struct st_db *ldb, const char *cluster, int64_t job, const char *dir,
                     struct buf *where);

/* What eng_cancel() did. */
struct eng_cancelled {
	int64_t *jobs; /* the cluster jobs it asked every rank to cancel */
	size_t n;
	int missing; /* named jobs the cluster does not have */
};

/* The cluster's latest job id (the one `logs` shows by default); 0: none. */
int64_t eng_latest_job(struct st_db *ldb, const char *cluster);

/*
 * Cancels jobs on every rank: ids[0..nids), or every job (all), or (neither) the latest
 * that has not ended (none: said, and 0 with out->n == 0).
 * A job whose ranks are not all known is cancelled by its ranks' submit keys. Returns 0;
 * -ENOENT some named job does not exist (the others are cancelled); another -errno when a
 * node could not be reached.
 */
int eng_cancel(struct st_db *ldb, const char *cluster, const int64_t *ids, size_t nids, int all,
               struct eng_cancelled *out);
void eng_cancelled_release(struct eng_cancelled *c);

/* ---- the cluster's life -------------------------------------------------------------- */

/* A cluster as `status` shows it. */
struct eng_cluster {
	struct cluster c;           /* the launcher's record */
	struct cluster_node *nodes; /* its nodes, in rank order */
	size_t nnodes;
	const char *shown; /* its status in words: INIT, UP, STOPPED, or ENDED */
	/* ENG_STATUS_REFRESH of an UP cluster: what each node's supervisor said, asked[i] of
	 * nodes[i]; NULL when the nodes were not asked. */
	struct cl_ping *asked;
};

/* eng_status() flags. */
#define ENG_STATUS_REFRESH 1u /* ask every node of each UP cluster; one silent node: INIT */
#define ENG_REFRESH_CALL_MS 10000

/*
 * Every cluster, by name (names: only those, when n_names > 0; each a name or a glob).
 * Free with eng_clusters_free.
 */
int eng_status(struct st_db *ldb, char *const *names, size_t n_names, unsigned flags,
               struct eng_cluster **out, size_t *n);
void eng_clusters_free(struct eng_cluster *v, size_t n);

enum eng_down_result {
	ENG_DOWN_DONE = 0, /* taken down (stopped) */
	ENG_DOWN_BY_OTHER, /* another command took it down while this one waited */
};

/* eng_down()'s how. */
#define ENG_DOWN_STOP 1u  /* stop: the nodes stay booked */
#define ENG_DOWN_PURGE 2u /* down: forgotten even when its nodes cannot all be removed */
/* down: fails, the cluster kept, when a node whose machine stays may still run some of it */
#define ENG_DOWN_CONFIRM 4u
/*
 * How long one node's part of down and stop (`node down --all`) may take: more than it
 * waits at most (supervisor/policy.h: a minute of cancel grace, 2 s after SIGTERM, 2 s
 * after SIGKILL) and the connection.
 */
#define ENG_DOWN_NODE_MS 90000

/*
 * Tears a cluster down (how 0: cancels its jobs, stops its supervisors, releases its
 * nodes, forgets it once they are gone) or stops it (ENG_DOWN_STOP: the nodes stay
 * booked). Every node is asked to stop everything of the cluster and say whether it did
 * (`node down --all`); the launcher's gang watchers and ssh masters for it are ended.
 * Returns ENG_DOWN_DONE, ENG_DOWN_BY_OTHER, or -errno (printed; the cluster is kept,
 * unless ENG_DOWN_PURGE). With ENG_DOWN_CONFIRM, a node whose machine stays (local, ssh:
 * INFRA_PROCS_STAY) that does not answer, or still runs something of the cluster, keeps
 * it too (-EBUSY), each such node said in one line.
 */
int eng_down(struct st_db *ldb, const char *name, unsigned how);
/* Starts a stopped cluster again: its containers, then its supervisors. 0 or -errno. */
int eng_start(struct st_db *ldb, const char *name);
/*
 * Autostop after `minutes` idle (-1: off), or autodown; wait_for as in struct eng_launch.
 * The cluster's head decides, by itself; `status` (and launch, exec) learn what it did.
 * 0 or -errno.
 */
int eng_autostop(struct st_db *ldb, const char *name, int minutes, int down, const char *wait_for);

/*
 * The cluster's lock (lib/lock.h): waits for its holder, saying once who it is. The fd
 * to give to lock_release(), or -errno (printed). `what` names the command for waiters.
 */
int eng_lock_cluster(const char *name, const char *what);

/* The cluster's live view (runners for its booked nodes); -ENOENT printed. */
int eng_open(struct st_db *ldb, const char *name, struct cluster *c, struct clive *cl);
/*
 * Waits until one of the cluster's jobs that are running ends (bootstrap/launch/watch.c),
 * told by the nodes' `watch`, no node polled: 0 with that job's id in *job; -ENOENT when
 * none runs (or the cluster is not there), -ETIMEDOUT after timeout_ms (< 0: none), or
 * another -errno.
 */
int eng_watch_end(struct st_db *ldb, const char *cluster, int timeout_ms, int64_t *job);

/*
 * A shell on the cluster's head (command NULL: interactive, on a pty when tty), its
 * stdin, stdout and stderr ours. The command's exit status (128+N for a signal), or
 * -ENOENT (no such cluster) or another -errno (printed).
 */
int eng_ssh(struct st_db *ldb, const char *cluster, const char *command, int tty);

/*
 * The tree of a git workdir's commit, fetched and checked out on this machine
 * (bootstrap/launch/gitwork.c); *tree is malloc'd. 0, or -1 (printed).
 */
int eng_git_tree(const struct task_workdir *w, char **tree);
/*
 * The commit checked out in the git work tree that holds local directory dir, as
 * SkyPilot's queue shows it (GIT COMMIT); malloc'd, or NULL when dir is in none or git
 * cannot say (not installed, no commit yet). Quiet: a workdir need not be a repository.
 */
char *eng_workdir_commit(const char *dir);

/*
 * How many managed jobs that have not ended run on a cluster the managed-jobs controller
 * launches and releases (state/jobs.h, mj_managed_cluster()); 0 for any other.
 */
int64_t eng_managed_active(struct st_db *ldb, const char *name);

#endif
