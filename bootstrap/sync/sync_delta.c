/*
 * Block signatures and deltas (bootstrap/sync/sync_delta.h).
 *
 * The weak checksum is rsync's: a = sum of the bytes, b = sum of (n - i) * byte i, each
 * mod 2^16, so that sliding the window by one byte is O(1). The strong hash is XXH64
 * (bootstrap/sync/sync_hash.c); a wrong match (64 bits, and a weak checksum, both equal)
 * is caught by the whole file's content hash.
 */
#include "bootstrap/sync/sync_delta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "bootstrap/sync/sync_wire.h"
#include "lib/util.h"
#include "lib/banned.h"

#define BLOCK_MIN 2048u
#define BLOCK_MAX (128u << 10)
#define BLOCK_DECODE_MIN 512u
#define BLOCK_DECODE_MAX (1u << 20)
/* Literal bytes are handed on at least this often, so that the window's buffer is bounded. */
#define LIT_FLUSH (256u << 10)
#define READ_CHUNK (1u << 20)
/* A run of copied blocks is handed on at least this often. */
#define COPY_RUN ((uint64_t)1 << 20)
/* Candidates of one weak checksum tried at one position. */
#define CHAIN_MAX 8

uint32_t sync_sig_block(uint64_t size)
{
	uint64_t b = 1;

	while (b * b < size)
		b <<= 1;
	/* A power of two near the square root, then as many blocks as a set may hold. */
	if (b < BLOCK_MIN)
		b = BLOCK_MIN;
	if (b > BLOCK_MAX)
		b = BLOCK_MAX;
	while (size / b >= SYNC_SIG_COUNT_MAX)
		b <<= 1;
	return (uint32_t)b;
}

#ifdef __SSE2__
/*
 * 16 bytes a step: a gains their sum (psadbw), b gains 16 times a as it was plus their
 * sum weighted 16, 15, ..., 1 (pmaddwd); 32-bit lanes, so that the sums wrap as the
 * scalar ones do (only their low 16 bits count).
 */
static uint32_t weak_sse2(const unsigned char *p, size_t n, uint32_t *pa)
{
	const __m128i zero = _mm_setzero_si128();
	const __m128i w_lo = _mm_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9);
	const __m128i w_hi = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
	__m128i va = zero, vb = zero, vs = zero;
	size_t i;

	for (i = 0; i + 16 <= n; i += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + i));

		/* b += 16 * a (before this step): a is summed into vs once per step. */
		vs = _mm_add_epi32(vs, va);
		va = _mm_add_epi32(va, _mm_sad_epu8(x, zero));
		vb = _mm_add_epi32(vb, _mm_madd_epi16(_mm_unpacklo_epi8(x, zero), w_lo));
		vb = _mm_add_epi32(vb, _mm_madd_epi16(_mm_unpackhi_epi8(x, zero), w_hi));
	}
	vb = _mm_add_epi32(vb, _mm_slli_epi32(vs, 4));
	/* va holds two 64-bit sums (their low 32 bits), vb four 32-bit ones. */
	va = _mm_add_epi32(va, _mm_shuffle_epi32(va, 0x4e));
	vb = _mm_add_epi32(vb, _mm_shuffle_epi32(vb, 0x4e));
	vb = _mm_add_epi32(vb, _mm_shuffle_epi32(vb, 0xb1));
	*pa = (uint32_t)_mm_cvtsi128_si32(va);
	return (uint32_t)_mm_cvtsi128_si32(vb);
}
#endif

uint32_t sync_weak(const unsigned char *p, size_t n)
{
	uint32_t a = 0, b = 0;
	size_t i = 0;

#ifdef __SSE2__
	if (n >= 16) {
		b = weak_sse2(p, n, &a);
		i = n & ~(size_t)15;
	}
#endif
	/* b = sum of (n - i) * p[i] = the sum of a's running values. */
	for (; i + 4 <= n; i += 4) {
		b += 4 * a + 4 * p[i] + 3 * p[i + 1] + 2 * p[i + 2] + p[i + 3];
		a += (uint32_t)p[i] + p[i + 1] + p[i + 2] + p[i + 3];
	}
	for (; i < n; i++) {
		a += p[i];
		b += a;
	}
	return (a & 0xffff) | b << 16;
}

/* --- signatures ----------------------------------------------------------------------- */

void sync_sigs_release(struct sync_sigs *s)
{
	if (!s)
		return;
	free(s->weak);
	free(s->strong);
	memset(s, 0, sizeof(*s));
}

static void sigs_alloc(struct sync_sigs *s, uint64_t size, uint32_t block)
{
	s->size = size;
	s->block = block;
	s->n = (uint32_t)((size + block - 1) / block);
	s->weak = xcalloc(s->n ? s->n : 1, sizeof(*s->weak));
	s->strong = xcalloc(s->n ? s->n : 1, sizeof(*s->strong));
}

