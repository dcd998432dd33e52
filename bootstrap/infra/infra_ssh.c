/*
 * The SSH node pool file, in SkyPilot's ssh_node_pools.yaml format:
 *
 *   POOL:
 *     user: U                 # defaults for the pool's hosts
 *     identity_file: ~/.ssh/k # or relative to this file's directory
 *     password: P             # SkyPilot's sudo password: accepted, never used or kept
 *     port: 22                # skiff extension
 *     proxy_jump: bastion     # skiff extension
 *     hosts:
 *       - 10.0.0.1            # an address, or a Host of ~/.ssh/config
 *       - ip: 10.0.0.2        # per-host values override the pool's
 *         user: V
 *
 * Parsed as strictly as task files: unknown keys (with a did-you-mean), wrong types,
 * values that ssh would take as options, and duplicate hosts are errors at their line and
 * column; parsing goes on after an error so that one run reports every problem.
 */
#include "bootstrap/infra/infra.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/infra/infra_internal.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

static const char *const pool_keys[] = {"hosts",    "user", "identity_file",
                                        "password", "port", "proxy_jump"};
static const char *const host_keys[] = {"ip",       "user", "identity_file",
                                        "password", "port", "proxy_jump"};

struct pparse {
	const char *file;
	struct yerrors *errs;
	int failed;
};

/* The fields a pool and a host may both set; NULL / 0 when not given. */
struct conn {
	const char *user, *identity_file, *proxy_jump;
	const struct ynode *identity_at; /* where identity_file was written */
	int port;
};

static int perr(struct pparse *p, const struct ynode *at, const char *fmt, ...) SKIFF_PRINTF(3, 4);

static int perr(struct pparse *p, const struct ynode *at, const char *fmt, ...)
{
	va_list ap;

	p->failed = 1;
	va_start(ap, fmt);
	yerr_vadd(p->errs, 0, p->file, at ? at->line : 1, at ? at->col : 1, fmt, ap);
	va_end(ap);
	return -1;
}

static int check_keys(struct pparse *p, const struct ynode *map, const char *what,
                      const char *const *known, size_t nknown)
{
	size_t i, k;
	int r = 0;

	for (i = 0; i < ymap_pairs(map); i++) {
		const struct ynode *key = ymap_key(map, i);
		const char *best;

		if (key->kind != Y_SCALAR) {
			r = perr(p, key, "keys in %s must be strings, not %s", what,
			         ynode_describe(key));
			continue;
		}
		for (k = 0; k < nknown; k++)
			if (!strcmp(key->value, known[k]))
				break;
		if (k < nknown)
			continue;
		best = p->errs->n < YAML_MAX_ERRORS ? nearest_word(key->value, known, nknown)
		                                    : NULL;
		if (best)
			r = perr(p, key, "unknown field '%.60s' in %s; did you mean '%s'?",
			         key->value, what, best);
		else
			r = perr(p, key, "unknown field '%.60s' in %s", key->value, what);
	}
	return r;
}

/*
 * Characters a value may hold. Every value ends up as one argv element of ssh, never in
 * a shell line; still, a leading '-' would make ssh read it as an option, and control
 * characters or spaces have no business in a host, user or jump spec.
 */
static int word_ok(const char *s, const char *extra)
{
	const char *c;

	if (!*s || *s == '-')
		return 0;
	for (c = s; *c; c++) {
		if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || strchr("._-", *c))
			continue;
		if (!strchr(extra, *c))
			return 0;
	}
	return 1;
}

static int get_str(struct pparse *p, const struct ynode *n, const char *what, const char **out)
{
	if (n->kind != Y_SCALAR || yscalar_type(n) != YS_STR)
		return perr(p, n, "%s must be a string, not %s", what, ynode_describe(n));
	*out = n->value;
	return 0;
}

static int get_user(struct pparse *p, const struct ynode *n, const char *what, const char **out)
{
	if (get_str(p, n, what, out))
		return -1;
	if (strlen(*out) > 64 || !word_ok(*out, ""))
		return perr(p, n,
		            "%s '%.64s' is not a user name (letters, digits, '.', '_', '-'; no "
		            "leading '-')",
		            what, *out);
	return 0;
}

