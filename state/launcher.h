#ifndef SKIFF_STATE_LAUNCHER_H
#define SKIFF_STATE_LAUNCHER_H

/*
 * The launcher's own database ($SKIFF_HOME/launcher.db, opened with st_open() and
 * st_launcher_schema): the clusters this machine launched, the nodes each one books, and
 * the cluster jobs submitted to them. The nodes' job queues stay on the nodes (state/node.h);
 * a cluster job here only maps the id users see to each rank's supervisor job id.
 *
 * Booking: a node is identified by a stable node_key ("POOL/IP:PORT" for an ssh pool host,
 * "local/CLUSTER/RANK" for a local node) that is UNIQUE in cluster_nodes, so the database
 * itself refuses to give one node to two clusters, whatever the C code does. A cluster and
 * its nodes are created in one transaction and deleted together (ON DELETE CASCADE frees
 * the nodes and drops the cluster's jobs).
 *
 * Every writer that reads before it writes does so inside BEGIN IMMEDIATE, so concurrent
 * launchers cannot both book a node or both take a job id. Status changes are guarded
 * by the statuses they may come from, like the node's job table.
 *
 * Ownership: get/list functions fill caller-owned structs whose strings are malloc'd and
 * never NULL ("" when unset); release them with the matching _free function. Nothing here
 * keeps a pointer to what it is given.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "state/db.h"

/* SkyPilot's cluster statuses (AUTOSTOPPING is not kept: the nodes' supervisors own it). */
enum cluster_status {
	CLUSTER_INIT = 0, /* being launched, or a launch failed part way: relaunch to retry */
	CLUSTER_UP,
	CLUSTER_STOPPED,
	CLUSTER_N_STATUS
};

#define CLUSTER_MASK(s) (1u << (s))
#define CLUSTER_MASK_ALL ((1u << CLUSTER_N_STATUS) - 1)

const char *cluster_status_name(int status); /* "INIT", "UP", "STOPPED"; "UNKNOWN" */
int cluster_status_parse(const char *name);  /* -1 if not a status */

struct cluster {
	char *name;
	char *infra;             /* canonical infra spec: "local", "ssh/POOL" */
	int status;              /* enum cluster_status */
	int num_nodes;           /* >= 1: the rows in cluster_nodes */
	char *resources;         /* display text for `status`, e.g. "2x(cpus=4, H100:1)" */
	double created_at;       /* epoch seconds: the row was created */
	double launched_at;      /* epoch seconds: the last time it became UP; 0: never */
	int autostop_minutes;    /* -1: off */
	int autostop_down;       /* 1: autodown instead of autostop */
	char *autostop_wait_for; /* jobs_and_ssh, jobs, none; "": the node's default */
	char *last_task; /* the entry point (YAML path or command) last launched or exec'd */
	char *head_ip;   /* rank 0's address; "" until known */
	char *ports;     /* the ports its tasks opened, "8080,9000-9002"; "": none */
};

void cluster_free(struct cluster *c);            /* releases the strings; c itself is not freed */
void clusters_free(struct cluster *v, size_t n); /* releases each, then frees v */

struct cluster_node {
	char *cluster;
	int rank;            /* 0 = head; ranks are 0..num_nodes-1 */
	char *node_key;      /* stable id, UNIQUE across clusters (see above) */
	char *ip;            /* address other nodes reach it at ("127.0.0.1" for local) */
	char *user;          /* ssh user; "": ssh's default */
	int port;            /* ssh port (22 unless the pool says otherwise); 0 for local */
	char *identity_file; /* absolute path; "": ssh's default */
	char *proxy_jump;    /* ssh -J value; "": none */
	char *home;          /* local nodes: the node's private directory (its $HOME); "" for ssh */
	char *skiff_exe;     /* remote path of the installed binary; "" until bootstrapped */
	char *addr;          /* the address the node said it was reached at (ssh); "": ip */
	int stays;           /* it outlives the cluster (an ssh host, a pool's container or
	                        pod): the bootstrap holds it, down releases it (cluster.h) */
	char *share;         /* a share of a host that clusters share: "cpus=C memory=GIB
	                        gpus=N" (node up --share); "" or NULL: the node whole. Its
	                        node_key is the host's, "#CLUSTER" (infra_host_of_key()) */
};

