/*
 * CLI overrides shared by `check`, `launch`, `exec` and `jobs launch`: the flags, dotenv
 * files, applying them to a parsed task, and the check that no env is left without a value.
 */
#include "lib/task.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/config.h"
#include "lib/task_internal.h"
#include "lib/util.h"
#include "lib/banned.h"

void task_overrides_release(struct task_overrides *o)
{
	task_kvs_release(&o->envs);
	task_kvs_release(&o->secrets);
	task_kvs_release(&o->env_flags);
	task_kvs_release(&o->secret_flags);
	free(o->cpus);
	free(o->memory);
	free(o->gpus);
	free(o->workdir);
	free(o->git_url);
	free(o->git_ref);
	free(o->name);
	task_kvs_release(&o->res);
	while (o->nconfig)
		free(o->config[--o->nconfig]);
	free(o->config);
	free(o->config_file);
	free(o->config_cli);
	while (o->npaths) {
		o->npaths--;
		free(o->path_from[o->npaths]);
		free(o->path_to[o->npaths]);
	}
	free(o->path_from);
	free(o->path_to);
	memset(o, 0, sizeof(*o));
}

void task_overrides_map_path(struct task_overrides *o, const char *from, const char *to)
{
	o->path_from = xrealloc(o->path_from, (o->npaths + 1) * sizeof(*o->path_from));
	o->path_to = xrealloc(o->path_to, (o->npaths + 1) * sizeof(*o->path_to));
	o->path_from[o->npaths] = xstrdup(from);
	o->path_to[o->npaths++] = xstrdup(to);
}

char *task_git_key(const struct task_workdir *w)
{
	return xasprintf("git:%s@%s", w->url ? w->url : "", w->ref ? w->ref : "");
}

static const char *mapped(const struct task_overrides *o, const char *from)
{
	size_t k;

	for (k = 0; from && k < o->npaths; k++)
		if (!strcmp(o->path_from[k], from))
			return o->path_to[k];
	return NULL;
}

/* The files a remote controller holds for the task, in place of the launcher's. */
static void map_paths(struct task *t, const struct task_overrides *o)
{
	const char *to;
	size_t k;

	if (!o->npaths)
		return;
	if (t->workdir.kind == TASK_WORKDIR_PATH && (to = mapped(o, t->workdir.path))) {
		free(t->workdir.path);
		t->workdir.path = xstrdup(to);
	} else if (t->workdir.kind == TASK_WORKDIR_GIT) {
		char *key = task_git_key(&t->workdir);

		if ((to = mapped(o, key))) {
			free(t->workdir.url);
			free(t->workdir.ref);
			t->workdir.url = t->workdir.ref = NULL;
			t->workdir.kind = TASK_WORKDIR_PATH;
			t->workdir.path = xstrdup(to);
		}
		free(key);
	}
	for (k = 0; k < t->nmounts; k++)
		if ((to = mapped(o, t->mounts[k].src))) {
			free(t->mounts[k].src);
			t->mounts[k].src = xstrdup(to);
		}
}

/* "--flag VALUE", "--flag=VALUE" (and the short form, if any, as "-n VALUE"). */
static int opt_value(int argc, char **argv, int *i, const char *name, const char *short_name,
                     const char **value)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (!strncmp(a, name, n) && a[n] == '=') {
		*value = a + n + 1;
		*i += 1;
		return 1;
	}
	if (strcmp(a, name) && (!short_name || strcmp(a, short_name)))
		return 0;
	if (*i + 1 >= argc) {
		error("option '%s' needs a value", a);
		return -1;
	}
	*value = argv[*i + 1];
	*i += 2;
	return 1;
}

/* K=V, or K alone: the value of K in our own environment. */
static int kv_arg(struct task_kvs *kvs, struct task_kvs *pinned, const char *flag, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char *key = eq ? xstrndup(arg, (size_t)(eq - arg)) : xstrdup(arg);
	const char *value = eq ? eq + 1 : getenv(key);
	int r = 0;

	if (!task_env_name_ok(key))
		r = error(
		        "%s '%.60s': '%.60s' is not a valid variable name (letters, digits and '_', "
		        "not starting with a digit)",
		        flag, arg, key);
	else if (!value)
		r = error("%s %s: %s is not set in the environment (give %s %s=VALUE)", flag, key,
		          key, flag, key);
	else {
		task_kvs_set(kvs, key, value, 0, 0);
		task_kvs_set(pinned, key, "", 0, 0);
	}
	free(key);
	return r;
}

