/*
 * Infra specs, node selection and runners for the two infras skiff runs on (local and
 * ssh/POOL). The pool file itself is parsed in infra_ssh.c.
 */
#include "bootstrap/infra/infra.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/proc.h"
#include "lib/util.h"
#include "lib/banned.h"

/* SkyPilot's cloud names: recognised so that the message can say what to do instead. */
static const char *const clouds[] = {
        "aws",        "azure",      "gcp",        "ibm",       "lambda",
        "scp",        "oci",        "runpod",     "vast",      "vsphere",
        "cudo",       "fluidstack", "paperspace", "do",        "nebius",
        "hyperbolic", "seeweb",     "shadeform",  "coreweave", "primeintellect",
};

/* Every infra name, for did-you-mean. */
static const char *const all_infras[] = {
        "local",      "ssh",        "k8s",
        "kubernetes", "slurm",      "podman",
        "docker",     "aws",        "azure",
        "gcp",        "ibm",        "lambda",
        "scp",        "oci",        "runpod",
        "vast",       "vsphere",    "cudo",
        "fluidstack", "paperspace", "do",
        "nebius",     "hyperbolic", "seeweb",
        "shadeform",  "coreweave",  "primeintellect",
};

#define INFRA_DOCS_HINT "see docs/infra-ssh.md"

void infra_release(struct infra *inf)
{
	if (!inf)
		return;
	free(inf->spec);
	free(inf->pool);
	free(inf->image);
	free(inf->context);
	free(inf->ns);
	infra_pools_release(&inf->pools);
	memset(inf, 0, sizeof(*inf));
}

static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

static int is_one_of(const char *s, const char *const *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, v[i]))
			return 1;
	return 0;
}

int infra_parse(const char *spec, struct infra *out)
{
	char head[32];
	const char *slash, *rest, *best;
	size_t len, i;

	memset(out, 0, sizeof(*out));
	if (!spec || !*spec || !strcmp(spec, "*")) {
		out->kind = INFRA_LOCAL;
		out->spec = xstrdup("local");
		return 0;
	}
	if (strlen(spec) > 256 || !printable(spec) || strpbrk(spec, " \t"))
		return error("infra '%.64s' is not an infra spec (local, ssh/POOL)",
		             printable(spec) ? spec : "?");
	slash = strchr(spec, '/');
	len = slash ? (size_t)(slash - spec) : strlen(spec);
	rest = slash ? slash + 1 : NULL;
	if (len >= sizeof(head))
		len = sizeof(head) - 1;
	for (i = 0; i < len; i++)
		head[i] =
		        (spec[i] >= 'A' && spec[i] <= 'Z') ? (char)(spec[i] - 'A' + 'a') : spec[i];
	head[len] = '\0';

	if (!strcmp(head, "local")) {
		if (rest)
			return error("infra '%s': local takes nothing after it", spec);
		out->kind = INFRA_LOCAL;
		out->spec = xstrdup("local");
		return 0;
	}
	if (!strcmp(head, "ssh")) {
		if (rest && (!*rest || strchr(rest, '/')))
			return error("infra '%s': expected ssh/POOL, a pool name of the ssh node "
			             "pool file (no '/' in it)",
			             spec);
		out->kind = INFRA_SSH;
		out->pool = rest ? xstrdup(rest) : NULL;
		out->spec = rest ? xasprintf("ssh/%s", rest) : xstrdup("ssh");
		return 0;
	}
	if (!strcmp(head, "k8s") || !strcmp(head, "kubernetes"))
		return infra_k8s_parse(rest, spec, out);
	if (!strcmp(head, "slurm")) {
		/* A partition name is one argv word of salloc: no '/', no option. */
		if (rest && (!*rest || *rest == '-' || strchr(rest, '/') || strlen(rest) > 64))
			return error("infra '%s': expected slurm/PARTITION, a Slurm partition name",
			             spec);
		out->kind = INFRA_SLURM;
		out->pool = rest ? xstrdup(rest) : NULL;
		out->spec = rest ? xasprintf("slurm/%s", rest) : xstrdup("slurm");
		return 0;
	}
	if (!strcmp(head, "podman") || !strcmp(head, "docker"))
		return infra_container_parse(!strcmp(head, "docker") ? INFRA_DOCKER : INFRA_PODMAN,
		                             rest, spec, out);
	if (is_one_of(head, clouds, ARRAY_SIZE(clouds))) {
		error("infra '%s': skiff does not provision cloud VMs; run on machines you have "
		      "with ssh/POOL (%s), or on this machine with local",
		      spec, INFRA_DOCS_HINT);
		return -ENOTSUP;
	}
	best = nearest_word(head, all_infras, ARRAY_SIZE(all_infras));
	if (best)
		return error("unknown infra '%s'; did you mean '%s'?", spec, best);
	return error("unknown infra '%s': expected local or ssh/POOL", spec);
}

