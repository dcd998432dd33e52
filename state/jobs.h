#ifndef SKIFF_STATE_JOBS_H
#define SKIFF_STATE_JOBS_H

/*
 * Managed jobs (`skiff jobs ...`): tables in the launcher's database ($SKIFF_HOME/launcher.db,
 * st_launcher_schema, migrations 1 -> 2, 8 -> 9 and 10 -> 11). docs/managed-jobs.md describes
 * the model; a job group is a job per task, linked by group_id.
 *
 *   managed_jobs   one row per managed job: its task (the entry file's text, or a command),
 *                  status and schedule state (SkyPilot's names), priority, recoveries,
 *                  the cluster and cluster job it runs as, what the last probe saw
 *   job_events     every transition: time, status, schedule state, reason; for one that ends
 *                  a run, what the last probe saw of it (the node's status, exit codes)
 *   job_tasks      one row per task (a pipeline has several): name, what it asks for, when
 *                  it began, first ran and ended, how long it ran, its recoveries
 *   job_holders    who does work for a job outside the controller: a launch or cleanup
 *                  worker, by pid and process start time, so that a restarted controller
 *                  tells a live worker from a dead one (pid reuse included)
 *   job_cleanups   clusters (or pool cluster jobs) to release: written before the work,
 *                  deleted after it, so a crash between the two leaks nothing
 *   jobs_meta      the controller's limits and pid, for `jobs queue`'s DETAILS
 *
 * Every status change is one UPDATE guarded by the statuses and schedule states it may
 * come from, with its event written in the same transaction: two writers (the controller,
 * a launch worker, `jobs cancel`) cannot overwrite each other, and a terminal status is
 * final. Strings in struct mjob are malloc'd, never NULL; mjob_free() releases them.
 */

#include <stddef.h>
#include <stdint.h>

#include "state/db.h"

enum mj_status {
	MJ_PENDING = 0,
	MJ_STARTING,
	MJ_RUNNING,
	MJ_RECOVERING,
	MJ_CANCELLING,
	MJ_SUCCEEDED,
	MJ_CANCELLED,
	MJ_FAILED,
	MJ_FAILED_SETUP,
	MJ_FAILED_PRECHECKS,
	MJ_FAILED_NO_RESOURCE,
	MJ_FAILED_CONTROLLER,
	MJ_N_STATUS
};

enum mj_sched {
	MJS_INACTIVE = 0,
	MJS_WAITING,       /* submitted: needs a launch slot and a run slot */
	MJS_LAUNCHING,     /* holds a launch slot: a worker is launching it */
	MJS_ALIVE,         /* launched: its task runs on its cluster */
	MJS_ALIVE_WAITING, /* holds a run slot, needs a launch slot (recovery, next task) */
	MJS_ALIVE_BACKOFF, /* a launch failed: waits until next_try_at */
	MJS_DONE,
	MJS_N
};

#define MJ_MASK(s) (1u << (s))
#define MJ_ACTIVE_MASK                                                                             \
	(MJ_MASK(MJ_PENDING) | MJ_MASK(MJ_STARTING) | MJ_MASK(MJ_RUNNING) |                        \
	 MJ_MASK(MJ_RECOVERING) | MJ_MASK(MJ_CANCELLING))
#define MJ_ANY 0xffffffffu

const char *mj_status_name(int s); /* "UNKNOWN" when out of range */
int mj_status_parse(const char *name);
int mj_status_terminal(int s);
const char *mj_sched_name(int s);
int mj_sched_parse(const char *name);

/* Recovery strategies. */
enum mj_strategy { MJ_EAGER_NEXT_REGION = 0, MJ_FAILOVER };

