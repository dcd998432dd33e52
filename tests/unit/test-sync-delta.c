/*
 * Block deltas (bootstrap/sync/sync_delta.c): for edits at the start, middle and end,
 * insertions, deletions, truncation and growth, empty and identical files, the delta
 * rebuilds the new file exactly from the old one and carries about what changed; the
 * rolling checksum equals the one computed afresh; signature records round-trip and bad
 * ones are refused; signatures that collide on purpose cannot make the scan slow.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "bootstrap/sync/sync_delta.h"
#include "bootstrap/sync/sync_wire.h"
#include "lib/util.h"
#include "lib/banned.h"

static char tmpdir[256];
static uint64_t seed = 2026;

/* xorshift64*: an LCG's low bytes repeat every 64 KiB, which a delta would find. */
static uint32_t rnd(void)
{
	seed ^= seed >> 12;
	seed ^= seed << 25;
	seed ^= seed >> 27;
	return (uint32_t)((seed * 0x2545f4914f6cdd1dULL) >> 32);
}

static void fill(unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)rnd();
}

static int file_of(const unsigned char *p, size_t n)
{
	char path[300];
	int fd;

	xsnprintf(path, sizeof(path), "%s/f.%u", tmpdir, rnd());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write_all(fd, p, n) || lseek(fd, 0, SEEK_SET) < 0)
		printf("# cannot write %s: %s\n", path, strerror(errno));
	unlink(path);
	return fd;
}

/* Rebuilds the new file as the node would: copies from old, literals as they come. */
struct rebuild {
	const unsigned char *old;
	size_t old_len;
	struct buf out;
	uint64_t literal, copies, ops;
	int bad;
};

static int on_literal(void *arg, const unsigned char *p, size_t n)
{
	struct rebuild *rb = arg;

	rb->literal += n;
	rb->ops++;
	return buf_add(&rb->out, p, n);
}

static int on_copy(void *arg, uint64_t off, uint64_t len)
{
	struct rebuild *rb = arg;

	rb->copies++;
	rb->ops++;
	if (off > rb->old_len || len > rb->old_len - off) {
		rb->bad = 1;
		return -EINVAL;
	}
	return buf_add(&rb->out, rb->old + off, (size_t)len);
}

static const struct sync_delta_ops ops = {on_literal, on_copy};

/* Deltas new against old; 1 if it rebuilds new exactly (and the hash is new's). */
static int delta_ok(const unsigned char *old, size_t old_len, const unsigned char *nw,
                    size_t new_len, struct rebuild *rb)
{
	struct sync_sigs s;
	struct sync_hash hash;
	unsigned char ha[SYNC_HASH_LEN], hb[SYNC_HASH_LEN];
	int fd = file_of(old, old_len), r;

	memset(rb, 0, sizeof(*rb));
	buf_init(&rb->out, (size_t)1 << 30);
	rb->old = old;
	rb->old_len = old_len;
	r = sync_sigs_make(fd, old_len, &s);
	close(fd);
	if (r)
		return 0;
	fd = file_of(nw, new_len);
	sync_hash_init(&hash);
	r = sync_delta_scan(&s, fd, new_len, &ops, rb, &hash);
	close(fd);
	sync_hash_final(&hash, ha);
	sync_hash_init(&hash);
	sync_hash_update(&hash, nw, new_len);
	sync_hash_final(&hash, hb);
	sync_sigs_release(&s);
	return !r && !rb->bad && rb->out.len == new_len && !memcmp(rb->out.p, nw, new_len) &&
	       !memcmp(ha, hb, SYNC_HASH_LEN);
}

