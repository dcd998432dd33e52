#ifndef SKIFF_STATE_JOBS_SCHEMA_H
#define SKIFF_STATE_JOBS_SCHEMA_H

/*
 * The managed-jobs tables: the launcher database's migrations 1 -> 2, 8 -> 9 and 10 -> 11
 * (state/launcher.c).
 */

/*
 * The schedule state has its own index: the controller's every query ("what is WAITING",
 * "how many LAUNCHING") is by schedule state, and DONE rows (the many) stay out of it
 * with a partial index.
 */
#define ST_JOBS_MIGRATION                                                                          \
	"CREATE TABLE managed_jobs ("                                                              \
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"                                                  \
	"  name TEXT NOT NULL DEFAULT '',"                                                         \
	"  entry TEXT NOT NULL DEFAULT '',"                                                        \
	"  spec TEXT NOT NULL DEFAULT '',"                                                         \
	"  cwd TEXT NOT NULL DEFAULT '',"                                                          \
	"  ovargs TEXT NOT NULL DEFAULT '',"                                                       \
	"  infra TEXT NOT NULL DEFAULT '',"                                                        \
	"  strategy INTEGER NOT NULL DEFAULT 0,"                                                   \
	"  max_restarts INTEGER NOT NULL DEFAULT 0,"                                               \
	"  recover_codes TEXT NOT NULL DEFAULT '',"                                                \
	"  priority INTEGER NOT NULL DEFAULT 0,"                                                   \
	"  status INTEGER NOT NULL CHECK (status BETWEEN 0 AND 11),"                               \
	"  sched INTEGER NOT NULL CHECK (sched BETWEEN 0 AND 6),"                                  \
	"  ntasks INTEGER NOT NULL DEFAULT 1,"                                                     \
	"  task_index INTEGER NOT NULL DEFAULT 0,"                                                 \
	"  recoveries INTEGER NOT NULL DEFAULT 0,"                                                 \
	"  restarts INTEGER NOT NULL DEFAULT 0,"                                                   \
	"  attempts INTEGER NOT NULL DEFAULT 0,"                                                   \
	"  cluster TEXT NOT NULL DEFAULT '',"                                                      \
	"  cluster_job INTEGER NOT NULL DEFAULT 0,"                                                \
	"  pool INTEGER NOT NULL DEFAULT 0,"                                                       \
	"  task_id TEXT NOT NULL DEFAULT '',"                                                      \
	"  reason TEXT NOT NULL DEFAULT '',"                                                       \
	"  submitted_at REAL NOT NULL,"                                                            \
	"  started_at REAL,"                                                                       \
	"  ended_at REAL,"                                                                         \
	"  next_try_at REAL NOT NULL DEFAULT 0,"                                                   \
	"  cancel_requested INTEGER NOT NULL DEFAULT 0,"                                           \
	"  node_status INTEGER NOT NULL DEFAULT -1,"                                               \
	"  exit_codes TEXT NOT NULL DEFAULT '',"                                                   \
	"  probe_error TEXT NOT NULL DEFAULT '',"                                                  \
	"  probe_failures INTEGER NOT NULL DEFAULT 0"                                              \
	");"                                                                                       \
	"CREATE INDEX managed_jobs_sched ON managed_jobs(sched, priority DESC, id) "               \
	"  WHERE sched != 6;"                                                                      \
	"CREATE INDEX managed_jobs_name ON managed_jobs(name);"                                    \
	"CREATE TABLE job_events ("                                                                \
	"  job_id INTEGER NOT NULL,"                                                               \
	"  at REAL NOT NULL,"                                                                      \
	"  status INTEGER NOT NULL,"                                                               \
	"  sched INTEGER NOT NULL,"                                                                \
	"  reason TEXT NOT NULL DEFAULT ''"                                                        \
	");"                                                                                       \
	"CREATE INDEX job_events_job ON job_events(job_id, at);"                                   \
	"CREATE TABLE job_holders ("                                                               \
	"  job_id INTEGER PRIMARY KEY,"                                                            \
	"  kind TEXT NOT NULL,"                                                                    \
	"  pid INTEGER NOT NULL,"                                                                  \
	"  pid_start INTEGER NOT NULL,"                                                            \
	"  since REAL NOT NULL"                                                                    \
	");"                                                                                       \
	"CREATE TABLE job_cleanups ("                                                              \
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"                                                  \
	"  job_id INTEGER NOT NULL,"                                                               \
	"  cluster TEXT NOT NULL,"                                                                 \
	"  cluster_job INTEGER NOT NULL DEFAULT 0"                                                 \
	");"                                                                                       \
	"CREATE TABLE jobs_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"

/*
 * Migration 8 -> 9: a row per task of each job (a pipeline's tasks are rows of `jobs queue`,
 * as in SkyPilot): its name and what it asks for, written at submit; when it began (the
 * job's submit for the first task, the previous task's end after), first ran and ended; the
 * seconds it ran (run_s, plus now - run_since while it runs: recovery and launch waits do
 * not count); its recoveries. Its status is the job's (state/jobs.c: mj_task_status()).
 * And an event that ends a run keeps what the last probe saw of that run (the node's
 * status, the ranks' exit codes): `jobs logs` says how each run ended.
 */
#define ST_JOB_TASKS_MIGRATION                                                                     \
	"CREATE TABLE job_tasks ("                                                                 \
	"  job_id INTEGER NOT NULL,"                                                               \
	"  task INTEGER NOT NULL,"                                                                 \
	"  name TEXT NOT NULL DEFAULT '',"                                                         \
	"  requested TEXT NOT NULL DEFAULT '',"                                                    \
	"  submitted_at REAL,"                                                                     \
	"  started_at REAL,"                                                                       \
	"  ended_at REAL,"                                                                         \
	"  run_s REAL NOT NULL DEFAULT 0,"                                                         \
	"  run_since REAL,"                                                                        \
	"  recoveries INTEGER NOT NULL DEFAULT 0,"                                                 \
	"  PRIMARY KEY (job_id, task)"                                                             \
	") WITHOUT ROWID;"                                                                         \
	"ALTER TABLE job_events ADD COLUMN node_status INTEGER NOT NULL DEFAULT -1;"               \
	"ALTER TABLE job_events ADD COLUMN exit_codes TEXT NOT NULL DEFAULT '';"

/*
 * Migration 10 -> 11: job groups (SkyPilot's JobGroup, docs/managed-jobs.md). A group is
 * one managed job per task, submitted together with consecutive ids; each row says its
 * group (group_id, the first member's id; 0: in none), its task's index in the file, whether
 * it is a primary task, the seconds its cancel waits after the primaries ended (an
 * auxiliary task's), and the group's name. The index finds a group's members.
 */
#define ST_JOB_GROUPS_MIGRATION                                                                    \
	"ALTER TABLE managed_jobs ADD COLUMN group_id INTEGER NOT NULL DEFAULT 0;"                 \
	"ALTER TABLE managed_jobs ADD COLUMN group_task INTEGER NOT NULL DEFAULT 0;"               \
	"ALTER TABLE managed_jobs ADD COLUMN group_primary INTEGER NOT NULL DEFAULT 1;"            \
	"ALTER TABLE managed_jobs ADD COLUMN group_delay_s INTEGER NOT NULL DEFAULT 0;"            \
	"ALTER TABLE managed_jobs ADD COLUMN group_name TEXT NOT NULL DEFAULT '';"                 \
	"CREATE INDEX managed_jobs_group ON managed_jobs(group_id) WHERE group_id != 0;"

/*
 * Migration 11 -> 12: a job's cleanups found by its id. Each cleanup done asks whether
 * its job has any left (it is CANCELLED once none is): without the index that asked the
 * whole table each time, and `jobs cancel -a` of N jobs took time in N squared.
 */
#define ST_JOB_CLEANUPS_INDEX_MIGRATION "CREATE INDEX job_cleanups_job ON job_cleanups(job_id);"

#endif
