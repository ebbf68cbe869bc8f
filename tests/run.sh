#!/bin/sh
# Runs every test: the unit binaries in $BUILD/tests/unit, then every tests/t_*.sh.
# Each prints "PASS name", "FAIL name: why" or "SKIP name: why" lines; this script counts
# them and ends with the reasons of the skips, grouped (each reason once, then the tests and
# checks it skipped), then the failed checks, one a line (test/check, or the test alone when
# it failed without a FAIL line of its own), and last the count line: "N passed, N failed"
# (", N skipped" added when some were).  A test that exits non-zero without a FAIL line
# counts as one failure, so a crash cannot pass silently.
# TESTS="t_docs test_policy" runs those only (a test runs when its name, without .sh, is a
# substring of TESTS).
BUILD=${BUILD:-build}
export BUILD
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export ROOT
ONLY=${TESTS:-}
out=$(mktemp)
skips=$(mktemp)
fails=$(mktemp)
trap 'rm -f "$out" "$skips" "$fails"' EXIT
pass=0 fail=0 skip=0

run_one() {
	name=$1
	shift
	case "$ONLY" in "" | *"$name"*) ;; *) return ;; esac
	echo "== $name"
	"$@" >"$out" 2>&1
	rc=$?
	cat "$out"
	p=$(grep -c '^PASS ' "$out")
	f=$(grep -c '^FAIL ' "$out")
	s=$(grep -c '^SKIP ' "$out")
	# "test/check" of each FAIL line, for the summary
	sed -n "s/^FAIL \([^:]*\):.*/$name\/\1/p" "$out" >>"$fails"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $name: exited with status $rc"
		echo "$name (exited with status $rc)" >>"$fails"
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
		echo "FAIL $name: reported no result"
		echo "$name (reported no result)" >>"$fails"
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	# "reason<TAB>test/check" for the summary
	sed -n "s/^SKIP \([^:]*\): \(.*\)$/\2	$name\/\1/p" "$out" >>"$skips"
}

for t in "$BUILD"/tests/unit/*; do
	[ -x "$t" ] && run_one "$(basename "$t")" "$t"
done
for t in "$ROOT"/tests/t_*.sh; do
	[ -f "$t" ] && run_one "$(basename "$t" .sh)" sh "$t"
done

echo
if [ -s "$skips" ]; then
	echo "skipped, by reason:"
	sort "$skips" | awk -F '\t' '$1 != r { if (NR > 1) print line; r = $1; line = "  " r ": " $2; next }
		{ line = line ", " $2 } END { print line }'
	echo
fi
if [ -s "$fails" ]; then
	echo "failed:"
	sed 's/^/  /' "$fails"
	echo
fi
if [ "$skip" -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
