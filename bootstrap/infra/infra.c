/*
 * Infras: the registry of their ops tables, infra specs, node picking and booking, and
 * cluster names. Each infra's own code is in its file (infra_local.c, infra_ssh.c,
 * infra_container.c, infra_k8s.c, infra_slurm.c); nothing here names one.
 */
#include "bootstrap/infra/infra.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/infra/infra_internal.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/sha256.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

_Static_assert(INFRA_SPEC_MAX == TASK_INFRA_MAX, "a task's infra is one infra_parse() takes");

/* The forms of all_ops' specs, for messages (docs/task-yaml.md has them all). */
#define INFRA_KINDS                                                                                \
	"local, ssh/POOL, podman[/POOL], docker[/POOL], k8s[/CONTEXT[/NAMESPACE]], "               \
	"slurm[/PARTITION]"

static const struct infra_ops *const all_ops[] = {
        &infra_local_ops,  &infra_ssh_ops, &infra_podman_ops,
        &infra_docker_ops, &infra_k8s_ops, &infra_slurm_ops,
};

/* SkyPilot's cloud names: recognised so that the message can say what to do instead. */
static const char *const clouds[] = {
        "aws",        "azure",      "gcp",        "ibm",       "lambda",
        "scp",        "oci",        "runpod",     "vast",      "vsphere",
        "cudo",       "fluidstack", "paperspace", "do",        "nebius",
        "hyperbolic", "seeweb",     "shadeform",  "coreweave", "primeintellect",
};

#define INFRA_DOCS_HINT "see docs/infra-ssh.md"

const struct infra_ops *infra_ops_find(const char *name)
{
	size_t i;

	if (!strcmp(name, "kubernetes"))
		name = "k8s";
	for (i = 0; i < ARRAY_SIZE(all_ops); i++)
		if (!strcmp(all_ops[i]->name, name))
			return all_ops[i];
	return NULL;
}

const struct infra_ops *infra_ops_at(size_t i)
{
	return i < ARRAY_SIZE(all_ops) ? all_ops[i] : NULL;
}

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
		if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
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

/* What comes before the first '/' of spec, lower-cased (cut to fit), into head. */
static void spec_head(const char *spec, char *head, size_t size)
{
	const char *slash = strchr(spec, '/');
	size_t len = slash ? (size_t)(slash - spec) : strlen(spec), i;

	if (len >= size)
		len = size - 1;
	for (i = 0; i < len; i++)
		head[i] =
		        (spec[i] >= 'A' && spec[i] <= 'Z') ? (char)(spec[i] - 'A' + 'a') : spec[i];
	head[len] = '\0';
}

int infra_is_named(const char *s)
{
	char head[32];

	spec_head(s, head, sizeof(head));
	return infra_ops_find(head) || is_one_of(head, clouds, ARRAY_SIZE(clouds));
}

int infra_parse_quiet(const char *spec, struct infra *out, struct buf *why)
{
	enum log_level lvl = log_get_level();
	char text[512];
	int r;

	log_set_level(LOG_QUIET);
	r = infra_parse(spec, out);
	log_set_level(lvl);
	if (r && why) {
		log_last_error(text, sizeof(text));
		buf_adds(why, text);
	}
	return r;
}

