#ifndef SKIFF_INFRA_H
#define SKIFF_INFRA_H

/*
 * Infras: where a cluster's nodes come from, and how the launcher picks and reaches them.
 *
 *   local       nodes are private directories on this machine ($SKIFF_HOME/local/C/RANK),
 *               each with its own supervisor; the default when neither --infra nor the
 *               task's resources.infra says otherwise (docs/infra-local.md)
 *   ssh/POOL    hosts of an SSH node pool, listed in the pool file in SkyPilot's
 *               ssh_node_pools.yaml format; `ssh` alone names the only pool there is
 *               (docs/infra-ssh.md)
 *   podman[/POOL], docker[/POOL]
 *               containers of the local engine: running ones labelled skiff.pool=POOL
 *               (or named POOL), or new ones skiff starts from the task's image_id
 *               docker:IMAGE with `skiff init` as PID 1 (infra_container.c,
 *               docs/infra-podman.md)
 *   k8s[/CONTEXT[/NAMESPACE]]
 *               pods, reached with kubectl exec: running ones labelled skiff.node, or
 *               new ones from the task's image (infra_k8s.c, docs/infra-k8s.md)
 *   slurm[/PARTITION]
 *               the nodes of one Slurm allocation (salloc --no-shell), reached with
 *               srun --overlap (infra_slurm.c, infra_slurm.h, docs/infra-slurm.md)
 *
 * Cloud names are recognised and refused with a message saying what to use
 * instead (-ENOTSUP).
 *
 * Resources (cpus, memory, accelerators) are not checked here: skiff learns a node's
 * resources from its supervisor, so the launcher checks the task's request after
 * bootstrap with `skiff node status --json` on each node.
 *
 * Functions print their errors (pool file errors as FILE:LINE:COL: message, like the task
 * parser) and return 0 or a negative errno; the codes they return are listed with each.
 */

#include <stddef.h>
#include <stdint.h>

#include "bootstrap/infra/runner.h"
#include "lib/buf.h"
#include "lib/yaml.h"
#include "state/launcher.h"

/*
 * The longest cluster name: a DNS label's and a Kubernetes label value's limit, as the
 * name is a label value of the pods and containers skiff starts (docs/cli.md).
 */
#define INFRA_CLUSTER_NAME_MAX 63
/* The longest infra spec infra_parse() takes: TASK_INFRA_MAX, the task's (lib/task.h). */
#define INFRA_SPEC_MAX 256
/* A hostname or pod name made of a cluster name: a DNS label, [a-z0-9-], at most 63. */
#define INFRA_DNS_LABEL_MAX 63
#define INFRA_DNS_HASH_LEN 8
#define INFRA_POOLS_ENV "SKIFF_SSH_NODE_POOLS" /* overrides the pool file's path */
#define INFRA_POOLS_FILE "ssh_node_pools.yaml" /* in $SKIFF_HOME */
#define INFRA_MAX_POOLS 1000
#define INFRA_MAX_HOSTS 10000 /* per pool */

/* The embedded default infra: where a task that names none runs (and managed jobs pool). */
#define INFRA_DEFAULT "local"

enum infra_kind { INFRA_LOCAL, INFRA_SSH, INFRA_PODMAN, INFRA_DOCKER, INFRA_K8S, INFRA_SLURM };

struct task;
struct task_resources;
struct infra;
struct clive;
struct buf;
struct cfg_node;
struct infra_probe;

/* What an infra is, as its ops table says (struct infra_ops). */
enum infra_flags {
	/* New nodes start from the task's image, image_id: docker:IMAGE (podman, docker, k8s). */
	INFRA_IMAGE = 1 << 1,
	/* Stop and start are refused: nothing can be paused there (slurm). */
	INFRA_NO_STOP = 1 << 2,
	/* Down does not take the machine away (local, ssh): a node's processes are not removed
	 * with it, so down makes sure they are gone (containers, pods, allocations go whole). */
	INFRA_PROCS_STAY = 1 << 3,
	/* Its teardown itself ends what still runs of its nodes, on this machine, and fails
	 * when something survives (local: by their HOME), even once the nodes cannot answer. */
	INFRA_TEARDOWN_ENDS_PROCS = 1 << 4,
	/* Its nodes are ssh hosts: launch writes a Host entry per node, so that `ssh CLUSTER`
	 * and scp and rsync reach them (bootstrap/launch/ssh_config_file.c; ssh). */
	INFRA_SSH_CONFIG = 1 << 5,
	/* Its nodes are the hosts of a pool of the ssh node pool file (struct infra's pool):
	 * what reaches them elsewhere, a jobs controller's host, needs that pool's entry. */
	INFRA_POOL_FILE = 1 << 6,
};

