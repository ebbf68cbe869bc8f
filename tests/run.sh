#!/bin/sh
# Runs every test: the unit binaries in $BUILD/tests/unit, then every tests/t_*.sh.
# Each prints "PASS name", "FAIL name: why" or "SKIP name: why" lines; this script counts
# them and ends with "N passed, N failed".  A test that exits non-zero without a FAIL line
# counts as one failure, so a crash cannot pass silently.
BUILD=${BUILD:-build}
export BUILD
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export ROOT
ONLY=${TESTS:-}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
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
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $name: exited with status $rc"
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
		echo "FAIL $name: reported no result"
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
}

for t in "$BUILD"/tests/unit/*; do
	[ -x "$t" ] && run_one "$(basename "$t")" "$t"
done
for t in "$ROOT"/tests/t_*.sh; do
	[ -f "$t" ] && run_one "$(basename "$t" .sh)" sh "$t"
done

echo
if [ "$skip" -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
