#ifndef SKIFF_TASK_H
#define SKIFF_TASK_H

/*
 * SkyPilot task YAMLs: parsing, validation, CLI overrides and the normalized JSON form.
 * docs/task-yaml.md is the user-facing reference for every field.
 *
 * A file is a pipeline (struct task_list) of one task per YAML document; a first document
 * holding only `name:` names the pipeline. Parsing is strict like SkyPilot's schema:
 * unknown keys are errors (with a did-you-mean), types are checked exactly, and a file
 * that is some other kind of YAML (a Kubernetes manifest, a SkyPilot config, ...) is
 * refused with a message saying what it looks like. Every error carries the file, line
 * and column and is collected in a struct yerrors; nothing here prints, exits or aborts
 * on bad input, so task_parse_buf() is safe to fuzz.
 *
 * Ownership: a task_list owns its tasks, every string in them, and the YAML tree that
 * free-form fields (`config`, `service`, storage mounts, ...) point into as
 * `const struct ynode *`. task_list_release() frees all of it. Tasks never outlive it.
 */

#include <stddef.h>

#include "lib/json.h"
#include "lib/yaml.h"

#define TASK_MAX_ALTERNATIVES 64 /* resource alternatives after any_of/ordered expansion */
#define TASK_MAX_NODES 100000    /* num_nodes */
/* Where a task's workdir lands on a node, and a relative file_mounts path under it. */
#define TASK_WORKDIR_ON_NODE "~/sky_workdir"
/*
 * Characters in a task's or a pipeline's name (name:, -n/--name): SkyPilot sets no limit;
 * this one keeps a name within one file name's length, should it ever become one.
 */
#define TASK_NAME_MAX 255
/* Characters in an infra spec (resources.infra, --infra): k8s/CONTEXT/NAMESPACE and all. */
#define TASK_INFRA_MAX 256
/*
 * Accelerators of one kind on a node. The count is a double (SkyPilot allows fractions,
 * "A100:0.5") that the launcher and the scheduler round up to an int; past this it could
 * not be one.
 */
#define TASK_ACCEL_COUNT_MAX 65536
/*
 * cpus, and memory in GiB (per CPU for "4x"): no machine has more, and every product of
 * the two still fits what callers convert them to (MiB in a long, for salloc --mem).
 */
#define TASK_AMOUNT_MAX 1e6
/* What a job asks one node for when its task says nothing about CPUs (SkyPilot's 0.5). */
#define TASK_DEFAULT_CPUS 0.5
#define TASK_ENV_FILE_MAX ((size_t)1 << 20) /* bytes in an --env-file */
/*
 * One environment entry, NAME=VALUE and its NUL: the kernel's MAX_ARG_STRLEN (32 pages of
 * 4 KiB). exec refuses a larger one ("Argument list too long"), for the job's shell and
 * for every program it starts, so such a value is refused where it is given.
 */
#define TASK_ENV_ENTRY_MAX ((size_t)128 << 10)

/* A key and its string value: envs, secrets, labels, runtime_env.env_vars. */
struct task_kv {
	char *key;
	char *value;   /* NULL: YAML null, a value that must be supplied (--env K=V) */
	int line, col; /* where it was written; 0 when set by an override */
};

struct task_kvs {
	struct task_kv *v;
	size_t n;
};

/* The entry for key, or NULL. */
struct task_kv *task_kvs_get(const struct task_kvs *kvs, const char *key);
/* Sets key to a copy of value (NULL allowed), replacing an existing entry in place. */
void task_kvs_set(struct task_kvs *kvs, const char *key, const char *value, int line, int col);
void task_kvs_release(struct task_kvs *kvs);

/* cpus and memory: "4" exactly, "4+" at least, memory "4x" per CPU. */
enum task_amount_mode { TASK_EXACT, TASK_AT_LEAST, TASK_PER_CPU };

