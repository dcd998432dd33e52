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

test_done
