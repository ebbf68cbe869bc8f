#!/bin/sh
# TCP_QUICKACK re-armed after every receive: a keep-alive server whose client writes each
# request in two small writes (Nagle on) waits for its own delayed ACK (~40 ms) on every
# request; with SOCKTUNE_QUICKACK=1 it does not.  Counts of requests over 20 ms, not times;
# a count with QUICKACK over its bound (5 of 50) is taken again on a new server and connection,
# 3 tries at most (tests/lib.sh cured_within: a loaded machine's slow try is not a stall).
. "$(dirname "$0")/lib.sh"

N=50

# split NAME FAMILY [VAR=value...] -- [tserver args]: N two-write requests on one connection;
# sets OVER (requests over 20 ms) and RES (kaclient's line).
split() {
	_n=$1 _fam=$2
	shift 2
	OVER="" RES=""
	if ! ts_start "$_n" "$@" -m ka -n 1 -q 100 -r 100; then
		fail "$_n" "tserver did not start: $(cat "$TMP/$_n.err")"
		return 1
	fi
	RES=$("$BIN/kaclient" split -n $N -q 100 -r 100 -T 15 "$(host_of "$_fam")" "$SRV_PORT")
	wait_server
	OVER=$(kc_val "$RES" over)
	if [ "$(kc_val "$RES" done)" != $N ]; then
		fail "$_n" "client did not finish: $RES"
		return 1
	fi
}

for fam in 4 6; do
	split before_v$fam "$fam" LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 -- -"$fam" || continue
	before=$OVER before_res=$RES
	cured_within quickack_after_v$fam 5 \
		split after_v$fam "$fam" LD_PRELOAD="$LIB" SOCKTUNE_QUICKACK=1 -- -"$fam" || continue
	after=$OVER
	echo "# v$fam without QUICKACK: $before_res"
	echo "# v$fam with QUICKACK:    $RES"
	if [ "$before" -lt 40 ]; then
		skip quickack_before_v$fam "without QUICKACK only $before of $N requests stalled on this kernel ($before_res); nothing to show"
	else
		pass quickack_before_v$fam
	fi
	check quickack_after_v$fam "with QUICKACK $after of $N requests still over 20 ms ($RES; tries: $TRIES)" "$after" -le 5
	check quickack_log_v$fam "listen line: $(log_line after_v$fam listen)" \
		"$(field "$(log_line after_v$fam listen)" quickack)" = 1
done

# the other receive call: recv() instead of read() (the fortified build calls __recv_chk)
cured_within quickack_recv 5 split recv_v4 4 LD_PRELOAD="$LIB" SOCKTUNE_QUICKACK=1 -- -R &&
	check quickack_recv "with QUICKACK and recv(): $RES; tries: $TRIES" "$OVER" -le 5
# QUICKACK=0 is the kernel's behaviour: stalls like no variable at all
split off_v4 4 LD_PRELOAD="$LIB" SOCKTUNE_QUICKACK=0 -- &&
	if [ "$before" -ge 40 ]; then
		check quickack_off "QUICKACK=0 should change nothing: $RES" "$OVER" -ge 40
	else
		skip quickack_off "no stall to compare with ($RES)"
	fi
# _FORTIFY_SOURCE builds call __read_chk / __recv_chk instead: the same re-arm
cured_within quickack_read_chk 5 split chk_read_v4 4 LD_PRELOAD="$LIB" SOCKTUNE_QUICKACK=1 -- -F &&
	check quickack_read_chk "with QUICKACK and __read_chk: $RES; tries: $TRIES" "$OVER" -le 5
cured_within quickack_recv_chk 5 split chk_recv_v6 6 LD_PRELOAD="$LIB" SOCKTUNE_QUICKACK=1 -- -6 -F -R &&
	check quickack_recv_chk "with QUICKACK and __recv_chk: $RES; tries: $TRIES" "$OVER" -le 5

# the other receive calls, through an unmodified python server: recvfrom, recvmsg, readv
PYSRV='
import os, socket, sys
how = sys.argv[1]
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(5)
print("PORT %d" % l.getsockname()[1], flush=True)
c, _ = l.accept()
while True:
    got = 0
    while got < 100:
        if how == "recvfrom":
            d = c.recvfrom(100 - got)[0]
        elif how == "recvmsg":
            d = c.recvmsg(100 - got)[0]
        else:
            d = os.readv(c.fileno(), [bytearray(100 - got)])
            d = b"x" * d
        if not d:
            sys.exit(0)
        got += len(d)
    c.sendall(b"r" * 100)
'
# py_split HOW: the python server (it serves one connection) and N two-write requests; OVER,
# RES as split's
py_split() {
	if ! start_server "py_$1" LD_PRELOAD="$LIB" SOCKTUNE_QUICKACK=1 -- timeout 20 "$PY" -c "$PYSRV" "$1"; then
		fail "quickack_$1" "python server did not start: $(cat "$TMP/py_$1.err")"
		return 1
	fi
	RES=$("$BIN/kaclient" split -n $N -q 100 -r 100 -T 15 127.0.0.1 "$SRV_PORT")
	wait_server
	OVER=$(kc_val "$RES" over)
}
for how in recvfrom recvmsg readv; do
	cured_within quickack_$how 5 py_split $how || continue
	check quickack_$how "with QUICKACK and $how: $RES; tries: $TRIES" "$(kc_val "$RES" done)" = $N -a "$OVER" -le 5
done
