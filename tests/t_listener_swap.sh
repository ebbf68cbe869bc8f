#!/bin/sh
# A listener swapped again and again while threads accept on it (swaps.c): 300 times the
# listener is closed and a new one takes its number back (bound to a new port, listened),
# or a new one is dup2()'d onto the number, while 4 threads accept on whatever the number
# names and 4 connect to the current port; IPv4 and IPv6.  Every new listener must read
# TCP_NODELAY 1 right after its listen(), every accepted connection too, and the log must not
# speak of the listener being closed (a warning about a descriptor that vanished).  Before:
# an accept() that returned as the number went to a new socket adopted that socket while
# its own listen() ran: in about one run in three 1 or 2 of the 300 new listeners read
# TCP_NODELAY 0, and a connection accepted as the old listener was closed made the library
# tune the dying listener ("setsockopt TCP_NODELAY: Bad file descriptor").
# The same with close_range() over the listener's number and the free ones above it, the new
# socket moved there with fcntl(F_DUPFD), which no hook sees (range): before, 8 runs of 8
# failed: 11-37 of the 300 new listeners and 174-942 connections read TCP_NODELAY 0 (the
# entries cleared before the real close_range(): a late accept() adopted the dying listener,
# marked the free number ignored, or held it while the new socket's listen() passed it by).
. "$(dirname "$0")/lib.sh"

for fam in 4 6; do
	for run in close:1 close:2 dup2:1 range:1 range:2; do
		mode=${run%:*}
		n=listener_swap_${mode}_${run#*:}_v$fam
		env SOCKTUNE_NODELAY=1 SOCKTUNE_LOG=warn LD_PRELOAD="$LIB" "$BIN/swaps" $fam 300 $mode \
			>"$TMP/$n.out" 2>"$TMP/$n.err"
		line=$(grep '^SWAPS ' "$TMP/$n.out")
		check $n "$line $(head -c 400 "$TMP/$n.err")" \
			"$(field "$line" n)" = 300 -a "$(field "$line" listener_nodelay0)" = 0 \
			-a "$(field "$line" conn_nodelay0)" = 0 -a "$(field "$line" conns)" -gt 300 \
			-a ! -s "$TMP/$n.err"
	done
done
n=listener_swap_plain
"$BIN/swaps" 4 20 close >"$TMP/$n.out" 2>&1
line=$(grep '^SWAPS ' "$TMP/$n.out")
check $n "without the library every listener reads TCP_NODELAY 0: $line" \
	"$(field "$line" listener_nodelay0)" = 20
