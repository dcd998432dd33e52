/*
 * File sync to a cluster's nodes: a `__sync-serve` session per node over its runner
 * (bootstrap/launch/rcall.h), all driven by one sync_push(). See bootstrap/launch/cl_sync.h.
 */
#include "bootstrap/launch/cl_sync.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/launch/rcall.h"
#include "bootstrap/sync/sync.h"
#include "lib/log.h"
#include "lib/quote.h"
#include "lib/util.h"
#include "lib/banned.h"

int cl_sync_many(struct cnode *const *nodes, size_t n, const char *src, const char *dst,
                 int is_file)
{
	struct sync_peer *peers = xcalloc(n ? n : 1, sizeof(*peers));
	struct rcall *calls = xcalloc(n ? n : 1, sizeof(*calls));
	char **names = xcalloc(n ? n : 1, sizeof(*names));
	char **keys = xcalloc(n ? n : 1, sizeof(*keys));
	struct buf q = BUF_INIT(4096);
	size_t i, started = 0;
	char *script;
	int r = 0, failed = 0, status;

	/* dst is expanded by the node (its own $HOME), so it is passed quoted as is. */
	sh_quote(&q, dst);
	for (i = 0; i < n; i++) {
		if (!nodes[i]->exe || !*nodes[i]->exe) {
			r = error("node %s: skiff is not installed there (relaunch the cluster)",
			          nodes[i]->name);
			break;
		}
	}
	for (i = 0; i < n && !r; i++) {
		struct cnode *nd = nodes[i];

		script = xasprintf("exec %s __sync-serve %s%s", nd->exe, is_file ? "--file " : "",
		                   q.p);
		names[i] = xasprintf("node %s", nd->name);
		/* What names this node and DST to the launcher's cache of what it holds. */
		keys[i] = xasprintf("%s %s %s %s %s", nd->r->ops->kind, nd->r->name, nd->r->ip,
		                    is_file ? "file" : "dir", dst);
		r = rcall_start(&calls[i], nd->r, script, CL_SYNC_TIMEOUT_MS, 0, &peers[i].to_fd,
		                &peers[i].from_fd);
		free(script);
		if (r)
			break;
		peers[i].name = names[i];
		peers[i].cache_key = keys[i];
		started++;
	}
	if (!r && n)
		sync_push(src, is_file ? SYNC_FILE : 0, peers, n);
	for (i = 0; i < started; i++) {
		int rc;

		if (r)
			close(peers[i].to_fd); /* sync_push() did not run: end the sessions */
		rc = rcall_wait(&calls[i], &status);
		close(peers[i].from_fd);
		if (!r && (rc || status || peers[i].rc)) {
			/* The runner said why for a transport failure; the node, on its stderr. */
			error("node %s: the sync to %s failed", nodes[i]->name, dst);
			failed = 1;
		}
	}
	for (i = 0; i < n; i++) {
		free(names[i]);
		free(keys[i]);
	}
	free(names);
	free(keys);
	free(peers);
	free(calls);
	buf_release(&q);
	return r || failed ? -1 : 0;
}