static char *skip_ws(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* One value of a dotenv line, in place: 'literal', "with \n escapes", or bare # comment. */
static int dotenv_value(char *s, char **value)
{
	char *w, *r;

	if (*s == '\'' || *s == '"') {
		char q = *s;

		for (w = s, r = s + 1; *r && *r != q; r++) {
			if (q == '"' && *r == '\\' && r[1]) {
				r++;
				*w++ = *r == 'n' ? '\n' : *r == 't' ? '\t' : *r == 'r' ? '\r' : *r;
				continue;
			}
			*w++ = *r;
		}
		if (*r != q)
			return -1;
		*w = '\0';
		r = skip_ws(r + 1);
		if (*r && *r != '#')
			return -1;
		*value = s;
		return 0;
	}
	for (r = s; *r && !(*r == '#' && (r == s || r[-1] == ' ' || r[-1] == '\t')); r++)
		;
	while (r > s && (r[-1] == ' ' || r[-1] == '\t' || r[-1] == '\r'))
		r--;
	*r = '\0';
	*value = s;
	return 0;
}

/* Reads a dotenv file into kvs, except the keys in pinned (given by a flag). */
static int env_file(struct task_kvs *kvs, const struct task_kvs *pinned, const char *flag,
                    const char *path)
{
	struct buf b = BUF_INIT(TASK_ENV_FILE_MAX);
	char *line, *next;
	int lineno = 0, r;

	r = buf_read_file(&b, path);
	if (r == -EFBIG || r == -ENOBUFS)
		r = error("%s %s: more than %zu bytes", flag, path, TASK_ENV_FILE_MAX);
	else if (r)
		r = error("%s %s: %s", flag, path, buf_read_strerror(r));
	if (r)
		goto out;
	if (memchr(b.p, 0, b.len) || !utf8_valid(b.p, b.len)) {
		r = error("%s %s: not a text file (NUL bytes or invalid UTF-8)", flag, path);
		goto out;
	}
	for (line = b.p; line && !r; line = next) {
		char *key, *eq, *value, *end;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		key = skip_ws(line);
		if (!*key || *key == '#' || *key == '\r')
			continue;
		if (!strncmp(key, "export ", 7))
			key = skip_ws(key + 7);
		eq = strchr(key, '=');
		if (!eq) {
			r = error("%s:%d:1: expected KEY=VALUE", path, lineno);
			break;
		}
		for (end = eq; end > key && (end[-1] == ' ' || end[-1] == '\t'); end--)
			;
		*end = '\0';
		if (!task_env_name_ok(key))
			r = error("%s:%d:1: '%.60s' is not a valid variable name", path, lineno,
			          key);
		else if (dotenv_value(skip_ws(eq + 1), &value))
			r = error("%s:%d:%d: unterminated quote or text after the closing quote",
			          path, lineno, (int)(skip_ws(eq + 1) - line) + 1);
		else if (!task_env_entry_fits(key, value))
			r = error("%s:%d:%d: %s is %zu bytes: one environment entry holds at most "
			          "%zu bytes (the kernel's limit for any program)",
			          path, lineno, (int)(skip_ws(eq + 1) - line) + 1, key,
			          strlen(value), TASK_ENV_ENTRY_MAX - strlen(key) - 2);
		else if (!task_kvs_get(pinned, key))
			task_kvs_set(kvs, key, value, 0, 0);
	}
out:
	buf_release(&b);
	return r ? -1 : 0;
}

static int set_checked(char **dst, const char *flag, const char *value, int kind)
{
	struct task_amount amt = {NULL, 0, TASK_EXACT};
	struct task_accel acc = {NULL, 0};
	char why[160];
	int r = 0;

	if (!*value)
		return error("%s needs a value", flag);
	if (kind == 1 || kind == 2)
		r = task_amount_parse(value, kind == 2, &amt, why, sizeof(why));
	else if (kind == 3) {
		struct task_accel *v = NULL;
		size_t n = 0;

		r = task_accel_memory_parse(value, &v, &n, why, sizeof(why));
		while (n)
			free(v[--n].name);
		free(v);
		if (r > 0)
			return error(
			        "%s %s: GPUs by memory go in the task's resources.accelerators, "
			        "not in %s",
			        flag, value, flag);
		if (r == 0)
			r = task_accel_parse(value, &acc, why, sizeof(why));
	}
	free(amt.text);
	free(acc.name);
	if (r)
		return error("%s %s: %s", flag, value, why);
	free(*dst);
	*dst = xstrdup(value);
	return 0;
}

/* ---- the other resource flags: YAML for the task parser ------------------------------- */

/* The flags that set one resources field, and whether their value is a string or a number. */
static const struct {
	const char *flag, *short_flag, *key;
	int number;
} res_flags[] = {
        {"--image-id", NULL, "image_id", 0},   {"--instance-type", "-t", "instance_type", 0},
        {"--cloud", NULL, "cloud", 0},         {"--region", NULL, "region", 0},
        {"--zone", NULL, "zone", 0},           {"--disk-size", NULL, "disk_size", 1},
        {"--disk-tier", NULL, "disk_tier", 0}, {"--network-tier", NULL, "network_tier", 0},
};

/* "resources:" with the given fields, one per line, as the parser reads a task. */
static void res_doc(struct buf *b, const struct task_kvs *res)
{
	size_t k;

	buf_adds(b, "resources:\n");
	for (k = 0; k < res->n; k++)
		buf_addf(b, "  %s: %s\n", res->v[k].key, res->v[k].value);
}

/* value as a YAML scalar: a number as written when it is digits only, else a quoted string. */
static char *yaml_scalar(const char *value, int number)
{
	struct buf b = BUF_INIT(0);
	struct json j;

	if (number && *value && strspn(value, "0123456789") == strlen(value))
		return xstrdup(value);
	json_init(&j, &b, 0);
	json_str(&j, value); /* a JSON string is a YAML double-quoted scalar */
	return buf_detach(&b, NULL);
}

/* Sets key to yaml in o->res, once the parser accepts it alone; else says why, as flag's. */
static int res_set(struct task_overrides *o, const char *flag, const char *shown, const char *key,
                   const char *yaml)
{
	struct task_kvs one = {NULL, 0};
	struct task_list tl = TASK_LIST_INIT;
	struct yerrors errs = YERRORS_INIT;
	struct buf doc = BUF_INIT(0);
	int r;

	task_kvs_set(&one, key, yaml, 0, 0);
	res_doc(&doc, &one);
	r = task_parse_buf(&tl, flag, doc.p, doc.len, &errs);
	if (r || errs.nerrors)
		r = error("%s %s: %s", flag, shown, errs.n ? errs.v[0].msg : "not accepted");
	else
		task_kvs_set(&o->res, key, yaml, 0, 0);
	task_kvs_release(&one);
	task_list_release(&tl);
	yerr_release(&errs);
	buf_release(&doc);
	return r ? -1 : 1;
}

/* --ports P, as often as wanted: the list of every one given so far. */
static int ports_add(struct task_overrides *o, const char *port)
{
	const struct task_kv *had = task_kvs_get(&o->res, "ports");
	char *q = yaml_scalar(port, 0);
	char *list = had ? xasprintf("%.*s, %s]", (int)strlen(had->value) - 1, had->value, q)
	                 : xasprintf("[%s]", q);
	int r = res_set(o, "--ports", port, "ports", list);

	free(q);
	free(list);
	return r;
}

static int res_flag(struct task_overrides *o, int argc, char **argv, int *i)
{
	const char *v;
	size_t k;
	int r;

	if (!strcmp(argv[*i], "--use-spot") || !strcmp(argv[*i], "--no-use-spot")) {
		int on = !strcmp(argv[*i], "--use-spot");

		*i += 1;
		return res_set(o, on ? "--use-spot" : "--no-use-spot", "", "use_spot",
		               on ? "true" : "false");
	}
	if ((r = opt_value(argc, argv, i, "--ports", "-p", &v)))
		return r < 0 ? -1 : ports_add(o, v);
	for (k = 0; k < ARRAY_SIZE(res_flags); k++) {
		if ((r = opt_value(argc, argv, i, res_flags[k].flag, res_flags[k].short_flag,
		                   &v))) {
			char *yaml;

			if (r < 0)
				return -1;
			yaml = yaml_scalar(v, res_flags[k].number);
			r = res_set(o, res_flags[k].flag, v, res_flags[k].key, yaml);
			free(yaml);
			return r;
		}
	}
	return 0;
}

/* The resource flags' fields, as one parsed alternative (tl holds it); -1 if none. */
static int res_parsed(const struct task_overrides *o, struct task_list *tl)
{
	struct yerrors errs = YERRORS_INIT;
	struct buf doc = BUF_INIT(0);
	int r;

	if (!o->res.n)
		return -1;
	res_doc(&doc, &o->res);
	r = task_parse_buf(tl, "resource flags", doc.p, doc.len, &errs);
	if (r || errs.nerrors || !tl->n || !tl->tasks[0]->nres)
		r = -1;
	yerr_release(&errs);
	buf_release(&doc);
	return r;
}

int task_overrides_arg(struct task_overrides *o, int argc, char **argv, int *i)
{
	const char *v;
	long n;
	int r;

	if ((r = opt_value(argc, argv, i, "--env", NULL, &v)))
		return r < 0 ? -1 : kv_arg(&o->envs, &o->env_flags, "--env", v) ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--secret", NULL, &v)))
		return r < 0 ? -1 : kv_arg(&o->secrets, &o->secret_flags, "--secret", v) ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--env-file", NULL, &v)))
		return r < 0 ? -1 : env_file(&o->envs, &o->env_flags, "--env-file", v) ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--secret-file", NULL, &v)))
		return r < 0                                                         ? -1
		       : env_file(&o->secrets, &o->secret_flags, "--secret-file", v) ? -1
		                                                                     : 1;
	if ((r = opt_value(argc, argv, i, "--num-nodes", NULL, &v))) {
		if (r < 0)
			return -1;
		if (parse_long(v, 1, TASK_MAX_NODES, &n))
			return error("--num-nodes %s: must be a whole number from 1 to %d", v,
			             TASK_MAX_NODES);
		o->num_nodes = n;
		return 1;
	}
	if ((r = opt_value(argc, argv, i, "--cpus", NULL, &v)))
		return r < 0 ? -1 : set_checked(&o->cpus, "--cpus", v, 1) ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--memory", NULL, &v)))
		return r < 0 ? -1 : set_checked(&o->memory, "--memory", v, 2) ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--gpus", NULL, &v)))
		return r < 0 ? -1 : set_checked(&o->gpus, "--gpus", v, 3) ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--workdir", NULL, &v)))
		return r < 0 ? -1 : set_checked(&o->workdir, "--workdir", v, 0) ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--git-url", NULL, &v)))
		return r < 0 ? -1 : set_checked(&o->git_url, "--git-url", v, 0) ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--git-ref", NULL, &v)))
		return r < 0 ? -1 : set_checked(&o->git_ref, "--git-ref", v, 0) ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--name", "-n", &v))) {
		if (r > 0 && strlen(v) > TASK_NAME_MAX)
			return error("--name '%.40s...' is %zu characters long, more than %d", v,
			             strlen(v), TASK_NAME_MAX);
		return r < 0 ? -1 : set_checked(&o->name, "--name", v, 0) ? -1 : 1;
	}
	if ((r = opt_value(argc, argv, i, "--config", NULL, &v))) {
		if (r < 0)
			return -1;
		if (!*v)
			return error("--config needs a file or KEY=VALUE");
		if (o->nconfig >= CONFIG_MAX_LAYERS)
			return error("--config given more than %d times", CONFIG_MAX_LAYERS);
		o->config = xrealloc(o->config, (o->nconfig + 1) * sizeof(*o->config));
		o->config[o->nconfig++] = xstrdup(v);
		return 1;
	}
	return res_flag(o, argc, argv, i);
}

