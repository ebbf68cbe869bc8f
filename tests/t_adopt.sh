#!/bin/sh
# Adoption: a listening socket the process did not make through the hooks (here: made by
# python, inherited across exec) is tuned at start, by the library's scan of the inherited
# descriptors: event=adopt, its backlog changed (TCP_INFO) before the first accept, and
# accepted sockets carry the options, also when the server accepts only through io_uring
# (no accept() hook runs).  Without /proc the listener is adopted at its first accept(),
# whose connection predates the tuning: no evidence that the kernel does not copy the
# options, so later connections must not pay per-connection syscalls for it, nor the log cry
# wolf.
. "$(dirname "$0")/lib.sh"

# python makes the listener (backlog 5), then execs tserver -L FD under the library
ADOPT='
import os, socket, sys
six = sys.argv[1] == "6"
s = socket.socket(socket.AF_INET6 if six else socket.AF_INET, socket.SOCK_STREAM)
s.bind(("::1" if six else "127.0.0.1", 0))
s.listen(5)
s.set_inheritable(True)
env = dict(os.environ)
if os.environ.get("ST_PRELOAD"):
    env["LD_PRELOAD"] = os.environ["ST_PRELOAD"]
if os.environ.get("ADOPT_URING"):  # uringsrv FD N SECONDS; the test needs the port first
    print("PORT", s.getsockname()[1], flush=True)
    os.execve(sys.argv[2], [sys.argv[2], str(s.fileno()), "2", "10"], env)
os.execve(sys.argv[2], [sys.argv[2], "-L", str(s.fileno())] + sys.argv[3:], env)
'

# adopt NAME FAMILY CONNS [VAR=value...] -- [tserver args]: through python; CONNS connections.
adopt() {
	_n=$1 _fam=$2 _c=$3
	shift 3
	printf '%s' "$ADOPT" >"$TMP/adopt.py"
	TS_CMD="$PY $TMP/adopt.py $_fam $BIN/tserver -n $_c -m hold"
	ts_start "$_n" "$@"
	_r=$?
	unset TS_CMD
	if [ $_r != 0 ]; then
		fail "$_n" "no server: $(cat "$TMP/$_n.err")"
		return 1
	fi
	"$BIN/kaclient" burst -n "$_c" -T 5 "$(host_of "$_fam")" "$SRV_PORT" >/dev/null
	wait_server
}

for fam in 4 6; do
	aflag=""
	[ $fam = 6 ] && aflag=-A # accept4 on one family, accept on the other
	n=adopt_v$fam
	adopt $n $fam 3 ST_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=300 -- $aflag || continue
	line=$(log_line $n adopt)
	check ${n}_logged "want one event=adopt line: $(cat "$TMP/$n.err")" \
		-n "$line" -a "$(count_lines "$TMP/$n.err" event=adopt)" -eq 1 \
		-a "$(count_lines "$TMP/$n.err" event=listen)" -eq 0
	check ${n}_log_keys "adopt line: $line" "$(field "$line" backlog.app)" = 5 \
		-a "$(field "$line" backlog.want)" = 300 -a "$(field "$line" backlog.effective)" = 300 \
		-a "$(field "$line" nodelay)" = 1
	check ${n}_at_start "listener before the first accept: $(grep LISTENER "$TMP/$n.out")" \
		"$(ts_val $n LISTENER backlog)" = 300 -a "$(ts_val $n LISTENER nodelay)" = 1
	for i in 1 2 3; do
		check ${n}_conn$i "accepted socket $i: $(grep CONN "$TMP/$n.out" | sed -n ${i}p)" \
			"$(ts_val $n CONN backlog $i)" = 300 -a "$(ts_val $n CONN nodelay $i)" = 1
	done
	check ${n}_no_false_inherit_warning "the connection accepted before the tuning is reported as a kernel that does not copy options: $(grep event=inherit "$TMP/$n.err")" \
		"$(count_lines "$TMP/$n.err" event=inherit)" -eq 0
done

