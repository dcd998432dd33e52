#ifndef SKIFF_SUP_DAEMON_H
#define SKIFF_SUP_DAEMON_H

/*
 * The supervisor's internal state: one `struct sup`, owned by daemon.c's event loop
 * (dispatch, reconcile), which hands it to requests.c (the control socket) and autostop.c.
 * They are called by the loop and never call back into it: what they want done next
 * (schedule, reload the settings, stop) they set in the struct, and the loop does it.
 * Nothing outside supervisor/ includes this header.
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

/* What an epoll event is for: the tag in the top byte of its data, the fd or id below. */
#define SUP_TAG_LISTEN 1ULL
#define SUP_TAG_SIGNAL 2ULL
#define SUP_TAG_CONN 3ULL
#define SUP_TAG_PIDFD 4ULL
#define SUP_TAG_SHIFT 56

struct sup {
	struct st_db *db;
	int lock_fd, lfd, sig_fd, epfd, log_fd;
	char boot[37];
	double started_at;
	int stopping;
	int sched_needed;
	int reload_needed; /* the settings changed (a config request): load them again */
	int poll_orphans;
	/* The socket we bound (see sock_gone()), and when to look at it next. */
	dev_t sock_dev;
	ino_t sock_ino;
	int64_t sock_check_at;

	struct node_resources cap;
	struct sched_res free;
	uint64_t gpu_free;
	uint64_t gpu_all; /* the GPUs jobs get: 0..gpus-1, or a share's (gpu_ids setting) */
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

/* requests.c */
struct conn;
struct msg;
void sup_reply(struct conn *c, const struct msg *m);
void sup_reply_error(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The supervisor a connection belongs to. */
struct sup *sup_conn_sup(const struct conn *c);
/* Accepts what waits on s->lfd; out of fds, stops watching it for a while. */
void sup_accept(struct sup *s);
/* Watches the listener again (its retry time came: s->listen_retry_at). */
void sup_listen_resume(struct sup *s);
/* Closes idle connections; returns when to look again (0: no connection is open). */
int64_t sup_conns_sweep(void);
void sup_conn_event(struct sup *s, int fd, uint32_t events);
/* Job id has ended: each peer watching it gets its final status (a no-op if not final). */
void sup_watch_notify(struct sup *s, int64_t id);

/* autostop.c */
void sup_autostop_load(struct sup *s);
void sup_autostop_check(struct sup *s);
void sup_autostop_activity(struct sup *s);
void sup_hook_reaped(struct sup *s, pid_t pid, int status);
void sup_op_autostop(struct conn *c, const struct msg *req);

#endif
