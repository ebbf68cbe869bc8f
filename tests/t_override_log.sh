#!/bin/sh
# The app sets a governed option itself: the same value as the policy's is no news (debug
# only); a value the policy replaced is said once per kind of socket and option, and the
# line names the socket (fd= and addr=).  IPv4 and IPv6.
. "$(dirname "$0")/lib.sh"

for fam in 4 6; do
	# the app sets TCP_NODELAY=1 itself, as most servers do, and the policy wants 1 too
	n=agree_v$fam
	(
		export SOCKTUNE_NODELAY=1
		opt_serve $n $fam 2 --app-nodelay-on
	)
	c=$(count_lines "$TMP/$n.err" 'event=app-override')
	check $n.silent "$c app-override lines at info, want 0: $(cat "$TMP/$n.err")" "$c" -eq 0
	check $n.listen "no listen line" -n "$(grep 'event=listen ' "$TMP/$n.err")"
	n=agree_debug_v$fam
	(
		export SOCKTUNE_NODELAY=1 SOCKTUNE_LOG=debug
		opt_serve $n $fam 1 --app-nodelay-on
	)
	c=$(count_lines "$TMP/$n.err" 'level=debug event=app-override .*option=nodelay app_value=1 same=1')
	check $n "$c debug app-override lines, want >= 1" "$c" -ge 1

	# the app sets SO_RCVBUF 8192, the policy 64K: the line names fd and address, once per
	# kind of socket (the listener before listen(), then the accepted ones)
	n=differ_v$fam
	(
		export SOCKTUNE_RCVBUF=64K
		opt_serve $n $fam 2 --app-rcvbuf 8192
	)
	c=$(count_lines "$TMP/$n.err" 'event=app-override')
	check $n.count "$c app-override lines, want 2 (listener, accepted): $(cat "$TMP/$n.err")" "$c" -eq 2
	host='127\.0\.0\.1'
	[ "$fam" = 6 ] && host='\[::1\]'
	for kind in listener accepted; do
		line=$(grep "event=app-override .*socket=$kind " "$TMP/$n.err")
		check $n.$kind.names-socket "line: $line" -n "$(printf '%s' "$line" |
			grep "fd=[0-9][0-9]* addr=$host:[0-9][0-9]* " | grep 'option=rcvbuf app_value=8192 want=65536')"
	done
	lport=$(grep 'event=listen ' "$TMP/$n.err" | sed -n 's/.* addr=[^ ]*:\([0-9]*\) .*/\1/p')
	check $n.listener-port "listener line's port is not the listen line's ($lport)" \
		-n "$(grep "socket=listener" "$TMP/$n.err" | grep ":$lport ")"
done
