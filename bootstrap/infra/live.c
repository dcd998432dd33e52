/* A launched cluster's nodes, live: see bootstrap/infra/live.h. */
#include "bootstrap/infra/live.h"

#include <errno.h>
#include <stdlib.h>

#include "bootstrap/infra/fcall.h"
#include "lib/proto.h"
#include "lib/util.h"
#include "lib/banned.h"

char *live_node_call_script(const struct cnode *nd)
{
	/* 127 without the shell's own "not found" line: the caller bootstraps quietly. */
	return xasprintf("[ -x %s ] || exit 127; exec %s node call", nd->exe, nd->exe);
}

int live_node_call_start(struct cnode *nd, struct fcall *c, const struct msg *req, unsigned flags)
{
	char *script;
	int r;

	if (!nd->exe)
		return -ENOENT;
	script = live_node_call_script(nd);
	r = fcall_start(c, nd->r, script, req, flags);
	free(script);
	if (r)
		fcall_release(c);
	return r;
}

int live_node_watch(struct cnode *nd, struct fcall *c, int64_t node_job)
{
	struct msg req;
	int r;

	msg_init(&req);
	msg_add(&req, "op", "watch");
	msg_add_int(&req, "id", node_job);
	r = live_node_call_start(nd, c, &req, 0);
	msg_release(&req);
	return r;
}
