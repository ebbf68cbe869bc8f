#!/bin/sh
# socktune revert on journals a real `socktune watch --apply` wrote, against plain python3
# http.servers (as t_watch_apply), every value read back from the kernel:
# - accept-queue-overflow (backlog 5, a 300-connect burst): apply listens again with 4096
#   and journals the process's start time (pid_start, the server's own); the application
#   then sets 1024 itself; revert all leaves 1024 and says "the value is 1024 now, not the
#   4096 apply set", and marks it;
# - nagle-delayed-ack (HTTP/1.1 keep-alive GETs): apply sets TCP_NODELAY on the listener and
#   the connection; 3 connections accepted after it inherit NODELAY 1; revert all sets the
#   listener, the connection and those 3 back to 0 (connections_reverted=3).
. "$(dirname "$0")/lib.sh"

if ! command -v curl >/dev/null || ! command -v ss >/dev/null || [ ! -x "$BIN/kaclient" ]; then
	skip revert_applied "no curl, ss or kaclient"
	exit 0
fi
if ! $PY -c 'import os; os.pidfd_open' 2>/dev/null; then
	skip revert_applied "$PY has no os.pidfd_open"
	exit 0
fi
TOOLS=$ROOT/tests/py/revert_tools.py
tools() { $PY "$TOOLS" "$@"; }
SOMAX=$(cat /proc/sys/net/core/somaxconn)
WANT=4096
[ "$SOMAX" -lt "$WANT" ] && WANT=$SOMAX
count() { grep -c -- "$2" "$1" 2>/dev/null; }
applies() { file_has "$1" '"event": "apply"' "$2"; }
watching() {
	curl -sf -m 2 "http://127.0.0.1:$M/metrics" 2>/dev/null |
		grep -q "^socktune_listener_up{.*port=\"$P\".*} 1\$"
}
start_of() {
	$PY -c 'import sys; s = open("/proc/%s/stat" % sys.argv[1]).read(); print(int(s[s.rindex(")") + 2:].split()[19]))' "$1"
}
listener_fd() { # listener_fd PID: the fd of PID's listening TCP socket
	tools nodelays "$1" | sed -n 's/^fd=\([0-9]*\) listening=1 .*/\1/p' | head -n 1
}

# ---- the application's own backlog after apply's ----
P=$(free_port)
M=$(free_port)
if ! start_server -l "$P" over -- $PY -m http.server --bind 127.0.0.1 "$P"; then
	fail revert_applied.server "http.server did not start: $(cat "$TMP/over.err")"
	exit 0
fi
OVER=$SRV_PID
J=$TMP/over.jsonl
"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 --apply --journal "$J" ":$P" \
	>/dev/null 2>"$TMP/over.werr" &
W=$!
busywait 15000 watching
"$BIN/kaclient" burst -n 300 -T 4 127.0.0.1 "$P" >"$TMP/burst.out" 2>&1
busywait 10000 applies "$J" 1
kill "$W"; wait "$W" 2>/dev/null
line=$(grep '"event": "apply"' "$J" | head -n 1)
check revert_applied_journal_start "pid_start in $line (the server's: $(start_of "$OVER"))" \
	-n "$(echo "$line" | grep "\"pid\": $OVER, \"pid_start\": $(start_of "$OVER"), ")"
FD=$(listener_fd "$OVER")
b=$(tools sock "$OVER" "$FD" backlog)
check revert_applied_backlog "backlog $b after apply (want $WANT); $(head -c 600 "$TMP/over.werr")" "$b" = "$WANT"
tools sock "$OVER" "$FD" listen 1024 # (the application's own, later)
"$CLI" revert --journal "$J" all >"$TMP/over.out" 2>"$TMP/over.rerr"
rc=$?
b=$(tools sock "$OVER" "$FD" backlog)
check revert_applied_keeps_app_value "status $rc, backlog $b (1024 stays); $(cat "$TMP/over.out" "$TMP/over.rerr")" \
	"$rc" = 0 -a "$b" = 1024 -a \
	"$(count "$TMP/over.out" "event=revert .*error=\"the value is 1024 now, not the $WANT apply set: left")" = 1 -a \
	"$(count "$J" '"event": "revert"')" = 1
kill "$OVER"; wait "$OVER" 2>/dev/null

# ---- NODELAY: the connections accepted after apply ----
P=$(free_port)
if ! start_server -l "$P" ka -- $PY -m http.server --bind 127.0.0.1 --protocol HTTP/1.1 "$P"; then
	fail revert_applied.ka_server "http.server did not start: $(cat "$TMP/ka.err")"
	exit 0
fi
KA=$SRV_PID
"$BIN/kaclient" http -n 100000 -T 60 127.0.0.1 "$P" >"$TMP/kc.out" 2>&1 &
KC=$!
J=$TMP/ka.jsonl
"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 --apply --journal "$J" ":$P" \
	>/dev/null 2>"$TMP/ka.werr" &
W=$!
# (the connections are sampled every 10 s: the second sample shows the stall)
busywait 40000 applies "$J" 2
kill "$W"; wait "$W" 2>/dev/null
kill "$KC"; wait "$KC" 2>/dev/null
# 3 connections after the change, held open (http.server serves one at a time: they are
# accepted once the keep-alive client is gone)
$PY -c 'import socket, sys, time
c = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5) for _ in range(3)]
print("held", flush=True)
time.sleep(60)' "$P" >"$TMP/held.out" 2>&1 &
wait_file "$TMP/held.out" '^held' 10
ones() { tools nodelays "$KA" | grep -c 'listening=0 nodelay=1'; }
three() { [ "$(ones)" -ge 3 ]; }
busywait 5000 three
check revert_applied_inherited "connections with NODELAY 1 after apply: $(ones) (3 at least); \
$(tools nodelays "$KA" | tr '\n' ' '); $(head -c 600 "$TMP/ka.werr")" "$(ones)" -ge 3
n1=$(ones)
"$CLI" revert --journal "$J" all >"$TMP/ka.out" 2>"$TMP/ka.rerr"
rc=$?
check revert_applied_connections "status $rc; listener NODELAY $(tools sock "$KA" "$(listener_fd "$KA")" get-nodelay) \
(0), connections at 1: $(ones) (0); $(cat "$TMP/ka.out" "$TMP/ka.rerr")" "$rc" = 0 -a \
	"$(tools sock "$KA" "$(listener_fd "$KA")" get-nodelay)" = 0 -a "$(ones)" = 0 -a \
	"$(count "$TMP/ka.out" "event=revert .*before=1 after=0 connections_reverted=$n1 ")" = 1
kill "$KA"; wait "$KA" 2>/dev/null
exit 0