/* "a, b, c" (the first few) into out. */
static void name_list(struct buf *out, const char *const *names, size_t n)
{
	size_t i;

	for (i = 0; i < n && i < 8; i++)
		buf_addf(out, "%s%s", i ? ", " : "", names[i]);
	if (n > 8)
		buf_addf(out, ", ... (%zu in all)", n);
}

int infra_resolve(struct infra *inf)
{
	struct yerrors errs = YERRORS_INIT;
	const char **names = NULL;
	struct buf list = BUF_INIT(4096);
	char *path = NULL;
	size_t i;
	int r;

	if (inf->kind != INFRA_SSH || inf->p)
		return 0;
	path = infra_pools_path();
	if (!path)
		return -ENOENT;
	r = infra_pools_load(&inf->pools, path, &errs);
	if (r == -ENOENT) {
		error("no ssh node pool file '%s': write one to use infra ssh (%s)", path,
		      INFRA_DOCS_HINT);
		goto out;
	}
	fflush(stdout);
	yerr_print(&errs, stderr);
	if (r)
		goto out;
	names = xcalloc(inf->pools.n + 1, sizeof(*names));
	for (i = 0; i < inf->pools.n; i++)
		names[i] = inf->pools.v[i].name;
	name_list(&list, names, inf->pools.n);
	if (!inf->pools.n) {
		r = -ENOENT;
		error("the ssh node pool file '%s' defines no pools (%s)", path, INFRA_DOCS_HINT);
		goto out;
	}
	if (!inf->pool) {
		if (inf->pools.n > 1) {
			r = -EINVAL;
			error("infra 'ssh' names no pool, and '%s' has %zu: %s; use ssh/POOL", path,
			      inf->pools.n, list.p);
			goto out;
		}
		inf->pool = xstrdup(inf->pools.v[0].name);
		free(inf->spec);
		inf->spec = xasprintf("ssh/%s", inf->pool);
	}
	inf->p = infra_pools_find(&inf->pools, inf->pool);
	if (!inf->p) {
		const char *best = nearest_word(inf->pool, names, inf->pools.n);

		r = -ENOENT;
		if (best)
			error("no ssh node pool '%s' in '%s'; did you mean '%s'?", inf->pool, path,
			      best);
		else
			error("no ssh node pool '%s' in '%s' (it has %s)", inf->pool, path, list.p);
	}
out:
	if (r)
		infra_pools_release(&inf->pools);
	yerr_release(&errs);
	buf_release(&list);
	free(names);
	free(path);
	return r;
}

/* ---- node selection ------------------------------------------------------------------ */

