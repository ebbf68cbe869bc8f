#!/bin/sh
# socktune attach on a process that holds no TCP socket (a UDP and a UNIX socket only, or
# none at all) tunes nothing and exits 3, as its help says; the text output says why, on
# stderr, in the words of the JSON document's "error" (before, the text said nothing at all:
# status 3 and two empty streams).  The same run with --json says it in "error" and status 3.
. "$(dirname "$0")/lib.sh"
for v in $(env | sed -n 's/^\(SOCKTUNE_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip attach_notcp "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi
NOTCP='import socket, time
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
a, b = socket.socketpair()
print("READY", flush=True); time.sleep(30)'
$PY -c "$NOTCP" >"$TMP/notcp.out" 2>&1 &
UDP=$!
sleep 30 &
BARE=$!
wait_file "$TMP/notcp.out" '^READY' 10 || { fail attach_notcp "the UDP process did not start"; exit 0; }

for t in "udp $UDP" "bare $BARE"; do
	set -- $t
	n=$1 pid=$2
	"$CLI" attach --nodelay "$pid" >"$TMP/$n.out" 2>"$TMP/$n.err"
	rc=$?
	"$CLI" attach --json --nodelay "$pid" >"$TMP/$n.json" 2>"$TMP/$n.jerr"
	jrc=$?
	why=$(json_get "$TMP/$n.json" error)
	jstatus=$(json_get "$TMP/$n.json" status)
	said=$(sed -n 's/^socktune: attach: //p' "$TMP/$n.err")
	check attach_notcp.$n.status "text: status $rc, json: status $jrc (\"status\": $jstatus); want 3" \
		"$rc" = 3 -a "$jrc" = 3 -a "$jstatus" = 3
	check attach_notcp.$n.text_says_why "stderr: '$(cat "$TMP/$n.err")' (want one line with the JSON's error: '$why'); stdout: '$(cat "$TMP/$n.out")'" \
		-n "$why" -a "$said" = "$why" -a "$(grep -c . "$TMP/$n.err")" = 1 -a ! -s "$TMP/$n.out"
done
kill $UDP $BARE 2>/dev/null
