/*
 * Task files: reading, the pipeline shape, the top-level fields, and telling a task from
 * the other YAML files people pass by mistake. Resources, runtime_env, overrides and the
 * JSON form live in lib/task_*.c.
 */
#include "lib/task.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/config.h"
#include "lib/task_internal.h"
#include "lib/util.h"
#include "lib/banned.h"

/* ---- the task's fields ------------------------------------------------------------- */

static const char *const task_keys[] = {
        "name",
        "workdir",
        "num_nodes",
        "resources",
        "envs",
        "secrets",
        "file_mounts",
        "setup",
        "run",
        "config",
        "service",
        "pool",
        "volumes",
        "volume_mounts",
        "event_callback",
        "inputs",
        "outputs",
        "file_mounts_mapping",
        "_metadata",
        "runtime_env",
        "managed_secrets",
        "api_server_access",
};

static int is_task_key(const char *key)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(task_keys); i++)
		if (!strcmp(key, task_keys[i]))
			return 1;
	return 0;
}

static const char *const storage_keys[] = {
        "name", "source", "store",           "persistent",       "mode",          "mount_options",
        "type", "config", "_is_sky_managed", "_bucket_sub_path", "_force_delete",
};

static const char *const storage_modes[] = {"MOUNT", "COPY", "MOUNT_CACHED"};

static int parse_workdir(struct tparse *p, const struct ynode *n, struct task_workdir *w)
{
	static const char *const keys[] = {"url", "ref"};
	const struct ynode *url, *ref;

	if (n->kind == Y_SCALAR) {
		if (tp_str(p, n, "workdir", &w->path))
			return -1;
		w->kind = TASK_WORKDIR_PATH;
		w->line = n->line;
		w->col = n->col;
		return 0;
	}
	if (n->kind != Y_MAP)
		return tp_type_err(p, n, "workdir", "a path or a mapping {url, ref}");
	if (tp_check_keys(p, n, "workdir", keys, ARRAY_SIZE(keys)))
		return -1;
	url = ymap_get(n, "url");
	ref = ymap_get(n, "ref");
	if (!url || ynode_is_null(url))
		return tp_err(p, n, "workdir needs 'url' (a git repository) in its mapping form");
	if (tp_str(p, url, "workdir.url", &w->url) ||
	    (ref && !ynode_is_null(ref) && tp_scalar_text(p, ref, "workdir.ref", &w->ref)))
		return -1;
	if (!*w->url)
		return tp_err(p, url, "workdir.url cannot be empty: it names a git repository");
	w->kind = TASK_WORKDIR_GIT;
	return 0;
}

static int check_storage(struct tparse *p, const struct ynode *n, const char *path)
{
	char sub[TASK_PATH_MAX];
	const struct ynode *v;
	char *tmp = NULL;
	char **list = NULL;
	size_t nlist = 0, i;
	int r, b;

	r = tp_check_keys(p, n, path, storage_keys, ARRAY_SIZE(storage_keys));
	if ((v = ymap_get(n, "name")) && !ynode_is_null(v))
		r |= tp_str(p, v, tp_path(sub, path, "name"), &tmp);
	if ((v = ymap_get(n, "source")) && !ynode_is_null(v))
		r |= tp_strlist(p, v, tp_path(sub, path, "source"), 1, &list, &nlist);
	if ((v = ymap_get(n, "store")) && !ynode_is_null(v))
		r |= tp_str(p, v, tp_path(sub, path, "store"), &tmp);
	if ((v = ymap_get(n, "mount_options")) && !ynode_is_null(v))
		r |= tp_str(p, v, tp_path(sub, path, "mount_options"), &tmp);
	if ((v = ymap_get(n, "persistent")) && !ynode_is_null(v))
		r |= tp_bool(p, v, tp_path(sub, path, "persistent"), &b);
	if ((v = ymap_get(n, "config")) && !ynode_is_null(v))
		r |= tp_mapping(p, v, tp_path(sub, path, "config"));
	if ((v = ymap_get(n, "mode")) && !ynode_is_null(v) &&
	    tp_str(p, v, tp_path(sub, path, "mode"), &tmp))
		r = -1;
	else if (v && !ynode_is_null(v) && !strchr(tmp, '$')) {
		for (i = 0; i < ARRAY_SIZE(storage_modes); i++)
			if (!strcasecmp(tmp, storage_modes[i]))
				break;
		if (i == ARRAY_SIZE(storage_modes))
			r = tp_err(p, v, "%s must be MOUNT, COPY or MOUNT_CACHED, not '%.40s'", sub,
			           tmp);
	}
	free(tmp);
	tp_strv_free(list, nlist);
	return r ? -1 : 0;
}