static void apply_resources(struct task_resources *r, const struct task_overrides *o)
{
	char why[160];

	/* The values were checked by task_overrides_arg(); a failure leaves the field as is. */
	if (o->cpus && !task_amount_parse(o->cpus, 0, &r->cpus, why, sizeof(why)))
		r->set |= TR_CPUS;
	if (o->memory && !task_amount_parse(o->memory, 1, &r->memory, why, sizeof(why)))
		r->set |= TR_MEMORY;
	if (o->gpus && !task_accel_parse(o->gpus, &r->accel, why, sizeof(why)))
		r->set |= TR_ACCELERATORS;
}

int task_list_apply_overrides(struct task_list *l, const struct task_overrides *o,
                              struct yerrors *errs)
{
	struct task_list flags = TASK_LIST_INIT;
	int have_res;
	size_t i, k;

	if (l->n > 1 && (o->num_nodes || o->cpus || o->memory || o->gpus || o->workdir ||
	                 o->git_url || o->git_ref || o->res.n)) {
		yerr_add(errs, l->file, 1, 1,
		         "--num-nodes, --cpus, --memory, --gpus, --workdir and the other resource "
		         "flags apply to a single task, and this is a pipeline of %zu tasks: set "
		         "them in each task",
		         l->n);
		return -EINVAL;
	}
	have_res = !res_parsed(o, &flags);
	if (o->name) {
		free(l->name);
		l->name = xstrdup(o->name);
		if (l->n == 1) {
			free(l->tasks[0]->name);
			l->tasks[0]->name = xstrdup(o->name);
		}
	}
	for (i = 0; i < l->n; i++) {
		struct task *t = l->tasks[i];

		for (k = 0; k < o->envs.n; k++)
			task_kvs_set(&t->envs, o->envs.v[k].key, o->envs.v[k].value, 0, 0);
		for (k = 0; k < o->secrets.n; k++)
			task_kvs_set(&t->secrets, o->secrets.v[k].key, o->secrets.v[k].value, 0, 0);
		if (o->num_nodes)
			t->num_nodes = o->num_nodes;
		for (k = 0; k < t->nres; k++) {
			apply_resources(&t->res[k], o);
			if (have_res)
				task_resources_override(&t->res[k], &flags.tasks[0]->res[0]);
		}
		if (o->workdir) {
			free(t->workdir.path);
			free(t->workdir.url);
			free(t->workdir.ref);
			t->workdir.url = t->workdir.ref = NULL;
			t->workdir.kind = TASK_WORKDIR_PATH;
			t->workdir.path = xstrdup(o->workdir);
			t->workdir.line = t->workdir.col = 0;
		}
		if (o->git_url) {
			/* As SkyPilot's --git-url: the workdir is that repository's tree. */
			free(t->workdir.path);
			free(t->workdir.url);
			t->workdir.path = NULL;
			t->workdir.kind = TASK_WORKDIR_GIT;
			t->workdir.url = xstrdup(o->git_url);
		}
		if (o->git_ref && t->workdir.kind == TASK_WORKDIR_GIT) {
			free(t->workdir.ref);
			t->workdir.ref = xstrdup(o->git_ref);
		} else if (o->git_ref) {
			yerr_add(errs, l->file, 1, 1,
			         "--git-ref %s: the task has no git workdir (give --git-url, or "
			         "workdir: {url: ...} in the task)",
			         o->git_ref);
			task_list_release(&flags);
			return -EINVAL;
		}
		task_fill_env_vars(l, t);
		map_paths(t, o);
	}
	task_list_release(&flags);
	return 0;
}

