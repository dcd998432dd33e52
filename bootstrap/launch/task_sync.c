/*
 * A task's files to its cluster: the workdir (a local directory, or a git repository
 * fetched and checked out here) into ~/sky_workdir and the file mounts, to every node at
 * once where the nodes' homes are their own. Declared in engine_internal.h.
 */
#include "bootstrap/launch/engine_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bootstrap/launch/cl_sync.h"
#include "bootstrap/launch/cluster.h"
#include "bootstrap/launch/progress.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

/*
 * 1 if two of the nodes may be one home: one address, and not nodes that are directories
 * of this machine (runner_ops.home_here: each is a home of its own, whatever its address).
 */
static int homes_may_meet(struct cnode **nodes, size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		const struct runner *r = nodes[i]->r;

		if (r->ops->home_here && r->ops->home_here(nodes[i]->r))
			continue;
		for (k = i + 1; k < n; k++)
			if (r->ip && nodes[k]->r->ip && !strcmp(r->ip, nodes[k]->r->ip))
				return 1;
	}
	return 0;
}

/*
 * One path to every node: all at once (cl_sync_many(): its tree is read once for all)
 * when dst is in each node's own home, else node after node. A path outside the home
 * may be one directory that several nodes share (local nodes, nodes of one host), as may
 * a home that two nodes of one address share (a pool that lists a host twice), and a
 * node waits for that directory's lock while another one's session holds it: sessions
 * that all wait on each other would never end.
 */
static int sync_path(struct cnode **nodes, size_t n, const char *src, const char *dst, int is_file)
{
	size_t i;
	int r = 0;

	if (starts_with(dst, "~/") && !homes_may_meet(nodes, n))
		return cl_sync_many(nodes, n, src, dst, is_file);
	for (i = 0; i < n && !r; i++)
		r = cl_sync(nodes[i], src, dst, is_file);
	return r;
}

int eng_sync_task(struct clive *cl, const struct task *t, int with_mounts, char **commit)
{
	struct step st;
	struct cnode **nodes;
	size_t i, k, nmounts = with_mounts ? t->nmounts : 0;
	int r = 0, files = 0;
	char *git_tree = NULL;

	*commit = NULL;
	if (t->workdir.kind == TASK_WORKDIR_NONE && !nmounts)
		return 0;
	/* Every mount is checked before anything moves. */
	for (k = 0; k < nmounts; k++) {
		const struct task_mount *mt = &t->mounts[k];

		if (!mt->src)
			return error("file_mounts: %s: storage mounts (buckets) are not supported "
			             "by this skiff",
			             mt->dst);
		if (strstr(mt->src, "://"))
			return error("file_mounts: %s: '%s' is a URL; only local paths can be "
			             "mounted by this skiff",
			             mt->dst, mt->src);
	}
	if (t->workdir.kind == TASK_WORKDIR_GIT && eng_git_tree(&t->workdir, &git_tree))
		return -1;
	nodes = xcalloc(cl->n ? cl->n : 1, sizeof(*nodes));
	for (i = 0; i < cl->n; i++)
		nodes[i] = &cl->nodes[i];
	step_begin(&st, "sync");
	if (git_tree) {
		r = sync_path(nodes, cl->n, git_tree, "~/sky_workdir", 0);
		*commit = xstrdup(strrchr(git_tree, '/') + 1); /* .../git/trees/COMMIT */
		files++;
	} else if (t->workdir.kind == TASK_WORKDIR_PATH) {
		char *src = user_path(t->workdir.path);

		r = sync_path(nodes, cl->n, src, "~/sky_workdir", 0);
		if (!r)
			*commit = eng_workdir_commit(src);
		free(src);
		files++;
	}
	for (k = 0; k < nmounts && !r; k++) {
		const struct task_mount *mt = &t->mounts[k];
		char *src = user_path(mt->src);
		struct stat sb;

		if (stat(src, &sb) < 0)
			r = error_errno("file_mounts: %s: cannot use '%s'", mt->dst, src);
		else
			r = sync_path(nodes, cl->n, src, mt->dst, !S_ISDIR(sb.st_mode));
		free(src);
		files++;
	}
	free(git_tree);
	free(nodes);
	if (r) {
		step_fail(&st);
		return r;
	}
	step_done(&st, "%d path(s) to %zu node(s)", files, cl->n);
	return 0;
}