/*
 * One infra: a const table of what it does, so that nothing above bootstrap/infra/ tells
 * infras apart by name. Functions not given (NULL) do nothing and succeed. Each prints
 * its errors and returns 0 or -errno unless said otherwise.
 */
struct infra_ops {
	const char *name; /* as written in specs: "local", "ssh", "podman", ... */
	enum infra_kind kind;
	unsigned flags;   /* enum infra_flags */
	int max_nodes;    /* the most nodes one cluster can have here (a rank limit) */
	unsigned honours; /* resource fields only a cloud honours that this one does (TR_*) */
	/* What holds a cluster's nodes, for messages ("Slurm allocation"); NULL: nothing
	 * beyond the nodes. Says what alive() names. */
	const char *holder;
	/* What follows "NAME/" in the spec (NULL: nothing) into out (kind, spec, pool...). */
	int (*parse)(const char *rest, const char *spec, struct infra *out);
	/* Loads what naming a node needs (ssh: the pool file). Idempotent. */
	int (*resolve)(struct infra *inf);
	/* Picks nodes v[0..n) for a new cluster, in rank order (infra_pick_nodes()). */
	int (*pick)(struct infra *inf, struct st_db *ldb, const char *cluster, int n,
	            struct cluster_node *v);
	/* A pick that could not be recorded (the cluster exists, a node was taken): gives
	 * back what pick made (containers started, an allocation granted). */
	void (*unpick)(struct infra *inf, const char *cluster, const struct cluster_node *v, int n);
	/* A runner for one booked node (NULL, printed, on error). */
	struct runner *(*runner)(const struct infra *inf, const struct cluster_node *n);
	/* Once every node's supervisor is up (slurm: each moves into a job step). */
	int (*nodes_up)(struct clive *cl);
	/*
	 * A launch on an existing cluster: makes again what pick made for a node that is gone
	 * (local: its directory, removed). How many nodes it made again (they need their
	 * bootstrap), or -errno. Only a launch calls it: elsewhere a node gone stays gone.
	 */
	int (*remake)(struct clive *cl);
	/* How many jobs a restart of the nodes' supervisors would end (slurm's steps: an
	 * upgrade in place waits until none); < 0 unknown. */
	int (*busy)(struct clive *cl);
	/* 1 while the holder of the cluster's nodes exists, 0 once it is gone (slurm: the
	 * allocation ended; *what is its id, *state how it ended). */
	int (*alive)(struct st_db *ldb, const char *cluster, struct buf *what, struct buf *state);
	/* down, once the supervisors are stopped: removes what skiff made for the cluster and
	 * releases it (cl may be NULL when the cluster cannot be opened any more). */
	int (*teardown)(const struct infra *inf, struct st_db *ldb, struct clive *cl,
	                const char *cluster);
	/* stop and start of the nodes themselves, beyond their supervisors (containers). */
	int (*stop)(const struct infra *inf, const char *cluster);
	int (*start)(const struct infra *inf, struct st_db *ldb, const char *cluster);
	/*
	 * Autostop is the head's (rank 0) call: every job has a rank there, so the head is
	 * idle exactly when the cluster is. idle_hook is the script the head runs when it
	 * fires (hooks/stop, or hooks/down with down; the caller frees it); NULL, or no
	 * idle_hook: the node's default, its jobs cancelled and its supervisor stopped. The
	 * other nodes always get the default; the launcher's next look finishes the stop or
	 * the down on all of them.
	 */
	char *(*idle_hook)(const struct clive *cl, int down);
	/* 1 once the head's hook has stopped what holds it (its container exited, the
	 * allocation released), 0 while it runs, < 0 unknown (then the head is asked). */
	int (*hook_fired)(struct st_db *ldb, const struct clive *cl);
	/*
	 * `skiff check`: whether the infra can be used from here (its commands there and
	 * answering, its file valid), as facts for infra_probe_judge(), by deadline (now_ms()
	 * time) at the latest. Prints nothing; runs in a thread of its own. NULL: nothing to
	 * look at (enabled).
	 */
	void (*probe)(const struct infra *inf, int64_t deadline, struct infra_probe *out);
};

