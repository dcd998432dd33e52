/*
 * The field helpers every lib/task*.c parser shares (see lib/task_internal.h), and the
 * key/value lists of lib/task.h.
 */
#include "lib/task.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/task_internal.h"
#include "lib/util.h"
#include "lib/banned.h"

int tp_err(struct tparse *p, const struct ynode *at, const char *fmt, ...)
{
	va_list ap;

	p->failed = 1;
	if (p->quiet)
		return -1;
	va_start(ap, fmt);
	yerr_vadd(p->errs, 0, p->file, at ? at->line : 1, at ? at->col : 1, fmt, ap);
	va_end(ap);
	return -1;
}

void tp_warn(struct tparse *p, const struct ynode *at, const char *fmt, ...)
{
	va_list ap;

	if (p->quiet)
		return;
	va_start(ap, fmt);
	yerr_vadd(p->errs, 1, p->file, at ? at->line : 1, at ? at->col : 1, fmt, ap);
	va_end(ap);
}

int tp_type_err(struct tparse *p, const struct ynode *n, const char *path, const char *want)
{
	return tp_err(p, n, "%s must be %s, not %s", path, want, ynode_describe(n));
}

/* Paths only name things in messages: a long one is cut short, which is harmless. */
const char *tp_path(char *buf, const char *parent, const char *key)
{
	size_t n = 0, k;

	if (parent && *parent) {
		n = strnlen(parent, TASK_PATH_MAX - 2);
		memmove(buf, parent, n);
		buf[n++] = '.';
	}
	k = strnlen(key, 60);
	if (k > TASK_PATH_MAX - 1 - n)
		k = TASK_PATH_MAX - 1 - n;
	memcpy(buf + n, key, k);
	buf[n + k] = '\0';
	return buf;
}

const char *tp_index(char *buf, const char *parent, size_t i)
{
	int n = snprintf(buf, TASK_PATH_MAX, "%s[%zu]", parent, i);

	(void)n;
	return buf;
}

int tp_unknown_key(struct tparse *p, const struct ynode *key, const char *path,
                   const char *const *known, size_t nknown)
{
	/* Past the error limit the message is only counted: skip the search. */
	const char *best = p->errs->n < YAML_MAX_ERRORS && !p->quiet
	                           ? nearest_word(key->value, known, nknown)
	                           : NULL;
	const char *in = path && *path ? " in " : "";

	if (!path)
		path = "";
	if (best)
		return tp_err(p, key, "unknown field '%.60s'%s%s; did you mean '%s'?", key->value,
		              in, path, best);
	return tp_err(p, key, "unknown field '%.60s'%s%s", key->value, in, path);
}

int tp_check_keys(struct tparse *p, const struct ynode *map, const char *path,
                  const char *const *known, size_t nknown)
{
	size_t i, k;
	int r = 0;

	for (i = 0; i < ymap_pairs(map); i++) {
		const struct ynode *key = ymap_key(map, i);

		if (key->kind != Y_SCALAR) {
			r = tp_err(p, key, "keys in %s must be strings, not %s",
			           path && *path ? path : "a task", ynode_describe(key));
			continue;
		}
		for (k = 0; k < nknown; k++)
			if (!strcmp(key->value, known[k]))
				break;
		if (k == nknown)
			r = tp_unknown_key(p, key, path, known, nknown);
	}
	return r;
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? xstrdup(s) : NULL;
}

int tp_str(struct tparse *p, const struct ynode *n, const char *path, char **out)
{
	if (n->kind != Y_SCALAR || yscalar_type(n) != YS_STR)
		return tp_type_err(p, n, path, "a string");
	set_str(out, n->value);
	return 0;
}

int tp_scalar_text(struct tparse *p, const struct ynode *n, const char *path, char **out)
{
	if (n->kind != Y_SCALAR || ynode_is_null(n))
		return tp_type_err(p, n, path, "a string");
	set_str(out, n->value);
	return 0;
}

int tp_bool(struct tparse *p, const struct ynode *n, const char *path, int *out)
{
	if (ynode_bool(n, out))
		return tp_type_err(p, n, path, "true or false");
	return 0;
}

int tp_long(struct tparse *p, const struct ynode *n, const char *path, long min, long max,
            long *out)
{
	int r = ynode_long(n, min, max, out);

	if (r == -ERANGE)
		return tp_err(p, n, "%s must be between %ld and %ld, not %.40s", path, min, max,
		              n->value);
	if (r)
		return tp_type_err(p, n, path, "an integer");
	return 0;
}

void tp_strv_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int tp_strlist(struct tparse *p, const struct ynode *n, const char *path, int single_ok,
               char ***out, size_t *nout)
{
	char sub[TASK_PATH_MAX];
	char **v;
	size_t i;
	int r = 0;

	tp_strv_free(*out, *nout);
	*out = NULL;
	*nout = 0;
	if (single_ok && n->kind == Y_SCALAR) {
		if (yscalar_type(n) != YS_STR)
			return tp_type_err(p, n, path, "a string or a list of strings");
		*out = xcalloc(1, sizeof(**out));
		(*out)[0] = xstrdup(n->value);
		*nout = 1;
		return 0;
	}
	if (n->kind != Y_SEQ)
		return tp_type_err(p, n, path,
		                   single_ok ? "a string or a list of strings"
		                             : "a list of strings");
	v = xcalloc(n->n + 1, sizeof(*v));
	for (i = 0; i < n->n; i++) {
		if (tp_str(p, n->items[i], tp_index(sub, path, i), &v[i]))
			r = -1;
	}
	if (r) {
		tp_strv_free(v, n->n);
		return -1;
	}
	*out = v;
	*nout = n->n;
	return 0;
}