static int get_port(struct pparse *p, const struct ynode *n, const char *what, int *out)
{
	long v;
	int r = ynode_long(n, 1, 65535, &v);

	if (r == -ERANGE)
		return perr(p, n, "%s must be a port number in 1..65535, not %s", what, n->value);
	if (r)
		return perr(p, n, "%s must be a port number, not %s", what, ynode_describe(n));
	*out = (int)v;
	return 0;
}

static int get_proxy_jump(struct pparse *p, const struct ynode *n, const char *what,
                          const char **out)
{
	if (get_str(p, n, what, out))
		return -1;
	/* [user@]host[:port], several separated by commas; IPv6 in brackets. */
	if (strlen(*out) > 1024 || !word_ok(*out, "@:,[]%"))
		return perr(p, n, "%s '%.64s' is not a jump host list ([USER@]HOST[:PORT],...)",
		            what, *out);
	return 0;
}

static int get_identity(struct pparse *p, const struct ynode *n, const char *what, const char **out)
{
	if (get_str(p, n, what, out))
		return -1;
	if (str_control(*out))
		return perr(p, n, "%s has a control character in it", what);
	if (!**out)
		return perr(p, n, "%s is empty", what);
	if (**out == '~' && (*out)[1] && (*out)[1] != '/')
		return perr(p, n, "%s '%.64s': only ~/ is expanded, not ~user/", what, *out);
	return 0;
}

/* Reads the connection fields of a pool or host mapping into c (leaving unset ones). */
static void get_conn(struct pparse *p, const struct ynode *map, const char *what, struct conn *c)
{
	char path[160];
	size_t i;

	for (i = 0; i < ymap_pairs(map); i++) {
		const struct ynode *k = ymap_key(map, i), *v = ymap_val(map, i);

		if (k->kind != Y_SCALAR)
			continue;
		xsnprintf(path, sizeof(path), "%.100s.%s", what,
		          strlen(k->value) < 32 ? k->value : "?");
		if (!strcmp(k->value, "password")) {
			/*
			 * SkyPilot's sudo password: skiff never runs sudo on a pool host (it
			 * lives in the user's home), so it is checked and dropped here, never
			 * kept, logged or passed on. ssh itself logs in with keys.
			 */
			if (!ynode_is_null(v) && v->kind != Y_SCALAR)
				perr(p, v, "%s must be a string, not %s", path, ynode_describe(v));
			continue;
		}
		if (ynode_is_null(v))
			continue; /* `user:` with no value: as if not given */
		if (!strcmp(k->value, "user"))
			get_user(p, v, path, &c->user);
		else if (!strcmp(k->value, "identity_file") &&
		         !get_identity(p, v, path, &c->identity_file))
			c->identity_at = v;
		else if (!strcmp(k->value, "port"))
			get_port(p, v, path, &c->port);
		else if (!strcmp(k->value, "proxy_jump"))
			get_proxy_jump(p, v, path, &c->proxy_jump);
	}
}

/*
 * identity_file as ssh will be given it: ~/ expanded, and a relative path taken from the
 * pool file's directory, as SkyPilot does (skiff runs ssh from other directories too).
 */
static char *expand_home(struct pparse *p, const struct ynode *at, const char *path)
{
	const char *home, *slash;
	char cwd[PATH_MAX];

	if (path[0] == '/')
		return xstrdup(path);
	if (path[0] != '~') {
		slash = strrchr(p->file, '/');
		if (p->file[0] == '/')
			return xasprintf("%.*s/%s", (int)(slash - p->file), p->file, path);
		if (!getcwd(cwd, sizeof(cwd))) {
			perr(p, at, "cannot resolve '%.64s' beside %s: %s", path, p->file,
			     strerror(errno));
			return NULL;
		}
		return slash ? xasprintf("%s/%.*s/%s", cwd, (int)(slash - p->file), p->file, path)
		             : xasprintf("%s/%s", cwd, path);
	}
	home = user_home();
	if (!home) {
		perr(p, at, "cannot expand '%.64s': no home directory (set HOME)", path);
		return NULL;
	}
	return xasprintf("%s%s", home, path + 1);
}

static int host_ok(const char *s)
{
	/* An address, IPv6 (with a zone), or a Host alias of ~/.ssh/config. */
	return strlen(s) <= 253 && word_ok(s, ":%");
}

static void host_release(struct infra_host *h)
{
	free(h->ip);
	free(h->user);
	free(h->identity_file);
	free(h->proxy_jump);
}

