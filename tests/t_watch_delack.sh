#!/bin/sh
# socktune watch runs doctor's delayed-ACK rules on its connection samples (one
# implementation: cli/findings/findings.c, doc_judge_two_write and doc_judge_client_nagle): a
# keep-alive server with no library and a client that writes each request in two pieces with Nagle on (kaclient split:
# its second piece waits for the server's delayed ACK of the first) gives the
# delayed-ack-two-write finding on /metrics and its line with the fix; the same server,
# tuned by the library with SOCKTUNE_DELACK_MAX=5ms, gives none in as many connection
# samples.  --apply changes nothing for it (its cure is not one watch applies).
. "$(dirname "$0")/lib.sh"

if ! command -v curl >/dev/null; then
	skip watch_delack "no curl"
	exit 0
fi

# run NAME [VAR=value...]: tserver keep-alive on loopback, the split client for 60 s at most,
# watch on its port with --apply once the client's connection is up; waits for the finding
# (the connections are sampled every 10 s: the second sample judges them, at the end of the
# 1 s window after it) or for four connection samples (so the window after the third, the
# one that judges a connection the first sample missed, is over: samples_total counts a
# sample before its window is judged)
run() {
	_n=$1
	shift
	start_server "$_n" "$@" -- "$BIN/tserver" -m ka -n 1 -q 100 -r 100 -t 80 || {
		fail "$_n" "tserver did not start: $(cat "$TMP/$_n.err")"
		return 1
	}
	P=$SRV_PORT
	M=$(free_port)
	while [ "$M" = "$P" ]; do M=$(free_port); done
	"$BIN/kaclient" split -n 100000 -q 100 -r 100 -T 60 127.0.0.1 "$P" >"$TMP/$_n.client" 2>&1 &
	_c=$!
	busywait 5000 sh -c "ss -Htn state established 'sport = :$P' | grep -q ."
	"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 --apply \
		--journal "$TMP/$_n.jsonl" ":$P" >/dev/null 2>"$TMP/$_n.werr" &
	_w=$!
	busywait 60000 sh -c "curl -sf -m 2 'http://127.0.0.1:$M/metrics' >'$TMP/$_n.prom' &&
		{ grep -q '^socktune_finding{.*kind=\"delayed-ack-two-write\".*port=\"$P\"' '$TMP/$_n.prom' ||
		  [ \$(grep '^socktune_watch_connection_samples_total ' '$TMP/$_n.prom' | awk '{ print \$2 }') -ge 4 ]; }"
	curl -sf -m 2 "http://127.0.0.1:$M/metrics" >"$TMP/$_n.prom"
	kill "$_w" "$_c" 2>/dev/null
	wait "$_w" "$_c" 2>/dev/null
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
	return 0
}

if run split; then
	check watch_delack.two_write_metric "$(grep '^socktune_finding{' "$TMP/split.prom"); client: $(cat "$TMP/split.client")" \
		-n "$(grep "^socktune_finding{.*kind=\"delayed-ack-two-write\".*port=\"$P\".* 1\$" "$TMP/split.prom")"
	line=$(grep "event=finding id=[0-9a-f]* kind=delayed-ack-two-write .*port=$P" "$TMP/split.werr" | head -n 1)
	# (its fix: --delack-max where the kernel has TCP_DELACK_MAX_US, the route back to the
	# client with quickack: check --route prints that command)
	check watch_delack.two_write_line_fix "$(head -c 800 "$TMP/split.werr")" \
		-n "$(echo "$line" | grep -e 'fix.[0-9]="\(nsenter [^ ]* \)\{0,1\}socktune \(check --route 127.0.0.1\|attach --delack-max\)')"
	n=$(grep -c '"event": "apply"' "$TMP/split.jsonl" 2>/dev/null)
	check watch_delack.not_applied "journal changes: ${n:-0}" "${n:-0}" = 0
fi
if run tuned LD_PRELOAD="$LIB" SOCKTUNE_DELACK_MAX=5ms; then
	check watch_delack.tuned_none "findings: $(grep '^socktune_finding{' "$TMP/tuned.prom"); samples: $(grep '^socktune_watch_connection_samples_total ' "$TMP/tuned.prom"); client: $(cat "$TMP/tuned.client")" \
		-z "$(grep "^socktune_finding{.*kind=\"delayed-ack-two-write\".*port=\"$P\"" "$TMP/tuned.prom")" -a \
		"$(grep '^socktune_watch_connection_samples_total ' "$TMP/tuned.prom" | awk '{ print $2 }')" -ge 4
fi
