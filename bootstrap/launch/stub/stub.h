#ifndef SKIFF_STUB_H
#define SKIFF_STUB_H

/*
 * What the two self-copy stubs share (bootstrap/launch/stub/split.c, unzstd.c): a
 * portable SHA-256, messages, number parsing. They are programs of their own, sent to a
 * new node before skiff itself (docs/bootstrap.md), so they use nothing of skiff's
 * library and as little of libc as they can: every byte of them crosses the link.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#ifdef STUB_SHA_X86
#include "lib/sha256_x86.h"
#endif

struct stub_sha {
	uint32_t h[8];
	uint64_t total;
	unsigned char buf[64];
	size_t len;
};

static const uint32_t stub_k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
};

#define STUB_ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void stub_sha_block(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, k, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++)
		w[i] = (STUB_ROR(w[i - 2], 17) ^ STUB_ROR(w[i - 2], 19) ^ (w[i - 2] >> 10)) +
		       w[i - 7] +
		       (STUB_ROR(w[i - 15], 7) ^ STUB_ROR(w[i - 15], 18) ^ (w[i - 15] >> 3)) +
		       w[i - 16];
	a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
	for (i = 0; i < 64; i++) {
		t1 = k + (STUB_ROR(e, 6) ^ STUB_ROR(e, 11) ^ STUB_ROR(e, 25)) +
		     ((e & f) ^ (~e & g)) + stub_k[i] + w[i];
		t2 = (STUB_ROR(a, 2) ^ STUB_ROR(a, 13) ^ STUB_ROR(a, 22)) +
		     ((a & b) ^ (a & c) ^ (b & c));
		k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

static void stub_sha_blocks(uint32_t h[8], const unsigned char *p, size_t n)
{
#ifdef STUB_SHA_X86
	if (sha256_x86_available()) {
		sha256_x86_blocks(h, p, n);
		return;
	}
#endif
	for (; n; n--, p += 64)
		stub_sha_block(h, p);
}

static void stub_sha_init(struct stub_sha *s)
{
	static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

	memcpy(s->h, h0, sizeof(h0));
	s->total = 0;
	s->len = 0;
}

static void stub_sha_update(struct stub_sha *s, const unsigned char *p, size_t n)
{
	size_t take;

	s->total += n;
	if (s->len) {
		take = 64 - s->len < n ? 64 - s->len : n;
		memcpy(s->buf + s->len, p, take);
		s->len += take;
		p += take;
		n -= take;
		if (s->len < 64)
			return;
		stub_sha_blocks(s->h, s->buf, 1);
		s->len = 0;
	}
	if (n >= 64) {
		stub_sha_blocks(s->h, p, n / 64);
		p += n & ~(size_t)63;
		n &= 63;
	}
	memcpy(s->buf, p, n);
	s->len = n;
}

/* 1 if the digest is the 64 lowercase hex digits of hex. */
static int stub_sha_final_is(struct stub_sha *s, const char *hex)
{
	static const char digits[] = "0123456789abcdef";
	uint64_t bits = s->total * 8;
	unsigned char pad[72];
	size_t n = s->len < 56 ? 56 - s->len : 120 - s->len;
	int i;

	memset(pad, 0, sizeof(pad));
	pad[0] = 0x80;
	for (i = 0; i < 8; i++)
		pad[n + i] = (unsigned char)(bits >> (56 - 8 * i));
	stub_sha_update(s, pad, n + 8);
	if (strlen(hex) != 64)
		return 0;
	for (i = 0; i < 32; i++)
		if (hex[2 * i] != digits[(s->h[i / 4] >> (28 - 8 * (i % 4))) & 15] ||
		    hex[2 * i + 1] != digits[(s->h[i / 4] >> (24 - 8 * (i % 4))) & 15])
			return 0;
	return 1;
}

/* A whole decimal number, or -1. */
static long long stub_num(const char *s)
{
	long long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (1LL << 50))
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

static void stub_say(const char *who, const char *what, const char *arg)
{
	(void)!write(2, who, strlen(who));
	(void)!write(2, ": ", 2);
	(void)!write(2, what, strlen(what));
	if (arg) {
		(void)!write(2, " '", 2);
		(void)!write(2, arg, strlen(arg));
		(void)!write(2, "'", 1);
	}
	(void)!write(2, "\n", 1);
}

#endif
