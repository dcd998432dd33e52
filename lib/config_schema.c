/*
 * The schema of SkyPilot's config as skiff reads it (lib/config.h): every key SkyPilot
 * knows, what a task may set, the types of the keys skiff honours, and why the others
 * are ignored (docs/config.md keeps the same list for people).
 */
#include "lib/config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/config_internal.h"
#include "lib/util.h"
#include "lib/task.h"
#include "lib/banned.h"

/* ---- the schema ---------------------------------------------------------------------- */

enum ctype {
	T_ANY,       /* not checked */
	T_MAP,       /* a mapping whose keys are the sub table's */
	T_FREEMAP,   /* a mapping of anything (a pod spec) */
	T_WORDS,     /* a string or a list of strings, each split into words */
	T_SECONDS,   /* a positive integer */
	T_HOURS,     /* a number of hours, fractions allowed; negative: no limit */
	T_OPTIONS,   /* sbatch options: NAME: string, number, true, false or null */
	T_OPTION,    /* one option's value: a string */
	T_RESOURCES, /* a task's resources: cpus and memory read, others ignored */
};

enum {
	CK_OPEN = 1 << 0, /* a config file may have keys the sub table does not list */
};

/*
 * What a task's config: may set: SkyPilot's OVERRIDEABLE_CONFIG_KEYS_IN_TASK
 * (sky/skylet/constants.py), as it is. Each is in the schema below, honoured or ignored
 * with a reason like any other key; the sections above them (docker, kubernetes, ...) may
 * be written to reach them.
 */
static const char *const task_keys[] = {
        "docker.run_options",    "nvidia_gpus.disable_ecc",      "ssh.custom_metadata",
        "ssh.pod_config",        "ssh.provision_timeout",        "kubernetes.custom_metadata",
        "kubernetes.pod_config", "kubernetes.provision_timeout", "kubernetes.dws",
        "kubernetes.kueue",      "kubernetes.remote_identity",   "gcp.managed_instance_group",
        "gcp.enable_gvnic",      "gcp.enable_gpu_direct",        "gcp.placement_policy",
        "vast.datacenter_only",  "vast.create_instance_kwargs",  "active_workspace",
};

struct ckey {
	const char *name;
	enum ctype type;
	unsigned flags;
	const char *why; /* accepted and ignored, because ...; NULL: honoured or a section */
	const struct ckey *sub;
	size_t nsub;
};

#define SUB(t) t, ARRAY_SIZE(t)

#define W_CLOUD                                                                                    \
	"only a cloud reads it; skiff's infras are local, ssh, podman, docker, k8s and slurm"
#define W_SERVER "skiff has no API server: every command runs where it is typed"
#define W_WORKSPACE "skiff has no workspaces"
#define W_CONTROLLER                                                                               \
	"skiff runs one managed-jobs controller, placed by jobs.controller.resources.infra"
#define W_K8S_SPEC "name the context and namespace in the infra: k8s/CONTEXT/NAMESPACE"
#define W_K8S_PLAIN "skiff starts plain pods with kubectl apply: no autoscaler, queue or service"
#define W_SSH "SkyPilot runs SSH node pools through Kubernetes; skiff reaches the hosts over ssh"
#define W_SLURM "skiff asks for one allocation with salloc as the user who runs it"
#define W_NOT_HERE "nothing in skiff uses it"

static const struct ckey docker_keys[] = {
        {"run_options", T_WORDS, 0, NULL, NULL, 0},
};

static const struct ckey gpu_keys[] = {
        {"disable_ecc", T_ANY, 0, "skiff does not manage GPU drivers", NULL, 0},
};