int sync_sigs_make(int fd, uint64_t size, struct sync_sigs *s)
{
	unsigned char *buf;
	size_t have = 0, cap, len, room, off;
	uint64_t done = 0, rest;
	uint32_t i = 0;
	ssize_t n;
	int r = 0;

	memset(s, 0, sizeof(*s));
	sigs_alloc(s, size, sync_sig_block(size));
	cap = READ_CHUNK + s->block;
	buf = xmalloc(cap);
	while (done < size) {
		rest = size - done - have;
		room = cap - have;
		if (rest) {
			n = read(fd, buf + have, rest < room ? (size_t)rest : room);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				r = n < 0 ? -errno : -EAGAIN; /* it shrank */
				break;
			}
			have += (size_t)n;
		}
		/* Whole blocks, and the last one once all of it is here; then what is left of a
		 * block moves to the front, once per read. */
		for (off = 0;
		     have - off >= s->block || (have > off && done + have - off == size);) {
			len = have - off < s->block ? have - off : s->block;
			s->weak[i] = sync_weak(buf + off, len);
			s->strong[i] = sync_strong(buf + off, len);
			i++;
			done += len;
			off += len;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	free(buf);
	if (r)
		sync_sigs_release(s);
	return r;
}

void sync_sigs_encode(const struct sync_sigs *s, uint32_t id, int ok, struct buf *out)
{
	uint32_t i;

	buf_reset(out);
	sync_put_u32(out, id);
	sync_put_u8(out, ok ? 1 : 0);
	if (!ok)
		return;
	sync_put_u32(out, s->block);
	sync_put_u64(out, s->size);
	sync_put_u32(out, s->n);
	for (i = 0; i < s->n; i++) {
		sync_put_u32(out, s->weak[i]);
		sync_put_u64(out, s->strong[i]);
	}
}

int sync_sigs_decode(const void *body, size_t len, uint32_t *id, int *ok, struct sync_sigs *s)
{
	struct sync_cur c;
	uint32_t block, n, i;
	uint64_t size;

	memset(s, 0, sizeof(*s));
	sync_cur_init(&c, body, len);
	*id = sync_get_u32(&c);
	*ok = (int)sync_get_u8(&c);
	if (c.bad || *ok > 1)
		return -EPROTO;
	if (!*ok)
		return c.n ? -EPROTO : 0;
	block = sync_get_u32(&c);
	size = sync_get_u64(&c);
	n = sync_get_u32(&c);
	if (c.bad || block < BLOCK_DECODE_MIN || block > BLOCK_DECODE_MAX ||
	    n > SYNC_SIG_COUNT_MAX || (uint64_t)n != (size + block - 1) / block ||
	    c.n != (size_t)n * 12)
		return -EPROTO;
	sigs_alloc(s, size, block);
	for (i = 0; i < n; i++) {
		s->weak[i] = sync_get_u32(&c);
		s->strong[i] = sync_get_u64(&c);
	}
	return 0;
}

/* --- the delta ------------------------------------------------------------------------ */

struct table {
	uint32_t *head; /* block index + 1 of a chain's first, 0: empty */
	uint32_t *next; /* the next block of the same slot, + 1 */
	uint32_t bits;
};

static uint32_t slot(const struct table *t, uint32_t weak)
{
	return (weak * 0x9e3779b1u) >> (32 - t->bits);
}

/* Every whole block, in order (a chain lists lower indices first). */
static void table_build(struct table *t, const struct sync_sigs *s)
{
	uint32_t i, h;

	t->bits = 4;
	while ((1u << t->bits) < 2 * s->n)
		t->bits++;
	t->head = xcalloc((size_t)1 << t->bits, sizeof(*t->head));
	t->next = xcalloc(s->n ? s->n : 1, sizeof(*t->next));
	for (i = s->n; i-- > 0;) {
		if ((uint64_t)(i + 1) * s->block > s->size)
			continue; /* the short last block: only at the file's end */
		h = slot(t, s->weak[i]);
		t->next[i] = t->head[h];
		t->head[h] = i + 1;
	}
}

struct scan {
	const struct sync_sigs *s;
	const struct sync_delta_ops *ops;
	void *arg;
	int fd;
	uint64_t size;
	struct sync_hash *hash;
	unsigned char *buf; /* file bytes [base, base + len) */
	size_t cap, len;
	uint64_t base;
	uint64_t lit;                /* start of the literal bytes not yet handed on */
	uint64_t copy_off, copy_len; /* a copy not yet handed on */
};

/* Makes the buffer hold [sc->lit, want) of the file (want <= size). */
static int need(struct scan *sc, uint64_t want)
{
	size_t drop;
	ssize_t n;

	if (want <= sc->base + sc->len)
		return 0;
	drop = (size_t)(sc->lit - sc->base);
	memmove(sc->buf, sc->buf + drop, sc->len - drop);
	sc->len -= drop;
	sc->base += drop;
	while (sc->base + sc->len < want) {
		size_t room = sc->cap - sc->len;
		uint64_t rest = sc->size - (sc->base + sc->len);

		n = read(sc->fd, sc->buf + sc->len, rest < room ? (size_t)rest : room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EAGAIN;
		sync_hash_update(sc->hash, sc->buf + sc->len, (size_t)n);
		sc->len += (size_t)n;
	}
	return 0;
}

static int flush_copy(struct scan *sc)
{
	int r = 0;

	if (sc->copy_len)
		r = sc->ops->copy(sc->arg, sc->copy_off, sc->copy_len);
	sc->copy_len = 0;
	return r;
}

static int flush_lit(struct scan *sc, uint64_t to)
{
	int r = 0;

	if (to > sc->lit) {
		r = flush_copy(sc);
		if (!r)
			r = sc->ops->literal(sc->arg, sc->buf + (sc->lit - sc->base),
			                     (size_t)(to - sc->lit));
	}
	sc->lit = to;
	return r;
}

static int add_copy(struct scan *sc, uint64_t off, uint64_t len)
{
	int r = 0;

	/* Merged, but handed on every COPY_RUN bytes: the node rebuilds while we scan. */
	if (sc->copy_len && sc->copy_off + sc->copy_len == off && sc->copy_len < COPY_RUN) {
		sc->copy_len += len;
		return 0;
	}
	r = flush_copy(sc);
	sc->copy_off = off;
	sc->copy_len = len;
	return r;
}

int sync_delta_scan(const struct sync_sigs *s, int fd, uint64_t size,
                    const struct sync_delta_ops *ops, void *arg, struct sync_hash *hash)
{
	struct scan sc = {.s = s, .ops = ops, .arg = arg, .fd = fd, .size = size, .hash = hash};
	const uint64_t B = s->block;
	struct table t = {NULL, NULL, 0};
	uint64_t p = 0, budget, strong = 0;
	uint32_t a = 0, b = 0, weak, c, expect = UINT32_MAX;
	const unsigned char *w;
	int r = 0, have = 0, found, tries;
	size_t i;

	sc.cap = LIT_FLUSH + (size_t)B + READ_CHUNK;
	sc.buf = xmalloc(sc.cap);
	table_build(&t, s);
	/* Strong hashes tried without a match, at most: a few per block of the new file. */
	budget = 4096 + 4 * (size / B + 1);
	while (!r && s->n) {
		/* The window and the byte after it, which the roll takes in. */
		r = need(&sc, p + B + 1 < size ? p + B + 1 : size);
		if (r || p + B > size)
			break;
		w = sc.buf + (p - sc.base);
		found = -1;
		tries = 0;
		/* Right after a match, the next block first, by its strong hash alone: an
		 * unchanged run costs one hash per block, no rolling. */
		if (!have && expect < s->n && (uint64_t)(expect + 1) * B <= s->size) {
			strong = sync_strong(w, (size_t)B);
			tries = 1;
			if (strong == s->strong[expect]) {
				r = flush_lit(&sc, p);
				if (!r)
					r = add_copy(&sc, (uint64_t)expect * B, B);
				p += B;
				sc.lit = p;
				expect++;
				continue;
			}
		}
		if (!have) {
			weak = sync_weak(w, (size_t)B);
			a = weak & 0xffff;
			b = weak >> 16;
			have = 1;
		}
		weak = (a & 0xffff) | b << 16;
		for (c = t.head[slot(&t, weak)], i = 0; found < 0 && c && i < CHAIN_MAX && budget;
		     c = t.next[c - 1], i++) {
			if (s->weak[c - 1] != weak)
				continue;
			if (!tries++)
				strong = sync_strong(w, (size_t)B);
			if (strong == s->strong[c - 1])
				found = (int)(c - 1);
		}
		if (tries && found < 0 && budget)
			budget--;
		if (found >= 0) {
			r = flush_lit(&sc, p);
			if (!r)
				r = add_copy(&sc, (uint64_t)found * B, B);
			p += B;
			sc.lit = p;
			expect = (uint32_t)found + 1;
			have = 0;
			continue;
		}
		if (p + B < size) {
			unsigned xo = w[0], xn = w[B];

			a = a - xo + xn;
			b = b - (uint32_t)B * xo + a;
		} else {
			have = 0;
		}
		p++;
		if (p - sc.lit >= LIT_FLUSH)
			r = flush_lit(&sc, p);
	}
	/* The old file's short last block may end the new one. */
	if (!r && s->n && size > p && size - p < B) {
		uint64_t last = s->size - (uint64_t)(s->n - 1) * B;

		r = need(&sc, size);
		w = sc.buf + (p - sc.base);
		if (!r && last < B && size - p == last &&
		    sync_weak(w, (size_t)last) == s->weak[s->n - 1] &&
		    sync_strong(w, (size_t)last) == s->strong[s->n - 1]) {
			r = flush_lit(&sc, p);
			if (!r)
				r = add_copy(&sc, (uint64_t)(s->n - 1) * B, last);
			sc.lit = size;
		}
	}
	/* The rest is literal (all of it when the old file was empty), a buffer at a time. */
	while (!r && sc.lit < size) {
		uint64_t to = size - sc.lit > LIT_FLUSH ? sc.lit + LIT_FLUSH : size;

		r = need(&sc, to);
		if (!r)
			r = flush_lit(&sc, to);
	}
	if (!r)
		r = flush_copy(&sc);
	free(sc.buf);
	free(t.head);
	free(t.next);
	return r;
}
