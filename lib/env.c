#include "lib/env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/quote.h"
#include "lib/util.h"
#include "lib/banned.h"

extern char **environ;

void env_init(struct env *e, int inherit)
{
	size_t i;

	e->n = 0;
	e->cap = 16;
	e->v = xcalloc(e->cap, sizeof(*e->v));
	if (!inherit || !environ)
		return;
	for (i = 0; environ[i]; i++)
		env_put(e, environ[i]);
}

void env_release(struct env *e)
{
	size_t i;

	if (!e || !e->v)
		return;
	for (i = 0; i < e->n; i++)
		free(e->v[i]);
	free(e->v);
	e->v = NULL;
	e->n = e->cap = 0;
}

static size_t find(const struct env *e, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		if (!strncmp(e->v[i], name, len) && e->v[i][len] == '=')
			return i;
	return (size_t)-1;
}

int env_put(struct env *e, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t i;

	if (!eq || eq == kv)
		return -EINVAL;
	i = find(e, kv, (size_t)(eq - kv));
	if (i != (size_t)-1) {
		free(e->v[i]);
		e->v[i] = xstrdup(kv);
		return 0;
	}
	if (e->n + 1 >= e->cap) {
		e->cap *= 2;
		e->v = xrealloc(e->v, e->cap * sizeof(*e->v));
	}
	e->v[e->n++] = xstrdup(kv);
	e->v[e->n] = NULL;
	return 0;
}

int env_set(struct env *e, const char *name, const char *value)
{
	char *kv = xasprintf("%s=%s", name, value);
	int r = env_put(e, kv);

	free(kv);
	return r;
}

void env_unset(struct env *e, const char *name)
{
	size_t i = find(e, name, strlen(name));

	if (i == (size_t)-1)
		return;
	free(e->v[i]);
	e->v[i] = e->v[--e->n];
	e->v[e->n] = NULL;
}

const char *env_get(const struct env *e, const char *name)
{
	size_t i = find(e, name, strlen(name));

	return i == (size_t)-1 ? NULL : strchr(e->v[i], '=') + 1;
}

/*
 * The length of the value that name (len bytes) has after blob's first end bytes, a
 * copy's resolved; -1 when no entry there sets it. Copies only name entries before
 * them, so this ends.
 */
static long blob_value_len(const char *blob, size_t end, const char *name, size_t len)
{
	size_t at = (size_t)-1, off = 0, n;

	for (off = 0; off < end; off += n + 1) {
		const char *kv = blob + off + (blob[off] == '=');

		n = strlen(blob + off);
		if (!strncmp(kv, name, len) && kv[len] == '=')
			at = off;
	}
	if (at == (size_t)-1)
		return -1;
	if (blob[at] != '=')
		return (long)strlen(blob + at + len + 1);
	name = blob + at + len + 2;
	return blob_value_len(blob, at, name, strlen(name));
}

int env_blob_add(struct buf *blob, const char *kv, int copy, size_t max, struct buf *why)
{
	const char *eq = strchr(kv, '=');
	size_t klen = eq ? (size_t)(eq - kv) : 0;
	long vlen;

	if (!eq || !sh_valid_name_n(kv, klen) || (copy && !sh_valid_name(eq + 1))) {
		buf_addf(why, "bad %s '%.64s': expected %s", copy ? "env_copy" : "env", kv,
		         copy ? "NAME=OTHER, two names" : "NAME=VALUE");
		return -1;
	}
	vlen = copy ? blob_value_len(blob->p ? blob->p : "", blob->len, eq + 1, strlen(eq + 1))
	            : (long)strlen(eq + 1);
	if (vlen < 0) {
		buf_addf(why, "bad env_copy '%.64s': %s is not set by an env before it", kv,
		         eq + 1);
		return -1;
	}
	if (klen + 1 + (size_t)vlen + 1 > max) {
		buf_addf(why,
		         "env %.*s is %zu bytes: one environment entry holds at most %zu bytes "
		         "(the kernel's limit)",
		         (int)klen, kv, klen + 1 + (size_t)vlen, max - 1);
		return -1;
	}
	if (copy)
		buf_addch(blob, '=');
	buf_add(blob, kv, strlen(kv) + 1);
	return 0;
}

void env_blob_apply(struct env *e, const char *blob, size_t len)
{
	const char *p = blob, *end = blob + len;

	for (; p < end; p += strlen(p) + 1) {
		const char *eq, *v;
		char *name;

		if (*p != '=') {
			env_put(e, p);
			continue;
		}
		eq = strchr(p + 1, '=');
		if (!eq || !(v = env_get(e, eq + 1)))
			continue; /* checked when it was added: not from a node's submit */
		name = xstrndup(p + 1, (size_t)(eq - p - 1));
		v = xstrdup(v);
		env_set(e, name, v);
		free((char *)v);
		free(name);
	}
}
