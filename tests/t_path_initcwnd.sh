#!/bin/sh
# The initial congestion window across a real path: pathemu's 80 ms round trip (MTU 1500), a
# server that answers each new connection with a 46,080-byte preamble and a 20-byte token in
# one write (bench/psrv, cubic on its listener), IPv4 and IPv6.  Plain, slow start sends 10
# segments, then 20, then the last: the token comes with the third flight of data, 4 round
# trips with the handshake.  Under socktune --cgroup --initcwnd 40 the 32 segments (33 on
# IPv6) leave at once: 2 round trips.  Counted, not timed: the flights are the client's
# kernel receive times (SO_TIMESTAMPNS) more than half tcpi_min_rtt apart, in every
# connection; the token's time over tcpi_min_rtt is 4 at least plain (3.9: the emulator's
# spread) and under 2.5 under --initcwnd 40 (the median of the connections nearer 2 round
# trips than 3: a CI run beside 5 other test files saw 2.19 to 2.34 on IPv6, 2.00 on
# IPv4); the server's end read tcpi_snd_cwnd 10 and 40 at accept; and the wrapper
# read initcwnd=40 back.  Both ends run at real-time priority, as pathemu does, so that a
# loaded machine delays no step of theirs: beside two busy loops it holds.  The server is
# started as nsenter --net= does (ip netns exec would hide cgroup v2: a fresh /sys).
. "$(dirname "$0")/lib.sh"

path_needs path_initcwnd
cg_needs path_initcwnd
PSRV=$B/bench/psrv PCLI=$B/bench/pcli
PREAMBLE=46080
# (real-time priority where it is allowed; the checks say when it was not)
RT="chrt -f 1"
$RT true 2>/dev/null || RT=""

path_up path_initcwnd pic --delay 40ms --seconds 60

# the two servers in end b, on every address (port 80 plain, 81 in the cgroup mode); nsenter
# execs them, so their pids are $! (a function run in the background would be a subshell's)
nsenter --net="/run/netns/$NB" env BENCH_LIFETIME=50 $RT "$PSRV" -c cubic :: 80 >"$TMP/plain.out" 2>"$TMP/plain.err" &
PLAIN=$!
nsenter --net="/run/netns/$NB" env BENCH_LIFETIME=50 "$CLI" --cgroup --initcwnd 40 -- $RT "$PSRV" -c cubic :: 81 \
	>"$TMP/iw.out" 2>"$TMP/iw.err" &
WRAP=$!
if ! wait_file "$TMP/plain.out" '^PORT ' 5 || ! wait_file "$TMP/iw.out" '^PORT ' 10; then
	fail path_setup "a server did not start: $(cat "$TMP/plain.err" "$TMP/iw.err")"
	exit 0
fi
check cgroup_read_back "the wrapper's line: $(grep 'event=cgroup' "$TMP/iw.err" | head -n 1)" \
	-n "$(grep 'level=info event=cgroup .*initcwnd=40' "$TMP/iw.err")"

# tokens NAME HOST PORT: 4 new connections, 50 ms apart; pcli's line in $TMP/NAME
tokens() {
	in_a $RT "$PCLI" token "$2" "$3" $PREAMBLE 4 50 >"$TMP/$1" 2>&1
}
# below A B / at_least A B: decimals compared
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 < b + 0) }'; }
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 >= b + 0) }'; }

for fam in 4 6; do
	if [ $fam = 4 ]; then host=198.18.1.1; else host=fd00:5e:0:b::1; fi
	tokens plain$fam $host 80
	tokens iw$fam $host 81
	p=$(cat "$TMP/plain$fam") w=$(cat "$TMP/iw$fam")
	echo "v$fam plain: $p"
	echo "v$fam --cgroup --initcwnd 40: $w"
	check plain_v$fam.four_round_trips "want 3 flights of data in each of 4 connections, the token at 3.9 x tcpi_min_rtt or later$([ -z "$RT" ] && echo ' (not at real-time priority)'): $p" \
		"$(field "$p" n)" = 4 -a "$(field "$p" flights_min)" = 3 -a "$(field "$p" flights_max)" = 3 -a \
		"$(at_least "$(field "$p" rt_min)" 3.9 && echo ok)" = ok
	check initcwnd40_v$fam.two_round_trips "want 1 flight of data in each of 4 connections, the token before 2.5 x tcpi_min_rtt (median: nearer 2 round trips than 3)$([ -z "$RT" ] && echo ' (not at real-time priority)'): $w" \
		"$(field "$w" n)" = 4 -a "$(field "$w" flights_min)" = 1 -a "$(field "$w" flights_max)" = 1 -a \
		"$(below "$(field "$w" rt_p50)" 2.5 && echo ok)" = ok
done
# the server's end, at accept: tcpi_snd_cwnd (each connection's line: 8 of them)
cw() { grep "^CONN req=t n=$PREAMBLE ok=1 " "$1" | sed -n 's/.* cwnd0=\([0-9]*\).*/\1/p' | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }'; }
check server_cwnd_at_accept "initial windows (cwnd:connections): plain $(cw "$TMP/plain.out")(want 10:8), cgroup $(cw "$TMP/iw.out")(want 40:8)" \
	"$(cw "$TMP/plain.out")" = "10:8 " -a "$(cw "$TMP/iw.out")" = "40:8 "

# the end: the wrapper takes its server and its cgroup with it, the emulator its namespaces
cg=$(sed -n 's/.* cgroup=\([^ ]*\) .*/\1/p' "$TMP/iw.err" | head -n 1)
kill -TERM "$WRAP" "$PLAIN" "$EMU"
wait_gone "$WRAP" 5
wait_gone "$EMU" 5
gone_ns() { ! ip netns list 2>/dev/null | grep -q -e "^$NA\b" -e "^$NB\b"; }
busywait 5000 gone_ns
check nothing_left "cgroup ${cg:-?} $([ -n "$cg" ] && [ -e "$cg" ] && echo "still there (processes: $(cat "$cg/cgroup.procs" | tr '\n' ' '); $(tail -n 3 "$TMP/iw.err"))" || echo gone), wrapper $(gone "$WRAP" && echo gone || echo 'still running'), namespaces $(gone_ns && echo gone || echo 'still listed')" \
	-n "$cg" -a ! -e "${cg:-/nonexistent}" -a "$(gone "$WRAP" && gone_ns && echo ok)" = ok
