#!/bin/sh
# listen() called again on a listener (puma; a socket-activated server on the listener it
# inherited).  Each call that changes the backlog in force is logged like the first
# (event=listen relisten=1, read back with TCP_INFO).  A listener that already holds a
# queued connection when it is tuned (inherited, with no scan at start) does not take that
# connection, made before its options, as proof that the kernel does not copy them: no
# event=inherit warning, and accepts cost no setsockopt (strace: N and 2N accepts, the same
# count).
. "$(dirname "$0")/lib.sh"

# rl_start NAME [VAR=value...] -- [relisten args]: relisten in the background (TS_CMD).
rl_start() {
	_n=$1
	shift
	TS_CMD="${RL_CMD:-$BIN/relisten}"
	ts_start "$_n" "$@"
	_r=$?
	unset TS_CMD
	[ $_r = 0 ] || fail "$_n" "relisten did not start: $(cat "$TMP/$_n.err")"
	return $_r
}

# ---- every listen() that changes the backlog says so ----
somax=$(cat /proc/sys/net/core/somaxconn 2>/dev/null || echo 0)
if [ "$somax" -lt 3000 ]; then
	skip relisten_logged "net.core.somaxconn is $somax, below the 3000 this case listens with"
else
	for fam in 4 6; do
		n=relog_v$fam
		rl_start $n LD_PRELOAD="$LIB" SOCKTUNE_BACKLOG_MIN=2000 -- -$fam -b 3000 -B 1024 -B 1024 -B 2500 -n 1 || continue
		"$BIN/kaclient" burst -n 1 -T 5 "$(host_of $fam)" "$SRV_PORT" >/dev/null
		wait_server
		first=$(grep 'event=listen ' "$TMP/$n.err" | sed -n 1p)
		second=$(grep 'event=listen ' "$TMP/$n.err" | sed -n 2p)
		third=$(grep 'event=listen ' "$TMP/$n.err" | sed -n 3p)
		check ${n}_first "first listen: $first" "$(field "$first" backlog.effective)" = 3000 \
			-a -z "$(field "$first" relisten)"
		check ${n}_second "listen(1024) with a minimum of 2000: $second (server saw $(ts_val $n RELISTEN backlog))" \
			"$(field "$second" relisten)" = 1 -a "$(field "$second" backlog.app)" = 1024 \
			-a "$(field "$second" backlog.want)" = 2000 -a "$(field "$second" backlog.effective)" = 2000 \
			-a "$(ts_val $n RELISTEN backlog)" = 2000
		# the same number again changes nothing: no line; 2500 changes it: a line
		check ${n}_only_changes "want 3 event=listen lines, the third for 2500: $(cat "$TMP/$n.err")" \
			"$(count_lines "$TMP/$n.err" 'event=listen ')" -eq 3 -a "$(field "$third" backlog.effective)" = 2500 \
			-a "$(ts_val $n RELISTEN backlog 3)" = 2500
	done
fi

# ---- listen() again with a connection queued ----
# python makes the listener, connects a client (queued), then execs relisten -L under the
# library, which calls listen() on it again and accepts
ACT='
import os, socket, sys
six = sys.argv[1] == "6"
s = socket.socket(socket.AF_INET6 if six else socket.AF_INET, socket.SOCK_STREAM)
s.bind(("::1" if six else "127.0.0.1", 0))
s.listen(5)
c = socket.socket(s.family, socket.SOCK_STREAM)
c.connect(s.getsockname()[:2])
c.set_inheritable(True) # stays open across exec: the connection stays queued
s.set_inheritable(True)
env = dict(os.environ)
env["LD_PRELOAD"] = os.environ["ST_PRELOAD"]
os.execve(sys.argv[2], [sys.argv[2], "-L", str(s.fileno())] + sys.argv[3:], env)
'
printf '%s' "$ACT" >"$TMP/act.py"
POLICY="SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=262144"

# queued NAME FAMILY CONNS EXTRA-VAR: socket activation as above, CONNS accepts in all
# (one queued before exec); sets SETS (setsockopt calls seen by strace, or "" without it)
queued() {
	_n=$1 _fam=$2 _c=$3 _x=$4
	SETS=""
	[ -n "$STRACE" ] && SRV_WRAP="strace -f -qq -e trace=setsockopt -o $TMP/$_n.st"
	# shellcheck disable=SC2086 # the policy words are split on purpose
	RL_CMD="$PY $TMP/act.py $_fam $BIN/relisten" rl_start $_n ST_PRELOAD="$LIB" $POLICY $_x -- -B 128 -n $_c
	_r=$?
	unset SRV_WRAP
	[ $_r = 0 ] || return 1
	# PORT comes before the listen() again: connecting before it would queue these too, and
	# a listener tuned with three connections queued rightly sets the options on all three
	wait_file "$TMP/$_n.out" '^RELISTEN ' || {
		fail ${_n} "no RELISTEN line: $(cat "$TMP/$_n.err")"
		return 1
	}
	"$BIN/kaclient" burst -n $((_c - 1)) -T 5 "$(host_of $_fam)" "$SRV_PORT" >/dev/null
	wait_server
	[ -n "$STRACE" ] && SETS=$(grep -c 'setsockopt(' "$TMP/$_n.st")
	return 0
}

STRACE=""
command -v strace >/dev/null 2>&1 && STRACE=1
for fam in 4 6; do
	# the scan at start tunes the inherited listener; with precedence=app there is no scan
	# and the app's listen() is where it is tuned
	for how in scan app; do
		x=""
		[ $how = app ] && x=SOCKTUNE_PRECEDENCE=app
		n=queued_${how}_v$fam
		queued ${n}_a $fam 3 "$x" || continue
		sets3=$SETS
		queued ${n}_b $fam 6 "$x" || continue
		check ${n}_no_false_warning "the queued connection taken for a kernel that does not copy options: $(grep event=inherit "$TMP/${n}_a.err" "$TMP/${n}_b.err")" \
			"$(cat "$TMP/${n}_a.err" "$TMP/${n}_b.err" | grep -c event=inherit)" -eq 0
		check ${n}_options "accepted sockets: $(grep CONN "$TMP/${n}_b.out" | tr '\n' ' ')" \
			"$(grep -c 'CONN .*nodelay=1' "$TMP/${n}_b.out")" -eq 6
		if [ -n "$STRACE" ]; then
			echo "# $n: $sets3 setsockopt for 3 accepts, $SETS for 6"
			check ${n}_no_setsockopt_per_accept "setsockopt calls: $sets3 for 3 accepts, $SETS for 6" "$sets3" -eq "$SETS"
		fi
	done
done
[ -z "$STRACE" ] && skip relisten_strace "no strace"

# in one process: listen(), a connection queued, listen() again, then accept
for fam in 4 6; do
	n=twice_v$fam
	rl_start $n LD_PRELOAD="$LIB" $POLICY -- -$fam -Q -B 128 -n 4 || continue
	"$BIN/kaclient" burst -n 1 -T 5 "$(host_of $fam)" "$SRV_PORT" >/dev/null
	wait_file "$TMP/$n.out" '^RELISTEN '
	"$BIN/kaclient" burst -n 3 -T 5 "$(host_of $fam)" "$SRV_PORT" >/dev/null
	wait_server
	check ${n}_no_false_warning "$(cat "$TMP/$n.err")" "$(count_lines "$TMP/$n.err" event=inherit)" -eq 0 \
		-a "$(grep -c 'CONN .*nodelay=1' "$TMP/$n.out")" -eq 4
done