static int parse_file_mounts(struct tparse *p, const struct ynode *n, struct task *t)
{
	char sub[TASK_PATH_MAX];
	size_t i;
	int r = 0;

	if (n->kind != Y_MAP)
		return tp_type_err(p, n, "file_mounts", "a mapping of remote paths to sources");
	t->mounts = xcalloc(ymap_pairs(n) + 1, sizeof(*t->mounts));
	for (i = 0; i < ymap_pairs(n); i++) {
		const struct ynode *k = ymap_key(n, i), *v = ymap_val(n, i);
		struct task_mount *m = &t->mounts[t->nmounts];
		const char *c;

		if (k->kind != Y_SCALAR || ynode_is_null(k)) {
			r = tp_err(p, k, "remote paths in file_mounts must be strings, not %s",
			           ynode_describe(k));
			continue;
		}
		tp_path(sub, "file_mounts", k->value);
		if (!*k->value) {
			r = tp_err(p, k, "a remote path in file_mounts cannot be empty");
			continue;
		}
		if ((c = str_control(k->value))) {
			r = tp_err(p, k,
			           "remote path in file_mounts has a control character (0x%02x): "
			           "a path on the node is printable text",
			           (unsigned char)*c);
			continue;
		}
		if (v->kind == Y_MAP) {
			if (check_storage(p, v, sub)) {
				r = -1;
				continue;
			}
			m->storage = v;
		} else if (v->kind != Y_SCALAR || yscalar_type(v) != YS_STR) {
			r = tp_type_err(p, v, sub,
			                "a local path, a bucket URL or a storage mapping");
			continue;
		} else {
			m->src = xstrdup(v->value);
		}
		m->dst = xstrdup(k->value);
		m->line = k->line;
		m->col = k->col;
		t->nmounts++;
	}
	return r;
}

static int parse_io(struct tparse *p, const struct ynode *n, const char *path)
{
	double d;

	if (n->kind != Y_MAP || ymap_pairs(n) > 1)
		return tp_type_err(p, n, path, "a mapping of one path to its size in GB");
	if (ymap_pairs(n) && ynode_number(ymap_val(n, 0), &d))
		return tp_type_err(p, ymap_val(n, 0), path, "a number (GB)");
	return 0;
}

/* A task's config: the keys SkyPilot lets a task set (lib/config.h). */
static int check_config(struct tparse *p, const struct ynode *v)
{
	struct yerrors quiet = YERRORS_INIT;
	struct cfg_node *c = cfg_from_ynode(v, p->file);
	int r = config_validate(c, CONFIG_IN_TASK, p->quiet ? &quiet : p->errs);

	cfg_free(c);
	yerr_release(&quiet);
	if (r)
		p->failed = 1;
	return r ? -1 : 0;
}

/* A task's or a pipeline's name: a string of at most TASK_NAME_MAX characters. */
static int parse_name(struct tparse *p, const struct ynode *v, char **out)
{
	size_t n;

	if (tp_str(p, v, "name", out))
		return -1;
	n = strlen(*out);
	if (n > TASK_NAME_MAX)
		return tp_err(p, v, "name '%.40s...' is %zu characters long, more than %d", *out, n,
		              TASK_NAME_MAX);
	return 0;
}