struct task_amount {
	char *text;   /* canonical text ("4", "0.5+", "4x"); NULL: not set */
	double value; /* > 0, at most TASK_AMOUNT_MAX; memory in GiB */
	enum task_amount_mode mode;
};

struct task_accel {
	char *name;   /* as written ("H100", "tpu-v5litepod-16"); NULL: no accelerator */
	double count; /* > 0; fractional counts share a device */
};

struct task_port_range {
	int lo, hi; /* 1..65535, lo <= hi */
};

struct task_job_recovery {
	int set;
	char *strategy; /* upper-case (FAILOVER, EAGER_NEXT_REGION, NONE), or NULL: default */
	long max_restarts_on_errors; /* 0 unless given */
	int *exit_codes;             /* recover_on_exit_codes, 0..255 */
	size_t nexit_codes;
};

#define TASK_AUTOSTOP_DEFAULT_MINUTES 5
/*
 * The longest autostop idle time, wherever it is set (launch -i, autostop -i, node
 * autostop, resources.autostop, the node's autostop request): ten years of minutes. An
 * int holds it, and so does an int64 of milliseconds after now (the node's deadline).
 */
#define TASK_AUTOSTOP_MINUTES_MAX 5256000

/* Whether m is an autostop idle time: finite, 0..TASK_AUTOSTOP_MINUTES_MAX (not NaN). */
int task_autostop_minutes_valid(double m);

/* Whether s is one of autostop's wait_for modes: jobs_and_ssh, jobs, none. */
/*
 * Whether infra spec s names a cloud the task language knows (its first part, any case;
 * "*" for any): 1, else 0 with *suggest the nearest known name or NULL. The config's
 * jobs.controller.resources.infra is read so, as a task's resources.infra is.
 */
int task_infra_known(const char *s, const char **suggest);
int task_wait_for_valid(const char *s);

struct task_autostop {
	int set;
	int enabled; /* `false` turns autostop off */
	long idle_minutes;
	int down;          /* tear down instead of stopping */
	char *wait_for;    /* "jobs_and_ssh", "jobs", "none"; NULL: default */
	char *hook;        /* script run before stopping */
	long hook_timeout; /* seconds; 0: default */
};

/* Fields of one resource alternative written in the YAML or by overrides. */
enum task_res_field {
	TR_INFRA = 1 << 0,
	TR_CLOUD = 1 << 1,
	TR_REGION = 1 << 2,
	TR_ZONE = 1 << 3,
	TR_CPUS = 1 << 4,
	TR_MEMORY = 1 << 5,
	TR_ACCELERATORS = 1 << 6,
	TR_INSTANCE_TYPE = 1 << 7,
	TR_USE_SPOT = 1 << 8,
	TR_DISK_SIZE = 1 << 9,
	TR_DISK_TIER = 1 << 10,
	TR_NETWORK_TIER = 1 << 11,
	TR_PORTS = 1 << 12,
	TR_IMAGE_ID = 1 << 13,
	TR_LABELS = 1 << 14,
	TR_ACCELERATOR_ARGS = 1 << 15,
	TR_JOB_RECOVERY = 1 << 16,
	TR_AUTOSTOP = 1 << 17,
	TR_PRIORITY = 1 << 18,
	TR_VOLUMES = 1 << 19,
	TR_EXTRA = 1 << 20, /* one of `extra` below */
};

/* A field SkyPilot accepts that skiff keeps without interpreting (max_hourly_cost, ...). */
struct task_extra {
	char *key;
	const struct ynode *value;
};