static void node_init(struct cluster_node *n, const char *cluster, int rank)
{
	memset(n, 0, sizeof(*n));
	n->cluster = xstrdup(cluster);
	n->rank = rank;
	n->user = xstrdup("");
	n->identity_file = xstrdup("");
	n->proxy_jump = xstrdup("");
	n->home = xstrdup("");
	n->skiff_exe = xstrdup("");
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

static int pick_local(const char *cluster, int num_nodes, struct cluster_node *v)
{
	/* The node's supervisor listens on HOME/.skiff/supervisor.sock (supervisor/node.h). */
	static const char sock_tail[] = "/.skiff/supervisor.sock";
	const char *home = skiff_home();
	char *local = NULL, *base = NULL, *longest;
	size_t len;
	int i, r;

	if (!home)
		return -ENOENT;
	local = xasprintf("%s/local", home);
	base = xasprintf("%s/%s", local, cluster);
	/* The last rank's socket path must fit in sun_path, else its supervisor cannot start. */
	longest = xasprintf("%s/%d%s", base, num_nodes - 1, sock_tail);
	len = strlen(longest);
	free(longest);
	if (len >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		r = -ENAMETOOLONG;
		error("local node directories under '%s' are too long for the nodes' Unix socket "
		      "paths (%zu bytes, at most %zu): use a shorter cluster name or SKIFF_HOME",
		      base, len, sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		goto out;
	}
	r = private_dir(home);
	if (!r)
		r = private_dir(local);
	if (!r)
		r = private_dir(base);
	for (i = 0; !r && i < num_nodes; i++) {
		struct cluster_node *n = &v[i];

		node_init(n, cluster, i);
		free(n->home);
		n->home = xasprintf("%s/%d", base, i);
		n->node_key = xasprintf("local/%s/%d", cluster, i);
		n->ip = xstrdup("127.0.0.1");
		r = private_dir(n->home);
	}
out:
	free(local);
	free(base);
	return r < 0 ? r : 0;
}

static int pick_ssh(struct infra *inf, struct st_db *ldb, const char *cluster, int num_nodes,
                    struct cluster_node *v)
{
	const struct infra_pool *pool;
	const char **busy = NULL;
	size_t nbusy = 0, nbusy_hosts = 0, i, k;
	int taken = 0, r;

	r = infra_resolve(inf);
	if (r)
		return r;
	pool = inf->p;
	if (!ldb)
		return error("BUG: picking ssh nodes needs the launcher database");
	if ((size_t)num_nodes > pool->nhosts) {
		error("pool '%s' has %zu node%s; need %d", pool->name, pool->nhosts,
		      pool->nhosts == 1 ? "" : "s", num_nodes);
		return -ENOSPC;
	}
	busy = xcalloc(pool->nhosts, sizeof(*busy));
	for (i = 0; i < pool->nhosts && taken < num_nodes; i++) {
		const struct infra_host *h = &pool->hosts[i];
		char *key = infra_host_key(pool->name, h), *holder = NULL;
		struct cluster_node *n;

		r = st_node_holder(ldb, key, h->ip, h->port, &holder);
		if (r) {
			free(key);
			goto out;
		}
		if (holder && strcmp(holder, cluster)) {
			nbusy_hosts++;
			for (k = 0; k < nbusy && strcmp(busy[k], holder); k++)
				;
			if (k == nbusy)
				busy[nbusy++] = holder;
			else
				free(holder);
			free(key);
			continue;
		}
		free(holder);
		n = &v[taken];
		node_init(n, cluster, taken);
		n->node_key = key;
		n->ip = xstrdup(h->ip);
		n->port = h->port;
		if (h->user) {
			free(n->user);
			n->user = xstrdup(h->user);
		}
		if (h->identity_file) {
			free(n->identity_file);
			n->identity_file = xstrdup(h->identity_file);
		}
		if (h->proxy_jump) {
			free(n->proxy_jump);
			n->proxy_jump = xstrdup(h->proxy_jump);
		}
		taken++;
	}
	if (taken < num_nodes) {
		struct buf list = BUF_INIT(4096);

		name_list(&list, busy, nbusy);
		error("pool '%s' has %zu node%s, %zu %s in use by cluster%s %s; need %d",
		      pool->name, pool->nhosts, pool->nhosts == 1 ? "" : "s", nbusy_hosts,
		      nbusy_hosts == 1 ? "is" : "are", nbusy == 1 ? "" : "s", list.p, num_nodes);
		buf_release(&list);
		r = -EBUSY;
		goto out;
	}
	/* ssh would only say "Permission denied (publickey)": name the file instead. */
	for (i = 0; i < (size_t)taken; i++) {
		if (!*v[i].identity_file || access(v[i].identity_file, R_OK) == 0)
			continue;
		r = error_errno("pool '%s', host %s: cannot read identity_file '%s'", pool->name,
		                v[i].ip, v[i].identity_file);
		goto out;
	}
	r = 0;
out:
	for (k = 0; k < nbusy; k++)
		free((char *)busy[k]);
	free(busy);
	return r;
}

int infra_pick_nodes(struct infra *inf, struct st_db *ldb, const char *cluster, int num_nodes,
                     struct cluster_node **out)
{
	struct cluster_node *v;
	int r;

	*out = NULL;
	if (infra_validate_cluster_name(cluster))
		return -EINVAL;
	if (num_nodes < 1 || num_nodes > 100000) {
		error("cluster '%s': cannot launch %d nodes", cluster, num_nodes);
		return -EINVAL;
	}
	v = xcalloc((size_t)num_nodes, sizeof(*v));
	if (inf->kind == INFRA_LOCAL)
		r = pick_local(cluster, num_nodes, v);
	else if (inf->kind == INFRA_PODMAN || inf->kind == INFRA_DOCKER)
		r = infra_container_pick(inf, ldb, cluster, num_nodes, v);
	else if (inf->kind == INFRA_K8S)
		r = infra_k8s_pick(inf, ldb, cluster, num_nodes, v);
	else if (inf->kind == INFRA_SLURM)
		r = infra_slurm_pick(inf, cluster, num_nodes, v);
	else
		r = pick_ssh(inf, ldb, cluster, num_nodes, v);
	if (r) {
		/* Entries never filled are all zero: freeing them is harmless. */
		cluster_nodes_free(v, (size_t)num_nodes);
		return r < 0 ? r : -EIO;
	}
	*out = v;
	return 0;
}

/* ---- runners ------------------------------------------------------------------------- */

/*
 * $SKIFF_HOME/ssh (0700): ControlMaster sockets and skiff's known_hosts. NULL when it
 * cannot be made: the runner then falls back to its short /tmp directory, as it does
 * when this path is too long for a socket.
 */
static char *control_dir(void)
{
	const char *home = skiff_home();
	char *dir;

	if (!home)
		return NULL;
	dir = xasprintf("%s/ssh", home);
	if (!mkdir_p(home, 0700) && !ensure_private_dir(dir))
		return dir;
	debug("cannot create '%s'; ssh control files go to the runner's fallback", dir);
	free(dir);
	return NULL;
}

static const char *or_null(const char *s)
{
	return s && *s ? s : NULL;
}

struct runner *infra_runner(const struct infra *inf, const struct cluster_node *n)
{
	struct ssh_target t;
	struct runner *r;
	char *name, *dir;

	if (inf->kind == INFRA_LOCAL) {
		if (!n->home || !*n->home) {
			error("cluster '%s': local node %d has no directory", n->cluster, n->rank);
			return NULL;
		}
		name = xasprintf("%s/%d", n->cluster, n->rank);
		r = runner_local_new(name, n->home);
		free(name);
		return r;
	}
	if (inf->kind == INFRA_PODMAN || inf->kind == INFRA_DOCKER)
		return infra_container_runner(inf, n);
	if (inf->kind == INFRA_K8S)
		return infra_k8s_runner(inf, n);
	if (inf->kind == INFRA_SLURM)
		return infra_slurm_runner(n);
	if (!n->ip || !*n->ip) {
		error("cluster '%s': node %d has no address", n->cluster, n->rank);
		return NULL;
	}
	dir = control_dir();
	memset(&t, 0, sizeof(t));
	t.host = n->ip;
	t.user = or_null(n->user);
	t.port = n->port;
	t.identity_file = or_null(n->identity_file);
	t.proxy_jump = or_null(n->proxy_jump);
	t.control_dir = dir;
	name = n->port && n->port != 22 ? xasprintf("%s:%d", n->ip, n->port) : xstrdup(n->ip);
	r = runner_ssh_new(name, &t);
	free(name);
	free(dir);
	return r;
}

int infra_teardown(const struct infra *inf, const char *cluster)
{
	switch (inf->kind) {
	case INFRA_LOCAL: return infra_local_remove(cluster);
	case INFRA_PODMAN:
	case INFRA_DOCKER: return infra_container_remove(inf, cluster);
	case INFRA_K8S: return infra_k8s_remove(inf, cluster);
	default: return 0;
	}
}

/* ---- local node directories ---------------------------------------------------------- */

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
 * is a node's directory (the runner gives the node's supervisor that HOME, and its shims
 * and jobs inherit it), so that nothing writes into the directories while they go, and no
 * supervisor lives on without them. `down` has cancelled the jobs and stopped the
 * supervisors already; this is for what did not stop.
 */
static void kill_local_nodes(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *dir, real[PATH_MAX], *entry;
		struct proc_scope scope = {0};
		long rank;

		if (parse_long(e->d_name, 0, INT32_MAX, &rank))
			continue;
		dir = xasprintf("%s/%s", base, e->d_name);
		entry = xasprintf("HOME=%s", realpath(dir, real) ? real : dir);
		scope.env = entry;
		if (proc_scope_kill(&scope))
			debug("killed what was left running as local node %s", dir);
		free(entry);
		free(dir);
	}
	closedir(d);
}

