#ifndef SKIFF_SUP_DAEMON_H
#define SKIFF_SUP_DAEMON_H

/*
 * The supervisor's internal state, shared by its files: daemon.c (event loop, dispatch,
 * reconcile), requests.c (control socket), autostop.c. One instance, `S`, owned by
 * sup_main(). Nothing outside supervisor/ includes this header.
 */

#include <stdint.h>
#include <sys/types.h>

#include "lib/log.h"
#include "state/db.h"
#include "supervisor/node.h"
#include "supervisor/policy.h"
#include "supervisor/sched.h"

/* A dispatched job: its shim and the resources it holds. */
struct runjob {
	int64_t id;
	pid_t shim_pid;
	uint64_t shim_start;
	int pidfd; /* for re-adopted shims (not our children); -1 otherwise */
	int child; /* 1: our child, reaped through SIGCHLD */
	double cpus, memory;
	int gpus;
	uint64_t gpu_mask;
};

enum wait_for { WAIT_JOBS_AND_SSH = 0, WAIT_JOBS, WAIT_NONE };

struct sup {
	struct st_db *db;
	int lock_fd, lfd, sig_fd, epfd, log_fd;
	char boot[37];
	double started_at;
	int stopping;
	int sched_needed;
	int poll_orphans;
	/* The socket we bound (see sock_gone()), and when to look at it next. */
	dev_t sock_dev;
	ino_t sock_ino;
	int64_t sock_check_at;

	struct node_resources cap;
	struct sched_res free;
	uint64_t gpu_free;
	int max_bypass;
	double cancel_grace;

	struct runjob *run;
	size_t nrun, caprun;
	size_t nwatch; /* connections waiting for a job's end */

	struct fd_budget fds;      /* from RLIMIT_NOFILE (policy.h) */
	size_t npidfds;            /* adopted shims watched through a pidfd */
	int64_t dispatch_retry_at; /* now_ms() when a failed dispatch round is tried again */
	struct ratelimit dispatch_warned;
	int64_t listen_retry_at; /* now_ms() when to watch the listener again (out of fds) */
	int64_t conn_sweep_at;   /* now_ms() when to close idle connections; 0: none open */

	/* autostop */
	double idle_minutes; /* < 0: off */
	int autostop_down;
	int wait_for;
	int64_t last_active;       /* now_ms() of the last activity */
	int64_t autostop_deadline; /* now_ms() when to check idleness; 0: none */
	pid_t hook_pid;
	int64_t hook_deadline;
};

extern struct sup S;

struct runjob *sup_find_run(int64_t id);
void sup_schedule(void);
void sup_reload_config(void);
void sup_recompute_free(void);
int sup_ep_add_conn(int fd);
int sup_ep_mod_conn(int fd, uint32_t events);

/* requests.c */
struct conn;
struct msg;
void sup_reply(struct conn *c, const struct msg *m);
void sup_reply_error(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sup_accept(int lfd);
/* Stops watching the listener for retry_ms (no fd left to accept with), or until */
void sup_listen_pause(int retry_ms);
/* ... a connection closes: watches it again. */
void sup_listen_resume(void);
/* Closes idle connections; returns when to look again (0: no connection is open). */
int64_t sup_conns_sweep(void);
void sup_conn_event(int fd, uint32_t events);
void sup_conns_close(void);
/* Job id has ended: each peer watching it gets its final status (a no-op if not final). */
void sup_watch_notify(int64_t id);

/* autostop.c */
void sup_autostop_load(void);
void sup_autostop_check(void);
void sup_autostop_activity(void);
void sup_hook_reaped(pid_t pid, int status);
void sup_op_autostop(struct conn *c, const struct msg *req);

#endif
