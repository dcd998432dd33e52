#ifndef SKIFF_JOBS_POLICY_H
#define SKIFF_JOBS_POLICY_H

/*
 * The decisions of the launcher's daemons (the gang watcher, the managed-jobs controller
 * and its workers), as pure functions with unit tests (tests/unit/test-jobs-policy.c).
 */

#include <stddef.h>
#include <stdint.h>

struct buf;
struct mjob;

/* ---- the gang watcher (supervisor/jobs/gang.c) --------------------------------------- */

/* A rank's end that stops the gang: not SUCCEEDED nor CANCELLED, or none known (lost). */
int gang_end_stops_others(const char *status);

/*
 * When to try again to stop a rank on a node that could not be reached: after 5 s, then
 * 10, 20 and every 30 s (a try on a node still away fails within ssh's timeouts).
 */
int64_t gang_retry_delay_ms(int tries);
/* The watcher gives up on a lost node after this long (the cluster's down ends it). */
#define GANG_RETRY_MAX_MS ((int64_t)24 * 3600 * 1000)
/* How long the watcher lets the job start before it looks. */
#define GANG_START_DELAY_MS 100

/*
 * A watch that ends without the rank's status is a node that stopped answering, not yet
 * a node lost: a blip of the network or of the transport (an ssh master gone, an API
 * server restarting: every `kubectl exec` breaks at once), or a supervisor that died and
 * is started again by the next call. The rank is watched again until its node answers;
 * it is lost, and the gang fails, once its node has not answered for GANG_LOST_MS (in the
 * manner of Ray's node-death timeout), or at once when the node is gone (a pod deleted, a
 * container or an allocation ended, a local node's directory removed: runner_node_gone())
 * or no longer knows the job (its supervisor answers that it has none of that id).
 * SKIFF_GANG_LOST_MS sets another bound (GANG_LOST_MIN_MS..GANG_RETRY_MAX_MS).
 */
#define GANG_LOST_MS ((int64_t)30 * 1000)
#define GANG_LOST_MIN_MS ((int64_t)1000)
/* A rank's watch is tried again after 1 s, then 2 and 4 s, then every GANG_REWATCH_MAX_MS. */
#define GANG_REWATCH_FIRST_MS ((int64_t)1000)
#define GANG_REWATCH_MAX_MS ((int64_t)5000)

enum gang_away {
	GANG_AWAY_RETRY, /* watch it again at *at */
	GANG_AWAY_LOST,  /* its node is lost: the rank has failed */
};
/*
 * A rank whose watch ended at now without its status: away_since is when its node stopped
 * answering (now, the first time), tries how many watches of it were tried since, gone
 * whether the transport said that the node is no longer there, stopping whether the gang
 * is being stopped already (a rank that cannot be asked then is stopped once its node
 * is back, not watched), lost_ms the bound. On GANG_AWAY_RETRY, *at is when to watch it
 * again: never past the bound, where a watch still under way is given up (gang_lost_at()).
 */
enum gang_away gang_away_decide(int64_t away_since, int64_t now, int tries, int gone, int stopping,
                                int64_t lost_ms, int64_t *at);
/* When a rank away since away_since is lost, whatever its watch under way says. */
int64_t gang_lost_at(int64_t away_since, int64_t lost_ms);
/* The bound from SKIFF_GANG_LOST_MS's value env (NULL: unset), else GANG_LOST_MS; -1 if bad. */
int64_t gang_lost_ms(const char *env);

/* ---- the managed-jobs controller (supervisor/jobs/controller.c) ------------------------- */

/* Launch backoff grows by this factor per failed attempt up to JOBS_BACKOFF_CAP_S. */
#define JOBS_BACKOFF_GROWTH 1.6
#define JOBS_BACKOFF_CAP_S 300
/* The backoff is spread by this fraction either way, so that retries do not march together. */
#define JOBS_BACKOFF_JITTER 0.4

/*
 * Seconds to wait before launch attempt attempts+1: base_s after the first failure,
 * growing by JOBS_BACKOFF_GROWTH up to JOBS_BACKOFF_CAP_S (a base above the cap is kept),
 * times 1 + jitter, with jitter in [-1, 1] scaled by JOBS_BACKOFF_JITTER.
 */
double jobs_backoff_s(int base_s, int attempts, double jitter);

/* The first exit code of codes ("1,2,3") that list names, or -1. */
int jobs_code_listed(const char *codes, const char *list);

/* The most bytes of exit codes a job's reason holds (about 64 ranks' codes, listed). */
#define JOBS_REASON_CODES_MAX 256