static int parse_field(struct tparse *p, const char *key, const struct ynode *v, struct task *t)
{
	if (!strcmp(key, "name"))
		return parse_name(p, v, &t->name);
	if (!strcmp(key, "workdir"))
		return parse_workdir(p, v, &t->workdir);
	if (!strcmp(key, "num_nodes"))
		return tp_long(p, v, "num_nodes", 1, TASK_MAX_NODES, &t->num_nodes);
	if (!strcmp(key, "resources"))
		return 0; /* after the loop: it needs the task's position */
	if (!strcmp(key, "envs"))
		return tp_kvs(p, v, "envs", 1, 1, 1, &t->envs);
	if (!strcmp(key, "secrets")) {
		if (v->kind == Y_SEQ)
			return tp_err(p, v,
			              "secrets as a list (managed secret references) are not "
			              "supported; use a mapping of names to values");
		return tp_kvs(p, v, "secrets", 1, 1, 1, &t->secrets);
	}
	if (!strcmp(key, "file_mounts"))
		return parse_file_mounts(p, v, t);
	if (!strcmp(key, "setup"))
		return tp_str(p, v, "setup", &t->setup);
	if (!strcmp(key, "run"))
		return tp_str(p, v, "run", &t->run);
	if (!strcmp(key, "event_callback"))
		return tp_str(p, v, "event_callback", &t->event_callback);
	if (!strcmp(key, "runtime_env"))
		return task_parse_runtime_env(p, v, &t->runtime_env);
	if (!strcmp(key, "api_server_access"))
		return tp_bool(p, v, key, &t->api_server_access);
	if (!strcmp(key, "inputs") || !strcmp(key, "outputs")) {
		if (parse_io(p, v, key))
			return -1;
		*(key[0] == 'i' ? &t->inputs : &t->outputs) = v;
		return 0;
	}
	if (!strcmp(key, "volume_mounts") || !strcmp(key, "managed_secrets")) {
		if (v->kind != Y_SEQ)
			return tp_type_err(p, v, key, "a list");
		if (tp_freeform(p, v, key))
			return -1;
		*(key[0] == 'v' ? &t->volume_mounts : &t->managed_secrets) = v;
		return 0;
	}
	/* The rest are mappings kept as written. */
	if (tp_mapping(p, v, key))
		return -1;
	if (!strcmp(key, "config")) {
		if (check_config(p, v))
			return -1;
		t->config = v;
	} else if (!strcmp(key, "service"))
		t->service = v;
	else if (!strcmp(key, "pool"))
		t->pool = v;
	else if (!strcmp(key, "volumes"))
		t->volumes = v;
	else if (!strcmp(key, "file_mounts_mapping"))
		t->file_mounts_mapping = v;
	else if (!strcmp(key, "_metadata"))
		t->metadata = v;
	return 0;
}

static void task_free(struct task *t)
{
	size_t i;

	if (!t)
		return;
	free(t->name);
	free(t->workdir.path);
	free(t->workdir.url);
	free(t->workdir.ref);
	for (i = 0; i < t->nres; i++)
		task_resources_release(&t->res[i]);
	free(t->res);
	task_kvs_release(&t->envs);
	task_kvs_release(&t->secrets);
	for (i = 0; i < t->nmounts; i++) {
		free(t->mounts[i].dst);
		free(t->mounts[i].src);
	}
	free(t->mounts);
	free(t->setup);
	free(t->run);
	free(t->event_callback);
	task_runtime_env_release(&t->runtime_env);
	free(t);
}

static struct task *task_new(int line, int col)
{
	struct task *t = xcalloc(1, sizeof(*t));

