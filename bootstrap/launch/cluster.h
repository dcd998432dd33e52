#ifndef SKIFF_CLUSTER_H
#define SKIFF_CLUSTER_H

/*
 * A launched cluster, live: one runner per node plus the skiff binary on it, and the
 * operations the launcher commands are made of (bootstrap, sync, submit, query, cancel).
 * Everything that crosses to a node goes through the runner as a quoted script, or as
 * data on stdin (job specs, tar streams): secrets never appear in a command line.
 *
 * A node that cannot be reached fails the operation with an error naming it, within the
 * runner's timeouts; nothing here waits forever.
 */

#include <stdint.h>

#include "bootstrap/infra/live.h"
#include "bootstrap/infra/runner.h"
#include "state/launcher.h"
#include "lib/proto.h"

struct fcall;

/* Builds runners for the booked nodes. On an error nothing of cl is left to close. */
int cl_open(struct clive *cl, const struct cluster *c, const struct cluster_node *nodes, size_t n);
void cl_close(struct clive *cl);
/* Ends the nodes' install sessions that no call used (cnode.spare), all at once. */
void cl_spares_close(struct clive *cl);

/*
 * Installs skiff and starts the supervisor on every node, in parallel. On a node that
 * outlives the cluster (cnode.stays: an ssh host, a pool's container or pod), `node up`
 * first takes it for the cluster (cl_hold_args()): another launcher's cluster that holds
 * it fails the bootstrap, named. 0; -EADDRINUSE when every node that failed was held so (cnode.held
 * says which); -1 else.
 */
int cl_bootstrap(struct clive *cl);
/*
 * `node up`'s and `node release`'s options for cluster's hold of a host (supervisor/
 * hold.h), shell words each after a space: --hold CLUSTER --launcher ID, and with up
 * --from USER@HOST. ID is this launcher's, made once ($SKIFF_HOME/launcher-id), but for
 * the managed-jobs controller's cluster, which the user's launchers share: one from its
 * name, the same from each. NULL
 * (printed) when it cannot be read or made. Free it.
 */
char *cl_hold_args(const char *cluster, int up);

/* Syncs a local dir (or file, with is_file) to dst on one node (dst may start with ~/). */
int cl_sync(struct cnode *nd, const char *src, const char *dst, int is_file);

/*
 * The framed protocol to a node's skiff (`node call`, cmd/node_call.c): one request over
 * the runner's channel, the answer as frames on its stdout. cl_call_many() gives every
 * frame (*replies, free with cl_replies_free()) and returns how many (>= 1), or -errno:
 * -ENOEXEC (not printed) when the node no longer has its skiff (bootstrap, then retry),
 * another error (printed) when the node cannot be reached or gave no frame. cl_call() keeps
 * the last frame, the answer, in *reply (the caller releases it, also on failure) and
 * fails (printed) when it says "error".
 */
#define CL_CALL_OUT_MAX ((size_t)256 << 20)
int cl_call_many(struct cnode *nd, const struct msg *req, struct msg **replies, int timeout_ms);
int cl_call(struct cnode *nd, const struct msg *req, struct msg *reply, int timeout_ms);
void cl_replies_free(struct msg *v, int n);

/* What one node's supervisor said when asked (cl_ping_all()). */
struct cl_ping {
	int answered;
	int64_t pid;   /* it answered: its supervisor's pid, on the node */
	char *version; /* its skiff's version ("" when it did not say); owned */
	char *why;     /* it did not: why ("its skiff is gone", the call's error); owned */
};

/*
 * Asks every node at once whether its supervisor answers (op=ping, one thread a node):
 * out[i] says it for node i (cl_pings_free() them). Returns how many did not answer;
 * each of those is printed as a warning that names the node, its rank and the cluster.
 */
size_t cl_ping_all(struct clive *cl, int timeout_ms, struct cl_ping *out);
void cl_pings_free(struct cl_ping *v, size_t n);

/* Submits one rank's job (an op=submit message); the node's job id in *job_id. */
int cl_submit(struct cnode *nd, const struct msg *spec, int64_t *job_id);

/*
 * A follower of one job's logs, started by cl_submit_follow(): a runner's process of its
 * own, or the node's install session, still open, carrying the call (sp).
 */
