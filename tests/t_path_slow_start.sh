#!/bin/sh
# slow-start-limited, on a real 80 ms path (pathemu, 40 ms each way) with a loss-based
# congestion control in the server's namespace (cubic where the host allows it there, else
# reno: neither paces, so a flight leaves at once): a plain server that writes a 46,000-byte
# preamble then a token on each new connection, started in a cgroup of the test's own.  The
# token takes 4 round trips (the handshake, then 10, 20 and 2 segments); doctor and watch
# name slow-start-limited from the connections as the kernel freed them, with the flights
# needed at the initial window in force (10), the round trips the kernel measured (busy time
# over min_rtt) and a fix sized from the responses; that fix, run as printed, brings a new
# connection's token to 2 round trips (the handshake and one flight: the flights counted by
# the client kernel's receive timestamps, so a loaded machine's late reads do not count; the
# clock's time over tcpi_min_rtt is printed beside), and doctor then finds none (the window
# in force is the program's).
. "$(dirname "$0")/lib.sh"

path_needs path_slow_start
if ! command -v curl >/dev/null; then
	skip path_slow_start "no curl"
	exit 0
fi
cg_test_dir path_slow_start
PF=$ROOT/tests/py/pathfind.py
path_up path_slow_start ss --delay 40ms --seconds 90
CC=$(path_loss_based "$NB") || { fail path_slow_start.setup "no loss-based congestion control in $NB"; exit 0; }
# the server: in end b, then moved into the test's cgroup (its listener is made in both)
path_serve path_slow_start srv sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG" \
	$PY "$PF" serve 5001 pre 46000
before=$(in_a $PY "$PF" token 198.18.1.1 5001 2 0)
echo "plain ($CC): $before"
check path_slow_start.plain "a new connection's token, plain: $before (want 4 round trips: the handshake, then 10, 20 and 2 segments)" \
	"$(field "$before" rounds_max)" = 4

M=$(free_port)
"$CLI" watch --listen "127.0.0.1:$M" --interval 0.1 --window 1 "$SRV" >/dev/null 2>"$TMP/watch.err" &
"$CLI" doctor --json --seconds 3 "$SRV" >"$TMP/doc.json" 2>"$TMP/doc.err" &
D=$!
wait_file "$TMP/doc.err" '^socktune: doctor: watching ' 10
in_a $PY "$PF" token 198.18.1.1 5001 5 0.05 >/dev/null
wait "$D"
echo "doctor: $(kinds "$TMP/doc.json" | tr '\n' ' ')"
FIX=$(finding "$TMP/doc.json" slow-start-limited fix | head -n 1)
ev() { finding "$TMP/doc.json" slow-start-limited "evidence.$1"; }
echo "evidence: flights $(ev flights) at $(ev initial_window) ($(ev initial_window_from)), round trips $(ev round_trips), min_rtt $(ev min_rtt_ms) ms, $(ev response_bytes) bytes in $(ev response_segs) segments, $(ev connections_closed) closed; fix: $FIX"
check path_slow_start.doctor "doctor's findings: $(kinds "$TMP/doc.json" | tr '\n' ' ') ($(cat "$TMP/doc.err"))" \
	-n "$(kinds "$TMP/doc.json" | grep -x slow-start-limited)"
check path_slow_start.evidence "flights '$(ev flights)' at initial window '$(ev initial_window)', round trips measured '$(ev round_trips)' (want 3 at 10, 2.5 or more), response '$(ev response_segs)' segments (want 32)" \
	"$(ev flights)" = 3 -a "$(ev initial_window)" = 10 -a "$(ev response_segs)" = 32 -a \
	"$(awk -v r="$(ev round_trips)" 'BEGIN { print (r >= 2.5) }')" = 1
check path_slow_start.fix_form "the fix '$FIX' (want socktune attach --cgroup --initcwnd 33 $SRV)" \
	"$FIX" = "socktune attach --cgroup --initcwnd 33 $SRV"
check path_slow_start.new_only "the note: $(finding "$TMP/doc.json" slow-start-limited note)" \
	-n "$(finding "$TMP/doc.json" slow-start-limited note | grep 'applies to new connections only')"
# watch names it too, from the same connections' ends (its window: 1 s)
watch_says() { grep -q 'event=finding .*kind=slow-start-limited' "$TMP/watch.err"; }
busywait 5000 watch_says
check path_slow_start.watch "watch's lines: $(grep event=finding "$TMP/watch.err")" \
	-n "$(grep 'event=finding .*kind=slow-start-limited.*fix.0="socktune attach --cgroup --initcwnd 33 ' "$TMP/watch.err")"
# (the series lives while the finding is held: a window of 1 s after its last evidence, so
# new connections keep it while the test scrapes, on a machine however slow)
series() {
	in_a $PY "$PF" token 198.18.1.1 5001 2 0 >/dev/null
	curl -sf -m 2 "http://127.0.0.1:$M/metrics" >"$TMP/metrics.txt" &&
		grep -q '^socktune_finding{.*kind="slow-start-limited"' "$TMP/metrics.txt"
}
for try in 1 2 3 4 5 6 7 8 9 10; do
	series && break
done
check path_slow_start.watch_series "no socktune_finding series of kind slow-start-limited: $(grep '^socktune_finding' "$TMP/metrics.txt"); $(grep 'kind=slow-start-limited' "$TMP/watch.err" | cut -c1-120)" \
	-n "$(grep '^socktune_finding{.*kind="slow-start-limited"' "$TMP/metrics.txt")"

# the fix, as printed (socktune: this build's), then new connections
if PATH="$B:$PATH" sh -c "$FIX" >"$TMP/fix.out" 2>&1; then
	after=$(in_a $PY "$PF" token 198.18.1.1 5001 3 0)
	echo "after the fix: $after"
	check path_slow_start.cured "a new connection's token after the fix: $after (want 2 round trips: the handshake and one flight; before: $before)" \
		"$(field "$after" rounds_max)" = 2
	"$CLI" doctor --json --seconds 2 "$SRV" >"$TMP/doc2.json" 2>"$TMP/doc2.err" &
	D=$!
	wait_file "$TMP/doc2.err" '^socktune: doctor: watching ' 10
	in_a $PY "$PF" token 198.18.1.1 5001 3 0.05 >/dev/null
	wait "$D"
	check path_slow_start.cleared "doctor after the fix: $(kinds "$TMP/doc2.json" | tr '\n' ' ') (want no slow-start-limited; $(json_get "$TMP/doc2.json" listeners.0.connections_closed) closed)" \
		-z "$(kinds "$TMP/doc2.json" | grep -x slow-start-limited)" -a \
		"$(json_get "$TMP/doc2.json" listeners.0.connections_closed)" -ge 3
else
	fail path_slow_start.cured "the fix failed: $FIX: $(cat "$TMP/fix.out")"
fi
