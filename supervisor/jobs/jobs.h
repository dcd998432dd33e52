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
 *   $SKIFF_HOME/jobs/kept/ID/CLUSTER/JOB/rank-N/{setup,run}.log
 *                                      the task logs the controller keeps of each cluster
 *                                      job the managed job ran as (kept.c), until the
 *                                      retention removes them and leaves kept/ID/REMOVED
 *   $SKIFF_HOME/jobs/keeper.lock       on a controller host: its keeper (host.c)
 */

#include <stdint.h>

#include "state/db.h"
#include "state/jobs.h"

#define JOBS_POOL_CLUSTER MJ_POOL_CLUSTER /* the shared local cluster (state/jobs.h) */

struct jobs_paths {
	char *dir, *lock, *log, *logs, *kept;
	char *keeper; /* keeper.lock: a controller host's keeper (host.c) */
};

/* Paths under $SKIFF_HOME/jobs (created 0700); NULL (printed) without a home. */
const struct jobs_paths *jobs_paths(void);
/* The per-job log path (caller frees). */
char *jobs_job_log(int64_t id);
/* Where the controller keeps job id's task logs: kept/ID (caller frees); NULL: no home. */
char *jobs_kept_dir(int64_t id);
/* The kept copy of one cluster job it ran as: kept/ID/CLUSTER/JOB (caller frees). */
char *jobs_kept_run_dir(int64_t id, const char *cluster, int64_t job);
/* The file that says the retention removed kept/ID's logs, and why. */
#define JOBS_KEPT_REMOVED "REMOVED"

/*
 * Makes sure a controller runs and looks at the table now: signals the running one
 * (SIGUSR1), else starts one (`skiff __jobs-controller`, own session, detached). Returns
 * 0 once it is signalled or started.
 */
int jobs_controller_kick(void);
/* The running controller's pid, or 0. */
int jobs_controller_pid(void);
/* The pid in a daemon_lock() file whose lock is held, or 0 (nobody holds it). */
int jobs_lock_holder(const char *path);

/* ---- the API `skiff jobs` calls (submit.c) -------------------------------------------- */

struct task_list;
struct task_overrides;

/* What `jobs launch` asks for: a parsed, checked task list and how to run it. */
struct jobs_submit_req {
	const struct task_list *tl;
	const struct task_overrides *ov; /* applied to tl already; kept for the worker */
	const char *entry;               /* the YAML path or the command */
	const char *spec;                /* the YAML's text; NULL for a command */
	const char *cwd;                 /* where relative paths in the task start */
	const char *infra;               /* --infra; NULL: the task's, else local */
	const char *recovery;            /* --job-recovery; NULL: the task's */
	int priority, have_priority;     /* --priority; else the task's, else 0 */
};

/*
 * Records the job (its recovery, priority and infra from the request over the first
 * task's resources) and wakes the controller. 0 with *id; -EINVAL (printed) for what
 * cannot run (no task, a reserved exit code, a bad strategy); -EIO.
 */
int jobs_submit(struct st_db *db, const struct jobs_submit_req *req, int64_t *id);
/*
 * jobs_submit() n times (--num-jobs: each copy's envs say its SKYPILOT_JOB_RANK among
 * SKYPILOT_NUM_JOBS, set in tl and ov), req->tl and req->ov set to them; each id goes to
 * on_id (NULL: printed on stdout) and "Managed job N submitted" to stderr. 0 with the last
 * id in *last, or jobs_submit()'s error.
 */
int jobs_submit_n(struct st_db *db, struct jobs_submit_req *req, struct task_list *tl,
                  struct task_overrides *ov, long n, void (*on_id)(int64_t id, void *arg),
                  void *arg, int64_t *last);
/*
 * What task t asks for, as SkyPilot's `jobs queue` shows it in REQUESTED, appended to out:
 * "2x[H100:4]", the accelerators of its alternatives, else "1x[CPU:4+]" (the first's CPUs,
 * "1+" when it names none); "[Spot]" after when it asks for spot.
 */
