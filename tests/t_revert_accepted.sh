#!/bin/sh
# Connections a listener accepted between watch --apply's TCP_NODELAY and revert inherited
# the applied value (the kernel copies the listener's options into each connection it
# accepts): revert sets them back too.  A server holds 2 connections accepted before the
# change (NODELAY 0), the listener is set to 1 as apply does and journalled as apply writes
# it, 3 more connections come (NODELAY 1, inherited); revert all: the listener and all 5
# connections read 0 from the kernel, and the revert line says connections_reverted=3.
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open' 2>/dev/null; then
	skip revert_accepted "$PY has no os.pidfd_open"
	exit 0
fi
TOOLS=$ROOT/tests/py/revert_tools.py
tools() { $PY "$TOOLS" "$@"; }
$PY "$TOOLS" serve 1 64 0 >"$TMP/s.out" 2>"$TMP/s.err" &
S=$!
if ! wait_file "$TMP/s.out" '^READY' 10; then
	fail revert_accepted.server "$(cat "$TMP/s.err")"
	exit 0
fi
# shellcheck disable=SC2046 # (its three words)
set -- $(sed -n 's/^L fd=\([0-9]*\) port=\([0-9]*\) inode=\([0-9]*\)$/\1 \2 \3/p' "$TMP/s.out")
FD=$1 PORT=$2 INO=$3
# connect K: K connections from a client of our own, held until the test ends (bounded)
connect() {
	$PY -c 'import socket, sys, time
c = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5) for _ in range(int(sys.argv[2]))]
print("held", len(c), flush=True)
time.sleep(60)' "$PORT" "$1" >"$TMP/c$1.out" 2>&1 &
	wait_file "$TMP/c$1.out" '^held' 10
}
# conns V: the server's connections (not the listener) whose NODELAY reads V
conns() { tools nodelays "$S" | grep -c "listening=0 nodelay=$1"; }
accepted() { [ "$(tools nodelays "$S" | grep -c 'listening=0')" -ge "$1" ]; }
connect 2
busywait 5000 accepted 2
tools sock "$S" "$FD" nodelay 1 # (what watch --apply does on the listener)
J=$TMP/journal.jsonl
{ tools head; tools line "$S" "$FD" "$INO" nodelay 0 1 "127.0.0.1:$PORT"; } >"$J"
chmod 600 "$J"
connect 3
busywait 5000 accepted 5
check revert_accepted_setup "connections NODELAY 1: $(conns 1) (3), 0: $(conns 0) (2)" \
	"$(conns 1)" = 3 -a "$(conns 0)" = 2
"$CLI" revert --journal "$J" all >"$TMP/r.out" 2>"$TMP/r.err"
rc=$?
l=$(tools sock "$S" "$FD" get-nodelay)
check revert_accepted_connections "status $rc; listener NODELAY $l (0), connections at 1: \
$(conns 1) (0), at 0: $(conns 0) (5); $(cat "$TMP/r.out" "$TMP/r.err")" \
	"$rc" = 0 -a "$l" = 0 -a "$(conns 1)" = 0 -a "$(conns 0)" = 5 -a \
	"$(grep -c 'event=revert .*before=1 after=0 connections_reverted=3 ' "$TMP/r.out")" = 1
kill "$S"; wait "$S" 2>/dev/null
exit 0
