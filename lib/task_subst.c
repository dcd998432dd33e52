/*
 * ${VAR} and $VAR from a task's envs and secrets in its file_mounts (both sides, storage
 * mappings included), workdir, volumes and service: SkyPilot's _fill_in_env_vars
 * (sky/task.py), applied once the CLI overrides are in (task_list_apply_overrides()).
 * Then a relative file_mounts destination is put under the workdir, ~/sky_workdir, as
 * SkyPilot's backend does. docs/task-yaml.md, "Env vars in file_mounts, workdir, ...".
 */
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/task.h"
#include "lib/task_internal.h"
#include "lib/util.h"
#include "lib/yaml.h"
#include "lib/banned.h"

static int word_byte(unsigned char c)
{
	/* Python's \w on the JSON text, where every byte past ASCII is a \uXXXX escape. */
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

static const char *lookup(const char *name, size_t len, const struct task_kvs *envs,
                          const struct task_kvs *secrets)
{
	const struct task_kvs *sets[2] = {secrets, envs}; /* a secret wins, as in SkyPilot */
	size_t i, k;

	for (i = 0; i < 2; i++)
		for (k = 0; sets[i] && k < sets[i]->n; k++) {
			const struct task_kv *kv = &sets[i]->v[k];

			if (kv->value && strlen(kv->key) == len && !memcmp(kv->key, name, len))
				return kv->value;
		}
	return NULL;
}

char *task_subst_vars(const char *s, const struct task_kvs *envs, const struct task_kvs *secrets)
{
	struct buf b = BUF_INIT(0);
	const char *p = s;

	buf_adds(&b, "");
	while (*p) {
		/* SkyPilot's pattern: \$\{?\b([a-zA-Z_][a-zA-Z0-9_]*)\b\}? */
		const char *name = p + 1, *end, *v;

		if (*p != '$') {
			buf_addch(&b, *p++);
			continue;
		}
		if (*name == '{')
			name++;
		if (!((*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z') ||
		      *name == '_')) {
			buf_addch(&b, *p++);
			continue;
		}
		for (end = name; word_byte((unsigned char)*end); end++)
			;
		v = lookup(name, (size_t)(end - name), envs, secrets);
		if (!v) { /* unknown: left as written */
			buf_addch(&b, *p++);
			continue;
		}
		buf_adds(&b, v);
		/* The braces are optional on both sides: `${X` and `$X}` are matches too. */
		p = *end == '}' ? end + 1 : end;
	}
	return buf_detach(&b, NULL);
}

static void subst_str(char **s, const struct task *t)
{
	char *v;

	if (!*s)
		return;
	v = task_subst_vars(*s, &t->envs, &t->secrets);
	free(*s);
	*s = v;
}

/* Every scalar under n, keys too (SkyPilot substitutes in the mapping's JSON text). */
static void subst_node(struct ystream *ys, const struct ynode *cn, const struct task *t)
{
	struct ynode *n = (struct ynode *)cn;
	size_t i;

	if (!n)
		return;
	if (n->kind == Y_SCALAR) {
		char *v;

		if (!n->value || !strchr(n->value, '$'))
			return;
		v = task_subst_vars(n->value, &t->envs, &t->secrets);
		if (strcmp(v, n->value))
			yscalar_set(ys, n, v);
		free(v);
		return;
	}
	for (i = 0; i < n->n; i++)
		subst_node(ys, n->items[i], t);
}

void task_fill_env_vars(struct task_list *l, struct task *t)
{
	size_t i;

	if (t->workdir.kind == TASK_WORKDIR_PATH)
		subst_str(&t->workdir.path, t);
	subst_str(&t->workdir.url, t);
	subst_str(&t->workdir.ref, t);
	for (i = 0; i < t->nmounts; i++) {
		struct task_mount *m = &t->mounts[i];

		subst_str(&m->dst, t);
		subst_str(&m->src, t);
		subst_node(&l->yaml, m->storage, t);
		if (m->dst[0] != '/' && strcmp(m->dst, "~") && !starts_with(m->dst, "~/")) {
			char *d = xasprintf(TASK_WORKDIR_ON_NODE "/%s", m->dst);

			free(m->dst);
			m->dst = d;
		}
	}
	subst_node(&l->yaml, t->volumes, t);
	subst_node(&l->yaml, t->service, t);
}
