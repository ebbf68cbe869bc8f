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
# count NAME VALUE: VALUE as a number of 1 or more (leading zeros dropped), else refused
count() {
	case "$2" in '' | *[!0-9]*) ;; *)
		_c=${2#"${2%%[!0]*}"}
		[ -n "$_c" ] && [ ${#_c} -le 6 ] && { echo "$_c"; return 0; } ;;
	esac
	echo "run.sh: $1=$2 is not a number of 1 or more" >&2
	return 1
}
JOBS=$(count JOBS "${JOBS:-$((CORES * 3))}") || exit 2
LIMIT=$(count ST_TEST_TIMEOUT "${ST_TEST_TIMEOUT:-900}") || exit 2
case "$BUILD" in /*) TIMES=$BUILD/tests/times ;; *) TIMES=$ROOT/$BUILD/tests/times ;; esac
R="" total=0 shown=1 pass=0 fail=0 skip=0
trap 'stop_all; [ -z "$R" ] || rm -rf "$R"' EXIT
trap 'interrupted HUP 129' HUP
trap 'interrupted INT 130' INT
trap 'interrupted QUIT 131' QUIT
trap 'interrupted TERM 143' TERM
R=$(mktemp -d /tmp/socktune-run.XXXXXX) || exit 2
: >"$R/fails"
: >"$R/skips"
: >"$R/times"

# Port reservations (free_port, tests/lib.sh) that a test ended without removing (SIGKILL):
# those whose test is gone (moved aside first, so that of two runs sweeping at once one
# removes it, and put back should a test have taken the port again meanwhile).
for d in "${ST_PORTS_DIR:-/tmp/socktune-test-ports-$(id -u)}"/*; do
	[ -d "$d" ] || continue
	p=$(cat "$d/pid" 2>/dev/null)
	[ -n "$p" ] && ! kill -0 "$p" 2>/dev/null || continue
	mv "$d" "$d.gone.$$" 2>/dev/null || continue
	p=$(cat "$d.gone.$$/pid" 2>/dev/null)
	if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then mv "$d.gone.$$" "$d"; else rm -rf "$d.gone.$$"; fi
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
if [ "$total" -eq 0 ] && [ -n "$ONLY" ]; then
	echo "run.sh: TESTS=\"$ONLY\" names no test (a name is tests/t_NAME.sh without .sh, or a unit test's binary)" >&2
	exit 2
fi

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

# now_ms: the time in milliseconds (in seconds where date has no %N)
now_ms() {
	_t=$(date +%s%3N)
	case "$_t" in '' | *[!0-9]*) _t=$(($(date +%s) * 1000)) ;; esac
	echo "$_t"
}

# start INDEX: the file of that index in the background, in a process group of its own
# (timeout(1)'s), its output in $R/INDEX.out, then "STATUS WALL-MS CPU-MS" in $R/INDEX.rc
# and the index on the FIFO.
start() {
	set -- $(sed -n "$1p" "$R/list")
	echo "$1" >>"$R/started"
	(
		# (the index is said however this ends: run.sh waits for it)
		trap 'echo "$1" >&3' EXIT
		t0=$(now_ms)
		if [ "$3" = unit ]; then
			timeout -k 10 "$LIMIT" "$BUILD/tests/unit/$2" >"$R/$1.out" 2>&1 </dev/null 3>&- &
		else
			timeout -k 10 "$LIMIT" sh "$ROOT/tests/$2.sh" >"$R/$1.out" 2>&1 </dev/null 3>&- &
		fi
		echo $! >"$R/$1.pid.tmp" && mv "$R/$1.pid.tmp" "$R/$1.pid"
		wait $!
		rc=$?
		# the CPU its processes took (those waited for: user and system, in ms)
		# (times written to a file: in a pipe it would run in a child of its own)
		times >"$R/$1.times"
		cpu=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
			printf "%d", t * 1000 }' "$R/$1.times")
		echo "$rc $(($(now_ms) - t0)) ${cpu:-0}" >"$R/$1.rc.tmp" && mv "$R/$1.rc.tmp" "$R/$1.rc"
		rm -f "$R/$1.pid"
	) 2>>"$R/$1.out" &
}

# stop_all: ends what still runs (an interrupted run): timeout(1) passes the signal on to
# its whole group.  A file started an instant ago may not have said its pid yet: waited
# for (at most 2 s).
stop_all() {
	[ -n "$R" ] && [ -f "$R/started" ] || return 0
	_sa=0
	while [ $_sa -lt 40 ]; do
		_left=0
		for _i in $(cat "$R/started"); do
			[ -f "$R/$_i.rc" ] || [ -f "$R/$_i.stopped" ] && continue
			if [ -f "$R/$_i.pid" ]; then
				kill -TERM "$(cat "$R/$_i.pid")" 2>/dev/null
				: >"$R/$_i.stopped"
			else
				_left=1
			fi
		done
		[ $_left = 0 ] && break
		sleep 0.05
		_sa=$((_sa + 1))
	done
	wait # (each within 10 s: timeout(1) kills what is left then)
}

# report INDEX: its output, then its counts added and its failures and skips noted.
report() {
	set -- $(sed -n "$1p" "$R/list")
	name=$2 out=$R/$1.out
	rc=-1 ms=0 cpu=0
	[ -f "$R/$1.rc" ] && read -r rc ms cpu <"$R/$1.rc"
	# (one that ended by the signal stop_all sent it was stopped; one that had ended by
	# itself when the signal came keeps its status)
	if [ -f "$R/$1.stopped" ]; then
		case $rc in -1 | 124 | 129 | 130 | 131 | 137 | 143)
			rc=-1 why="stopped: run.sh got SIG$STOPPED_BY" ;;
		esac
	fi
	echo "== $name"
	[ -f "$out" ] && awk 1 "$out" # (a last line without its newline ends here all the same)
	touch "$out"
	p=$(grep -c '^PASS ' "$out")
	f=$(grep -c '^FAIL ' "$out")
	s=$(grep -c '^SKIP ' "$out")
	# "test/check" of each FAIL line, for the summary
	sed -n "s/^FAIL \([^:]*\):.*/$name\/\1/p" "$out" >>"$R/fails"
	if [ "$rc" -eq -1 ]; then
		echo "FAIL $name: ${why:-no status recorded (its job ended before it could write one)}"
		echo "$name (${why:-no status recorded})" >>"$R/fails"
		f=$((f + 1))
	elif { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && [ "$ms" -ge $((LIMIT * 1000)) ]; then
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

# flush_all [WHY]: every file not shown yet, in file order: done, or started and ended
# without a status (WHY: what ended it; else its job died first).  With WHY (an interrupted
# run), the files never started are named in one line, not counted.
flush_all() {
	notrun=""
	while [ "$shown" -le "$total" ]; do
		why=""
		if [ ! -f "$R/$shown.rc" ]; then
			if ! grep -qx "$shown" "$R/started" 2>/dev/null && [ -n "${1:-}" ]; then
				notrun="$notrun $(sed -n "${shown}p" "$R/list" | cut -d' ' -f2)"
				shown=$((shown + 1))
				continue
			fi
			why=${1:-"no status recorded (its job ended before it could write one)"}
		fi
		report "$shown"
		shown=$((shown + 1))
	done
	why=""
	[ -z "$notrun" ] || echo "not run ($1):$notrun"
}

# interrupted SIGNAL STATUS: a signal to run.sh: every file still running ended (with what it
# started, its own cleanup running), what every file said shown, the summary, and the
# signal's status.
interrupted() {
	trap '' HUP INT QUIT TERM
	STOPPED_BY=$1
	stop_all
	flush_all "stopped: run.sh got SIG$1"
	summary
	exit "$2"
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

# summary: the 10 slowest files, the skips by reason, the failed checks, then the count line.
summary() {
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
}

run_batch "$R/order" "$JOBS"
run_batch "$R/alone" 1
flush_all
wait

# the times of this run, for the next one's order (a partial run adds to the last full one's)
if mkdir -p "$(dirname "$TIMES")" 2>/dev/null; then
	awk 'FILENAME != ARGV[2] { t[$1] = $2 " " $3; next } { t[$1] = $2 " " $3 }
		END { for (k in t) print k, t[k] }' "${TIMES_IN:-$TIMES}" "$R/times" | sort >"$R/times.new" &&
		cp "$R/times.new" "$TIMES" 2>/dev/null
fi

summary
[ "$fail" -eq 0 ]