static void pool_release(struct infra_pool *pl)
{
	size_t i;

	for (i = 0; i < pl->nhosts; i++)
		host_release(&pl->hosts[i]);
	free(pl->hosts);
	free(pl->name);
}

void infra_pools_release(struct infra_pools *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++)
		pool_release(&p->v[i]);
	free(p->v);
	free(p->file);
	memset(p, 0, sizeof(*p));
}

static int pool_name_ok(const char *s)
{
	return strlen(s) <= 63 && word_ok(s, "") && *s != '.' && *s != '_';
}

static void parse_host(struct pparse *p, struct infra_pool *pl, const struct ynode *n, size_t idx,
                       const struct conn *defaults)
{
	struct conn c = *defaults;
	const struct ynode *ipn = n;
	char what[160];
	struct infra_host *h;
	size_t i;

	xsnprintf(what, sizeof(what), "%.70s.hosts[%zu]", pl->name, idx);
	if (n->kind == Y_MAP) {
		check_keys(p, n, what, host_keys, ARRAY_SIZE(host_keys));
		ipn = ymap_get(n, "ip");
		if (!ipn) {
			perr(p, n, "%s has no 'ip'", what);
			return;
		}
		get_conn(p, n, what, &c);
	} else if (n->kind != Y_SCALAR || yscalar_type(n) != YS_STR) {
		perr(p, n, "%s must be an address (a string) or a mapping with 'ip', not %s", what,
		     ynode_describe(n));
		return;
	}
	if (ipn->kind != Y_SCALAR || yscalar_type(ipn) != YS_STR) {
		perr(p, ipn, "%s.ip must be a string, not %s", what, ynode_describe(ipn));
		return;
	}
	if (!host_ok(ipn->value)) {
		perr(p, ipn,
		     "%s: '%.64s' is not a host address or name (letters, digits, '.', '_', "
		     "'-', ':'; no leading '-')",
		     what, ipn->value);
		return;
	}
	if (!c.port)
		c.port = 22;
	for (i = 0; i < pl->nhosts; i++) {
		if (strcmp(pl->hosts[i].ip, ipn->value) || pl->hosts[i].port != c.port)
			continue;
		perr(p, ipn, "%s: duplicate host %s port %d (first at line %d)", what, ipn->value,
		     c.port, pl->hosts[i].line);
		return;
	}
	h = &pl->hosts[pl->nhosts];
	memset(h, 0, sizeof(*h));
	h->identity_file = c.identity_file ? expand_home(p, c.identity_at, c.identity_file) : NULL;
	if (c.identity_file && !h->identity_file)
		return;
	h->ip = xstrdup(ipn->value);
	h->user = c.user ? xstrdup(c.user) : NULL;
	h->port = c.port;
	h->proxy_jump = c.proxy_jump ? xstrdup(c.proxy_jump) : NULL;
	h->line = ipn->line;
	h->col = ipn->col;
	pl->nhosts++;
}

static void parse_pool(struct pparse *p, struct infra_pools *out, const struct ynode *key,
                       const struct ynode *val)
{
	struct infra_pool *pl;
	const struct ynode *hosts;
	struct conn defaults = {0};
	size_t i;

	if (key->kind != Y_SCALAR || yscalar_type(key) != YS_STR || !pool_name_ok(key->value)) {
		perr(p, key,
		     "pool names must be letters, digits, '.', '_' and '-' (at most 63, starting "
		     "with a letter or digit), not %s%.64s%s",
		     key->kind == Y_SCALAR ? "'" : "",
		     key->kind == Y_SCALAR ? key->value : ynode_describe(key),
		     key->kind == Y_SCALAR ? "'" : "");
		return;
	}
	if (val->kind != Y_MAP) {
		perr(p, val, "pool '%s' must be a mapping with 'hosts', not %s", key->value,
		     ynode_describe(val));
		return;
	}
	check_keys(p, val, key->value, pool_keys, ARRAY_SIZE(pool_keys));
	get_conn(p, val, key->value, &defaults);
	hosts = ymap_get(val, "hosts");
	if (!hosts || ynode_is_null(hosts)) {
		perr(p, hosts ? hosts : key, "pool '%s' has no hosts", key->value);
		return;
	}
	if (hosts->kind != Y_SEQ) {
		perr(p, hosts, "%s.hosts must be a list, not %s", key->value,
		     ynode_describe(hosts));
		return;
	}
	if (!hosts->n) {
		perr(p, hosts, "pool '%s' has no hosts", key->value);
		return;
	}
	if (hosts->n > INFRA_MAX_HOSTS) {
		perr(p, hosts, "pool '%s' has %zu hosts, more than %d", key->value, hosts->n,
		     INFRA_MAX_HOSTS);
		return;
	}
	pl = &out->v[out->n++];
	memset(pl, 0, sizeof(*pl));
	pl->name = xstrdup(key->value);
	pl->line = key->line;
	pl->col = key->col;
	pl->hosts = xcalloc(hosts->n, sizeof(*pl->hosts));
	for (i = 0; i < hosts->n; i++)
		parse_host(p, pl, hosts->items[i], i, &defaults);
}

