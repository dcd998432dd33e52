#ifndef SKIFF_SYNC_HASH_H
#define SKIFF_SYNC_HASH_H

/*
 * The hashes of file sync (bootstrap/sync/ only):
 *
 *   sync_strong()   XXH64 (Yann Collet's xxHash, seed 0) of one block, for deltas;
 *   sync_hash_*()   a file's content hash: XXH64 with seed 0 and XXH64 with seed
 *                   SYNC_HASH_SEED2 of the same bytes, in one pass, 128 bits, written as 32
 *                   lowercase hex digits (the first 16 are the seed-0 XXH64).
 *
 * Why not SHA-256: a sync hashes every byte it writes, on both ends, and this is about
 * four times as fast (5.4 against 1.2 GB/s with the SHA extensions, on the test machine).
 * The hash tells files apart and checks a rebuilt file; it is not a defence against
 * someone who chooses contents to collide (a node that lies only hurts itself, and the
 * binary the self-copy installs is checked with SHA-256). rsync makes the same choice.
 */

#include <stddef.h>
#include <stdint.h>

#define SYNC_HASH_LEN 16
#define SYNC_HASH_HEX (2 * SYNC_HASH_LEN)
#define SYNC_HASH_SEED2 0x27d4eb2f165667c5ULL

uint64_t sync_strong(const unsigned char *p, size_t n);

struct sync_hash {
	uint64_t a[4], b[4]; /* the two XXH64 states */
	unsigned char buf[32];
	size_t blen;
	uint64_t total;
};

void sync_hash_init(struct sync_hash *h);
void sync_hash_update(struct sync_hash *h, const void *data, size_t n);
void sync_hash_final(struct sync_hash *h, unsigned char out[SYNC_HASH_LEN]);
/* out: SYNC_HASH_HEX + 1 bytes. */
void sync_hash_hex(const unsigned char d[SYNC_HASH_LEN], char *out);
/* The content hash of a file (read to its end), in hex. 0 or -errno. */
int sync_hash_fd(int fd, char out[SYNC_HASH_HEX + 1]);
int sync_hash_file(const char *path, char out[SYNC_HASH_HEX + 1]);

#endif
