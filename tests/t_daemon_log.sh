#!/bin/sh
# A server that daemonizes (listen, fork, the parent exits, the child serves): with %p in
# SOCKTUNE_LOG_FILE the listen line is in the parent's file, whose pid is gone; without %p
# one file holds the parent's listen line and the daemon's own lines, each with its pid=
# (what docs/libsocktune.7 and troubleshooting.md say).  IPv4 and IPv6.
. "$(dirname "$0")/lib.sh"

# DAEMON, run as python3 -c "$DAEMON" FAMILY: prints "PARENT pid", "DAEMON pid PORT n"; the
# daemon accepts one connection (bounded: 10 s) and exits.
DAEMON='
import os, socket, sys
fam = socket.AF_INET6 if sys.argv[1] == "6" else socket.AF_INET
s = socket.socket(fam); s.bind(("::1" if sys.argv[1] == "6" else "127.0.0.1", 0)); s.listen(5)
print("PARENT", os.getpid(), flush=True)
if os.fork():
    os._exit(0)  # the parent exits: the daemon lives on
os.setsid()
print("DAEMON", os.getpid(), "PORT", s.getsockname()[1], flush=True)
s.settimeout(10)
c, _ = s.accept(); c.close()'

for fam in 4 6; do
	host=$(host_of $fam)
	for mode in pid shared; do
		n=${mode}_v$fam
		log=$TMP/$n.log
		[ $mode = pid ] && log=$TMP/$n.%p.log
		start_server $n LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG=debug SOCKTUNE_LOG_FILE="$log" -- \
			$PY -c "$DAEMON" $fam || { fail $n "no daemon"; continue; }
		parent=$(sed -n 's/^PARENT //p' "$TMP/$n.out")
		dpid=$(sed -n 's/^DAEMON \([0-9]*\) .*/\1/p' "$TMP/$n.out")
		port=$SRV_PORT
		$PY -c "import socket; socket.create_connection(('$host', $port), timeout=5).close()"
		wait
		wait_gone "$dpid"
		if [ $mode = pid ]; then
			check $n.listen-in-parent-file "no listen line in the parent's file" \
				-n "$(grep "pid=$parent .*event=listen " "$TMP/${n}.$parent.log" 2>/dev/null)"
			check $n.none-in-daemon-file "the daemon's file has a listen line" \
				-z "$(grep 'event=listen ' "$TMP/${n}.$dpid.log" 2>/dev/null)"
		else
			check $n.one-file "parent's listen line and daemon's accept line in $log: $(cat "$log")" \
				-n "$(grep "pid=$parent .*event=listen " "$log")" -a \
				-n "$(grep "pid=$dpid .*event=accept " "$log")"
		fi
	done
done
