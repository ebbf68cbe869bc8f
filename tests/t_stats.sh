#!/bin/sh
# SOCKTUNE_STATS counters.  A server stops accepting while 20 connections complete
# their handshake, then accepts them all: accepted = 20, the queue peak shows the burst,
# the file stays readable after SIGKILL, --json parses, a file of another version is
# refused, and a normal exit logs one event=summary line per listener.
. "$(dirname "$0")/lib.sh"
N=20

# hold NAME MODE: holdserver under the preload; N connections held open while it waits,
# then it accepts them.  MODE: exit (normal exit) or hang (waits to be killed).
hold() {
	rm -f "$TMP/go"
	start_server "$1" SOCKTUNE_STATS="$TMP/$1.%p" SOCKTUNE_BACKLOG=64 LD_PRELOAD="$LIB" -- \
		$PY "$ROOT/tests/py/holdserver.py" "$TMP/go" $N "$2" || return 1
	HPID=$SRV_PID port=$SRV_PORT
	$PY -c '
import os, socket, sys, time
cs = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5) for _ in range(int(sys.argv[2]))]
time.sleep(0.3)  # let every handshake land in the accept queue
open(sys.argv[3], "w").close()
deadline = time.monotonic() + 10
while time.monotonic() < deadline and "accepted" not in open(sys.argv[4]).read():
    time.sleep(0.02)
' "$port" $N "$TMP/go" "$TMP/$1.out"
	STATS="$TMP/$1.$HPID"
}

# ---- a normal exit: counters, peak, summary line ----
hold normal exit
wait $HPID
if [ -f "$STATS" ]; then
	"$CLI" stats --json "$STATS" >"$TMP/normal.json"
	check stats.accepted "accepted $(json_get "$TMP/normal.json" listeners.0.accepted), want $N" \
		"$(json_get "$TMP/normal.json" listeners.0.accepted)" = $N
	peak=$(json_get "$TMP/normal.json" listeners.0.queue_peak)
	# the first accept samples the queue with the other N-1 still in it
	check stats.queue-peak "queue_peak $peak after a held burst of $N" "${peak:-0}" -ge $((N / 2))
	check stats.backlog "backlog $(json_get "$TMP/normal.json" listeners.0.backlog), want 64" \
		"$(json_get "$TMP/normal.json" listeners.0.backlog)" = 64
	check stats.port "port $(json_get "$TMP/normal.json" listeners.0.port), want $port" \
		"$(json_get "$TMP/normal.json" listeners.0.port)" = "$port"
	n=$(grep -c "event=summary .*accepted=$N " "$TMP/normal.err")
	check stats.summary "$n summary lines with accepted=$N, want 1: $(grep summary "$TMP/normal.err")" "$n" -eq 1
else
	fail stats.file "no stats file at $STATS: $(cat "$TMP/normal.err")"
fi

# ---- SIGKILL: the file is still there and readable ----
hold killed hang
kill -9 $HPID 2>/dev/null
wait $HPID 2>/dev/null
if "$CLI" stats "$STATS" >"$TMP/killed.txt" 2>&1; then
	check stats.after-sigkill "table: $(cat "$TMP/killed.txt")" \
		-n "$(grep 'not running' "$TMP/killed.txt")" -a -n "$(grep "127.0.0.1:$port .* $N " "$TMP/killed.txt")"
else
	fail stats.after-sigkill "socktune stats failed: $(cat "$TMP/killed.txt")"
fi
"$CLI" stats --json "$STATS" >"$TMP/killed.json" 2>&1
check stats.json-parses "json: $(head -c 300 "$TMP/killed.json")" \
	-n "$(json_get "$TMP/killed.json" process.quickack_rearms)" -a \
	-n "$(json_get "$TMP/killed.json" listeners.0.queue_last)" -a -n "$(json_get "$TMP/killed.json" listeners.0.addr)"
check stats.no-summary-on-kill "summary after SIGKILL?" -z "$(grep event=summary "$TMP/killed.err")"

# ---- a file from another version is refused, with a clear message ----
cp "$STATS" "$TMP/other"
printf '\143' | dd of="$TMP/other" bs=1 seek=16 conv=notrunc 2>/dev/null # version 99
"$CLI" stats "$TMP/other" >/dev/null 2>"$TMP/other.err"
rc=$?
check stats.other-version "status $rc, message: $(cat "$TMP/other.err")" "$rc" = 1 -a \
	-n "$(grep 'version 99' "$TMP/other.err")"
"$CLI" stats /etc/hostname >/dev/null 2>"$TMP/notstats.err"
check stats.not-a-stats-file "status $?: $(cat "$TMP/notstats.err")" -n "$(grep 'not a socktune stats file' "$TMP/notstats.err")"

# ---- --watch refreshes, a bounded number of times ----
n=$("$CLI" stats --watch 1 --count 2 "$STATS" | grep -c '^ADDR')
check stats.watch "$n tables from --watch 1 --count 2" "$n" -eq 2

# ---- one path, two processes (no %p): the second replaces the file by rename; the first,
# whose counters live in its own memory, runs on (its snapshots stop: the path now names
# another inode) and the file at the path stays whole ----
rm -f "$TMP/go"
start_server first SOCKTUNE_STATS="$TMP/shared" LD_PRELOAD="$LIB" -- \
	$PY "$ROOT/tests/py/holdserver.py" "$TMP/go" 1 hang && wait_file "$TMP/first.err" 'event=stats'
first=$SRV_PID
SOCKTUNE_STATS="$TMP/shared" LD_PRELOAD=$LIB $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(1)' 2>"$TMP/second.err"
touch "$TMP/go"
$PY -c "import socket; socket.create_connection(('127.0.0.1', $SRV_PORT), timeout=5)" 2>/dev/null
wait_file "$TMP/first.out" accepted
check stats.shared-path-survives "first server: $(cat "$TMP/first.out" "$TMP/first.err" | tail -n 3)" \
	-n "$(grep accepted "$TMP/first.out")" -a -n "$(kill -0 $first 2>/dev/null && echo alive)"
"$CLI" stats "$TMP/shared" >"$TMP/shared.txt" 2>&1
check stats.shared-path-readable "$(cat "$TMP/shared.txt")" -n "$(grep '^ADDR' "$TMP/shared.txt")"
kill -9 $first 2>/dev/null