static void test_edits(void)
{
	const size_t n = 3 << 20;
	unsigned char *old = xmalloc(n), *nw = xmalloc(n + 70000);
	struct rebuild rb;
	uint32_t block = sync_sig_block(n);
	int good;

	fill(old, n);
	printf("# a %zu-byte file is cut in %u-byte blocks\n", n, block);

	memcpy(nw, old, n);
	good = delta_ok(old, n, nw, n, &rb);
	ok(good && rb.literal == 0 && rb.copies == 3,
	   "identical: a copy per MiB, no literal (%llu ops)", (unsigned long long)rb.ops);
	buf_release(&rb.out);

	memcpy(nw, old, n);
	fill(nw + n / 2, 4096);
	good = delta_ok(old, n, nw, n, &rb);
	ok(good && rb.literal <= 4096 + 2 * block,
	   "4 KiB changed in the middle: %llu literal bytes", (unsigned long long)rb.literal);
	buf_release(&rb.out);

	memcpy(nw, old, n);
	fill(nw, 100);
	fill(nw + n - 100, 100);
	good = delta_ok(old, n, nw, n, &rb);
	ok(good && rb.literal <= 2 * block, "the first and last 100 bytes changed: %llu literal",
	   (unsigned long long)rb.literal);
	buf_release(&rb.out);

	/* 777 bytes inserted: everything after shifts, and still matches. */
	memcpy(nw, old, n / 3);
	fill(nw + n / 3, 777);
	memcpy(nw + n / 3 + 777, old + n / 3, n - n / 3);
	good = delta_ok(old, n, nw, n + 777, &rb);
	ok(good && rb.literal <= 777 + 2 * block, "777 bytes inserted: %llu literal",
	   (unsigned long long)rb.literal);
	buf_release(&rb.out);

	/* 5000 bytes deleted. */
	memcpy(nw, old, n / 4);
	memcpy(nw + n / 4, old + n / 4 + 5000, n - n / 4 - 5000);
	good = delta_ok(old, n, nw, n - 5000, &rb);
	ok(good && rb.literal <= 2 * block, "5000 bytes deleted: %llu literal",
	   (unsigned long long)rb.literal);
	buf_release(&rb.out);

	/* Many small changes: one byte in every 64 KiB. */
	memcpy(nw, old, n);
	for (size_t i = 1000; i < n; i += 65536)
		nw[i] ^= 0x5a;
	good = delta_ok(old, n, nw, n, &rb);
	ok(good && rb.literal < n / 4, "a byte in every 64 KiB: %llu literal of %zu",
	   (unsigned long long)rb.literal, n);
	buf_release(&rb.out);

	good = delta_ok(old, n, old, n / 2 + 1, &rb);
	ok(good && rb.literal <= block, "truncated to half: %llu literal",
	   (unsigned long long)rb.literal);
	buf_release(&rb.out);

	memcpy(nw, old, n);
	fill(nw + n, 70000);
	good = delta_ok(old, n, nw, n + 70000, &rb);
	ok(good && rb.literal <= 70000 + block, "70000 bytes appended: %llu literal",
	   (unsigned long long)rb.literal);
	buf_release(&rb.out);

	good = delta_ok(old, 0, nw, 100000, &rb);
	ok(good && rb.literal == 100000, "from an empty file");
	buf_release(&rb.out);
	good = delta_ok(old, n, nw, 0, &rb);
	ok(good && rb.out.len == 0, "to an empty file");
	buf_release(&rb.out);
	good = delta_ok(old, 5000, old, 5000, &rb);
	ok(good && rb.literal == 0, "a small file, unchanged");
	buf_release(&rb.out);

	/* The old file's short last block, matched at the end of the new one. */
	memcpy(nw, old, n);
	fill(nw + 10, 10);
	good = delta_ok(old, n - 1000, nw, n - 1000, &rb);
	ok(good && rb.literal <= block, "a short last block is matched too: %llu literal",
	   (unsigned long long)rb.literal);
	buf_release(&rb.out);
	free(old);
	free(nw);
}

