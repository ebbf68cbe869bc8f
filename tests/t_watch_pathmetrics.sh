#!/bin/sh
# socktune watch's path families against what ss reads of the same connections, in a network
# namespace of this test's own: a listener whose 1000 peers read (each left 1000 bytes unread
# in the server's receive queue), one whose 200 peers stopped reading (the server's send
# queues full, a segment each dropped past the peers' small buffers and retransmitted), and
# one that 200 short connections reach from a second namespace, each closed as soon as
# accepted.  Checked:
#  - socktune_listener_rtt_seconds: its quantiles 0 and 1 are ss's least and most rtt of the
#    listener's connections, 0.5 and 0.99 ss's by nearest rank (10% + 5 us each);
#  - the memory sums are ss -tm's r (rmem_alloc) and w (wmem_queued) summed (5% + 8 KiB),
#    and the example recording rules divide them by the connections (promtool test rules);
#  - socktune_listener_retransmitted_ratio: 0 where the peers read; where they stopped, above
#    0 and between what ss reads just before the sample and just after it (both counters
#    only grow: retransmits before / segments after <= share <= retransmits after /
#    segments before);
#  - socktune_netns_passive_opens_total rises by exactly the short connections made, and the
#    one scrape's own (the watch serves inside the namespace); both namespaces removed after;
#  - a listener with no connection has no RTT and no share, and 0 bytes;
#  - the text passes promtool check metrics.
. "$(dirname "$0")/lib.sh"

NR=1000 NB=200 NS=200
for t in curl ss; do
	command -v $t >/dev/null || { skip watch_pathmetrics "no $t"; exit 0; }
done
# NSP holds the servers and the watch; the short connections come from NSQ, over a veth
# pair (198.18.0.0/30): in NSP they are passive opens only (on loopback each would be an
# active open of the same namespace too, and the two counters could not be told apart)
if ! setup_ns NSP NSQ; then
	skip watch_pathmetrics "no network namespace (root and ip netns needed)"
	exit 0
fi
if ! ip -n "$NSP" link add vp type veth peer name vq netns "$NSQ" ||
	! ip -n "$NSP" addr add 198.18.0.1/30 dev vp || ! ip -n "$NSQ" addr add 198.18.0.2/30 dev vq ||
	! ip -n "$NSP" link set vp up || ! ip -n "$NSQ" link set vq up; then
	fail watch_pathmetrics.veth "no veth pair between $NSP and $NSQ"
	exit 0
fi
PA=$(free_port) PB=$(free_port) PC=$(free_port) M=$(free_port)
IN="ip netns exec $NSP"
$IN "$PY" "$ROOT/tests/py/pathconns.py" read 127.0.0.1 "$PA" $NR 90 >"$TMP/a.out" 2>&1 &
$IN "$PY" "$ROOT/tests/py/pathconns.py" stall 127.0.0.1 "$PB" $NB 90 >"$TMP/b.out" 2>&1 &
# (the third listens from the start, so that the watch names it now: on a node with many
# sockets its walk of /proc/PID/fd is spaced, 20 s here)
$IN "$PY" "$ROOT/tests/py/pathconns.py" accept 198.18.0.1 "$PC" $NS 90 >"$TMP/c.out" 2>&1 &
for x in a b c; do
	busywait 30000 grep -q "^held\|^listening" "$TMP/$x.out" || {
		fail watch_pathmetrics.held "the $x server did not hold its connections: $(cat "$TMP/$x.out")"
		exit 0
	}
done
$IN "$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 ":$PA" ":$PB" ":$PC" \
	>"$TMP/watch.out" 2>"$TMP/watch.err" &
WPID=$!
# scrape NAME: the text into $TMP/NAME.txt (a connection to the watch: one passive open)
scrape() { $IN curl -sf -m 2 "http://127.0.0.1:$M/metrics" >"$TMP/$1.txt" 2>/dev/null; }
# val FILE FAMILY [PATTERN]: the value of the first sample of FAMILY whose line has PATTERN
val() { grep "^$2[ {]" "$TMP/$1.txt" | grep -e "${3:-}" | head -n 1 | awk '{ print $NF }'; }
lab() { echo "port=\"$1\""; }
counted() {
	scrape m1 && [ "$(val m1 socktune_listener_connections "$(lab "$PA")")" = $NR ] &&
		[ "$(val m1 socktune_listener_connections "$(lab "$PB")")" = $NB ] &&
		[ "$(val m1 socktune_listener_connections "$(lab "$PC")")" = 0 ]
}
if ! busywait 30000 counted; then
	fail watch_pathmetrics.counted "the watch did not count $NR, $NB and 0 connections: $(grep -E '^socktune_listener_connections' "$TMP/m1.txt"; cat "$TMP/watch.err")"
	exit 0