	t->line = line;
	t->col = col;
	t->num_nodes = 1;
	t->api_server_access = -1;
	t->runtime_env.setup_timeout_seconds = TASK_SETUP_TIMEOUT_DEFAULT;
	t->runtime_env.eager_install = 1;
	t->runtime_env.pip.check = -1;
	t->runtime_env.uv.check = -1;
	return t;
}

static struct task *parse_task(struct tparse *p, const struct ynode *doc)
{
	struct task *t = task_new(doc->line, doc->col);
	size_t i;
	int r;

	r = tp_check_keys(p, doc, NULL, task_keys, ARRAY_SIZE(task_keys));
	for (i = 0; i < ymap_pairs(doc); i++) {
		const struct ynode *k = ymap_key(doc, i), *v = ymap_val(doc, i);

		/* A field left empty (all its lines commented out) is a field not given. */
		if (k->kind != Y_SCALAR || ynode_is_null(v) || !is_task_key(k->value))
			continue;
		if (parse_field(p, k->value, v, t))
			r = -1;
	}
	if (task_parse_resources(p, ymap_get(doc, "resources"), t))
		r = -1;
	if (r || p->failed) {
		task_free(t);
		return NULL;
	}
	return t;
}

/* ---- files that are not tasks ------------------------------------------------------ */

static const char *const sky_config_keys[] = {
        "admin_policy", "allowed_clouds",
        "api_server",   "active_workspace",
        "aws",          "azure",
        "cudo",         "daemons",
        "db",           "docker",
        "do",           "fluidstack",
        "gcp",          "hyperbolic",
        "ibm",          "jobs",
        "kubernetes",   "lambda",
        "logs",         "nebius",
        "nvidia_gpus",  "oci",
        "paperspace",   "primeintellect",
        "provision",    "rbac",
        "runpod",       "scp",
        "seeweb",       "serve",
        "shadeform",    "slurm",
        "ssh",          "vast",
        "vsphere",      "workspaces",
};

static int has(const struct ynode *m, const char *key)
{
	return ymap_get(m, key) != NULL;
}

static int only_name_or_volumes(const struct ynode *m)
{
	size_t i;

	for (i = 0; i < ymap_pairs(m); i++) {
		const struct ynode *k = ymap_key(m, i);

		if (k->kind != Y_SCALAR ||
		    (strcmp(k->value, "name") && strcmp(k->value, "volumes")))
			return 0;
	}
	return 1;
}

static int is_ssh_pool_file(const struct ynode *m)
{
	size_t i;
	int hosts = 0;

	for (i = 0; i < ymap_pairs(m); i++) {
		if (ymap_val(m, i)->kind != Y_MAP)
			return 0;
		hosts |= has(ymap_val(m, i), "hosts");
	}
	return hosts;
}

/* A misspelt task key? Looser than a did-you-mean: "rnu" is near "run". */
static int near_task_key(const char *s)
{
	size_t i, len = strlen(s);
	int limit = len / 3 > 2 ? (int)(len / 3) : 2;

	for (i = 0; i < ARRAY_SIZE(task_keys); i++)
		if (edit_distance(s, task_keys[i]) <= limit)
			return 1;
	return 0;
}

/*
 * What a mapping that is not a task looks like, or NULL when it may well be a task
 * (then the normal checks explain what is wrong with it). `buf` holds the description.
 */