struct cl_follower {
	pid_t pid;             /* the runner's process (its own process group), or -1 */
	struct boot_spare *sp; /* or the install session's call (install.h), or NULL */
	int fd;                /* its stdout: the job's logs, after the answer's frame */
	/*
	 * Its stdin, held open while we follow (the submit said "stdin_held": its EOF tells
	 * the node we are gone), or -1; the install session's is the spare's.
	 */
	int in;
	struct buf rest; /* log bytes already read with the answer */
	/*
	 * > 0: the job's id on the node, whose logs come on fd straight from its supervisor's
	 * socket (cl_direct.h), with no process here: its end's code is asked there.
	 */
	int64_t direct_id;
	int watch;    /* with direct_id: a watch of the job, its end to come there, or -1 */
	int end_code; /* with direct_id: the end's code, when the watch told it at once; -1 */
};
/* A follower that holds nothing (rest untouched). */
void cl_follower_none(struct cl_follower *f);

/*
 * cl_submit() and following the job in one round trip (the submit with "follow"): on
 * success the job id is in *job_id and f holds the running follower (the caller reads
 * f->rest then f->fd to EOF, then cl_follower_end(); releases f->rest). On failure f holds
 * nothing; -ENOEXEC (not printed) as for cl_call(), any other error printed.
 */
int cl_submit_follow(struct cnode *nd, const struct msg *spec, int64_t *job_id,
                     struct cl_follower *f);
/* 1 while f holds a follower that has not been ended. */
int cl_follower_live(const struct cl_follower *f);
/* Sends sig to f's process group, if it still runs; async-signal-safe. */
void cl_follower_signal(const struct cl_follower *f, int sig);
/*
 * Closes f's fd and stdin, waits for its end and empties f (rest stays): its exit status, or -1
 * when it has none (killed, or it could not be had); *lost set to 1 when the node's
 * transport failed under it (ssh's 255), else 0.
 */
int cl_follower_end(struct cl_follower *f, struct cnode *nd, int *lost);

/*
 * The node's jobs: those of ids[0..nids) (none given: every job), or the one of key;
 * fn gets each job's frame (fields as `node call` writes them). 0, fn's non-zero return,
 * or -errno (printed).
 */
int cl_queue(struct cnode *nd, const int64_t *ids, size_t nids, const char *key,
             int (*fn)(const struct msg *job, void *arg), void *arg);
/* Cancels node jobs ids[0..nids) (or all of them): one request. 0 or -errno (printed). */
int cl_cancel_jobs(struct cnode *nd, const int64_t *ids, size_t nids, int all);

/*
 * The node job that rank `rank` of a cluster job was submitted as, found by its key
 * ("KEY/RANK", bootstrap/launch/launch.c): 0 with *job_id, -ENOENT (not printed) when the
 * node has none, another error (printed) when the node cannot be asked.
 */
int cl_find_key(struct cnode *nd, const char *key, int rank, int64_t *job_id);
/*
 * Cancels that node job; when it has not arrived, the node records the key as cancelled,
 * so that it never runs if it still arrives. 0, or an error (printed).
 */
int cl_cancel_key(struct cnode *nd, const char *key, int rank);
/*
 * Cancels node job id only while it is rank's job of key (a node made anew since may have
 * given that id to another job): 0 when the node answered, whatever it did; or -errno.
 */
int cl_cancel_rank(struct cnode *nd, int64_t id, const char *key, int rank);
/*
 * live_node_watch() (bootstrap/infra/live.h), straight to the supervisor's socket when
 * the node is a directory here and one listens there: no `node call`, no process.
 */
int cl_node_watch(struct cnode *nd, struct fcall *c, int64_t node_job);

/*
 * Whether the node runs this launcher's own build (its binary is the one named by our
 * sha256), so that it understands all this build sends.
 */
int cl_node_ours(const struct cnode *nd);

/* Runs `EXE ARGS` on the node (args already quoted for sh); stdout/stderr inherited. */
int cl_exec_skiff(struct cnode *nd, const char *args, int timeout_ms, int *status);
/* Same, capturing stdout. */
int cl_capture_skiff(struct cnode *nd, const char *args, struct buf *out, int timeout_ms,
                     int *status);

#endif
