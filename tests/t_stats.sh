#!/bin/sh
# SOCKTUNE_STATS counters.  A server stops accepting while 20 connections complete
# their handshake, then accepts them all: accepted = 20, the queue peak shows the burst,
# the file stays readable after SIGKILL, --json parses (one document, the keys of
# socktune --schema; a missing file, the error object), a file of another version is
# refused, and a normal exit logs one event=summary line per listener.  --format
# prometheus reads as many files as it is given (300: it refused more than 256 and wrote
# nothing).
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
	check stats.accepted "accepted $(json_get "$TMP/normal.json" files.0.listeners.0.accepted), want $N" \
		"$(json_get "$TMP/normal.json" files.0.listeners.0.accepted)" = $N
	peak=$(json_get "$TMP/normal.json" files.0.listeners.0.queue_peak)
	# the first accept samples the queue with the other N-1 still in it
	check stats.queue-peak "queue_peak $peak after a held burst of $N" "${peak:-0}" -ge $((N / 2))
	check stats.backlog "backlog $(json_get "$TMP/normal.json" files.0.listeners.0.backlog.effective), want 64" \
		"$(json_get "$TMP/normal.json" files.0.listeners.0.backlog.effective)" = 64
	check stats.port "port $(json_get "$TMP/normal.json" files.0.listeners.0.port), want $port" \
		"$(json_get "$TMP/normal.json" files.0.listeners.0.port)" = "$port"
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
	-n "$(json_get "$TMP/killed.json" files.0.process.quickack_rearms)" -a \
	-n "$(json_get "$TMP/killed.json" files.0.listeners.0.queue_last)" -a -n "$(json_get "$TMP/killed.json" files.0.listeners.0.addr)"
check stats.no-summary-on-kill "summary after SIGKILL?" -z "$(grep event=summary "$TMP/killed.err")"

# ---- --json: one document, every key in socktune --schema with its type; with --watch one
# a line; a file missing, the error object and status 3; several files, one document ----
"$CLI" --schema >"$TMP/schema"
res=$($PY "$ROOT/tests/py/schema_check.py" "$TMP/schema" "$TMP/killed.json" 2>&1)
check stats.json-schema "$res" "$res" = ok
"$CLI" stats --json --watch 1 --count 2 "$STATS" >"$TMP/watch.json" 2>&1
res=$($PY "$ROOT/tests/py/schema_check.py" "$TMP/schema" "$TMP/watch.json" --lines 2>&1)
check stats.json-watch-lines "$res; $(wc -l <"$TMP/watch.json") lines" \
	"$res" = ok -a "$(wc -l <"$TMP/watch.json")" -eq 2
"$CLI" stats --json "$STATS" "$TMP/no-such-file" >"$TMP/two.json" 2>/dev/null
rc=$?
res=$($PY "$ROOT/tests/py/schema_check.py" "$TMP/schema" "$TMP/two.json" 2>&1)
check stats.json-two-files "status $rc, $res: $(head -c 300 "$TMP/two.json")" \
	"$rc" = 1 -a "$res" = ok -a "$(json_get "$TMP/two.json" files.1.status)" = 3 -a \
	"$(json_get "$TMP/two.json" files.0.listeners.0.port)" = "$port"
"$CLI" stats --json "$TMP/no-such-file" >"$TMP/missing.json" 2>/dev/null
rc=$?
res=$($PY -c 'import json, sys
d = json.load(open(sys.argv[1]))
print("ok" if set(d) == {"schema", "command", "error", "status"} and d["status"] == 3
      and "No such file" in d["error"] else d)' "$TMP/missing.json" 2>&1)
check stats.json-missing-file "status $rc, $res" "$rc" = 3 -a "$res" = ok

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

# ---- --watch ends on SIGTERM (status 143) and SIGINT (130), the table printed kept ----
for sig in TERM INT; do
	"$CLI" stats --watch 30 "$STATS" >"$TMP/w$sig.txt" 2>"$TMP/w$sig.err" &
	w=$!
	busywait 5000 file_has "$TMP/w$sig.txt" '^ADDR'
	kill -$sig $w
	busywait 5000 gone $w
	ended=$(gone $w && echo yes || echo no)
	kill -9 $w 2>/dev/null
	wait $w
	rc=$?
	want=143
	[ $sig = INT ] && want=130
	check stats.watch-sig$sig "ended: $ended, status $rc (want $want): $(cat "$TMP/w$sig.txt" "$TMP/w$sig.err")" \
		"$ended" = yes -a "$rc" = $want -a "$(grep -c '^ADDR' "$TMP/w$sig.txt")" = 1
done

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

# ---- 300 files, one per process (each made its own listener, and so its own file) ----
mkdir "$TMP/many"
SOCKTUNE_STATS="$TMP/many/s.%p" LD_PRELOAD=$LIB $PY -c '
import os, socket
for _ in range(300):
    if os.fork() == 0:
        s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1); os._exit(0)
    os.wait()' 2>"$TMP/many.err"
# shellcheck disable=SC2046 # one argument per file
"$CLI" stats --format prometheus $(ls "$TMP"/many/s.*) >"$TMP/many.prom" 2>"$TMP/many.perr"
rc=$?
check stats.no-file-cap "status $rc, $(ls "$TMP/many" | grep -c .) files, $(grep -c '^socktune_stats_file_readable{.*} 1$' "$TMP/many.prom") read: $(head -c 300 "$TMP/many.perr")" \
	"$rc" = 0 -a "$(ls "$TMP/many" | grep -c .)" = 300 -a \
	"$(grep -c '^socktune_stats_file_readable{.*} 1$' "$TMP/many.prom")" = 300