size_t task_list_check_required(const struct task_list *l, struct yerrors *errs, int as_warnings)
{
	size_t i, k, n = 0;

	for (i = 0; i < l->n; i++) {
		const struct task *t = l->tasks[i];

		for (k = 0; k < t->envs.n + t->secrets.n; k++) {
			int secret = k >= t->envs.n;
			const struct task_kv *kv =
			        secret ? &t->secrets.v[k - t->envs.n] : &t->envs.v[k];
			const char *what = secret ? "secret" : "env";

			if (kv->value)
				continue;
			n++;
			if (as_warnings)
				yerr_warn(errs, l->file, kv->line, kv->col,
				          "%s '%s' has no value: pass --%s %s=VALUE", what, kv->key,
				          what, kv->key);
			else
				yerr_add(errs, l->file, kv->line, kv->col,
				         "%s '%s' has no value: pass --%s %s=VALUE", what, kv->key,
				         what, kv->key);
		}
	}
	return n;
}

/* ---- the overrides as data ------------------------------------------------------------ */

static void encode_kvs(struct msg *m, const char *key, const struct task_kvs *kvs)
{
	size_t i;

	for (i = 0; i < kvs->n; i++)
		if (kvs->v[i].value)
			msg_addf(m, key, "%s=%s", kvs->v[i].key, kvs->v[i].value);
}