struct task;
struct buf;
void jobs_requested_text(const struct task *t, struct buf *out);
/* EAGER_NEXT_REGION, FAILOVER or NONE (no restarts), any case; -EINVAL otherwise. */
int jobs_parse_strategy(const char *s, int *strategy, int *max_restarts);
/* Cancels jobs (mj_cancel()) and wakes the controller to finish them. 0 or -EIO. */
int jobs_cancel(struct st_db *db, const int64_t *ids, size_t n, const char *name, int all,
                int *found, int *done, int *ended);
/*
 * The controller's work: managed jobs that have not ended plus clusters to release; -1
 * when the table cannot be read.
 */
int64_t jobs_unfinished(struct st_db *db);
/* Starts a controller when there is work and none runs (the last one crashed). */
void jobs_ensure_controller(struct st_db *db);

/*
 * What `jobs queue` shows, as data (queue.c): a controller's jobs at one moment, read from
 * its db (jobs_snap_load()) or from a controller's host (jobs_remote_queue()); cmd/jobs.c
 * formats it as SkyPilot's table or as JSON.
 */
struct jobs_snap {
	double now;
	int counts[MJS_N]; /* jobs per schedule state (mj_sched_counts()) */
	int max_launching, max_running;
	struct mjob *jobs; /* the jobs listed, by id (not the finished with skip_finished) */
	size_t njobs;
	struct mjob *members; /* every member of each job group listed, by id (task_name set) */
	size_t nmembers;
	struct mj_task *tasks; /* every job's task rows, by job then task */
	size_t ntasks;
};
/* 0, or -EIO with nothing held. */
int jobs_snap_load(struct st_db *db, int skip_finished, struct jobs_snap *s);
void jobs_snap_free(struct jobs_snap *s);
/*
 * As frames: fn gets each one ({row: meta}, then one per job, member and task); fn's
 * non-zero return stops and is returned. jobs_snap_take() adds one such frame to s
 * (zeroed at first; alloc[3] zeroed too, the arrays' room); a row of another kind
 * (a newer peer's) is passed over.
 */
int jobs_snap_send(const struct jobs_snap *s, int (*fn)(const struct msg *m, void *arg), void *arg);
int jobs_snap_take(struct jobs_snap *s, const struct msg *m, size_t alloc[3]);

/*
 * The job's task logs on stdout (logs.c): each cluster job it ran as (pipeline tasks,
 * recoveries) in order, following the current one until the job ends when follow. The
 * `logs` exit code (lib/exit.h: 0, 100 failed, 101 not finished, 102 not found, 103
 * cancelled).
 */
int jobs_follow_logs(int64_t id, int follow);
/*
 * `jobs logs ID [TASK]`: jobs_follow_logs() of job id, or, when id is a job group's (its
 * first member's), of its member that task names (a task's name, else its index; unknown:
 * 102), or without task of every member in turn after a hint on stderr (the exit code then
 * is the group's status's, mj_group_status()). A task for a job that is not a group is a
 * usage error.
 */
int jobs_logs_task(int64_t id, const char *task, int follow);
/* Its transitions, then its launch and cleanup log; the exit code as jobs_follow_logs(). */
int jobs_controller_logs(int64_t id);
/* What `jobs logs` asks for (cmd/jobs.c parses it; a controller's host gets it as is). */
struct jobs_logs_req {
	int64_t id;       /* 0: the newest job (named name, when set) */
	const char *name; /* -n NAME */
	const char *task; /* a job group's task: its name or index */
	int follow, controller, sync_down;
};
/*
 * The job req names: 0 with *id (a job group's newest member stands for its group), or
 * the exit code (printed: no such job).
 */
int jobs_logs_resolve(const struct jobs_logs_req *req, int64_t *id);
/*
 * `jobs logs` of job id (resolved): its task logs, the controller's log, or with
 * sync_down every run's logs to ~/sky_logs (to_tar: as a tar stream on stdout, for a
 * launcher: jobs_host_sync_down()). The `logs` exit code.
 */
