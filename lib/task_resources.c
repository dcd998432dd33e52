/*
 * resources: one mapping, or a shared mapping plus `any_of` / `ordered` alternatives, and
 * accelerators given as a list (ordered) or a set (any of them). Everything is expanded
 * here into a flat list of complete alternatives, each with the shared fields merged in
 * (an alternative's own fields win), so consumers never merge anything themselves.
 */
#include "lib/task.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/task_internal.h"
#include "lib/util.h"
#include "lib/banned.h"

static const char *const res_keys[] = {
        "infra", "cloud", "region", "zone", "cpus", "memory", "accelerators", "gpus",
        "instance_type", "use_spot", "job_recovery", "spot_recovery", "disk_size", "disk_tier",
        "network_tier", "ports", "labels", "accelerator_args", "image_id", "autostop", "priority",
        "volumes",
        /* SkyPilot's, kept without interpretation */
        "max_hourly_cost", "local_disk", "priority_class", "ephemeral_storage",
        "_docker_login_config", "_is_image_managed", "_requires_fuse", "_cluster_config_overrides",
        "_no_missing_accel_warnings",
        /* only in the shared mapping; keep these two last */
        "any_of", "ordered"};
#define NSINGLE_KEYS (ARRAY_SIZE(res_keys) - 2)
#define FIRST_EXTRA_KEY 22

static const char *const clouds[] = {
        "aws",       "azure",   "gcp",        "ibm",        "lambda",
        "scp",       "oci",     "kubernetes", "k8s",        "runpod",
        "vast",      "vsphere", "cudo",       "fluidstack", "paperspace",
        "do",        "nebius",  "ssh",        "hyperbolic", "seeweb",
        "shadeform", "slurm",   "local",      "coreweave",  "primeintellect",
        "podman",    "docker",
};

/*
 * The task language's rule for `infra:` (SkyPilot's InfraInfo.from_str,
 * sky/utils/infra_utils.py): after these names the rest is one name, a Kubernetes context
 * or an ssh pool, which may hold '/' (podman and docker pools are skiff's, written the
 * same way); after the others it is REGION[/ZONE]. What each infra makes of its rest is
 * bootstrap/infra/'s (infra_parse()); this is only how a task file reads.
 */
static const char *const rest_whole[] = {"kubernetes", "ssh", "podman", "docker"};

static const char *const disk_tiers[] = {"low", "medium", "high", "ultra", "best"};
static const char *const network_tiers[] = {"standard", "best"};
static const char *const recovery_strategies[] = {"FAILOVER", "EAGER_NEXT_REGION", "NONE"};
static const char *const wait_for_modes[] = {"jobs_and_ssh", "jobs", "none"};

int task_wait_for_valid(const char *s)
{
	size_t i;

	for (i = 0; s && i < ARRAY_SIZE(wait_for_modes); i++)
		if (!strcmp(s, wait_for_modes[i]))
			return 1;
	return 0;
}

/* One alternative while it is being parsed: accelerators may still hold several choices. */
struct rp {
	struct task_resources r;
	struct task_accel *accels;
	size_t naccels;
	int accels_ordered; /* a list (preference order) rather than a set */
};

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? xstrdup(s) : NULL;
}

