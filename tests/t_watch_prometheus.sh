#!/bin/sh
# socktune watch with Prometheus's own tools (Debian's prometheus and prometheus-node-exporter
# packages): promtool checks examples/prometheus/'s scrape configs and alerting rules, and a
# live /metrics (a python http.server, backlog 5, stopped with SIGSTOP under a 300-connect
# burst, so the findings and drops families are there); a real Prometheus, started here on a
# free loopback port with its own config and storage in $TMP, scrapes `watch --listen` and
# answers a query for the listener's drops through /api/v1/query with a value above 0; the
# same for `watch --textfile` read by node_exporter's textfile collector (its /metrics, and
# Prometheus scraping it).
. "$(dirname "$0")/lib.sh"

EX=$ROOT/examples/prometheus
if ! command -v promtool >/dev/null; then
	skip watch_prometheus "no promtool (apt-get install prometheus)"
	exit 0
fi
[ -x "$CLI" ] || { fail watch_prometheus "$CLI not built"; exit 0; }
if ! command -v curl >/dev/null; then
	skip watch_prometheus "no curl (apt-get install curl)"
	exit 0
fi

# ---- the example files ----
promtool check config "$EX/prometheus.yml" >"$TMP/config.out" 2>&1
check prom.check_config "$(cat "$TMP/config.out")" $? = 0
# (the rules file is loaded by the config, relative to it: checked there too)
check prom.config_loads_rules "$(cat "$TMP/config.out")" -n "$(grep 'SUCCESS: 1 rule files found' "$TMP/config.out")"
promtool check config "$EX/prometheus-kubernetes.yml" >"$TMP/k8s.out" 2>&1
rc=$?
if grep -q 'kubernetes_sd_configs not found' "$TMP/k8s.out"; then
	skip prom.check_config_kubernetes "this promtool has no Kubernetes discovery (Debian's is built without it)"
else
	check prom.check_config_kubernetes "$(cat "$TMP/k8s.out")" $rc = 0
