/*
 * The local infra, the embedded default: a node is a private directory on this machine
 * ($SKIFF_HOME/local/CLUSTER/RANK), its HOME, with a supervisor of its own.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/infra/infra_internal.h"
#include "bootstrap/infra/live.h"
#include "lib/log.h"
#include "lib/proc.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

/* The most local nodes one cluster can have: a supervisor and its shims each. */
#define LOCAL_MAX_NODES 1024

static int local_parse(const char *rest, const char *spec, struct infra *out)
{
	if (rest)
		return error("infra '%s': local takes nothing after it", spec);
	out->spec = xstrdup("local");
	return 0;
}

static int private_dir(const char *path)
{
	int r = ensure_private_dir(path);

	if (r) {
		errno = -r;
		return error_errno("cannot create '%s'", path);
	}
	return 0;
}

static int local_pick(struct infra *inf, struct st_db *ldb, const char *cluster, int num_nodes,
                      struct cluster_node *v)
{
	const char *home = skiff_home();
	char *local = NULL, *base = NULL;
	int i, r;

	(void)inf;
	(void)ldb;
	if (!home)
		return -ENOENT;
	local = xasprintf("%s/local", home);
	base = xasprintf("%s/%s", local, cluster);
	/*
	 * A node's supervisor socket (NODE/.skiff/supervisor.sock) may be longer than a
	 * sockaddr_un holds: lib/util.h's unix_bind() and unix_connect() reach any length.
	 */
	r = private_dir(home);
	if (!r)
		r = private_dir(local);
	if (!r)
		r = private_dir(base);
	for (i = 0; !r && i < num_nodes; i++) {
		struct cluster_node *n = &v[i];

		infra_node_init(n, cluster, i);
		free(n->home);
		n->home = xasprintf("%s/%d", base, i);
		n->node_key = xasprintf("local/%s/%d", cluster, i);
		n->ip = xstrdup("127.0.0.1");
		r = private_dir(n->home);
	}
	free(local);
	free(base);
	return r < 0 ? r : 0;
}

static struct runner *local_runner(const struct infra *inf, const struct cluster_node *n)
{
	struct runner *r;
	char *name;

	(void)inf;
	if (!n->home || !*n->home) {
		error("cluster '%s': local node %d has no directory", n->cluster, n->rank);
		return NULL;
	}
	name = xasprintf("%s/%d", n->cluster, n->rank);
	r = runner_local_new(name, n->home);
	free(name);
	return r;
}

static int local_remake(struct clive *cl)
{
	size_t i;
	int made = 0;

	for (i = 0; i < cl->n; i++) {
		struct runner *r = cl->nodes[i].r;
		const char *home = r && r->ops->home_here ? r->ops->home_here(r) : NULL;
		int rc;

		if (!home || !access(home, F_OK) || errno != ENOENT)
			continue;
		rc = mkdir_p(home, 0700);
		if (rc) {
			errno = -rc;
			return error_errno(
			        "cluster '%s': cannot make node %d's directory '%s' again",
			        cl->name, cl->nodes[i].rank, home);
		}
		info("cluster %s: node %d's directory was gone; made again (the node starts "
		     "empty: its setup runs again)",
		     cl->name, cl->nodes[i].rank);
		made++;
	}
	return made;
}

static int local_teardown(const struct infra *inf, struct st_db *ldb, struct clive *cl,
                          const char *cluster)
{
	(void)inf;
	(void)ldb;
	(void)cl;
	return infra_local_remove(cluster);
}

static int rm_err; /* nftw has no user pointer */
/* Tries to remove a local cluster's directories, killing what runs in them before each. */
#define LOCAL_REMOVE_TRIES 3

static int rm_unlock(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	/* A job may leave read-only directories behind: make them removable first. */
	if (type == FTW_D && (st->st_mode & 0700) != 0700 && chmod(path, 0700) < 0 && !rm_err)
		rm_err = -errno;
	return 0;
}

static char rm_path[PATH_MAX]; /* what could not be removed, for the message */

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	if (remove(path) < 0 && errno != ENOENT) {
		rm_err = -errno;
		xsnprintf(rm_path, sizeof(rm_path), "%.*s", (int)sizeof(rm_path) - 1, path);
		return 1;
	}
	return 0;
}