static char *lower(char *s)
{
	char *c;

	for (c = s; c && *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	return s;
}

static void free_accels(struct task_accel *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

void task_resources_release(struct task_resources *r)
{
	size_t i;

	free(r->infra);
	free(r->cloud);
	free(r->region);
	free(r->zone);
	free(r->cpus.text);
	free(r->memory.text);
	free(r->accel.name);
	free(r->instance_type);
	free(r->disk_tier);
	free(r->network_tier);
	free(r->ports);
	free(r->image_id);
	task_kvs_release(&r->image_by_region);
	task_kvs_release(&r->labels);
	free(r->job_recovery.strategy);
	free(r->job_recovery.exit_codes);
	free(r->autostop.wait_for);
	free(r->autostop.hook);
	for (i = 0; i < r->nextra; i++)
		free(r->extra[i].key);
	free(r->extra);
	memset(r, 0, sizeof(*r));
}

void task_resources_override(struct task_resources *dst, const struct task_resources *src)
{
	static const unsigned where = TR_INFRA | TR_CLOUD | TR_REGION | TR_ZONE;

	if (src->set & (TR_INFRA | TR_CLOUD)) {
		/* A new place replaces the whole place. */
		set_str(&dst->infra, src->infra);
		set_str(&dst->cloud, src->cloud);
		set_str(&dst->region, src->region);
		set_str(&dst->zone, src->zone);
		dst->set = (dst->set & ~where) | (src->set & where);
	} else {
		/* --region or --zone alone narrows the place the task names. */
		if (src->set & TR_REGION)
			set_str(&dst->region, src->region);
		if (src->set & TR_ZONE)
			set_str(&dst->zone, src->zone);
		dst->set |= src->set & (TR_REGION | TR_ZONE);
	}
	if (src->set & TR_INSTANCE_TYPE)
		set_str(&dst->instance_type, src->instance_type);
	if (src->set & TR_USE_SPOT)
		dst->use_spot = src->use_spot;
	if (src->set & TR_DISK_SIZE)
		dst->disk_size = src->disk_size;
	if (src->set & TR_DISK_TIER)
		set_str(&dst->disk_tier, src->disk_tier);
	if (src->set & TR_NETWORK_TIER)
		set_str(&dst->network_tier, src->network_tier);
	if (src->set & TR_IMAGE_ID)
		set_str(&dst->image_id, src->image_id);
	if (src->set & TR_PORTS) {
		free(dst->ports);
		dst->nports = src->nports;
		dst->ports = xcalloc(src->nports ? src->nports : 1, sizeof(*dst->ports));
		memcpy(dst->ports, src->ports, src->nports * sizeof(*dst->ports));
	}
	dst->set |= src->set & (TR_INSTANCE_TYPE | TR_USE_SPOT | TR_DISK_SIZE | TR_DISK_TIER |
	                        TR_NETWORK_TIER | TR_IMAGE_ID | TR_PORTS);
}

/* ---- fields ------------------------------------------------------------------------ */

static int one_of(struct tparse *p, const struct ynode *n, const char *path, char **out,
                  const char *const *choices, size_t nchoices)
{
	const char *best;
	size_t i;

	if (tp_str(p, n, path, out))
		return -1;
	for (i = 0; i < nchoices; i++) {
		if (strcasecmp(*out, choices[i]))
			continue;
		set_str(out, choices[i]);
		return 0;
	}
	best = nearest_word(*out, choices, nchoices);
	if (best)
		return tp_err(p, n, "%s: unknown value '%.40s'; did you mean '%s'?", path, *out,
		              best);
	return tp_err(p, n, "%s: unknown value '%.40s'", path, *out);
}

/*
 * The cloud name[0..len) as the task language reads it: lowered into buf (CLOUD_NAME_BUF
 * bytes, cut to fit); 1 if it is one (or "*", any), else 0 with *suggest the nearest
 * known name or NULL.
 */
#define CLOUD_NAME_BUF 64
static int cloud_find(const char *name, size_t len, char *buf, const char **suggest)
{
	size_t i;

	*suggest = NULL;
	if (len >= CLOUD_NAME_BUF)
		len = CLOUD_NAME_BUF - 1;
	memcpy(buf, name, len);
	buf[len] = '\0';
	if (!strcmp(buf, "*"))
		return 1;
	lower(buf);
	for (i = 0; i < ARRAY_SIZE(clouds); i++)
		if (!strcmp(buf, clouds[i]))
			return 1;
	*suggest = nearest_word(buf, clouds, ARRAY_SIZE(clouds));
	return 0;
}

int task_infra_known(const char *s, const char **suggest)
{
	char buf[CLOUD_NAME_BUF];

	return cloud_find(s, strcspn(s, "/"), buf, suggest);
}

static int parse_cloud(struct tparse *p, const struct ynode *at, const char *path, const char *name,
                       size_t len, char **out)
{
	char buf[CLOUD_NAME_BUF];
	const char *best;

	if (cloud_find(name, len, buf, &best)) {
		set_str(out, !strcmp(buf, "*") ? NULL : !strcmp(buf, "k8s") ? "kubernetes" : buf);
		return 0;
	}
	if (best)
		return tp_err(p, at, "%s: unknown cloud '%s'; did you mean '%s'?", path, buf, best);
	return tp_err(p, at, "%s: unknown cloud '%s'", path, buf);
}

/* "CLOUD[/REGION[/ZONE]]" with "*" for any; k8s/CONTEXT and ssh/POOL keep the rest whole. */
static int parse_infra(struct tparse *p, const struct ynode *n, const char *path,
                       struct task_resources *r)
{
	const char *s, *slash, *part;
	char *parts[2] = {NULL, NULL};
	size_t i;

	if (tp_str(p, n, path, &r->infra))
		return -1;
	s = r->infra;
	if (strlen(s) > TASK_INFRA_MAX)
		return tp_err(p, n, "%s: '%.40s...' is %zu characters long, more than %d", path, s,
		              strlen(s), TASK_INFRA_MAX);
	for (i = 0; s[i]; i++)
		if (s[i] == ' ' || s[i] == '\t')
			return tp_err(p, n, "%s: '%.60s' has a space in it", path, s);
	set_str(&r->region, NULL);
	set_str(&r->zone, NULL);
	slash = strchr(s, '/');
	if (parse_cloud(p, n, path, s, slash ? (size_t)(slash - s) : strlen(s), &r->cloud))
		return -1;
	if (!slash)
		return 0;
	for (i = 0; r->cloud && i < ARRAY_SIZE(rest_whole) && strcmp(r->cloud, rest_whole[i]); i++)
		;
	if (r->cloud && i < ARRAY_SIZE(rest_whole)) {
		if (!slash[1])
			return tp_err(p, n, "%s: '%.60s' ends with '/'", path, s);
		set_str(&r->region, slash + 1); /* a context or pool name may hold '/' */
		return 0;
	}
	for (i = 0, part = slash + 1; part; i++) {
		const char *end = strchr(part, '/');
		size_t len = end ? (size_t)(end - part) : strlen(part);

		if (i == 2 || !len) {
			free(parts[0]);
			free(parts[1]);
			if (!len)
				return tp_err(p, n, "%s: '%.60s' has an empty part", path, s);
			return tp_err(p, n,
			              "%s: '%.60s' has too many parts: expected "
			              "CLOUD[/REGION[/ZONE]]",
			              path, s);
		}
		if (!(len == 1 && *part == '*'))
			parts[i] = xstrndup(part, len);
		part = end ? end + 1 : NULL;
	}
	r->region = parts[0];
	r->zone = parts[1];
	return 0;
}

static int parse_amount(struct tparse *p, const struct ynode *n, const char *path, int memory,
                        struct task_amount *out)
{
	char why[160];
	enum yscalar_type t = yscalar_type(n);

	if (n->kind != Y_SCALAR || (t != YS_STR && t != YS_INT && t != YS_FLOAT))
		return tp_type_err(p, n, path, "a number or a string like \"4+\"");
	if (task_amount_parse(n->value, memory, out, why, sizeof(why)))
		return tp_err(p, n, "%s %s, not '%.40s'", path, why, n->value);
	return 0;
}

/* Takes a's name. A choice already listed is not listed again (SkyPilot's, by NAME:COUNT). */
static void add_accel(struct rp *rp, const struct task_accel *a)
{
	size_t i;

	for (i = 0; i < rp->naccels; i++)
		if (!strcmp(rp->accels[i].name, a->name) && rp->accels[i].count == a->count) {
			free(a->name);
			return;
		}
	rp->accels = xrealloc(rp->accels, (rp->naccels + 1) * sizeof(*rp->accels));
	rp->accels[rp->naccels++] = *a;
}

static int accel_entry(struct tparse *p, const struct ynode *k, const struct ynode *v,
                       const char *path, struct rp *rp)
{
	struct task_accel a = {NULL, 1}, *by_mem = NULL;
	char why[160], *text;
	double count;
	size_t n = 0, i;
	int r;

	if (k->kind != Y_SCALAR || ynode_is_null(k))
		return tp_type_err(p, k, path, "a list, a set or a mapping of accelerator names");
	if (v && !ynode_is_null(v) && !strchr(k->value, ':') && v->kind == Y_SCALAR &&
	    (yscalar_type(v) == YS_INT || yscalar_type(v) == YS_FLOAT) &&
	    (ynode_number(v, &count) || !task_accel_count_ok(count)))
		return tp_err(
		        p, v,
		        "%s: the count of '%s' must be a number more than 0, at most %d, not %s",
		        path, k->value, TASK_ACCEL_COUNT_MAX, v->value);
	if (v && !ynode_is_null(v) && (strchr(k->value, ':') || ynode_number(v, &count)))
		return tp_type_err(p, v, path, "an accelerator count (a number more than 0)");
	/* SkyPilot reads {KEY: COUNT} as "KEY:COUNT", so the memory forms hold there too. */
	text = v && !ynode_is_null(v) ? xasprintf("%s:%s", k->value, v->value) : xstrdup(k->value);
	r = task_accel_memory_parse(text, &by_mem, &n, why, sizeof(why));
	free(text);
	if (r < 0)
		return tp_err(p, v && !ynode_is_null(v) && strstr(why, "count") ? v : k, "%s: %s",
		              path, why);
	if (r > 0) {
		for (i = 0; i < n; i++)
			add_accel(rp, &by_mem[i]);
		free(by_mem);
		return 0;
	}
	if (task_accel_parse(k->value, &a, why, sizeof(why)))
		return tp_err(p, k, "%s: %s", path, why);
	if (v && !ynode_is_null(v))
		a.count = count;
	add_accel(rp, &a);
	return 0;
}

static int parse_accels(struct tparse *p, const struct ynode *n, const char *path, struct rp *rp)
{
	size_t i;
	int r = 0;

	free_accels(rp->accels, rp->naccels);
	rp->accels = NULL;
	rp->naccels = 0;
	rp->accels_ordered = n->kind == Y_SEQ;
	if (n->kind == Y_SCALAR) {
		if (yscalar_type(n) != YS_STR)
			return tp_type_err(p, n, path, "a string like \"H100:8\"");
		return accel_entry(p, n, NULL, path, rp);
	}
	if (n->kind == Y_SEQ && !n->n)
		return tp_err(p, n, "%s: the list of accelerators is empty", path);
	for (i = 0; n->kind == Y_SEQ && i < n->n; i++) {
		if (n->items[i]->kind != Y_SCALAR || yscalar_type(n->items[i]) != YS_STR)
			r = tp_type_err(p, n->items[i], path, "a list of strings like \"H100:8\"");
		else if (accel_entry(p, n->items[i], NULL, path, rp))
			r = -1;
	}
	for (i = 0; n->kind == Y_MAP && i < ymap_pairs(n); i++)
		if (accel_entry(p, ymap_key(n, i), ymap_val(n, i), path, rp))
			r = -1;
	return r;
}

static int parse_ports(struct tparse *p, const struct ynode *n, const char *path,
                       struct task_resources *r)
{
	const struct ynode *const *items = n->kind == Y_SEQ ? (const struct ynode *const *)n->items
	                                                    : (const struct ynode *const *)&n;
	size_t count = n->kind == Y_SEQ ? n->n : 1, i;

	free(r->ports);
	r->ports = xcalloc(count + 1, sizeof(*r->ports));
	r->nports = 0;
	for (i = 0; i < count; i++) {
		const struct ynode *it = items[i];
		char lo[16], *dash;
		long a, b = 0;

		if (it->kind != Y_SCALAR ||
		    (yscalar_type(it) != YS_INT && yscalar_type(it) != YS_STR))
			return tp_type_err(p, it, path,
			                   "a port, a range like \"8080-8090\" or a list");
		/* Longer than "65535-65535" is no port nor range: said as such, cut. */
		if (it->len >= sizeof(lo))
			return tp_err(p, it,
			              "%s: '%.20s...' is not a port (1-65535) or a range LO-HI",
			              path, it->value);
		memcpy(lo, it->value, it->len + 1);
		dash = strchr(lo, '-');
		if (dash)
			*dash = '\0';
		if (parse_long(lo, 1, 65535, &a) || (dash && parse_long(dash + 1, 1, 65535, &b)) ||
		    (dash && b < a))
			return tp_err(p, it, "%s: '%.20s' is not a port (1-65535) or a range LO-HI",
			              path, it->value);
		r->ports[r->nports].lo = (int)a;
		r->ports[r->nports++].hi = (int)(dash ? b : a);
	}
	return 0;
}

static int parse_disk_size(struct tparse *p, const struct ynode *n, const char *path, long *out)
{
	double gib;

	if (n->kind != Y_SCALAR || (yscalar_type(n) != YS_INT && yscalar_type(n) != YS_STR))
		return tp_type_err(p, n, path, "a size in GiB (256 or \"256GB\")");
	if (task_size_parse(n->value, &gib) || !(gib >= 1) || gib > 1e9 || gib != floor(gib))
		return tp_err(p, n,
		              "%s must be a whole number of GiB (256 or \"256GB\"), not '%.40s'",
		              path, n->value);
	*out = (long)gib;
	return 0;
}

static int parse_image(struct tparse *p, const struct ynode *n, const char *path,
                       struct task_resources *r)
{
	set_str(&r->image_id, NULL);
	task_kvs_release(&r->image_by_region);
	if (n->kind == Y_MAP)
		return tp_kvs(p, n, path, 0, 0, 0, &r->image_by_region);
	if (tp_str(p, n, path, &r->image_id))
		return -1;
	if (!strcmp(r->image_id, "docker:") || !r->image_id[0])
		return tp_err(p, n, "%s: the image name is empty", path);
	return 0;
}

static int parse_accel_args(struct tparse *p, const struct ynode *n, const char *path)
{
	static const char *const keys[] = {"runtime_version", "tpu_name", "tpu_vm",
	                                   "gcp_queued_resource"};
	char sub[TASK_PATH_MAX];
	const struct ynode *v;
	char *tmp = NULL;
	int r, b;

	if (n->kind != Y_MAP)
		return tp_type_err(p, n, path, "a mapping");
	r = tp_check_keys(p, n, path, keys, ARRAY_SIZE(keys));
	if ((v = ymap_get(n, "runtime_version")) && !ynode_is_null(v))
		r |= tp_scalar_text(p, v, tp_path(sub, path, "runtime_version"), &tmp);
	if ((v = ymap_get(n, "tpu_name")) && !ynode_is_null(v))
		r |= tp_str(p, v, tp_path(sub, path, "tpu_name"), &tmp);
	if ((v = ymap_get(n, "tpu_vm")) && !ynode_is_null(v))
		r |= tp_bool(p, v, tp_path(sub, path, "tpu_vm"), &b);
	if ((v = ymap_get(n, "gcp_queued_resource")) && !ynode_is_null(v))
		r |= tp_bool(p, v, tp_path(sub, path, "gcp_queued_resource"), &b);
	free(tmp);
	return r ? -1 : 0;
}

static int parse_recovery(struct tparse *p, const struct ynode *n, const char *path,
                          struct task_job_recovery *jr)
{
	static const char *const keys[] = {"strategy", "max_restarts_on_errors",
	                                   "recover_on_exit_codes"};
	char sub[TASK_PATH_MAX];
	const struct ynode *v, *codes;
	size_t i, count;
	long code;
	int r = 0;

	free(jr->strategy);
	free(jr->exit_codes);
	memset(jr, 0, sizeof(*jr));
	jr->set = 1;
	if (n->kind == Y_SCALAR)
		return one_of(p, n, path, &jr->strategy, recovery_strategies,
		              ARRAY_SIZE(recovery_strategies));
	if (n->kind != Y_MAP)
		return tp_type_err(p, n, path, "a strategy name or a mapping");
	r = tp_check_keys(p, n, path, keys, ARRAY_SIZE(keys));
	if ((v = ymap_get(n, "strategy")) && !ynode_is_null(v))
		r |= one_of(p, v, tp_path(sub, path, "strategy"), &jr->strategy,
		            recovery_strategies, ARRAY_SIZE(recovery_strategies));
	if ((v = ymap_get(n, "max_restarts_on_errors")) && !ynode_is_null(v))
		r |= tp_long(p, v, tp_path(sub, path, "max_restarts_on_errors"), 0, 1000000,
		             &jr->max_restarts_on_errors);
	codes = ymap_get(n, "recover_on_exit_codes");
	if (!codes || ynode_is_null(codes))
		return r ? -1 : 0;
	tp_path(sub, path, "recover_on_exit_codes");
	count = codes->kind == Y_SEQ ? codes->n : 1;
	jr->exit_codes = xcalloc(count + 1, sizeof(*jr->exit_codes));
	for (i = 0; i < count; i++) {
		const struct ynode *c = codes->kind == Y_SEQ ? codes->items[i] : codes;
		size_t k;

		if (tp_long(p, c, sub, 0, 255, &code))
			return -1;
		for (k = 0; k < jr->nexit_codes; k++)
			if (jr->exit_codes[k] == code)
				return tp_err(p, c, "%s: exit code %ld is listed twice", sub, code);
		jr->exit_codes[jr->nexit_codes++] = (int)code;
	}
	return r ? -1 : 0;
}

static int parse_autostop(struct tparse *p, const struct ynode *n, const char *path,
                          struct task_autostop *as)
{
	static const char *const keys[] = {"idle_minutes", "down", "wait_for", "hook",
	                                   "hook_timeout"};
	char sub[TASK_PATH_MAX];
	const struct ynode *v;
	int b, r;

	free(as->wait_for);
	free(as->hook);
	memset(as, 0, sizeof(*as));
	as->set = 1;
	as->enabled = 1;
	as->idle_minutes = TASK_AUTOSTOP_DEFAULT_MINUTES;
	if (!ynode_bool(n, &b)) {
		as->enabled = b;
		return 0;
	}
	if (yscalar_type(n) == YS_INT)
		return tp_long(p, n, path, 0, TASK_AUTOSTOP_MINUTES_MAX, &as->idle_minutes);
	if (n->kind == Y_SCALAR && yscalar_type(n) == YS_STR) {
		if (task_minutes_parse(n->value, &as->idle_minutes))
			return tp_err(p, n,
			              "%s must be minutes or a time like \"10m\" or \"1h\", at "
			              "most %d minutes (ten years), not '%.40s'",
			              path, TASK_AUTOSTOP_MINUTES_MAX, n->value);
		return 0;
	}
	if (n->kind != Y_MAP)
		return tp_type_err(p, n, path,
		                   "true, false, minutes, a time like \"1h\" or a "
		                   "mapping");
	r = tp_check_keys(p, n, path, keys, ARRAY_SIZE(keys));
	if ((v = ymap_get(n, "idle_minutes")) && !ynode_is_null(v))
		r |= tp_long(p, v, tp_path(sub, path, "idle_minutes"), 0, TASK_AUTOSTOP_MINUTES_MAX,
		             &as->idle_minutes);
	if ((v = ymap_get(n, "down")) && !ynode_is_null(v))
		r |= tp_bool(p, v, tp_path(sub, path, "down"), &as->down);
	if ((v = ymap_get(n, "wait_for")) && !ynode_is_null(v))
		r |= one_of(p, v, tp_path(sub, path, "wait_for"), &as->wait_for, wait_for_modes,
		            ARRAY_SIZE(wait_for_modes));
	if ((v = ymap_get(n, "hook")) && !ynode_is_null(v))
		r |= tp_str(p, v, tp_path(sub, path, "hook"), &as->hook);
	if ((v = ymap_get(n, "hook_timeout")) && !ynode_is_null(v))
		r |= tp_long(p, v, tp_path(sub, path, "hook_timeout"), 1, 100000000,
		             &as->hook_timeout);
	return r ? -1 : 0;
}

static void set_extra(struct task_resources *r, const char *key, const struct ynode *v)
{
	size_t i;

	for (i = 0; i < r->nextra; i++)
		if (!strcmp(r->extra[i].key, key))
			break;
	if (i == r->nextra) {
		r->extra = xrealloc(r->extra, (r->nextra + 1) * sizeof(*r->extra));
		r->extra[r->nextra++].key = xstrdup(key);
	}
	r->extra[i].value = v;
}

static const struct {
	const char *key;
	unsigned bit;
} field_bits[] = {
        {"infra", TR_INFRA},
        {"cloud", TR_CLOUD},
        {"region", TR_REGION},
        {"zone", TR_ZONE},
        {"cpus", TR_CPUS},
        {"memory", TR_MEMORY},
        {"accelerators", TR_ACCELERATORS},
        {"gpus", TR_ACCELERATORS},
        {"instance_type", TR_INSTANCE_TYPE},
        {"use_spot", TR_USE_SPOT},
        {"job_recovery", TR_JOB_RECOVERY},
        {"spot_recovery", TR_JOB_RECOVERY},
        {"disk_size", TR_DISK_SIZE},
        {"disk_tier", TR_DISK_TIER},
        {"network_tier", TR_NETWORK_TIER},
        {"ports", TR_PORTS},
        {"labels", TR_LABELS},
        {"accelerator_args", TR_ACCELERATOR_ARGS},
        {"image_id", TR_IMAGE_ID},
        {"autostop", TR_AUTOSTOP},
        {"priority", TR_PRIORITY},
        {"volumes", TR_VOLUMES},
};

static int parse_volumes(struct tparse *p, const struct ynode *v, const char *path)
{
	size_t i;

	if (v->kind != Y_SEQ)
		return tp_type_err(p, v, path, "a list of volume mappings");
	for (i = 0; i < v->n; i++)
		if (v->items[i]->kind != Y_MAP)
			return tp_type_err(p, v->items[i], path, "a list of volume mappings");
	return tp_freeform(p, v, path);
}

static int parse_field(struct tparse *p, const char *key, const struct ynode *v, const char *path,
                       struct rp *rp)
{
	struct task_resources *r = &rp->r;
	char sub[TASK_PATH_MAX];
	size_t i;

	tp_path(sub, path, key);
	for (i = 0; i < ARRAY_SIZE(field_bits); i++)
		if (!strcmp(key, field_bits[i].key))
			r->set |= field_bits[i].bit;
	if (!strcmp(key, "infra"))
		return parse_infra(p, v, sub, r);
	if (!strcmp(key, "cloud")) {
		if (tp_str(p, v, sub, &r->cloud))
			return -1;
		return parse_cloud(p, v, sub, r->cloud, strlen(r->cloud), &r->cloud);
	}
	if (!strcmp(key, "region"))
		return tp_str(p, v, sub, &r->region);
	if (!strcmp(key, "zone"))
		return tp_str(p, v, sub, &r->zone);
	if (!strcmp(key, "cpus"))
		return parse_amount(p, v, sub, 0, &r->cpus);
	if (!strcmp(key, "memory"))
		return parse_amount(p, v, sub, 1, &r->memory);
	if (!strcmp(key, "accelerators") || !strcmp(key, "gpus"))
		return parse_accels(p, v, sub, rp);
	if (!strcmp(key, "instance_type"))
		return tp_str(p, v, sub, &r->instance_type);
	if (!strcmp(key, "use_spot"))
		return tp_bool(p, v, sub, &r->use_spot);
	if (!strcmp(key, "job_recovery") || !strcmp(key, "spot_recovery"))
		return parse_recovery(p, v, sub, &r->job_recovery);
	if (!strcmp(key, "disk_size"))
		return parse_disk_size(p, v, sub, &r->disk_size);
	if (!strcmp(key, "disk_tier"))
		return one_of(p, v, sub, &r->disk_tier, disk_tiers, ARRAY_SIZE(disk_tiers));
	if (!strcmp(key, "network_tier"))
		return one_of(p, v, sub, &r->network_tier, network_tiers,
		              ARRAY_SIZE(network_tiers));
	if (!strcmp(key, "ports"))
		return parse_ports(p, v, sub, r);
	if (!strcmp(key, "labels")) /* an alternative's labels add to the shared ones */
		return tp_kvs(p, v, sub, 0, 0, 0, &r->labels);
	if (!strcmp(key, "accelerator_args")) {
		r->accelerator_args = v;
		return parse_accel_args(p, v, sub);
	}
	if (!strcmp(key, "image_id"))
		return parse_image(p, v, sub, r);
	if (!strcmp(key, "autostop"))
		return parse_autostop(p, v, sub, &r->autostop);
	if (!strcmp(key, "priority"))
		return tp_long(p, v, sub, -1000, 1000, &r->priority);
	if (!strcmp(key, "volumes")) {
		r->volumes = v;
		return parse_volumes(p, v, sub);
	}
	for (i = FIRST_EXTRA_KEY; i < NSINGLE_KEYS; i++) {
		if (strcmp(key, res_keys[i]))
			continue;
		r->set |= TR_EXTRA;
		set_extra(r, key, v);
		return tp_freeform(p, v, sub);
	}
	return 0; /* unknown keys are reported by tp_check_keys() */
}

static const struct ynode *key_node(const struct ynode *map, const char *key)
{
	size_t i;

	for (i = 0; i < ymap_pairs(map); i++)
		if (ymap_key(map, i)->kind == Y_SCALAR && !strcmp(ymap_key(map, i)->value, key))
			return ymap_key(map, i);
	return NULL;
}

static int parse_fields(struct tparse *p, const struct ynode *map, const char *path, struct rp *rp)
{
	size_t i;
	int r = 0;

	if (key_node(map, "gpus") && key_node(map, "accelerators"))
		r = tp_err(p, key_node(map, "gpus"),
		           "%s: give 'accelerators' or its alias 'gpus', not both", path);
	if (key_node(map, "spot_recovery") && key_node(map, "job_recovery"))
		r = tp_err(p, key_node(map, "spot_recovery"),
		           "%s: give 'job_recovery', not both it and the old 'spot_recovery'",
		           path);
	for (i = 0; i < ymap_pairs(map); i++) {
		const struct ynode *k = ymap_key(map, i), *v = ymap_val(map, i);

		if (k->kind != Y_SCALAR || ynode_is_null(v))
			continue;
		if (!strcmp(k->value, "spot_recovery"))
			tp_warn(p, k, "%s.spot_recovery is deprecated: use job_recovery", path);
		if (parse_field(p, k->value, v, path, rp))
			r = -1;
	}
	return r;
}

static void rp_release(struct rp *rp)
{
	task_resources_release(&rp->r);
	free_accels(rp->accels, rp->naccels);
	memset(rp, 0, sizeof(*rp));
}

/* Completes one alternative: checks what only the merged fields show, picks accelerator k. */
static int finish(struct tparse *p, const struct ynode *at, const char *path, struct rp *rp,
                  size_t k)
{
	struct task_resources *r = &rp->r;

	if ((r->set & TR_INFRA) && (r->set & (TR_CLOUD | TR_REGION | TR_ZONE)))
		return tp_err(p, at,
		              "%s: give 'infra' or the older 'cloud'/'region'/'zone', not both",
		              path);
	if (!r->infra && (r->cloud || r->region || r->zone))
		r->infra = xasprintf("%s%s%s%s%s", r->cloud ? r->cloud : "*",
		                     r->region || r->zone ? "/" : "", r->region ? r->region : "*",
		                     r->zone ? "/" : "", r->zone ? r->zone : "");
	if (rp->naccels) {
		r->accel = rp->accels[k];
		rp->accels[k].name = NULL;
	}
	return 0;
}

int task_parse_resources(struct tparse *p, const struct ynode *node, struct task *t)
{
	const struct ynode *any = ymap_get(node, "any_of"), *ord = ymap_get(node, "ordered");
	const struct ynode *list;
	char path[TASK_PATH_MAX];
	struct rp base;
	size_t a, k, nacc;
	int r = 0;

	if (!node || ynode_is_null(node)) {
		t->res = xcalloc(1, sizeof(*t->res));
		t->res[0].line = t->line;
		t->res[0].col = t->col;
		t->nres = 1;
		return 0;
	}
	if (node->kind != Y_MAP)
		return tp_type_err(p, node, "resources", "a mapping");
	r = tp_check_keys(p, node, "resources", res_keys, ARRAY_SIZE(res_keys));
	any = any && !ynode_is_null(any) ? any : NULL;
	ord = ord && !ynode_is_null(ord) ? ord : NULL;
	if (any && ord)
		return tp_err(p, ord, "resources: give 'any_of' or 'ordered', not both");
	list = any ? any : ord;
	if (list && (list->kind != Y_SEQ || !list->n))
		return tp_type_err(p, list, any ? "resources.any_of" : "resources.ordered",
		                   "a non-empty list of resource mappings");
	for (a = 0; list && a < list->n; a++) {
		tp_index(path, any ? "resources.any_of" : "resources.ordered", a);
		if (list->items[a]->kind != Y_MAP)
			r = tp_type_err(p, list->items[a], path, "a mapping");
		else if (tp_check_keys(p, list->items[a], path, res_keys, NSINGLE_KEYS))
			r = -1;
	}
	/* The shared fields, checked once. */
	memset(&base, 0, sizeof(base));
	if (parse_fields(p, node, "resources", &base))
		r = -1;
	t->res_ordered = ord ? 1 : !list && base.naccels > 1 && base.accels_ordered;
	/* A set of accelerators multiplies any_of; an order cannot be merged with either. */
	if (base.naccels > 1 && (ord || (any && base.accels_ordered)))
		r = tp_err(p, node, "resources: a %s of accelerators cannot be combined with %s",
		           base.accels_ordered ? "list" : "set", ord ? "ordered" : "any_of");
	rp_release(&base);
	if (r || p->failed)
		return -1;

	for (a = 0; a < (list ? list->n : 1); a++) {
		const struct ynode *item = list ? list->items[a] : NULL;

		tp_index(path, any ? "resources.any_of" : "resources.ordered", a);
		for (k = 0, nacc = 1; k < nacc; k++) {
			struct rp cur;

			memset(&cur, 0, sizeof(cur));
			p->quiet++; /* the shared fields were checked above */
			parse_fields(p, node, "resources", &cur);
			p->quiet--;
			if (item) {
				if (parse_fields(p, item, path, &cur))
					r = -1;
				if (!r && cur.naccels > 1 &&
				    (ymap_get(item, "accelerators") || ymap_get(item, "gpus")))
					r = tp_err(p, item,
					           "%s: give one accelerator per alternative",
					           path);
			}
			nacc = cur.naccels > 1 ? cur.naccels : 1;
			if (!r && t->nres >= TASK_MAX_ALTERNATIVES)
				r = tp_err(p, node, "resources: more than %d alternatives",
				           TASK_MAX_ALTERNATIVES);
			if (!r && finish(p, item ? item : node, item ? path : "resources", &cur, k))
				r = -1;
			if (r) {
				rp_release(&cur);
				return -1;
			}
			cur.r.line = item ? item->line : node->line;
			cur.r.col = item ? item->col : node->col;
			t->res = xrealloc(t->res, (t->nres + 1) * sizeof(*t->res));
			t->res[t->nres++] = cur.r;
			memset(&cur.r, 0, sizeof(cur.r));
			rp_release(&cur);
		}
	}
	return 0;
}