int jobs_logs_run(const struct jobs_logs_req *req, int64_t id, int to_tar);
/* The cluster jobs a managed job ran as, in order (from its events), at most JOBS_RUNS_MAX. */
#define JOBS_RUNS_MAX 64
struct jobs_runs {
	char cluster[JOBS_RUNS_MAX][128];
	int64_t job[JOBS_RUNS_MAX];
	double at[JOBS_RUNS_MAX]; /* when it was recorded: after the cluster job's submit */
	/*
	 * How it ended: the managed job's status after the transition that ended it (-1: it
	 * has not), and the node's status of the run the last probe saw then (-1 unknown).
	 */
	int end[JOBS_RUNS_MAX], end_node[JOBS_RUNS_MAX];
	int n;
};
/* Fills *out (zeroed first). 0 or -EIO. */
int jobs_runs(struct st_db *db, int64_t id, struct jobs_runs *out);
/*
 * The runs of job id and its row *j (the caller frees it), the row read after the runs:
 * never older than they are, as jobs_run_ended() needs. A row read before them (a listing)
 * does not know a run recorded since, and that run would look ended. 0, -ENOENT or -EIO.
 */
int jobs_runs_with_row(struct st_db *db, int64_t id, struct jobs_runs *out, struct mjob *j);
/* 1 if name may be one component of a path under kept/ (no '/', not "." or ".."). */
int jobs_name_ok(const char *name);
/* The newest managed job (named name, unless NULL); 0: none. */
int64_t jobs_latest(struct st_db *db, const char *name);
/*
 * Every rank's logs of each cluster job the managed job ran as, to ~/sky_logs/CLUSTER/JOB
 * (already there for a cluster that is gone); prints where. The `logs` exit code.
 */
int jobs_sync_down(int64_t id);
/* The same into root/CLUSTER/JOB (root NULL: as jobs_sync_down()), saying nothing on stdout. */
int jobs_sync_down_to(int64_t id, const char *root);

/*
 * Writes kept/ID (every cluster job's logs the controller keeps of managed job id, as
 * CLUSTER/JOB/rank-N/...) to fd as a tar stream (`skiff __jobs-kept-tar ID`). 0; -ENOENT
 * (printed) when nothing is kept of it; -EIO.
 */
int jobs_kept_tar(int64_t id, int fd);
/* Any directory (its files and subdirectories) to fd as such a tar stream. 0 or -EIO. */
int jobs_tar_dir(const char *dir, int fd);
/*
 * Unpacks such a stream from fd into dir (created 0700): regular files and directories
 * only, no absolute path and no "..", at most JOBS_KEPT_TAR_MAX_BYTES of data. 0, or an
 * error (printed); what was written before an error stays.
 */
int jobs_kept_untar(int fd, const char *dir);
#define JOBS_KEPT_TAR_MAX_BYTES ((uint64_t)16 << 30)

/* ---- keeping logs (kept.c; run by the controller's keep and cleanup workers) --------- */

/*
 * 1 if cluster job `job` of `cluster` is still the one a managed job ran as, recorded at
 * time at (0: not checked): it exists, and was submitted by then (a pool that was torn
 * down and brought up again numbers its jobs from 1 again).
 */
int jobs_run_live(struct st_db *db, const char *cluster, int64_t job, double at);
/*
 * Copies every rank's logs of cluster job `job` on `cluster` (recorded at time at, as
 * jobs_run_live()) into kept/ID/CLUSTER/JOB, through a temp dir and a rename: a kept copy
 * that exists is whole. 0 when kept, or kept already; -ENOENT when the cluster or its job
 * is gone; another error (printed).
 */
int jobs_keep_run(struct st_db *db, int64_t id, const char *cluster, int64_t job, double at);
/*
 * Keeps the logs of every cluster job that ran on the shared pool and has ended (its own
 * clusters' are kept by the cleanup worker before they are torn down). 0 or -EIO.
 */
int jobs_keep_pool_runs(struct st_db *db);
/*
 * The retention (jobs.controller.task_logs_gc_retention_hours, the size cap): removes
 * what jobs_kept_gc_decide() picks, leaving kept/ID/REMOVED with the reason. 0 or -EIO.
 */
int jobs_kept_gc(struct st_db *db);

/* The daemons' entry points: `skiff __jobs-controller`, `__jobs-worker`, `__gang`. */
int jobs_controller_main(int argc, char **argv);
int jobs_worker_main(int argc, char **argv);
int gang_main(int argc, char **argv);