static const char *foreign_kind(const struct ynode *m, char *buf, size_t size)
{
	size_t i, k, ntask = 0, nhint = 0;

	if (has(m, "apiVersion") && has(m, "kind"))
		return "a Kubernetes manifest (apiVersion/kind)";
	if (ymap_get(m, "runs") && has(ymap_get(m, "runs"), "using"))
		return "a GitHub Actions action (action.yml: runs.using)";
	for (i = 0; i < ymap_pairs(m); i++) {
		const struct ynode *key = ymap_key(m, i);

		if (key->kind != Y_SCALAR)
			continue;
		for (k = 0; k < ARRAY_SIZE(task_keys); k++)
			if (!strcmp(key->value, task_keys[k]))
				break;
		/* `name` and `volumes` are top-level keys of other files too. */
		if (k < ARRAY_SIZE(task_keys) && strcmp(key->value, "name") &&
		    strcmp(key->value, "volumes"))
			ntask++;
		else if (k == ARRAY_SIZE(task_keys) && i < 64 && !nhint &&
		         near_task_key(key->value))
			nhint++;
	}
	if (ntask || only_name_or_volumes(m))
		return NULL;
	if (has(m, "services"))
		return "a docker-compose file (services:)";
	if (has(m, "on") && has(m, "jobs"))
		return "a GitHub Actions workflow (on:/jobs:)";
	if (has(m, "plugins"))
		return "a SkyPilot plugins file (plugins:)";
	for (i = 0; i < ymap_pairs(m); i++) {
		const struct ynode *key = ymap_key(m, i);

		for (k = 0; key->kind == Y_SCALAR && k < ARRAY_SIZE(sky_config_keys); k++) {
			if (strcmp(key->value, sky_config_keys[k]))
				continue;
			snprintf(buf, size,
			         "a SkyPilot config file (~/.sky/config.yaml: it has '%s')",
			         sky_config_keys[k]);
			return buf;
		}
	}
	if (has(m, "build") && has(m, "predict"))
		return "a Cog config (cog.yaml: build/predict)";
	if (has(m, "compute_environment") || has(m, "distributed_type"))
		return "a Hugging Face Accelerate config (compute_environment/distributed_type)";
	if (has(m, "index") && has(m, "fields"))
		return "a RedisVL index schema (index/fields)";
	if (ymap_pairs(m) && is_ssh_pool_file(m))
		return "an SSH node pool file (~/.sky/ssh_node_pools.yaml: POOL: {hosts: [...]})";
	if (nhint || !ymap_pairs(m))
		return NULL;
	snprintf(buf, size,
	         "some other kind of YAML file (no top-level key, such as '%.40s', is "
	         "a task field)",
	         ymap_key(m, 0)->kind == Y_SCALAR ? ymap_key(m, 0)->value : "?");
	return buf;
}

static int check_document(struct tparse *p, const struct ynode *root)
{
	char buf[200];
	const char *what = NULL;

	if (root->kind == Y_SEQ) {
		const struct ynode *first = root->n ? root->items[0] : NULL;

		if (first && first->kind == Y_MAP && has(first, "hosts") &&
		    (has(first, "tasks") || has(first, "roles")))
			what = "an Ansible playbook (a list of plays)";
		else
			what = "a YAML list";
	} else if (root->kind == Y_SCALAR) {
		what = "plain text (one YAML scalar)";
	} else {
		what = foreign_kind(root, buf, sizeof(buf));
	}
	if (!what)
		return 0;
	return tp_err(p, root, "this looks like %s, not a skiff task", what);
}

/* ---- job groups -------------------------------------------------------------------- */

static const char *const group_keys[] = {"name", "execution", "primary_tasks", "termination_delay"};

int task_delay_parse(const char *s, long *secs)
{
	char num[32];
	size_t n = strlen(s);
	long v, mult = 1;

	if (!n || n >= sizeof(num))
		return -1;
	memcpy(num, s, n + 1);
	switch (num[n - 1] | 0x20) {
	case 's': mult = 1; break;
	case 'm': mult = 60; break;
	case 'h': mult = 3600; break;
	default:
		if (num[n - 1] < '0' || num[n - 1] > '9')
			return -1;
		n++; /* no unit: seconds */
	}
	num[n - 1] = '\0';
	if (parse_long(num, 0, TASK_GROUP_DELAY_MAX_S, &v) || v * mult > TASK_GROUP_DELAY_MAX_S)
		return -1;
	*secs = v * mult;
	return 0;
}

