#!/bin/sh
# Thread and process stress: mtserver with 8 accepting threads in 2 processes
# (forked after listen) under NODELAY, QUICKACK and RCVBUF serves keep-alive connections from
# loadgen (bounded concurrency, per-call timeouts): none lost, no crash, every accepted
# socket tuned, and each process's descriptor count back where it started.  Then the epoll
# variant: non-blocking accept4 woken in 8 threads at once, so most calls end in EAGAIN,
# which must come back exactly as -1/EAGAIN.
# ST_STRESS_CONNS scales the run down for slow modes (valgrind, tsan).
. "$(dirname "$0")/lib.sh"

CONNS=${ST_STRESS_CONNS:-16000}
TUNE="SOCKTUNE_NODELAY=1 SOCKTUNE_QUICKACK=1 SOCKTUNE_RCVBUF=256K"

fdcount() {
	ls "/proc/$1/fd" 2>/dev/null | wc -l
}

# fds_back: true when every process of $pids has $before's descriptor counts (sets after)
fds_back() {
	after=""
	for p in $pids; do after="$after $(fdcount "$p")"; done
	[ "$after" = "$before" ]
}

# stress NAME FAMILY HOST CONNS mtserver-args...
stress() {
	n=$1 fam=$2 host=$3 conns=$4
	shift 4
	# shellcheck disable=SC2086
	start_server "$n" LD_PRELOAD="$LIB" $TUNE -- "$BIN/mtserver" -"$fam" -P 2 -t 4 -N 1 -B 524288 -T 120 "$@" &&
		busywait 10000 file_has "$TMP/$n.out" '^READY' 2
	spid=$SRV_PID port=$SRV_PORT
	pids=$(sed -n 's/^PID //p' "$TMP/$n.out")
	if [ -z "$port" ] || [ "$(echo $pids | wc -w)" -ne 2 ]; then
		fail "$n" "server did not start: $(cat "$TMP/$n.out" "$TMP/$n.err")"
		kill "$spid" 2>/dev/null
		return 1
	fi
	before=""
	for p in $pids; do before="$before $(fdcount "$p")"; done
	"$BIN/loadgen" -n "$conns" -c 32 -r 4 -w 10 -T 180 "$host" "$port" >"$TMP/$n.load" 2>&1
	res=$(grep '^LOADGEN' "$TMP/$n.load")
	check ${n}_none_lost "loadgen: $(cat "$TMP/$n.load")" \
		"$(field "$res" ok)" = "$conns" -a "$(field "$res" lost)" = 0
	# the server closes its side once it reads EOF: give it a moment, bounded (5 s)
	busywait 5000 fds_back
	check ${n}_fds_back "descriptor counts before:$before after:$after" "$after" = "$before"
	alive=0
	for p in $pids; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
	check ${n}_alive "$alive of 2 server processes alive after the load" "$alive" = 2
	kill -TERM "$spid"
	wait "$spid"
	rc=$?
	served=0 untuned=0 bad=0 eagain=0 split=""
	for l in $(grep '^SERVED' "$TMP/$n.out" | tr ' ' ','); do
		l=$(echo "$l" | tr ',' ' ')
		served=$((served + $(field "$l" conns)))
		untuned=$((untuned + $(field "$l" untuned)))
		bad=$((bad + $(field "$l" badaccept)))
		eagain=$((eagain + $(field "$l" eagain)))
		split="$split $(field "$l" conns)"
	done
	child=$(sed -n 's/^CHILD .*status=//p' "$TMP/$n.out")
	check ${n}_clean_exit "server exit $rc, child status '$child'" "$rc" = 0 -a "$child" = 0
	check ${n}_served_all "served $served (per process:$split) of $conns" "$served" = "$conns"
	check ${n}_all_tuned "$untuned accepted sockets without TCP_NODELAY=1/SO_RCVBUF=524288" \
		"$untuned" = 0
	check ${n}_accept_errors "$bad accept calls failed with something other than EAGAIN" "$bad" = 0
	listens=$(grep -c 'event=listen ' "$TMP/$n.err")
	others=$(grep -vc 'event=listen ' "$TMP/$n.err")
	check ${n}_log "stderr: $(head -c 600 "$TMP/$n.err")" "$listens" = 1 -a "$others" = 0
	STRESS_EAGAIN=$eagain
	echo "# $n: $conns connections, per process:$split, $(field "$res" ms) ms, eagain=$eagain"
}

stress stress_fork_threads 4 127.0.0.1 "$CONNS" -m block

econns=$((CONNS / 8))
[ "$econns" -lt 200 ] && econns=200
STRESS_EAGAIN=0
if stress stress_epoll_v6 6 ::1 "$econns" -m epoll; then
	check stress_epoll_v6_eagain_seen "no EAGAIN seen: the test did not exercise the path" \
		"$STRESS_EAGAIN" -gt 0
fi
