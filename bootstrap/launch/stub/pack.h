#ifndef SKIFF_STUB_PACK_H
#define SKIFF_STUB_PACK_H

/*
 * The self-copy's packed image, as the launcher sends it (bootstrap/launch/install.c) and
 * the stub takes it (bootstrap/launch/stub/unzstd.c): a header of PACK_HEAD_LEN bytes, the
 * packed length N in 15 decimal digits and a newline, then N bytes of one zstd frame of
 * the binary after the x86 branch filter below.
 */
#define PACK_HEAD_LEN 16

/*
 * The x86 branch filter: before zstd, the 32-bit displacement after each call (E8) or jmp
 * (E9) opcode byte becomes the absolute target, so that the many calls of one function
 * read the same bytes and compress as repeats (4% off the packed image). install.c
 * encodes the whole image; the stub decodes what it decompresses, as it comes.
 *
 * The rule, for a stream of n bytes: scan from 0; at an E8 or E9 byte at offset i with
 * i + 5 <= n, the 4 bytes after it (little-endian v) change and the scan goes on at i + 5;
 * any other byte, at i + 1. v changes only when its top byte is 00 or FF (a displacement
 * within 16 MiB either way), to the 25-bit sum (difference, to decode) of v and i + 5,
 * sign-extended: so the result's top byte is again 00 or FF, and the decoder, which sees
 * the same opcode bytes at the same offsets, knows which values to change back. Every
 * stream decodes to itself encoded and back (tests/unit/test-pack.c).
 */

#include <stddef.h>
#include <stdint.h>

static inline uint32_t bcj_sext25(uint32_t v)
{
	v &= 0x1ffffffu;
	return v & 0x1000000u ? v | 0xfe000000u : v;
}

/* The value at p (4 bytes, little-endian) for the opcode whose next offset is `next`. */
static inline void bcj_one(unsigned char *p, uint64_t next, int encode)
{
	uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	             (uint32_t)p[3] << 24;

	if ((v >> 24) != 0 && (v >> 24) != 0xff)
		return;
	v = bcj_sext25(encode ? v + (uint32_t)next : v - (uint32_t)next);
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/*
 * Filters p[0..len), the bytes of the stream from offset `base` on, in a stream of `total`
 * bytes. Returns how many bytes are final: all but an opcode whose 4 bytes are not all
 * in p yet (at most 5 at the end, only when base + len < total); the caller passes those
 * again, with what follows, at base + the returned count.
 */
static inline size_t bcj_filter(unsigned char *p, size_t len, uint64_t base, uint64_t total,
                                int encode)
{
	size_t i = 0;

	while (i < len) {
		if ((p[i] == 0xe8 || p[i] == 0xe9) && base + i + 5 <= total) {
			if (i + 5 > len)
				break;
			bcj_one(p + i + 1, base + i + 5, encode);
			i += 5;
		} else {
			i++;
		}
	}
	return i;
}

#endif