int tp_mapping(struct tparse *p, const struct ynode *n, const char *path)
{
	if (n->kind != Y_MAP)
		return tp_type_err(p, n, path, "a mapping");
	return tp_freeform(p, n, path);
}

int tp_freeform(struct tparse *p, const struct ynode *n, const char *path)
{
	size_t i;

	if (n->kind == Y_SCALAR)
		return 0;
	for (i = 0; i < n->n; i++) {
		if (n->kind == Y_MAP && i % 2 == 0 && n->items[i]->kind != Y_SCALAR)
			return tp_err(p, n->items[i], "keys in %s must be strings, not %s", path,
			              ynode_describe(n->items[i]));
		if (tp_freeform(p, n->items[i], path))
			return -1;
	}
	return 0;
}

int task_env_entry_fits(const char *name, const char *value)
{
	return strlen(name) + 1 + strlen(value) + 1 <= TASK_ENV_ENTRY_MAX;
}

int task_env_name_ok(const char *s)
{
	size_t i;

	if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
		return 0;
	for (i = 1; s[i]; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

static void kvs_append(struct task_kvs *kvs, const char *key, const char *value, int line, int col);

int tp_kvs(struct tparse *p, const struct ynode *n, const char *path, int env_names, int nulls_ok,
           int coerce, struct task_kvs *kvs)
{
	char sub[TASK_PATH_MAX];
	size_t i;
	int r = 0;
	/* A mapping's keys are unique: look up only when merging into what is there. */
	void (*set)(struct task_kvs *, const char *, const char *, int, int) =
	        kvs->n ? task_kvs_set : kvs_append;

	if (n->kind != Y_MAP)
		return tp_type_err(p, n, path, "a mapping of names to values");
	for (i = 0; i < ymap_pairs(n); i++) {
		const struct ynode *k = ymap_key(n, i), *v = ymap_val(n, i);

		if (k->kind != Y_SCALAR || ynode_is_null(k)) {
			r = tp_err(p, k, "names in %s must be strings, not %s", path,
			           ynode_describe(k));
			continue;
		}
		if (env_names && !task_env_name_ok(k->value)) {
			r = tp_err(
			        p, k,
			        "'%.60s' in %s is not a valid variable name (letters, digits and "
			        "'_', not starting with a digit)",
			        k->value, path);
			continue;
		}
		tp_path(sub, path, k->value);
		if (ynode_is_null(v)) {
			if (!nulls_ok) {
				r = tp_type_err(p, v, sub, "a string");
				continue;
			}
			set(kvs, k->value, NULL, k->line, k->col);
			continue;
		}
		if (v->kind != Y_SCALAR || (!coerce && yscalar_type(v) != YS_STR)) {
			r = tp_type_err(p, v, sub, "a string");
			continue;
		}
		if (env_names && !task_env_entry_fits(k->value, v->value)) {
			r = tp_err(
			        p, v,
			        "%s is %zu bytes: one environment entry holds at most %zu bytes "
			        "(the kernel's limit for any program); pass large data in a file",
			        sub, strlen(v->value), TASK_ENV_ENTRY_MAX - strlen(k->value) - 2);
			continue;
		}
		set(kvs, k->value, v->value, k->line, k->col);
	}
	return r;
}

/* ---- key/value lists ---------------------------------------------------------------- */

struct task_kv *task_kvs_get(const struct task_kvs *kvs, const char *key)
{
	size_t i;

	for (i = 0; i < kvs->n; i++)
		if (!strcmp(kvs->v[i].key, key))
			return &kvs->v[i];
	return NULL;
}

/* Adds an entry without looking for one: the array grows by doubling. */
static void kvs_append(struct task_kvs *kvs, const char *key, const char *value, int line, int col)
{
	struct task_kv *kv;

	if (!(kvs->n & (kvs->n - 1)))
		kvs->v = xrealloc(kvs->v, (kvs->n ? 2 * kvs->n : 1) * sizeof(*kvs->v));
	kv = &kvs->v[kvs->n++];
	kv->key = xstrdup(key);
	kv->value = value ? xstrdup(value) : NULL;
	kv->line = line;
	kv->col = col;
}

void task_kvs_set(struct task_kvs *kvs, const char *key, const char *value, int line, int col)
{
	struct task_kv *kv = task_kvs_get(kvs, key);

	if (!kv) {
		kvs_append(kvs, key, value, line, col);
		return;
	}
	set_str(&kv->value, value);
	kv->line = line;
	kv->col = col;
}

void task_kvs_release(struct task_kvs *kvs)
{
	size_t i;

	for (i = 0; i < kvs->n; i++) {
		free(kvs->v[i].key);
		free(kvs->v[i].value);
	}
	free(kvs->v);
	kvs->v = NULL;
	kvs->n = 0;
}
