#!/bin/sh
# A copy of a tuned listener is the same listener: made with dup(), fcntl(F_DUPFD),
# fcntl(F_DUPFD_CLOEXEC), dup2() or dup3() (a threaded server giving each thread its own
# descriptor), in prefork workers that each copy it, or inherited by workers exec'd by the
# parent that tuned it.  No event=adopt line, no second listen(), one log file, one stats
# slot that stays open while the original does; connections accepted on a copy carry the
# options.
. "$(dirname "$0")/lib.sh"

# a backlog above somaxconn: a listener adopted again would be listened again every time
POLICY="SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=65535"

# rl NAME FAMILY CONNS [VAR=value...] -- [relisten args]: relisten, CONNS connections, wait
rl() {
	_n=$1 _fam=$2 _c=$3
	shift 3
	TS_CMD="$BIN/relisten"
	ts_start "$_n" "$@" -$_fam -n $_c
	_r=$?
	unset TS_CMD
	if [ $_r != 0 ]; then
		fail "$_n" "relisten did not start: $(cat "$TMP/$_n.err")"
		return 1
	fi
	"$BIN/kaclient" burst -n "$_c" -T 5 "$(host_of "$_fam")" "$SRV_PORT" >/dev/null
	wait_server
}

STRACE=""
command -v strace >/dev/null 2>&1 && STRACE=1
for fam in 4 6; do
	for how in dup fcntl cloexec dup2 dup3; do
		n=${how}_v$fam
		[ -n "$STRACE" ] && SRV_WRAP="strace -f -qq -e trace=listen -o $TMP/$n.st"
		# shellcheck disable=SC2086
		rl $n $fam 5 LD_PRELOAD="$LIB" $POLICY -- -D $how -k 2
		r=$?
		unset SRV_WRAP
		[ $r = 0 ] || continue
		check ${n}_no_adopt "want one event=listen line and no event=adopt: $(cat "$TMP/$n.err")" \
			"$(count_lines "$TMP/$n.err" event=adopt)" -eq 0 \
			-a "$(count_lines "$TMP/$n.err" 'event=listen ')" -eq 1
		check ${n}_options "accepted on the copies: $(grep CONN "$TMP/$n.out" | tr '\n' ' ')" \
			"$(grep -c 'CONN .*nodelay=1' "$TMP/$n.out")" -eq 5
		if [ -n "$STRACE" ]; then
			check ${n}_one_listen "listen() calls: $(grep 'listen(' "$TMP/$n.st" | tr '\n' ' ')" \
				"$(grep -c 'listen(' "$TMP/$n.st")" -eq 1
		fi
	done
done
[ -z "$STRACE" ] && skip dupfd_strace "no strace"

# prefork workers, each copying the listener, and workers exec'd by the parent that tuned
# it: one log file (the parent's) for SOCKTUNE_LOG_FILE with %p
for mode in fork exec; do
	n=prefork_$mode
	mkdir -p "$TMP/$n.logs"
	args="-f 3 -D dup"
	[ $mode = exec ] && args="-f 3 -x"
	# shellcheck disable=SC2086
	rl $n 4 6 LD_PRELOAD="$LIB" $POLICY SOCKTUNE_LOG_FILE="$TMP/$n.logs/log.%p" -- $args || continue
	files=$(ls "$TMP/$n.logs" | wc -l)
	check ${n}_one_log "want 1 log file, no event=adopt at info: $files files: $(cat "$TMP/$n.logs"/*)" \
		"$files" -eq 1 -a "$(cat "$TMP/$n.logs"/* | grep -c event=adopt)" -eq 0
	check ${n}_options "accepted in the workers: $(grep CONN "$TMP/$n.out" | tr '\n' ' ')" \
		"$(grep -c 'CONN .*nodelay=1' "$TMP/$n.out")" -eq 6
done
# the exec'd worker's line is there at debug, and says it changed nothing
n=prefork_exec_debug
rl $n 4 3 LD_PRELOAD="$LIB" $POLICY SOCKTUNE_LOG=debug -- -f 3 -x &&
	check $n "want 3 event=adopt lines at debug with unchanged=1: $(grep event=adopt "$TMP/$n.err")" \
		"$(grep -c 'level=debug event=adopt .*unchanged=1' "$TMP/$n.err")" -eq 3 \
		-a "$(grep -c 'level=info event=adopt' "$TMP/$n.err")" -eq 0

# that line says what it found as the parent's listen line said it was set: a mark with all
# 32 bits (an unsigned option), a buffer, a name
n=exec_found
rl $n 4 1 LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_MARK=4294967295 SOCKTUNE_RCVBUF=64K \
	SOCKTUNE_CONGESTION=reno SOCKTUNE_LOG=debug -- -f 1 -x && {
	listen=$(log_line $n listen)
	adopt=$(log_line $n adopt)
	check $n "listen line: $listen; adopt line: $adopt" \
		"$(field "$listen" mark)" = 4294967295 -a "$(field "$adopt" mark)" = 4294967295 \
		-a "$(field "$adopt" unchanged)" = 1 -a "$(field "$adopt" congestion)" = reno \
		-a "$(field "$adopt" nodelay)" = 1 \
		-a "$(field "$adopt" rcvbuf.effective)" = "$(field "$listen" rcvbuf.effective)" \
		-a -n "$(field "$listen" rcvbuf.effective)"
}

# stats: the copies count into the listener's slot, and closing them (relisten closes its
# copies before the last connection) leaves the slot open
for fam in 4 6; do
	n=stats_v$fam
	rl $n $fam 4 LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_STATS="$TMP/$n.stats" -- -D dup -k 2 || continue
	line=$(log_line $n summary)
	check ${n}_one_slot "want one summary line, accepted=4 closed=0: $(grep event=summary "$TMP/$n.err")" \
		"$(count_lines "$TMP/$n.err" event=summary)" -eq 1 -a "$(field "$line" accepted)" = 4 \
		-a "$(field "$line" closed)" = 0
done
