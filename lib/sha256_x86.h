#ifndef SKIFF_SHA256_X86_H
#define SKIFF_SHA256_X86_H

/*
 * The SHA-256 compression function on the x86 SHA extensions (SHA-NI: Intel since Ice
 * Lake and Goldmont, AMD since Zen), about six times mbedTLS's portable code. lib/sha256.c
 * uses it when the CPU has it; so does the self-copy's stub (bootstrap/launch/stub/).
 * Pure functions, no state: safe from any thread.
 */

#include <stddef.h>
#include <stdint.h>

/* 1 if this CPU has SHA-NI, SSSE3 and SSE4.1 (asked once with cpuid); 0 elsewhere. */
int sha256_x86_available(void);

/*
 * Runs n 64-byte blocks of data through state (the eight words a..h, in the order of
 * FIPS 180-4). Only call it when sha256_x86_available() said 1.
 */
void sha256_x86_blocks(uint32_t state[8], const unsigned char *data, size_t n);

#endif
