/*
 * The normalized task as JSON: every field present, with one type per field (null when
 * not set), resources as a flat list of complete alternatives, secrets redacted.
 * docs/task-yaml.md shows the shape.
 */
#include "lib/task.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "lib/util.h"
#include "lib/banned.h"

#define REDACTED "<redacted>"

static void key_str(struct json *j, const char *key, const char *value)
{
	json_key(j, key);
	json_str(j, value);
}

static void key_int(struct json *j, const char *key, int set, long value)
{
	json_key(j, key);
	if (set)
		json_int(j, value);
	else
		json_null(j);
}

static void key_bool(struct json *j, const char *key, int value)
{
	json_key(j, key);
	if (value < 0)
		json_null(j);
	else
		json_bool(j, value);
}

static void key_node(struct json *j, const char *key, const struct ynode *n)
{
	json_key(j, key);
	task_json_node(n, j);
}

static void kvs_obj(struct json *j, const struct task_kvs *kvs, int redact)
{
	size_t i;

	json_obj_begin(j);
	for (i = 0; i < kvs->n; i++) {
		json_key(j, kvs->v[i].key);
		if (!kvs->v[i].value)
			json_null(j);
		else
			json_str(j, redact ? REDACTED : kvs->v[i].value);
	}
	json_obj_end(j);
}

static void strv_arr(struct json *j, char **v, size_t n)
{
	size_t i;

	json_arr_begin(j);
	for (i = 0; i < n; i++)
		json_str(j, v[i]);
	json_arr_end(j);
}

static void scalar(const struct ynode *n, struct json *j)
{
	double d;
	long l;
	int b;

	switch (yscalar_type(n)) {
	case YS_NULL: json_null(j); return;
	case YS_BOOL:
		ynode_bool(n, &b);
		json_bool(j, b);
		return;
	case YS_INT:
		if (!ynode_long(n, -(1L << 53), 1L << 53, &l)) {
			json_int(j, l);
			return;
		}
		break;
	case YS_FLOAT:
		if (!ynode_number(n, &d) && isfinite(d)) {
			json_double(j, d);
			return;
		}
		break;
	default: break;
	}
	json_strn(j, n->value, n->len);
}

void task_json_node(const struct ynode *n, struct json *j)
{
	size_t i;

	if (!n) {
		json_null(j);
		return;
	}
	if (n->kind == Y_SCALAR) {
		scalar(n, j);
		return;
	}
	/* The YAML may nest as deep as JSON allows: cut what would not fit. */
	if (j->depth + 1 >= JSON_MAX_DEPTH) {
		json_str(j, "<nested too deep>");
		return;
	}
	if (n->kind == Y_SEQ) {
		json_arr_begin(j);
		for (i = 0; i < n->n; i++)
			task_json_node(n->items[i], j);
		json_arr_end(j);
		return;
	}
	json_obj_begin(j);
	for (i = 0; i < ymap_pairs(n); i++) {
		json_key(j, ymap_key(n, i)->kind == Y_SCALAR ? ymap_key(n, i)->value : "?");
		task_json_node(ymap_val(n, i), j);
	}
	json_obj_end(j);
}

static void amount(struct json *j, const char *key, const struct task_amount *a)
{
	json_key(j, key);
	json_str(j, a->text);
}

static void resources(struct json *j, const struct task_resources *r)
{
	size_t i;

	json_obj_begin(j);
	key_str(j, "infra", r->infra);
	key_str(j, "cloud", r->cloud);
	key_str(j, "region", r->region);
	key_str(j, "zone", r->zone);
	amount(j, "cpus", &r->cpus);
	amount(j, "memory", &r->memory);
	json_key(j, "accelerators");
	if (r->accel.name) {
		json_obj_begin(j);
		key_str(j, "name", r->accel.name);
		json_key(j, "count");
		if (r->accel.count == floor(r->accel.count) && r->accel.count < 1e15)
			json_int(j, (int64_t)r->accel.count);
		else
			json_double(j, r->accel.count);
		json_obj_end(j);
	} else {
		json_null(j);
	}
	key_str(j, "instance_type", r->instance_type);
	key_bool(j, "use_spot", (r->set & TR_USE_SPOT) ? r->use_spot : -1);
	key_int(j, "disk_size", r->disk_size > 0, r->disk_size);
	key_str(j, "disk_tier", r->disk_tier);
	key_str(j, "network_tier", r->network_tier);
	json_key(j, "ports");
	if (r->set & TR_PORTS) {
		json_arr_begin(j);
		for (i = 0; i < r->nports; i++) {
			char port[32];

			if (r->ports[i].lo == r->ports[i].hi)
				xsnprintf(port, sizeof(port), "%d", r->ports[i].lo);
			else
				xsnprintf(port, sizeof(port), "%d-%d", r->ports[i].lo,
				          r->ports[i].hi);
			json_str(j, port);
		}
		json_arr_end(j);
	} else {
		json_null(j);
	}
	json_key(j, "image_id");
	if (r->image_id) {
		json_str(j, r->image_id);
	} else if (r->set & TR_IMAGE_ID) {
		kvs_obj(j, &r->image_by_region, 0);
	} else {
		json_null(j);
	}
	json_key(j, "labels");
	if (r->set & TR_LABELS)
		kvs_obj(j, &r->labels, 0);
	else
		json_null(j);
	key_node(j, "accelerator_args", r->accelerator_args);
	json_key(j, "job_recovery");
	if (r->job_recovery.set) {
		json_obj_begin(j);
		key_str(j, "strategy", r->job_recovery.strategy);
		key_int(j, "max_restarts_on_errors", 1, r->job_recovery.max_restarts_on_errors);
		json_key(j, "recover_on_exit_codes");
		json_arr_begin(j);
		for (i = 0; i < r->job_recovery.nexit_codes; i++)
			json_int(j, r->job_recovery.exit_codes[i]);
		json_arr_end(j);
		json_obj_end(j);
	} else {
		json_null(j);
	}
	json_key(j, "autostop");
	if (r->autostop.set) {
		json_obj_begin(j);
		key_bool(j, "enabled", r->autostop.enabled);
		key_int(j, "idle_minutes", 1, r->autostop.idle_minutes);
		key_bool(j, "down", r->autostop.down);
		key_str(j, "wait_for", r->autostop.wait_for);
		key_str(j, "hook", r->autostop.hook);
		key_int(j, "hook_timeout", r->autostop.hook_timeout > 0, r->autostop.hook_timeout);
		json_obj_end(j);
	} else {
		json_null(j);
	}
	key_int(j, "priority", !!(r->set & TR_PRIORITY), r->priority);
	key_node(j, "volumes", r->volumes);
	for (i = 0; i < r->nextra; i++)
		key_node(j, r->extra[i].key, r->extra[i].value);
	json_obj_end(j);
}