/* The infra named name ("kubernetes" is k8s), or NULL. */
const struct infra_ops *infra_ops_find(const char *name);
/* The i-th infra skiff has, in the order `skiff check` lists them; NULL past the last. */
const struct infra_ops *infra_ops_at(size_t i);

/* One host of a pool, with the pool's defaults applied. */
struct infra_host {
	char *ip;            /* IP address or host name, as written */
	char *user;          /* NULL: ssh's default */
	int port;            /* 22 unless given */
	char *identity_file; /* absolute, ~/ expanded; NULL: ssh's default */
	char *proxy_jump;    /* ssh -J value; NULL: none */
	int line, col;       /* where the host is written */
};

struct infra_pool {
	char *name;
	struct infra_host *hosts; /* in file order: nodes are picked in this order */
	size_t nhosts;            /* >= 1 */
	int line, col;
};

/* A parsed pool file; owns everything in it. */
struct infra_pools {
	char *file;
	struct infra_pool *v; /* in file order */
	size_t n;
};

struct infra {
	const struct infra_ops *ops;
	enum infra_kind kind;
	char *spec; /* canonical: "local", "ssh/POOL"; "ssh" until infra_resolve() */
	char *pool; /* ssh: the pool's name; NULL for a bare "ssh" until infra_resolve() */
	/* ssh, after infra_resolve(): */
	struct infra_pools pools;
	const struct infra_pool *p; /* the pool, in pools */
	/*
	 * podman, docker, k8s: pool is POOL (NULL if none; k8s: none). image: what to start
	 * new nodes from (the task's docker:IMAGE without "docker:"), set by the launcher
	 * before infra_pick_nodes(); NULL: pick running ones. k8s: context and ns, NULL for
	 * kubectl's defaults.
	 */
	char *image;
	char *context, *ns;
	/*
	 * slurm: pool is the partition (NULL: Slurm's default). res: the resource alternative
	 * salloc asks for (cpus, memory, accelerators per node), set by the launcher before
	 * infra_pick_nodes(); NULL: one CPU per node. Not owned.
	 */
	const struct task_resources *res;
	/*
	 * The config in effect (lib/config.h), set by the launcher before infra_pick_nodes():
	 * podman/docker add docker.run_options to `run`, k8s merges kubernetes.pod_config into
	 * its pods, slurm adds slurm.sbatch_options to salloc. NULL: none. Not owned.
	 */
	const struct cfg_node *config;
	/*
	 * ssh: node keys of hosts that another launcher's cluster holds (the launch found out
	 * at the bootstrap: cl_bootstrap(), and tries again): the pick skips them and says
	 * so. Set by the launcher before infra_pick_nodes(); not owned.
	 */
	char *const *held;
	size_t nheld;
};

/*
 * Parses an infra spec (from --infra or resources.infra; NULL, "" and "*" mean the default,
 * local). Case-insensitive in the infra name; a pool name is taken as written. Reads no
 * file. Returns 0; -EINVAL for a malformed spec or an unknown infra; -ENOTSUP for a cloud
 * (skiff provisions no VMs). Every error is printed. *out needs infra_release() after
 * success only.
 */
int infra_parse(const char *spec, struct infra *out);
/* infra_parse() that prints nothing: its message goes to why (may be NULL). */
int infra_parse_quiet(const char *spec, struct infra *out, struct buf *why);
/*
 * 1 if what comes before the first '/' of s names an infra skiff has or a cloud it knows
 * (any case), whether or not the rest is right: an argument meant as an infra spec.
 */
int infra_is_named(const char *s);
/*
 * ssh: loads the pool file and finds the pool (the only one for a bare "ssh", then making
 * spec "ssh/POOL"). local: nothing. Idempotent. Returns 0; -ENOENT no pool file or no such
 * pool; -EINVAL an invalid pool file (every error printed as FILE:LINE:COL: ...), or a
 * bare "ssh" with several pools.
 */
int infra_resolve(struct infra *inf);
void infra_release(struct infra *inf);