struct mjob {
	int64_t id;
	char *name;
	char *entry;     /* YAML path or command, as given */
	char *spec;      /* the YAML file's text; "" for a command */
	char *cwd;       /* where `jobs launch` ran (relative paths in the task) */
	char *ovargs;    /* older skiffs' task override flags, '\x1f'-separated; "" now */
	char *overrides; /* task_overrides_encode() of the overrides (lib/task.h) */
	size_t overrides_len;
	char *infra;  /* --infra; "": the task's, else local */
	int strategy; /* enum mj_strategy */
	int max_restarts;
	char *recover_codes; /* "1,2,3" */
	int priority;
	int status, sched;
	int ntasks, task_index;
	int recoveries; /* relaunches after a failure of any kind */
	int restarts;   /* of those, after user errors (max_restarts_on_errors counts these) */
	int attempts;   /* launch attempts since the last successful launch */
	char *cluster;  /* where the current task runs; "" none */
	int64_t cluster_job;
	int pool; /* 1: cluster is the shared local pool (before a launch names it: it is to be) */
	char *task_id;
	char *reason; /* why the last transition happened (DETAILS, failure reason) */
	double submitted_at, started_at, ended_at, next_try_at;
	int cancel_requested;
	/* The last probe of the cluster job (written by the watch worker). */
	int node_status; /* enum job_status of the node, -1 unknown */
	char *exit_codes;
	char *probe_error;
	int probe_failures; /* consecutive */
	double probe_since; /* when the first of them failed; 0: the last probe did not */
	int probe_gone;     /* the last one found a node gone (runner_node_gone()) */
	/* The last error message of its last failed launch attempt (the launch worker's);
	 * "" none, or the last attempt succeeded. */
	char *launch_error;
	char *resources; /* what it asks for, as `jobs queue` shows it; "" unknown */
	/* A member of a job group (migration 10 -> 11); group_id 0: in none. */
	int64_t group_id;   /* the group's first member's id */
	int group_task;     /* its task's index in the group's file */
	int group_primary;  /* 1: a primary task; 0: auxiliary */
	long group_delay_s; /* an auxiliary one: its cancel waits this long after the primaries */
	char *group_name;
	char *task_name; /* its task's name: read by mj_group() only, else "" */
};

void mjob_free(struct mjob *j);
/* For the tests: 0 if struct mjob's row table names the SELECT's columns, in order. */
int mj_cols_check(void);

/*
 * A task of a job (job_tasks): what `jobs queue` shows in a row of its own for a pipeline's
 * tasks. Times are epoch seconds, 0 when not yet. Strings malloc'd, never NULL (read rows).
 */
struct mj_task {
	int64_t job_id;
	int task;        /* 0-based, in the pipeline's order */
	char *name;      /* the task's name; "" none */
	char *requested; /* what it asks for, as SkyPilot's REQUESTED: "1x[CPU:1+]" */
	double submitted_at, started_at, ended_at;
	double run_s;     /* seconds it ran before its current run */
	double run_since; /* when its current run began; 0 when it does not run */
	int recoveries;
};
void mj_tasks_free(struct mj_task *v, size_t n);
/*
 * A job's row and a task's as a frame's fields (lib/proto.h; st_row_encode()), for a jobs
 * controller's host answering a launcher, and back (free with mjob_free(), or one
 * mj_task's members as mj_tasks_free() does). Fields a peer of another build lacks
 * decode as zero or "".
 */
struct msg;
void mj_encode(const struct mjob *j, struct msg *m);
void mj_decode(const struct msg *m, struct mjob *j);
void mj_task_encode(const struct mj_task *t, struct msg *m);
void mj_task_decode(const struct msg *m, struct mj_task *t);
/* Seconds task t ran (its runs, not the waits between them) until now; -1 if it never ran. */
double mj_task_run_s(const struct mj_task *t, double now);
/*
 * A task's status, from its job's: tasks before the current one SUCCEEDED (a pipeline
 * moves on only then), the current one has the job's, later ones are PENDING, or CANCELLED
 * once the job ended without them (as SkyPilot marks them).
 */
int mj_task_status(const struct mjob *j, int task);

