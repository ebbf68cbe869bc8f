#!/bin/sh
# doctor starved of CPU (niced to 19, on the one CPU a busy loop holds) while 2000 other
# connections make each of its connection samples long, and a ~2 s session of a server that
# sets TCP_NODELAY 0 on each connection inside its window: the pace of its samples follows the
# CPU they take, not the time it waits for a CPU (a pace of 20 times the wall time spaced them
# seconds apart, and the session went unseen).  doctor names the stall.
# alone: doctor starved of CPU on purpose; beside the other files a sample waits seconds
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip doctor_stalls_starved "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi
if [ -n "${ST_SANITIZER_PRELOAD:-}${ST_SANITIZER:-}" ]; then
	skip doctor_stalls_starved "a pace of CPU time measured: not in a sanitizer build"
	exit 0
fi
if ! command -v taskset >/dev/null; then
	skip doctor_stalls_starved "no taskset"
	exit 0
fi
if start_server starved -- "$BIN/resetsrv" -n 1 -t 60; then
	cat >"$TMP/held.py" <<'EOF'
import socket, sys, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(4096)
a = []
for i in range(int(sys.argv[1])):
    a.append(socket.create_connection(l.getsockname())); a.append(l.accept()[0])
print("HELD", flush=True)
time.sleep(40)
EOF
	$PY "$TMP/held.py" 2000 >"$TMP/held.out" 2>&1 &
	held=$!
	taskset -c 0 sh -c 'end=$(($(date +%s) + 40)); while [ "$(date +%s)" -lt $end ]; do :; done' &
	spin=$!
	AT_EXIT="kill $held $spin 2>/dev/null"
	wait_file "$TMP/held.out" '^HELD' 20
	taskset -c 0 nice -n 19 "$CLI" doctor --seconds 5 --json "$SRV_PID" >"$TMP/starved.json" 2>"$TMP/starved.derr" &
	doc=$!
	watching=no
	wait_file "$TMP/starved.derr" '^socktune: doctor: watching ' 30 && watching=yes
	[ $watching = yes ] &&
		"$BIN/kaclient" http -n 50 -t 30 -T 15 127.0.0.1 "$SRV_PORT" >"$TMP/starved.client" 2>&1
	inside=no
	kill -0 "$doc" 2>/dev/null && inside=yes
	wait "$doc"
	rc=$?
	kill "$held" "$spin" 2>/dev/null
	wait "$held" "$spin" 2>/dev/null || :
	k=$(kinds "$TMP/starved.json")
	if [ $watching = no ]; then
		fail doctor_stalls_starved "doctor did not say it watches within 30 s: $(head -c 300 "$TMP/starved.derr")"
	elif [ "$(json_get "$TMP/starved.json" sampling.connection_sample_us | cut -d. -f1)" -gt 2500000 ] 2>/dev/null; then
		skip doctor_stalls_starved "one connection sample took over 2.5 s here (doctor got almost no CPU): the session cannot hold two: $(json_get "$TMP/starved.json" sampling)"
	elif [ $inside = no ]; then
		skip doctor_stalls_starved "the session outlasted doctor's window on this loaded machine: $(cat "$TMP/starved.client")"
	else
		check doctor_stalls_starved "status $rc; client: $(cat "$TMP/starved.client"); findings: '$k'; sampling: $(json_get "$TMP/starved.json" sampling); connection: $(json_get "$TMP/starved.json" connections.worst.0)" \
			"$(field "$(cat "$TMP/starved.client")" over)" -ge 25 -a "$rc" = 1 -a \
			"$(echo "$k" | grep -c '^nagle-delayed-ack$')" = 1 2>/dev/null
	fi
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
fi
exit 0
