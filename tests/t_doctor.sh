#!/bin/sh
# socktune doctor: the symptom found on a running, unmodified server, with its evidence and the
# setting that cures it; the same server tuned (or healthy) gives no finding.  Every server and
# client runs in a network namespace this test makes, so the namespace's TcpExt counters are
# theirs alone; doctor reads them from outside, given the server's pid (sock_diag from inside
# the namespace, /proc/PID/net/netstat), or from inside.
. "$(dirname "$0")/lib.sh"

if ! setup_ns NS; then
	skip doctor "cannot make a network namespace here (needs root and ip netns)"
	exit 0
fi
X="ip netns exec $NS"
SECS=3
BIG=$TMP/www/big
# (sparse: no disk used; read at full speed on loopback it lasts about as long as the window)
mkdir -p "$TMP/www" && truncate -s 3G "$BIG"

# kinds FILE: the findings' kinds of doctor's JSON in FILE, one per line ("" when none)
kinds() {
	$PY -c 'import json, sys
for f in json.load(open(sys.argv[1]))["findings"]: print(f["kind"])' "$1" 2>/dev/null
}
# finding FILE KIND KEY: the KEY of the first finding of KIND (fix: its fixes, one per line;
# evidence.NAME: one number of its evidence)
finding() {
	$PY -c 'import json, sys
for f in json.load(open(sys.argv[1]))["findings"]:
    if f["kind"] == sys.argv[2]:
        v = f
        for k in sys.argv[3].split("."): v = v[k]
        print("\n".join(v) if isinstance(v, list) else v); break' "$1" "$2" "$3" 2>/dev/null
}

# server NAME CMD...: CMD in the namespace, listening on port 8000 (python's servers print
# no port); SRV_PID is the server itself (ip netns exec execs it)
PORT=8000
ns_listening() {
	$X ss -Hltn "sport = :$PORT" | grep -q .
}
server() {
	_n=$1
	shift
	$X "$@" >"$TMP/$_n.out" 2>"$TMP/$_n.err" &
	SRV_PID=$!
	busywait 5000 ns_listening || {
		fail "$_n" "server did not start: $(cat "$TMP/$_n.err")"
		return 1
	}
}
stop() {
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
	busywait 3000 sh -c "! $X ss -Hltn 'sport = :$PORT' | grep -q ."  # (a stuck one: the next fails to start)
}

# doctor NAME [ARGS...]: doctor --json for SECS seconds in the background (from outside the
# namespace, given the server's pid); its output in $TMP/NAME.json, its status in
# $TMP/NAME.rc once done.  wait_doctor waits for it.
doctor() {
	_d=$1
	shift
	( "$CLI" doctor --seconds $SECS --json "$@" >"$TMP/$_d.json" 2>"$TMP/$_d.derr"
	  echo $? >"$TMP/$_d.rc" ) &
	DOC=$!
	sleep 0.3
}
wait_doctor() {
	wait "$DOC"
}
# watched NAME CMD...: the client CMD in the background, doctor NAME watching the server
# meanwhile (the client outlasts the window: its connection is open when doctor looks),
# then the client stopped
watched() {
	_w=$1
	shift
	"$@" >"$TMP/$_w.client" 2>&1 &
	_c=$!
	sleep 0.3
	doctor "$_w" "$SRV_PID"
	wait_doctor
	kill "$_c" 2>/dev/null
	wait "$_c" 2>/dev/null
}

PYSRV="/usr/bin/python3 -m http.server -b 127.0.0.1"