static int parse_delay(struct tparse *p, const struct ynode *v, const char *path, long *out)
{
	if (v->kind != Y_SCALAR || ynode_is_null(v))
		return tp_type_err(p, v, path, "a duration such as 30s, 5m or 1h");
	if (task_delay_parse(v->value, out))
		return tp_err(p, v,
		              "%s must be a duration such as 30s, 5m or 1h (at most %ld s), "
		              "not '%.40s'",
		              path, TASK_GROUP_DELAY_MAX_S, v->value);
	return 0;
}

/* The task of l named name, or NULL. */
static struct task *task_named(const struct task_list *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->tasks[i]->name && !strcmp(l->tasks[i]->name, name))
			return l->tasks[i];
	return NULL;
}

/*
 * The header's name and execution (before the tasks are parsed): 1 for a group, 0 for a
 * serial pipeline (out->name set), -1 on an error.
 */
static int parse_group_header(struct tparse *p, const struct ynode *h, struct task_list *out)
{
	const struct ynode *name = ymap_get(h, "name"), *e = ymap_get(h, "execution");
	int r = tp_check_keys(p, h, NULL, group_keys, ARRAY_SIZE(group_keys));

	if (!name || ynode_is_null(name))
		r = tp_err(p, h, "a job group's header needs its 'name'");
	else if (parse_name(p, name, &out->name))
		r = -1;
	if (e->kind != Y_SCALAR || ynode_is_null(e) ||
	    (strcmp(e->value, "parallel") && strcmp(e->value, "serial")))
		return tp_type_err(p, e, "execution", "parallel (a job group) or serial");
	if (r)
		return -1;
	if (!strcmp(e->value, "parallel"))
		return 1;
	/* serial: the pipeline, which has no primary or auxiliary tasks. */
	if ((name = ymap_get(h, "primary_tasks")) || (name = ymap_get(h, "termination_delay")))
		return tp_err(p, name,
		              "a pipeline (execution: serial) runs its tasks one after "
		              "the other: only a job group (execution: parallel) has this");
	return 0;
}

/* The header's primary_tasks and termination_delay, and the tasks' names, once parsed. */
static int parse_group_tasks(struct tparse *p, const struct ynode *h, const struct ynode **roots,
                             struct task_list *out)
{
	const struct ynode *v;
	size_t i, k;
	long def = 0;
	int r = 0;