int infra_local_remove(const char *cluster)
{
	const char *home = skiff_home();
	struct stat st;
	char *base;
	int r = 0, tries;

	if (infra_validate_cluster_name(cluster))
		return -EINVAL;
	if (!home)
		return -ENOENT;
	base = xasprintf("%s/local/%s", home, cluster);
	if (lstat(base, &st) < 0) {
		if (errno != ENOENT)
			r = error_errno("cannot remove '%s'", base);
		goto out;
	}
	/* Something that was not found at first (it started meanwhile) is found again. */
	for (tries = 0; tries < LOCAL_REMOVE_TRIES; tries++) {
		if (S_ISDIR(st.st_mode))
			kill_local_nodes(base);
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
out:
	free(base);
	return r;
}

/* ---- cluster names ------------------------------------------------------------------- */

int infra_validate_cluster_name(const char *name)
{
	size_t len, i;

	if (!name || !*name)
		return error("a cluster name cannot be empty");
	len = strlen(name);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')
			continue;
		if (c < 0x20 || c >= 0x7f)
			return error("cluster name has a control or non-ASCII byte (0x%02x) at "
			             "offset %zu: use lowercase letters, digits and '-'",
			             c, i);
		if (c >= 'A' && c <= 'Z')
			return error("cluster name '%.64s' has an upper-case letter: cluster names "
			             "are lowercase",
			             name);
		return error("cluster name '%.64s' has '%c': use lowercase letters, digits and "
		             "'-'",
		             name, c);
	}
	if (len > INFRA_CLUSTER_NAME_MAX)
		return error("cluster name '%.64s...' is %zu characters long, more than %d", name,
		             len, INFRA_CLUSTER_NAME_MAX);
	if (name[0] < 'a' || name[0] > 'z')
		return error("cluster name '%s' must start with a letter", name);
	if (name[len - 1] == '-')
		return error("cluster name '%s' must not end with '-'", name);
	return 0;
}

static unsigned random16(void)
{
	unsigned short v;
	struct timespec ts;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	/* No entropy yet (early boot): names need only differ, not be secret. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((unsigned)ts.tv_nsec ^ (unsigned)getpid() * 40503u) & 0xffff;
}

char *infra_cluster_name_new(struct st_db *ldb)
{
	int tries;

	for (tries = 0;; tries++) {
		char *name = xasprintf("skiff-%04x", random16());
		struct cluster c;
		int r;

		if (!ldb || tries >= 64)
			return name;
		r = st_cluster_get(ldb, name, &c);
		if (r == -ENOENT)
			return name;
		if (!r)
			cluster_free(&c);
		else
			return name; /* the db cannot say: create will refuse a taken name */
		free(name);
	}
}
