#!/bin/sh
# socktune stats reads a running server's accept queue from the kernel when it is read: a
# server under the library accepts one connection, is stopped with SIGSTOP, and 40 more
# connect; the table, --json and the Prometheus text show the queue 40 (the kernel's), not
# the value at its last accept (0).  Once the server is gone the kernel cannot be asked:
# the output says so and shows the file's value, marked.  With two listeners on one port
# (SO_REUSEPORT), the queue of the one the server holds.
. "$(dirname "$0")/lib.sh"
N=40

# queue_now FILE: listener 0's queue_now and its source in a --json document
queue_now() {
	$PY -c 'import json, sys
l = json.load(open(sys.argv[1]))["files"][0]["listeners"][0]
print(l["queue_now"], l["queue_now_source"], l["queue_last"])' "$1" 2>/dev/null
}

rm -f "$TMP/go"
if ! start_server held SOCKTUNE_STATS="$TMP/held.%p" SOCKTUNE_BACKLOG=64 LD_PRELOAD="$LIB" -- \
	$PY "$ROOT/tests/py/holdserver.py" "$TMP/go" 1 hang; then
	fail stats-queue.start "no server: $(cat "$TMP/held.err")"
	exit 0
fi
HPID=$SRV_PID port=$SRV_PORT
STATS=$TMP/held.$HPID
touch "$TMP/go"
$PY -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)' "$port"
wait_file "$TMP/held.out" accepted
kill -STOP $HPID
# 40 connections the stopped server will not accept: their handshakes complete in the
# kernel and wait in the accept queue (the client holds them open at most 20 s)
$PY -c 'import socket, sys, time
cs = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5) for _ in range(int(sys.argv[2]))]
open(sys.argv[3], "w").close()
time.sleep(20)' "$port" $N "$TMP/connected" &
CPID=$!
busywait 5000 test -f "$TMP/connected"
# the last handshakes land in the queue a moment after connect() returns
queued() { [ "$(ss -Hltn "sport = :$port" | awk '{ print $2 }')" = $N ]; }
busywait 3000 queued

"$CLI" stats --json "$STATS" >"$TMP/stopped.json" 2>"$TMP/stopped.err"
got=$(queue_now "$TMP/stopped.json")
check stats-queue.json-kernel "queue_now source queue_last: '$got' (want $N kernel 0): $(head -c 400 "$TMP/stopped.json") $(cat "$TMP/stopped.err")" \
	"$got" = "$N kernel 0"
"$CLI" --schema >"$TMP/schema"
res=$($PY "$ROOT/tests/py/schema_check.py" "$TMP/schema" "$TMP/stopped.json" 2>&1)
check stats-queue.json-schema "$res" "$res" = ok

"$CLI" stats "$STATS" >"$TMP/stopped.txt" 2>&1
row=$(grep "^127.0.0.1:$port " "$TMP/stopped.txt")
check stats-queue.table "row '$row' (QUEUE_NOW $N): $(cat "$TMP/stopped.txt")" \
	"$(echo "$row" | awk '{ print $5 }')" = $N -a \
	-n "$(grep 'QUEUE_NOW: the accept queue now, read from the kernel' "$TMP/stopped.txt")"

"$CLI" stats --format prometheus "$STATS" >"$TMP/stopped.prom" 2>&1
check stats-queue.prometheus "$(grep queue_length "$TMP/stopped.prom")" \
	-n "$(grep "^socktune_listener_queue_length{.*port=\"$port\".*} $N\$" "$TMP/stopped.prom")" -a \
	-n "$(grep "^socktune_listener_queue_length_from_kernel{.*port=\"$port\".*} 1\$" "$TMP/stopped.prom")" -a \
	"$(grep -c '^# TYPE socktune_listener_queue_length gauge$' "$TMP/stopped.prom")" = 1

# ---- the server gone: no kernel to ask; the file's value, said to be that ----
kill -9 $HPID 2>/dev/null
wait $HPID 2>/dev/null
kill $CPID 2>/dev/null
"$CLI" stats --json "$STATS" >"$TMP/gone.json" 2>&1
got=$(queue_now "$TMP/gone.json")
note=$(json_get "$TMP/gone.json" files.0.kernel_note)
check stats-queue.json-not-running "queue_now source queue_last: '$got', kernel_note '$note'" \
	"$got" = "0 last-sample 0" -a -n "$(echo "$note" | grep 'not running')"
"$CLI" stats "$STATS" >"$TMP/gone.txt" 2>&1
row=$(grep "^127.0.0.1:$port " "$TMP/gone.txt")
check stats-queue.table-not-running "row '$row': $(cat "$TMP/gone.txt")" \
	"$(echo "$row" | awk '{ print $5 }')" = "0*" -a \
	-n "$(grep 'QUEUE_NOW: the kernel could not be read (the process is not running)' "$TMP/gone.txt")"
"$CLI" stats --format prometheus "$STATS" >"$TMP/gone.prom" 2>&1
check stats-queue.prometheus-not-running "$(grep queue_length "$TMP/gone.prom")" \
	-n "$(grep "^socktune_listener_queue_length_from_kernel{.*port=\"$port\".*} 0\$" "$TMP/gone.prom")"

# ---- two listeners on one address and port (SO_REUSEPORT), one under the library, one not:
# the queue shown is that of the socket the server holds (by inode), not the other's.  41
# connects: the kernel spreads them over both, so the two queues differ ----
RP='import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
print("PORT", s.getsockname()[1], flush=True)
time.sleep(20)'
start_server other -- $PY -c "$RP" 0 || { fail stats-queue.reuseport "no server: $(cat "$TMP/other.err")"; exit 0; }
OPID=$SRV_PID port=$SRV_PORT
start_server mine SOCKTUNE_STATS="$TMP/mine.%p" LD_PRELOAD="$LIB" -- $PY -c "$RP" "$port" ||
	{ fail stats-queue.reuseport "no server: $(cat "$TMP/mine.err")"; exit 0; }
MPID=$SRV_PID
$PY -c 'import socket, sys, time
cs = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5) for _ in range(41)]
open(sys.argv[2], "w").close()
time.sleep(20)' "$port" "$TMP/connected2" &
busywait 5000 test -f "$TMP/connected2"
total() { [ "$(ss -Hltn "sport = :$port" | awk '{ n += $2 } END { print n }')" = 41 ]; }
busywait 3000 total
want=$(ss -Hltnp "sport = :$port" | grep "pid=$MPID," | awk '{ print $2 }')
other=$(ss -Hltnp "sport = :$port" | grep "pid=$OPID," | awk '{ print $2 }')
"$CLI" stats --json "$TMP/mine.$MPID" >"$TMP/mine.json" 2>&1
got=$(queue_now "$TMP/mine.json")
check stats-queue.reuseport "queue_now '$got', the server's socket $want, the other's $other" \
	"$got" = "$want kernel 0" -a -n "$want" -a "$want" != "$other"