/*
 * Kills whatever still runs as one of the cluster's local nodes: every process whose HOME
 * is a node's directory (the runner gives the node's supervisor that HOME, its real path,
 * and its shims and jobs inherit it), so that nothing writes into the directories while
 * they go, and no supervisor lives on without them; also when the directories are gone
 * already (a node that can no longer answer, whose jobs may still run). `down` has
 * cancelled the jobs and stopped the supervisors already; this is for what did not stop.
 * Returns how many are left after SIGKILL (a process in the D state), 0 when none.
 */
static int kill_local_nodes(const char *local, const char *cluster)
{
	char real[PATH_MAX], *prefix;
	struct proc_scope scope = {0};
	int left;

	prefix = xasprintf("HOME=%s/%s/", realpath(local, real) ? real : local, cluster);
	scope.env_prefix = prefix;
	if (proc_scope_kill(&scope))
		debug("killed what was left running as local cluster %s's nodes", cluster);
	left = proc_scope_signal(&scope, 0);
	free(prefix);
	return left;
}

int infra_local_remove(const char *cluster)
{
	const char *home = skiff_home();
	struct stat st;
	char *local, *base;
	int r = 0, tries, left;

	if (infra_validate_cluster_name(cluster))
		return -EINVAL;
	if (!home)
		return -ENOENT;
	local = xasprintf("%s/local", home);
	base = xasprintf("%s/%s", local, cluster);
	if (lstat(base, &st) < 0) {
		if (errno != ENOENT)
			r = error_errno("cannot remove '%s'", base);
		goto check; /* its directory is gone, not necessarily what ran there */
	}
	/* Something that was not found at first (it started meanwhile) is found again. */
	for (tries = 0; tries < LOCAL_REMOVE_TRIES; tries++) {
		if (S_ISDIR(st.st_mode))
			kill_local_nodes(local, cluster);
		rm_err = 0;
		/* FTW_PHYS: symlinks are removed, never followed; FTW_MOUNT: stay on this fs. */
		if (S_ISDIR(st.st_mode))
			nftw(base, rm_unlock, 32, FTW_PHYS | FTW_MOUNT);
		rm_err = 0;
		xsnprintf(rm_path, sizeof(rm_path), "%.*s", (int)sizeof(rm_path) - 1, base);
		if (nftw(base, rm_entry, 32, FTW_PHYS | FTW_MOUNT | FTW_DEPTH) && !rm_err)
			rm_err = -errno;
		r = rm_err;
		if (!r || lstat(base, &st) < 0) {
			r = 0;
			break;
		}
	}
	if (r) {
		errno = -r;
		r = error_errno("cannot remove '%s'", rm_path);
	}
check:
	/* Gone means nothing of it runs any more (INFRA_TEARDOWN_ENDS_PROCS). */
	left = kill_local_nodes(local, cluster);
	if (!r && left) {
		error("local cluster %s: %d process(es) of its nodes still run after SIGKILL",
		      cluster, left);
		r = -EBUSY;
	}
	free(local);
	free(base);
	return r;
}

/* Nodes are directories of this machine: what it needs is a place for them. */
static void local_probe(const struct infra *inf, int64_t deadline, struct infra_probe *out)
{
	const char *home = skiff_home();

	(void)inf;
	(void)deadline;
	if (!home) {
		infra_probe_set(out, INFRA_PROBE_UNUSABLE, NULL);
		infra_probe_say(out, "no state directory: set SKIFF_HOME or HOME");
		return;
	}
	infra_probe_say(out, "nodes run on this machine, under %s/local", home);
}

const struct infra_ops infra_local_ops = {
        .name = "local",
        .honours = TR_PORTS, /* endpoints are the head's address and the port */
        .kind = INFRA_LOCAL,
        .flags = INFRA_PROCS_STAY | INFRA_TEARDOWN_ENDS_PROCS,
        .max_nodes = LOCAL_MAX_NODES,
        .parse = local_parse,
        .pick = local_pick,
        .runner = local_runner,
        .remake = local_remake,
        .teardown = local_teardown,
        .probe = local_probe,
};
