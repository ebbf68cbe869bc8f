#!/bin/sh
# make test's summary names what failed: tests/run.sh, copied beside three tiny test files
# (one passing, one with a FAIL line, one that dies without one), lists "t_broken/wrong-sum"
# and "t_dies (exited with status 3)" under "failed:", after every test's own output and
# before the count line, which stays last; its status is not 0.  A run of the passing test
# on its own (TESTS=t_fine) has no such block and status 0.
. "$(dirname "$0")/lib.sh"

S=$TMP/suite
mkdir -p "$S/tests"
cp "$ROOT/tests/run.sh" "$ROOT/tests/lib.sh" "$ROOT/tests/lib_root.sh" "$S/tests/"
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

# Side by side: files of a suite of their own, each appending "start NAME" and "end NAME" to
# one log.  t_a and t_b each wait (bounded) for the other's start, so run side by side they
# overlap; t_a finishes last, yet its output comes first, whole; t_c says "# alone:" in its header and starts only once every
# other file has ended; with JOBS=1 no two files overlap at all.
P=$TMP/par
mkdir -p "$P/tests"
cp "$ROOT/tests/run.sh" "$ROOT/tests/lib.sh" "$ROOT/tests/lib_root.sh" "$P/tests/"
cat >"$P/tests/t_a.sh" <<'T'
. "$(dirname "$0")/lib.sh"
echo "start a" >>"$ST_SUITE_LOG"
pass a1
busywait 5000 grep -q '^start b' "$ST_SUITE_LOG"
sleep 0.3
pass a2
echo "end a" >>"$ST_SUITE_LOG"
T
cat >"$P/tests/t_b.sh" <<'T'
. "$(dirname "$0")/lib.sh"
echo "start b" >>"$ST_SUITE_LOG"
pass b1
[ -n "${ST_SUITE_PAIR:-}" ] && busywait 5000 grep -q '^start a' "$ST_SUITE_LOG"
echo "end b" >>"$ST_SUITE_LOG"
T
cat >"$P/tests/t_c.sh" <<'T'
#!/bin/sh
# alone: a measurement that wants the machine to itself
. "$(dirname "$0")/lib.sh"
echo "start c" >>"$ST_SUITE_LOG"
pass c1
echo "end c" >>"$ST_SUITE_LOG"
T
cat >"$P/tests/t_d.sh" <<'T'
. "$(dirname "$0")/lib.sh"
echo "start d" >>"$ST_SUITE_LOG"
pass d1
echo "end d" >>"$ST_SUITE_LOG"
T
: >"$TMP/par.log"
env -u ROOT TESTS='' JOBS=3 ST_SUITE_PAIR=1 ST_SUITE_LOG="$TMP/par.log" BUILD="$P/build" sh "$P/tests/run.sh" >"$TMP/par.out" 2>&1
rc=$?
check side-by-side.status "status $rc: $(tail -n 1 "$TMP/par.out")" "$rc" -eq 0 -a "$(tail -n 1 "$TMP/par.out")" = "5 passed, 0 failed"
# the sections in file order, each whole
sections=$(grep -v '^$' "$TMP/par.out" | sed -n '1,/^slowest/p' | grep -v '^slowest' | tr '\n' '|')
check side-by-side.file-order "output: $sections" \
	"$sections" = "== t_a|PASS a1|PASS a2|== t_b|PASS b1|== t_c|PASS c1|== t_d|PASS d1|"
log=$(tr '\n' '|' <"$TMP/par.log")
# t_a and t_b ran at once (each started before the other ended); t_c started after every
# other file ended, and ran by itself
at() { grep -n "^$1\$" "$TMP/par.log" | cut -d: -f1 | head -n 1; }
check side-by-side.overlap "log: $log" "$(at 'start b')" -lt "$(at 'end a')" -a \
	"$(at 'start a')" -lt "$(at 'end b')"
c_alone=$(awk '/^start c/ { c = NR } /^end/ { last = NR } /^start/ && !/^start c/ { s = NR }
	END { print (c > 0 && s < c && last == NR && $0 ~ /^end c/) ? 1 : 0 }' "$TMP/par.log")
check side-by-side.alone-last "log: $log" "$c_alone" = 1
check side-by-side.slowest "no list of the slowest files: $(tail -n 12 "$TMP/par.out" | tr '\n' '|')" \
	"$(sed -n '/^slowest files/,/^$/p' "$TMP/par.out" | grep -c '^  t_[abcd] ')" -eq 4
check side-by-side.times-kept "no $P/build/tests/times" "$(wc -l <"$P/build/tests/times" 2>/dev/null)" = 4

# JOBS=1: one file at a time (every start follows the end of the one before)
: >"$TMP/one.log"
env -u ROOT TESTS='t_b t_c t_d' JOBS=1 ST_SUITE_LOG="$TMP/one.log" BUILD="$P/build" sh "$P/tests/run.sh" >"$TMP/one1.out" 2>&1
serial=$(awk '/^start/ { if (open) bad = 1; open = 1 } /^end/ { open = 0 } END { print bad ? 0 : 1 }' "$TMP/one.log")
check jobs1.one-at-a-time "log: $(tr '\n' '|' <"$TMP/one.log")" "$serial" = 1 -a "$(grep -c '^start' "$TMP/one.log")" = 3

# A file still running after ST_TEST_TIMEOUT seconds is ended, with what it started, and
# counted as one failure
cat >"$P/tests/t_hang.sh" <<'T'
. "$(dirname "$0")/lib.sh"
pass before-hang
sh -c 'echo $$ >"$ST_SUITE_LOG.child"; exec sleep 60' &
sleep 60
T
env -u ROOT TESTS='t_hang' ST_TEST_TIMEOUT=2 ST_SUITE_LOG="$TMP/hang.log" BUILD="$P/build" \
	sh "$P/tests/run.sh" >"$TMP/hang.out" 2>&1
rc=$?
child=$(cat "$TMP/hang.log.child" 2>/dev/null)
busywait 5000 gone "${child:-1}"
check timeout.fails "status $rc: $(tr '\n' '|' <"$TMP/hang.out")" "$rc" -ne 0 -a \
	"$(tail -n 1 "$TMP/hang.out")" = "1 passed, 1 failed" -a \
	-n "$(grep '^  t_hang (still running after 2 s)$' "$TMP/hang.out")"
check timeout.ends-its-children "the file's child ${child:-?} still runs" -n "$child" -a ! -d "/proc/${child:-1}"

# one that dies of SIGKILL before the limit: its status, not a time-out
printf '. "$(dirname "$0")/lib.sh"\npass before-kill\necho "$TMP" >"$ST_SUITE_LOG"\nkill -KILL $$\n' \
	>"$P/tests/t_killed.sh"
env -u ROOT TESTS='t_killed' ST_SUITE_LOG="$TMP/killed.tmp" BUILD="$P/build" sh "$P/tests/run.sh" >"$TMP/killed.out" 2>&1
# (what its lib_exit could not remove)
ktmp=$(cat "$TMP/killed.tmp" 2>/dev/null)
case "$ktmp" in /tmp/socktune-test.*) rm -rf "$ktmp" ;; esac
check killed-not-timeout "$(tr '\n' '|' <"$TMP/killed.out")" \
	-n "$(grep '^  t_killed (exited with status 137)$' "$TMP/killed.out")"

