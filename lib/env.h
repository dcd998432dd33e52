#ifndef SKIFF_ENV_H
#define SKIFF_ENV_H

/*
 * An environment being prepared for a child: a NULL-terminated "K=V" array that owns its
 * strings. env_set() replaces an existing K. Built before fork, passed as spawn's envp.
 */

#include <stddef.h>

#include "lib/buf.h"

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

/*
 * A job's envs as a node keeps them (struct job's envs, a submit's "env" and "env_copy"
 * fields): "K=V\0" entries, and copies "=K=OLD\0": K gets the value OLD has at that
 * point. A value that a job holds under several names (a gang's address list, under
 * SkyPilot's names and skiff's, for the setup and the run: four times N addresses) is
 * then sent and stored once.
 *
 * env_blob_add() appends kv ("K=V", or with copy "K=OLD") to blob after checking it: K
 * (and OLD) a name a shell can hold, the entry at most max bytes with its NUL once
 * copied, a copy's OLD set by an entry before it. 0, or -1 with why (a sentence that
 * quotes kv) in *why; nothing appended then.
 */
int env_blob_add(struct buf *blob, const char *kv, int copy, size_t max, struct buf *why);
/* Sets blob's entries in e, in order, each copy to the value its OLD has then. */
void env_blob_apply(struct env *e, const char *blob, size_t len);

#endif