extern const char *const st_jobs_migration; /* launcher db 1 -> 2 */

/*
 * Inserts a job (PENDING, WAITING, submitted_at now) from j's name, entry, spec, cwd, ovargs,
 * overrides, infra, strategy, max_restarts, recover_codes, priority, ntasks; sets j->id. Events
 * INACTIVE -> WAITING are recorded, and a job_tasks row per task with the name and requested
 * of tasks[0..ntasks) (NULL: none; the first task's begins now). 0 or an error.
 */
int mj_submit(struct st_db *db, struct mjob *j, const struct mj_task *tasks);
/*
 * Inserts the n members of a job group, as mj_submit() each, in one transaction: ids are
 * consecutive, and every member's group_id is the first one's (each v[k]'s group_task,
 * group_primary, group_delay_s and group_name are written as given). tasks[k] is member
 * k's task row (one each). 0 or an error (nothing written).
 */
int mj_submit_group(struct st_db *db, struct mjob *v, size_t n, const struct mj_task *tasks);
/*
 * The members of group gid by id, each with its task_name (*out: caller frees each with
 * mjob_free(), then the array). *n 0 when there is no such group. 0 or an error.
 */
int mj_group(struct st_db *db, int64_t gid, struct mjob **out, size_t *n);
/*
 * The groups with a member that has not ended, is auxiliary and has no cancel asked for:
 * those whose auxiliaries the controller may have to cancel (*out: caller frees). 0 or
 * an error.
 */
int mj_groups_with_aux(struct st_db *db, int64_t **out, size_t *n);
/*
 * A group's status for `jobs queue`, from its members' (n of them, primary[k] whether
 * member k is primary): while one has not ended, RUNNING if one runs, else the first
 * active one's; once all ended, the first failed member's failure, else SUCCEEDED when
 * every primary succeeded (auxiliaries cancelled as their primaries ended), else CANCELLED.
 */
int mj_group_status(const int *status, const int *primary, size_t n);

/*
 * Every task row of the jobs with id >= min_id, by job then task (*out: caller frees with
 * mj_tasks_free()). Jobs submitted before skiff kept them have none. 0 or an error.
 */
int mj_tasks(struct st_db *db, int64_t min_id, struct mj_task **out, size_t *n);
/* 0, -ENOENT (not printed), or an error. */
int mj_get(struct st_db *db, int64_t id, struct mjob *out);

/*
 * Calls fn for each job in id order; skip_finished leaves out terminal jobs; with
 * sched_mask not MJ_ANY only jobs in those schedule states (MJ_MASK bits), or with
 * MJ_CANCEL_REQUESTED the active jobs whose cancel was asked for. fn returning non-zero stops.
 */
#define MJ_CANCEL_REQUESTED 0x80000000u /* sched_mask: active jobs with a cancel request */
/* The same jobs as an array (*out, each freed with mjob_free(), then the array). 0 or -errno. */
int mj_list(struct st_db *db, int skip_finished, unsigned sched_mask, struct mjob **out, size_t *n);
int mj_each(struct st_db *db, int skip_finished, unsigned sched_mask,
            int (*fn)(const struct mjob *j, void *arg), void *arg);

/*
 * The guarded transition: if the job's status is in status_mask and its schedule state in
 * sched_mask, sets status (or keeps it: -1) and schedule state (-1 keeps), writes reason
 * (NULL keeps), sets ended_at for a terminal status and started_at on the first RUNNING,
 * and records the event. 0; -ESTALE the job was not in those states (not printed);
 * -ENOENT. Its own transaction, or the caller's when one is open (st_in_tx()): then a
 * failure is the caller's to roll back.
 */
int mj_transition(struct st_db *db, int64_t id, unsigned status_mask, unsigned sched_mask,
                  int status, int sched, const char *reason);
/*
 * The same for a transition that ends the job's current run (its task ended, failed, is
 * recovered or cancelled): the event also keeps what the last probe saw of the run,
 * node_status (enum job_status, -1 unknown) and exit_codes ("0,1"; NULL none).
 */