# ---- accept-queue-overflow: python's backlog of 5 under a burst of 300 connects ----
run_burst() {
	_n=$1
	shift
	server "$_n" "$@" || return 1
	doctor "$_n" "$SRV_PID"
	$X "$BIN/kaclient" burst -n 300 -T 8 127.0.0.1 $PORT >"$TMP/$_n.client" 2>&1
	wait_doctor
	stop
}
if run_burst burst $PYSRV $PORT; then
	k=$(kinds "$TMP/burst.json")
	check doctor_overflow_found "findings: $k ($(cat "$TMP/burst.derr"))" \
		"$(echo "$k" | grep -c '^accept-queue-overflow$')" = 1
	# the listener's own drop count (sk_drops), and the namespace's overflow counter
	ov=$(finding "$TMP/burst.json" accept-queue-overflow evidence.ListenOverflows)
	dropped=$(finding "$TMP/burst.json" accept-queue-overflow evidence.dropped)
	check doctor_overflow_evidence "ListenOverflows=$ov dropped=$dropped, certainty \
$(finding "$TMP/burst.json" accept-queue-overflow certainty)" \
		"${ov:-0}" -gt 0 -a "${dropped:-0}" -gt 0 -a \
		"$(finding "$TMP/burst.json" accept-queue-overflow certainty)" = high
	fixes=$(finding "$TMP/burst.json" accept-queue-overflow fix)
	case "$fixes" in
	*"socktune attach --backlog 4096 $SRV_PID"*"socktune --backlog 4096 -- /usr/bin/python3 -m http.server"*)
		pass doctor_overflow_fix ;;
	*) fail doctor_overflow_fix "fixes: $fixes" ;;
	esac
	check doctor_overflow_status "exit status $(cat "$TMP/burst.rc") (1: findings)" \
		"$(cat "$TMP/burst.rc")" = 1
	check doctor_overflow_backlog "listener backlog $(json_get "$TMP/burst.json" listeners.0.backlog)" \
		"$(json_get "$TMP/burst.json" listeners.0.backlog)" = 5
fi
if run_burst burst_tuned "$CLI" --backlog 4096 -- $PYSRV $PORT; then
	check doctor_overflow_tuned "findings: $(kinds "$TMP/burst_tuned.json") (backlog $(json_get \
		"$TMP/burst_tuned.json" listeners.0.backlog); $(cat "$TMP/burst_tuned.client"))" \
		-z "$(kinds "$TMP/burst_tuned.json")" -a "$(cat "$TMP/burst_tuned.rc")" = 0
fi

# ---- nagle-delayed-ack: keep-alive GETs against python's HTTP/1.1 server ----
run_ka() {
	_n=$1
	shift
	server "$_n" "$@" || return 1
	watched "$_n" $X "$BIN/kaclient" http -n 100000 -T 6 127.0.0.1 $PORT
	stop
}
if run_ka nagle $PYSRV --protocol HTTP/1.1 $PORT; then
	k=$(kinds "$TMP/nagle.json")
	check doctor_nagle_found "findings: $k" "$(echo "$k" | grep -c '^nagle-delayed-ack$')" = 1
	check doctor_nagle_nodelay_read "evidence nodelay=$(finding "$TMP/nagle.json" nagle-delayed-ack \
		evidence.nodelay) (read through pidfd_getfd)" \
		"$(finding "$TMP/nagle.json" nagle-delayed-ack evidence.nodelay)" = 0
	rtt=$(finding "$TMP/nagle.json" nagle-delayed-ack evidence.rtt_ms)
	check doctor_nagle_rtt "rtt_ms=$rtt" "${rtt%.*}" -ge 15
	case "$(finding "$TMP/nagle.json" nagle-delayed-ack fix)" in
	*"socktune attach --nodelay --connections $SRV_PID"*"socktune --nodelay -- "*) pass doctor_nagle_fix ;;
	*) fail doctor_nagle_fix "$(finding "$TMP/nagle.json" nagle-delayed-ack fix)" ;;
	esac
fi
if run_ka nagle_tuned "$CLI" --nodelay -- $PYSRV --protocol HTTP/1.1 $PORT; then
	check doctor_nagle_tuned "findings: $(kinds "$TMP/nagle_tuned.json"); nodelay on the \
connection: $(json_get "$TMP/nagle_tuned.json" connections.worst.0.nodelay)" \
		-z "$(kinds "$TMP/nagle_tuned.json")" -a \
		"$(json_get "$TMP/nagle_tuned.json" connections.worst.0.nodelay)" = True
fi

