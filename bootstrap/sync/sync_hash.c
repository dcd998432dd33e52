/*
 * XXH64 and the content hash of file sync (bootstrap/sync/sync_hash.h). XXH64 follows
 * xxHash's specification (doc/xxhash_spec.md in xxHash): four lanes over 32-byte
 * stripes, merged, the tail, an avalanche; tests/unit/test-sync-delta.c checks it against
 * published values.
 */
#include "bootstrap/sync/sync_hash.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "lib/banned.h"

#define P1 0x9e3779b185ebca87ULL
#define P2 0xc2b2ae3d27d4eb4fULL
#define P3 0x165667b19e3779f9ULL
#define P4 0x85ebca77c2b2ae63ULL
#define P5 0x27d4eb2f165667c5ULL

static inline uint64_t rotl(uint64_t x, int r)
{
	return x << r | x >> (64 - r);
}

/* Loads, little-endian; a memcpy is one load where the host is (gcc inlines it). */
static inline uint64_t le64(const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
#else
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
	       (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	       (uint64_t)p[7] << 56;
#endif
}

static inline uint64_t le32(const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
#else
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
#endif
}

static inline uint64_t xround(uint64_t acc, uint64_t in)
{
	return rotl(acc + in * P2, 31) * P1;
}

static uint64_t xmerge(uint64_t h, uint64_t v)
{
	return (h ^ xround(0, v)) * P1 + P4;
}

/* XXH64's end: the lanes merged (or the seed, for less than a stripe), the tail, avalanche. */
static uint64_t finish(const uint64_t v[4], uint64_t seed, uint64_t total, const unsigned char *p,
                       size_t n)
{
	const unsigned char *end = p + n;
	uint64_t h;

	if (total >= 32) {
		h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
		h = xmerge(h, v[0]);
		h = xmerge(h, v[1]);
		h = xmerge(h, v[2]);
		h = xmerge(h, v[3]);
	} else {
		h = seed + P5;
	}
	h += total;
	for (; p + 8 <= end; p += 8)
		h = rotl(h ^ xround(0, le64(p)), 27) * P1 + P4;
	if (p + 4 <= end) {
		h = rotl(h ^ (le32(p) * P1), 23) * P2 + P3;
		p += 4;
	}
	for (; p < end; p++)
		h = rotl(h ^ (*p * P5), 11) * P1;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	return h ^ (h >> 32);
}

static void seed_lanes(uint64_t v[4], uint64_t seed)
{
	v[0] = seed + P1 + P2;
	v[1] = seed + P2;
	v[2] = seed;
	v[3] = seed - P1;
}

/* XXH64 with seed 0: the stripes through four lanes, then finish() on the rest. */
uint64_t sync_strong(const unsigned char *p, size_t n)
{
	const unsigned char *end = p + n;
	uint64_t v[4];

	seed_lanes(v, 0);
	for (; p + 32 <= end; p += 32) {
		v[0] = xround(v[0], le64(p));
		v[1] = xround(v[1], le64(p + 8));
		v[2] = xround(v[2], le64(p + 16));
		v[3] = xround(v[3], le64(p + 24));
	}
	return finish(v, 0, n, p, (size_t)(end - p));
}

void sync_hash_init(struct sync_hash *h)
{
	memset(h, 0, sizeof(*h));
	seed_lanes(h->a, 0);
	seed_lanes(h->b, SYNC_HASH_SEED2);
}

/* Whole stripes through both states: eight independent lanes. */
static size_t stripes(struct sync_hash *h, const unsigned char *p, size_t n)
{
	uint64_t a0 = h->a[0], a1 = h->a[1], a2 = h->a[2], a3 = h->a[3];
	uint64_t b0 = h->b[0], b1 = h->b[1], b2 = h->b[2], b3 = h->b[3];
	size_t done = 0;

	for (; n - done >= 32; done += 32, p += 32) {
		uint64_t w0 = le64(p), w1 = le64(p + 8), w2 = le64(p + 16), w3 = le64(p + 24);

		a0 = xround(a0, w0);
		a1 = xround(a1, w1);
		a2 = xround(a2, w2);
		a3 = xround(a3, w3);
		b0 = xround(b0, w0);
		b1 = xround(b1, w1);
		b2 = xround(b2, w2);
		b3 = xround(b3, w3);
	}
	h->a[0] = a0, h->a[1] = a1, h->a[2] = a2, h->a[3] = a3;
	h->b[0] = b0, h->b[1] = b1, h->b[2] = b2, h->b[3] = b3;
	return done;
}

void sync_hash_update(struct sync_hash *h, const void *data, size_t n)
{
	const unsigned char *p = data;
	size_t take;

	h->total += n;
	if (h->blen) {
		take = 32 - h->blen < n ? 32 - h->blen : n;
		memcpy(h->buf + h->blen, p, take);
		h->blen += take;
		p += take;
		n -= take;
		if (h->blen < 32)
			return;
		stripes(h, h->buf, 32);
		h->blen = 0;
	}
	take = stripes(h, p, n);
	memcpy(h->buf, p + take, n - take);
	h->blen = n - take;
}

static void put_be64(unsigned char *o, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		o[i] = (unsigned char)(v >> (56 - 8 * i));
}

void sync_hash_final(struct sync_hash *h, unsigned char out[SYNC_HASH_LEN])
{
	put_be64(out, finish(h->a, 0, h->total, h->buf, h->blen));
	put_be64(out + 8, finish(h->b, SYNC_HASH_SEED2, h->total, h->buf, h->blen));
}

void sync_hash_hex(const unsigned char d[SYNC_HASH_LEN], char *out)
{
	static const char digits[] = "0123456789abcdef";
	int i;

	for (i = 0; i < SYNC_HASH_LEN; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[SYNC_HASH_HEX] = '\0';
}

int sync_hash_fd(int fd, char out[SYNC_HASH_HEX + 1])
{
	unsigned char blk[65536], d[SYNC_HASH_LEN];
	struct sync_hash h;
	ssize_t n;

	sync_hash_init(&h);
	for (;;) {
		n = read(fd, blk, sizeof(blk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			out[0] = '\0';
			return -errno;
		}
		if (n == 0)
			break;
		sync_hash_update(&h, blk, (size_t)n);
	}
	sync_hash_final(&h, d);
	sync_hash_hex(d, out);
	return 0;
}

int sync_hash_file(const char *path, char out[SYNC_HASH_HEX + 1])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), r;

	if (fd < 0)
		return -errno;
	r = sync_hash_fd(fd, out);
	close(fd);
	return r;
}
