/*
 * lib/sha256.c with the x86 SHA extensions (lib/sha256_x86.c): FIPS 180-4 vectors, and
 * the same digest as mbedTLS's portable code for every length from 0 to 300 and for
 * random inputs fed in random pieces.
 */
#include <mbedtls/sha256.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/harness.h"
#include "lib/sha256.h"
#include "lib/sha256_x86.h"
#include "lib/util.h"
#include "lib/banned.h"

static void hex32(const unsigned char d[32], char out[65])
{
	static const char digits[] = "0123456789abcdef";
	int i;

	for (i = 0; i < 32; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[64] = '\0';
}

/* mbedTLS alone, never the x86 path. */
static void portable(const unsigned char *p, size_t len, char out[65])
{
	unsigned char d[32];

	mbedtls_sha256_ret(p, len, d, 0);
	hex32(d, out);
}

static void test_vectors(void)
{
	char hex[65];
	char *million = xmalloc(1000000);

	printf("# SHA-NI on this CPU: %s\n", sha256_x86_available() ? "yes" : "no");
	sha256_hex("", 0, hex);
	is_str(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "empty");
	sha256_hex("abc", 3, hex);
	is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "abc");
	sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	is_str(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
	       "two blocks");
	memset(million, 'a', 1000000);
	sha256_hex(million, 1000000, hex);
	is_str(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
	       "a million a's");
	free(million);
}

static void test_same_as_portable(void)
{
	unsigned char buf[70000];
	char a[65], b[65];
	struct sha256_ctx c;
	uint32_t x = 12345;
	size_t i, len, off, piece, bad = 0, runs = 0;

	for (i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245 + 12345;
		buf[i] = (unsigned char)(x >> 16);
	}
	for (len = 0; len <= 300; len++, runs++) {
		sha256_hex(buf, len, a);
		portable(buf, len, b);
		bad += strcmp(a, b) != 0;
	}
	for (i = 0; i < 200; i++, runs++) {
		x = x * 1103515245 + 12345;
		len = (x >> 8) % sizeof(buf);
		sha256_init(&c);
		for (off = 0; off < len; off += piece) {
			x = x * 1103515245 + 12345;
			piece = (x >> 8) % 200;
			if (piece > len - off)
				piece = len - off;
			sha256_update(&c, buf + off, piece);
		}
		sha256_final_hex(&c, a);
		portable(buf, len, b);
		bad += strcmp(a, b) != 0;
	}
	is_int(bad, 0, "%zu inputs hash the same as mbedTLS's portable code", runs);
}

static void test_hex_valid(void)
{
	char hex[SHA256_HEX_LEN + 2];

	sha256_hex("abc", 3, hex);
	ok(sha256_hex_valid(hex), "a digest sha256_hex() printed");
	ok(!sha256_hex_valid(NULL), "not NULL");
	ok(!sha256_hex_valid(""), "not empty");
	hex[SHA256_HEX_LEN - 1] = '\0';
	ok(!sha256_hex_valid(hex), "not 63 digits");
	hex[SHA256_HEX_LEN - 1] = 'a';
	hex[SHA256_HEX_LEN] = '0';
	hex[SHA256_HEX_LEN + 1] = '\0';
	ok(!sha256_hex_valid(hex), "not 65");
	hex[SHA256_HEX_LEN] = '\0';
	ok(sha256_hex_valid(hex), "64 again");
	hex[7] = 'A';
	ok(!sha256_hex_valid(hex), "not upper case");
	hex[7] = 'g';
	ok(!sha256_hex_valid(hex), "not a letter past f");
}

int main(void)
{
	plan_run(test_vectors);
	plan_run(test_same_as_portable);
	plan_run(test_hex_valid);
	return done_testing();
}
