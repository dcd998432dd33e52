#!/bin/sh
# Makes sure the host can build the libFuzzer harnesses (`make fuzz`): clang with its
# fuzzer runtime, and the -dev libraries the sanitizer build links (build.sh installs
# those). Installs what is missing with apt, like build.sh. Debian 12, root or sudo.
set -eu
pkgs="clang libclang-rt-dev libyaml-dev libsqlite3-dev libmbedtls-dev libarchive-dev zlib1g-dev"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "tests/fuzz/setup.sh: installing$missing" >&2
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq || $sudo apt-get update
	# shellcheck disable=SC2086
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		$missing >/dev/null
fi
# The fuzzer runtime must link, whatever clang's version.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$tmp/t.c"
${FUZZ_CC:-clang} -fsanitize=fuzzer,address,undefined "$tmp/t.c" -o "$tmp/t" || {
	echo "tests/fuzz/setup.sh: error: ${FUZZ_CC:-clang} cannot link a libFuzzer harness" >&2
	exit 1
}