void task_overrides_encode(const struct task_overrides *o, struct msg *m)
{
	size_t i;

	encode_kvs(m, "env", &o->envs);
	encode_kvs(m, "secret", &o->secrets);
	if (o->num_nodes)
		msg_add_int(m, "num_nodes", o->num_nodes);
	if (o->cpus)
		msg_add(m, "cpus", o->cpus);
	if (o->memory)
		msg_add(m, "memory", o->memory);
	if (o->gpus)
		msg_add(m, "gpus", o->gpus);
	if (o->workdir)
		msg_add(m, "workdir", o->workdir);
	if (o->git_url)
		msg_add(m, "git_url", o->git_url);
	if (o->git_ref)
		msg_add(m, "git_ref", o->git_ref);
	if (o->name)
		msg_add(m, "name", o->name);
	encode_kvs(m, "res", &o->res);
	if (o->config_file)
		msg_add(m, "config_file", o->config_file);
	if (o->config_cli)
		msg_add(m, "config_cli", o->config_cli);
	for (i = 0; i < o->npaths; i++) {
		msg_add(m, "path_from", o->path_from[i]);
		msg_add(m, "path_to", o->path_to[i]);
	}
}

int task_overrides_decode(struct task_overrides *o, const char *data, size_t len)
{
	struct msg m;
	const char *why;
	size_t i;
	int r = 0;

	task_overrides_release(o);
	msg_init(&m);
	if (len && msg_decode(&m, data, len, &why)) {
		msg_release(&m);
		return error("stored task overrides are malformed: %s", why);
	}
	for (i = 0; i < m.n && !r; i++) {
		const char *k = m.keys[i], *v = m.vals[i], *eq = strchr(v, '=');
		char **slot = !strcmp(k, "cpus")          ? &o->cpus
		              : !strcmp(k, "memory")      ? &o->memory
		              : !strcmp(k, "gpus")        ? &o->gpus
		              : !strcmp(k, "workdir")     ? &o->workdir
		              : !strcmp(k, "git_url")     ? &o->git_url
		              : !strcmp(k, "git_ref")     ? &o->git_ref
		              : !strcmp(k, "name")        ? &o->name
		              : !strcmp(k, "config_file") ? &o->config_file
		              : !strcmp(k, "config_cli")  ? &o->config_cli
		                                          : NULL;
		long n;

		if (slot) {
			free(*slot);
			*slot = xstrdup(v);
		} else if ((!strcmp(k, "env") || !strcmp(k, "secret") || !strcmp(k, "res")) && eq &&
		           eq > v) {
			char *name = xstrndup(v, (size_t)(eq - v));

			task_kvs_set(!strcmp(k, "env")      ? &o->envs
			             : !strcmp(k, "secret") ? &o->secrets
			                                    : &o->res,
			             name, eq + 1, 0, 0);
			free(name);
		} else if (!strcmp(k, "num_nodes") && !parse_long(v, 1, TASK_MAX_NODES, &n)) {
			o->num_nodes = n;
		} else if (!strcmp(k, "path_from") && i + 1 < m.n &&
		           !strcmp(m.keys[i + 1], "path_to")) {
			task_overrides_map_path(o, v, m.vals[i + 1]);
			i++;
		} else {
			r = error("stored task overrides: unexpected field '%s'", k);
		}
	}
	msg_release(&m);
	return r;
}
