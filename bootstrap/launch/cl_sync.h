#ifndef SKIFF_CL_SYNC_H
#define SKIFF_CL_SYNC_H

/*
 * File sync to the nodes of a live cluster (bootstrap/launch/cluster.h), over each node's
 * runner: one `skiff __sync-serve DST` session per node, all driven at once by
 * sync_push() (bootstrap/sync/sync.h, docs/sync.md).
 */

#include <stddef.h>

#include "bootstrap/launch/cluster.h"

/* How long one sync may take on a node: a slow link carries about 40 GB in that time. */
#define CL_SYNC_TIMEOUT_MS (3600 * 1000)

/*
 * Syncs the local dir src (or file, with is_file) to dst (may start with "~/") on
 * nodes[0..n) at once: the tree is read once, and the nodes that hold the same thing at
 * dst (all of them, for a new cluster) get one encoding of the changes, written to all
 * of them in parallel; so n nodes take about the time of one. Every node must have its
 * skiff (nd->exe). Returns 0 when every node is in sync, else -1 after printing one line
 * per node that is not ("node NAME: the sync to DST failed"); a node that failed does not
 * stop the others. Blocks up to CL_SYNC_TIMEOUT_MS. Threads: one per node and two more,
 * all joined before it returns.
 */
int cl_sync_many(struct cnode *const *nodes, size_t n, const char *src, const char *dst,
                 int is_file);

#endif
