/*
 * runtime_env: Ray's schema for a job's Python environment (pip or uv packages,
 * working_dir, py_modules, env_vars, config), plus skiff's `python` to choose the
 * interpreter. See notes on Ray's runtime_env for the meaning of each field.
 */
#include "lib/task.h"

#include <stdlib.h>
#include <string.h>

#include "lib/task_internal.h"
#include "lib/util.h"
#include "lib/banned.h"

static const char *const rt_keys[] = {
        "pip",   "uv",        "working_dir", "py_modules", "env_vars",  "config", "python",
        "conda", "container", "image_uri",   "excludes",   "java_jars", "nsight", "mpi"};
/* rt_keys[FIRST_UNSUPPORTED..] are Ray's, but skiff does not build them. */
#define FIRST_UNSUPPORTED 7

static void pkgs_release(struct task_pkgs *k)
{
	tp_strv_free(k->packages, k->npackages);
	free(k->requirements);
	free(k->version);
	tp_strv_free(k->install_options, k->ninstall_options);
	memset(k, 0, sizeof(*k));
	k->check = -1;
}

void task_runtime_env_release(struct task_runtime_env *rt)
{
	pkgs_release(&rt->pip);
	pkgs_release(&rt->uv);
	free(rt->working_dir);
	tp_strv_free(rt->py_modules, rt->npy_modules);
	task_kvs_release(&rt->env_vars);
	free(rt->python);
	rt->working_dir = rt->python = NULL;
	rt->py_modules = NULL;
	rt->npy_modules = 0;
}

/*
 * pip: [pkgs] | "requirements.txt" | {packages: [pkgs] | "file", pip_check, pip_version}
 * uv:  [pkgs] | "requirements.txt" | {packages, uv_check, uv_version, uv_pip_install_options}
 */
static int parse_pkgs(struct tparse *p, const struct ynode *n, const char *name,
                      struct task_pkgs *k)
{
	static const char *const pip_keys[] = {"packages", "pip_check", "pip_version"};
	static const char *const uv_keys[] = {"packages", "uv_check", "uv_version",
	                                      "uv_pip_install_options"};
	int uv = !strcmp(name, "uv");
	char path[TASK_PATH_MAX], sub[TASK_PATH_MAX];
	const struct ynode *v;
	int r = 0;

	tp_path(path, "runtime_env", name);
	k->set = 1;
	if (n->kind == Y_SCALAR) {
		k->req_line = n->line;
		k->req_col = n->col;
		return tp_str(p, n, path, &k->requirements);
	}
	if (n->kind == Y_SEQ)
		return tp_strlist(p, n, path, 0, &k->packages, &k->npackages);
	if (n->kind != Y_MAP)
		return tp_type_err(p, n, path,
		                   "a list of packages, a requirements file or a mapping");
	if (uv)
		r = tp_check_keys(p, n, path, uv_keys, ARRAY_SIZE(uv_keys));
	else
		r = tp_check_keys(p, n, path, pip_keys, ARRAY_SIZE(pip_keys));
	v = ymap_get(n, "packages");
	if (!v || ynode_is_null(v))
		r = tp_err(p, n, "%s needs 'packages' (a list, or a requirements file)", path);
	else if (v->kind == Y_SCALAR) {
		k->req_line = v->line;
		k->req_col = v->col;
		r |= tp_str(p, v, tp_path(sub, path, "packages"), &k->requirements);
	} else
		r |= tp_strlist(p, v, tp_path(sub, path, "packages"), 0, &k->packages,
		                &k->npackages);
	tp_path(sub, path, uv ? "uv_check" : "pip_check");
	if ((v = ymap_get(n, uv ? "uv_check" : "pip_check")) && !ynode_is_null(v))
		r |= tp_bool(p, v, sub, &k->check);
	tp_path(sub, path, uv ? "uv_version" : "pip_version");
	if ((v = ymap_get(n, uv ? "uv_version" : "pip_version")) && !ynode_is_null(v))
		r |= tp_scalar_text(p, v, sub, &k->version);
	tp_path(sub, path, "uv_pip_install_options");
	if (uv && (v = ymap_get(n, "uv_pip_install_options")) && !ynode_is_null(v))
		r |= tp_strlist(p, v, sub, 0, &k->install_options, &k->ninstall_options);
	return r ? -1 : 0;
}

