#!/bin/sh
# socktune watch's sampling stays within its budget, checked by counts: in a namespace where
# a server holds N loopback connections (2N established sockets, both ends), the listener
# sample returns the listeners only (the kernel's state filter), the connection sample
# returns the server's N ends only (the kernel's port filter: not the clients' ends) and
# counts them on the listener, and the connection samples are spaced (10 s, said as a metric).
. "$(dirname "$0")/lib.sh"

N=1000
if ! command -v curl >/dev/null; then
	skip watch_budget "no curl"
	exit 0
fi
if ! setup_ns NSB; then
	skip watch_budget "no network namespace (root and ip netns needed)"
	exit 0
fi
P=$(free_port)
M=$(free_port)
while [ "$M" = "$P" ]; do M=$(free_port); done
ip netns exec "$NSB" "$PY" "$ROOT/tests/py/holdconns.py" "$P" "$N" 60 >"$TMP/hold.out" 2>&1 &
HOLD=$!
busywait 20000 grep -q "held $N" "$TMP/hold.out" || {
	fail watch_budget.held "the server did not hold $N connections: $(cat "$TMP/hold.out")"
	exit 0
}
ip netns exec "$NSB" "$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 "$HOLD" \
	>"$TMP/watch.out" 2>"$TMP/watch.err" &
# metrics: a scrape, once the listener is shown with its connections counted (5 s at most)
i=0
while [ $i -lt 50 ]; do
	ip netns exec "$NSB" curl -sf -m 2 "http://127.0.0.1:$M/metrics" >"$TMP/m.txt" 2>/dev/null &&
		grep -q "^socktune_listener_connections{.*port=\"$P\"" "$TMP/m.txt" && break
	sleep 0.1
	i=$((i + 1))
done
val() { grep "^$1[ {]" "$TMP/m.txt" | grep -e "$2" | head -n 1 | awk '{ print $NF }'; }
established=$(ip netns exec "$NSB" ss -Htn state established | wc -l)
check watch_budget.setup "not 2 x $N established sockets: $established" "$established" -eq $((2 * N))

ls=$(val socktune_watch_listener_sample_sockets "")
check watch_budget.listener_sample_listeners_only \
	"the listener sample returned ${ls:-none} sockets, not the namespace's 2 listeners" "${ls:-0}" -eq 2
cs=$(val socktune_watch_connection_sample_sockets "")
# (watch's own /metrics port is a listener of the namespace too: a scrape under way when the
# sample ran adds its one connection; the clients' N ends would add N)
check watch_budget.connection_sample_port_filtered \
	"the connection sample returned ${cs:-none} sockets, not the server's $N ends (one more: a scrape)" \
	"${cs:-0}" -ge "$N" -a "${cs:-0}" -le $((N + 1))
lc=$(val socktune_listener_connections "port=\"$P\"")
check watch_budget.listener_connections "socktune_listener_connections ${lc:-none}, not $N" \
	"${lc:-0}" -eq "$N"
ev=$(val socktune_watch_connection_sample_interval_seconds "")
cn=$(val socktune_watch_connection_samples_total "")
check watch_budget.connection_samples_spaced \
	"connection samples: ${cn:-none} with an interval of ${ev:-none} s (want 1 every 10 s)" \
	"${ev:-0}" -ge 10 -a "${cn:-0}" -eq 1
info=$(grep -c "^socktune_watch_connection_sample_sockets\|^# TYPE socktune_listener_connections gauge" "$TMP/m.txt")
check watch_budget.metrics_typed "families missing: $(cat "$TMP/watch.err")" "$info" -eq 2