static const struct ckey k8s_keys[] = {
        {"allowed_contexts", T_ANY, 0, W_K8S_SPEC, NULL, 0},
        {"allowed_nodes", T_ANY, 0, W_K8S_PLAIN, NULL, 0},
        {"apt_mirrors", T_ANY, 0, "skiff installs no packages on a pod", NULL, 0},
        {"auto_mounts", T_ANY, 0, "skiff mounts no volumes of its own", NULL, 0},
        {"autoscaler", T_ANY, 0, W_K8S_PLAIN, NULL, 0},
        {"context_configs", T_ANY, 0, "per-context settings are not read; " W_K8S_SPEC, NULL, 0},
        {"custom_metadata", T_FREEMAP, 0, NULL, NULL, 0},
        {"dws", T_ANY, 0, W_K8S_PLAIN, NULL, 0},
        {"enable_docker", T_ANY, 0, W_NOT_HERE, NULL, 0},
        {"high_availability", T_ANY, 0, W_CONTROLLER, NULL, 0},
        {"kueue", T_ANY, 0, W_K8S_PLAIN, NULL, 0},
        {"max_inline_command_length", T_ANY, 0, "skiff sends commands on stdin", NULL, 0},
        {"namespace", T_ANY, 0, W_K8S_SPEC, NULL, 0},
        {"networking", T_ANY, 0, "skiff reaches pods with kubectl exec", NULL, 0},
        {"pod_config", T_FREEMAP, 0, NULL, NULL, 0},
        {"ports", T_ANY, 0, W_K8S_PLAIN, NULL, 0},
        {"post_provision_runcmd", T_ANY, 0, W_NOT_HERE, NULL, 0},
        {"pricing", T_ANY, 0, "skiff keeps no costs", NULL, 0},
        {"provision_timeout", T_SECONDS, 0, NULL, NULL, 0},
        {"quota", T_ANY, 0, W_K8S_PLAIN, NULL, 0},
        {"rdma", T_ANY, 0, W_NOT_HERE, NULL, 0},
        {"remote_identity", T_ANY, 0, "pods run with the namespace's default service account", NULL,
         0},
        {"set_pod_resource_limits", T_ANY, 0, "set limits in pod_config", NULL, 0},
};

static const struct ckey ssh_keys[] = {
        {"allowed_node_pools", T_ANY, 0, "name the pool in the infra: ssh/POOL", NULL, 0},
        {"context_configs", T_ANY, 0, W_SSH, NULL, 0},
        {"custom_metadata", T_ANY, 0, W_SSH, NULL, 0},
        {"max_inline_command_length", T_ANY, 0, W_SSH, NULL, 0},
        {"pod_config", T_ANY, 0, W_SSH, NULL, 0},
        {"provision_timeout", T_ANY, 0, W_SSH, NULL, 0},
        {"remote_identity", T_ANY, 0, W_SSH, NULL, 0},
};

static const struct ckey quota_keys[] = {
        {"queue", T_OPTION, 0, NULL, NULL, 0},
        {"account", T_OPTION, 0, NULL, NULL, 0},
};

static const struct ckey slurm_keys[] = {
        {"allowed_clusters", T_ANY, 0, "name the partition in the infra: slurm/PARTITION", NULL, 0},
        {"cluster_configs", T_ANY, 0,
         "per-cluster settings are not read; skiff uses the "
         "Slurm cluster that salloc reaches",
         NULL, 0},
        {"container_mounts", T_ANY, 0, "skiff runs Slurm jobs on the nodes, not in containers",
         NULL, 0},
        {"cpu_partition", T_ANY, 0, "name the partition in the infra: slurm/PARTITION", NULL, 0},
        {"gpu_partition_map", T_ANY, 0, "name the partition in the infra: slurm/PARTITION", NULL,
         0},
        {"pricing", T_ANY, 0, "skiff keeps no costs", NULL, 0},
        {"prometheus", T_ANY, 0, W_NOT_HERE, NULL, 0},
        {"provision_timeout", T_ANY, 0, "salloc waits until Slurm grants the allocation", NULL, 0},
        {"quota", T_MAP, 0, NULL, SUB(quota_keys)},
        {"remote_identity", T_ANY, 0, W_SLURM, NULL, 0},
        {"sbatch_options", T_OPTIONS, 0, NULL, NULL, 0},
        {"submit_as_user", T_ANY, 0, W_SLURM, NULL, 0},
        {"username_map", T_ANY, 0, W_SLURM, NULL, 0},
};

static const struct ckey controller_keys[] = {
        {"autostop", T_ANY, 0, W_CONTROLLER, NULL, 0},
        {"consolidation_mode", T_ANY, 0, W_CONTROLLER, NULL, 0},
        {"controller_logs_gc_retention_hours", T_ANY, 0, "skiff keeps the controller's log", NULL,
         0},
        {"high_availability", T_ANY, 0, W_CONTROLLER, NULL, 0},
        {"resources", T_RESOURCES, 0, NULL, NULL, 0},
        {"task_logs_gc_retention_hours", T_HOURS, 0, NULL, NULL, 0},
};