# JOBS or a time limit that is no number of 1 or more is refused (JOBS=00 waited for ever),
# as is a TESTS that names no test
printf '. "$(dirname "$0")/lib.sh"\npass ok\n' >"$P/tests/t_ok.sh"
for bad in JOBS=x JOBS=00 ST_TEST_TIMEOUT=2s ST_TEST_TIMEOUT=0 TESTS=t_nosuch; do
	env -u ROOT TESTS='t_ok' "$bad" BUILD="$P/build" timeout 20 sh "$P/tests/run.sh" >"$TMP/bad.out" 2>&1
	rc=$?
	check "refused-$bad" "status $rc: $(cat "$TMP/bad.out")" "$rc" = 2 -a -n "$(grep -F "${bad%%=*}=" "$TMP/bad.out")"
done

# A last line without its newline is still a line of its own
printf '. "$(dirname "$0")/lib.sh"\nprintf "PASS no-newline"\n' >"$P/tests/t_nonl.sh"
env -u ROOT TESTS='t_nonl t_ok' BUILD="$P/build" sh "$P/tests/run.sh" >"$TMP/nonl.out" 2>&1
check no-newline "$(tr '\n' '|' <"$TMP/nonl.out")" -n "$(grep -x 'PASS no-newline' "$TMP/nonl.out")" -a \
	-n "$(grep -x '== t_nonl' "$TMP/nonl.out")" -a "$(tail -n 1 "$TMP/nonl.out")" = "2 passed, 0 failed"

# SIGTERM to run.sh: the file still running is ended with what it started, its cleanup runs
# (lib_exit removes its $TMP), what every file said is shown, t_b's failure among it, the
# count line last, and the status is SIGTERM's
cat >"$P/tests/t_long.sh" <<'T'
. "$(dirname "$0")/lib.sh"
pass long-started
echo "$TMP" >"$ST_SUITE_LOG.tmp"
sh -c 'echo $$ >"$ST_SUITE_LOG.child"; exec sleep 60' &
sleep 60
T
printf '. "$(dirname "$0")/lib.sh"\nfail quick "on purpose"\n: >"$ST_SUITE_LOG.quick"\n' >"$P/tests/t_quick.sh"
rm -f "$TMP/term.log.child" "$TMP/term.log.tmp" "$TMP/term.log.quick"
env -u ROOT TESTS='t_long t_quick' ST_SUITE_LOG="$TMP/term.log" BUILD="$P/build" \
	sh "$P/tests/run.sh" >"$TMP/term.out" 2>&1 &
run=$!
busywait 10000 test -s "$TMP/term.log.child"
# (t_quick ends by itself first, however loaded the machine: its failure is its own, not the
# signal's)
busywait 10000 test -f "$TMP/term.log.quick"
busywait 10000 sh -c "! pgrep -f '$P/tests/t_quick.sh' >/dev/null"
child=$(cat "$TMP/term.log.child" 2>/dev/null)
ttmp=$(cat "$TMP/term.log.tmp" 2>/dev/null)
kill -TERM $run
busywait 15000 gone $run
wait $run
rc=$?
check term.status "status $rc: $(tr '\n' '|' <"$TMP/term.out")" "$rc" = 143 -a \
	"$(tail -n 1 "$TMP/term.out")" = "1 passed, 2 failed"
check term.shown "$(tr '\n' '|' <"$TMP/term.out")" \
	-n "$(grep -x 'FAIL t_long: stopped: run.sh got SIGTERM' "$TMP/term.out")" -a \
	-n "$(grep -x 'FAIL quick: on purpose' "$TMP/term.out")" -a -n "$(grep -x 'PASS long-started' "$TMP/term.out")"
check term.ended "the file's child ${child:-?} runs, or its \$TMP ${ttmp:-?} is left" \
	-n "$child" -a ! -d "/proc/${child:-1}" -a -n "$ttmp" -a ! -d "${ttmp:-/}"