/* ---- a controller on a cluster of its own (remote.c: the launcher; host.c: its host) --- */

/* Its cluster is JOBS_CONTROLLER_CLUSTER_PREFIX (state/jobs.h) + 8 hex digits of the user's
 * name's sha256. */
/* The controller's $SKIFF_HOME on its host, under the host's $HOME. */
#define JOBS_CONTROLLER_HOME ".skiff/jobs-controller"
/*
 * Under it, files/TOKEN/K: the workdirs and mounts one `jobs launch` sent (TOKEN, hex
 * digits, one per launch; K, one per local path). jobs_files_gc() removes them.
 */
#define JOBS_FILES_DIR "files"
#define JOBS_FILES_TOKEN_HEX 32
/* Set in every process of the controller's host side: `skiff jobs` runs here, not there. */
#define JOBS_ON_CONTROLLER_ENV "SKIFF_JOBS_ON_CONTROLLER"

/*
 * jobs.controller.resources.infra of the config in effect: where the controller runs, in
 * *out (caller frees); NULL for this machine (not set, "local", a cloud of SkyPilot's
 * config (warned), or this is the controller's host). 0, or -EINVAL for an infra that is
 * not one, or a config file that is invalid (printed: it cannot say where).
 */
int jobs_remote_infra(char **out);
/* The controller cluster's name ($SKIFF_USER, else the login name, hashed). */
void jobs_remote_cluster_name(char *out, size_t size);
/*
 * The controller on infra, asked as the local one would be (remote.c, one framed request
 * to `skiff __jobs-remote` on its head, answered by serve.c), brought up first when it is
 * not, or upgraded to this binary. Each returns an exit status (lib/exit.h): the host's
 * answer's, or EXIT_UNAVAILABLE when it cannot be reached (printed).
 *
 * jobs_remote_queue(): the snapshot `jobs queue` formats (0 with *out filled).
 * jobs_remote_cancel(): jobs_cancel() there; *found, *done and *ended as it gives them
 * (*ended 0 from a controller older than that count).
 * jobs_remote_logs(): jobs_logs_run() there, its output on our stdout (with sync_down,
 * the logs come to ~/sky_logs here).
 */
int jobs_remote_queue(const char *infra, int skip_finished, struct jobs_snap *out);
int jobs_remote_cancel(const char *infra, const int64_t *ids, size_t n, const char *name, int all,
                       int *found, int *done, int *ended);
struct jobs_logs_req;
int jobs_remote_logs(const char *infra, const struct jobs_logs_req *req);
/*
 * For `down` of the controller cluster named cluster (any other name: 0): how many managed
 * jobs its controller has that have not ended, or clusters to release; -1 when it cannot
 * tell (it does not answer).
 */
int64_t jobs_remote_active(struct st_db *db, const char *cluster);
/*
 * Before `down` of that cluster: its keeper and controller stopped, their home removed on
 * the host (jobs_host_stop()). 0, or -1 when the host did not answer (printed).
 */
int jobs_remote_stop(struct st_db *db, const char *cluster);
/*
 * jobs_submit_n() on the controller on infra: the tasks' local files are synced to it
 * first and ov maps the tasks' paths to them; the ssh pools the tasks name, and their
 * identity files, are sent with the request. Then, unless detach or n > 1, follows the
 * job's logs. The `jobs launch` exit status.
 */
int jobs_remote_submit(const char *infra, struct jobs_submit_req *req, struct task_list *tl,
                       struct task_overrides *ov, long n, int detach);

/*
 * The host's side (host.c). jobs_host_enter(): this process is the controller host's
 * (SKIFF_HOME is ~/JOBS_CONTROLLER_HOME, JOBS_ON_CONTROLLER_ENV set); 0 or -errno.
 */
int jobs_host_enter(void);
/*
 * The request's "env" fields SKIFF_JOBS_*=V (the controller's knobs, docs/managed-jobs.md)
 * into our environment: a keeper started now, and its controllers, run with them.
 */
struct msg;
void jobs_host_env(const struct msg *m);
/*
 * Writes data to rel under $SKIFF_HOME (0600, atomically; rel is keys/NAME or
 * pools.d/NAME.yaml, nothing else). *changed: 1 when it was not there as it is now.
 */
