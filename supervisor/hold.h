#ifndef SKIFF_SUP_HOLD_H
#define SKIFF_SUP_HOLD_H

/*
 * Who holds this node: the host's own record of the clusters on it, so that a host in
 * the SSH node pools of two launchers (two machines, or two users' homes) is never given
 * to a cluster of each. Each launcher's database only knows its own clusters; the host
 * knows them all. `node up --hold` takes the hold before anything starts (refused, naming
 * the holder, when another cluster holds the node); `node release` lets it go.
 *
 * The record is $SKIFF_HOME/holds, a line per hold of space-separated KEY=VALUE fields
 * (unknown keys are kept, for the skiff that wrote them):
 *
 *   launcher=ID cluster=NAME from=USER@HOST since=EPOCH
 *
 * rewritten whole (a temp file, a rename) under the flock of $SKIFF_HOME/holds.lock.
 * For now a node has one holder at a time: one supervisor and one ~/sky_workdir serve
 * the whole node (docs/infra-ssh.md says what is shared).
 */

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

#define HOLD_LAUNCHER_MAX 64 /* a launcher's id: hex */
#define HOLD_ID_HEX 32       /* the ids launchers make (cl_hold_args()) */
/* What a launcher puts in from= (others become '_'): safe unquoted in a shell word. */
#define HOLD_FROM_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@._-"
#define HOLD_FROM_MAX 128  /* "user@host" of the launcher, for people */
#define HOLD_LINE_MAX 1024 /* a line of the record, unknown keys included */
#define HOLDS_MAX 256      /* lines in a record: more is not a record skiff wrote */

struct hold {
	char launcher[HOLD_LAUNCHER_MAX + 1];
	char cluster[64]; /* infra_validate_cluster_name(): at most 63 bytes */
	char from[HOLD_FROM_MAX + 1];
	double since;
	char *line; /* the line as read (NULL for a new hold): unknown keys stay */
};

struct holds {
	struct hold *v;
	size_t n, alloc;
};

/* What a hold asked for meets. */
enum hold_verdict {
	HOLD_TAKE = 0, /* nobody holds the node (but stale holds): the hold is new */
	HOLD_OURS,     /* the same launcher's same cluster holds it already */
	HOLD_REFUSED,  /* another launcher's cluster holds it (*holder: which) */
};

/*
 * The decision, pure: want against what is held. A hold of the same launcher for another
 * cluster is stale (hold_stale()): the launcher books its own clusters in its database
 * and asks for the node only when none of them has it, so that cluster is gone (taken
 * down while the node could not be reached, or forgotten with --purge). Another
 * launcher's hold is never judged here: only it, or a person, lets go of it.
 */
enum hold_verdict hold_decide(const struct holds *held, const struct hold *want, size_t *holder);
/*
 * 1 when h is a hold that want replaces: its launcher's (the same id, from the same
 * USER@HOST: a home copied to another machine keeps its id), for another cluster.
 */
int hold_stale(const struct hold *h, const struct hold *want);

/*
 * Parses the record's text; 0, or -EINVAL with why (a line and what is wrong with it).
 * An empty text is no hold.
 */
int holds_parse(const char *text, size_t len, struct holds *out, struct buf *why);
/* The record's text of h (lines as read where they were, new ones formatted). */
void holds_format(const struct holds *h, struct buf *out);
/* Checks one field given on a command line: 0, or -EINVAL with why. */
int hold_check(const struct hold *h, struct buf *why);
void holds_release(struct holds *h);

/*
 * `node up --hold`: takes (or keeps) want's hold on this node under the lock. 0; -EBUSY
 * when another cluster holds it (the holder said in why, with the way out); -errno else
 * (said in why).
 */
int hold_take(const struct hold *want, struct buf *why);
/*
 * `node release`: lets go of the hold of want's launcher and cluster, or (want NULL:
 * by hand, when the launcher that held it is gone) of every hold. 0 or -errno (why).
 */
int hold_drop(const struct hold *want, struct buf *why);
/* The node's holds as they are (for `node holds`). 0 or -errno (why). */
int hold_list(struct holds *out, struct buf *why);

#endif
