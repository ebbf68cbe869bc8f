#!/bin/sh
# socktune doctor finds the server's Nagle whatever the client also does, and finds it within
# a session shorter than its window:
#  - a JSON API (python, Nagle on, each answer in two writes: header, then body) whose client
#    POSTs in two writes too (header, then body): each request waits for both delayed ACKs
#    (~88 ms), or, with the server's delayed ACK capped (--delack-max 5ms), for the client's
#    and the 8 ms cap (~56 ms).  doctor names the server's Nagle (--nodelay) and the delayed
#    ACK's part (--quickack; --delack-max too while its timer is at 40 ms) and exits 1; the
#    next-start fix it prints, run as printed, cures (a count of requests over 30 ms);
#  - a server whose listener holds TCP_NODELAY 1 (attach --nodelay) and that sets it back to 0
#    on each connection it accepts, with a session of ~2 s that ends inside doctor's window:
#    doctor read the connection's 0 while it was open and names the stall.
# Counts of requests over 30 ms (each stall is a 40 ms timer; a cured request takes well
# under 1 ms), not wall times.
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip doctor_stalls "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi

# The JSON API: jsonapi.py PORT; Nagle left on, each answer in two writes
cat >"$TMP/jsonapi.py" <<'EOF'
import json, socket, sys, threading, time
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", int(sys.argv[1]))); l.listen(64)
print("PORT %d" % l.getsockname()[1], flush=True)
def serve(c):
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d: return
            buf += d
        head, buf = buf.split(b"\r\n\r\n", 1)
        n = [int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length:")][0]
        while len(buf) < n:
            d = c.recv(65536)
            if not d: return
            buf += d
        req, buf = json.loads(buf[:n]), buf[n:]
        body = json.dumps({"ok": True, "echo": req}).encode()
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
        c.sendall(body)
l.settimeout(1)
end = time.monotonic() + 60
while time.monotonic() < end:
    try: c, _ = l.accept()
    except socket.timeout: continue
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
# The client: jsonpost.py PORT N; N POSTs on one connection, each in two writes (Nagle on),
# "n=N over=K" with K the requests over 30 ms (at most 20 s)
cat >"$TMP/jsonpost.py" <<'EOF'
import json, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
n, over, done, end = int(sys.argv[2]), 0, 0, time.monotonic() + 20
def more():
    b = s.recv(65536)
    if not b:
        sys.exit("n=%d over=%d (the server closed)" % (done, over))
    return b
for i in range(n):
    if time.monotonic() > end: break
    body = json.dumps({"i": i}).encode()
    t = time.monotonic()
    s.sendall(b"POST /api HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
    s.sendall(body)
    buf = b""
    while b"\r\n\r\n" not in buf: buf += more()
    head, rest = buf.split(b"\r\n\r\n", 1)
    cl = [int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length:")][0]
    while len(rest) < cl: rest += more()
    over += time.monotonic() - t > 0.030
    done += 1
print("n=%d over=%d" % (done, over), flush=True)
EOF

PORT=$(free_port) || { fail doctor_stalls "no free port"; exit 0; }
api_up() { $PY -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)' "$PORT" 2>/dev/null; }

# api NAME [VAR=value...]: the JSON API on PORT (with the environment given), a client of 80
# POSTs along, doctor --json on it for 2 s in the middle; the client's line in NAME.client,
# doctor's report in NAME.json, its status in NAME.rc; the server stopped after
api() {
	_n=$1
	shift
	(cd "$TMP" && exec env "$@" $PY jsonapi.py "$PORT") >"$TMP/$_n.out" 2>"$TMP/$_n.err" &
	_s=$!
	busywait 5000 api_up || { fail "doctor_stalls_$_n" "the API did not start: $(cat "$TMP/$_n.err")"; return 1; }
	$PY "$TMP/jsonpost.py" "$PORT" 80 >"$TMP/$_n.client" 2>&1 &
	_c=$!
	sleep 0.5
	"$CLI" doctor --seconds 2 --json "$_s" >"$TMP/$_n.json" 2>"$TMP/$_n.derr"
	echo $? >"$TMP/$_n.rc"
	wait "$_c"
	kill "$_s" 2>/dev/null
	wait "$_s" 2>/dev/null
	busywait 3000 sh -c "! ss -Hltn 'sport = :$PORT' | grep -q ."
}
over_of() { sed -n 's/.*over=\([0-9]*\).*/\1/p' "$1"; }
n_of() { sed -n 's/^n=\([0-9]*\) .*/\1/p' "$1"; }

# ---- plain: both delayed ACKs (~88 ms a request)
if api both; then
	k=$(kinds "$TMP/both.json")
	fixes=$(finding "$TMP/both.json" nagle-delayed-ack fix)
	check doctor_stalls_both_nodelay "client: $(cat "$TMP/both.client"); status $(cat "$TMP/both.rc"); findings: $k; fixes: $fixes" \
		"$(over_of "$TMP/both.client")" -ge 40 -a "$(cat "$TMP/both.rc")" = 1 -a \
		-n "$(echo "$fixes" | grep -e '--nodelay')" -a \
		-n "$(echo "$fixes" | grep -e '--quickack')" -a -n "$(echo "$fixes" | grep -e '--delack-max 5ms')" 2>/dev/null
fi

# ---- after --delack-max (~56 ms): the server's Nagle is the rest, and 8 ms of delayed ACK
if api capped LD_PRELOAD="$LIB" SOCKTUNE_DELACK_MAX=5ms; then
	k=$(kinds "$TMP/capped.json")
	fixes=$(finding "$TMP/capped.json" nagle-delayed-ack fix)
	ev=$(finding "$TMP/capped.json" nagle-delayed-ack evidence)
	check doctor_stalls_capped_found "client: $(cat "$TMP/capped.client"); status $(cat "$TMP/capped.rc"); findings: '$k'; evidence $ev; fixes: $fixes; connection: $(json_get "$TMP/capped.json" connections.worst.0)" \
		"$(over_of "$TMP/capped.client")" -ge 40 -a "$(cat "$TMP/capped.rc")" = 1 -a \
		-n "$(echo "$fixes" | grep -e '--nodelay')" -a -n "$(echo "$fixes" | grep -e '--quickack')" -a \
		"$(finding "$TMP/capped.json" nagle-delayed-ack evidence.connection_nodelay)" = False 2>/dev/null
	# the next start as printed (its SOCKTUNE_DELACK_MAX kept), then a client counted
	again=$(echo "$fixes" | grep -e '-- .*jsonapi.py' | head -n 1)
	(exec env PATH="$B:$PATH" sh -c "$again") >"$TMP/cured.out" 2>"$TMP/cured.err" &
	cs=$!
	busywait 5000 api_up
	# (a new client again while over 3 of its 30 are over 30 ms, 3 tries at most:
	# tests/lib.sh cured_within)
	post() {
		$PY "$TMP/jsonpost.py" "$PORT" 30 >"$TMP/cured.client" 2>&1
		OVER=$(over_of "$TMP/cured.client")
	}
	cured_within doctor_stalls_capped_cured 3 post
	check doctor_stalls_capped_cured "'$again': $(cat "$TMP/cured.client"), tries $TRIES (before: $(cat "$TMP/capped.client")) $(grep -v '^socktune pid=' "$TMP/cured.err" | head -c 300)" \
		-n "$again" -a "$(n_of "$TMP/cured.client")" = 30 -a "$OVER" -le 3 2>/dev/null
	for p in $(pgrep -P "$cs"); do kill "$p"; done # (the shell's child: the API)
	kill "$cs" 2>/dev/null
	wait "$cs" 2>/dev/null
	busywait 3000 sh -c "! ss -Hltn 'sport = :$PORT' | grep -q ."
fi

# ---- a short session on a server that sets TCP_NODELAY 0 on each connection after accept,
# its listener at 1 (attach --nodelay did not hold): ~2 s of 44 ms responses, over before
# doctor's window ends
if start_server reset -- "$BIN/resetsrv" -n 5 -t 60; then
	"$CLI" attach --nodelay "$SRV_PID" >"$TMP/reset.attach" 2>&1
	"$CLI" doctor --seconds 5 --json "$SRV_PID" >"$TMP/short.json" 2>"$TMP/short.derr" &
	doc=$!
	# the client once doctor watches (its first sample in): a session started before would
	# be over, or half over, when doctor first looks
	watching=no
	wait_file "$TMP/short.derr" '^socktune: doctor: watching ' 20 && watching=yes
	[ $watching = yes ] &&
		"$BIN/kaclient" http -n 50 -t 30 -T 15 127.0.0.1 "$SRV_PORT" >"$TMP/short.client" 2>&1
	# (the session ended inside the window: doctor is still watching)
	inside=no
	kill -0 "$doc" 2>/dev/null && inside=yes
	wait "$doc"
	rc=$?
	k=$(kinds "$TMP/short.json")
	if [ $watching = no ]; then
		fail doctor_stalls_short_session "doctor did not say it watches within 20 s: $(head -c 300 "$TMP/short.derr")"
	elif [ $inside = no ]; then
		skip doctor_stalls_short_session "the session outlasted doctor's window on this loaded machine: $(cat "$TMP/short.client")"
	else
		check doctor_stalls_short_session "status $rc; client: $(cat "$TMP/short.client"); findings: '$k'; evidence: $(finding "$TMP/short.json" nagle-delayed-ack evidence); connection: $(json_get "$TMP/short.json" connections.worst.0); server: $(grep '^CONN' "$TMP/reset.out" | head -n 1)" \
			"$(field "$(cat "$TMP/short.client")" over)" -ge 25 -a "$rc" = 1 -a \
			"$(echo "$k" | grep -c '^nagle-delayed-ack$')" = 1 -a \
			"$(finding "$TMP/short.json" nagle-delayed-ack evidence.listener_nodelay)" = True -a \
			"$(finding "$TMP/short.json" nagle-delayed-ack evidence.connection_nodelay)" = False -a \
			"$(json_get "$TMP/short.json" connections.worst.0.nodelay)" = False 2>/dev/null
	fi
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
fi

exit 0
