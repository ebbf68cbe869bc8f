#!/bin/sh
# A listener on a port the kernel picked (a startup probe, an admin socket on port 0) is
# marked ephemeral=1 on its listen line; a listen() on an unbound socket logs the port
# listen() gave it (it logged :0); a server's own port outside ip_local_port_range is not
# marked.  IPv4 and IPv6.
. "$(dirname "$0")/lib.sh"

lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range)
hi=$(awk '{ print $2 }' /proc/sys/net/ipv4/ip_local_port_range)
for fam in 4 6; do
	af=AF_INET host=$(host_of $fam)
	[ "$fam" = 6 ] && af=AF_INET6
	# listen() without bind(): the kernel binds it to the wildcard and an ephemeral port
	LD_PRELOAD=$LIB SOCKTUNE_NODELAY=1 $PY -c "
import socket
s = socket.socket(socket.$af); s.listen(1); print('PORT', s.getsockname()[1]); s.close()" \
		>"$TMP/unbound$fam.out" 2>"$TMP/unbound$fam.err"
	port=$(port_of "$TMP/unbound$fam.out")
	line=$(grep 'event=listen ' "$TMP/unbound$fam.err")
	check unbound_v$fam.port "listen line $line, port $port" -n "$port" -a \
		-n "$(printf '%s' "$line" | grep "addr=[^ ]*:$port .*ephemeral=1")"
	# bind(port 0): in ip_local_port_range, marked
	LD_PRELOAD=$LIB SOCKTUNE_NODELAY=1 $PY -c "
import socket
s = socket.socket(socket.$af); s.bind(('$host', 0)); s.listen(1); print('PORT', s.getsockname()[1])" \
		>"$TMP/zero$fam.out" 2>"$TMP/zero$fam.err"
	port=$(port_of "$TMP/zero$fam.out")
	line=$(grep 'event=listen ' "$TMP/zero$fam.err")
	if [ "${port:-0}" -ge "$lo" ] && [ "$port" -le "$hi" ]; then
		check zero_v$fam.marked "listen line: $line" -n "$(printf '%s' "$line" | grep "level=info .*:$port .*ephemeral=1")"
	else
		skip zero_v$fam.marked "port $port outside $lo-$hi"
	fi
	# a port of its own outside the range (free_port's are: below it, or above it where the
	# range starts low): not marked
	port=$(free_port)
	check fixed_v$fam.outside "free_port gave $port, the range is $lo-$hi" "${port:-0}" -gt 0 -a \
		\( "${port:-0}" -lt "$lo" -o "${port:-0}" -gt "$hi" \)
	LD_PRELOAD=$LIB SOCKTUNE_NODELAY=1 $PY -c "
import socket
s = socket.socket(socket.$af); s.bind(('$host', $port)); s.listen(1); print('PORT', $port)" \
		>"$TMP/fixed$fam.out" 2>"$TMP/fixed$fam.err"
	port=$(port_of "$TMP/fixed$fam.out")
	line=$(grep 'event=listen ' "$TMP/fixed$fam.err")
	check fixed_v$fam.unmarked "listen line: $line (port $port)" -n "$port" -a \
		-n "$(printf '%s' "$line" | grep "level=info .*:$port ")" -a \
		-z "$(printf '%s' "$line" | grep 'ephemeral')"
	# SOCKTUNE_PORTS naming the port: the operator chose it, not marked
	port=$(free_port)
	LD_PRELOAD=$LIB SOCKTUNE_NODELAY=1 SOCKTUNE_PORTS=$port $PY -c "
import socket
s = socket.socket(socket.$af); s.bind(('$host', $port)); s.listen(1)" 2>"$TMP/named$fam.err"
	line=$(grep 'event=listen ' "$TMP/named$fam.err")
	check named_v$fam.unmarked "listen line: $line" -n "$line" -a -z "$(printf '%s' "$line" | grep ephemeral)"
done