int mj_transition_run(struct st_db *db, int64_t id, unsigned status_mask, unsigned sched_mask,
                      int status, int sched, const char *reason, int node_status,
                      const char *exit_codes);

/* Field setters (no transition, no event). */
int mj_set_cluster(struct st_db *db, int64_t id, const char *cluster, int64_t cluster_job,
                   int pool);
int mj_set_task_id(struct st_db *db, int64_t id, const char *task_id);
/* What the last launch attempt's error said ("" clears it: the attempt succeeded). */
int mj_set_launch_error(struct st_db *db, int64_t id, const char *err);
int mj_set_counters(struct st_db *db, int64_t id, int task_index, int recoveries, int restarts,
                    int attempts, double next_try_at);
/*
 * What a probe of cluster job cluster_job on cluster saw at time at: written only while the
 * row still runs as that one (a probe is slow, and the job may have moved on meanwhile);
 * -ENOENT when it no longer does. A probe_error counts one more failed probe (the first
 * of a row sets probe_since to at), gone says whether it found a node gone; none clears
 * all three.
 */
int mj_set_probe(struct st_db *db, int64_t id, const char *cluster, int64_t cluster_job,
                 int node_status, const char *exit_codes, const char *probe_error, int gone,
                 double at);

/*
 * The clusters managed jobs run on: the shared local pool (MJ_POOL_CLUSTER), or a cluster
 * of the job's own, skiff-job-ID for its first task's first launch and
 * skiff-job-ID-TASK-RECOVERY after. The controller names them; `down` and `status` tell
 * them apart (a down of one whose jobs have not ended is refused).
 */
#define MJ_POOL_CLUSTER "skiff-jobs"
/* A controller on a cluster of its own: this, then 8 hex digits (supervisor/jobs/jobs.h). */
#define JOBS_CONTROLLER_CLUSTER_PREFIX "skiff-jobs-controller-"
#define MJ_CLUSTER_PREFIX "skiff-job-"
void mj_cluster_name(int64_t id, int task_index, int recoveries, int pool, char *out, size_t size);
/* 1 if name is one of them; *id (may be NULL) the job's id, 0 for the pool. */
int mj_managed_cluster(const char *name, int64_t *id);

/* All jobs in the table. */
int64_t mj_count(struct st_db *db);
/* The managed jobs that have not ended whose cluster is `cluster`. */
int64_t mj_count_active_on(struct st_db *db, const char *cluster);
/* Counts of jobs per schedule state (counts[MJS_N]; DONE is not counted). */
int mj_sched_counts(struct st_db *db, int counts[MJS_N]);

/*
 * Claims the next job for a launch, in one transaction: ALIVE_WAITING jobs first (they
 * already hold a run slot), then WAITING ones while running < max_running, each by
 * priority (higher first) then id. Sets it LAUNCHING (status STARTING, or RECOVERING when
 * it recovers). *id is 0 when nothing may start. Counts as in mj_sched_counts().
 */
int mj_claim_next(struct st_db *db, int max_launching, int max_running, int64_t *id);
/*
 * As mj_claim_next(), then, when the job claimed runs on the local pool (its row's pool
 * hint), the pool jobs that follow it in the same order and the same queue, unbroken by
 * a job that does not, up to max_batch in all and within both limits (each counts as a
 * launching and, from WAITING, a running job): their ids into ids[0..*n), the first the
 * one mj_claim_next() would claim. *n is 0 when nothing may start.
 */
int mj_claim_batch(struct st_db *db, int max_launching, int max_running, size_t max_batch,
                   int64_t *ids, size_t *n);

/*
 * Cancel: every job named in ids (n of them), or named `name`, or all with all=1. A job
 * that holds nothing (WAITING, INACTIVE, backoff without a cluster) is CANCELLED at once;
 * other active ones get cancel_requested (the controller moves them through CANCELLING).
 * One transaction. *found: jobs matched that had not ended; *done: those cancelled at
 * once; *ended: jobs matched that had ended already (nothing done to them).
 */