/*
 * Picks num_nodes nodes for a new cluster, in rank order, ready for st_cluster_create()
 * (their `cluster` field is set to cluster; *out is an array of num_nodes, freed with
 * cluster_nodes_free()), with the infra's pick (at most its max_nodes). Resolves inf
 * first if needed.
 *   ssh:   the first num_nodes hosts of the pool, in pool order, that no other cluster
 *          holds (st_node_holder(): by node key, or the same IP:PORT booked through
 *          another pool). node_key "POOL/IP:PORT" ("POOL/[IPV6]:PORT"). A host's
 *          identity_file must be readable. Nothing is booked: a launcher that loses the
 *          race to st_cluster_create() gets -EBUSY there and may pick again.
 *   local: $SKIFF_HOME/local/CLUSTER/RANK, created 0700 (an existing one is reused),
 *          node_key "local/CLUSTER/RANK", ip 127.0.0.1. ldb may be NULL.
 * Returns 0; -EBUSY not enough free hosts ("pool 'p' has 3 nodes, 2 are in use by
 * clusters a, b; need 2"); -ENOSPC the pool has fewer hosts than num_nodes; -EINVAL bad
 * cluster name or num_nodes; an unreadable identity_file (its -errno); what
 * infra_resolve() returns; -EIO.
 */
int infra_pick_nodes(struct infra *inf, struct st_db *ldb, const char *cluster, int num_nodes,
                     struct cluster_node **out);

/*
 * A runner for a node of a cluster on inf (inf need not be resolved: the node row holds
 * everything, so a cluster stays reachable when its pool is edited): the infra's own
 * (struct infra_ops). NULL (printed) on error. Free with runner_free().
 */
struct runner *infra_runner(const struct infra *inf, const struct cluster_node *n);

/*
 * What `down` does on the infra once the cluster's supervisors are stopped (ops
 * teardown): local removes the node directories; podman, docker and k8s remove the
 * containers or pods skiff started for the cluster, and nothing else; slurm releases the
 * allocation; ssh has nothing to do. cl may be NULL. 0 or -errno (printed).
 */
int infra_teardown(const struct infra *inf, struct st_db *ldb, struct clive *cl,
                   const char *cluster);

/*
 * The booking helper every infra that picks among existing hosts uses (ssh pool hosts,
 * running containers of a pool, running pods): of candidates[0..n), in order, the first
 * `want` that no other cluster holds (st_node_holder(): by node key, else by ip:port).
 * Their indexes go to picked[0..want); *busy gets how many were held, and holders (may
 * be NULL) a list of the clusters that hold them ("a, b"). Returns how many were picked
 * (want at most), or -errno.
 */
struct infra_candidate {
	const char *key; /* node_key it would be booked under */
	const char *ip;  /* NULL: compare by key only */
	int port;
	int share; /* booked as a share of the host: other clusters' shares do not hold it */
};
/*
 * A share of a host (cluster_node.share): "cpus=C memory=GIB gpus=N" of what the
 * resource alternative res asks for (CPUs it does not name: TASK_DEFAULT_CPUS, what its
 * jobs ask), or NULL when it asks for none (the host whole).
 * Clusters share an SSH host when each asks for resources (supervisor/hold.h).
 */
char *infra_share_of(const struct task_resources *res);
/* The node key of a share is its host's key, "#", the cluster: the host's (a new string). */
#define INFRA_SHARE_KEY_SEP '#'
char *infra_host_of_key(const char *key);
/* 1 when key is one of inf->held (another launcher's cluster holds that node). */
int infra_held(const struct infra *inf, const char *key);
int infra_book(struct st_db *ldb, const char *cluster, const struct infra_candidate *candidates,
               size_t n, int want, size_t *picked, size_t *busy, struct buf *holders);

/*
 * Cluster names, as SkyPilot's (sky/utils/common_utils.py):
 * [a-zA-Z]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?, case-sensitive, at most INFRA_CLUSTER_NAME_MAX
 * characters. 0, or -EINVAL with a message that says what is wrong.
 */
int infra_validate_cluster_name(const char *name);
/*
 * PREFIX + CLUSTER + "-RANK" as a DNS label (a pod name, a container's hostname):
 * lowercase, '_' and '.' as '-', at most INFRA_DNS_LABEL_MAX. A name that had to be
 * changed or cut gets INFRA_DNS_HASH_LEN hex digits of its sha256 before the rank, so
 * that two clusters never share one ("My_c" and "my-c" differ). cluster: a valid cluster
 * name; prefix: [a-z0-9-]. Caller frees.
 */
char *infra_dns_label(const char *prefix, const char *cluster, int rank);
/*
 * A new default cluster name, "skiff-" and 4 random hex digits (SkyPilot's "sky-xxxx");
 * with ldb, one that no cluster has. Caller frees.
 */