fi
promtool check rules "$EX/socktune-rules.yml" >"$TMP/rules.out" 2>&1
check prom.check_rules "$(cat "$TMP/rules.out")" $? = 0
# the rules are about what watch exports: every socktune_ name in them is a family of its
# (its own table, or promtext.h's families shared with stats)
for n in $(grep -o 'socktune_[a-z_]*' "$EX/socktune-rules.yml" | sort -u); do
	grep -q "\"$n\"" "$ROOT"/cli/watch/*.c "$ROOT"/cli/promtext.h || fail prom.rules_names "$n is not a family watch exports"
done
check prom.rules_alert_findings_and_drops "$(grep 'expr:' "$EX/socktune-rules.yml")" \
	-n "$(grep 'expr: .*socktune_finding' "$EX/socktune-rules.yml")" -a \
	-n "$(grep 'expr: .*rate(socktune_listener_drops_total' "$EX/socktune-rules.yml")"

# ---- a stopped server with drops, and a watch of it ----
P=$(free_port) M=$(free_port) PP=$(free_port) NP=$(free_port)
if [ "$(printf '%s\n' "$P" "$M" "$PP" "$NP" | sort -u | wc -l)" -ne 4 ]; then
	P=$(free_port) M=$(free_port) PP=$(free_port) NP=$(free_port)
fi
if ! start_server -l "$P" srv -- "$PY" -m http.server --bind 127.0.0.1 "$P"; then
	fail prom.server "http.server did not start: $(cat "$TMP/srv.err")"
	exit 0
fi
SRV=$SRV_PID
mkdir "$TMP/tf"
"$CLI" watch --listen "127.0.0.1:$M" --textfile "$TMP/tf/socktune.prom" --every 0.5 \
	--interval 0.05 --window 1 ":$P" >"$TMP/watch.out" 2>"$TMP/watch.err" &
WPID=$!
scrape() { curl -sf -m 2 "http://127.0.0.1:$M/metrics" >"$TMP/$1.txt"; }
has_up() { scrape up && grep -q "^socktune_listener_up{.*port=\"$P\".* 1$" "$TMP/up.txt"; }
if ! busywait 15000 has_up; then
	fail prom.watch_starts "no socktune_listener_up 1 for :$P: $(cat "$TMP/watch.err")"
	exit 0
fi
kill -STOP "$SRV"
"$BIN/kaclient" burst -n 300 -T 4 127.0.0.1 "$P" >"$TMP/burst.out" 2>&1 &
BURST=$!
has_finding() {
	scrape live && grep -q "^socktune_finding{.*port=\"$P\"} 1$" "$TMP/live.txt" &&
		grep -q "^socktune_listener_drops_total{.*port=\"$P\".* [1-9][0-9]*$" "$TMP/live.txt"
}
busywait 5000 has_finding
check prom.live_has_finding_and_drops "$(grep -E "^socktune_(finding|listener_drops_total)\{" "$TMP/live.txt")" $? = 0

# ---- promtool check metrics on it ----
promtool check metrics <"$TMP/live.txt" >"$TMP/lint.out" 2>&1
rc=$?
check prom.check_metrics "status $rc: $(head -n 5 "$TMP/lint.out")" $rc = 0 -a ! -s "$TMP/lint.out"
# (the check must be able to fail: a counter without _total, a family without HELP)
printf '# TYPE st_bad counter\nst_bad 1\n' | promtool check metrics >"$TMP/lint_bad.out" 2>&1
check prom.check_metrics_selftest "a bad counter went through: $(cat "$TMP/lint_bad.out")" -s "$TMP/lint_bad.out"

# ---- socktune stats of a server under the library, into the same textfile directory ----
# (its backlog, queue length and buffer families are watch's too: one name, type and help,
# else node_exporter drops the family of one file)
SP=$(free_port)
while [ "$SP" = "$P" ] || [ "$SP" = "$M" ] || [ "$SP" = "$NP" ] || [ "$SP" = "$PP" ]; do SP=$(free_port); done
SPID=""
if start_server -l "$SP" lib SOCKTUNE_STATS="$TMP/st.%p" SOCKTUNE_BACKLOG=64 SOCKTUNE_RCVBUF=256k \
	LD_PRELOAD="$LIB" -- "$PY" -m http.server --bind 127.0.0.1 "$SP"; then
	SPID=$SRV_PID
	"$CLI" stats --format prometheus --output "$TMP/tf/stats.prom" "$TMP/st.$SPID" 2>"$TMP/stats.err"
	check prom.stats_textfile "$(cat "$TMP/stats.err"; head -c 300 "$TMP/tf/stats.prom")" \
		-n "$(grep "^socktune_listener_backlog{.*port=\"$SP\".*} 64$" "$TMP/tf/stats.prom")"
else
	fail prom.stats_server "http.server under the library did not start: $(cat "$TMP/lib.err")"
fi

# ---- node_exporter's textfile collector ----
if ! command -v prometheus-node-exporter >/dev/null; then
	skip prom.node_exporter "no prometheus-node-exporter (apt-get install prometheus-node-exporter)"
	NE=""
else
	prometheus-node-exporter --collector.disable-defaults --collector.textfile \
		--collector.textfile.directory="$TMP/tf" --web.listen-address="127.0.0.1:$NP" \
		>"$TMP/ne.out" 2>&1 &
	NE=$!
	ne_has() {
		curl -sf -m 2 "http://127.0.0.1:$NP/metrics" >"$TMP/ne.txt" &&
			grep -q "^socktune_listener_drops_total{.*port=\"$P\".*} [1-9][0-9]*$" "$TMP/ne.txt"
	}
	busywait 8000 ne_has
	check prom.node_exporter_textfile "node_exporter: $(grep -E "^socktune_listener_drops_total\{.*port=\"$P\"|^node_textfile_scrape_error" "$TMP/ne.txt" 2>/dev/null) $(tail -n 2 "$TMP/ne.out")" $? = 0
	check prom.node_exporter_no_textfile_error "$(grep '^node_textfile_scrape_error' "$TMP/ne.txt")" \
		-n "$(grep '^node_textfile_scrape_error 0$' "$TMP/ne.txt")"
	if [ -n "$SPID" ]; then
		# both files' series of the shared families, and no gathering error
		check prom.node_exporter_stats_and_watch "$(grep -E '^socktune_listener_(backlog|receive_buffer_bytes)|^promhttp_metric_handler_errors_total' "$TMP/ne.txt"; grep -i error "$TMP/ne.out" | tail -n 2)" \
			-n "$(grep "^socktune_listener_backlog{.*comm=\"python3\".*port=\"$P\".*} 5$" "$TMP/ne.txt")" -a \
			-n "$(grep "^socktune_listener_backlog{.*pid=\"$SPID\".*port=\"$SP\".*} 64$" "$TMP/ne.txt")" -a \
			-n "$(grep "^socktune_listener_receive_buffer_bytes{.*pid=\"$SPID\".*port=\"$SP\".*} [1-9][0-9]*$" "$TMP/ne.txt")" -a \
			-n "$(grep "^socktune_listener_receive_buffer_bytes{.*comm=\"python3\".*port=\"$P\".*} [1-9][0-9]*$" "$TMP/ne.txt")" -a \
			-n "$(grep '^promhttp_metric_handler_errors_total{cause="gathering"} 0$' "$TMP/ne.txt")"
	fi
fi

# ---- a real Prometheus: scrapes both, answers a query ----
if ! command -v prometheus >/dev/null; then
	skip prom.query "no prometheus (apt-get install prometheus)"
else
	cat >"$TMP/prom.yml" <<EOC
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: socktune
    static_configs:
      - targets: ["127.0.0.1:$M"]
  - job_name: node
    static_configs:
      - targets: ["127.0.0.1:$NP"]
EOC
	prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" \
		--web.listen-address="127.0.0.1:$PP" >"$TMP/prom.out" 2>&1 &
	PROM=$!
	# query JOB: the drops of our listener that Prometheus has from JOB, into $TMP/q.JOB
	query() {
		curl -sf -m 2 "http://127.0.0.1:$PP/api/v1/query" \
			--data-urlencode "query=socktune_listener_drops_total{job=\"$1\",port=\"$P\"}" >"$TMP/q.$1.json" &&
			$PY -c 'import json, sys
d = json.load(open(sys.argv[1]))
r = d["data"]["result"]
sys.exit(0 if d["status"] == "success" and r and float(r[0]["value"][1]) > 0 else 1)' "$TMP/q.$1.json"
	}
	busywait 20000 query socktune
	check prom.query_listen "Prometheus answered: $(cat "$TMP/q.socktune.json" 2>/dev/null) $(grep -i 'level=error' "$TMP/prom.out" | tail -n 2)" $? = 0
	echo "# the answer: $(cat "$TMP/q.socktune.json" 2>/dev/null)"
	if [ -n "$NE" ]; then
		busywait 10000 query node
		check prom.query_textfile "Prometheus answered: $(cat "$TMP/q.node.json" 2>/dev/null)" $? = 0
		echo "# the answer through node_exporter: $(cat "$TMP/q.node.json" 2>/dev/null)"
	fi
	kill "$PROM"
	wait_gone "$PROM" 10
	check prom.prometheus_ends "Prometheus still runs 10 s after SIGTERM" -z "$(kill -0 "$PROM" 2>/dev/null && echo x)"
fi

# ---- the end: every process started here, by its pid ----
kill -CONT "$SRV"
wait "$BURST" 2>/dev/null
[ -n "$NE" ] && kill "$NE" && wait_gone "$NE" 5
kill "$WPID"
wait_gone "$WPID" 3
kill "$SRV"
wait_gone "$SRV" 3
[ -n "$SPID" ] && kill "$SPID" && wait_gone "$SPID" 3
left=""
for p in $SRV $WPID ${SPID:-} ${NE:-} ${PROM:-}; do
	kill -0 "$p" 2>/dev/null && left="$left $p"
done
check prom.cleanup "still running:$left" -z "$left"