int infra_pools_parse_buf(struct infra_pools *out, const char *file, const char *data, size_t len,
                          struct yerrors *errs)
{
	struct pparse p = {file, errs, 0};
	struct ystream y = YSTREAM_INIT;
	const struct ynode *root;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (yaml_load(&y, file, data, len, errs))
		return -EINVAL;
	if (y.ndocs > 1) {
		perr(&p, y.docs[1].root, "one YAML document expected, found %zu", y.ndocs);
		goto out;
	}
	out->file = xstrdup(file);
	/* An empty file (or one of comments) defines no pools: not an error by itself. */
	root = y.ndocs ? y.docs[0].root : NULL;
	if (!root || ynode_is_null(root))
		goto out;
	if (root->kind != Y_MAP) {
		perr(&p, root,
		     "an ssh node pool file maps pool names to pools ({hosts: [...]}), not %s",
		     ynode_describe(root));
		goto out;
	}
	if (ymap_pairs(root) > INFRA_MAX_POOLS) {
		perr(&p, root, "%zu pools, more than %d", ymap_pairs(root), INFRA_MAX_POOLS);
		goto out;
	}
	out->v = xcalloc(ymap_pairs(root) + 1, sizeof(*out->v));
	for (i = 0; i < ymap_pairs(root); i++)
		parse_pool(&p, out, ymap_key(root, i), ymap_val(root, i));
out:
	yaml_stream_release(&y);
	if (p.failed) {
		infra_pools_release(out);
		return -EINVAL;
	}
	return 0;
}

int infra_pools_load(struct infra_pools *out, const char *path, struct yerrors *errs)
{
	struct buf b = BUF_INIT(YAML_MAX_INPUT);
	struct stat st;
	int fd, r;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		yerr_add(errs, path, 1, 1, "cannot open: %s", strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		yerr_add(errs, path, 1, 1, "cannot stat: %s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		yerr_add(errs, path, 1, 1, "not a regular file");
		goto out;
	}
	if ((size_t)st.st_size > YAML_MAX_INPUT) {
		r = -EINVAL;
		yerr_add(errs, path, 1, 1, "file is %lld bytes, over the limit of %zu bytes",
		         (long long)st.st_size, YAML_MAX_INPUT);
		goto out;
	}
	r = buf_read_fd(&b, fd);
	if (r == -ENOBUFS) {
		r = -EINVAL;
		yerr_add(errs, path, 1, 1, "more than %zu bytes: over the limit", YAML_MAX_INPUT);
		goto out;
	}
	if (r) {
		yerr_add(errs, path, 1, 1, "cannot read: %s", strerror(-r));
		goto out;
	}
	r = infra_pools_parse_buf(out, path, b.p, b.len, errs);
out:
	close(fd);
	buf_release(&b);
	return r;
}

const struct infra_pool *infra_pools_find(const struct infra_pools *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].name, name))
			return &p->v[i];
	return NULL;
}

char *infra_pools_path(void)
{
	const char *env = getenv(INFRA_POOLS_ENV);
	const char *home;
	char *path;

	if (env && *env)
		return xstrdup(env);
	home = skiff_home();
	if (!home)
		return NULL;
	path = xasprintf("%s/" INFRA_POOLS_FILE, home);
	/* Without one of our own, SkyPilot's file, as it is (the format is the same). */
	if (access(path, F_OK) && (home = user_home())) {
		char *sky = xasprintf("%s/.sky/" INFRA_POOLS_FILE, home);

		if (!access(sky, F_OK)) {
			free(path);
			return sky;
		}
		free(sky);
	}
	return path;
}

