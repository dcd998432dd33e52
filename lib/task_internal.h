#ifndef SKIFF_TASK_INTERNAL_H
#define SKIFF_TASK_INTERNAL_H

/*
 * Shared by the lib/task*.c files only: the parse context and its field helpers.
 *
 * Each helper checks one YAML node against what a field allows and, on a mismatch, adds
 * an error at the node's position ("resources.cpus must be ..., not a list") and returns
 * -1. Parsing goes on after an error so that one run reports every problem. A helper that
 * stores a string replaces (and frees) what the destination held.
 */

#include "lib/task.h"

#define TASK_PATH_MAX 160

struct tparse {
	const char *file;
	struct yerrors *errs;
	int quiet;  /* > 0: re-parsing nodes already checked; report nothing */
	int failed; /* an error was reported (or would have been, when quiet) */
};

int tp_err(struct tparse *p, const struct ynode *at, const char *fmt, ...) SKIFF_PRINTF(3, 4);
void tp_warn(struct tparse *p, const struct ynode *at, const char *fmt, ...) SKIFF_PRINTF(3, 4);
/* "PATH must be WANT, not a list" */
int tp_type_err(struct tparse *p, const struct ynode *n, const char *path, const char *want);
/* "parent.key" (or "key" with no parent) into buf. */
const char *tp_path(char *buf, const char *parent, const char *key);
/* "parent[i]" into buf. */
const char *tp_index(char *buf, const char *parent, size_t i);

/* Unknown keys (with a did-you-mean) and non-scalar keys; returns -1 if any. */
int tp_check_keys(struct tparse *p, const struct ynode *map, const char *path,
                  const char *const *known, size_t nknown);
/* Reports a key as unknown; `what` names the mapping ("field", "resources field"). */
int tp_unknown_key(struct tparse *p, const struct ynode *key, const char *path,
                   const char *const *known, size_t nknown);

/* A string scalar (quoted, or plain text that is not null/bool/number). */
int tp_str(struct tparse *p, const struct ynode *n, const char *path, char **out);
/* Any non-null scalar as its text: env values, where 8 and true mean "8" and "true". */
int tp_scalar_text(struct tparse *p, const struct ynode *n, const char *path, char **out);
int tp_bool(struct tparse *p, const struct ynode *n, const char *path, int *out);
int tp_long(struct tparse *p, const struct ynode *n, const char *path, long min, long max,
            long *out);
/* A list of strings (or one string when single_ok). */
int tp_strlist(struct tparse *p, const struct ynode *n, const char *path, int single_ok,
               char ***out, size_t *nout);
int tp_mapping(struct tparse *p, const struct ynode *n, const char *path);
/* A mapping of names to string values into kvs; null values allowed when nulls_ok. */
int tp_kvs(struct tparse *p, const struct ynode *n, const char *path, int env_names, int nulls_ok,
           int coerce, struct task_kvs *kvs);
/* Checks a free-form node: mapping keys must be scalars, all the way down. */
int tp_freeform(struct tparse *p, const struct ynode *n, const char *path);

void tp_strv_free(char **v, size_t n);
/* 1 if s matches ^[a-zA-Z_][a-zA-Z0-9_]*$ */
int task_env_name_ok(const char *s);
/* 1 when NAME=VALUE fits in one environment entry (TASK_ENV_ENTRY_MAX, lib/task.h). */
int task_env_entry_fits(const char *name, const char *value);

/* lib/task_resources.c */
/* task_subst_vars() into t's file_mounts, workdir, volumes and service; relative mount
 * destinations under ~/sky_workdir (lib/task_subst.c). */
void task_fill_env_vars(struct task_list *l, struct task *t);
int task_parse_resources(struct tparse *p, const struct ynode *node, struct task *t);
void task_resources_release(struct task_resources *r);

/*
 * lib/task_values.c: the value forms shared with the CLI overrides. On failure they
 * return -1 and put a reason ("must be a number like 4 or 4+") in why.
 */
int task_amount_parse(const char *text, int memory, struct task_amount *out, char *why,
                      size_t whysize);
int task_accel_parse(const char *text, struct task_accel *out, char *why, size_t whysize);
/* Whether count is an accelerator count: more than 0, at most TASK_ACCEL_COUNT_MAX. */
int task_accel_count_ok(double count);
/*
 * An accelerator chosen by its memory, SkyPilot's forms: "80GB+" (at least), "24GB"
 * (exactly), "24GB:2" (a count), "nvidia:80GB+" or "NVIDIA:80GB:8" (a manufacturer). The
 * memory is [0-9]+ then GB, MB or TB (any case), a whole number of GB, with an optional
 * '+'; a count is a whole number. Returns 0 when text is not such a form (a name, for
 * task_accel_parse()); 1 with every device of SkyPilot's catalog that fits in *out (n of
 * them, each with the count; the caller frees names and array); -1 on a bad form or
 * when no device fits, with why.
 */
int task_accel_memory_parse(const char *text, struct task_accel **out, size_t *n, char *why,
                            size_t whysize);
/* A size: a number of GiB, or with a unit ("512MB", "1TB"), into GiB. */
int task_size_parse(const char *text, double *gib);
/*
 * Autostop minutes: "10", or a time with a unit: "30s" (rounded up), "10m", "1h", "2d",
 * "1w"; at most TASK_AUTOSTOP_MINUTES_MAX.
 */
int task_minutes_parse(const char *s, long *out);

/* lib/task_runtime_env.c */
int task_parse_runtime_env(struct tparse *p, const struct ynode *node, struct task_runtime_env *rt);
void task_runtime_env_release(struct task_runtime_env *rt);

#endif
