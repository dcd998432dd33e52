/*
 * What the cluster commands (status, queue, logs, cancel, down, stop, start, autostop,
 * ssh) share: the launcher db, and the clusters that names and globs stand for.
 */
#include <fnmatch.h>

#include "bootstrap/launch/engine.h"
#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/banned.h"

int cmd_open_ldb(struct st_db **ldb)
{
	return st_launcher_open(0, ldb) ? -1 : 0;
}

/* The clusters named (names or globs), or all; each name that matches none is reported. */
int cmd_find_clusters(struct st_db *ldb, char **names, size_t n, unsigned flags,
                      struct eng_cluster **v, size_t *nv)
{
	size_t i, k;
	int missing = 0;

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