int infra_parse(const char *spec, struct infra *out)
{
	const char *names[ARRAY_SIZE(all_ops) + ARRAY_SIZE(clouds) + 1];
	const struct infra_ops *ops;
	char head[32];
	const char *slash, *rest, *best;
	size_t i, k = 0;
	int r;

	memset(out, 0, sizeof(*out));
	if (!spec || !*spec || !strcmp(spec, "*"))
		spec = INFRA_DEFAULT;
	if (strlen(spec) > INFRA_SPEC_MAX)
		return error("infra '%.40s...' is %zu characters long, more than %d", spec,
		             strlen(spec), INFRA_SPEC_MAX);
	if (!printable(spec))
		return error("infra '?' is not an infra spec (%s)", INFRA_KINDS);
	slash = strchr(spec, '/');
	rest = slash ? slash + 1 : NULL;
	spec_head(spec, head, sizeof(head));
	ops = infra_ops_find(head);
	if (ops) {
		r = ops->parse(rest, spec, out);
		if (r) {
			infra_release(out);
			return r;
		}
		out->ops = ops;
		out->kind = ops->kind;
		return 0;
	}
	if (is_one_of(head, clouds, ARRAY_SIZE(clouds))) {
		error("infra '%s': skiff does not provision cloud VMs; run on machines you have "
		      "with ssh/POOL (%s), or on this machine with local",
		      spec, INFRA_DOCS_HINT);
		return -ENOTSUP;
	}
	for (i = 0; i < ARRAY_SIZE(all_ops); i++)
		names[k++] = all_ops[i]->name;
	names[k++] = "kubernetes";
	for (i = 0; i < ARRAY_SIZE(clouds); i++)
		names[k++] = clouds[i];
	best = nearest_word(head, names, k);
	if (best)
		return error("unknown infra '%s'; did you mean '%s'?", spec, best);
	return error("unknown infra '%s': expected one of %s", spec, INFRA_KINDS);
}

int infra_resolve(struct infra *inf)
{
	return inf->ops && inf->ops->resolve ? inf->ops->resolve(inf) : 0;
}

/* ---- what a task asks that an infra ignores ------------------------------------------ */

/* "a<sep>b<sep>c" of names[0..n) (those that fit in names) into out. */
static void join_names(struct buf *out, const char *const *names, size_t n, size_t max,
                       const char *sep)
{
	size_t i;

	for (i = 0; i < n && i < max; i++)
		buf_addf(out, "%s%s", i ? sep : "", names[i]);
}

int infra_ignored_fields(const struct task *t, const struct infra_ops *ops, const char *spec,
                         struct buf msg[INFRA_IGNORED_N])
{
	const char *names[32];
	size_t n;
	int k = 0;

	n = task_cloud_only_fields(t, ops->honours, names, ARRAY_SIZE(names));
	if (n) {
		buf_addf(&msg[INFRA_IGNORED_RES],
		         "ignored on %s infra (only a cloud can honour them): ", spec);
		join_names(&msg[INFRA_IGNORED_RES], names, n, ARRAY_SIZE(names), ", ");
		k++;
	}
	n = task_unhonoured_fields(t, ops->honours, names, ARRAY_SIZE(names));
	if (n) {
		buf_addf(&msg[INFRA_IGNORED_TASK], "ignored on %s infra: ", spec);
		join_names(&msg[INFRA_IGNORED_TASK], names, n, ARRAY_SIZE(names), "; ");
		k++;
	}
	return k;
}

size_t infra_task_warnings(const struct task *t, const char *infra, const char *file,
                           struct yerrors *errs)
{
	size_t nalt = infra || !t->nres ? 1 : t->nres, nseen = 0, added = 0, a, k;
	char **seen = xcalloc(nalt, sizeof(*seen));
	int tline = t->line > 0 ? t->line : 1, tcol = t->col > 0 ? t->col : 1;