/*
 * The per-rank exit codes codes ("100,0,100", rank order) for a reason, appended to out in
 * at most max bytes (max >= 80): the list as it is when it fits; else each code with how
 * many ranks exited with it, the most common first ("100 x 120, 1 x 1"), and when even
 * those do not fit, the ones left said as ", ... 40 more codes (68 ranks)". A number is
 * never cut. "-" for no codes. 0, or the buf's error.
 */
int jobs_codes_summary(struct buf *out, const char *codes, size_t max);

/* What the controller does when a launch worker is gone (jobs_launch_decide()). */
enum jobs_launch_act {
	JL_NONE,             /* the worker recorded its success itself */
	JL_CANCEL,           /* cancelled during the launch: CANCELLING (it holds a cluster) or
	                        CANCELLED */
	JL_FAIL_PRECHECKS,   /* the task cannot run there (the launch said so: bad input) */
	JL_FAIL_NO_RESOURCE, /* no attempt left */
	JL_BACKOFF,          /* try again after jobs_backoff_s() */
	JL_OFFLINE,          /* this host was cut off: try again, the attempt not counted */
};

/*
 * j as the database has it, code the worker's exit status (-1 unknown: it died), launching
 * whether j is still LAUNCHING, attempts_max the launch attempts allowed.
 */
enum jobs_launch_act jobs_launch_decide(const struct mjob *j, int launching, int code,
                                        int attempts_max);

/* What the controller does with the watch worker's last look at an ALIVE job. */
enum jobs_probe_act {
	JP_NONE,      /* nothing yet */
	JP_NEXT_TASK, /* this task succeeded; the pipeline's next one starts */
	JP_SUCCEED,   /* the job succeeded */
	JP_FAIL,      /* the job ends with .status (FAILED or FAILED_SETUP) */
	JP_RECOVER,   /* relaunched, not counted as a restart (a listed code, a lost node) */
	JP_RESTART,   /* relaunched, counted against max_restarts_on_errors */
	JP_CANCELLED, /* cancelled on its cluster */
};

struct jobs_probe_decision {
	enum jobs_probe_act act;
	int status;        /* JP_FAIL: MJ_FAILED or MJ_FAILED_SETUP */
	int code;          /* JP_RECOVER for a listed code: the code; else -1 */
	int before_cancel; /* the end came before a cancel the user asked for */
};

/*
 * 1 when this host is cut off from every network: routes (the text of /proc/net/route)
 * go out through some interface other than lo, and none of those is up as state(IFACE)
 * tells ("up", or "unknown" for links that do not say, such as tun). A node that does
 * not answer then says nothing about the node: the controller does not count it as lost,
 * nor a launch that failed as an attempt (docs/managed-jobs.md). 0 when nothing is known.
 */
int jobs_host_cut_off(const char *routes, const char *(*state)(const char *iface, void *arg),
                      void *arg);

/*
 * A node that cannot be asked counts as lost once probe_max looks in a row have failed over
 * at least lost_ms (the gang watcher's bound: a Kubernetes API server restarting, a blip of
 * the network, must not relaunch every job), or at once when a look found it gone (a pod,
 * container or allocation that is no longer there: j->probe_gone). now: wall seconds.
 */
#define JOBS_LOST_MS 30000
struct jobs_probe_decision jobs_probe_decide(const struct mjob *j, int probe_max, long lost_ms,
                                             double now);

/*
 * 1 when the last probe of j's cluster job saw it end on every node it ran on (a final
 * status, and no node that could not be asked: probe_error is empty). Only then may a
 * new attempt start while the old cluster is still being released. Otherwise (a node did
 * not answer, the cluster could not be opened, a gang's rank failed while another one's
 * node was away) the old copy may still run: the controller releases its cluster first,
 * confirmed (every node said nothing of it runs there, or its machines are gone), and
 * starts the new attempt only then (jobs_backoff_over()). A node that cannot be asked is
 * not a node that lost the job.
 */
int jobs_old_copy_gone(const struct mjob *j);

struct mj_cleanup;
/*
 * Whether j, in backoff, may go back to waiting for a launch: its backoff has run out
 * (next_try_at <= now) and no release of one of its clusters is still to be done,
 * cu[0..n) being the pending ones (job_cleanups). A release deferred until after the
 * relaunch (EAGER_NEXT_REGION, cluster_job -1) does not hold it.
 */
int jobs_backoff_over(const struct mjob *j, const struct mj_cleanup *cu, size_t n, double now);

