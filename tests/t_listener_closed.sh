#!/bin/sh
# Connections closed per listener, counted from the kernel's destroy notifications (sock_diag),
# where a periodic dump cannot see connections that live a few milliseconds: in a namespace of
# the test's own, two listeners (ports 7000 and 7001, dual-stack), 120 short connections to
# the first (60 over IPv4, 60 over IPv6) and 40 to the second: watch's
# socktune_listener_connections_closed_total rises by exactly 120 and 40, with no overrun
# (socktune_netns_close_overruns_total 0), and its HELP says where the count comes from;
# doctor's window counts exactly the 50 closed in it (connections_closed in its JSON), and its
# namespace's close_overruns is 0.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ]; then
	skip listener_closed "needs root (a network namespace, the destroy notifications)"
	exit 0
fi
if ! command -v curl >/dev/null; then
	skip listener_closed "no curl"
	exit 0
fi
if ! setup_ns NS; then
	skip listener_closed "cannot make a network namespace"
	exit 0
fi
PF=$ROOT/tests/py/pathfind.py
in_ns() { nsenter --net="/run/netns/$NS" "$@"; }
SRV_WRAP="nsenter --net=/run/netns/$NS"
start_server s1 -- $PY "$PF" serve 7000 quiet && S1=$SRV_PID &&
	start_server s2 -- $PY "$PF" serve 7001 quiet && S2=$SRV_PID
_started=$?
SRV_WRAP=""
if [ $_started != 0 ]; then
	fail listener_closed.servers "no server in $NS: $(cat "$TMP/s1.err" "$TMP/s2.err" 2>/dev/null)"
	exit 0
fi

M=$(free_port)
"$CLI" watch --listen "127.0.0.1:$M" --interval 0.1 --window 60 "$S1" "$S2" \
	>"$TMP/watch.out" 2>"$TMP/watch.err" &
scrape() { curl -sf -m 2 "http://127.0.0.1:$M/metrics" >"$TMP/$1.txt"; }
# closed FILE PORT: the listener's counter ("" when it has none)
closed() {
	grep "^socktune_listener_connections_closed_total{.*port=\"$2\"" "$1" | awk '{ print $NF }'
}
both_shown() {
	scrape shown && [ -n "$(closed "$TMP/shown.txt" 7000)" ] && [ -n "$(closed "$TMP/shown.txt" 7001)" ]
}
if ! busywait 15000 both_shown; then
	fail listener_closed.watch "no counter for ports 7000 and 7001: $(cat "$TMP/watch.err") $(grep closed "$TMP/shown.txt")"
	exit 0
fi
scrape before
a0=$(closed "$TMP/before.txt" 7000) b0=$(closed "$TMP/before.txt" 7001)
r1=$(in_ns $PY "$PF" short 127.0.0.1 7000 60)
r2=$(in_ns $PY "$PF" short ::1 7000 60)
r3=$(in_ns $PY "$PF" short 127.0.0.1 7001 40)
echo "clients: $r1 / $r2 / $r3"
# all counted once the kernel's work items ran and watch read them (at most 50 ms apart)
counted() {
	scrape after && [ "$(closed "$TMP/after.txt" 7000)" = $((a0 + 120)) ] &&
		[ "$(closed "$TMP/after.txt" 7001)" = $((b0 + 40)) ]
}
busywait 5000 counted
a1=$(closed "$TMP/after.txt" 7000) b1=$(closed "$TMP/after.txt" 7001)
ns=$(grep "^socktune_listener_up{.*port=\"7000\"" "$TMP/after.txt" | sed -n 's/.*netns="\([0-9]*\)".*/\1/p')
over=$(grep "^socktune_netns_close_overruns_total{netns=\"$ns\"}" "$TMP/after.txt" | awk '{ print $NF }')
echo "port 7000: $a0 -> $a1, port 7001: $b0 -> $b1, overruns '$over'"
check listener_closed.exact "port 7000 rose by $((a1 - a0)) (want 120: 60 IPv4, 60 IPv6, all answered: $r1 $r2), port 7001 by $((b1 - b0)) (want 40: $r3)" \
	"$((a1 - a0))" = 120 -a "$((b1 - b0))" = 40 -a "$(field "$r1" ok)" = 60 -a "$(field "$r2" ok)" = 60
check listener_closed.no_overrun "socktune_netns_close_overruns_total '$over' for netns $ns (want 0)" "$over" = 0
check listener_closed.help "HELP: $(grep '^# HELP socktune_listener_connections_closed_total' "$TMP/after.txt")" \
	-n "$(grep '^# HELP socktune_listener_connections_closed_total .*destroy notifications.*socktune_netns_close_overruns_total' "$TMP/after.txt")" -a \
	-n "$(grep '^# TYPE socktune_listener_connections_closed_total counter$' "$TMP/after.txt")"

# doctor: the connections closed within its window, exactly (its own subscription)
"$CLI" doctor --json --seconds 3 "$S1" >"$TMP/doc.json" 2>"$TMP/doc.err" &
D=$!
wait_file "$TMP/doc.err" '^socktune: doctor: watching ' 10
r4=$(in_ns $PY "$PF" short 127.0.0.1 7000 25)
r5=$(in_ns $PY "$PF" short ::1 7000 25)
wait "$D"
n=$(json_get "$TMP/doc.json" listeners.0.connections_closed)
seen=$(json_get "$TMP/doc.json" listeners.0.connections_seen)
dover=$(json_get "$TMP/doc.json" namespaces.1.close_overruns)
echo "doctor: connections_closed $n (its samples saw $seen of them open), close_overruns '$dover'; $r4 / $r5"
check listener_closed.doctor "doctor's connections_closed '$n' (want 50: $r4 $r5): $(cat "$TMP/doc.err")" "$n" = 50
check listener_closed.doctor_overruns "doctor's close_overruns '$dover' in the server's namespace (want 0)" "$dover" = 0
