#!/bin/sh
# watch --apply's TCP_NODELAY cure on a server that sets TCP_NODELAY 0 itself on every
# connection it accepts (tests/helpers/resetsrv -v 0, as hyper 0.14 and Erlang's inets do;
# each response in two writes): the nagle-delayed-ack finding, --apply sets NODELAY on the
# listener and on the connection it has (journalled); the next connection, accepted after
# the cure, inherits 1 and is set back to 0 by the app.  watch reads it and says so once for
# the listener (event=apply-reset-per-connection: listener_nodelay=1 connection_nodelay=0,
# and the cure that holds: socktune attach --cgroup --nodelay PID), and does not set NODELAY
# on that connection after the app (the connection reads 0, no more apply lines); a third
# connection, reset too, gets no second line.
. "$(dirname "$0")/lib.sh"

if ! command -v curl >/dev/null; then
	skip watch_apply_reset "no curl"
	exit 0
fi
if ! $PY -c 'import os; os.pidfd_open' 2>/dev/null; then
	skip watch_apply_reset "$PY has no os.pidfd_open (the read-back helper needs it)"
	exit 0
fi
M=$(free_port)
J=$TMP/journal.jsonl
if ! start_server resetsrv -- "$BIN/resetsrv" -4 -n 3 -v 0 -t 150; then
	fail watch_apply_reset.server "resetsrv did not start: $(cat "$TMP/resetsrv.err")"
	exit 0
fi
S=$SRV_PID P=$SRV_PORT
# nodelay_of WHAT: TCP_NODELAY of the server's listener (WHAT "listener") or of its
# connection with the client's port WHAT, as the kernel has it
nodelay_of() {
	$PY "$ROOT/tests/py/sockopts_of.py" "$S" 2>/dev/null | awk -v w="$1" '
		w == "listener" && / listening=1 / { sub(/.*nodelay=/, ""); print; exit }
		w != "listener" && $4 == "peer=" w { sub(/.*nodelay=/, ""); print; exit }'
}
# client N: keep-alive GETs on one connection, the N-th the server serves (the one before
# ended); its client port in CP
client() {
	"$BIN/kaclient" http -n 1000000 -T 60 127.0.0.1 "$P" >"$TMP/kc$1.out" 2>&1 &
	KC=$!
	busywait 5000 file_has "$TMP/resetsrv.out" '^CONN ' "$1"
	busywait 5000 conn_up
}
conn_up() {
	CP=$(ss -Htn state established "dport = :$P" | awk '{ n = split($3, a, ":"); print a[n]; exit }')
	[ -n "$CP" ]
}
applies_ge() { [ "$(count_lines "$J" '"event": "apply"')" -ge "$1" ]; }
client_end() {
	kill "$KC" 2>/dev/null
	wait "$KC" 2>/dev/null
	busywait 5000 sh -c "! ss -Htn state established 'dport = :$P' | grep -q ."
}
samples() {
	curl -sf -m 2 "http://127.0.0.1:$M/metrics" 2>/dev/null |
		awk '/^socktune_watch_connection_samples_total / { print $2 }'
}

client 1
CP1=$CP
"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 --apply --journal "$J" ":$P" \
	>/dev/null 2>"$TMP/watch.err" &
W=$!
# (the connections are sampled every 10 s: the second sample shows the stall)
busywait 45000 applies_ge 2
check watch_apply_reset_cured "listener NODELAY $(nodelay_of listener), connection :$CP1 \
$(nodelay_of "$CP1") (1 each); $(cat "$J" 2>/dev/null | head -c 600) $(grep -v 'event=finding' "$TMP/watch.err" | head -c 600)" \
	"$(nodelay_of listener)" = 1 -a "$(nodelay_of "$CP1")" = 1

# a connection accepted after the cure: the app sets it back to 0
client_end
client 2
CP2=$CP
busywait 40000 file_has "$TMP/watch.err" 'event=apply-reset-per-connection'
line=$(grep 'event=apply-reset-per-connection' "$TMP/watch.err" | head -n 1)
check watch_apply_reset_said "listener $(nodelay_of listener) (1), connection :$CP2 $(nodelay_of "$CP2") \
(0: the app's); line: $line; $(grep -v 'event=finding' "$TMP/watch.err" | tail -c 600)" \
	"$(nodelay_of listener)" = 1 -a "$(nodelay_of "$CP2")" = 0 -a \
	"$(field "$line" listener_nodelay)" = 1 -a "$(field "$line" connection_nodelay)" = 0 -a \
	"$(field "$line" showing)" -ge 1 -a "$(field "$line" pid)" = "$S" -a \
	"$(field "$line" fix.0)" = "socktune attach --cgroup --nodelay $S" -a \
	"$(field "$line" addr)" = "127.0.0.1:$P"

# a third connection, reset too: nothing said again, nothing set after the app
client_end
client 3
CP3=$CP
n0=$(samples)
samples_ge() { [ "$(samples)" -ge "$1" ] 2>/dev/null; }
busywait 30000 samples_ge $((${n0:-0} + 2))
sleep 1.5 # (a window after the sample)
check watch_apply_reset_once "reset lines $(count_lines "$TMP/watch.err" 'event=apply-reset-per-connection') (1), \
apply lines $(count_lines "$J" '"event": "apply"') (2), connection :$CP3 $(nodelay_of "$CP3") (0), \
samples $n0 -> $(samples)" \
	"$(count_lines "$TMP/watch.err" 'event=apply-reset-per-connection')" = 1 -a \
	"$(count_lines "$J" '"event": "apply"')" = 2 -a "$(nodelay_of "$CP3")" = 0 -a \
	"$(samples)" -ge $((${n0:-0} + 2))
client_end
kill "$W"
wait "$W" 2>/dev/null
kill "$S" 2>/dev/null
wait "$S" 2>/dev/null
exit 0
