#ifndef SKIFF_SUP_LOGPREFIX_H
#define SKIFF_SUP_LOGPREFIX_H

/*
 * The prefix of a gang rank's log lines, as SkyPilot prints them (its Ray driver names
 * each rank's task "head, rank=0," or "workerK, rank=K," and Ray adds the worker's pid,
 * and the ip on all but the head's node):
 *
 *   (head, rank=0, pid=4012) hello
 *   (worker1, rank=1, pid=3871, ip=10.0.0.2) hello
 *
 * A node's `node logs --prefix-rank N [--prefix-ip IP]` writes them, with the pid of the
 * job's process on that node (docs/cli.md, "logs"). Pure functions: no I/O.
 */

#include <stddef.h>

#include "lib/buf.h"

/* Appends rank's prefix, with its trailing space, to out; pid <= 0: unknown, not said. */
int logprefix_format(struct buf *out, int rank, long pid, const char *ip);

/*
 * Appends in[0..n) to out with prefix before every line's first byte. *bol says whether
 * the next byte starts a line (1 at the start of a stream); it is left so for the next
 * piece. Lines may arrive split across pieces: a prefix is written once per line.
 */
int logprefix_lines(struct buf *out, const char *in, size_t n, const char *prefix, size_t plen,
                    int *bol);

#endif