/* One resource alternative, with the shared fields of `resources` merged in. */
struct task_resources {
	unsigned set;                /* enum task_res_field bits */
	int line, col;               /* where this alternative was written */
	char *infra;                 /* "aws/us-east-1", "k8s/ctx", "ssh/pool", "*"...; NULL: any */
	char *cloud, *region, *zone; /* from infra, or the old separate fields */
	struct task_amount cpus, memory;
	struct task_accel accel;
	char *instance_type;
	int use_spot;       /* 0 or 1 (0 unless TR_USE_SPOT) */
	long disk_size;     /* GiB; 0: default */
	char *disk_tier;    /* low, medium, high, ultra, best (lower-case) */
	char *network_tier; /* standard, best */
	struct task_port_range *ports;
	size_t nports;
	char *image_id; /* one image for all regions ("docker:IMG" runs in a container) */
	struct task_kvs image_by_region; /* region -> image, the per-region form */
	struct task_kvs labels;
	const struct ynode *accelerator_args; /* validated mapping, kept */
	struct task_job_recovery job_recovery;
	struct task_autostop autostop;
	long priority;               /* -1000..1000; 0 unless TR_PRIORITY */
	const struct ynode *volumes; /* resources.volumes: list of mappings, kept */
	struct task_extra *extra;
	size_t nextra;
};

enum task_workdir_kind { TASK_WORKDIR_NONE, TASK_WORKDIR_PATH, TASK_WORKDIR_GIT };

struct task_workdir {
	enum task_workdir_kind kind;
	char *path;      /* PATH: local directory as written (may start with ~ or hold $VARS) */
	char *url, *ref; /* GIT: repository URL and optional ref */
	int line, col;   /* where the YAML set it; 0: --workdir, or none */
};

/* file_mounts: one entry per remote path. */
struct task_mount {
	char *dst;                   /* path on the node */
	char *src;                   /* local path or bucket URL; NULL for a storage mount */
	const struct ynode *storage; /* {name, source, store, mode, persistent, ...}, kept */
	int line, col;
};

/* runtime_env.pip or runtime_env.uv */
struct task_pkgs {
	int set;
	char **packages; /* requirement specifiers */
	size_t npackages;
	char *requirements;     /* a requirements file instead of (or besides) packages */
	int req_line, req_col;  /* where requirements was given */
	int check;              /* pip_check / uv_check: -1 unset, 0, 1 */
	char *version;          /* pip_version / uv_version specifier */
	char **install_options; /* uv_pip_install_options */
	size_t ninstall_options;
};

#define TASK_SETUP_TIMEOUT_DEFAULT 600

/* Ray's runtime_env schema plus skiff's `python`. */
struct task_runtime_env {
	int set;
	int line, col;
	struct task_pkgs pip, uv; /* at most one is set */
	char *working_dir;
	char **py_modules;
	size_t npy_modules;
	struct task_kvs env_vars;
	long setup_timeout_seconds; /* > 0, or -1: no timeout; default 600 */
	int eager_install;          /* default 1 */
	char *python; /* interpreter path or version ("3.12"); NULL: the node's python3 */
};

struct task {
	int line, col; /* start of its document */
	char *name;
	struct task_workdir workdir;
	long num_nodes;             /* >= 1 */
	struct task_resources *res; /* >= 1 alternatives */
	size_t nres;
	int res_ordered; /* 1: alternatives in preference order; 0: any of them */
	struct task_kvs envs;
	struct task_kvs secrets; /* never printed in clear */
	struct task_mount *mounts;
	size_t nmounts;
	char *setup, *run; /* bash scripts; NULL when absent */
	char *event_callback;
	struct task_runtime_env runtime_env;
	/* Kept as written (validated to be the right kind of node): */
	const struct ynode *config, *service, *pool, *volumes, *volume_mounts;
	const struct ynode *inputs, *outputs, *file_mounts_mapping, *metadata;
	const struct ynode *managed_secrets;
	int api_server_access; /* -1 unset */
	/* In a job group (struct task_list.parallel): */
	int primary;              /* 1: a primary task (the default); 0: auxiliary */
	long termination_delay_s; /* after the primaries end, before this one is cancelled */
};

/*
 * A pipeline: the tasks of one file, run in order. Or a job group (SkyPilot's JobGroup):
 * a first document `name: G`, `execution: parallel`, optional `primary_tasks: [names]` and
 * `termination_delay` (a duration, or a mapping of task names and `default` to durations),
 * then tasks, each named, names unique; they run at once, as managed jobs of their own
 * (`execution: serial` is the pipeline). Then parallel is set, name is the group's, and
 * each task's primary and termination_delay_s say what the header did.
 */