	for (a = 0; a < nalt; a++) {
		const struct task_resources *res = t->nres ? &t->res[a] : NULL;
		const char *spec = infra ? infra : res && res->infra ? res->infra : INFRA_DEFAULT;
		struct buf why = BUF_INIT(0), msg[INFRA_IGNORED_N] = {BUF_INIT(0), BUF_INIT(0)};
		int line = res && res->line > 0 ? res->line : tline;
		int col = res && res->line > 0 ? res->col : tcol;
		struct infra inf;
		int r = infra_parse_quiet(spec, &inf, &why);
		const char *key = r ? spec : inf.spec;

		/* Alternatives on one infra: its warnings once. */
		for (k = 0; k < nseen && strcmp(seen[k], key); k++)
			;
		if (k == nseen) {
			seen[nseen++] = xstrdup(key);
			if (r) {
				/* Launch refuses it (a cloud): the alternative can never run. */
				yerr_warn(errs, file, line, col, "%s", why.p);
				added++;
			} else if (infra_ignored_fields(t, inf.ops, inf.spec, msg)) {
				if (msg[INFRA_IGNORED_RES].len)
					yerr_warn(errs, file, line, col, "%s",
					          msg[INFRA_IGNORED_RES].p);
				if (msg[INFRA_IGNORED_TASK].len)
					yerr_warn(errs, file, tline, tcol, "%s",
					          msg[INFRA_IGNORED_TASK].p);
				added += !!msg[INFRA_IGNORED_RES].len +
				         !!msg[INFRA_IGNORED_TASK].len;
			}
		}
		if (!r)
			infra_release(&inf);
		for (k = 0; k < INFRA_IGNORED_N; k++)
			buf_release(&msg[k]);
		buf_release(&why);
	}
	for (k = 0; k < nseen; k++)
		free(seen[k]);
	free(seen);
	return added;
}

/* ---- node selection ------------------------------------------------------------------ */

void infra_node_init(struct cluster_node *n, const char *cluster, int rank)
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

int infra_held(const struct infra *inf, const char *key)
{
	size_t k;

	for (k = 0; k < inf->nheld; k++)
		if (!strcmp(inf->held[k], key))
			return 1;
	return 0;
}

char *infra_share_of(const struct task_resources *res)
{
	/* A share that names no CPUs still runs its jobs, which ask for the default. */
	double cpus = TASK_DEFAULT_CPUS, memory = 0;

	if (!res || (!res->cpus.text && !res->memory.text && !res->accel.name))
		return NULL;
	if (res->cpus.text)
		cpus = res->cpus.value;
	if (res->memory.text)
		memory = res->memory.mode == TASK_PER_CPU ? res->memory.value * cpus
		                                          : res->memory.value;
	return xasprintf("cpus=%g memory=%g gpus=%d", cpus, memory,
	                 res->accel.name ? (int)ceil(res->accel.count) : 0);
}

char *infra_host_of_key(const char *key)
{
	const char *sep = strchr(key, INFRA_SHARE_KEY_SEP);

	return sep ? xstrndup(key, (size_t)(sep - key)) : xstrdup(key);
}

int infra_book(struct st_db *ldb, const char *cluster, const struct infra_candidate *c, size_t n,
               int want, size_t *picked, size_t *busy, struct buf *holders)
{
	char **seen = NULL;
	size_t nseen = 0, alloc = 0, i, k;
	int taken = 0, r = 0;

	*busy = 0;
	if (!ldb)
		return error("BUG: booking nodes needs the launcher database");
	for (i = 0; i < n && taken < want; i++) {
		char *holder = NULL;

		r = st_node_holder(ldb, c[i].key, c[i].ip, c[i].port, c[i].share, &holder);
		if (r)
			break;
		if (holder && strcmp(holder, cluster)) {
			(*busy)++;
			for (k = 0; k < nseen && strcmp(seen[k], holder); k++)
				;
			if (k == nseen) {
				seen = xgrow(seen, nseen, &alloc, sizeof(*seen));
				seen[nseen++] = holder;
			} else {
				free(holder);
			}
			continue;
		}
		free(holder);
		picked[taken++] = i;
	}
	for (k = 0; k < nseen; k++) {
		if (holders && k < 8)
			buf_addf(holders, "%s%s", k ? ", " : "", seen[k]);
		free(seen[k]);
	}
	if (holders && nseen > 8)
		buf_addf(holders, ", ... (%zu in all)", nseen);
	free(seen);
	return r ? r : taken;
}

int infra_pick_nodes(struct infra *inf, struct st_db *ldb, const char *cluster, int num_nodes,
                     struct cluster_node **out)
{
	struct cluster_node *v;
	int r;

