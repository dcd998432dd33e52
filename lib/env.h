#ifndef SKIFF_ENV_H
#define SKIFF_ENV_H

/*
 * An environment being prepared for a child: a NULL-terminated "K=V" array that owns its
 * strings. env_set() replaces an existing K. Built before fork, passed as spawn's envp.
 */

#include <stddef.h>

struct env {
	char **v; /* NULL-terminated */
	size_t n, cap;
};

/* Copies the process's environ (or starts empty when inherit is 0). */
void env_init(struct env *e, int inherit);
void env_release(struct env *e);
/* Sets "K=V"; -EINVAL if kv has no '=' or an empty name. */
int env_put(struct env *e, const char *kv);
int env_set(struct env *e, const char *name, const char *value);
void env_unset(struct env *e, const char *name);
const char *env_get(const struct env *e, const char *name);

#endif
