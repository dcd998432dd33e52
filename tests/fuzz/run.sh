#!/bin/sh
# Runs the libFuzzer harnesses that `make fuzz` built, each for a bounded time, over the
# seed corpus in tests/fuzz/corpus/NAME/ (regression inputs included: they are replayed
# first). New inputs go to WORK/NAME, never into the tracked corpus; a crash leaves its
# input in WORK/artifacts/ and fails the run.
#
#   tests/fuzz/run.sh BINDIR SECONDS WORK [NAME...]
#
# Prints one line per fuzzer: its name, runs, seconds, corpus size, and the result.
set -u
bindir=$1 secs=$2 work=$3
shift 3
top=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -gt 0 ] || set -- $(cd "$top/tests/fuzz" && ls fuzz-*.c | sed 's/\.c$//; s/^fuzz-//')
mkdir -p "$work/artifacts"
failed=0
for name in "$@"; do
	bin=$bindir/fuzz-$name
	seeds=$top/tests/fuzz/corpus/$name
	[ -x "$bin" ] || { echo "fuzz-$name: not built ($bin)"; failed=1; continue; }
	mkdir -p "$work/$name"
	log=$work/$name.log
	# A private TMPDIR: the untar harness makes its sandbox there.
	mkdir -p "$work/tmp"
	TMPDIR=$work/tmp "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$work/artifacts/$name-" \
		"$work/$name" "$seeds" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
	units=$(ls "$work/$name" | wc -l)
	nseeds=$(ls "$seeds" 2>/dev/null | wc -l)
	if [ $rc = 0 ]; then
		echo "fuzz-$name: ok, ${runs:-?} runs in ${took:-$secs} s, $nseeds seeds, $units new inputs"
	else
		failed=1
		echo "fuzz-$name: FAILED (exit $rc); input saved as:" \
			$(ls "$work/artifacts/" | sed -n "s|^$name-|$work/artifacts/$name-|p")
		grep -E -A25 'ERROR: |fuzz property failed|runtime error|SUMMARY' "$log" | head -60 |
			sed 's/^/    /'
	fi
done
exit $failed
