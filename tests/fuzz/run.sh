#!/bin/sh
# run.sh TARGET...: run each libFuzzer target for FUZZ_SECONDS/N seconds (60 s in total by
# default) from the committed seeds in tests/fuzz/corpus/NAME.  New inputs go to a scratch
# directory, not into the committed corpus; crashes, hangs (-timeout) and sanitizer reports
# go to build-fuzz/artifacts and fail the run.
total=${FUZZ_SECONDS:-60}
n=$#
[ "$n" -gt 0 ] || { echo "run.sh: no targets"; exit 2; }
each=$((total / n))
[ "$each" -lt 1 ] && each=1
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$root/build-fuzz/artifacts"
failed=0
for t in "$@"; do
	name=$(basename "$t")
	seeds=$root/tests/fuzz/corpus/${name#fuzz_}
	work=$(mktemp -d /tmp/socktune-fuzz.XXXXXX)
	mkdir -p "$seeds"
	if "$t" -max_total_time="$each" -timeout=5 -rss_limit_mb=1024 -max_len=4096 \
		-artifact_prefix="$root/build-fuzz/artifacts/$name-" -print_final_stats=1 \
		"$work" "$seeds" >"$work.log" 2>&1; then
		echo "PASS $name: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work.log" | grep -o '[0-9]*$') runs in ${each}s"
	else
		echo "FAIL $name: see below"
		grep -v '^#' "$work.log" | tail -n 40
		failed=1
	fi
	rm -rf "$work" "$work.log"
done
exit $failed