static void test_weak_rolls(void)
{
	unsigned char p[20000];
	const size_t B = 2048;
	uint32_t w, a, b;
	size_t i, bad = 0;

	fill(p, sizeof(p));
	w = sync_weak(p, B);
	a = w & 0xffff;
	b = w >> 16;
	for (i = 0; i + B < sizeof(p); i++) {
		a = a - p[i] + p[i + B];
		b = b - (uint32_t)B * p[i] + a;
		bad += ((a & 0xffff) | b << 16) != sync_weak(p + i + 1, B);
	}
	is_int(bad, 0, "the rolled checksum is the one computed afresh, at every offset");
	/* The vector code against the definition, at every length and alignment it splits. */
	for (bad = 0, i = 0; i < 600; i++) {
		size_t off = i % 17, n = i < 300 ? i : 300 + 61 * (i - 300), j;

		for (a = 0, b = 0, j = 0; j < n; j++) {
			a += p[off + j];
			b += (uint32_t)(n - j) * p[off + j];
		}
		bad += ((a & 0xffff) | b << 16) != sync_weak(p + off, n);
	}
	is_int(bad, 0, "the weak checksum is rsync's, at every length and offset");
	ok(sync_strong(p, 100) != sync_strong(p + 1, 100) &&
	           sync_strong(p, 100) == sync_strong(p, 100),
	   "the strong hash");
	/* XXH64's published value for the empty input, seed 0. */
	ok(sync_strong((const unsigned char *)"", 0) == 0xef46db3751d8e999ULL,
	   "the strong hash is XXH64");
	/* And for inputs of one stripe and more (39 bytes: a stripe, a word, a tail). */
	ok(sync_strong((const unsigned char *)"Nobody inspects the spammish repetition", 39) ==
	           0xfbcea83c8a378bf1ULL,
	   "the strong hash is XXH64 past a stripe");
	/* The content hash's first half is the same XXH64: one finish() serves both. */
	for (bad = 0, i = 0; i < 300; i++) {
		unsigned char d[SYNC_HASH_LEN];
		struct sync_hash h;
		uint64_t v = 0;
		int k;

		sync_hash_init(&h);
		sync_hash_update(&h, p + i % 7, i);
		sync_hash_final(&h, d);
		for (k = 0; k < 8; k++)
			v = v << 8 | d[k];
		bad += v != sync_strong(p + i % 7, i);
	}
	is_int(bad, 0, "the strong hash is the content hash's first half, at every length");
}

/* The content hash: both halves are XXH64 (seeds 0 and SYNC_HASH_SEED2), in any pieces. */
static void test_content_hash(void)
{
	unsigned char data[1000], d[SYNC_HASH_LEN], e[SYNC_HASH_LEN];
	struct sync_hash h;
	char hex[SYNC_HASH_HEX + 1];
	size_t n, k, bad = 0;
	uint64_t first;

	fill(data, sizeof(data));
	for (n = 0; n <= sizeof(data); n += n < 70 ? 1 : 37) {
		sync_hash_init(&h);
		sync_hash_update(&h, data, n);
		sync_hash_final(&h, d);
		for (k = 0, first = 0; k < 8; k++)
			first = first << 8 | d[k];
		bad += first != sync_strong(data, n);
		/* The same bytes in pieces of 1, 5 and 33. */
		sync_hash_init(&h);
		for (k = 0; k < n; k += k % 3 == 0 ? 1 : k % 3 == 1 ? 5 : 33)
			sync_hash_update(&h, data + k,
			                 (k % 3 == 0   ? 1
			                  : k % 3 == 1 ? 5
			                               : 33) < n - k
			                         ? (k % 3 == 0   ? 1
			                            : k % 3 == 1 ? 5
			                                         : 33)
			                         : n - k);
		sync_hash_final(&h, e);
		bad += memcmp(d, e, SYNC_HASH_LEN) != 0;
	}
	is_int(bad, 0, "its first half is XXH64, and pieces do not change it");
	sync_hash_init(&h);
	sync_hash_final(&h, d);
	sync_hash_hex(d, hex);
	ok(!strncmp(hex, "ef46db3751d8e999", 16), "the empty input: %s", hex);
}

