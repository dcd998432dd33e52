/* `skiff cancel`: jobs of clusters named or globbed, on every rank. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/launch/engine.h"
#include "cmd/cmd.h"
#include "lib/util.h"
#include "lib/banned.h"

const char cmd_cancel_usage[] =
        "usage: skiff cancel CLUSTER [JOB...] [-a|--all] [-u|--all-users] [-y]\n"
        "\n"
        "Cancels jobs on a cluster (every rank of each) and says which. Without JOB, the\n"
        "latest job that has not ended; -a: every job. CLUSTER may be a glob ('dev-*'):\n"
        "then each cluster it matches, with -a or the latest job (JOB ids are one\n"
        "cluster's). -u: every job of every user, which on skiff is -a (a cluster's jobs\n"
        "are all its launcher's).\n";

/* One cluster's cancel, said on stdout; an exit code. */
static int cancel_one(struct st_db *ldb, const char *name, const int64_t *ids, size_t nids, int all)
{
	struct eng_cancelled res;
	int r, rc;

	r = eng_cancel(ldb, name, ids, nids, all, &res);
	rc = r == -ENOENT && res.missing ? EXIT_JOB_NOT_FOUND : r ? EXIT_FAIL : EXIT_OK;
	if (!r && all) {
		printf("cancelled all jobs on cluster %s\n", name);
	} else if (!r && res.n) {
		struct buf which = BUF_INIT(0);
		size_t i;

		for (i = 0; i < res.n; i++)
			buf_addf(&which, "%s%lld", i ? ", " : "", (long long)res.jobs[i]);
		printf("cancelled job%s %s on cluster %s\n", res.n > 1 ? "s" : "", which.p, name);
		buf_release(&which);
	}
	eng_cancelled_release(&res);
	return rc;
}

int cmd_cancel(int argc, char **argv)
{
	struct eng_cluster *v = NULL;
	struct st_db *ldb;
	const char *name = NULL;
	int64_t *ids = xcalloc((size_t)argc, sizeof(*ids));
	size_t nids = 0, nv = 0, i;
	int all = 0, a, rc, missing;

	for (a = 1; a < argc; a++) {
		long id;

		/* -u: SkyPilot's every user's jobs; a skiff cluster's jobs are all its user's. */
		if (!strcmp(argv[a], "-a") || !strcmp(argv[a], "--all") || !strcmp(argv[a], "-u") ||
		    !strcmp(argv[a], "--all-users"))
			all = 1;
		else if (!strcmp(argv[a], "-y") || !strcmp(argv[a], "--yes"))
			;
		else if (argv[a][0] == '-')
			return free(ids), usage_error("cancel", "unknown option '%s'", argv[a]);
		else if (!name)
			name = argv[a];
		else if (parse_long(argv[a], 1, INT64_MAX, &id))
			return free(ids), usage_error("cancel", "'%s' is not a job id", argv[a]);
		else
			ids[nids++] = id;
	}
	if (!name) {
		free(ids);
		return usage_error("cancel", "expected a cluster name");
	}
	if (cmd_cluster_arg(name)) {
		free(ids);
		return EXIT_USAGE;
	}
	if (cmd_open_ldb(&ldb)) {
		free(ids);
		return EXIT_FAIL;
	}
	if (!strpbrk(name, "*?[")) {
		rc = cancel_one(ldb, name, ids, nids, all);
		goto out;
	}
	missing = cmd_find_clusters(ldb, (char **)&name, 1, 0, &v, &nv);
	rc = missing ? EXIT_FAIL : EXIT_OK;
	if (nv > 1 && nids) {
		rc = usage_error("cancel",
		                 "job ids are one cluster's, and '%s' matches %zu clusters", name,
		                 nv);
		goto out;
	}
	for (i = 0; i < nv; i++) {
		int one = cancel_one(ldb, v[i].c.name, ids, nids, all);

		if (one != EXIT_OK)
			rc = one;
	}
out:
	eng_clusters_free(v, nv);
	free(ids);
	st_close(ldb);
	return rc;
}
