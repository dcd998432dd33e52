#ifndef SKIFF_LIVE_H
#define SKIFF_LIVE_H

/*
 * A launched cluster's nodes, live: a runner per node and the skiff binary on it. The
 * launch engine opens them (bootstrap/launch/cluster.h: cl_open()) and hands them to the
 * infra's operations (infra.h: nodes_up, busy, teardown), which reach a node's skiff
 * through the frame client (fcall.h) and need nothing else of the engine.
 */

#include <stddef.h>

#include "bootstrap/infra/runner.h"

/* How long a short call to a node's skiff (a query, a cancel, a stop) may take. */
#define CL_NODE_CALL_MS 30000

struct cnode {
	int rank;
	char *name; /* for messages */
	char *ip;
	struct runner *r;
	char *exe;       /* shell word for skiff on the node ("$HOME/.skiff/bin/skiff-SHA") */
	int copied;      /* bootstrap: the binary was sent (or linked) */
	int linked;      /* bootstrap: as a hard link of the launcher's image */
	int sup_started; /* bootstrap: the supervisor was started */
	int held;        /* bootstrap: another launcher's cluster holds the host (-EADDRINUSE) */
	int stays;       /* it outlives the cluster (cluster_node.stays): held, released */
	char *share;     /* a share of its host (cluster_node.share), or NULL: whole */
	long active;     /* bootstrap: the node's jobs that have not ended (-1: unknown) */
	char *addr;      /* the address other nodes reach it at (SKYPILOT_NODE_IPS): ip unless
	                    the node said otherwise (ssh: see cmd/node.c) */
	struct boot_spare *spare; /* bootstrap: the install session, waiting to carry the next
	                             call (the engine's: bootstrap/launch/install.h); NULL once
	                             used */
};

struct clive {
	char *name;
	char *infra;                 /* the spec */
	const struct infra_ops *ops; /* what the infra does (bootstrap/infra/infra.h) */
	struct cnode *nodes;
	size_t n;
};

/* The script that runs `node call` with the node's skiff (exit 127 when it is gone). */
char *live_node_call_script(const struct cnode *nd);

struct fcall;
struct msg;

/*
 * Starts `node call` on nd and sends it req (fcall_start() with flags): 0, or -ENOENT
 * (not printed) when the node's skiff is not known yet, or fcall_start()'s error; on
 * error nothing runs and c needs no fcall_release().
 */
int live_node_call_start(struct cnode *nd, struct fcall *c, const struct msg *req, unsigned flags);
/* live_node_call_start() of {op: watch, id: node_job}: the node answers when it ends. */
int live_node_watch(struct cnode *nd, struct fcall *c, int64_t node_job);

#endif
