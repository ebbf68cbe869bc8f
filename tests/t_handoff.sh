#!/bin/sh
# Connections handed to a worker over a UNIX socket (sendmsg with SCM_RIGHTS, as node's
# cluster module does): the worker governs a connection it receives like one it accepted.
# Quick-ack is armed and re-armed after every receive in the worker, so a two-write client
# does not wait for the worker's delayed ACK; SO_PRIORITY, which accepted sockets do not
# inherit, is set; the log says so in the worker (event=receive); and a message that carries
# no descriptor costs no syscall.  Counts of requests over 30 ms and of syscalls, not times:
# the stall's floor is the 40 ms delayed-ACK timer, and a loaded machine's scheduling alone
# put one request of 30 at 23 ms (so the cures may leave 2 of 30 over).
. "$(dirname "$0")/lib.sh"

N=30

# handoff NAME FAMILY [VAR=value...] -- [handoff args]: one connection of N two-write requests
# through the primary to its worker; sets OVER and RES (kaclient's line).
handoff() {
	_n=$1 _fam=$2
	shift 2
	OVER="" RES=""
	TS_CMD="$BIN/handoff"
	ts_start "$_n" "$@" -"$_fam" -n 1 -t 20
	_r=$?
	unset TS_CMD
	if [ $_r != 0 ]; then
		fail "$_n" "handoff did not start: $(cat "$TMP/$_n.err")"
		return 1
	fi
	RES=$("$BIN/kaclient" split -n $N -t 30 -q 100 -r 100 -T 15 "$(host_of "$_fam")" "$SRV_PORT")
	wait_server
	OVER=$(kc_val "$RES" over)
	if [ "$(kc_val "$RES" done)" != $N ]; then
		fail "$_n" "client did not finish: $RES $(cat "$TMP/$_n.err")"
		return 1
	fi
}

for fam in 4 6; do
	handoff plain_v$fam $fam LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 -- || continue
	before=$OVER before_res=$RES
	handoff qa_v$fam $fam LD_PRELOAD="$LIB" SOCKTUNE_QUICKACK=1 SOCKTUNE_PRIORITY=3 -- || continue
	echo "# v$fam without QUICKACK: $before_res"
	echo "# v$fam with QUICKACK:    $RES"
	if [ "$before" -lt 20 ]; then
		skip handoff_stall_v$fam "without QUICKACK only $before of $N requests stalled ($before_res); nothing to show"
	else
		pass handoff_stall_v$fam
	fi
	check handoff_quickack_v$fam "with QUICKACK $OVER of $N requests still over 30 ms in the worker ($RES)" \
		"$OVER" -le 2
	check handoff_priority_v$fam "the received socket: $(grep WORKER "$TMP/qa_v$fam.out")" \
		"$(ts_val qa_v$fam WORKER priority)" = 3
	line=$(log_line qa_v$fam receive)
	check handoff_log_v$fam "want one event=receive line with quickack=1 priority=3: $(cat "$TMP/qa_v$fam.err")" \
		"$(field "$line" quickack)" = 1 -a "$(field "$line" priority)" = 3 \
		-a "$(count_lines "$TMP/qa_v$fam.err" event=receive)" -eq 1
done

# a primary that runs without the library (only its worker has it): the worker sets what
# accepted sockets do not inherit (SO_PRIORITY) and quick-ack itself
for fam in 4 6; do
	handoff untuned_v$fam $fam HANDOFF_WORKER_PRELOAD="$LIB" SOCKTUNE_QUICKACK=1 SOCKTUNE_PRIORITY=3 -- -x || continue
	check handoff_untuned_primary_v$fam "primary without the library: $RES $(grep WORKER "$TMP/untuned_v$fam.out") $(cat "$TMP/untuned_v$fam.err")" \
		"$OVER" -le 2 -a "$(ts_val untuned_v$fam WORKER priority)" = 3 \
		-a "$(count_lines "$TMP/untuned_v$fam.err" "event=receive .*priority=3 quickack=1")" -eq 1
done

# outside SOCKTUNE_PORTS (the local port): left alone, and nothing claimed
handoff ports_v4 4 LD_PRELOAD="$LIB" SOCKTUNE_QUICKACK=1 SOCKTUNE_PRIORITY=3 SOCKTUNE_PORTS=1 -- &&
	check handoff_ports "outside SOCKTUNE_PORTS: $(grep WORKER "$TMP/ports_v4.out") $(cat "$TMP/ports_v4.err")" \
		"$(ts_val ports_v4 WORKER priority)" = 0 -a "$(count_lines "$TMP/ports_v4.err" event=receive)" -eq 0

# strace: one TCP_QUICKACK per receive in the worker; plain messages (no descriptor) cost
# no getsockopt, setsockopt or getsockname
if ! command -v strace >/dev/null 2>&1; then
	skip handoff_strace "no strace"
else
	# sockcalls NAME MSGS: the worker's socket-option calls (the worker: the process that recvmsg's)
	sockcalls() {
		rm -f "$TMP/st.$1".*
		SRV_WRAP="strace -ff -o $TMP/st.$1 -e trace=recvmsg,read,setsockopt,getsockopt,getsockname"
		handoff "$1" 4 LD_PRELOAD="$LIB" SOCKTUNE_QUICKACK=1 -- -m "$2"
		_r=$?
		unset SRV_WRAP
		[ $_r = 0 ] || return 1
		W=$(grep -l '^recvmsg' "$TMP/st.$1".* | head -n 1)
		QA=$(grep -c 'TCP_QUICKACK' "$W")
		READS=$(grep -c '^read(.*= [1-9]' "$W")
		CALLS=$(grep -c '^\(getsockopt\|setsockopt\|getsockname\)' "$W")
	}
	if sockcalls strace0 0; then
		qa0=$QA reads0=$READS calls0=$CALLS
		echo "# worker: $qa0 TCP_QUICKACK setsockopt for $reads0 reads that returned data; $calls0 socket-option calls"
		check handoff_strace_rearm "want one TCP_QUICKACK per read with data and one at receipt: $qa0 for $reads0" \
			"$qa0" -eq $((reads0 + 1)) -a "$reads0" -ge $N
		if sockcalls strace20 20; then
			echo "# with 20 plain messages before the descriptor: $CALLS socket-option calls ($QA TCP_QUICKACK, $READS reads)"
			check handoff_strace_plain "plain messages cost syscalls: $((CALLS - QA)) calls other than quick-ack with, $((calls0 - qa0)) without" \
				$((CALLS - QA)) -eq $((calls0 - qa0))
		fi
	fi
fi