struct task_list {
	char *file; /* the name given to the parser */
	char *name; /* pipeline name (first document holding only `name:`), else task's */
	struct task **tasks;
	size_t n;
	struct ystream yaml; /* owns the nodes tasks point into */
	int parallel;        /* a job group */
};

#define TASK_LIST_INIT                                                                             \
	{                                                                                          \
		NULL, NULL, NULL, 0, YSTREAM_INIT, 0                                               \
	}

/*
 * The longest termination_delay of a job group: a day. A delay is for a service to
 * finish its work after the primaries end, not a way to keep it running on its own.
 */
#define TASK_GROUP_DELAY_MAX_S 86400L
/*
 * A job group's termination_delay text: whole seconds ("30", "30s"), minutes ("5m") or
 * hours ("1h"), at most TASK_GROUP_DELAY_MAX_S. 0 with *secs, or -1.
 */
int task_delay_parse(const char *s, long *secs);
/*
 * Keeps only task i of l (the others freed): the one-task job a job group's member runs
 * as. l->parallel and l->name stay. 0, or -EINVAL when i is out of range (l unchanged).
 */
int task_list_keep(struct task_list *l, size_t i);

/*
 * Parses a task file held in memory. `name` is used in errors. Returns 0, or -EINVAL
 * with errors in errs (and *out empty). Warnings may be added on success.
 */
int task_parse_buf(struct task_list *out, const char *name, const char *data, size_t len,
                   struct yerrors *errs);
/*
 * Reads and parses a file ("-" is standard input). Returns 0; -EINVAL when the file is
 * not a valid task file (a directory, too large, bad YAML, bad task); or a negative errno
 * when it cannot be read at all (-ENOENT, -EACCES). An error is added in every case.
 */
int task_parse_file(struct task_list *out, const char *path, struct yerrors *errs);
/* The entry point given as a shell command instead of a YAML file: one task, run = cmd. */
void task_from_command(struct task_list *out, const char *cmd);
/* No entry point: one task with no setup and no run (a cluster of the flags' resources). */
void task_empty(struct task_list *out);
/* 1 if a launch entry point names a YAML file (ends in .yaml/.yml or is an existing file). */
int task_entrypoint_is_yaml(const char *entrypoint);
void task_list_release(struct task_list *l);

/* ---- CLI overrides ------------------------------------------------------------------ */

struct task_overrides {
	struct task_kvs envs;    /* --env, --env-file; values never NULL */
	struct task_kvs secrets; /* --secret, --secret-file */
	/* Keys given by --env and --secret (values unused): a file never replaces them. */
	struct task_kvs env_flags, secret_flags;
	long num_nodes; /* 0: not given */
	char *cpus, *memory, *gpus, *workdir, *name;
	char *git_url, *git_ref; /* --git-url, --git-ref: a git workdir */
	/*
	 * The other resource flags (--image-id, --use-spot, --instance-type, --cloud,
	 * --region, --zone, --disk-size, --disk-tier, --network-tier, --ports): each the
	 * resources field it sets (key) and its value as a YAML scalar or flow list (value),
	 * read by the task parser itself, so that a flag is checked as the field is.
	 */
	struct task_kvs res;
	/* --config: each a config file or KEY=VALUE pairs, in the order given (lib/config.h). */
	char **config;
	size_t nconfig;
	/*
	 * The config layers in effect when a managed job was submitted, as JSON
	 * (config_layers_freeze(), lib/config.h): the config file's and the --config flags'.
	 * NULL: not frozen (read the file and the flags).
	 */
	char *config_file, *config_cli;
	/*
	 * Where a remote managed-jobs controller put the job's local files (the two-hop of
	 * docs/managed-jobs.md): each path_from[k] (a workdir path or a file_mounts source as
	 * the task gives it once its envs are filled in; "git:URL@REF" for a git workdir) is
	 * replaced by path_to[k]. Only set by `jobs launch`, kept in the encoded overrides.
	 */
	char **path_from, **path_to;
	size_t npaths;
};

