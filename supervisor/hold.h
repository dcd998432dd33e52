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
 *
 * A hold is of the whole node, or a share of it: a cluster that asked for resources
 * (launch --cpus/--memory/--gpus) holds that much, and clusters share the node while their
 * shares fit in what it has. A share's line adds
 *
 *   cpus=N memory=GIB [gpus=I,J,...]
 *
 * (the GPUs by index, given at take: two clusters never have the same one). Each share
 * has a home of its own under the node's (lib/util.h cluster_home_of()): its supervisor,
 * jobs, logs and ~/sky_workdir; the record stays the node's, in the node's home.
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

#define HOLD_GPUS_MAX 64 /* GPU indexes 0..63 (supervisor/sched.h SCHED_MAX_GPUS) */

struct hold {
	char launcher[HOLD_LAUNCHER_MAX + 1];
	char cluster[64]; /* infra_validate_cluster_name(): at most 63 bytes */
	char from[HOLD_FROM_MAX + 1];
	double since;
	/* A share (share 1): what it holds; gpu_mask the indexes given (bit i: GPU i). */
	int share;
	double cpus, memory;
	int gpus; /* asked (a want); held: the bits of gpu_mask */
	uint64_t gpu_mask;
	char *line; /* the line as read (NULL for a new hold): unknown keys stay */
};

/* What the node has: the shares of it add up to no more. */
struct hold_cap {
	double cpus, memory;
	int gpus;
};

struct holds {
	struct hold *v;
	size_t n, alloc;
};

/* What a hold asked for meets. */
enum hold_verdict {
	HOLD_TAKE = 0, /* the hold is new: nobody holds the node, or the shares fit */
	HOLD_OURS,     /* the same launcher's same cluster holds it already */
	HOLD_REFUSED,  /* another cluster holds the node whole, or want is whole and another
	                  holds a share (*holder: which) */
	HOLD_FULL,     /* want's share does not fit beside the others' (*holder: one of them) */
};

/*
 * The decision, pure: want against what is held on a node that has cap. A share is
 * taken when the other shares and it fit in cap (CPUs, memory, and GPUs by index: *gpus
 * the indexes it gets, the lowest free; for HOLD_OURS the ones it has); alone on the node
 * it is taken whatever it asks (the node's supervisor offers no more than the node has,
 * and the submit says what does not fit). A hold of the same launcher for another
 * cluster is stale (hold_stale()) where one of the two is whole: the launcher books its
 * own clusters in its database and asks for the node whole only when none of them has
 * it, and for a share only when none has it whole, so that cluster is gone (taken down
 * while the node could not be reached, or forgotten with --purge). Another launcher's
 * hold is never judged here: only it, or a person, lets go of it.
 */
enum hold_verdict hold_decide(const struct holds *held, const struct hold *want,
                              const struct hold_cap *cap, size_t *holder, uint64_t *gpus);
/*
 * 1 when h is a hold that want replaces: its launcher's (the same id, from the same
 * USER@HOST: a home copied to another machine keeps its id), for another cluster, one of
 * the two whole.
 */
int hold_stale(const struct hold *h, const struct hold *want);
/*
 * What is free of cap beside the shares of held but want's own (for a refusal's words):
 * fills free; 1 when another cluster holds the node whole.
 */
int hold_free(const struct holds *held, const struct hold *want, const struct hold_cap *cap,
              struct hold_cap *free);

/*
 * Parses the record's text; 0, or -EINVAL with why (a line and what is wrong with it).
 * An empty text is no hold.
 */
int holds_parse(const char *text, size_t len, struct holds *out, struct buf *why);
/* The record's text of h (lines as read where they were, new ones formatted). */
void holds_format(const struct holds *h, struct buf *out);
/*
 * A share's home on this node: HOST/c/CLUSTER-ID (lib/util.h CLUSTER_HOME_DIR; ID the
 * first 12 digits of the launcher's, CLUSTER lowered, odd bytes '-'). A new string.
 */
char *hold_share_home(const char *host, const struct hold *h);
/* GPU indexes "0,2,3" (each 0..HOLD_GPUS_MAX-1, once) as bits; "" is none. 0 or -EINVAL. */
int hold_gpus_parse(const char *s, uint64_t *mask);
/* The bits of mask as "0,2,3" ("" for none) into out[size] (4 * HOLD_GPUS_MAX holds any). */
void hold_gpus_format(uint64_t mask, char *out, size_t size);
/* Checks one field given on a command line: 0, or -EINVAL with why. */
int hold_check(const struct hold *h, struct buf *why);
void holds_release(struct holds *h);

/*
 * `node up --hold`: takes (or keeps) want's hold on this node (that has cap) under the
 * lock; a share's GPUs in *gpus. 0; -EBUSY when another cluster holds it, -ENOSPC when
 * want's share does not fit (the holders and what is free said in why, with the way out);
 * -errno else (said in why).
 */
int hold_take(const struct hold *want, const struct hold_cap *cap, uint64_t *gpus, struct buf *why);
/*
 * `node release`: lets go of the hold of want's launcher and cluster, or (want NULL:
 * by hand, when the launcher that held it is gone) of every hold. 0 or -errno (why).
 */
int hold_drop(const struct hold *want, struct buf *why);
/* The node's holds as they are (for `node holds`). 0 or -errno (why). */
int hold_list(struct holds *out, struct buf *why);

#endif