# ---- delayed-ack-two-write: each request in two writes against a keep-alive server ----
run_split() {
	_n=$1
	shift
	SRV_WRAP="$X" start_server "$_n" "$@" -- "$BIN/tserver" -m ka -n 1 -q 100 -r 100 -t 20 || {
		fail "$_n" "tserver did not start: $(cat "$TMP/$_n.err")"
		return 1
	}
	watched "$_n" $X "$BIN/kaclient" split -n 100000 -q 100 -r 100 -T 6 127.0.0.1 "$SRV_PORT"
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
	return 0
}
# (tuned first: the route fix applied below stays in the namespace)
if run_split split_tuned LD_PRELOAD="$LIB" SOCKTUNE_DELACK_MAX=5ms; then
	# (the connection was watched: its ato is the cap the listener gave it)
	check doctor_split_tuned "findings: $(kinds "$TMP/split_tuned.json"); connection ato \
$(json_get "$TMP/split_tuned.json" connections.worst.0.ato_ms) ms ($(cat "$TMP/split_tuned.client"))" \
		-z "$(kinds "$TMP/split_tuned.json")" -a \
		"$(json_get "$TMP/split_tuned.json" connections.worst.0.ato_ms)" = 8.0
fi
if run_split split; then
	k=$(kinds "$TMP/split.json")
	check doctor_split_found "findings: $k" "$(echo "$k" | grep -c '^delayed-ack-two-write$')" = 1
	rate=$(finding "$TMP/split.json" delayed-ack-two-write evidence.segs_out_per_s)
	ato=$(finding "$TMP/split.json" delayed-ack-two-write evidence.ato_ms)
	check doctor_split_evidence "ato_ms=$ato segs_out_per_s=$rate" "${ato%.*}" -ge 30 -a \
		"${rate%.*}" -ge 12 -a "${rate%.*}" -le 30
	case "$(finding "$TMP/split.json" delayed-ack-two-write fix)" in
	*"--delack-max 5ms --connections $SRV_PID"*) pass doctor_split_fix ;;
	*) fail doctor_split_fix "$(finding "$TMP/split.json" delayed-ack-two-write fix)" ;;
	esac
	# the exact route command doctor looked up; applied, the same server needs no option
	# (doctor ran from outside the namespace: its command enters it)
	route=$(finding "$TMP/split.json" delayed-ack-two-write fix | grep '^nsenter --net=/proc/[0-9]*/ns/net ip route change .*quickack 1$')
	# (the server it named has gone: the same namespace, entered by its name)
	if [ -n "$route" ] && $X sh -c "${route#nsenter --net=/proc/*/ns/net }" && run_split split_route; then
		check doctor_split_route_cures "route: $route; findings after: $(kinds "$TMP/split_route.json")" \
			-z "$(kinds "$TMP/split_route.json")" -a "$(json_get "$TMP/split_route.json" connections.count)" -ge 1
	else
		fail doctor_split_route_cures "no route fix applied: $(finding "$TMP/split.json" delayed-ack-two-write fix)"
	fi
fi

# ---- receive-window-limited: a download read slowly, and then at full speed ----
run_download() {
	_n=$1 _rate=$2
	server "$_n" $PYSRV -d "$TMP/www" $PORT || return 1
	watched "$_n" $X curl -s --noproxy '*' ${_rate:+--limit-rate "$_rate"} -o /dev/null \
		--max-time 8 "http://127.0.0.1:$PORT/big"
	stop
}
if run_download slow 2M; then
	k=$(kinds "$TMP/slow.json")
	check doctor_slow_found "findings: $k" "$(echo "$k" | grep -c '^receive-window-limited$')" = 1
	share=$(finding "$TMP/slow.json" receive-window-limited evidence.share_pct)
	check doctor_slow_share "share_pct=$share" "${share:-0}" -ge 50
