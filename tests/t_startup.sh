#!/bin/sh
# Start-up patterns: every way a listening socket reaches the process that listens and
# accepts on it is tuned there, on IPv4 and IPv6 (startup.c; a TCP socket the library has
# not classified is looked at when it reaches listen() or accept(), and the fast path that
# skips that look for servers of UNIX sockets must not skip these):
# - exec, spawn: a supervisor binds, the program it execs or posix_spawns calls listen()
#   (Python prefork servers start their workers so); before the fix the scan at start took
#   the bound socket for none of ours: backlog 16, TCP_NODELAY 0, and no line at all;
# - workers: two spawned workers listen one after the other on the bound socket;
# - fork, dup: a forked child listens on the socket or on a dup() of it;
# - scm: the bound socket is sent over a UNIX socket to an exec'd program;
# - raw: a socket made without socket() (a raw system call, as io_uring's IORING_OP_SOCKET),
#   listened through libc by a process with no other TCP socket: listen() looks at it;
# - rawlisten: a socket made by socket() and listened by a raw system call (as io_uring's
#   IORING_OP_LISTEN): tuned at its first accept(); the fix of a listener swap (accept() took
#   no socket that was not listening when its entry was read) had left it untuned, silently;
# - activate: socket activation (listening at exec, LISTEN_FDS), by hand and with
#   systemd-socket-activate;
# - the same under the socktune command (--nodelay --backlog 77 --), as an operator runs it.
# The kernel's values are read by the serving process: the listener's backlog (TCP_INFO) and
# TCP_NODELAY, and TCP_NODELAY on the accepted connection; without the library they are 16
# and 0 (the run that shows each check can fail).
. "$(dirname "$0")/lib.sh"

POL="SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=77"

# serve NAME FAM CONNS [VAR=value...] -- CMD...: CMD in the background, CONNS connections one
# after the other, each once the server said it listens (a LISTENER line), then its end.
serve() {
	_n=$1 _fam=$2 _c=$3
	shift 3
	if ! start_server "$_n" "$@"; then
		fail "$_n" "no server: $(cat "$TMP/$_n.err")"
		return 1
	fi
	_i=1
	while [ $_i -le "$_c" ]; do
		busywait 5000 file_has "$TMP/$_n.out" '^LISTENER ' $_i
		"$BIN/kaclient" burst -n 1 -T 5 "$(host_of "$_fam")" "$SRV_PORT" >/dev/null
		busywait 5000 file_has "$TMP/$_n.out" '^CONN ' $_i
		_i=$((_i + 1))
	done
	wait_server
}

# tuned NAME CONNS: every listener line and connection line of NAME says the policy's values,
# and the log has a line for the listener
tuned() {
	_l=$(grep -c '^LISTENER .*backlog=77 nodelay=1$' "$TMP/$1.out")
	_k=$(grep -c '^CONN nodelay=1$' "$TMP/$1.out")
	check "$1" "want $2 listeners at backlog 77 with TCP_NODELAY and $2 connections with it: $(tr '\n' ';' <"$TMP/$1.out") $(head -c 600 "$TMP/$1.err")" \
		"$_l" -eq "$2" -a "$_k" -eq "$2" -a -n "$(grep -E 'event=(listen|adopt) ' "$TMP/$1.err")"
}

for fam in 4 6; do
	for mode in exec spawn workers fork dup scm raw rawlisten activate; do
		c=1
		[ $mode = workers ] && c=2
		n=startup_${mode}_v$fam
		serve ${n}_plain $fam $c -- "$BIN/startup" $mode $fam || continue
		check ${n}_plain "without the library: $(tr '\n' ';' <"$TMP/${n}_plain.out")" \
			"$(grep -c '^LISTENER .*backlog=16 nodelay=0$' "$TMP/${n}_plain.out")" -eq $c
		# shellcheck disable=SC2086
		serve $n $fam $c $POL LD_PRELOAD="$LIB" -- "$BIN/startup" $mode $fam || continue
		tuned $n $c
	done
	n=startup_command_exec_v$fam
	serve $n $fam 1 -- "$CLI" --nodelay --backlog 77 -- "$BIN/startup" exec $fam &&
		tuned $n 1
done

SA=$(command -v systemd-socket-activate)
if [ -n "$SA" ]; then
	for fam in 4 6; do
		n=startup_systemd_socket_activate_v$fam
		port=$(free_port)
		addr=127.0.0.1:$port
		[ $fam = 6 ] && addr="[::1]:$port"
		# systemd-socket-activate runs without the library (it listens and waits for the first
		# connection, then execs the program with only the -E variables): the program adopts
		start_server -l "$port" $n -- "$SA" -l "$addr" -E LD_PRELOAD="$LIB" -E SOCKTUNE_NODELAY=1 \
			-E SOCKTUNE_BACKLOG=77 "$BIN/startup" serve 3 || { fail $n "no listener on $addr"; continue; }
		"$BIN/kaclient" burst -n 1 -T 5 "$(host_of $fam)" "$port" >/dev/null
		wait_server
		tuned $n 1
	done
else
	skip startup_systemd_socket_activate "systemd-socket-activate not installed (apt-get install systemd)"
fi