	for (i = 0; i < out->n; i++) {
		const struct ynode *nm = ymap_get(roots[i], "name");

		out->tasks[i]->primary = 1;
		if (!out->tasks[i]->name)
			r = tp_err(p, roots[i], "every task of a job group needs a 'name'");
		for (k = 0; out->tasks[i]->name && k < i; k++)
			if (out->tasks[k]->name &&
			    !strcmp(out->tasks[k]->name, out->tasks[i]->name)) {
				r = tp_err(p, nm,
				           "task name '%s' is used twice in job group '%s' "
				           "(first at line %d)",
				           out->tasks[i]->name, out->name, out->tasks[k]->line);
				break;
			}
	}
	if (r)
		return r;
	if ((v = ymap_get(h, "primary_tasks")) && !ynode_is_null(v)) {
		if (v->kind != Y_SEQ || !v->n)
			return tp_type_err(p, v, "primary_tasks", "a non-empty list of task names");
		for (i = 0; i < out->n; i++)
			out->tasks[i]->primary = 0;
		for (k = 0; k < v->n; k++) {
			const struct ynode *it = v->items[k];
			struct task *t;

			if (it->kind != Y_SCALAR || ynode_is_null(it)) {
				r = tp_type_err(p, it, "primary_tasks[]", "a task name");
				continue;
			}
			if (!(t = task_named(out, it->value))) {
				r = tp_err(p, it,
				           "primary_tasks names '%.40s', which is no task of "
				           "job group '%s'",
				           it->value, out->name);
				continue;
			}
			t->primary = 1;
		}
	}
	if (!(v = ymap_get(h, "termination_delay")) || ynode_is_null(v))
		return r;
	if (v->kind == Y_SCALAR) {
		if (parse_delay(p, v, "termination_delay", &def))
			return -1;
		for (i = 0; i < out->n; i++)
			out->tasks[i]->termination_delay_s = def;
		return r;
	}
	if (v->kind != Y_MAP)
		return tp_type_err(p, v, "termination_delay",
		                   "a duration, or a mapping of task names (and 'default') to "
		                   "durations");
	/* default first: a task's own delay wins whatever the order. */
	if (ymap_get(v, "default") &&
	    parse_delay(p, ymap_get(v, "default"), "termination_delay.default", &def))
		r = -1;
	for (i = 0; i < out->n; i++)
		out->tasks[i]->termination_delay_s = def;
	for (k = 0; k < ymap_pairs(v); k++) {
		const struct ynode *key = ymap_key(v, k);
		char sub[TASK_PATH_MAX];
		struct task *t;

		if (key->kind != Y_SCALAR || ynode_is_null(key)) {
			r = tp_err(p, key, "termination_delay's keys must be task names");
			continue;
		}
		if (!strcmp(key->value, "default"))
			continue;
		if (!(t = task_named(out, key->value))) {
			r = tp_err(p, key,
			           "termination_delay names '%.40s', which is no task of "
			           "job group '%s'",
			           key->value, out->name);
			continue;
		}
		if (parse_delay(p, ymap_val(v, k), tp_path(sub, "termination_delay", key->value),
		                &t->termination_delay_s))
			r = -1;
	}
	return r;
}

/* ---- pipelines --------------------------------------------------------------------- */

static void list_add(struct task_list *l, struct task *t)
{
	l->tasks = xrealloc(l->tasks, (l->n + 1) * sizeof(*l->tasks));
	l->tasks[l->n++] = t;
}

void task_list_release(struct task_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		task_free(l->tasks[i]);
	free(l->tasks);
	free(l->name);
	free(l->file);
	yaml_stream_release(&l->yaml);
	memset(l, 0, sizeof(*l));
}

int task_list_keep(struct task_list *l, size_t i)
{
	size_t k;

	if (i >= l->n)
		return -EINVAL;
	for (k = 0; k < l->n; k++)
		if (k != i)
			task_free(l->tasks[k]);
	l->tasks[0] = l->tasks[i];
	l->n = 1;
	return 0;
}

static int only_name(const struct ynode *root)
{
	return root->kind == Y_MAP && ymap_pairs(root) == 1 &&
	       ymap_key(root, 0)->kind == Y_SCALAR && !strcmp(ymap_key(root, 0)->value, "name");
}

int task_parse_buf(struct task_list *out, const char *name, const char *data, size_t len,
                   struct yerrors *errs)
{
	struct tparse p = {name, errs, 0, 0};
	const struct ynode *roots[YAML_MAX_DOCS];
	size_t nroots = 0, i, first = 0;
	int group = 0;