#define TASK_OVERRIDES_INIT                                                                        \
	{                                                                                          \
		0                                                                                  \
	}

/* Help lines for the flags task_overrides_arg() takes, to paste into a usage text. */
#define TASK_OVERRIDES_HELP                                                                        \
	"  --env K=V, --env K     set env K (the second form takes the value from skiff's\n"       \
	"                         own environment); replaces the YAML's value\n"                   \
	"  --env-file FILE        set envs from a dotenv file (KEY=VALUE lines, # comments)\n"     \
	"  --secret K=V, --secret K\n"                                                             \
	"                         like --env, for a secret (never printed)\n"                      \
	"  --secret-file FILE     set secrets from a dotenv file; --env and --secret win over\n"   \
	"                         a file's value whatever the order\n"                             \
	"  --num-nodes N          number of nodes\n"                                               \
	"  --cpus C               vCPUs per node: 4 exactly, 4+ at least\n"                        \
	"  --memory M             memory per node in GiB: 16, 16+, 4x (per vCPU)\n"                \
	"  --gpus G               accelerators per node, NAME[:COUNT] (H100:2)\n"                  \
	"  --workdir DIR          working directory to sync to the nodes\n"                        \
	"  --git-url URL, --git-ref REF\n"                                                         \
	"                         the workdir is that repository's tree at REF (default HEAD)\n"   \
	"  -n, --name NAME        task name (or the pipeline's)\n"                                 \
	"  --config FILE|KEY=VALUE[,KEY=VALUE]\n"                                                  \
	"                         a config layered over the config file and the task's\n"          \
	"                         config: (docs/config.md); repeatable\n"

/*
 * Takes an override flag at argv[*i]: --env K=V | --env K (value from our environment),
 * --env-file FILE, --secret K=V | --secret K, --num-nodes N, --cpus C, --memory M,
 * --gpus G, --workdir DIR, -n/--name NAME, --config C (kept as given: lib/config.h reads
 * it); each also as --flag=VALUE. Returns 1 if
 * taken, with *i moved past the flag and its value (to the next argument to look at);
 * 0 if argv[*i] is not an override flag (*i unchanged); -1 on a bad or missing value
 * (already reported with error()).
 */
int task_overrides_arg(struct task_overrides *o, int argc, char **argv, int *i);
void task_overrides_release(struct task_overrides *o);
/* Adds a path_from -> path_to pair (copied). */
void task_overrides_map_path(struct task_overrides *o, const char *from, const char *to);
/* The path_from key of a git workdir: "git:URL@REF" (REF "" when none); a new string. */
char *task_git_key(const struct task_workdir *w);
/*
 * The overrides as data (for the managed-jobs table): fields env and secret ("K=V"),
 * num_nodes, cpus, memory, gpus, workdir, name, config_file and config_cli (the frozen
 * config; --config itself is not kept) and the path map (path_from, path_to), appended to m
 * (lib/proto.h); and back (o is released first). 0 or -1 (printed) for what was not written by
 * _encode().
 */
struct msg;
void task_overrides_encode(const struct task_overrides *o, struct msg *m);
/* Sets dst's fields that src has set (TR_* in src->set) among those the resource flags
 * set (struct task_overrides.res): infra and cloud/region/zone together, instance_type,
 * use_spot, disk_size, disk_tier, network_tier, ports, image_id. */
void task_resources_override(struct task_resources *dst, const struct task_resources *src);
int task_overrides_decode(struct task_overrides *o, const char *data, size_t len);

/*
 * Applies overrides to every task (envs and secrets are added or replaced; resource
 * flags apply to every alternative), then fills the task's envs and secrets into its
 * file_mounts, workdir, volumes and service (task_subst_vars()) and puts a relative
 * file_mounts destination under ~/sky_workdir, as SkyPilot does; call it once per parse,
 * with empty overrides too. A pipeline of several tasks takes only --env, --env-file,
 * --secret and --name: other flags are an error there. Returns 0 or -EINVAL.
 */