static const struct ckey jobs_keys[] = {
        {"bucket", T_ANY, 0, "skiff syncs files to the nodes directly, with no bucket", NULL, 0},
        {"controller", T_MAP, 0, NULL, SUB(controller_keys)},
        {"force_disable_cloud_bucket", T_ANY, 0, "skiff uses no bucket", NULL, 0},
        {"status_check", T_ANY, 0,
         "the controller's probes are set in its environment "
         "(SKIFF_JOBS_POLL_MS, SKIFF_JOBS_PROBE_FAILURES)",
         NULL, 0},
};

static const struct ckey gcp_keys[] = {
        {"managed_instance_group", T_ANY, 0, W_CLOUD, NULL, 0},
        {"enable_gvnic", T_ANY, 0, W_CLOUD, NULL, 0},
        {"enable_gpu_direct", T_ANY, 0, W_CLOUD, NULL, 0},
        {"placement_policy", T_ANY, 0, W_CLOUD, NULL, 0},
};

static const struct ckey vast_keys[] = {
        {"datacenter_only", T_ANY, 0, W_CLOUD, NULL, 0},
        {"create_instance_kwargs", T_ANY, 0, W_CLOUD, NULL, 0},
};

#define CLOUD(name)                                                                                \
	{                                                                                          \
		name, T_ANY, 0, W_CLOUD, NULL, 0                                                   \
	}

static const struct ckey top_keys[] = {
        {"active_workspace", T_ANY, 0, W_WORKSPACE, NULL, 0},
        {"admin_policy", T_ANY, 0, "skiff has no API server to apply an admin policy", NULL, 0},
        {"allowed_clouds", T_ANY, 0, "skiff runs on no cloud; the infra is chosen per task", NULL,
         0},
        {"api_server", T_ANY, 0, W_SERVER, NULL, 0},
        CLOUD("aws"),
        CLOUD("azure"),
        CLOUD("cudo"),
        {"daemons", T_ANY, 0, W_SERVER, NULL, 0},
        {"dashboard", T_ANY, 0, "skiff has no dashboard", NULL, 0},
        {"data", T_ANY, 0, "skiff mounts no buckets", NULL, 0},
        {"db", T_ANY, 0, "skiff keeps its state in SQLite under $SKIFF_HOME", NULL, 0},
        CLOUD("do"),
        {"docker", T_MAP, 0, NULL, SUB(docker_keys)},
        CLOUD("fluidstack"),
        {"gcp", T_MAP, CK_OPEN, W_CLOUD, SUB(gcp_keys)},
        CLOUD("hyperbolic"),
        CLOUD("ibm"),
        {"jobs", T_MAP, 0, NULL, SUB(jobs_keys)},
        {"kubernetes", T_MAP, 0, NULL, SUB(k8s_keys)},
        CLOUD("lambda"),
        {"logs", T_ANY, 0, "logs stay on the nodes and in ~/sky_logs: no log store", NULL, 0},
        {"metrics", T_ANY, 0, "skiff has no dashboard", NULL, 0},
        CLOUD("nebius"),
        {"nvidia_gpus", T_MAP, 0, NULL, SUB(gpu_keys)},
        CLOUD("oci"),
        CLOUD("paperspace"),
        {"plugins", T_ANY, 0, "skiff has no plugins", NULL, 0},
        CLOUD("primeintellect"),
        {"provision", T_ANY, 0, "skiff provisions no machines (ssh has its own ConnectTimeout)",
         NULL, 0},
        {"rbac", T_ANY, 0, W_SERVER, NULL, 0},
        CLOUD("runpod"),
        CLOUD("scp"),
        CLOUD("seeweb"),
        {"serve", T_ANY, 0, "skiff has no SkyServe", NULL, 0},
        CLOUD("shadeform"),
        {"slurm", T_MAP, 0, NULL, SUB(slurm_keys)},
        {"ssh", T_MAP, 0, NULL, SUB(ssh_keys)},
        {"vast", T_MAP, CK_OPEN, W_CLOUD, SUB(vast_keys)},
        CLOUD("vsphere"),
        {"workspace", T_ANY, 0, W_WORKSPACE, NULL, 0},
        {"workspace_config", T_ANY, 0, W_WORKSPACE, NULL, 0},
        {"workspaces", T_ANY, 0, W_WORKSPACE, NULL, 0},
};

static const struct ckey root_key = {"", T_MAP, 0, NULL, SUB(top_keys)};

/* Resource fields of jobs.controller.resources (a task's resources). */
static const char *const resource_keys[] = {
        "infra",        "cloud",     "region",          "zone",
        "cpus",         "memory",    "accelerators",    "instance_type",
        "use_spot",     "disk_size", "disk_tier",       "network_tier",
        "ports",        "image_id",  "labels",          "accelerator_args",
        "job_recovery", "autostop",  "priority",        "volumes",
        "any_of",       "ordered",   "max_hourly_cost", "_docker_login_config",
};

