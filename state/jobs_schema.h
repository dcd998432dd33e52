#ifndef SKIFF_STATE_JOBS_SCHEMA_H
#define SKIFF_STATE_JOBS_SCHEMA_H

/* The managed-jobs tables: the launcher database's migration 1 -> 2 (state/launcher.c). */

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

#endif
