#ifndef SKIFF_STATE_NODE_H
#define SKIFF_STATE_NODE_H

/*
 * The node's durable job queue ($SKIFF_HOME/node.db). Writers are the supervisor
 * (submit, dispatch, cancel requests, reconcile) and each job's shim (its own job's
 * progress and final status); readers are the CLI commands. Every status change is a
 * single-row UPDATE guarded by the status it expects, so the supervisor and a shim can
 * never overwrite each other's terminal result.
 */

#include <stdint.h>
#include <sys/types.h>

#include "lib/buf.h"
#include "state/db.h"

/* SkyPilot's JobStatus, in its declaration order (statuses merge with max()). */
enum job_status {
	JOB_INIT = 0,
	JOB_PENDING,
	JOB_SETTING_UP,
	JOB_RUNNING,
	JOB_FAILED_DRIVER,
	JOB_SUCCEEDED,
	JOB_FAILED,
	JOB_FAILED_SETUP,
	JOB_CANCELLED,
	JOB_N_STATUS
};

const char *job_status_name(int status);
int job_status_parse(const char *name);
int job_status_terminal(int status);
/* A job status as `logs` reports it (lib/exit.h): 0, 100 failed, 101 not finished, 103. */
int job_exit_code(int status);

struct job {
	int64_t id;
	char *name;
	int status;
	int priority;
	double cpus;      /* reserved CPUs (0.5 when the job declares none) */
	double memory;    /* reserved memory in GiB */
	int gpus;         /* reserved accelerator count */
	char *setup;      /* shell script or NULL */
	char *run;        /* shell script or NULL */
	char *cwd;        /* working directory or NULL (the state dir's home) */
	int cwd_optional; /* cwd missing: the job starts in the home instead of failing */
	int profile;      /* SkyPilot's prelude (supervisor/script.h) before the job's script */
	char *log_dir;
	char *envs; /* "K=V\0K=V\0...", and copies "=K=OLD\0" (lib/env.h's env blob) */
	size_t envs_len;
	double submitted_at, started_at, ended_at; /* epoch seconds; 0 = not yet */
	char *exit_codes;                          /* comma-separated per rank, "" until known */
	char *gpu_ids;                             /* e.g. "0,1": given as CUDA_VISIBLE_DEVICES */
	char *reason;                              /* why it failed or was cancelled, in words */
	pid_t shim_pid;
	uint64_t shim_start; /* process start time of the shim (pid reuse guard) */
	pid_t job_pid;       /* leader of the job's process group */
	uint64_t job_start;
	char boot_id[37];
	int cancel_requested;
	int bypassed;        /* times a later job was started ahead of this one (backfill) */
	double cancel_grace; /* seconds between SIGTERM and SIGKILL */
	char *renv;          /* runtime env spec (bootstrap/renv/renv.h blob) or NULL */
	size_t renv_len;
	char *submit_key;  /* the submitter's idempotency key, or NULL */
	int failed_starts; /* shims that failed before starting it (supervisor/policy.h) */
};

void job_free(struct job *j);
/* For the tests: 0 if struct job's row table names the SELECT's columns, in order. */
int st_node_cols_check(void);

extern const struct st_schema st_node_schema;

/*
 * Inserts a PENDING job; fills j->id and j->submitted_at. A submit_key that another job
 * has already gives an error (the index is UNIQUE): look it up first.
 */
int st_job_insert(struct st_db *db, struct job *j);
/* Loads one job; 0, -ENOENT, or an error. */
int st_job_get(struct st_db *db, int64_t id, struct job *out);
/* Loads the job submitted with this idempotency key; 0, -ENOENT, or an error. */
/*
 * st_job_get() of the job's state alone: id, status, exit_codes, the shim's and the
 * leader's pid and start, boot_id, cancel_requested, failed_starts; the rest zero or
 * NULL (job_free() as ever).
 */
int st_job_get_state(struct st_db *db, int64_t id, struct job *out);
int st_job_find_key(struct st_db *db, const char *key, struct job *out);
/*
 * Calls fn for each job whose status is in the bitmask (1 << JOB_x), ordered by id; a
 * nonzero return stops it (a negative one is returned). The rows are all read first, so
 * fn may read and write the db (the reconcile finishes jobs from it).
 */