/* ---- validation ---------------------------------------------------------------------- */

struct cval {
	struct yerrors *errs;
	enum config_where where;
	int failed;
};

static int cerr(struct cval *v, const struct cfg_node *at, const char *fmt, ...) SKIFF_PRINTF(3, 4);

static int cerr(struct cval *v, const struct cfg_node *at, const char *fmt, ...)
{
	va_list ap;

	v->failed = 1;
	va_start(ap, fmt);
	yerr_vadd(v->errs, 0, at->file, at->line, at->col, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *join(char *buf, const char *path, const char *key)
{
	if (*path)
		snprintf(buf, CONFIG_PATH_MAX, "%s.%.60s", path, key);
	else
		snprintf(buf, CONFIG_PATH_MAX, "%.60s", key);
	return buf;
}

static const char *describe(const struct cfg_node *n)
{
	if (n->kind == CFG_MAP)
		return "a mapping";
	if (n->kind == CFG_SEQ)
		return "a list";
	switch (cfg_type(n)) {
	case YS_NULL: return "null";
	case YS_BOOL: return "a boolean";
	case YS_INT: return "an integer";
	case YS_FLOAT: return "a number";
	default: return "a string";
	}
}

static int check_words(struct cval *v, const struct cfg_node *n, const char *path)
{
	char **words = NULL;
	size_t nw = 0, i;
	const char *why = NULL;
	int r = 0;

	if (n->kind == CFG_SCALAR && cfg_type(n) == YS_STR) {
		if (config_split_words(n->value, &words, &nw, &why) < 0)
			r = cerr(v, n, "config %s: %s", path, why);
		config_words_free(words);
		return r;
	}
	if (n->kind != CFG_SEQ)
		return cerr(v, n, "config %s must be a string or a list of strings, not %s", path,
		            describe(n));
	for (i = 0; i < n->n; i++)
		if (check_words(v, n->items[i], path) < 0 || n->items[i]->kind != CFG_SCALAR)
			r = -1;
	return r;
}

static int option_word_ok(const char *s)
{
	const char *c;

	if (!*s || *s == '-')
		return 0;
	for (c = s; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_'))
			return 0;
	return 1;
}

static int check_option_value(struct cval *v, const struct cfg_node *n, const char *path)
{
	if (n->kind != CFG_SCALAR)
		return cerr(v, n, "config %s must be a string, a number or a boolean, not %s", path,
		            describe(n));
	if (strchr(n->value, '\n'))
		return cerr(v, n, "config %s must be one line", path);
	return 0;
}

static int check_options(struct cval *v, const struct cfg_node *n, const char *path)
{
	char sub[CONFIG_PATH_MAX];
	size_t i;
	int r = 0;

	if (n->kind != CFG_MAP)
		return cerr(v, n, "config %s must be a mapping of option names to values, not %s",
		            path, describe(n));
	for (i = 0; i + 1 < n->n; i += 2) {
		const struct cfg_node *k = n->items[i];

		if (k->kind != CFG_SCALAR || !option_word_ok(k->value)) {
			r = cerr(v, k,
			         "config %s: '%.60s' is not an option name (letters, digits, '-', "
			         "'_'; written without the leading '--')",
			         path, k->kind == CFG_SCALAR ? k->value : "?");
			continue;
		}
		if (check_option_value(v, n->items[i + 1], join(sub, path, k->value)) < 0)
			r = -1;
	}
	return r;
}

/* "4", 4, "4+", memory also "16GB": the number, or -1. */
double cfg_amount(const struct cfg_node *n)
{
	char buf[64];
	size_t len;
	double d;

	if (n->kind != CFG_SCALAR || strlen(n->value) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", n->value);
	len = strlen(buf);
	if (len && buf[len - 1] == '+')
		buf[--len] = '\0';
	if (len > 2 && !strcasecmp(buf + len - 2, "GB"))
		buf[len - 2] = '\0';
	if (parse_double(buf, &d) || !(d > 0) || !isfinite(d))
		return -1;
	return d;
}

static int check_resources(struct cval *v, const struct cfg_node *n, const char *path)
{
	char sub[CONFIG_PATH_MAX];
	size_t i;
	int r = 0;

	if (n->kind != CFG_MAP)
		return cerr(v, n, "config %s must be a mapping (a task's resources), not %s", path,
		            describe(n));
	for (i = 0; i + 1 < n->n; i += 2) {
		const struct cfg_node *k = n->items[i], *val = n->items[i + 1];
		size_t j;

		if (k->kind != CFG_SCALAR) {
			r = cerr(v, k, "keys in config %s must be strings, not %s", path,
			         describe(k));
			continue;
		}
		for (j = 0; j < ARRAY_SIZE(resource_keys); j++)
			if (!strcmp(k->value, resource_keys[j]))
				break;
		if (j == ARRAY_SIZE(resource_keys)) {
			const char *best =
			        nearest_word(k->value, resource_keys, ARRAY_SIZE(resource_keys));

			r = cerr(v, k, "unknown config key '%s'%s%s%s", join(sub, path, k->value),
			         best ? "; did you mean '" : "", best ? best : "",
			         best ? "'?" : "");
			continue;
		}
		if ((!strcmp(k->value, "cpus") || !strcmp(k->value, "memory")) &&
		    !cfg_is_null(val) && cfg_amount(val) < 0)
			r = cerr(v, val, "config %s must be a number like 4 or 4+, not '%.40s'",
			         join(sub, path, k->value),
			         val->kind == CFG_SCALAR ? val->value : describe(val));
		if (!strcmp(k->value, "infra") && !cfg_is_null(val)) {
			const char *best;

			/* Placed by it: one it cannot place on is said here, not at a launch. */
			if (val->kind != CFG_SCALAR)
				r = cerr(
				        v, val,
				        "config %s must be an infra like local or ssh/POOL, not %s",
				        join(sub, path, k->value), describe(val));
			else if (!task_infra_known(val->value, &best))
				r = cerr(v, val, "config %s: unknown infra '%.60s'%s%s%s",
				         join(sub, path, k->value), val->value,
				         best ? "; did you mean '" : "", best ? best : "",
				         best ? "'?" : "");
		}
	}
	return r;
}

/* Whether a task's config: may set path: one of task_keys, a section above one, or in one. */
static int task_may_set(const char *path)
{
	size_t i, n = strlen(path);

	for (i = 0; i < ARRAY_SIZE(task_keys); i++) {
		const char *k = task_keys[i];
		size_t kn = strlen(k);

		if ((!strncmp(k, path, n) && (k[n] == '.' || !k[n])) ||
		    (!strncmp(path, k, kn) && path[kn] == '.'))
			return 1;
	}
	return 0;
}

static int check_node(struct cval *v, const struct ckey *key, const struct cfg_node *n,
                      const char *path);

static int check_map(struct cval *v, const struct ckey *key, const struct cfg_node *n,
                     const char *path)
{
	const char *names[64];
	char sub[CONFIG_PATH_MAX];
	size_t i, j;
	int r = 0;

	if (n->kind != CFG_MAP)
		return cerr(v, n, "config%s%s must be a mapping, not %s", *path ? " " : "", path,
		            describe(n));
	for (j = 0; j < key->nsub && j < ARRAY_SIZE(names); j++)
		names[j] = key->sub[j].name;
	for (i = 0; i + 1 < n->n; i += 2) {
		const struct cfg_node *k = n->items[i];
		const char *best;

		if (k->kind != CFG_SCALAR) {
			r = cerr(v, k, "keys in config%s%s must be strings, not %s",
			         *path ? " " : "", path, describe(k));
			continue;
		}
		for (j = 0; j < key->nsub; j++)
			if (!strcmp(k->value, key->sub[j].name))
				break;
		join(sub, path, k->value);
		if (j == key->nsub) {
			if ((key->flags & CK_OPEN) && v->where == CONFIG_IN_FILE)
				continue;
			best = v->errs->n < YAML_MAX_ERRORS
			               ? nearest_word(k->value, names,
			                              j < ARRAY_SIZE(names) ? j : ARRAY_SIZE(names))
			               : NULL;
			if (best)
				r = cerr(v, k, "unknown config key '%s'; did you mean '%s'?", sub,
				         best);
			else
				r = cerr(v, k, "unknown config key '%s'", sub);
			continue;
		}
		if (v->where == CONFIG_IN_TASK && !task_may_set(sub)) {
			r = cerr(
			        v, k,
			        "config key '%s' cannot be set in a task's config: (as in "
			        "SkyPilot: only docker.run_options, kubernetes.pod_config, ... may "
			        "be); set it in the config file or with --config",
			        sub);
			continue;
		}
		if (check_node(v, &key->sub[j], n->items[i + 1], sub) < 0)
			r = -1;
	}
	return r;
}

static int check_node(struct cval *v, const struct ckey *key, const struct cfg_node *n,
                      const char *path)
{
	long secs;
	double hours;

	/* A key left empty is a key not given, as in task files. */
	if (cfg_is_null(n))
		return 0;
	switch (key->type) {
	case T_MAP: return check_map(v, key, n, path);
	case T_FREEMAP:
		if (n->kind != CFG_MAP)
			return cerr(v, n, "config %s must be a mapping, not %s", path, describe(n));
		return 0;
	case T_WORDS: return check_words(v, n, path);
	case T_SECONDS:
		if (n->kind != CFG_SCALAR || cfg_type(n) != YS_INT ||
		    parse_long(n->value, 1, 86400 * 7, &secs))
			return cerr(v, n, "config %s must be seconds, 1..604800, not %.40s", path,
			            n->kind == CFG_SCALAR ? n->value : describe(n));
		return 0;
	case T_HOURS:
		if (n->kind != CFG_SCALAR || (cfg_type(n) != YS_INT && cfg_type(n) != YS_FLOAT) ||
		    parse_double(n->value, &hours) || !isfinite(hours))
			return cerr(v, n, "config %s must be a number of hours, not %.40s", path,
			            n->kind == CFG_SCALAR ? n->value : describe(n));
		return 0;
	case T_OPTIONS: return check_options(v, n, path);
	case T_OPTION:
		if (n->kind != CFG_SCALAR || cfg_type(n) != YS_STR || !*n->value ||
		    strchr(n->value, '\n') || n->value[0] == '-')
			return cerr(v, n, "config %s must be a name (one line, no leading '-')",
			            path);
		return 0;
	case T_RESOURCES: return check_resources(v, n, path);
	default: return 0;
	}
}

int config_validate(const struct cfg_node *root, enum config_where where, struct yerrors *errs)
{
	struct cval v = {errs, where, 0};

	if (!root)
		return 0;
	check_node(&v, &root_key, root, "");
	return v.failed ? -EINVAL : 0;
}

/* ---- ignored keys -------------------------------------------------------------------- */

static int seen_add(char ***seen, const char *path)
{
	size_t n = 0;

	if (!seen)
		return 1;
	for (; *seen && (*seen)[n]; n++)
		if (!strcmp((*seen)[n], path))
			return 0;
	*seen = xrealloc(*seen, (n + 2) * sizeof(**seen));
	(*seen)[n] = xstrdup(path);
	(*seen)[n + 1] = NULL;
	return 1;
}

void config_seen_free(char **seen)
{
	config_words_free(seen);
}

static void warn_at(const struct cfg_node *k, const char *path, const char *why, char ***seen,
                    struct yerrors *errs)
{
	if (seen_add(seen, path))
		yerr_warn(errs, k->file, k->line, k->col, "config key '%s' is ignored: %s", path,
		          why);
}

static void warn_node(const struct ckey *key, const struct cfg_node *n, const char *path,
                      char ***seen, struct yerrors *errs)
{
	char sub[CONFIG_PATH_MAX];
	size_t i, j;

	if (n->kind != CFG_MAP)
		return;
	for (i = 0; i + 1 < n->n; i += 2) {
		const struct cfg_node *k = n->items[i], *val = n->items[i + 1];

		if (k->kind != CFG_SCALAR || cfg_is_null(val))
			continue;
		join(sub, path, k->value);
		if (key->type == T_RESOURCES) {
			if (strcmp(k->value, "cpus") && strcmp(k->value, "memory") &&
			    strcmp(k->value, "infra") && strcmp(k->value, "image_id"))
				warn_at(k, sub,
				        "the managed-jobs controller is placed by infra alone (and "
				        "image_id, for a container or a pod); cpus and memory size "
				        "its limits",
				        seen, errs);
			continue;
		}
		for (j = 0; j < key->nsub; j++)
			if (!strcmp(k->value, key->sub[j].name))
				break;
		if (j == key->nsub)
			continue;
		if (key->sub[j].why)
			warn_at(k, sub, key->sub[j].why, seen, errs);
		else if (key->sub[j].type == T_MAP || key->sub[j].type == T_RESOURCES)
			warn_node(&key->sub[j], val, sub, seen, errs);
	}
}

void config_warn_ignored(const struct cfg_node *root, char ***seen, struct yerrors *errs)
{
	if (root)
		warn_node(&root_key, root, "", seen, errs);
}