static void pkgs(struct json *j, const char *key, const struct task_pkgs *k, int uv)
{
	json_key(j, key);
	if (!k->set) {
		json_null(j);
		return;
	}
	json_obj_begin(j);
	json_key(j, "packages");
	strv_arr(j, k->packages, k->npackages);
	key_str(j, "requirements", k->requirements);
	key_bool(j, "check", k->check);
	key_str(j, "version", k->version);
	if (uv) {
		json_key(j, "install_options");
		strv_arr(j, k->install_options, k->ninstall_options);
	}
	json_obj_end(j);
}

static void runtime_env(struct json *j, const struct task_runtime_env *rt)
{
	json_key(j, "runtime_env");
	if (!rt->set) {
		json_null(j);
		return;
	}
	json_obj_begin(j);
	key_str(j, "python", rt->python);
	pkgs(j, "pip", &rt->pip, 0);
	pkgs(j, "uv", &rt->uv, 1);
	key_str(j, "working_dir", rt->working_dir);
	json_key(j, "py_modules");
	strv_arr(j, rt->py_modules, rt->npy_modules);
	json_key(j, "env_vars");
	kvs_obj(j, &rt->env_vars, 0);
	json_key(j, "config");
	json_obj_begin(j);
	key_int(j, "setup_timeout_seconds", 1, rt->setup_timeout_seconds);
	key_bool(j, "eager_install", rt->eager_install);
	json_obj_end(j);
	json_obj_end(j);
}

void task_json(const struct task *t, struct json *j)
{
	size_t i;

	json_obj_begin(j);
	key_str(j, "name", t->name);
	json_key(j, "workdir");
	if (t->workdir.kind == TASK_WORKDIR_PATH) {
		json_obj_begin(j);
		key_str(j, "path", t->workdir.path);
		json_obj_end(j);
	} else if (t->workdir.kind == TASK_WORKDIR_GIT) {
		json_obj_begin(j);
		key_str(j, "url", t->workdir.url);
		key_str(j, "ref", t->workdir.ref);
		json_obj_end(j);
	} else {
		json_null(j);
	}
	key_int(j, "num_nodes", 1, t->num_nodes);
	key_str(j, "resources_order", t->res_ordered ? "ordered" : "any_of");
	json_key(j, "resources");
	json_arr_begin(j);
	for (i = 0; i < t->nres; i++)
		resources(j, &t->res[i]);
	json_arr_end(j);
	json_key(j, "envs");
	kvs_obj(j, &t->envs, 0);
	json_key(j, "secrets");
	kvs_obj(j, &t->secrets, 1);
	json_key(j, "file_mounts");
	json_obj_begin(j);
	for (i = 0; i < t->nmounts; i++) {
		json_key(j, t->mounts[i].dst);
		if (t->mounts[i].src)
			json_str(j, t->mounts[i].src);
		else
			task_json_node(t->mounts[i].storage, j);
	}
	json_obj_end(j);
	key_str(j, "setup", t->setup);
	key_str(j, "run", t->run);
	runtime_env(j, &t->runtime_env);
	key_str(j, "event_callback", t->event_callback);
	key_node(j, "config", t->config);
	key_node(j, "service", t->service);
	key_node(j, "pool", t->pool);
	key_node(j, "volumes", t->volumes);
	key_node(j, "volume_mounts", t->volume_mounts);
	key_node(j, "inputs", t->inputs);
	key_node(j, "outputs", t->outputs);
	key_node(j, "file_mounts_mapping", t->file_mounts_mapping);
	key_node(j, "_metadata", t->metadata);
	key_node(j, "managed_secrets", t->managed_secrets);
	key_bool(j, "api_server_access", t->api_server_access);
	json_obj_end(j);
}

void task_list_json(const struct task_list *l, struct json *j)
{
	size_t i;

	key_str(j, "name", l->name);
	if (l->parallel) {
		/* A job group's header: its primary tasks, and each auxiliary one's delay. */
		json_key(j, "execution");
		json_str(j, "parallel");
		json_key(j, "primary_tasks");
		json_arr_begin(j);
		for (i = 0; i < l->n; i++)
			if (l->tasks[i]->primary)
				json_str(j, l->tasks[i]->name);
		json_arr_end(j);
		json_key(j, "termination_delay_s");
		json_obj_begin(j);
		for (i = 0; i < l->n; i++) {
			json_key(j, l->tasks[i]->name);
			json_int(j, l->tasks[i]->termination_delay_s);
		}
		json_obj_end(j);
	}
	json_key(j, "tasks");
	json_arr_begin(j);
	for (i = 0; i < l->n; i++)
		task_json(l->tasks[i], j);
	json_arr_end(j);
}
