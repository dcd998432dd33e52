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
 *   taken-down         `node down --all` was here (the launcher's down or stop): until a
 *                      `node up`, no request starts a supervisor (supervisor/client.c)
 *
 * node_paths() are computed once from skiff_home() and static; node_paths_of() are
 * another node's of this machine (a local cluster's, for its launcher).
 */

#include <stdint.h>
#include <sys/types.h>

/* The supervisor's socket, in the node's state directory (node_paths()->sock). */
#define SUP_SOCK_NAME "supervisor.sock"

struct node_paths {
	const char *home;
	/* The node's own home: home, or for a cluster's (lib/util.h cluster_home_of()) the
	 * one it is under, which keeps the node's record of who holds it (hold.h). */
	char *host;
	char *db;
	char *sock;
	char *lock;
	char *log;
	char *logs;
	char *hooks;
	char *taken_down;
};

/* NULL (with an error printed) if no state dir can be determined. */
const struct node_paths *node_paths(void);
/* The paths of the node whose state dir is home (not a cluster's: host is home too). */
struct node_paths *node_paths_of(const char *home);
void node_paths_free(struct node_paths *p);
/* Creates the state dir (0700) and its subdirs. */
int node_ensure_dirs(void);

/* Resources of this machine, after the overrides stored in the node db. */
struct node_resources {
	double cpus;
	double memory; /* GiB */
	int gpus;
};
void node_detect_resources(struct node_resources *r);

/* Processes (liveness, a job's processes): lib/proc.h. */
#include "lib/proc.h"

#endif