int st_job_each(struct st_db *db, unsigned status_mask, int (*fn)(struct job *j, void *arg),
                void *arg);

/* What the scheduler needs of a PENDING job that has no shim yet. */
struct job_sched {
	int64_t id;
	int priority;
	double cpus, memory;
	int gpus;
	int bypassed;
};
/* The SQL of st_job_each_pending(), for its query-plan test. */
extern const char st_job_pending_sql[];
/* Calls fn for each PENDING, undispatched job (a light query: no scripts, no envs). */
int st_job_each_pending(struct st_db *db, int (*fn)(const struct job_sched *j, void *arg),
                        void *arg);

/* What a down (supervisor/down.c) needs of a job that was given a shim. */
struct job_shim {
	int64_t id;
	int status;
	pid_t shim_pid;
	uint64_t shim_start;
	pid_t job_pid;
	uint64_t job_start;
	double cancel_grace;
};
/* Calls fn for each job that was given a shim, ordered by id (a light query). */
int st_job_each_shim(struct st_db *db, int (*fn)(const struct job_shim *j, void *arg), void *arg);

/* Sets status (and started_at/ended_at as the status implies) if it is one of `from`. */
int st_job_set_status(struct st_db *db, int64_t id, unsigned from_mask, int status,
                      const char *reason);
/* Records the shim that was dispatched for a PENDING job. */
int st_job_set_shim(struct st_db *db, int64_t id, pid_t pid, uint64_t start, const char *boot,
                    const char *gpu_ids);
/*
 * Undoes st_job_set_shim() of a job that is still PENDING under shim_pid: a shim that is
 * gone without having started anything (the shim sets SETTING_UP or RUNNING before it
 * starts a step), so the job is queued again and runs once. failed: the shim failed (it
 * did not just find its go missing), counted in failed_starts. 0, or -ESTALE when the row
 * moved on (another status, another shim).
 */
int st_job_requeue(struct st_db *db, int64_t id, pid_t shim_pid, int failed);
int st_job_set_proc(struct st_db *db, int64_t id, pid_t pid, uint64_t start);
/* The shim's final word: exit codes, final status, end time. */
int st_job_finish(struct st_db *db, int64_t id, int status, const char *exit_codes,
                  const char *reason);
int st_job_add_bypass(struct st_db *db, int64_t id);
int st_job_request_cancel(struct st_db *db, int64_t id);
int st_job_set_log_dir(struct st_db *db, int64_t id, const char *dir);

/* Key/value settings (autostop, resource overrides). Missing keys give def / NULL. */
int st_kv_set(struct st_db *db, const char *key, const char *value);
char *st_kv_get(struct st_db *db, const char *key);
double st_kv_get_double(struct st_db *db, const char *key, double def);

#define JOB_MASK(s) (1u << (s))
#define JOB_MASK_ACTIVE                                                                            \
	(JOB_MASK(JOB_INIT) | JOB_MASK(JOB_PENDING) | JOB_MASK(JOB_SETTING_UP) |                   \
	 JOB_MASK(JOB_RUNNING))
#define JOB_MASK_ALL ((1u << JOB_N_STATUS) - 1)

/*
 * The node db's kv keys that hold autostop (supervisor/autostop.c writes them; `node
 * call`'s autostop_state reads the fired ones without a supervisor).
 */
#define NODE_KV_AUTOSTOP_IDLE "autostop_idle_minutes" /* the setting; NULL: none */
#define NODE_KV_AUTOSTOP_DOWN "autostop_down"
#define NODE_KV_AUTOSTOP_WAIT_FOR "autostop_wait_for"
#define NODE_KV_AUTOSTOP_BOOT "autostop_boot"   /* the boot it was set in */
#define NODE_KV_AUTOSTOP_FIRED "autostop_fired" /* stop or down, once it fired */
#define NODE_KV_AUTOSTOP_FIRED_AT "autostop_fired_at"

#endif
