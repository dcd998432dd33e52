/*
 * SHA-256 blocks on the x86 SHA extensions. See lib/sha256_x86.h.
 *
 * The round structure is Intel's ("Intel SHA Extensions", 2013): the state lives in two
 * registers as ABEF and CDGH; sha256rnds2 does two rounds; the message schedule of four
 * words at a time is sha256msg1, an add of the words seven back, and sha256msg2.
 * Checked against the portable code on random inputs by tests/unit/test-sha256.c.
 */
#include "lib/sha256_x86.h"

#if defined(__x86_64__) || defined(__i386__)

#include <cpuid.h>
#include <immintrin.h>

#include "lib/banned.h"

static const uint32_t k256[64] = {
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

int sha256_x86_available(void)
{
	static int known = -1;
	unsigned a, b, c, d;
	int ok = __atomic_load_n(&known, __ATOMIC_RELAXED);

	if (ok >= 0)
		return ok;
	ok = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSSE3) && (c & bit_SSE4_1);
	ok = ok && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
	/* Threads may race here: each computes the same answer, and stores it whole. */
	__atomic_store_n(&known, ok, __ATOMIC_RELAXED);
	return ok;
}

__attribute__((target("sha,ssse3,sse4.1"))) void
sha256_x86_blocks(uint32_t state[8], const unsigned char *data, size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i s0, s1, t, w, save0, save1, m[4];
	int g;

	/* a..h as ABEF and CDGH. */
	t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)&state[0]), 0xb1);
	s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)&state[4]), 0x1b);
	s0 = _mm_alignr_epi8(t, s1, 8);
	s1 = _mm_blend_epi16(s1, t, 0xf0);
	for (; n; n--, data += 64) {
		save0 = s0;
		save1 = s1;
		for (g = 0; g < 16; g++) {
			if (g < 4) {
				m[g] = _mm_shuffle_epi8(
				        _mm_loadu_si128(
				                (const __m128i *)(const void *)(data + 16 * g)),
				        bswap);
			} else {
				/* W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], four at a
				 * time: m[g&3] holds the words 16 back, m[(g+1)&3] 12 back,
				 * m[(g+2)&3] 8 and m[(g+3)&3] 4 back. */
				t = _mm_sha256msg1_epu32(m[g & 3], m[(g + 1) & 3]);
				t = _mm_add_epi32(
				        t, _mm_alignr_epi8(m[(g + 3) & 3], m[(g + 2) & 3], 4));
				m[g & 3] = _mm_sha256msg2_epu32(t, m[(g + 3) & 3]);
			}
			w = _mm_add_epi32(
			        m[g & 3],
			        _mm_loadu_si128((const __m128i *)(const void *)&k256[4 * g]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, w);
			s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(w, 0x0e));
		}
		s0 = _mm_add_epi32(s0, save0);
		s1 = _mm_add_epi32(s1, save1);
	}
	t = _mm_shuffle_epi32(s0, 0x1b);
	s1 = _mm_shuffle_epi32(s1, 0xb1);
	_mm_storeu_si128((__m128i *)(void *)&state[0], _mm_blend_epi16(t, s1, 0xf0));
	_mm_storeu_si128((__m128i *)(void *)&state[4], _mm_alignr_epi8(s1, t, 8));
}

#else

int sha256_x86_available(void)
{
	return 0;
}

void sha256_x86_blocks(uint32_t state[8], const unsigned char *data, size_t n)
{
	(void)state, (void)data, (void)n;
}

#endif
