#!/bin/sh
# socktune doctor's next-start command runs as printed, from any directory, and starts the
# server as it was started, tuned: each server here is started from its own directory with
# relative paths (./tserver, python3 srv.py), through a launcher that execs its VM in the same
# process (Erlang's erl -> beam.smp), or is a static program LD_PRELOAD cannot reach.  doctor
# sees the stall, the server is stopped, the printed command is run from / and the restarted
# server's kernel values are read: the listener's backlog (ss's Send-Q) or the stall's count.
# Everything runs in a network namespace of the test's own (the command names it).
. "$(dirname "$0")/lib.sh"

if ! setup_ns NS; then
	skip doctor_start "cannot make a network namespace here (needs root and ip netns)"
	exit 0
fi
X="ip netns exec $NS"
PATH="$B:$PATH" # (the commands name socktune: the one built here)
export PATH
mkdir -p "$TMP/app" && cp "$BIN/tserver" "$TMP/app/"

# start_in DIR NAME CMD...: CMD started from DIR in the namespace (SRV_PID: CMD itself)
start_in() {
	_d=$1 _n=$2
	shift 2
	(cd "$_d" && exec $X "$@") >"$TMP/$_n.out" 2>"$TMP/$_n.err" &
	SRV_PID=$!
}
# stop_ns: every process in the namespace (all started here), then no listener left
stop_ns() {
	for _p in $(ip netns pids "$NS"); do kill "$_p" 2>/dev/null; done
	busywait 5000 sh -c "! $X ss -Hltn | grep -q ."
}
# next_start NAME KIND: the fix of doctor's KIND finding that starts the server again (the
# wrapper's: "socktune ... -- PROGRAM")
next_start() {
	finding "$TMP/$1.json" "$2" fix | grep -- ' -- ' | head -n 1
}
# rerun NAME KIND: the server stopped, its next-start command run as printed from /
# (output in $TMP/NAME.rerun); RERUN: the command
rerun() {
	RERUN=$(next_start "$1" "$2")
	stop_ns
	(cd / && exec sh -c "$RERUN") >"$TMP/$1.rerun" 2>&1 &
}
# send_q PORT: the backlog in force on the namespace's listener on PORT
send_q() {
	$X ss -Hltn "sport = :$1" | awk '{ print $3 }'
}
backlog_is() {
	[ "$(send_q "$1")" = "$2" ]
}

# backlog NAME DIR CMD...: CMD (a tserver serving one held connection) started from DIR, the
# burst's overflow, its next start run as printed: the restarted listener's backlog
backlog() {
	_bn=$1 _bd=$2
	shift 2
	start_in "$_bd" "$_bn" "$@"
	if ! wait_file "$TMP/$_bn.out" "$PORT_LINE"; then
		fail "doctor_start_$_bn" "$1 did not start: $(cat "$TMP/$_bn.err")"
		return
	fi
	held_burst "$X" "$_bn" "$SRV_PID" "$(port_of "$TMP/$_bn.out")" 3
	rerun "$_bn" accept-queue-overflow
	wait_file "$TMP/$_bn.rerun" "$PORT_LINE"
	_bp=$(port_of "$TMP/$_bn.rerun")
	busywait 3000 backlog_is "$_bp" 4096
	check "doctor_start_$_bn" "ran '$RERUN' from /: Send-Q '$(send_q "$_bp")' on port '$_bp' \
($(head -c 300 "$TMP/$_bn.rerun")); fixes: $(finding "$TMP/$_bn.json" accept-queue-overflow fix)" \
		"$(send_q "$_bp")" = 4096
}

# ---- a relative program: cd /app && ./tserver (its port the kernel's pick) ----
backlog relative "$TMP/app" ./tserver -m ka -n 1 -b 5 -t 30
stop_ns

# ---- a relative script: cd /app && python3 srv.py (Nagle: NODELAY at the next start) ----
printf 'import runpy\nrunpy.run_module("http.server", run_name="__main__")\n' >"$TMP/app/srv.py"
start_in "$TMP/app" py /usr/bin/python3 srv.py --protocol HTTP/1.1 -b 127.0.0.1 8000
if busywait 5000 sh -c "$X ss -Hltn 'sport = :8000' | grep -q ."; then
	$X "$BIN/kaclient" http -n 100000 -T 6 127.0.0.1 8000 >/dev/null 2>&1 &
	sleep 0.5
	"$CLI" doctor --seconds 3 --json "$SRV_PID" >"$TMP/py.json" 2>"$TMP/py.derr"
	rerun py nagle-delayed-ack
	busywait 5000 sh -c "$X ss -Hltn 'sport = :8000' | grep -q ."
	# (the restarted server's stall, counted: requests over 30 ms of 20; 4 allowed, a fifth:
	# a python server on a loaded machine, each request stalled without NODELAY; a new
	# connection again while over it, 3 tries at most: tests/lib.sh cured_within)
	py_try() {
		line=$($X "$BIN/kaclient" http -n 20 -t 30 -T 10 127.0.0.1 8000)
		OVER=$(kc_val "$line" over)
	}
	cured_within doctor_start_script 4 py_try
	check doctor_start_script "ran '$RERUN' from /: $line, tries $TRIES ($(head -c 300 "$TMP/py.rerun"))" \
		"$(kc_val "$line" done)" = 20 -a "$OVER" -le 4 2>/dev/null
else
	fail doctor_start_script "python did not start: $(cat "$TMP/py.err")"
fi
stop_ns

# ---- a launcher that execs its VM in the same process: erl -> erlexec -> beam.smp ----
if command -v erl >/dev/null 2>&1; then
	mkdir -p "$TMP/erl"
	# (one line: a newline in a word is no command doctor prints)
	start_in "$TMP/erl" erl erl -noshell -eval '{ok, L} = gen_tcp:listen(8001, [{backlog, 5}, {ip, {127,0,0,1}}, {reuseaddr, true}]), io:format("PORT ~b~n", [8001]), receive after 30000 -> L end.'
	if wait_file "$TMP/erl.out" "$PORT_LINE" 15; then
		held_burst "$X" erl "$SRV_PID" 8001 3
		rerun erl accept-queue-overflow
		busywait 15000 backlog_is 8001 4096
		check doctor_start_launcher "ran '$RERUN' from /: Send-Q '$(send_q 8001)' \
($(head -c 300 "$TMP/erl.rerun"))" "$(send_q 8001)" = 4096
	else
		fail doctor_start_launcher "erl did not start: $(cat "$TMP/erl.err")"
	fi
	stop_ns
else
	skip doctor_start_launcher "erl not installed"
fi

# ---- a static program: LD_PRELOAD cannot reach it, the wrapper's attach mode can ----
backlog static "$TMP/app" "$BIN/tserver-static" -m ka -n 1 -b 5 -t 30
stop_ns
