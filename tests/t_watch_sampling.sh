#!/bin/sh
# socktune watch's connection samples answer at most their budget (2000 connections) and
# take the listeners in turn, never leaving one blind for long: in a namespace where three
# servers hold 1000 loopback connections each, the second sample counts two of them (2000
# connections, stopped at its budget: counted partial), the third the one left; every
# listener's count stays there; the ceiling of the spacing (60 s) and the age of the oldest
# count are metrics, and the example rules alert on that age.
. "$(dirname "$0")/lib.sh"

N=1000
if ! command -v curl >/dev/null; then
	skip watch_sampling "no curl"
	exit 0
fi
if ! setup_ns NSR; then
	skip watch_sampling "no network namespace (root and ip netns needed)"
	exit 0
fi
P1=$(free_port)
P2=$(free_port)
P3=$(free_port)
M=$(free_port)
for p in $P1 $P2 $P3; do
	ip netns exec "$NSR" "$PY" "$ROOT/tests/py/holdconns.py" "$p" "$N" 60 >"$TMP/hold.$p" 2>&1 &
done
for p in $P1 $P2 $P3; do
	busywait 20000 grep -q "held $N" "$TMP/hold.$p" || {
		fail watch_sampling.held "a server did not hold $N connections: $(cat "$TMP/hold.$p")"
		exit 0
	}
done
ip netns exec "$NSR" "$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 ":$P1" ":$P2" ":$P3" \
	>"$TMP/watch.out" 2>"$TMP/watch.err" &
scrape() { ip netns exec "$NSR" curl -sf -m 2 "http://127.0.0.1:$M/metrics" >"$TMP/m.txt" 2>/dev/null; }
val() { grep "^$1[ {]" "$TMP/m.txt" | grep -e "$2" | head -n 1 | awk '{ print $NF }'; }
# samples N: scraped until the watch has taken N connection samples (30 s at most)
samples() {
	i=0
	while [ $i -lt 300 ]; do
		scrape && [ "$(val socktune_watch_connection_samples_total "")" -ge "$1" ] 2>/dev/null && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
samples 2
s2=$(val socktune_watch_connection_sample_sockets "")
partial=$(val socktune_watch_connection_samples_partial_total "")
# (a scrape under way when it ran adds its one connection: the watch's port is a listener)
check watch_sampling.budget "the second sample answered ${s2:-none} connections (budget 2000, 3 x $N held)" \
	"${s2:-9999}" -ge $((2 * N)) -a "${s2:-9999}" -le $((2 * N + 1))
check watch_sampling.partial "samples stopped at their budget: ${partial:-none}" "${partial:-0}" -ge 1
samples 3
s3=$(val socktune_watch_connection_sample_sockets "")
check watch_sampling.rest_next "the third sample answered ${s3:-none} (the listener left: $N)" \
	"${s3:-9999}" -ge "$N" -a "${s3:-9999}" -le $((N + 1))
counted=0
for p in $P1 $P2 $P3; do
	[ "$(val socktune_listener_connections "port=\"$p\"")" = "$N" ] && counted=$((counted + 1))
done
check watch_sampling.all_counted "listeners with their $N connections: $counted of 3" "$counted" -eq 3
every=$(val socktune_watch_connection_sample_interval_seconds "")
ceil=$(val socktune_watch_connection_sample_interval_max_seconds "")
age=$(val socktune_watch_connection_sample_age_seconds "")
check watch_sampling.ceiling "interval ${every:-none} s, ceiling ${ceil:-none} s" \
	-n "$ceil" -a "${ceil:-0}" -eq 60 -a "${every:-999}" -le "${ceil:-0}"
check watch_sampling.age "the oldest count is ${age:-none} s old (two samples 10 s apart)" \
	-n "$age" -a "$(echo "${age:-999}" | cut -d. -f1)" -le 25

# the example rules alert on that age, above the ceiling
RULES=$ROOT/examples/prometheus/socktune-rules.yml
check watch_sampling.alert "no alert on socktune_watch_connection_sample_age_seconds in $RULES" \
	-n "$(grep 'expr: socktune_watch_connection_sample_age_seconds' "$RULES")"