int mj_cancel(struct st_db *db, const int64_t *ids, size_t n, const char *name, int all, int *found,
              int *done, int *ended);
/*
 * An id in ids that is a job group's (its first member's) cancels every member. And the
 * controller's cancel of auxiliary member id once its group's primaries ended: as
 * mj_cancel() of that one id, with cancel_requested MJ_CANCEL_BY_GROUP, so that its reason
 * names the group, not the user.
 */
#define MJ_CANCEL_BY_USER 1
#define MJ_CANCEL_BY_GROUP 2
int mj_cancel_aux(struct st_db *db, int64_t id);
/*
 * The bytes of a cancel's reason: its words and a group's name (at most TASK_NAME_MAX,
 * lib/task.h, characters).
 */
#define MJ_CANCEL_REASON_MAX 384
/* The reason of a cancelled job: the user's, or its group's (into out, size bytes). */
const char *mj_cancel_reason(const struct mjob *j, char *out, size_t size);

/* Holders: pid and start time of the worker doing job_id's launch or a cleanup. */
struct mj_holder {
	int64_t job_id; /* MJ_HOLDER_CLEANUP, MJ_HOLDER_WATCH, MJ_HOLDER_KEEP: those workers */
	char kind[16];
	int pid;
	uint64_t pid_start;
	double since;
};
#define MJ_HOLDER_CLEANUP (-2)
#define MJ_HOLDER_WATCH (-1)
#define MJ_HOLDER_KEEP (-3)
int mj_holder_set(struct st_db *db, int64_t job_id, const char *kind, int pid, uint64_t start);
int mj_holder_clear(struct st_db *db, int64_t job_id, int pid);
int mj_holders(struct st_db *db, struct mj_holder **out, size_t *n);

/* Cleanups: a cluster to tear down, or (pool) one cluster job to cancel on it. */
struct mj_cleanup {
	int64_t id, job_id;
	char *cluster;
	int64_t cluster_job; /* 0: tear the whole cluster down; -1: the same, after a relaunch */
	int picked;          /* the caller's mark */
};
int mj_cleanup_add(struct st_db *db, int64_t job_id, const char *cluster, int64_t cluster_job);
int mj_cleanups(struct st_db *db, struct mj_cleanup **out, size_t *n);
int mj_cleanup_done(struct st_db *db, int64_t id);
int mj_cleanup_count(struct st_db *db);
/* How many cleanups job_id still has (an index finds them: per job, not per table). */
int mj_cleanup_count_job(struct st_db *db, int64_t job_id);
void mj_cleanups_free(struct mj_cleanup *v, size_t n);

/* One transition of a job (job_events); strings valid during the callback only. */
struct mj_event {
	double at;
	int status, sched;
	const char *reason;
	int node_status;        /* of the run it ended (mj_transition_run()); -1 unknown */
	const char *exit_codes; /* that run's ranks' exit codes then; "" unknown */
};
/* Events of a job, oldest first; fn returning non-zero stops. */
int mj_events(struct st_db *db, int64_t id, int (*fn)(const struct mj_event *e, void *arg),
              void *arg);

/* jobs_meta: small key/value facts (limits, controller pid). */
int mj_meta_set(struct st_db *db, const char *key, const char *value);
/* Copies the value into out (size; a longer one is cut); "" when unset. */
int mj_meta_get(struct st_db *db, const char *key, char *out, size_t size);

/*
 * The DETAILS column: what the job is doing or waiting for, in words, appended to out
 * (whole: a reason grows with names and ranks). launching/running are the current counts,
 * max_* the limits (0: unknown).
 */
struct buf;
void mj_details(const struct mjob *j, int launching, int max_launching, int running,
                int max_running, double now, struct buf *out);

#endif
