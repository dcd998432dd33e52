#ifndef SKIFF_SHA256_H
#define SKIFF_SHA256_H

/* SHA-256 through mbedTLS. Digests are printed as 64 lowercase hex chars plus NUL. */

#include <stddef.h>

#define SHA256_HEX_LEN 64

struct sha256_ctx {
	unsigned char opaque[128]; /* holds an mbedtls_sha256_context; checked at compile time */
};

void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
/* Writes the hex digest to hex[65] and frees the context. */
void sha256_final_hex(struct sha256_ctx *c, char hex[SHA256_HEX_LEN + 1]);
void sha256_final(struct sha256_ctx *c, unsigned char out[32]);

void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);
/* 1 when s is a hex digest as these print it: SHA256_HEX_LEN of [0-9a-f], then the end. */
int sha256_hex_valid(const char *s);
/* Hashes a file by reading it; 0 or -errno. */
int sha256_file(const char *path, char hex[SHA256_HEX_LEN + 1]);
int sha256_fd(int fd, char hex[SHA256_HEX_LEN + 1]);

#endif