int jobs_host_put(const char *rel, const char *data, int *changed);
/* ssh_node_pools.yaml anew from pools.d/ (every pool a launcher sent). 0 or -errno. */
int jobs_host_pools_rebuild(void);
/*
 * Removes the uploads under $SKIFF_HOME/files that no job needs any more
 * (jobs_files_gc_decide(), supervisor/jobs/policy.h): the keep worker's, after a job ends
 * and on the collector's round. Nothing to do where there is no files/ (not a controller
 * host). 0 or -errno.
 */
struct st_db;
int jobs_files_gc(struct st_db *db);
/*
 * Makes sure the host's keeper runs our binary, with the controller: a keeper or a
 * controller of another binary (an older launcher's) is stopped and ours started; the
 * jobs go on (the controller's restart loses nothing). 0 or -errno (printed).
 */
int jobs_host_keep(void);
/*
 * A launcher's submit request (remote.c): its files, then jobs_submit_n(), each job's id
 * to on_id. An exit status.
 */
struct msg;
int jobs_host_submit(const struct msg *m, void (*on_id)(int64_t id, void *arg), void *arg);
/*
 * `skiff __jobs-remote` (serve.c): one framed request from a launcher on stdin, answered
 * in frames on stdout, in the controller's home. The process's exit status.
 */
int jobs_host_serve(void);
/*
 * `jobs logs --sync-down` of job id for a launcher: every run's logs (jobs_sync_down_to()
 * into a temp dir) as a tar stream of CLUSTER/JOB/rank-N/... on stdout. The `logs` exit
 * status.
 */
int jobs_host_sync_down(int64_t id);
/*
 * For `down` of the controller cluster: stops the keeper and the controller and removes
 * the controller's home (its db, logs, keys and pools). An exit status.
 */
int jobs_host_stop(void);
/* How many managed jobs have not ended, plus clusters to release; -1 when unknown. */
int64_t jobs_host_count(void);
/* `skiff __jobs-keeper`: restarts the controller while it has work, until signalled. */
int jobs_keeper_main(int argc, char **argv);

/* Long integer from the environment within [min, max], else def. */
long jobs_env_long(const char *name, long def, long min, long max);

/*
 * Controller limits (computed, or overridden by SKIFF_JOBS_MAX_LAUNCHING/RUNNING). A
 * launch worker launches one job, or a batch of up to launch_batch jobs that run on the
 * local pool (SKIFF_JOBS_LAUNCH_BATCH): max_launching counts workers.
 */
struct jobs_limits {
	int max_launching, max_running, launch_batch;
	int cores;
	long long mem_bytes;
	long long job_cost_bytes; /* the per-running-job cost the running limit is based on */
};
void jobs_limits_compute(struct jobs_limits *l);

/*
 * SKYPILOT_TASK_ID of a managed job's task: sky-managed-TIMESTAMP_NAME_ID-TASK, the time
 * the job was submitted (UTC), so that every task's id is known before the first runs
 * and stays the same across recoveries. Returns a new string.
 */
char *jobs_task_id(double submitted_at, const char *name, int64_t id, int task);
/*
 * SKYPILOT_TASK_IDS: the ids of all ntasks tasks, one per line (SkyPilot's
 * TASK_ID_LIST_ENV_VAR), with current (when not NULL) as task index's. A new string.
 */
char *jobs_task_ids(double submitted_at, const char *name, int64_t id, int ntasks, int index,
                    const char *current);
/* Cluster a job's current task launches on: the pool, or skiff-job-ID[-TASK-RECOVERY]. */
void jobs_cluster_name(const struct mjob *j, int pool, char *out, size_t size);
/* 1 when jobs on infra go to the shared local pool (local infra, unless turned off). */
int jobs_use_pool(const char *infra);
/*
 * 1 when task t, on infra (NULL: the default), runs on the shared local pool: one node,
 * nothing synced to it (files there would be shared with every other pool job), and an
 * infra that uses the pool.
 */
int jobs_task_on_pool(const struct task *t, const char *infra);

#endif