	memset(out, 0, sizeof(*out));
	if (!name)
		name = p.file = "-";
	out->file = xstrdup(name);
	if (yaml_load(&out->yaml, name, data, len, errs))
		goto fail;
	for (i = 0; i < out->yaml.ndocs; i++)
		if (!ynode_is_null(out->yaml.docs[i].root))
			roots[nroots++] = out->yaml.docs[i].root;
	if (!nroots) {
		tp_err(&p, NULL, "empty file: expected a task (a YAML mapping)");
		goto fail;
	}
	/* SkyPilot's JobGroup header: name, execution (parallel or serial), then the tasks. */
	if (roots[0]->kind == Y_MAP && ymap_get(roots[0], "execution")) {
		group = parse_group_header(&p, roots[0], out);
		if (group < 0)
			goto fail;
		first = 1;
	}
	for (i = first; i < nroots; i++)
		check_document(&p, roots[i]);
	if (p.failed)
		goto fail;
	/* SkyPilot's pipeline form: a first document holding only the pipeline's name. */
	if (!first && nroots > 1 && only_name(roots[0])) {
		if (parse_name(&p, ymap_val(roots[0], 0), &out->name))
			goto fail;
		first = 1;
	}
	for (i = first; i < nroots; i++) {
		struct task *t = parse_task(&p, roots[i]);

		if (t)
			list_add(out, t);
	}
	if (p.failed)
		goto fail;
	if (first && !out->n) {
		tp_err(&p, roots[0],
		       "%s '%s' has no tasks: its header is followed by one YAML "
		       "document per task",
		       group > 0 ? "job group" : "pipeline", out->name);
		goto fail;
	}
	if (group > 0) {
		out->parallel = 1;
		if (parse_group_tasks(&p, roots[0], roots + first, out) || p.failed)
			goto fail;
	}
	if (!out->name && out->n == 1 && out->tasks[0]->name)
		out->name = xstrdup(out->tasks[0]->name);
	return 0;
fail:
	task_list_release(out);
	return -EINVAL;
}

int task_parse_file(struct task_list *out, const char *path, struct yerrors *errs)
{
	struct buf b = BUF_INIT(YAML_MAX_INPUT);
	struct stat st;
	int fd, r;

	memset(out, 0, sizeof(*out));
	/* O_NONBLOCK: a FIFO is refused below, not waited on; stdin is given as "-". */
	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) : 0;
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
	if (S_ISDIR(st.st_mode)) {
		r = -EINVAL;
		yerr_add(errs, path, 1, 1, "is a directory, not a task file");
		goto out;
	}
	if (fd > 0 && !S_ISREG(st.st_mode)) {
		r = -EINVAL;
		yerr_add(errs, path, 1, 1,
		         "is not a regular file (a FIFO, a socket or a device); give a task file, "
		         "or '-' to read standard input");
		goto out;
	}
	if (fd > 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		r = -errno;
		yerr_add(errs, path, 1, 1, "cannot read: %s", strerror(errno));
		goto out;
	}
	if (S_ISREG(st.st_mode) && (size_t)st.st_size > YAML_MAX_INPUT) {
		r = -EINVAL;
		yerr_add(errs, path, 1, 1,
		         "file is %lld bytes, over the limit of %zu bytes for a task file",
		         (long long)st.st_size, YAML_MAX_INPUT);
		goto out;
	}
	r = buf_read_fd(&b, fd);
	if (r == -ENOBUFS) {
		r = -EINVAL;
		yerr_add(errs, path, 1, 1, "more than %zu bytes: over the limit for a task file",
		         YAML_MAX_INPUT);
		goto out;
	}
	if (r) {
		yerr_add(errs, path, 1, 1, "cannot read: %s", strerror(-r));
		goto out;
	}
	r = task_parse_buf(out, path, b.p, b.len, errs);
out:
	if (fd > 0)
		close(fd);
	buf_release(&b);
	return r;
}

static struct task *task_bare(struct task_list *out, const char *file)
{
	struct task *t = task_new(0, 0);

	memset(out, 0, sizeof(*out));
	out->file = xstrdup(file);
	t->res = xcalloc(1, sizeof(*t->res));
	t->nres = 1;
	list_add(out, t);
	return t;
}

void task_from_command(struct task_list *out, const char *cmd)
{
	task_bare(out, "<command>")->run = xstrdup(cmd);
}

void task_empty(struct task_list *out)
{
	task_bare(out, "<none>");
}

int task_entrypoint_is_yaml(const char *entrypoint)
{
	size_t n = strlen(entrypoint);

	return (n > 5 && !strcasecmp(entrypoint + n - 5, ".yaml")) ||
	       (n > 4 && !strcasecmp(entrypoint + n - 4, ".yml"));
}