char *infra_cluster_name_new(struct st_db *ldb);

/* ---- what a task asks that an infra ignores (bootstrap/infra/infra.c) ------------------ */

/* The warnings infra_ignored_fields() gives, by what they are about. */
enum infra_ignored {
	INFRA_IGNORED_RES,  /* resource fields only a cloud honours (task_cloud_only_fields()) */
	INFRA_IGNORED_TASK, /* task fields nothing here acts on (task_unhonoured_fields()) */
	INFRA_IGNORED_N,
};

/*
 * What a launch of t on an infra (ops; spec names it in the text) ignores, as one warning
 * line per kind into msg[kind] (appended; left empty when there is nothing): "ignored on
 * ssh/a infra (only a cloud can honour them): use_spot, disk_size". Launch prints them
 * when it runs t on a cluster, `skiff check` adds them to the file's warnings: one
 * decision for both. Reads nothing; returns how many msg[] got a line.
 */
int infra_ignored_fields(const struct task *t, const struct infra_ops *ops, const char *spec,
                         struct buf msg[INFRA_IGNORED_N]);
/*
 * For `skiff check FILE`: what a launch of t would warn about on each infra it may run on
 * (infra when given, as --infra; else each resource alternative's, local when it names
 * none): infra_ignored_fields() as warnings at the alternative's position (the task's for
 * task fields), and an infra that launch would refuse (a cloud) with why. file names the
 * task's file. Returns the number of warnings added to errs.
 */
size_t infra_task_warnings(const struct task *t, const char *infra, const char *file,
                           struct yerrors *errs);

/* ---- `skiff check`: can an infra be used from here? (bootstrap/infra/infra_probe.c) -- */

/*
 * The most one infra's probe may take, all its commands together (kubectl's
 * --request-timeout is what is left of it): an engine that hangs or an API server that is
 * gone makes the infra disabled, never `skiff check` hang. Infras are probed at once, so
 * this bounds the whole.
 */
#define INFRA_PROBE_TIMEOUT_MS 5000
/* The longest line a probe keeps of what a command said (longer ones end in "..."). */
#define INFRA_PROBE_LINE_MAX 300

/* What a probe found (struct infra_probe), from the last thing it looked at. */
enum infra_probe_outcome {
	INFRA_PROBE_OK,         /* usable; said: what was found */
	INFRA_PROBE_MISSING,    /* subject (a command; a file with is_file) is not there; said:
	                           what to do, may be empty */
	INFRA_PROBE_CANNOT_RUN, /* subject could not be run or read; code: the errno */
	INFRA_PROBE_EXIT,       /* subject exited with code; said: its last line, may be empty */
	INFRA_PROBE_TIMEOUT,    /* subject did not answer within timeout_ms */
	INFRA_PROBE_INVALID,    /* file subject has errors, each in errs */
	INFRA_PROBE_UNUSABLE,   /* it answered, and that makes the infra unusable; said: why */
};

/*
 * What an enabled infra has, as `skiff check` lists it under the infra: a table of its
 * pools' hosts, its pools' containers, its partitions, its contexts. A row that clusters
 * book names its node key, so that the caller can say which cluster holds it.
 */
struct infra_inv_row {
	char **cells;   /* one per column, each owned ("" for none) */
	char *node_key; /* owned; NULL: not something a cluster books */
	char *ip;       /* ssh: the host and port, which st_node_holder() also matches */
	int port;
};

struct infra_inv {
	const char *of;          /* what the rows are ("hosts"); static; NULL: an unused table */
	const char *const *cols; /* the columns' names, also their JSON keys; static */
	size_t ncols;
	struct infra_inv_row *rows;
	size_t nrows, alloc;
	struct buf said; /* why the rows could not be had; "" when they were */
};

/* The most tables one infra's inventory has (k8s: the contexts, and the labelled pods). */
#define INFRA_INV_TABLES 2
/* The most rows one table keeps: a list past it is cut, and says so. */
#define INFRA_INV_ROWS_MAX 10000

