#ifndef SKIFF_SUP_POLICY_H
#define SKIFF_SUP_POLICY_H

/*
 * The supervisor's decisions that are not scheduling (supervisor/sched.h), as pure
 * functions with unit tests (tests/unit/test-policy.c): what becomes of a job whose shim
 * is found gone or alive, and how the daemon spends its file descriptors.
 */

#include <stddef.h>
#include <stdint.h>

/* What to do with an active job row, given what is known of its shim. */
enum job_fate {
	FATE_KEEP = 0,      /* nothing to do: pending and never dispatched, or already final */
	FATE_ADOPT,         /* the shim lives (or cannot be told dead): watch it */
	FATE_REQUEUE,       /* the shim is gone before it started anything: PENDING again */
	FATE_CANCEL,        /* gone, and a cancel had been asked for: CANCELLED */
	FATE_FAIL_DRIVER,   /* gone while the job ran: FAILED_DRIVER, its processes killed */
	FATE_FAIL_REBOOTED, /* it ran before the node rebooted: FAILED_DRIVER */
};

/* What is known of a job's row and its shim. */
struct job_facts {
	int status;     /* enum job_status */
	int dispatched; /* a shim was recorded (shim_pid != 0) */
	int same_boot;  /* its boot id is this boot's */
	int shim_alive; /* proc_alive() of the shim: 1, 0, or < 0 (cannot tell) */
	int cancel_requested;
	int failed_starts; /* times a shim of it failed before starting it, this one included */
};

/*
 * A shim that fails before it starts its job while the supervisor lives (it crashed, the
 * binary is broken) leaves the job PENDING; after this many such failures the job is
 * FAILED_DRIVER rather than dispatched again and again.
 */
#define JOB_MAX_FAILED_STARTS 3

/*
 * The fate of a row at the supervisor's start (reconcile) or when its shim is reaped or
 * its pidfd fires (shim_alive 0 then). A PENDING row with a shim never started a step (the
 * shim sets SETTING_UP or RUNNING before it starts one), so its job is queued again and
 * runs once, never FAILED_DRIVER, unless its shims failed JOB_MAX_FAILED_STARTS times. A
 * shim that cannot be told dead is adopted, never failed: its job is looked at again later.
 */
enum job_fate job_fate(const struct job_facts *f);

/*
 * How the supervisor spends RLIMIT_NOFILE. FD_RESERVE stays free for what it always holds
 * (the database and its WAL and shm files, the log, the lock, epoll, the signalfd, the
 * listener) and for short-lived ones (spawn's pipes, /proc reads, SQLite's temp files).
 * Of the rest, half is for client connections (at most MAX_CONNS), a quarter for the
 * pidfds of re-adopted shims (the others are polled), a quarter for the go-pipes a
 * dispatch round holds until its commit (the round stops there and the next goes on).
 */
#define FD_RESERVE 32
#define MAX_CONNS 4096

struct fd_budget {
	size_t conns;    /* client connections open at once */
	size_t pidfds;   /* adopted shims watched through a pidfd */
	size_t dispatch; /* shims started by one dispatch round */
};

void fd_budget(uint64_t nofile, struct fd_budget *b);

/*
 * `node down --all` (the cancel-then-stop of the launcher's `down`): once every job is
 * cancelled and the supervisor asked to stop, it waits for everything of the node to be
 * gone (the supervisor, its shims, their jobs' processes, followers and `node call`
 * sessions). The shims get their jobs' cancel grace and DOWN_SLACK_MS more (at most
 * DOWN_GRACE_MAX_MS in all) to end them; then what is left gets SIGTERM, after
 * DOWN_TERM_MS SIGKILL, and after DOWN_KILL_MS more whatever is still there (a process
 * in D state) is reported, never waited for longer.
 */
#define DOWN_SLACK_MS 3000
#define DOWN_GRACE_MAX_MS 60000
#define DOWN_TERM_MS 2000
#define DOWN_KILL_MS 2000
/* How often it looks again meanwhile. */
#define DOWN_POLL_MS 50
/* A down of many nodes of this machine at once asks this many supervisors at a time. */
#define DOWN_STOP_THREADS 8

enum down_step {
	DOWN_DONE = 0, /* nothing is left */
	DOWN_WAIT,     /* the shims are still ending their jobs: look again */
	DOWN_TERM,     /* SIGTERM to what is left */
	DOWN_KILL,     /* SIGKILL to what is left */
	DOWN_GIVE_UP,  /* it survived SIGKILL: report it */
};

/* The grace for the shims: the longest cancel grace of the jobs (seconds), plus the slack. */
int64_t down_grace_ms(double cancel_grace_s);
/* What to do elapsed_ms after the stop was asked for, with `left` processes left. */
enum down_step down_step(int64_t elapsed_ms, int64_t grace_ms, int left);

#endif
