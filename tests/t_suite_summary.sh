#!/bin/sh
# make test's summary names what failed: tests/run.sh, copied beside three tiny test files
# (one passing, one with a FAIL line, one that dies without one), lists "t_broken/wrong-sum"
# and "t_dies (exited with status 3)" under "failed:", after every test's own output and
# before the count line, which stays last; its status is not 0.  A run of the passing test
# alone (TESTS=t_fine) has no such block and status 0.
. "$(dirname "$0")/lib.sh"

S=$TMP/suite
mkdir -p "$S/tests"
cp "$ROOT/tests/run.sh" "$ROOT/tests/lib.sh" "$S/tests/"
printf '. "$(dirname "$0")/lib.sh"\npass adds\nskip v6 "no IPv6 here"\n' >"$S/tests/t_fine.sh"
printf '. "$(dirname "$0")/lib.sh"\npass first\nfail wrong-sum "2 + 2 is 5, on purpose"\n' \
	>"$S/tests/t_broken.sh"
printf 'echo "PASS started"\nexit 3\n' >"$S/tests/t_dies.sh"

# (ROOT unset: the copy's run.sh finds its own tree)
env -u ROOT TESTS='' BUILD="$S/build" sh "$S/tests/run.sh" >"$TMP/all.out" 2>&1
rc=$?
check fails-status "run.sh exited $rc with two tests failing" "$rc" -ne 0

# the lines after the last test's output ("== t_NAME" sections, then the summary)
awk '/^== / { n = NR } { l[NR] = $0 } END { for (i = n + 1; i <= NR; i++) print l[i] }' \
	"$TMP/all.out" | sed -n '/^$/,$p' >"$TMP/summary"
last=$(tail -n 1 "$TMP/all.out")
check count-line-last "last line: $last" "$last" = "3 passed, 2 failed, 1 skipped"
# "failed:" then the two names, each before the count line
block=$(sed -n '/^failed:$/,/^$/p' "$TMP/summary" | tr '\n' '|')
check names-failed "summary: $(tr '\n' '|' <"$TMP/summary")" \
	"$block" = "failed:|  t_broken/wrong-sum|  t_dies (exited with status 3)||"
n_fail=$(grep -n '^  t_broken/wrong-sum$' "$TMP/summary" | cut -d: -f1)
n_count=$(grep -n '^3 passed' "$TMP/summary" | cut -d: -f1)
check names-before-count "failure at line ${n_fail:-none}, count at ${n_count:-none} of the summary" \
	"${n_fail:-0}" -gt 0 -a "${n_fail:-0}" -lt "${n_count:-0}"

env -u ROOT TESTS='t_fine' BUILD="$S/build" sh "$S/tests/run.sh" >"$TMP/one.out" 2>&1
rc=$?
check one-test-passes "TESTS=t_fine: status $rc, $(tail -n 1 "$TMP/one.out")" \
	"$rc" -eq 0 -a "$(tail -n 1 "$TMP/one.out")" = "1 passed, 0 failed, 1 skipped"
check one-test-no-failed-block "TESTS=t_fine printed a failed: block" \
	-z "$(grep '^failed:' "$TMP/one.out")"
check one-test-only "TESTS=t_fine ran: $(grep '^== ' "$TMP/one.out" | tr '\n' ' ')" \
	"$(grep -c '^== ' "$TMP/one.out")" -eq 1
