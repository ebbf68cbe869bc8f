#!/bin/sh
# Runs every test: the unit binaries in $BUILD/tests/unit, then every tests/t_*.sh, JOBS
# files at a time (default: three per core, since most files wait on servers, clients and
# windows far more than they compute; JOBS=1 runs one at a time).  A file whose header has
# the line "# alone: WHY" (a cost or timing measurement) runs after the others, by itself.
# Each file's output is kept whole and printed in file order, each under its "== name" line.
# Each prints "PASS name", "FAIL name: why" or "SKIP name: why" lines; this script counts
# them and ends with the 10 slowest files and their times, the reasons of the skips,
# grouped (each reason once, then the tests and checks it skipped), then the failed checks,
# one a line (test/check, or the test alone when it failed without a FAIL line of its own),
# and last the count line: "N passed, N failed" (", N skipped" added when some were).  A
# test that exits non-zero without a FAIL line counts as one failure, so a crash cannot pass
# silently; one still running after ST_TEST_TIMEOUT seconds (default 900) is ended, with
# every process of its group, and counts as one too.
# TESTS="t_docs test_policy" runs those only (a test runs when its name, without .sh, is a
# substring of TESTS).  Files start longest first, by the times of the last run kept in
# $BUILD/tests/times (name, wall and CPU milliseconds), so the longest does not start last.
BUILD=${BUILD:-build}
export BUILD
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export ROOT
ONLY=${TESTS:-}
CORES=$(nproc 2>/dev/null || echo 1)
JOBS=${JOBS:-$((CORES * 3))}
case "$JOBS" in '' | *[!0-9]* | 0) echo "run.sh: JOBS=$JOBS is not a number of jobs (1 or more)" >&2; exit 2 ;; esac
LIMIT=${ST_TEST_TIMEOUT:-900}
case "$BUILD" in /*) TIMES=$BUILD/tests/times ;; *) TIMES=$ROOT/$BUILD/tests/times ;; esac
R=$(mktemp -d /tmp/socktune-run.XXXXXX)
trap 'stop_all; rm -rf "$R"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Port reservations (free_port, tests/lib.sh) that a test ended without removing (SIGKILL):
# those whose test is gone.
for d in "${ST_PORTS_DIR:-/tmp/socktune-test-ports}"/*; do
	[ -d "$d" ] || continue
	p=$(cat "$d/pid" 2>/dev/null)
	if [ -n "$p" ] && ! kill -0 "$p" 2>/dev/null; then rm -rf "$d"; fi
done

# ---- the list: $R/list holds "index name kind" in file order (kind: unit, sh or alone; the
# path follows from the kind: no word of it is split, whatever the tree's directory) ----
n=0
for t in "$BUILD"/tests/unit/*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	case "$ONLY" in "" | *"$name"*) ;; *) continue ;; esac
	n=$((n + 1))
	echo "$n $name unit"
done >"$R/list"
n=$(wc -l <"$R/list")
for t in "$ROOT"/tests/t_*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	case "$ONLY" in "" | *"$name"*) ;; *) continue ;; esac
	n=$((n + 1))
	if sed -n '1,30p' "$t" | grep -q '^# alone: '; then kind=alone; else kind=sh; fi
	echo "$n $name $kind"
done >>"$R/list"
total=$(wc -l <"$R/list")

# The order they start in: the side-by-side ones longest first (their last time, 0 when
# unknown, ties in file order), then the alone ones in file order.
# (a first run of another build, make sanitize's, goes by the plain build's times)
if [ ! -r "$TIMES" ]; then
	TIMES_IN=/dev/null
	[ -r "$ROOT/build/tests/times" ] && TIMES_IN=$ROOT/build/tests/times
fi
awk 'FILENAME != ARGV[2] { t[$1] = $2; next } $3 != "alone" { print (($2 in t) ? t[$2] : 0), $1 }' \
	"${TIMES_IN:-$TIMES}" "$R/list" | sort -k1,1nr -k2,2n | awk '{ print $2 }' >"$R/order"
awk '$3 == "alone" { print $1 }' "$R/list" >"$R/alone"

# ---- running: each job writes its index to the FIFO when done ----
mkfifo "$R/done"
exec 3<>"$R/done"

now_ms() { date +%s%3N; }

# start INDEX: the file of that index in the background, in a process group of its own
# (timeout(1)'s), its output in $R/INDEX.out, then "STATUS WALL-MS CPU-MS" in $R/INDEX.rc
# and the index on the FIFO.
start() {
	set -- $(sed -n "$1p" "$R/list")
	(
		t0=$(now_ms)
		if [ "$3" = unit ]; then
			timeout -k 10 "$LIMIT" "$BUILD/tests/unit/$2" >"$R/$1.out" 2>&1 </dev/null 3>&- &
		else
			timeout -k 10 "$LIMIT" sh "$ROOT/tests/$2.sh" >"$R/$1.out" 2>&1 </dev/null 3>&- &
		fi
		echo $! >"$R/$1.pid"
		wait $!
		rc=$?
		# the CPU its processes took (those waited for: user and system, in ms)
		# (times written to a file: in a pipe it would run in a child of its own)
		times >"$R/$1.times"
		cpu=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
			printf "%d", t * 1000 }' "$R/$1.times")
		echo "$rc $(($(now_ms) - t0)) ${cpu:-0}" >"$R/$1.rc.tmp" && mv "$R/$1.rc.tmp" "$R/$1.rc"
		rm -f "$R/$1.pid"
		echo "$1" >&3
	) &
}

# stop_all: ends what still runs (an interrupted run): timeout(1) passes the signal on to
# its whole group.
stop_all() {
	for _p in "$R"/*.pid; do
		[ -f "$_p" ] && kill -TERM "$(cat "$_p")" 2>/dev/null
	done
	wait # (each within 10 s: timeout(1) kills what is left then)
}

pass=0 fail=0 skip=0 shown=1

# report INDEX: its output, then its counts added and its failures and skips noted.
report() {
	set -- $(sed -n "$1p" "$R/list")
	name=$2 out=$R/$1.out
	read -r rc ms cpu <"$R/$1.rc"
	echo "== $name"
	cat "$out"
	p=$(grep -c '^PASS ' "$out")
	f=$(grep -c '^FAIL ' "$out")
	s=$(grep -c '^SKIP ' "$out")
	# "test/check" of each FAIL line, for the summary
	sed -n "s/^FAIL \([^:]*\):.*/$name\/\1/p" "$out" >>"$R/fails"
	if { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && [ "$ms" -ge $((LIMIT * 1000)) ]; then
		echo "FAIL $name: still running after $LIMIT s, ended (ST_TEST_TIMEOUT)"
		echo "$name (still running after $LIMIT s)" >>"$R/fails"
		f=$((f + 1))
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $name: exited with status $rc"
		echo "$name (exited with status $rc)" >>"$R/fails"
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
		echo "FAIL $name: reported no result"
		echo "$name (reported no result)" >>"$R/fails"
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	# "reason<TAB>test/check" for the summary
	sed -n "s/^SKIP \([^:]*\): \(.*\)$/\2	$name\/\1/p" "$out" >>"$R/skips"
	echo "$name $ms ${cpu:-0}" >>"$R/times"
}

