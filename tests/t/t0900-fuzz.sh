#!/bin/sh
# A short bounded run of every libFuzzer harness in tests/fuzz/ (built by `make fuzz`)
# over its seed corpus, regression inputs included. `make fuzz-long` runs them for
# minutes; see docs/testing.md.
. "$(dirname "$0")/lib.sh"

FUZZ_SECS=${SKIFF_FUZZ_SECS:-4}
B=${B:-build}

test_expect_success 'make fuzz builds every harness' '
	{ make -C "$SRC_DIR" -s B="$B" fuzz >make.out 2>&1 || { cat make.out; exit 1; }; } &&
	for f in "$SRC_DIR"/tests/fuzz/fuzz-*.c; do
		n=$(basename "$f" .c)
		test -x "$SRC_DIR/$B/fuzz/$n" || { echo "missing $n"; exit 1; }
	done
'

for f in "$SRC_DIR"/tests/fuzz/fuzz-*.c; do
	name=$(basename "$f" .c)
	name=${name#fuzz-}
	test_expect_success "fuzz-$name: ${FUZZ_SECS}s over the corpus, no crash" '
		"$SRC_DIR/tests/fuzz/run.sh" "$SRC_DIR/$B/fuzz" '"$FUZZ_SECS"' "$TRASH/fuzz" '"$name"' >res &&
		cat res && cat res >>"$TRASH/summary" && grep -q "^fuzz-'"$name"': ok" res
	'
done
# The figures, for the record (TAP comments).
sed "s/^/# /" "$TRASH/summary" 2>/dev/null

test_done