static int parse_config(struct tparse *p, const struct ynode *n, struct task_runtime_env *rt)
{
	static const char *const keys[] = {"setup_timeout_seconds", "eager_install", "log_files"};
	const struct ynode *v;
	int r;

	if (n->kind != Y_MAP)
		return tp_type_err(p, n, "runtime_env.config", "a mapping");
	r = tp_check_keys(p, n, "runtime_env.config", keys, ARRAY_SIZE(keys));
	v = ymap_get(n, "setup_timeout_seconds");
	if (v && !ynode_is_null(v)) {
		if (tp_long(p, v, "runtime_env.config.setup_timeout_seconds", -1, 100000000,
		            &rt->setup_timeout_seconds))
			r = -1;
		else if (rt->setup_timeout_seconds == 0)
			r = tp_err(p, v,
			           "runtime_env.config.setup_timeout_seconds must be more than "
			           "0, or -1 for no timeout");
	}
	if ((v = ymap_get(n, "eager_install")) && !ynode_is_null(v))
		r |= tp_bool(p, v, "runtime_env.config.eager_install", &rt->eager_install);
	if ((v = ymap_get(n, "log_files")) && !ynode_is_null(v)) {
		char **files = NULL;
		size_t nfiles = 0;

		r |= tp_strlist(p, v, "runtime_env.config.log_files", 0, &files, &nfiles);
		tp_strv_free(files, nfiles);
	}
	return r ? -1 : 0;
}

int task_parse_runtime_env(struct tparse *p, const struct ynode *n, struct task_runtime_env *rt)
{
	const struct ynode *pip = ymap_get(n, "pip"), *uv = ymap_get(n, "uv");
	size_t i, k;
	int r;

	if (n->kind != Y_MAP)
		return tp_type_err(p, n, "runtime_env", "a mapping");
	rt->set = 1;
	rt->line = n->line;
	rt->col = n->col;
	r = tp_check_keys(p, n, "runtime_env", rt_keys, ARRAY_SIZE(rt_keys));
	if (pip && uv && !ynode_is_null(pip) && !ynode_is_null(uv))
		r = tp_err(p, uv, "runtime_env: give 'pip' or 'uv', not both");
	for (i = 0; i < ymap_pairs(n); i++) {
		const struct ynode *key = ymap_key(n, i), *v = ymap_val(n, i);
		const char *name = key->value;

		if (key->kind != Y_SCALAR || ynode_is_null(v))
			continue;
		for (k = FIRST_UNSUPPORTED; k < ARRAY_SIZE(rt_keys); k++)
			if (!strcmp(name, rt_keys[k]))
				r = tp_err(
				        p, key,
				        "runtime_env.%s is not supported by skiff; use pip or uv "
				        "(and `python` to choose the interpreter)",
				        name);
		if (!strcmp(name, "pip") && parse_pkgs(p, v, "pip", &rt->pip))
			r = -1;
		else if (!strcmp(name, "uv") && parse_pkgs(p, v, "uv", &rt->uv))
			r = -1;
		else if (!strcmp(name, "working_dir") &&
		         tp_str(p, v, "runtime_env.working_dir", &rt->working_dir))
			r = -1;
		else if (!strcmp(name, "py_modules") &&
		         tp_strlist(p, v, "runtime_env.py_modules", 0, &rt->py_modules,
		                    &rt->npy_modules))
			r = -1;
		else if (!strcmp(name, "env_vars") &&
		         tp_kvs(p, v, "runtime_env.env_vars", 1, 0, 0, &rt->env_vars))
			r = -1;
		else if (!strcmp(name, "config") && parse_config(p, v, rt))
			r = -1;
		else if (!strcmp(name, "python") &&
		         tp_scalar_text(p, v, "runtime_env.python", &rt->python))
			r = -1;
	}
	return r ? -1 : 0;
}