# flush: every file done whose earlier files are all shown, in file order.
flush() {
	while [ "$shown" -le "$total" ] && [ -f "$R/$shown.rc" ]; do
		report "$shown"
		shown=$((shown + 1))
	done
}

# run_batch FILE JOBS: the indexes listed in FILE, at most JOBS at once, shown as they can be.
run_batch() {
	running=0
	for i in $(cat "$1"); do
		while [ "$running" -ge "$2" ]; do
			read -r _ <&3
			running=$((running - 1))
			flush
		done
		start "$i"
		running=$((running + 1))
	done
	while [ "$running" -gt 0 ]; do
		read -r _ <&3
		running=$((running - 1))
		flush
	done
}

: >"$R/fails"
: >"$R/skips"
: >"$R/times"
run_batch "$R/order" "$JOBS"
run_batch "$R/alone" 1
flush
wait

# the times of this run, for the next one's order (a partial run adds to the last full one's)
if mkdir -p "$(dirname "$TIMES")" 2>/dev/null; then
	awk 'FILENAME != ARGV[2] { t[$1] = $2 " " $3; next } { t[$1] = $2 " " $3 }
		END { for (k in t) print k, t[k] }' "${TIMES_IN:-$TIMES}" "$R/times" | sort >"$R/times.new" &&
		cp "$R/times.new" "$TIMES" 2>/dev/null
fi

echo
if [ "$(wc -l <"$R/times")" -gt 1 ]; then
	echo "slowest files (JOBS=$JOBS; wall time, and the CPU its processes took):"
	sort -k2,2nr "$R/times" | head -n 10 |
		awk '{ printf "  %-24s %6.1f s  cpu %6.1f s\n", $1, $2 / 1000, $3 / 1000 }'
	awk '{ w += $2; c += $3 } END { printf "  all %d files: %.0f s one after another, cpu %.0f s\n", NR, w / 1000, c / 1000 }' "$R/times"
	echo
fi
if [ -s "$R/skips" ]; then
	echo "skipped, by reason:"
	sort "$R/skips" | awk -F '\t' '$1 != r { if (NR > 1) print line; r = $1; line = "  " r ": " $2; next }
		{ line = line ", " $2 } END { print line }'
	echo
fi
if [ -s "$R/fails" ]; then
	echo "failed:"
	sed 's/^/  /' "$R/fails"
	echo
fi
if [ "$skip" -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