/* One member of a job group, as jobs_group_decide() sees it. */
struct jobs_group_member {
	int primary;      /* a primary task; else auxiliary */
	int ended;        /* its status is terminal */
	int cancel_asked; /* a cancel is on its way already (the user's, or an earlier one) */
	double ended_at;  /* when it ended (epoch seconds), if it did */
	double delay_s;   /* an auxiliary one: its termination_delay */
	int cancel;       /* out: cancel it now */
};

/*
 * Which auxiliary members of a job group (v[0..n)) to cancel at now: once every primary
 * member has ended (a group with none never cancels any), each auxiliary one that has not
 * ended and has no cancel asked for is due at the last primary's ended_at plus its
 * delay_s; those due by now get cancel set. Returns the earliest due time still ahead
 * (the controller wakes then), 0 when none.
 */
double jobs_group_decide(struct jobs_group_member *v, size_t n, double now);

/* ---- kept logs (supervisor/jobs/kept.c) ------------------------------------------------ */

/* jobs.controller.task_logs_gc_retention_hours when the config does not set it (a week). */
#define JOBS_KEPT_RETENTION_HOURS 168.0
/* The most all kept task logs may take (SKIFF_JOBS_KEPT_MAX_BYTES overrides it). */
#define JOBS_KEPT_MAX_BYTES ((long long)10 << 30)
/* How often the controller collects kept logs (SKIFF_JOBS_KEPT_GC_S overrides it). */
#define JOBS_KEPT_GC_INTERVAL_S 600

/*
 * Whether run index (of nruns, the cluster jobs the managed job j ran as, in order) has
 * ended, so that its logs may be kept: a later one exists, the job has ended, or the job
 * no longer runs as run_job, or its last probe saw run_job end.
 */
int jobs_run_ended(const struct mjob *j, int index, int nruns, int64_t run_job);

/* Why jobs_kept_gc_decide() removes a job's kept logs. */
enum jobs_gc_why {
	JOBS_GC_KEEP = 0, /* kept */
	JOBS_GC_AGE,      /* ended longer than the retention ago */
	JOBS_GC_SIZE,     /* the oldest ended, while all kept logs take more than the cap */
};

/* One managed job's kept logs, as the collector sees them. */
struct jobs_kept {
	int64_t id;
	int ended;       /* the job has ended: only then are its logs ever removed */
	double ended_at; /* epoch seconds */
	uint64_t bytes;  /* what its kept logs take */
	int gc;          /* out: enum jobs_gc_why */
};

/*
 * Decides which kept logs go: each ended job whose end is at least retention_s before now
 * (retention_s < 0: no age limit), then, while the logs kept take more than max_bytes
 * (0: no cap), ended jobs oldest end first (then lowest id). A job that has not ended is
 * never removed, and counts toward the total. Sets v[i].gc; returns how many go.
 */
size_t jobs_kept_gc_decide(struct jobs_kept *v, size_t n, double now, double retention_s,
                           uint64_t max_bytes);

/* ---- the files launchers sent a controller host (supervisor/jobs/host.c) -------------- */

/*
 * How long an upload under files/TOKEN that no job names yet is kept: a `jobs launch`
 * between its upload and its submit, or one that failed between them.
 */
#define JOBS_FILES_GRACE_S 3600

/* One upload, files/TOKEN: the workdirs and mounts of one `jobs launch` (its copies). */
struct jobs_files {
	double mtime; /* the upload's directory's, epoch seconds */
	int jobs;     /* managed jobs whose paths point into it */
	int live;     /* of them, those that have not ended */
};

/*
 * Whether an upload goes: when no live job needs it, once a job named it (all such jobs
 * ended: the copies of one launch are submitted together) or once grace_s has passed
 * since the upload without any job naming it.
 */
int jobs_files_gc_decide(const struct jobs_files *f, double now, double grace_s);

/*
 * Stopping the controller host (jobs_host_stop()): what to do with a worker the stopped
 * controller left running, by its holder id (state/jobs.h MJ_HOLDER_*, or a job id).
 * A launch or a cleanup worker books or releases clusters and records them in the
 * launcher db: it is waited for, never killed, and the host's home stays until it ended.
 * The gang watcher and the log keeper only watch and copy: they are told to stop.
 */
enum jobs_stop_action {
	JOBS_STOP_WAIT,   /* let it end on its own */
	JOBS_STOP_SIGNAL, /* SIGTERM it, then wait for it */
};
enum jobs_stop_action jobs_host_stop_action(int64_t holder);

#endif
