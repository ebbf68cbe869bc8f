#!/bin/sh
# SOCKTUNE_CLIENT tunes outgoing connections.  A client that writes each request
# in two writes with Nagle on stalls ~40 ms per request on the server's delayed ACK; with
# SOCKTUNE_CLIENT=1 SOCKTUNE_NODELAY=1 the second write leaves at once.  The server is
# never preloaded.  Asserts counts of slow requests and the options read on the socket.
. "$(dirname "$0")/lib.sh"
N=20

# run NAME FAMILY: lineserver (plain, its output in $TMP/NAME.srv.*) + twowrite client
# under the preload, with the caller's exported environment.  Result JSON in $TMP/NAME.out,
# log in $TMP/NAME.err.
run() {
	start_server "$1.srv" -- $PY "$ROOT/tests/py/lineserver.py" "$2" ||
		{ echo "lineserver did not start"; return 1; }
	LD_PRELOAD=$LIB $PY "$ROOT/tests/py/twowrite.py" "$(host_of "$2")" "$SRV_PORT" $N \
		>"$TMP/$1.out" 2>"$TMP/$1.err"
	wait
}
# run_on NAME FAMILY: run, OVER its requests over 30 ms
run_on() {
	run "$@" || return
	OVER=$(json_get "$TMP/$1.out" over)
}

for fam in 4 6; do
	(
		export SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=256K
		run off$fam $fam
		export SOCKTUNE_CLIENT=1
		# (4 of 20 allowed, a fifth: python at both ends, on a loaded machine; 10 or more of
		# 20 without SOCKTUNE_CLIENT.  A new server and client again while over it, 3 tries
		# at most: tests/lib.sh cured_within)
		cured_within client.v$fam.on.no-stall 4 run_on on$fam $fam
		echo "$TRIES" >"$TMP/on$fam.tries"
		SOCKTUNE_CLIENT_PORTS=1-2 run excluded$fam $fam
	)
	off=$(json_get "$TMP/off$fam.out" over)
	on=$(json_get "$TMP/on$fam.out" over)
	ex=$(json_get "$TMP/excluded$fam.out" over)
	echo "v$fam: requests over 30 ms of $N: client off $off, on $on, port excluded $ex"
	# Without SOCKTUNE_CLIENT nothing about outgoing connections changes.
	check client.v$fam.off.untouched "nodelay $(json_get "$TMP/off$fam.out" nodelay)" "$(json_get "$TMP/off$fam.out" nodelay)" = 0
	check client.v$fam.off.stalls "only ${off:-?} of $N stalled without tuning" "${off:-0}" -ge $((N / 2))
	check client.v$fam.on.nodelay "nodelay $(json_get "$TMP/on$fam.out" nodelay)" "$(json_get "$TMP/on$fam.out" nodelay)" = 1
	check client.v$fam.on.rcvbuf "rcvbuf $(json_get "$TMP/on$fam.out" rcvbuf)" "$(json_get "$TMP/on$fam.out" rcvbuf)" = 524288
	check client.v$fam.on.no-stall "${on:-?} of $N stalled with SOCKTUNE_CLIENT (tries: $(cat "$TMP/on$fam.tries"))" "${on:-99}" -le 4
	check client.v$fam.ports.excluded "nodelay $(json_get "$TMP/excluded$fam.out" nodelay)" "$(json_get "$TMP/excluded$fam.out" nodelay)" = 0
	n=$(grep -c 'level=info event=client .*first_for_port=1' "$TMP/on$fam.err")
	check client.v$fam.logged-once "$n info lines for the port, want 1" "$n" -eq 1
	check client.v$fam.off.silent "log: $(cat "$TMP/off$fam.err")" ! -s "$TMP/off$fam.err"
done