/*
 * For the tests: 0 if the row tables that load clusters, nodes and jobs name the columns
 * of the SELECTs that read them, in their order; else an error (printed).
 */
int st_launcher_cols_check(void);

void cluster_node_free(struct cluster_node *n);
void cluster_nodes_free(struct cluster_node *v, size_t n);

struct cluster_job {
	char *cluster;
	int64_t id; /* per cluster, from 1, never reused while the cluster exists */
	char *name;
	int num_nodes;       /* the job runs on cluster ranks 0..num_nodes-1 */
	double submitted_at; /* epoch seconds */
	char *node_job_ids;  /* "17,3,5": job id on rank 0's, 1's, ... supervisor; "" until sent */
	char *log_dir;       /* where `logs` finds the job's logs (launcher's choice); may be "" */
	char *entrypoint;    /* YAML path or command */
	/*
	 * The job's outcome once decided (enum job_status), -1 before. A gang's is kept: its
	 * ranks' statuses can change after it (a lost rank is stopped when its node is back).
	 */
	int final_status;
	/*
	 * Rank r was submitted with the idempotency key "SUBMIT_KEY/r", by the launcher
	 * process owner_pid (owner_start: its start time, the pid-reuse guard). A job whose
	 * node_job_ids do not name every rank while its owner is gone was cut short mid-submit:
	 * the nodes are asked by key (cmd/cluster.c).
	 */
	char *submit_key;
	pid_t owner_pid;
	uint64_t owner_start;
	char *reason;     /* why final_status was decided here ("" when the nodes said) */
	char *git_commit; /* the workdir's commit at submit ("" none: queue's GIT COMMIT) */
};

void cluster_job_free(struct cluster_job *j);
void cluster_jobs_free(struct cluster_job *v, size_t n);

extern const struct st_schema st_launcher_schema;

/*
 * Opens (creating it and $SKIFF_HOME, 0700, if needed) $SKIFF_HOME/launcher.db: what every
 * launcher command starts with. flags as for st_open() (ST_READONLY fails with -ENOENT,
 * not printed, when no cluster was ever launched). *out is NULL on failure.
 */
int st_launcher_open(unsigned flags, struct st_db **out);

/* ---- clusters ----------------------------------------------------------------------- */

/*
 * Creates cluster c (status INIT, created_at = launched_at = now; c->num_nodes is ignored
 * and set from n) and books nodes[0..n) in one transaction: all or nothing. Only c's name,
 * infra, status, resources, autostop_* , last_task and head_ip are read; in nodes, every
 * field but `cluster` (set to c->name). Ranks must be 0..n-1.
 * Returns 0; -EEXIST if the cluster exists; -EBUSY if a node is booked by another cluster
 * (the message names the node and that cluster: a launcher that picked nodes before another
 * one booked them may pick again); -EINVAL for bad arguments; -EIO. Errors are printed.
 */
int st_cluster_create(struct st_db *db, const struct cluster *c, const struct cluster_node *nodes,
                      size_t n);
/* 0, -ENOENT (not printed), or an error. */
int st_cluster_get(struct st_db *db, const char *name, struct cluster *out);
/* All clusters by name; *out is NULL when there are none. Free with clusters_free(). */
int st_cluster_list(struct st_db *db, struct cluster **out, size_t *n);
/* The cluster's nodes in rank order; -ENOENT if it has none. Free with cluster_nodes_free(). */
int st_cluster_nodes(struct st_db *db, const char *cluster, struct cluster_node **out, size_t *n);

/*
 * Sets the status if the current one is in from_mask (CLUSTER_MASK bits); becoming UP
 * from another status sets launched_at to now. 0; -ENOENT no such cluster; -ESTALE the
 * status was not in from_mask (not printed: the caller decides).
 */