static void test_sigs_records(void)
{
	unsigned char data[100000];
	struct sync_sigs s, t;
	struct buf b = BUF_INIT(0);
	uint32_t id;
	int fd, ok_;

	fill(data, sizeof(data));
	fd = file_of(data, sizeof(data));
	ok(!sync_sigs_make(fd, sizeof(data), &s) && s.n == (sizeof(data) + s.block - 1) / s.block,
	   "signatures of a file");
	close(fd);
	sync_sigs_encode(&s, 7, 1, &b);
	ok(!sync_sigs_decode(b.p, b.len, &id, &ok_, &t) && id == 7 && ok_ && t.n == s.n &&
	           !memcmp(t.weak, s.weak, s.n * 4) && !memcmp(t.strong, s.strong, s.n * 8),
	   "encoded and decoded");
	sync_sigs_release(&t);
	ok(sync_sigs_decode(b.p, b.len - 1, &id, &ok_, &t) == -EPROTO, "one byte short: refused");
	b.p[11] ^= 1; /* the size no longer matches the count */
	ok(sync_sigs_decode(b.p, b.len, &id, &ok_, &t) == -EPROTO, "a lying size: refused");
	b.p[11] ^= 1;
	b.p[5] = 1, b.p[6] = 0, b.p[7] = 0, b.p[8] = 0; /* block 1 */
	ok(sync_sigs_decode(b.p, b.len, &id, &ok_, &t) == -EPROTO, "a 1-byte block: refused");
	sync_sigs_encode(&s, 3, 0, &b);
	ok(!sync_sigs_decode(b.p, b.len, &id, &ok_, &t) && id == 3 && !ok_, "'no such file'");
	fd = file_of(data, 1000);
	ok(sync_sigs_make(fd, sizeof(data), &t) == -EAGAIN, "a file shorter than said: -EAGAIN");
	close(fd);
	sync_sigs_release(&s);
	buf_release(&b);
}

/* A node that sends the same weak checksum for every block: literals, in bounded time. */
static void test_hostile_sigs(void)
{
	const size_t n = 4 << 20;
	unsigned char *nw = xmalloc(n);
	struct sync_sigs s;
	struct rebuild rb;
	struct sync_hash hash;
	unsigned char d[SYNC_HASH_LEN];
	struct timespec t0, t1;
	uint32_t i;
	int fd, r;

	fill(nw, n);
	memset(&s, 0, sizeof(s));
	s.block = 2048;
	s.size = (uint64_t)SYNC_SIG_COUNT_MAX * 2048 - 1;
	s.n = SYNC_SIG_COUNT_MAX;
	s.weak = xcalloc(s.n, sizeof(*s.weak));
	s.strong = xcalloc(s.n, sizeof(*s.strong));
	/* Every block has the weak checksum of a zero block; the data has runs of zeros. */
	memset(nw + 1000, 0, 1 << 20);
	for (i = 0; i < s.n; i++) {
		s.weak[i] = sync_weak(nw + 1000, 2048);
		s.strong[i] = i;
	}
	memset(&rb, 0, sizeof(rb));
	buf_init(&rb.out, n + 1);
	rb.old_len = 0;
	fd = file_of(nw, n);
	sync_hash_init(&hash);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = sync_delta_scan(&s, fd, n, &ops, &rb, &hash);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(fd);
	sync_hash_final(&hash, d);
	ok(!r && rb.literal == n && rb.out.len == n && !memcmp(rb.out.p, nw, n),
	   "every weak checksum collides: all of it goes as literals");
	printf("# the scan took %.0f ms\n",
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	sync_sigs_release(&s);
	buf_release(&rb.out);
	free(nw);
}

int main(void)
{
	const char *t = getenv("TMPDIR");

	xsnprintf(tmpdir, sizeof(tmpdir), "%s/skiff-test-delta.XXXXXX", t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	plan_run(test_edits);
	plan_run(test_weak_rolls);
	plan_run(test_content_hash);
	plan_run(test_sigs_records);
	plan_run(test_hostile_sigs);
	rmdir(tmpdir);
	return done_testing();
}
