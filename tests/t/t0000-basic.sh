#!/bin/sh
# The binary itself: help, version, dispatch, static linking.
. "$(dirname "$0")/lib.sh"

test_expect_success 'version prints version, commit, sha256 and libraries' '
	skiff version >out &&
	grep -q "^skiff [0-9]" out &&
	grep -q "^commit: " out &&
	sha=$(sha256sum "$SKIFF_BIN" | cut -d" " -f1) &&
	grep -q "^sha256: *$sha\$" out &&
	for l in libyaml sqlite mbedtls libarchive zlib; do grep -q "^$l: *[0-9]" out || exit 1; done
'

test_expect_success 'version --json is one JSON object with the same facts' '
	skiff version --json >out.json &&
	python3 -c "import json,sys; d=json.load(open(\"out.json\")); assert d[\"sha256\"] and d[\"libraries\"][\"sqlite\"]"
'

test_expect_success 'help lists commands; every listed command has --help' '
	skiff help >out &&
	grep -q "^Commands:" out &&
	for c in $(sed -n "/^Commands:/,/^\$/p" out | awk "NF>1 {print \$1}"); do
		skiff $c --help >h || { echo "no help for $c"; exit 1; }
		grep -q "^usage: skiff $c" h || { echo "bad help for $c"; exit 1; }
	done
'

test_expect_success 'an unknown command suggests the nearest one' '
	expect_fail 2 skiff verison 2>err &&
	grep -q "did you mean .version." err &&
	test $(wc -l <err) = 1
'

test_expect_success 'no command prints help and exits 2' '
	expect_fail 2 skiff >out &&
	grep -q "^usage: skiff" out
'

test_expect_success 'the binary is static (file says so)' '
	file -L "$SKIFF_BIN" | grep -q "statically linked" || [ -n "${SKIFF_TEST_BIN:-}" ]
'

test_expect_success 'version runs alone in an empty chroot (no /proc, /dev, /etc)' '
	if [ "$(id -u)" != 0 ]; then
		if [ "${CI:-}" = true ]; then echo "needs root in CI"; exit 1; fi
		echo "# skipped: chroot needs root"; exit 0
	fi
	if ! file -L "$SKIFF_BIN" | grep -q "statically linked"; then
		echo "# not the static build (e.g. make test-asan): nothing to check"; exit 0
	fi
	mkdir -p empty-root &&
	cp "$SKIFF_BIN" empty-root/skiff &&
	test "$(find empty-root | wc -l)" = 2 &&
	chroot empty-root /skiff version >out &&
	sha=$(sha256sum empty-root/skiff | cut -d" " -f1) &&
	grep -q "^sha256: *$sha\$" out &&
	chroot empty-root /skiff version --json >/dev/null
'

test_expect_success 'every command --help starts with its usage line; hidden ones too' '
	for c in check help init node version __shim __supervisor; do
		skiff $c --help >h || exit 1
		head -1 h | grep -q "^usage: skiff $c" || { echo "bad help for $c"; exit 1; }
	done &&
	for c in up down status submit queue logs cancel autostop; do
		skiff node $c --help >h || exit 1
		head -1 h | grep -q "^usage: skiff node $c" || { echo "bad help for node $c"; exit 1; }
	done
'

test_expect_success 'help does not list hidden commands' '
	skiff help >out && ! grep -q __ out
'

test_done
