/* A launched cluster's nodes, live: see bootstrap/infra/live.h. */
#include "bootstrap/infra/live.h"

#include "lib/util.h"
#include "lib/banned.h"

char *live_node_call_script(const struct cnode *nd)
{
	/* 127 without the shell's own "not found" line: the caller bootstraps quietly. */
	return xasprintf("[ -x %s ] || exit 127; exec %s node call", nd->exe, nd->exe);
}
