#ifndef SKIFF_SYNC_DELTA_H
#define SKIFF_SYNC_DELTA_H

/*
 * Block deltas, as rsync makes them (Tridgell and Mackerras, "The rsync algorithm", 1996):
 * the node cuts its old copy of a file into blocks and sends, per block, a weak rolling
 * checksum and a strong 64-bit hash; the launcher slides a window over its new file and,
 * wherever the window's checksums match a block, sends "copy that block" instead of the
 * bytes. Only what changed (and up to a block around it) crosses the link. A false match
 * cannot go unseen: the node checks the whole rebuilt file against the content hash the
 * launcher sends before it replaces the old one (docs/sync.md).
 *
 * For the bootstrap/sync/ files only. Nothing here prints except as said.
 */

#include <stddef.h>
#include <stdint.h>

#include "bootstrap/sync/sync_hash.h"
#include "lib/buf.h"

/* Files smaller than this are sent whole: a delta costs a round trip. */
#define SYNC_DELTA_MIN ((uint64_t)64 << 10)

struct sync_sigs {
	uint32_t block; /* bytes per block; the last one may be shorter */
	uint64_t size;  /* of the file the blocks cut */
	uint32_t n;     /* blocks: ceil(size / block) */
	uint32_t *weak;
	uint64_t *strong;
};

/* The block size for a file of size bytes: about its square root, 2 KiB to 128 KiB. */
uint32_t sync_sig_block(uint64_t size);
/* rsync's rolling checksum of p[0..n) (a, b folded into 32 bits); sync_strong() is XXH64. */
uint32_t sync_weak(const unsigned char *p, size_t n);

/*
 * The node's side: reads fd (a regular file of size bytes) from its start and cuts it.
 * -EAGAIN (not printed) if it did not hold size bytes (it changed); -errno otherwise.
 */
int sync_sigs_make(int fd, uint64_t size, struct sync_sigs *s);
void sync_sigs_release(struct sync_sigs *s);
/* The 'K' record body for request id (ok 0: the node has no such file to offer). */
void sync_sigs_encode(const struct sync_sigs *s, uint32_t id, int ok, struct buf *out);
/*
 * Parses a 'K' body strictly (block size in range, n matching size and block, the exact
 * length): 0 with *ok, or -EPROTO. On success with *ok, s holds the signatures.
 */
int sync_sigs_decode(const void *body, size_t len, uint32_t *id, int *ok, struct sync_sigs *s);

/* What a delta is made of, as the launcher finds it. Each returns 0 or an error to stop. */
struct sync_delta_ops {
	int (*literal)(void *arg, const unsigned char *p, size_t n); /* new bytes */
	int (*copy)(void *arg, uint64_t off, uint64_t len);          /* bytes of the old file */
};

/*
 * The launcher's side: reads fd (size bytes, from the current offset) and reports it as
 * literals and copies of s's blocks, in file order (adjacent copies merged), hashing
 * every byte into hash (which the caller set up). -EAGAIN (not printed)
 * when fd ended before size bytes; an op's error as it returned it; -errno for a read.
 * A node that sent checksums that collide on purpose gets literals, not a slow scan: the
 * strong hashes tried without a match are bounded.
 */
int sync_delta_scan(const struct sync_sigs *s, int fd, uint64_t size,
                    const struct sync_delta_ops *ops, void *arg, struct sync_hash *hash);

#endif
