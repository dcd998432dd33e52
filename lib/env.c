#include "lib/env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
