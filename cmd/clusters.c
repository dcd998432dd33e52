/*
 * What the cluster commands (status, queue, logs, cancel, down, stop, start, autostop,
 * ssh) share: the launcher db, and the clusters that names and globs stand for.
 */
#include <errno.h>
#include <fnmatch.h>
#include <string.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/launch/engine.h"
#include "cmd/cmd.h"
#include "lib/exit.h"
#include "lib/log.h"
#include "lib/banned.h"

int cmd_open_ldb(struct st_db **ldb)
{
	return st_launcher_open(0, ldb) ? -1 : 0;
}

int cmd_cluster_arg(const char *name)
{
	size_t i, len = strlen(name);

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x20 || c >= 0x7f)
			return error("a cluster name has no control or non-ASCII byte: 0x%02x at "
			             "offset %zu of the one given",
			             c, i);
	}
	if (len > CMD_CLUSTER_ARG_MAX)
		return error("cluster name '%.64s...' is %zu characters long, more than %d", name,
		             len, CMD_CLUSTER_ARG_MAX);
	return 0;
}

int cmd_infra_arg(const char *infra)
{
	struct infra inf;
	int r;

	if (infra_parse(infra, &inf))
		return EXIT_USAGE;
	r = infra_resolve(&inf);
	infra_release(&inf);
	/* No pool file, or no such pool in it: as a launch on it fails (1). */
	return r == -ENOENT ? EXIT_FAIL : r ? EXIT_INVALID : EXIT_OK;
}

/* The clusters named (names or globs), or all; each name that matches none is reported. */
int cmd_find_clusters(struct st_db *ldb, char **names, size_t n, unsigned flags,
                      struct eng_cluster **v, size_t *nv)
{
	size_t i, k;
	int missing = 0;

	for (i = 0; i < n; i++)
		if (cmd_cluster_arg(names[i]))
			return -1;
	if (eng_status(ldb, names, n, flags, v, nv))
		return -1;
	for (i = 0; i < n; i++) {
		for (k = 0; k < *nv; k++)
			if (!fnmatch(names[i], (*v)[k].c.name, 0))
				break;
		if (k == *nv) {
			error("cluster %s does not exist", names[i]);
			missing = 1;
		}
	}
	return missing;
}
