#!/bin/sh
# Makes sure the host can build the libFuzzer harnesses (`make fuzz`): clang with its
# fuzzer runtime, and the -dev libraries the sanitizer build links (build.sh installs
# those). Installs what is missing with apt (tests/lib/packages.sh). Debian 12, root.
set -eu
# clang and its fuzzer runtime: the group fuzz of tests/packages.list; the -dev libraries:
# build.sh.
sh "$(dirname "$0")/../lib/packages.sh" install fuzz
# The fuzzer runtime must link, whatever clang's version.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$tmp/t.c"
${FUZZ_CC:-clang} -fsanitize=fuzzer,address,undefined "$tmp/t.c" -o "$tmp/t" || {
	echo "tests/fuzz/setup.sh: error: ${FUZZ_CC:-clang} cannot link a libFuzzer harness" >&2
	exit 1
}