fi
# ss of listener P's connections (server ends): $TMP/NAME.ss (-i), $TMP/NAME.mem (-m)
ss_of() {
	$IN ss -Htni state established "( sport = :$1 )" >"$TMP/$2.ss"
	$IN ss -Htmn state established "( sport = :$1 )" >"$TMP/$2.mem"
}
ss_of "$PA" a1
ss_of "$PB" b1

# ---- RTT: each quantile one connection's, as ss ranks them ----
# (ss prints rtt:SRTT/RTTVAR in ms; a connection not measured yet has none)
grep -o ' rtt:[0-9.]*' "$TMP/a1.ss" | cut -d: -f2 | sort -g >"$TMP/a1.rtt"
n=$(wc -l <"$TMP/a1.rtt")
check watch_pathmetrics.ss_rtts "ss shows the rtt of $n of the $NR connections" "$n" -eq $NR
for q in 0 0.5 0.99 1; do
	want=$(awk -v q=$q '{ v[NR] = $1 } END { r = int(q * NR); if (r < q * NR) r++; if (r < 1) r = 1; printf "%.6f", v[r] / 1000 }' "$TMP/a1.rtt")
	got=$(val m1 socktune_listener_rtt_seconds "$(lab "$PA").*connection_quantile=\"$q\"")
	check watch_pathmetrics.rtt_q$q "quantile $q: watch ${got:-none} s, ss ${want} s" -n "$got" -a \
		"$(awk -v g="${got:-0}" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; print (d <= 0.1 * w + 0.000005) }')" = 1
done
order=$(grep "^socktune_listener_rtt_seconds{.*$(lab "$PB")" "$TMP/m1.txt" | awk '{ print $NF }' | tr '\n' ' ')
check watch_pathmetrics.rtt_ordered "the stalled listener's quantiles 0, 0.5, 0.99, 1: $order" \
	"$(echo "$order" | awk 'NF == 4 && $1 <= $2 && $2 <= $3 && $3 <= $4 && $1 > 0 { print 1 }')" = 1

# ---- memory: the sums of ss -tm's r and w ----
# mem_sum NAME FIELD: FIELD (r: rmem_alloc, w: wmem_queued) of skmem:(...) summed
mem_sum() {
	grep -o 'skmem:([^)]*' "$TMP/$1.mem" | tr '(,' '  ' |
		awk -v f="$2" '{ for (i = 2; i <= NF; i++) if ($i ~ "^" f "[0-9]") s += substr($i, 2) } END { print s + 0 }'
}
for x in "a1 $PA r receive" "a1 $PA w send" "b1 $PB r receive" "b1 $PB w send"; do
	set -- $x
	want=$(mem_sum "$1" "$3")
	got=$(val m1 "socktune_listener_connections_$4_memory_bytes" "$(lab "$2")")
	check "watch_pathmetrics.${4}_memory_$1" "watch ${got:-none} bytes, ss -tm $want" -n "$got" -a \
		"$(awk -v g="${got:-0}" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; print (d <= 0.05 * w + 8192) }')" = 1
done
# (not all 0: the peers' unread bytes, the stalled server's queues)
check watch_pathmetrics.memory_held "receive $(mem_sum a1 r) bytes where peers read, send $(mem_sum b1 w) where they stopped" \
	"$(mem_sum a1 r)" -ge $((NR * 1000)) -a "$(mem_sum b1 w)" -gt 0

# ---- connections opened: the kernel's count, the shortest included ----
p1=$(val m1 socktune_netns_passive_opens_total)
ip netns exec "$NSQ" "$PY" "$ROOT/tests/py/pathconns.py" connect 198.18.0.1 "$PC" $NS >"$TMP/d.out" 2>&1
busywait 10000 grep -q "^accepted $NS" "$TMP/c.out"
scrape m2
p2=$(val m2 socktune_netns_passive_opens_total)
check watch_pathmetrics.passive_opens "PassiveOpens ${p1:-none} then ${p2:-none}: $NS short connections and 1 scrape ($(cat "$TMP/d.out"); $(tail -n 1 "$TMP/c.out"))" \
	-n "$p1" -a -n "$p2" -a "$((${p2:-0} - ${p1:-0}))" -eq $((NS + 1))