int task_list_apply_overrides(struct task_list *l, const struct task_overrides *o,
                              struct yerrors *errs);
/*
 * SkyPilot's substitution of a task's envs and secrets (secrets win) in s: `${NAME}` and
 * `$NAME` whose NAME has a value are replaced (the braces are optional on either side, as
 * in SkyPilot's pattern), anything else is left as written. A new string.
 * task_list_apply_overrides() applies it to file_mounts, workdir, volumes and service.
 */
char *task_subst_vars(const char *s, const struct task_kvs *envs, const struct task_kvs *secrets);
/*
 * Reports envs and secrets that are still null (each at its line): errors, or warnings
 * when as_warnings is set. Returns the number found.
 */
size_t task_list_check_required(const struct task_list *l, struct yerrors *errs, int as_warnings);
/*
 * The local sources of every task, as launch will read them (lib/task_paths.c): a workdir
 * path must be a readable directory, a file_mounts source that is a local path a readable
 * file or directory. A bucket URL, a storage mount and a git workdir are not looked at.
 * One error per bad path, at the YAML position that set it (TASK_PATHS_FLAG_FILE:1:1 for
 * --workdir), naming the path ('~' expanded) and why. Call it after
 * task_list_apply_overrides(), where the task is accepted locally (check, launch, exec,
 * jobs launch), never where paths are another machine's. Returns the number of errors.
 */
#define TASK_PATHS_FLAG_FILE "--workdir"
size_t task_list_check_paths(const struct task_list *l, struct yerrors *errs);

/* ---- consumers ---------------------------------------------------------------------- */

/*
 * Names of the resource fields the task sets (in any alternative) that only a cloud can
 * honour and that an infra which honours the TR_* fields in `honours` ignores, e.g.
 * "instance_type", "use_spot", "image_id" (honoured as TR_IMAGE_ID only for a container
 * image, docker:IMAGE), and any key skiff does not know. TASK_HONOURS_ALL: a cloud, none.
 * Up to max names go to names[]; returns how many there are.
 */
#define TASK_HONOURS_ALL (~0u)
size_t task_cloud_only_fields(const struct task *t, unsigned honours, const char **names,
                              size_t max);
/*
 * The task-level fields this task sets that nothing here acts on, on an infra honouring
 * `honours` (TR_* bits, as task_cloud_only_fields()): "service (why)", ... into names
 * (up to max); returns how many there are.
 */
size_t task_unhonoured_fields(const struct task *t, unsigned honours, const char **names,
                              size_t max);
/*
 * The ports of have ("8080,9000-9002"; NULL or "" for none; malformed parts dropped) and
 * add[0..nadd), sorted, overlapping and adjacent ranges merged, in the same text form
 * (malloc'd; "" for none).
 */
char *task_ports_union(const char *have, const struct task_port_range *add, size_t nadd);
/*
 * The ranges of a port list in that text form ("8080,9000-9002"), malformed parts
 * dropped, into v[0..cap): how many there are (more than cap: only cap were stored).
 */
size_t task_ports_parse(const char *text, struct task_port_range *v, size_t cap);
/* 1 if port is in the port list text (as task_ports_parse() reads it). */
int task_ports_has(const char *text, long port);
/* 1 if image_id names a container image ("docker:IMAGE"). */
int task_image_is_docker(const char *image_id);

/* Writes the normalized task as one JSON object; secrets are "<redacted>". */
void task_json(const struct task *t, struct json *j);
/* Writes the members "name" (the pipeline's) and "tasks" into the object j has open. */
void task_list_json(const struct task_list *l, struct json *j);
/* Writes a kept YAML node as JSON (aliases expanded). */
void task_json_node(const struct ynode *n, struct json *j);

#endif
