#include "lib/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <mbedtls/sha256.h>
#include <string.h>
#include <unistd.h>

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

void sha256_update(struct sha256_ctx *c, const void *data, size_t len)
{
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