int st_cluster_set_status(struct st_db *db, const char *name, unsigned from_mask, int status);
/* minutes -1 turns autostop off (down is then stored as 0, wait_for as ""); wait_for NULL
 * is "". 0 or -ENOENT. */
int st_cluster_set_autostop(struct st_db *db, const char *name, int minutes, int down,
                            const char *wait_for);
int st_cluster_set_head_ip(struct st_db *db, const char *name, const char *ip);
int st_cluster_set_last_task(struct st_db *db, const char *name, const char *entrypoint);
/* The ports the cluster's tasks opened (the union, as task_ports_text() writes it). */
int st_cluster_set_ports(struct st_db *db, const char *name, const char *ports);
/* Records the binary installed on one node (after bootstrap). 0 or -ENOENT. */
int st_cluster_node_set_exe(struct st_db *db, const char *cluster, int rank, const char *exe);
/* The address the node said it was reached at (cluster_node.addr): 0 or -ENOENT. */
int st_cluster_node_set_addr(struct st_db *db, const char *cluster, int rank, const char *addr);
/* A node's address changed (a container started again); the address it said it was
 * reached at (addr) is forgotten with the old one, so jobs get the new ip until the node
 * says otherwise. 0 or -ENOENT. */
int st_cluster_node_set_ip(struct st_db *db, const char *cluster, int rank, const char *ip);

/* Deletes the cluster, frees its nodes and drops its jobs. 0 or -ENOENT. */
int st_cluster_delete(struct st_db *db, const char *name);

/*
 * Which cluster holds a node: the one that booked node_key, else (when ip is not NULL)
 * one that booked any node at ip:port under another key (the same host listed in two
 * pools, or its shares: all of them, "a, b"), but with share those that hold a share of
 * it (shares live beside each other; the host says whether they fit). *cluster is a
 * malloc'd name (or list), or NULL when the node is free. 0 or an error.
 */
int st_node_holder(struct st_db *db, const char *node_key, const char *ip, int port, int share,
                   char **cluster);

/* ---- cluster jobs --------------------------------------------------------------------- */

/*
 * Adds a job to a cluster, taking the cluster's next job id in the same transaction.
 * Reads j->name, num_nodes, node_job_ids, log_dir, entrypoint, submit_key (NULL: ""),
 * owner_pid and owner_start; sets
 * j->id and j->submitted_at (j->cluster is not touched). 0; -ENOENT no such cluster.
 */
int st_cluster_job_add(struct st_db *db, const char *cluster, struct cluster_job *j);
/* 0, -ENOENT (not printed), or an error. */
int st_cluster_job_get(struct st_db *db, const char *cluster, int64_t id, struct cluster_job *out);
/*
 * The cluster's jobs in id order (oldest first); *out is NULL when there are none (also
 * when the cluster does not exist). Free with cluster_jobs_free().
 */
int st_cluster_job_list(struct st_db *db, const char *cluster, struct cluster_job **out, size_t *n);
/* The per-rank supervisor job ids, once submitted. 0 or -ENOENT. */
int st_cluster_job_set_node_ids(struct st_db *db, const char *cluster, int64_t id,
                                const char *node_job_ids);
int st_cluster_job_set_log_dir(struct st_db *db, const char *cluster, int64_t id,
                               const char *log_dir);
/*
 * Records the job's outcome unless one is recorded already (the first word stands). With
 * key, only while the row is still the job submitted with that key: not a job of the same
 * id on a cluster taken down and launched again under the same name since.
 */
int st_cluster_job_set_final(struct st_db *db, const char *cluster, int64_t id, const char *key,
                             int status);
/*
 * Records an outcome decided here (a submit cut short), with the ranks' node job ids that
 * are known ("" for a rank that never arrived) and the reason, unless an outcome is
 * recorded already.
 */
int st_cluster_job_settle(struct st_db *db, const char *cluster, int64_t id, int status,
                          const char *node_job_ids, const char *reason);
/* A job whose submit failed (no rank runs): gone from the queue. 0 or -ENOENT. */
int st_cluster_job_delete(struct st_db *db, const char *cluster, int64_t id);

#endif
