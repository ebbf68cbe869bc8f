#!/bin/sh
# sanitizer-check.sh DIR: after make sanitize, tsan or valgrind, fail when any sanitizer or
# memcheck report was written to DIR (the runs write their reports there as files, so a
# report cannot hide in the stderr of a process whose exit status no test looks at).
dir=$1
n=0
for f in "$dir"/* "$dir"/*/*; do
	[ -f "$f" ] && [ -s "$f" ] || continue
	n=$((n + 1))
	echo "== report: $f"
	head -n 60 "$f"
done
if [ "$n" -gt 0 ]; then
	echo "FAIL sanitizer: $n report(s) in $dir"
	exit 1
fi
echo "sanitizer: no reports in $dir"
