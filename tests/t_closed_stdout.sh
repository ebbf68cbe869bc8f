#!/bin/sh
# Subcommands started with stdout closed (a cron line's >&-, a unit with StandardOutput=
# closed): the first descriptor they open would be 1, and their report would go into it: a
# sock_diag socket, a pidfd, a copy of the server's own connection (attach --connections),
# the journal (revert).  /dev/null takes 1 first: the work is done, its status said, nothing
# written into anyone's socket or file.
. "$(dirname "$0")/lib.sh"

start_server srv -- "$BIN/tserver" -m hold -n 4 -t 30 || { fail closed_stdout_server "no server"; exit 0; }
# a client of the server's, reading: whatever arrives on its connection is counted
$PY - "$SRV_PORT" >"$TMP/client.out" 2>&1 <<'PYEOF' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(6)
print("connected", flush=True)
got = b""
try:
    while len(got) < 4096:
        b = s.recv(4096)
        if not b:
            break
        got += b
except socket.timeout:
    pass
print("received %d %r" % (len(got), got[:80]), flush=True)
PYEOF
CL=$!
wait_file "$TMP/client.out" connected 5
busywait 3000 sh -c "$PY '$ROOT/tests/py/sockopts_of.py' $SRV_PID | grep -q 'listening=0'"
"$CLI" attach --connections --nodelay "$SRV_PID" >&- 2>"$TMP/attach.err"
rc=$?
conn=$($PY "$ROOT/tests/py/sockopts_of.py" "$SRV_PID" | grep 'listening=0' | head -n 1)
check attach_stdout_closed "status $rc; stderr: $(head -c 300 "$TMP/attach.err"); the server's \
connection: $conn" "$rc" = 0 -a -n "$(echo "$conn" | grep 'nodelay=1')"
wait "$CL"
check attach_stdout_closed_nothing_sent "the client got: $(cat "$TMP/client.out")" \
	-n "$(grep -x 'received 0 .*' "$TMP/client.out")"
kill "$SRV_PID" 2>/dev/null
wait "$SRV_PID" 2>/dev/null

# revert with stdout closed: its lines would go into the journal it opened first.  A journal as
# watch --apply writes it (tests/py/revert_tools.py), NODELAY 0 -> 1 on a listener
TOOLS=$ROOT/tests/py/revert_tools.py
$PY "$TOOLS" serve 1 7 1 >"$TMP/rs.out" 2>"$TMP/rs.err" &
RS=$!
if wait_file "$TMP/rs.out" '^READY' 10; then
	set -- $(sed -n 's/^L fd=\([0-9]*\) port=\([0-9]*\) inode=\([0-9]*\)$/\1 \2 \3/p' "$TMP/rs.out")
	J=$TMP/journal
	$PY "$TOOLS" head >"$J"
	$PY "$TOOLS" line "$RS" "$1" "$3" nodelay 0 1 "127.0.0.1:$2" >>"$J"
	chmod 600 "$J"
	"$CLI" revert --journal "$J" all >&- 2>"$TMP/revert.err"
	rc=$?
	nd=$($PY "$TOOLS" sock "$RS" "$1" get-nodelay)
	bad=$($PY -c 'import json, sys
n = 0
for l in open(sys.argv[1]):
    try:
        json.loads(l)
    except ValueError:
        n += 1
print(n)' "$J")
	check revert_stdout_closed "status $rc; stderr $(head -c 300 "$TMP/revert.err"); nodelay \
now $nd (want 0); journal lines that are no JSON: $bad" "$rc" = 0 -a "$nd" = 0 -a "$bad" = 0
else
	fail revert_stdout_closed "no server: $(cat "$TMP/rs.err")"
fi
kill "$RS" 2>/dev/null
wait "$RS" 2>/dev/null || :