char *infra_host_key(const char *pool, const struct infra_host *h)
{
	if (strchr(h->ip, ':'))
		return xasprintf("%s/[%s]:%d", pool, h->ip, h->port);
	return xasprintf("%s/%s:%d", pool, h->ip, h->port);
}

/* ---- the ssh infra: hosts of a pool -------------------------------------------------- */

#define INFRA_DOCS_HINT "see docs/infra-ssh.md"

static int ssh_parse(const char *rest, const char *spec, struct infra *out)
{
	if (rest && (!*rest || strchr(rest, '/')))
		return error("infra '%s': expected ssh/POOL, a pool name of the ssh node pool file "
		             "(no '/' in it)",
		             spec);
	out->pool = rest ? xstrdup(rest) : NULL;
	out->spec = rest ? xasprintf("ssh/%s", rest) : xstrdup("ssh");
	return 0;
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

static int ssh_resolve(struct infra *inf)
{
	struct yerrors errs = YERRORS_INIT;
	const char **names = NULL;
	struct buf list = BUF_INIT(4096);
	char *path = NULL;
	size_t i;
	int r;

	if (inf->p)
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

static int ssh_pick(struct infra *inf, struct st_db *ldb, const char *cluster, int num_nodes,
                    struct cluster_node *v)
{
	const struct infra_pool *pool;
	struct infra_candidate *cand;
	struct buf holders = BUF_INIT(4096), away = BUF_INIT(4096);
	size_t *picked, *host, busy = 0, nheld = 0, nc = 0, i;
	char *share = infra_share_of(inf->res); /* NULL: each host whole */
	int taken, r;

	r = ssh_resolve(inf);
	if (r) {
		free(share);
		return r;
	}
	pool = inf->p;
	if ((size_t)num_nodes > pool->nhosts) {
		error("pool '%s' has %zu node%s; need %d", pool->name, pool->nhosts,
		      pool->nhosts == 1 ? "" : "s", num_nodes);
		free(share);
		return -ENOSPC;
	}
	cand = xcalloc(pool->nhosts, sizeof(*cand));
	picked = xcalloc(pool->nhosts, sizeof(*picked));
	host = xcalloc(pool->nhosts, sizeof(*host));
	/*
	 * The candidates, but the hosts that said other clusters hold them (another launcher's,
	 * or shares with no room left: cand[k]: host[k]).
	 */
	for (i = 0; i < pool->nhosts; i++) {
		char *key = infra_host_key(pool->name, &pool->hosts[i]);

		if (infra_held(inf, key)) {
			buf_addf(&away, "%s%s", nheld++ ? ", " : "", pool->hosts[i].ip);
			free(key);
			continue;
		}
		if (share) { /* booked as a share: its own key (the host's holds shares) */
			char *k = xasprintf("%s%c%s", key, INFRA_SHARE_KEY_SEP, cluster);

			free(key);
			key = k;
		}
		cand[nc].key = key;
		cand[nc].ip = pool->hosts[i].ip;
		cand[nc].port = pool->hosts[i].port;
		cand[nc].share = share != NULL;
		host[nc++] = i;
	}
	taken = infra_book(ldb, cluster, cand, nc, num_nodes, picked, &busy, &holders);
	if (taken < 0) {
		r = taken;
		goto out;
	}
	if (taken < num_nodes) {
		if (busy)
			buf_addf(&away, "%s%zu %s in use by cluster%s %s", nheld ? "; " : "", busy,
			         busy == 1 ? "is" : "are", strchr(holders.p, ',') ? "s" : "",
			         holders.p);
		error("pool '%s' has %zu node%s, %s%s; need %d", pool->name, pool->nhosts,
		      pool->nhosts == 1 ? "" : "s", nheld ? "other clusters hold " : "", away.p,
		      num_nodes);
		r = -EBUSY;
		goto out;
	}
	for (i = 0; i < (size_t)taken; i++) {
		const struct infra_host *h = &pool->hosts[host[picked[i]]];
		struct cluster_node *n = &v[i];

		infra_node_init(n, cluster, (int)i);
		n->stays = 1; /* a host outlives its clusters */
		n->share = share ? xstrdup(share) : NULL;
		n->node_key = xstrdup(cand[picked[i]].key);
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
	for (i = 0; i < nc; i++)
		free((char *)cand[i].key);
	free(cand);
	free(picked);
	free(host);
	free(share);
	buf_release(&holders);
	buf_release(&away);
	return r;
}

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

static struct runner *ssh_runner(const struct infra *inf, const struct cluster_node *n)
{
	struct ssh_target t;
	struct runner *r;
	char *name, *dir;

	(void)inf;
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

/*
 * Usable when the pool file parses (its errors kept, at their FILE:LINE:COL), names the
 * pool (or has any, for a bare ssh) and ssh is there to reach the hosts.
 */
/* The hosts of each pool (the one named: its own) for `skiff check`, booked by node key. */
static void probe_hosts(const struct infra_pools *pools, const char *only, struct infra_probe *out)
{
	static const char *const cols[] = {"pool", "host", "port", "user"};
	struct infra_inv *inv = infra_inv_table(out, "hosts", cols, ARRAY_SIZE(cols));
	size_t i, h;

	for (i = 0; i < pools->n; i++) {
		const struct infra_pool *p = &pools->v[i];

		if (only && strcmp(only, p->name))
			continue;
		for (h = 0; h < p->nhosts; h++) {
			const struct infra_host *ho = &p->hosts[h];
			char port[16], *key = infra_host_key(p->name, ho);
			const char *cells[] = {p->name, ho->ip, port, ho->user};
			int r;

			xsnprintf(port, sizeof(port), "%d", ho->port);
			r = infra_inv_add(inv, key, ho->ip, ho->port, cells);
			free(key);
			if (r)
				return;
		}
	}
}

static void ssh_probe(const struct infra *inf, int64_t deadline, struct infra_probe *out)
{
	char *argv[] = {"ssh", "-V", NULL};
	const struct infra_pool *pool = NULL;
	struct infra_pools pools;
	struct buf list = BUF_INIT(4096);
	char *path = infra_pools_path();
	size_t i;
	int r;

	memset(&pools, 0, sizeof(pools));
	if (!path) {
		infra_probe_set(out, INFRA_PROBE_UNUSABLE, NULL);
		infra_probe_say(out, "no home directory to find the pool file in");
		return;
	}
	r = infra_pools_load(&pools, path, &out->errs);
	if (r) {
		infra_probe_set(out, r == -ENOENT ? INFRA_PROBE_MISSING : INFRA_PROBE_INVALID,
		                path);
		out->is_file = 1;
		if (r == -ENOENT) {
			yerr_release(&out->errs); /* "cannot open": the line says it */
			infra_probe_say(out, "write one, or name one with " INFRA_POOLS_ENV " (%s)",
			                INFRA_DOCS_HINT);
		}
		goto out;
	}
	for (i = 0; i < pools.n && i < 8; i++)
		buf_addf(&list, "%s%s (%zu host%s)", i ? ", " : "", pools.v[i].name,
		         pools.v[i].nhosts, pools.v[i].nhosts == 1 ? "" : "s");
	if (pools.n > 8)
		buf_addf(&list, ", ...");
	if (inf->pool)
		pool = infra_pools_find(&pools, inf->pool);
	if (!pools.n || (inf->pool && !pool)) {
		infra_probe_set(out, INFRA_PROBE_UNUSABLE, path);
		if (!pools.n)
			infra_probe_say(out, "'%s' defines no pools (%s)", path, INFRA_DOCS_HINT);
		else
			infra_probe_say(out, "no pool '%s' in '%s', which has %s", inf->pool, path,
			                list.p);
		goto out;
	}
	if (infra_probe_run(out, "ssh -V", argv, deadline, NULL))
		goto out;
	probe_hosts(&pools, inf->pool, out);
	if (pool)
		infra_probe_say(out, "pool '%s' of '%s': %zu host%s", pool->name, path,
		                pool->nhosts, pool->nhosts == 1 ? "" : "s");
	else
		infra_probe_say(out, "'%s': %zu pool%s: %s", path, pools.n, pools.n == 1 ? "" : "s",
		                list.p);
out:
	infra_pools_release(&pools);
	buf_release(&list);
	free(path);
}

const struct infra_ops infra_ssh_ops = {
        .name = "ssh",
        .honours = TR_PORTS, /* endpoints are the head's address and the port */
        .kind = INFRA_SSH,
        .flags = INFRA_PROCS_STAY | INFRA_SSH_CONFIG | INFRA_POOL_FILE,
        .max_nodes = INFRA_MAX_HOSTS,
        .parse = ssh_parse,
        .resolve = ssh_resolve,
        .pick = ssh_pick,
        .runner = ssh_runner,
        .probe = ssh_probe,
};
