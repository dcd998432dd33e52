#include "lib/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <mbedtls/sha256.h>
#include <string.h>
#include <unistd.h>

#include "lib/sha256_x86.h"
#include "lib/banned.h"

_Static_assert(sizeof(mbedtls_sha256_context) <= sizeof(struct sha256_ctx),
               "struct sha256_ctx is too small for mbedtls_sha256_context");

static mbedtls_sha256_context *ctx(struct sha256_ctx *c)
{
	return (mbedtls_sha256_context *)(void *)c->opaque;
}

void sha256_init(struct sha256_ctx *c)
{
	mbedtls_sha256_init(ctx(c));
	/* Only fails for bad parameters in this mbedTLS version. */
	(void)mbedtls_sha256_starts_ret(ctx(c), 0);
}

/*
 * mbedtls_sha256_update_ret() with the whole blocks done by the x86 SHA extensions: the
 * same bookkeeping of total[] and buffer[] (mbedTLS 2.28's), so that its finish pads as
 * usual.
 */
static void update_x86(mbedtls_sha256_context *m, const unsigned char *p, size_t len)
{
	size_t left = m->total[0] & 0x3f, fill = 64 - left;

	m->total[0] += (uint32_t)len;
	if (m->total[0] < (uint32_t)len)
		m->total[1]++;
	m->total[1] += (uint32_t)((uint64_t)len >> 32);
	if (left && len >= fill) {
		memcpy(m->buffer + left, p, fill);
		sha256_x86_blocks(m->state, m->buffer, 1);
		p += fill;
		len -= fill;
		left = 0;
	}
	if (len >= 64) {
		sha256_x86_blocks(m->state, p, len / 64);
		p += len & ~(size_t)0x3f;
		len &= 0x3f;
	}
	if (len)
		memcpy(m->buffer + left, p, len);
}

void sha256_update(struct sha256_ctx *c, const void *data, size_t len)
{
	if (len && sha256_x86_available())
		update_x86(ctx(c), data, len);
	else
		(void)mbedtls_sha256_update_ret(ctx(c), data, len);
}

void sha256_final(struct sha256_ctx *c, unsigned char out[32])
{
	(void)mbedtls_sha256_finish_ret(ctx(c), out);
	mbedtls_sha256_free(ctx(c));
}

void sha256_final_hex(struct sha256_ctx *c, char hex[SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char d[32];
	int i;

	sha256_final(c, d);
	for (i = 0; i < 32; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[64] = '\0';
}

void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1])
{
	struct sha256_ctx c;

	sha256_init(&c);
	sha256_update(&c, data, len);
	sha256_final_hex(&c, hex);
}

int sha256_fd(int fd, char hex[SHA256_HEX_LEN + 1])
{
	struct sha256_ctx c;
	char blk[65536];
	ssize_t n;

	sha256_init(&c);
	for (;;) {
		n = read(fd, blk, sizeof(blk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sha256_update(&c, blk, (size_t)n);
	}
	if (n < 0) {
		int e = errno;

		sha256_final_hex(&c, hex);
		hex[0] = '\0';
		return -e;
	}
	sha256_final_hex(&c, hex);
	return 0;
}

int sha256_file(const char *path, char hex[SHA256_HEX_LEN + 1])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = sha256_fd(fd, hex);
	close(fd);
	return r;
}

int sha256_hex_valid(const char *s)
{
	size_t i;

	if (!s)
		return 0;
	for (i = 0; i < SHA256_HEX_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[SHA256_HEX_LEN] == '\0';
}
