#ifndef SKIFF_CONFIG_H
#define SKIFF_CONFIG_H

/*
 * SkyPilot's config (~/.sky/config.yaml), layered as SkyPilot layers it
 * (docs/config.md):
 *
 *   1. the config file: $SKIFF_CONFIG, else $SKIFF_HOME/config.yaml, else (when skiff has
 *      none) SkyPilot's ~/.sky/config.yaml, read as it is
 *   2. the task's `config:` (only the keys SkyPilot lets a task set)
 *   3. each --config: a file, or KEY=VALUE pairs with dotted keys ("a.b=1,c.d=[x, y]")
 *
 * A later layer wins key by key: mappings merge, everything else is replaced; under
 * kubernetes.pod_config and kubernetes.custom_metadata lists merge as Kubernetes patches
 * do (SkyPilot's merge_k8s_configs(): the one container merges, lists keyed by name merge
 * by name, other lists are appended).
 *
 * Every key SkyPilot knows is accepted. Those skiff honours are docker.run_options,
 * kubernetes.pod_config, kubernetes.custom_metadata, kubernetes.provision_timeout,
 * slurm.sbatch_options, slurm.quota and the cpus and memory of jobs.controller.resources;
 * every other one is reported once (config_warn_ignored()) with why. Unknown keys are
 * errors with a did-you-mean. Like the task parser, nothing here prints: errors and
 * warnings go to a struct yerrors with the file, line and column they came from.
 *
 * Ownership: a struct cfg_node tree owns its strings and children; cfg_free() frees it.
 */

#include <stddef.h>

#include "lib/yaml.h"

#define CONFIG_ENV "SKIFF_CONFIG"  /* names the config file instead of the default */
#define CONFIG_FILE "config.yaml"  /* in $SKIFF_HOME, and SkyPilot's in ~/.sky */
#define CONFIG_CLI_NAME "--config" /* the "file" of KEY=VALUE layers in messages */
#define CONFIG_MAX_LAYERS 32       /* --config flags on one command */
#define CONFIG_MAX_WORDS 1024      /* words of docker.run_options, slurm options */

enum cfg_kind { CFG_SCALAR, CFG_SEQ, CFG_MAP };

struct cfg_node {
	enum cfg_kind kind;
	char *value;             /* scalar: its text */
	int plain;               /* scalar written without quotes: null, bool and numbers resolve */
	struct cfg_node **items; /* seq: items; map: key, value, key, value, ... */
	size_t n;
	char *file; /* where it was written */
	int line, col;
};

void cfg_free(struct cfg_node *n);
/* A deep copy of a YAML node (file names it); NULL for NULL. */
struct cfg_node *cfg_from_ynode(const struct ynode *n, const char *file);
/* A deep copy; NULL for NULL. */
struct cfg_node *cfg_dup(const struct cfg_node *n);
/* The node at a dotted path ("docker.run_options"), or NULL. */
const struct cfg_node *cfg_get(const struct cfg_node *root, const char *path);

/* Which keys a layer may set: a config file (or --config) may set all of them. */
enum config_where { CONFIG_IN_FILE, CONFIG_IN_TASK };

/*
 * Checks one layer (a mapping, or NULL for none): unknown keys (with a did-you-mean),
 * types of the keys skiff honours, and in a task the keys SkyPilot does not let a task
 * set. Returns 0, or -EINVAL with errors added.
 */
int config_validate(const struct cfg_node *root, enum config_where where, struct yerrors *errs);

/*
 * Merges over into *base (both consumed: *base becomes the result). Mappings merge key by
 * key; anything else is replaced by over's value; kubernetes.pod_config and
 * kubernetes.custom_metadata merge as Kubernetes patches (config_k8s_merge()).
 */
void cfg_merge(struct cfg_node **base, struct cfg_node *over);
/* SkyPilot's merge of a pod spec fragment into a pod spec (over is copied, not consumed). */
void config_k8s_merge(struct cfg_node *base, const struct cfg_node *over);

/*
 * Loads a config file: a YAML mapping (an empty file is no config: *out NULL). Returns 0,
 * or -EINVAL (bad YAML, not a mapping, bad keys) / -errno (unreadable) with an error
 * added. The layer is validated as a config file.
 */
int config_load_file(const char *path, struct cfg_node **out, struct yerrors *errs);
/*
 * The config file in effect (caller frees): $SKIFF_CONFIG, else $SKIFF_HOME/config.yaml
 * when it exists, else ~/.sky/config.yaml when that exists, else NULL (no config file).
 * An $SKIFF_CONFIG that does not exist is still returned (loading it is an error).
 */
char *config_file_path(void);

/*
 * One --config value: an existing file, else KEY=VALUE pairs separated by commas (commas
 * inside [], {} or quotes do not separate), each VALUE read as YAML ("600" a number,
 * "[a, b]" a list). The result is merged into *layers. Returns 0, or -EINVAL / -errno with
 * errors added (positions: CONFIG_CLI_NAME:1:COL, or the file's).
 */
int config_add_cli(struct cfg_node **layers, const char *arg, struct yerrors *errs);

