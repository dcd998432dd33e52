#ifndef SKIFF_SUP_NODE_H
#define SKIFF_SUP_NODE_H

/*
 * A node's state directory ($SKIFF_HOME, mode 0700) and what lives in it:
 *
 *   node.db            the job queue (state/node.h)
 *   supervisor.sock    control socket, 0600, same-uid peers only (SO_PEERCRED)
 *   supervisor.lock    flock()ed by the running supervisor; holds its pid
 *   supervisor.log     the supervisor's own log
 *   logs/<id>/         per-job logs: setup.log, run.log
 *   hooks/stop, down   executables an infra installs; autostop runs one of them
 *
 * Paths are computed once from skiff_home(); all functions return static strings.
 */

#include <stdint.h>
#include <sys/types.h>

struct node_paths {
	const char *home;
	char *db;
	char *sock;
	char *lock;
	char *log;
	char *logs;
	char *hooks;
};

/* NULL (with an error printed) if no state dir can be determined. */
const struct node_paths *node_paths(void);
/* Creates the state dir (0700) and its subdirs. */
int node_ensure_dirs(void);

/* Resources of this machine, after the overrides stored in the node db. */
struct node_resources {
	double cpus;
	double memory; /* GiB */
	int gpus;
};
void node_detect_resources(struct node_resources *r);

/* --- processes (supervisor/proc.c) --- */

/* 1 if pid is alive and still the process that started at `start` (pid-reuse guard). */
int proc_is(pid_t pid, uint64_t start);
/* Up to max pids whose parent is `parent`; returns how many (0 if none or on error). */
int proc_children(pid_t parent, pid_t *out, int max);
/*
 * Sends sig to the process group pgid (if > 0) and to every child of the calling process
 * (a subreaper's children are the descendants that escaped the group) and their groups.
 * Returns how many targets were signalled.
 */
int proc_signal_tree(pid_t pgid, int sig);

#endif