# ---- the retransmitted share, across a sample ----
# share_of NAME: "retransmitted sent" of ss -ti's retrans:N/TOTAL and segs_out:N, summed
share_of() {
	tr ' ' '\n' <"$TMP/$1.ss" | awk -F'[:/]' '$1 == "retrans" { r += $3 } $1 == "segs_out" { s += $2 } END { print r + 0, s + 0 }'
}
ss_of "$PB" b2
scrape m3
s0=$(val m3 socktune_watch_connection_samples_total)
next_sample() { scrape m4 && [ "$(val m4 socktune_watch_connection_samples_total)" -gt "${s0:-0}" ] 2>/dev/null; }
busywait 30000 next_sample
ss_of "$PB" b3
set -- $(share_of b2) $(share_of b3)
share=$(val m4 socktune_listener_retransmitted_ratio "$(lab "$PB")")
check watch_pathmetrics.share_between "share ${share:-none}; ss before $1 of $2, after $3 of $4" \
	-n "$share" -a "$1" -gt 0 -a "$(awk -v x="${share:-0}" -v r0="$1" -v s0="$2" -v r1="$3" -v s1="$4" \
	'BEGIN { print (x > 0 && x >= r0 / s1 * 0.999999 && x <= r1 / s0 * 1.000001) }')" = 1
check watch_pathmetrics.share_zero_reading "share where the peers read: $(val m4 socktune_listener_retransmitted_ratio "$(lab "$PA")")" \
	"$(val m4 socktune_listener_retransmitted_ratio "$(lab "$PA")")" = 0

# ---- a listener with no connection: counted 0, no RTT, no share, no bytes ----
lc=$(lab "$PC")
check watch_pathmetrics.empty_listener "$(grep -E "^socktune_listener_(conn|rtt|retrans)[^{]*\{.*$lc" "$TMP/m4.txt")" \
	"$(val m4 socktune_listener_connections "$lc")" = 0 -a \
	-z "$(grep -E "^socktune_listener_(rtt_seconds|retransmitted_ratio)\{.*$lc" "$TMP/m4.txt")" -a \
	"$(val m4 socktune_listener_connections_receive_memory_bytes "$lc")" = 0 -a \
	"$(val m4 socktune_listener_connections_send_memory_bytes "$lc")" = 0

# ---- Prometheus's own tools ----
if command -v promtool >/dev/null; then
	promtool check metrics <"$TMP/m4.txt" >"$TMP/lint.out" 2>&1
	rc=$?
	check watch_pathmetrics.promtool_metrics "status $rc: $(head -n 5 "$TMP/lint.out")" $rc = 0 -a ! -s "$TMP/lint.out"
	cat >"$TMP/rules_test.yml" <<EOF
rule_files:
  - $ROOT/examples/prometheus/socktune-rules.yml
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'socktune_listener_connections{port="80"}'
        values: '4 0'
      - series: 'socktune_listener_connections_receive_memory_bytes{port="80"}'
        values: '8192 0'
      - series: 'socktune_listener_connections_send_memory_bytes{port="80"}'
        values: '40000 0'
      - series: 'socktune_netns_passive_opens_total{netns="1"}'
        values: '0+600x5'
    promql_expr_test:
      - expr: socktune:listener_connection_receive_memory_bytes:avg
        eval_time: 0m
        exp_samples:
          - labels: 'socktune:listener_connection_receive_memory_bytes:avg{port="80"}'
            value: 2048
      - expr: socktune:listener_connection_send_memory_bytes:avg
        eval_time: 0m
        exp_samples:
          - labels: 'socktune:listener_connection_send_memory_bytes:avg{port="80"}'
            value: 10000
      - expr: socktune:listener_connection_receive_memory_bytes:avg
        eval_time: 1m
        exp_samples: []
      - expr: socktune:netns_passive_opens:rate1m
        eval_time: 5m
        exp_samples:
          - labels: 'socktune:netns_passive_opens:rate1m{netns="1"}'
            value: 10
EOF
	promtool test rules "$TMP/rules_test.yml" >"$TMP/rules_test.out" 2>&1
	check watch_pathmetrics.recording_rules "$(tail -n 8 "$TMP/rules_test.out")" $? = 0
else
	skip watch_pathmetrics.promtool "no promtool (apt-get install prometheus)"
fi

# ---- the end: every process by its pid, then the namespace ----
kill "$WPID"
wait_gone "$WPID" 3
kill_jobs
for j in $(cat "$TMP/.jobs"); do wait_gone "$j" 3; done
cleanup_ns "$NSP" "$NSQ"
rc=$?
left=$(ip netns list | grep -w -e "$NSP" -e "$NSQ")
check watch_pathmetrics.cleanup "status $rc, left: $left" $rc = 0 -a -z "$left"