fi
if run_download fast ""; then
	# (the download was watched: a connection that sent)
	check doctor_fast_healthy "findings: $(kinds "$TMP/fast.json"); connections \
$(json_get "$TMP/fast.json" connections.count), busy $(json_get "$TMP/fast.json" connections.worst.0.busy_ms) ms" \
		-z "$(kinds "$TMP/fast.json")" -a "$(json_get "$TMP/fast.json" connections.count)" -ge 1 -a \
		"$(json_get "$TMP/fast.json" connections.worst.0.busy_ms | cut -d. -f1)" -gt 0
fi

# ---- the target forms, from inside the namespace; what a user without ptrace access sees ----
if server idle $PYSRV $PORT; then
	$X "$CLI" doctor --seconds 0.5 --json ":$PORT" >"$TMP/port.json" 2>"$TMP/port.err"
	rc=$?
	check doctor_port_form "status $rc, listeners $(json_get "$TMP/port.json" listeners.0.address), \
owner $(json_get "$TMP/port.json" listeners.0.pid) vs $SRV_PID" \
		"$rc" = 0 -a "$(json_get "$TMP/port.json" listeners.0.pid)" = "$SRV_PID"
	$X "$CLI" doctor --seconds 0.5 --json ":$((PORT + 1))" >/dev/null 2>"$TMP/noport.err"
	rc=$?
	check doctor_port_none "status $rc ($(cat "$TMP/noport.err"))" "$rc" = 3 -a \
		"$(grep -c "doctor :$((PORT + 1)): no TCP listener on this port here" "$TMP/noport.err")" = 1
	if command -v setpriv >/dev/null; then
		$X setpriv --reuid=65534 --regid=65534 --clear-groups "$CLI" doctor --seconds 0.5 \
			>"$TMP/nobody.txt" 2>&1
		case "$(cat "$TMP/nobody.txt")" in
		*"127.0.0.1:$PORT (holder not found: another pid namespace, or not visible to this user)"*"nodelay unknown"*)
			pass doctor_unprivileged ;;
		*) fail doctor_unprivileged "$(cat "$TMP/nobody.txt")" ;;
		esac
	fi
	stop
fi

# ---- hostile: a closed stdout, an interrupt ----
"$CLI" doctor --seconds 0.3 >&- 2>"$TMP/closed.err"
rc=$?
check doctor_stdout_closed "status $rc: $(cat "$TMP/closed.err")" "$rc" = 3 -a \
	"$(grep -c 'stdout is closed' "$TMP/closed.err")" = 1
if server int $PYSRV -d "$TMP/www" $PORT; then
	# a closed stderr: the report still comes, whole (its messages go nowhere)
	"$CLI" doctor --seconds 0.3 --json "$SRV_PID" >"$TMP/noerr.json" 2>&-
	rc=$?
	check doctor_stderr_closed "status $rc, listener port $(json_get "$TMP/noerr.json" listeners.0.port): \
$(head -c 300 "$TMP/noerr.json")" "$rc" = 0 -a "$(json_get "$TMP/noerr.json" listeners.0.port)" = $PORT
	# SIGINT or SIGTERM 2 s into the window (past the scans): the report, status 130
	for sig in INT TERM; do
		"$CLI" doctor --seconds 30 --json "$SRV_PID" >"$TMP/$sig.json" 2>"$TMP/$sig.err" &
		p=$!
		sleep 2
		kill -$sig "$p"
		busywait 5000 gone "$p"
		wait "$p"
		rc=$?
		check doctor_interrupted_$sig "status $rc, interrupted=$(json_get "$TMP/$sig.json" sampling.interrupted): \
$(cat "$TMP/$sig.err")" "$rc" = 130 -a "$(json_get "$TMP/$sig.json" sampling.interrupted)" = True
	done
	stop
fi

# ---- usage ----
for bad in "--seconds 0" "--seconds x" "nope" ":0" "--frobnicate"; do
	# shellcheck disable=SC2086 # the words on purpose
	"$CLI" doctor $bad >/dev/null 2>"$TMP/usage.err"
	rc=$?
	check "doctor_usage_$(echo "$bad" | tr -c 'a-z0-9\n' _)" "status $rc: $(cat "$TMP/usage.err")" \
		"$rc" = 2 -a "$(wc -l <"$TMP/usage.err")" = 1
done
