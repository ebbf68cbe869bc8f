#!/bin/sh
# What an accepted connection costs, counted with strace: without QUICKACK, the options the
# kernel copies from the listener are checked once (first connection) and never applied
# again, so the number of setsockopt/getsockopt calls does not grow with connections.
# With QUICKACK: one setsockopt per accept and one per receive that returned data.
. "$(dirname "$0")/lib.sh"

if ! command -v strace >/dev/null 2>&1; then
	skip syscalls "strace not installed (.ci/run installs it)"
	exit 0
fi

# traced NAME CONNS CLIENT [VAR=value...] -- [tserver args]: tserver (silent: it makes no
# getsockopt of its own) under strace; CLIENT is "burst" (CONNS connects) or "split"
# (10 two-write requests on one connection).  The trace lands in $TMP/NAME.st.
traced() {
	_n=$1 _c=$2 _cl=$3
	shift 3
	SRV_WRAP="strace -f -qq -e trace=setsockopt,getsockopt,read,recvfrom -o $TMP/$_n.st"
	TS_CMD="$BIN/tserver -s -n $_c"
	ts_start "$_n" "$@"
	_r=$?
	unset SRV_WRAP TS_CMD
	if [ $_r != 0 ]; then
		fail "$_n" "no server: $(cat "$TMP/$_n.err")"
		return 1
	fi
	if [ "$_cl" = burst ]; then
		"$BIN/kaclient" burst -n "$_c" -T 5 127.0.0.1 "$SRV_PORT" >/dev/null
	else
		"$BIN/kaclient" split -n 10 -T 10 127.0.0.1 "$SRV_PORT" >/dev/null
	fi
	wait_server
}

sockopts() { grep "sockopt(" "$TMP/$1.st" | grep -vc SO_REUSEADDR; }

TUNE="LD_PRELOAD=$LIB SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=256K SOCKTUNE_SNDBUF=256K SOCKTUNE_BACKLOG=100"
# shellcheck disable=SC2086
traced few 2 burst $TUNE -- -m accept &&
	traced many 20 burst $TUNE -- -m accept && {
	few=$(sockopts few) many=$(sockopts many)
	echo "# without QUICKACK: $few sockopt calls for 2 connections, $many for 20"
	check no_per_connection_syscalls "2 connections: $few calls, 20 connections: $many" \
		"$few" -gt 0 -a "$few" -eq "$many"
	# the listener: set + read back each of 3 options, TCP_INFO; the first connection: a
	# getsockopt per option (the inheritance check)
	check fixed_cost_small "$few calls for the listener and the first-connection check: $(grep sockopt "$TMP/few.st" | sed 's/^[0-9]* //' | tr '\n' ';')" \
		"$few" -le 12
	check first_connection_checked "no getsockopt on the first accepted socket (fd 4): $(grep sockopt "$TMP/few.st" | sed 's/^[0-9]* //' | tr '\n' ';')" \
		"$(grep -c 'getsockopt(4,' "$TMP/few.st")" -ge 1
}

# the untuned program makes none at all
traced none 2 burst -- -m accept &&
	check untuned_no_syscalls "untuned: $(sockopts none) sockopt calls" "$(sockopts none)" -eq 0
# under the library with no policy: at most a fixed cost per listener, none per connection
traced empty 2 burst LD_PRELOAD="$LIB" -- -m accept &&
	traced empty20 20 burst LD_PRELOAD="$LIB" -- -m accept &&
	check empty_policy_no_per_connection_syscalls "empty policy: $(sockopts empty) sockopt calls for 2 connections, $(sockopts empty20) for 20" \
		"$(sockopts empty)" -le 2 -a "$(sockopts empty)" -eq "$(sockopts empty20)"

# QUICKACK: one per accept ...
traced qa_accept 20 burst LD_PRELOAD="$LIB" SOCKTUNE_QUICKACK=1 -- -m accept && {
	q=$(grep -c 'setsockopt([0-9]*, SOL_TCP, TCP_QUICKACK' "$TMP/qa_accept.st")
	check quickack_one_per_accept "20 accepts, no data: $q TCP_QUICKACK calls" "$q" -eq 20
}
# ... and one per receive that returned data (the connection is fd 4 in tserver -s; under
# make valgrind, valgrind's own reads of the files it loads use the low numbers too)
if [ "${ST_SANITIZER:-}" = valgrind ]; then
	skip quickack_one_per_receive "under valgrind, fd 4 in the trace is also valgrind's own"
else
traced qa_recv 1 split LD_PRELOAD="$LIB" SOCKTUNE_QUICKACK=1 -- -m ka && {
	q=$(grep -c 'setsockopt(4, SOL_TCP, TCP_QUICKACK' "$TMP/qa_recv.st")
	# the client's bytes are 'q's: the library's own reads of /proc/sys at listen() (fd 4 too,
	# closed at once) are not the connection's
	reads=$(grep -c '^[0-9]*  *read(4, "q.* = [1-9][0-9]*$' "$TMP/qa_recv.st")
	eof=$(grep -c '^[0-9]*  *read(4, .* = 0$' "$TMP/qa_recv.st")
	check quickack_one_per_receive "$reads reads with data (and $eof at EOF): $q TCP_QUICKACK calls, want $((reads + 1))" \
		"$reads" -ge 10 -a "$q" -eq $((reads + 1))
}
fi