struct infra_probe {
	char *spec; /* the infra, canonical (as infra_parse() makes it); owned */
	enum infra_probe_outcome outcome;
	char *subject; /* the command ("kubectl version") or file it is about; owned, may be NULL */
	int is_file;
	int code;
	int timeout_ms;
	struct buf said;     /* one line, at most INFRA_PROBE_LINE_MAX, printable */
	struct yerrors errs; /* INVALID: the file's problems at their FILE:LINE:COL */
	/* When it is OK: what the infra has (an infra with nothing to list: none used). */
	struct infra_inv inv[INFRA_INV_TABLES];
};

void infra_probe_init(struct infra_probe *p);
void infra_probe_release(struct infra_probe *p);
/*
 * What `skiff check` says of a probe: returns 1 enabled, 0 disabled, and appends the one
 * line that says why to reason ("'kubectl version' did not answer within 5 s"). Pure.
 */
int infra_probe_judge(const struct infra_probe *p, struct buf *reason);
/*
 * Probes the infras specs[0..n) names (infra_parse() specs; a cloud is UNUSABLE with
 * why) at once, a thread each, each within INFRA_PROBE_TIMEOUT_MS, into out[0..n)
 * (infra_probe_release() each, also on error). Prints nothing. Returns 0, or -EINVAL
 * when a spec is not one (out[0].said says why; nothing was probed).
 */
int infra_probe_specs(const char *const *specs, size_t n, struct infra_probe *out);

/* ---- the SSH node pool file (bootstrap/infra/infra_ssh.c) ---------------------------------- */

/*
 * $SKIFF_SSH_NODE_POOLS, else $SKIFF_HOME/ssh_node_pools.yaml, else (when that does not
 * exist) SkyPilot's ~/.sky/ssh_node_pools.yaml if it does; NULL (printed) if no home.
 */
char *infra_pools_path(void);
/*
 * Parses a pool file held in memory; `file` names it in errors. Returns 0, or -EINVAL
 * with every problem in errs (and *out empty). Never prints, never aborts on any input.
 */
int infra_pools_parse_buf(struct infra_pools *out, const char *file, const char *data, size_t len,
                          struct yerrors *errs);
/* Reads and parses a file: 0; -EINVAL (errors in errs); -ENOENT etc. (also in errs). */
int infra_pools_load(struct infra_pools *out, const char *path, struct yerrors *errs);
const struct infra_pool *infra_pools_find(const struct infra_pools *p, const char *name);
void infra_pools_release(struct infra_pools *p);
/* "POOL/IP:PORT" ("POOL/[IPV6]:PORT"): the node key a pool host is booked under. */
char *infra_host_key(const char *pool, const struct infra_host *h);

/* 16 hex digits naming this launcher (host name and $SKIFF_HOME): label skiff.launcher. */
char *infra_launcher_id(void);
/* 1 if s can be an image reference (no blanks, no control bytes, no leading '-'). */
int infra_valid_image(const char *s);
/*
 * Removes a local cluster's node directories ($SKIFF_HOME/local/CLUSTER), killing what
 * still runs as one of its nodes first. Symlinks are removed, never followed. 0 when gone
 * (also when it never existed), or a negative errno (printed).
 */
int infra_local_remove(const char *cluster);

/*
 * The manifest (JSON) of pod `name` for a new node of cluster on a k8s infra, booked by
 * launcher id: skiff's pod from inf->image, with inf->config's kubernetes.pod_config and
 * custom_metadata merged in (config_k8s_pod()). Reads nothing. Caller frees.
 */
/* What one event of a pod watch says (infra_k8s_pod_judge()). */
enum k8s_pod_state {
	K8S_POD_NOISE,        /* not a pod's line (kubectl's own words) */
	K8S_POD_WAITING,      /* not Ready yet: why and detail say what holds it */
	K8S_POD_READY,        /* Running, Ready, with an IP */
	K8S_POD_ENDED,        /* Succeeded or Failed: it will never be Ready */
	K8S_POD_CANNOT_START, /* a waiting reason that waiting does not end (ErrImagePull...) */
};

struct k8s_pod_event {
	const char *name, *ip, *why, *detail; /* pointers into the line; "" when absent */
};

/*
 * One line of the infra's pod watch (NAME PHASE READY IP SCHEDULED SCHEDULED_MESSAGE
 * WAITING_REASON WAITING_MESSAGE, separated by 0x1f; split in place) judged: a pure
 * function.
 */
enum k8s_pod_state infra_k8s_pod_judge(char *line, struct k8s_pod_event *ev);

char *infra_k8s_pod_manifest(const struct infra *inf, const char *name, const char *cluster,
                             const char *id);

#endif
