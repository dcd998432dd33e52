#ifndef SKIFF_FUZZ_H
#define SKIFF_FUZZ_H

/*
 * Shared by the libFuzzer harnesses in tests/fuzz/ (built by `make fuzz`, see
 * docs/testing.md). Each harness defines LLVMFuzzerTestOneInput(); a property that
 * does not hold calls fuzz_fail(), which aborts so that libFuzzer saves the input.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define fuzz_fail(...)                                                                             \
	do {                                                                                       \
		fprintf(stderr, "fuzz property failed (%s:%d): ", __FILE__, __LINE__);             \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

#endif