	*out = NULL;
	if (infra_validate_cluster_name(cluster))
		return -EINVAL;
	if (num_nodes < 1 || num_nodes > inf->ops->max_nodes) {
		error("cluster '%s': cannot launch %d nodes on %s (1 to %d)", cluster, num_nodes,
		      inf->spec, inf->ops->max_nodes);
		return -EINVAL;
	}
	r = infra_resolve(inf);
	if (r)
		return r;
	v = xcalloc((size_t)num_nodes, sizeof(*v));
	r = inf->ops->pick(inf, ldb, cluster, num_nodes, v);
	if (r) {
		/* Entries never filled are all zero: freeing them is harmless. */
		cluster_nodes_free(v, (size_t)num_nodes);
		return r < 0 ? r : -EIO;
	}
	*out = v;
	return 0;
}

struct runner *infra_runner(const struct infra *inf, const struct cluster_node *n)
{
	return inf->ops->runner(inf, n);
}

int infra_teardown(const struct infra *inf, struct st_db *ldb, struct clive *cl,
                   const char *cluster)
{
	return inf->ops->teardown ? inf->ops->teardown(inf, ldb, cl, cluster) : 0;
}

/* ---- cluster names ------------------------------------------------------------------- */

static int name_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int infra_validate_cluster_name(const char *name)
{
	static const char rule[] = "[a-zA-Z]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?";
	size_t len, i;

	if (!name || !*name)
		return error("a cluster name cannot be empty");
	len = strlen(name);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (name_alnum(c) || c == '-' || c == '_' || c == '.')
			continue;
		if (c < 0x20 || c >= 0x7f)
			return error("cluster name has a control or non-ASCII byte (0x%02x) at "
			             "offset %zu: use letters, digits, '-', '_' and '.' (%s)",
			             c, i, rule);
		return error("cluster name '%.64s' has '%c': use letters, digits, '-', '_' and "
		             "'.' (%s)",
		             name, c, rule);
	}
	if (len > INFRA_CLUSTER_NAME_MAX)
		return error("cluster name '%.64s...' is %zu characters long, more than %d", name,
		             len, INFRA_CLUSTER_NAME_MAX);
	if (!name_alnum((unsigned char)name[0]) || (name[0] >= '0' && name[0] <= '9'))
		return error("cluster name '%s' must start with a letter (%s)", name, rule);
	if (!name_alnum((unsigned char)name[len - 1]))
		return error("cluster name '%s' must end with a letter or a digit (%s)", name,
		             rule);
	return 0;
}

char *infra_dns_label(const char *prefix, const char *cluster, int rank)
{
	struct buf b = BUF_INIT(0);
	char hex[SHA256_HEX_LEN + 1], tail[32];
	size_t keep, i;
	int mapped = 0;

	buf_adds(&b, prefix);
	for (i = 0; cluster[i]; i++) {
		char c = cluster[i];

		if (c >= 'A' && c <= 'Z') {
			c = (char)(c - 'A' + 'a');
			mapped = 1;
		} else if (c == '_' || c == '.') {
			c = '-';
			mapped = 1;
		}
		buf_addch(&b, c);
	}
	xsnprintf(tail, sizeof(tail), "-%d", rank);
	if (!mapped && b.len + strlen(tail) <= INFRA_DNS_LABEL_MAX) {
		buf_adds(&b, tail);
		return buf_detach(&b, NULL);
	}
	/* Two names that map alike ("A_b", "a-b"), or cut alike, keep apart by a hash. */
	sha256_hex(cluster, strlen(cluster), hex);
	xsnprintf(tail, sizeof(tail), "-%.*s-%d", INFRA_DNS_HASH_LEN, hex, rank);
	keep = INFRA_DNS_LABEL_MAX - strlen(tail);
	if (b.len > keep)
		b.len = keep;
	while (b.len && b.p[b.len - 1] == '-')
		b.len--;
	b.p[b.len] = '\0';
	buf_adds(&b, tail);
	return buf_detach(&b, NULL);
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