/* The tree as JSON (scalars that are plain numbers, bools or null as such); caller frees. */
char *config_to_json(const struct cfg_node *root);
/* Back from config_to_json() text (name is the "file" in errors). 0, or -EINVAL. */
int config_from_json(const char *text, const char *name, struct cfg_node **out,
                     struct yerrors *errs);

/*
 * Reports every key of the merged config that skiff accepts and ignores, once each, as a
 * warning at the place it was written: "config key 'aws' is ignored: only a cloud ...".
 * seen (may be NULL) remembers what was reported across calls: a NULL-terminated array
 * the caller frees with config_seen_free().
 */
void config_warn_ignored(const struct cfg_node *root, char ***seen, struct yerrors *errs);
void config_seen_free(char **seen);

/*
 * Splits s into words as a shell would (blanks separate; '...' and "..." quote; a
 * backslash escapes), with no expansion of any kind. Returns the number of words added to
 * *words (grown; NULL-terminated), or -EINVAL with *why set (an unclosed quote).
 */
int config_split_words(const char *s, char ***words, size_t *n, const char **why);

/*
 * What skiff does with the config, each a NULL-terminated malloc'd array of words (the
 * caller frees with config_words_free()); NULL when there is nothing to add:
 *   docker.run_options, split into words: extra options of `podman/docker run`
 *   slurm.sbatch_options (--KEY=VALUE, --KEY for true or null, nothing for false) and
 *   slurm.quota (--qos=QUEUE, --account=ACCOUNT): extra options of salloc
 */
char **config_run_options(const struct cfg_node *root);
char **config_slurm_options(const struct cfg_node *root);
void config_words_free(char **words);
/* kubernetes.provision_timeout in seconds, or def when not set. */
long config_k8s_provision_timeout(const struct cfg_node *root, long def);
/*
 * A pod manifest with kubernetes.pod_config merged into it and custom_metadata into its
 * metadata (config_k8s_merge()): manifest_json in, JSON out (caller frees); a copy of the
 * manifest when root sets neither.
 */
char *config_k8s_pod(const struct cfg_node *root, const char *manifest_json);
/*
 * jobs.controller.resources: *cpus (vCPUs) and *memory_gib, each 0 when not set (the
 * number of "4" and of "4+").
 */
void config_controller_resources(const struct cfg_node *root, double *cpus, double *memory_gib);
/*
 * jobs.controller.resources.infra: where the managed-jobs controller runs
 * (docs/managed-jobs.md). NULL for this machine: not set, null, or "local".
 */
const char *config_controller_infra(const struct cfg_node *root);
/*
 * jobs.controller.resources.image_id ("docker:IMAGE": the controller's cluster is a
 * container or a pod of that image), or NULL. Points into root.
 */
const char *config_controller_image(const struct cfg_node *root);
/*
 * jobs.controller.task_logs_gc_retention_hours: how long the controller keeps an ended
 * managed job's task logs (fractions allowed; negative: for ever), or def when not set.
 */
double config_task_logs_retention_hours(const struct cfg_node *root, double def);

/* ---- the layers a command runs with -------------------------------------------------- */

struct task;
struct task_list;
struct task_overrides;

struct config_layers {
	struct cfg_node *file; /* the config file's layer (or the frozen one); NULL: none */
	struct cfg_node *cli;  /* every --config, merged in order; NULL: none */
	char **seen;           /* ignored keys already reported (config_warn_ignored()) */
};

#define CONFIG_LAYERS_INIT                                                                         \
	{                                                                                          \
		NULL, NULL, NULL                                                                   \
	}

/*
 * Reads the config file (config_file_path()) and o's --config flags, or, when o holds
 * frozen layers (a managed job's), those. o may be NULL. Returns 0, or -EINVAL / -errno
 * with errors added.
 */
int config_layers_load(struct config_layers *L, const struct task_overrides *o,
                       struct yerrors *errs);
/*
 * The config task t runs with: the file's layer, then t's config:, then --config (NULL
 * when none sets anything; t may be NULL; file names t's file in messages). Ignored keys are
 * reported (once per L) as warnings. The caller frees *out with cfg_free(). Returns 0, or -EINVAL.
 */
int config_for_task(struct config_layers *L, const struct task *t, const char *file,
                    struct cfg_node **out, struct yerrors *errs);
/* Stores the layers into o->config_file and o->config_cli (JSON) for a managed job. */
void config_layers_freeze(const struct config_layers *L, struct task_overrides *o);
void config_layers_release(struct config_layers *L);
/*
 * All of the above for a command that runs task tl->tasks[i] (tl may be NULL: no task;
 * i CONFIG_ALL_TASKS: each of them is checked, *out is the first's): the config it runs
 * with into *out (may be NULL; *out NULL: none), errors and warnings printed on stderr.
 * With freeze set (jobs launch), o's frozen layers are set for the job's row. Returns 0,
 * or -EINVAL (a bad config: printed).
 */
#define CONFIG_ALL_TASKS ((size_t)-1)
int config_resolve(struct task_overrides *o, const struct task_list *tl, size_t i, int freeze,
                   struct cfg_node **out);

#endif
