/*
 * The self-copy's x86 branch filter (bootstrap/launch/stub/pack.h): worked values, every
 * stream decoding to itself (whole, and in the pieces the stub gets them in), and the
 * point of it: the built skiff ($B/skiff, run from the tree's root as make test does)
 * packs smaller filtered.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "tests/unit/harness.h"
#include "bootstrap/launch/stub/pack.h"
#include "lib/buf.h"
#include "lib/util.h"
#include "lib/banned.h"

static uint32_t rnd_state = 16;

static uint32_t rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return rnd_state >> 8;
}

static void test_values(void)
{
	/* call +0 at offset 0: the target is 5. */
	unsigned char a[] = {0xe8, 0, 0, 0, 0};
	/* jmp -5 at offset 0 (to itself): the target is 0. */
	unsigned char b[] = {0xe9, 0xfb, 0xff, 0xff, 0xff};
	/* A displacement past 16 MiB is left alone, and so is the byte after it. */
	unsigned char c[] = {0xe8, 0, 0, 0, 0x12, 0xe8};
	/* An opcode whose 4 bytes run past the end stays as it is. */
	unsigned char d[] = {0x90, 0xe8, 1, 2, 3};
	/* Two calls in a row: the second is at offset 5, its target 10 + 1. */
	unsigned char e[] = {0xe8, 0, 0, 0, 0, 0xe8, 1, 0, 0, 0};

	is_int(bcj_filter(a, sizeof(a), 0, sizeof(a), 1), 5, "a whole stream is final");
	ok(!memcmp(a, "\xe8\x05\x00\x00\x00", 5), "call +0 at 0 becomes call 5");
	bcj_filter(b, sizeof(b), 0, sizeof(b), 1);
	ok(!memcmp(b, "\xe9\x00\x00\x00\x00", 5), "jmp -5 at 0 becomes jmp 0");
	bcj_filter(b, sizeof(b), 0, sizeof(b), 0);
	ok(!memcmp(b, "\xe9\xfb\xff\xff\xff", 5), "and back: -5");
	bcj_filter(c, sizeof(c), 0, sizeof(c), 1);
	ok(!memcmp(c, "\xe8\x00\x00\x00\x12\xe8", 6), "a far displacement is left alone");
	bcj_filter(d, sizeof(d), 0, sizeof(d), 1);
	ok(!memcmp(d, "\x90\xe8\x01\x02\x03", 5), "a cut opcode at the end is left alone");
	bcj_filter(e, sizeof(e), 0, sizeof(e), 1);
	ok(!memcmp(e, "\xe8\x05\x00\x00\x00\xe8\x0b\x00\x00\x00", 10), "two calls in a row");
	is_int(bcj_filter(e, 7, 0, 20, 0), 5, "a piece that ends inside a call keeps it back");
}

/* decode(encode(x)) == x, whole and in random pieces, for random streams dense in E8/E9. */
static void test_round_trip(void)
{
	size_t runs = 0, bad_whole = 0, bad_pieces = 0, changed = 0, n, i;
	unsigned char *x = xmalloc(70000), *y = xmalloc(70000), *z = xmalloc(70000 + 8);

	for (runs = 0; runs < 400; runs++) {
		size_t held = 0, base = 0, in = 0;

		n = runs < 40 ? runs : rnd() % 70000;
		for (i = 0; i < n; i++) {
			uint32_t v = rnd() % 8;
			/* Opcodes, small displacements (00/FF high bytes) and anything. */
			x[i] = v < 2   ? (unsigned char)(0xe8 + v)
			       : v < 5 ? (unsigned char)(v == 4 ? 0xff : 0)
			               : (unsigned char)rnd();
		}
		memcpy(y, x, n);
		bcj_filter(y, n, 0, n, 1);
		changed += n && memcmp(x, y, n);
		/* The stub's way: pieces of any size, what is not final held back. */
		while (in < n || held) {
			size_t piece = in < n ? 1 + rnd() % 300 : 0, done;

			if (piece > n - in)
				piece = n - in;
			memcpy(z + held, y + in, piece);
			in += piece;
			held += piece;
			done = bcj_filter(z, held, base, n, 0);
			bad_pieces += memcmp(z, x + base, done) != 0;
			base += done;
			held -= done;
			memmove(z, z + done, held);
			if (!piece && held) {
				bad_pieces++; /* all input in, yet something held back */
				break;
			}
		}
		bad_pieces += base != n;
		bcj_filter(y, n, 0, n, 0);
		bad_whole += memcmp(x, y, n) != 0;
	}
	is_int(bad_whole, 0, "%zu streams decode whole to what was encoded", runs);
	is_int(bad_pieces, 0, "and in random pieces, as the stub decodes them");
	ok(changed > runs / 2, "the filter changes such streams (%zu of %zu)", changed, runs);
	free(x);
	free(y);
	free(z);
}

static void test_packs_smaller(void)
{
	struct buf img = BUF_INIT((size_t)256 << 20);
	char *path = xasprintf("%s/skiff", getenv("B") ? getenv("B") : "build");
	size_t plain, filtered, cap;
	void *z;

	if (buf_read_file(&img, path)) {
		/* Never in CI, where make test has built it first. */
		ok(!getenv("CI"), "# SKIP no built skiff at %s", path);
		free(path);
		return;
	}
	free(path);
	cap = ZSTD_compressBound(img.len);
	z = xmalloc(cap);
	plain = ZSTD_compress(z, cap, img.p, img.len, 9);
	bcj_filter((unsigned char *)img.p, img.len, 0, img.len, 1);
	filtered = ZSTD_compress(z, cap, img.p, img.len, 9);
	ok(!ZSTD_isError(plain) && !ZSTD_isError(filtered) && filtered < plain,
	   "skiff packs smaller filtered: %zu bytes against %zu", filtered, plain);
	free(z);
	buf_release(&img);
}

int main(void)
{
	plan_run(test_values);
	plan_run(test_round_trip);
	plan_run(test_packs_smaller);
	return done_testing();
}