# no /proc (a private mount namespace with an empty /proc): no scan at start, the listener
# is adopted at its first accept, as before
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	for fam in 4 6; do
		n=adopt_noproc_v$fam
		printf '%s' "$ADOPT" >"$TMP/adopt.py"
		if start_server $n ST_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=300 -- unshare -m sh -c \
			'mount -t tmpfs none /proc && exec "$@"' sh $PY "$TMP/adopt.py" $fam "$BIN/tserver" -n 2 -m hold; then
			"$BIN/kaclient" burst -n 2 -T 5 "$(host_of $fam)" "$SRV_PORT" >/dev/null
			wait_server
			check $n "before the first accept: $(grep LISTENER "$TMP/$n.out"); after: $(grep CONN "$TMP/$n.out" | tail -n 1); $(cat "$TMP/$n.err")" \
				"$(ts_val $n LISTENER backlog)" = 5 -a "$(ts_val $n CONN backlog 2)" = 300 \
				-a "$(ts_val $n CONN nodelay 2)" = 1 -a "$(count_lines "$TMP/$n.err" event=adopt)" -eq 1
		else
			fail $n "no server: $(cat "$TMP/$n.err")"
		fi
	done
else
	skip adopt_noproc "needs root and unshare -m"
fi

# io_uring only: the server never calls accept(); the listener options reach its
# connections because the listener was tuned at start
printf '%s' "$ADOPT" >"$TMP/adopt.py"
for fam in 4 6; do
	for mode in plain tuned; do
		n=adopt_io_uring_${mode}_v$fam
		pre=""
		[ $mode = tuned ] && pre=$LIB
		if ! start_server $n ADOPT_URING=1 ST_PRELOAD="$pre" SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=300 -- \
			$PY "$TMP/adopt.py" $fam "$BIN/uringsrv"; then
			fail $n "no server: $(cat "$TMP/$n.err")"
			continue
		fi
		wait_file "$TMP/$n.out" '^LISTENER '
		"$BIN/kaclient" burst -n 2 -T 5 "$(host_of $fam)" "$SRV_PORT" >/dev/null
		wait_server
		if grep -q 'io_uring_setup' "$TMP/$n.err"; then
			skip $n "io_uring unavailable: $(cat "$TMP/$n.err")"
			continue
		fi
		[ $mode = tuned ] && want="300 1" || want="5 0"
		got="$(ts_val $n CONN backlog 2) $(ts_val $n CONN nodelay 2)"
		check $n "backlog and nodelay of the io_uring-accepted connection: $got, want $want: $(cat "$TMP/$n.out" "$TMP/$n.err")" \
			"$got" = "$want"
	done
done

# not preloaded: the same program leaves the listener alone (the test can tell the difference)
n=adopt_none
adopt $n 4 1 -- && check $n "without the library: $(grep CONN "$TMP/$n.out")" \
	"$(ts_val $n CONN backlog)" = 5 -a "$(ts_val $n CONN nodelay)" = 0

# excluded by SOCKTUNE_PORTS: not adopted, not logged
n=adopt_excluded
adopt $n 4 1 ST_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_PORTS=1 -- &&
	check $n "excluded inherited listener: $(grep CONN "$TMP/$n.out") $(cat "$TMP/$n.err")" \
		"$(ts_val $n CONN backlog)" = 5 -a "$(ts_val $n CONN nodelay)" = 0 -a ! -s "$TMP/$n.err"

# per-connection cost after adoption: setsockopt/getsockopt calls must not grow with the
# number of connections (the kernel copies NODELAY from the tuned listener)
if command -v strace >/dev/null 2>&1; then
	for c in 2 8; do
		n=adopt_cost_$c
		if start_server $n ST_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 -- strace -f -qq -e trace=setsockopt,getsockopt \
			-o "$TMP/$n.st" "$PY" -c "$ADOPT" 4 "$BIN/tserver" -n $c -m accept -s; then
			# one connection first: its accept adopts the listener; connections queued
			# before that need the options set on them, those after inherit them
			p=$SRV_PORT
			"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$p" >/dev/null
			# (the adopt line is logged once the listener is tuned; a fixed sleep is not
			# enough under strace on a loaded machine)
			wait_file "$TMP/$n.err" 'event=adopt' || fail adopt_cost_$c "no event=adopt line: $(cat "$TMP/$n.err")"
			"$BIN/kaclient" burst -n $((c - 1)) -T 5 127.0.0.1 "$p" >/dev/null
		fi
		wait_server
		eval "calls_$c=$(grep -c 'sockopt(' "$TMP/$n.st")"
	done
	check adopt_no_per_connection_syscalls "sockopt calls with 2 connections: $calls_2, with 8: $calls_8 (growing = per-connection setsockopt after adoption)" \
		"$calls_2" -gt 0 -a "$calls_2" -eq "$calls_8"
else
	skip adopt_no_per_connection_syscalls "strace not installed"
fi
