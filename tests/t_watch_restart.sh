#!/bin/sh
# socktune watch when another process takes a listener's port: a server (comm srvone) that
# never accepts, backlog 5, overflowed by a burst: watch's accept-queue-overflow finding
# names it in its fix; it clears; srvone exits and srvtwo listens on the same port: the
# listener's series are named srvtwo within seconds (not srvone's names kept), and when the
# finding comes back its fix names srvtwo's pid, the live holder (never srvone's: that
# command would exit 3, no such process).  The same when the process that held the socket
# exits and its child, which holds the same socket, serves on.
. "$(dirname "$0")/lib.sh"

if ! command -v curl >/dev/null; then
	skip watch_restart "no curl"
	exit 0
fi
[ -x "$BIN/kaclient" ] || { fail watch_restart "$BIN/kaclient not built (make test-bins)"; exit 0; }

P=$(free_port)
M=$(free_port)
while [ "$M" = "$P" ]; do M=$(free_port); done
# serve NAME: a listener on $P named NAME (its comm), backlog 5, that never accepts
serve() {
	start_server -l "$P" "$1" -- "$PY" -c 'import ctypes, socket, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[2].encode(), 0, 0, 0)  # PR_SET_NAME: its comm
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(5); time.sleep(120)' "$P" "$1"
}
if ! serve srvone; then
	fail watch_restart.server "srvone did not start: $(cat "$TMP/srvone.err")"
	exit 0
fi
ONE=$SRV_PID
"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 ":$P" \
	>"$TMP/watch.out" 2>"$TMP/watch.err" &

scrape() { curl -sf -m 2 "http://127.0.0.1:$M/metrics" >"$TMP/$1.txt"; }
comm_is() { scrape m && grep -q "^socktune_listener_up{.*port=\"$P\",comm=\"$1\"" "$TMP/m.txt"; }
busywait 10000 comm_is srvone
check watch_restart.named_one "series: $(grep "^socktune_listener_up{" "$TMP/m.txt")" \
	-n "$(grep "^socktune_listener_up{.*port=\"$P\",comm=\"srvone\"" "$TMP/m.txt")"

# finding N: the Nth event=finding line of the port ("" when none came in 15 s)
finding() {
	busywait 15000 file_has "$TMP/watch.err" "event=finding .*kind=accept-queue-overflow .*port=$P " "$1"
	grep "event=finding .*kind=accept-queue-overflow .*port=$P " "$TMP/watch.err" | sed -n "${1}p"
}
"$BIN/kaclient" burst -n 300 -T 3 127.0.0.1 "$P" >"$TMP/burst1.out" 2>&1
first=$(finding 1)
check watch_restart.fix_names_one "first finding: '$first'" \
	-n "$(printf '%s' "$first" | grep -e "--ports $P $ONE\"")"
FID=$(field "$first" id)
busywait 30000 file_has "$TMP/watch.err" "event=finding-cleared id=$FID "

# srvone goes, srvtwo takes the port
kill "$ONE"
wait "$ONE" 2>/dev/null
busywait 5000 sh -c "! ss -Hltn 'sport = :$P' | grep -q ."
if ! serve srvtwo; then
	fail watch_restart.server2 "srvtwo did not start: $(cat "$TMP/srvtwo.err")"
	exit 0
fi
TWO=$SRV_PID
busywait 10000 comm_is srvtwo
check watch_restart.series_renamed "series after srvtwo took :$P: $(grep "^socktune_listener_up{.*port=\"$P\"" "$TMP/m.txt")" \
	-n "$(grep "^socktune_listener_up{.*port=\"$P\",comm=\"srvtwo\"" "$TMP/m.txt")"

"$BIN/kaclient" burst -n 300 -T 3 127.0.0.1 "$P" >"$TMP/burst2.out" 2>&1
second=$(finding 2)
check watch_restart.fix_names_live "second finding (srvone $ONE, srvtwo $TWO): '$second'" \
	-n "$(printf '%s' "$second" | grep -e "--ports $P $TWO\"")" -a \
	-z "$(printf '%s' "$second" | grep -e " $ONE\"")"
check watch_restart.line_names_live "second finding's comm: '$second'" \
	-n "$(printf '%s' "$second" | grep " comm=srvtwo ")"

# ---- the same socket, another process: the holder that named it exits, its child keeps it ----
# (a daemon handing its listener over: nginx's binary upgrade, a re-exec'd master)
P2=$(free_port)
M2=$(free_port)
if ! start_server -l "$P2" hand -- "$PY" -c 'import ctypes, os, socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(5)
child = os.fork()
ctypes.CDLL(None).prctl(15, b"srvchild" if child == 0 else b"srvparent", 0, 0, 0)
if child:
    print("child", child, flush=True)
time.sleep(120)' "$P2"; then
	fail watch_restart.handover_server "the server did not start: $(cat "$TMP/hand.err")"
	exit 0
fi
PARENT=$SRV_PID
busywait 3000 grep -q "^child " "$TMP/hand.out"
CHILD=$(sed -n 's/^child //p' "$TMP/hand.out")
"$CLI" watch --listen "127.0.0.1:$M2" --interval 0.05 --window 1 ":$P2" \
	>"$TMP/watch2.out" 2>"$TMP/watch2.err" &
scrape2() { curl -sf -m 2 "http://127.0.0.1:$M2/metrics" >"$TMP/$1.txt"; }
named2() { scrape2 m2 && grep -q "^socktune_listener_up{.*port=\"$P2\",comm=\"$1\"" "$TMP/m2.txt"; }
busywait 10000 named2 srvparent
check watch_restart.handover_named "series: $(grep "^socktune_listener_up{" "$TMP/m2.txt")" \
	-n "$(grep "^socktune_listener_up{.*port=\"$P2\",comm=\"srvparent\"" "$TMP/m2.txt")"
kill "$PARENT"
wait "$PARENT" 2>/dev/null
"$BIN/kaclient" burst -n 300 -T 3 127.0.0.1 "$P2" >"$TMP/burst3.out" 2>&1
busywait 15000 file_has "$TMP/watch2.err" "event=finding .*kind=accept-queue-overflow .*port=$P2 "
third=$(grep "event=finding .*kind=accept-queue-overflow .*port=$P2 " "$TMP/watch2.err" | head -n 1)
check watch_restart.handover_fix_live "finding after the parent $PARENT exited (child $CHILD): '$third'" \
	-n "$(printf '%s' "$third" | grep -e "--ports $P2 $CHILD\"")" -a \
	-z "$(printf '%s' "$third" | grep -e " $PARENT\"")"
busywait 5000 named2 srvchild
check watch_restart.handover_renamed "series: $(grep "^socktune_listener_up{.*port=\"$P2\"" "$TMP/m2.txt")" \
	-n "$(grep "^socktune_listener_up{.*port=\"$P2\",comm=\"srvchild\"" "$TMP/m2.txt")"
