#!/bin/sh
# pathemu (tests/helpers/pathemu.c), the path with delay, loss and a bottleneck that tests and
# the benchmark put between two network namespaces, held to what the kernel reports across
# it: a connection's minimum RTT is the one asked (never under it, at most 1 ms + 5% over),
# quiet and beside two busy loops; TCP's MSS is a 1500-byte link's, on IPv4 and IPv6, and no
# packet is larger; a bottleneck delivers its rate (the receiving device's byte counter,
# within 5%) and its full queue adds its serialization to the one-way delay (kernel receive
# timestamps); random loss is binomial and bursty loss has the asked runs and gaps (within 4
# standard errors); jitter never reorders; and the namespaces, their mounts and the cleaner
# are gone when it ends: by SIGTERM, by --seconds, and by SIGKILL (the cleaner's work).
# An MTU asked for (--mtu 9000) is the one TCP's MSS follows.
. "$(dirname "$0")/lib.sh"

path_needs pathemu
PROBE=$ROOT/tests/py/pathprobe.py

# end a (entered as ip netns exec does) and end b (as nsenter does): both ways work
in_a() { ip netns exec "$NA" "$@"; }
in_b() { nsenter --net="/run/netns/$NB" "$@"; }
# stats NAME DIR KEY: KEY of the last STATS line of direction DIR (a2b, b2a)
stats() { field "$(grep "^STATS dir=$2 " "$TMP/$1.emu" | tail -n 1)" "$3"; }
# stats_now NAME: new STATS lines asked for (SIGUSR1) and waited for (5 s)
stats_now() {
	_sn=$(count_lines "$TMP/$1.emu" '^STATS dir=b2a ')
	kill -USR1 "$EMU"
	busywait 5000 file_has "$TMP/$1.emu" '^STATS dir=b2a ' $((_sn + 1))
}
# leftovers: what is left of the last emulator: its namespaces' names, their mounts, a
# cleaner that has not exited (a zombie has: its parent's end made it an orphan)
leftovers() {
	ip netns list 2>/dev/null | awk -v a="$NA" -v b="$NB" '$1 == a || $1 == b { printf " %s", $1 }'
	awk -v a="/run/netns/$NA" -v b="/run/netns/$NB" '$5 == a || $5 == b { printf " mount:%s", $5 }' \
		/proc/self/mountinfo
	case $(ps -o stat= -p "$CLEANER" 2>/dev/null) in
	'' | Z*) ;;
	*) printf ' cleaner:%s' "$CLEANER" ;;
	esac
}
nothing_left() { [ -z "$(leftovers)" ]; }
# within VALUE WANT TOL: |VALUE - WANT| <= TOL (decimals)
within() {
	awk -v v="$1" -v w="$2" -v t="$3" 'BEGIN { d = v - w; if (d < 0) d = -d; exit !(v != "" && d <= t) }'
}
# serve_b: the probe's TCP server in end b, port 5001 (the namespace's own port space)
serve_b() {
	SRV_WRAP="nsenter --net=/run/netns/$NB"
	start_server "$1" -- $PY "$PROBE" serve 5001 60
	_sb=$?
	SRV_WRAP=""
	return $_sb
}
# udp_recv NAME IN... -- SEND...: udprecv started with IN (words: in_a or in_b and its
# arguments), then SEND run once it listens; udprecv's line in $TMP/NAME.recv
udp_recv() {
	_un=$1
	shift
	_ur=""
	while [ "$1" != -- ]; do
		_ur="$_ur $1"
		shift
	done
	shift
	# shellcheck disable=SC2086 # the words are split on purpose
	$_ur >"$TMP/$_un.recv" 2>&1 &
	_up=$!
	wait_file "$TMP/$_un.recv" '^PORT ' 5 && "$@" >/dev/null
	wait "$_up"
	grep '^UDPRECV ' "$TMP/$_un.recv"
}

# ---- an 80 ms round trip, 30 ms one way and 50 ms back ----
path_up pathemu rtt --a2b --delay 30ms --b2a --delay 50ms --seconds 120
if ! serve_b srv; then
	fail pathemu_setup "no server in $NB: $(cat "$TMP/srv.err")"
	exit 0
fi
# (tcpi_min_rtt: microseconds; asked 80000, at most 1 ms + 5% over, and never under it:
# a packet leaves the emulator at its time or later, never before)
rtt_ok() { [ -n "$1" ] && [ "$1" -ge 79990 ] && [ "$1" -le 85000 ]; }
for fam in 4 6; do
	if [ $fam = 4 ]; then host=198.18.1.1 mss=1448; else host=fd00:5e:0:b::1 mss=1428; fi
	r=$(in_a $PY "$PROBE" rtt $host 5001 12 2>&1)
	echo "v$fam: $r"
	m=$(field "$r" min_rtt)
	check rtt_min_v$fam "tcpi_min_rtt '$m' us for 80000 asked (want 79990..85000): $r" \
		"$(rtt_ok "$m" && echo ok)" = ok
	check mss_v$fam "tcpi_snd_mss '$(field "$r" snd_mss)' (want $mss: a 1500-byte MTU): $r" \
		"$(field "$r" snd_mss)" = $mss
done
# beside two busy loops: late wakeups stretch the smoothed RTT, not the minimum
timeout 30 sh -c 'while :; do :; done' &
b1=$!
timeout 30 sh -c 'while :; do :; done' &
b2=$!
r=$(in_a $PY "$PROBE" rtt 198.18.1.1 5001 12 2>&1)
kill "$b1" "$b2" 2>/dev/null
echo "busy: $r (real-time priority: $(field "$(grep '^READY ' "$TMP/rtt.emu")" rt))"
m=$(field "$r" min_rtt)
check rtt_min_busy "beside two busy loops: tcpi_min_rtt '$m' us (want 79990..85000): $r" \
	"$(rtt_ok "$m" && echo ok)" = ok
# SIGTERM, the server still in end b: the names go all the same
kill -TERM "$EMU"
wait_gone "$EMU" 5
busywait 5000 nothing_left
check term_cleanup "left after SIGTERM:$(leftovers); last line '$(tail -n 1 "$TMP/rtt.emu")'" \
	-z "$(leftovers)" -a "$(tail -n 1 "$TMP/rtt.emu")" = "END reason=signal"
kill "$SRV_PID" 2>/dev/null

# ---- a 20 Mbit/s bottleneck with a 200-packet queue, 10 ms each way ----
if ! path_start rate --a2b --rate 20mbit --queue 200 --delay 10ms --b2a --delay 10ms \
	--seconds 120 || ! serve_b srv2; then
	fail pathemu_setup "no path or server: $(cat "$TMP/rate.emuerr" "$TMP/srv2.err")"
	exit 0
fi
# a TCP flow (cubic: it fills the queue) for 2.5 s; the bytes that end b's device received
# (IP packets, the kernel's counter) over 1.5 s of it
in_b $PY "$PROBE" ifrate pe-b 0.8 1.5 >"$TMP/ifrate.out" 2>&1 &
ir=$!
r=$(in_a $PY "$PROBE" bulk 198.18.1.1 5001 2.5 cubic 2>&1)
wait "$ir"
rate=$(field "$(cat "$TMP/ifrate.out")" bits_per_s)
echo "bulk: $r; $(cat "$TMP/ifrate.out")"
check rate "end b received ${rate:-?} bit/s (want 20000000 +- 5%): $(cat "$TMP/ifrate.out")" \
	"$(within "$rate" 20000000 1000000 && echo ok)" = ok
stats_now rate
check full_sized_segments "snd_mss $(field "$r" snd_mss) (want 1448), largest packet $(stats rate a2b max_len) (want 1500), over the MTU $(stats rate a2b oversize) (want 0)" \
	"$(field "$r" snd_mss)" = 1448 -a "$(stats rate a2b max_len)" = 1500 -a "$(stats rate a2b oversize)" = 0
# the queue as TCP sees it: its smoothed RTT well above its minimum
srtt=$(field "$r" rtt) minr=$(field "$r" min_rtt)
check tcp_sees_queue "tcpi_rtt ${srtt:-?} us, tcpi_min_rtt ${minr:-?} us (want rtt 50 ms over the minimum at least)" \
	"${srtt:-0}" -ge $((${minr:-999999} + 50000))
# UDP at twice the rate: the queue full, each datagram's one-way delay is 10 ms + the 199.5
# packets ahead of it on average, 0.6 ms each (1500 bytes at 20 Mbit/s): 129.7 ms
sleep 0.3 # (what TCP left in the queue drains: 0.12 s at most)
q0=$(stats rate a2b queue_drops)
u=$(udp_recv bloat in_b $PY "$PROBE" udprecv 6000 4000 0.5 -- \
	in_a $PY "$PROBE" udpsend 198.18.1.1 6000 4000 1472 3333)
echo "bufferbloat: $u"
owd=$(field "$u" owd_tail_ms)
check bufferbloat_delay "median one-way delay ${owd:-?} ms once the queue is full (want 129.7 +- 7.5): $u" \
	"$(within "$owd" 129.7 7.5 && echo ok)" = ok
stats_now rate
check bufferbloat_queue "largest queue $(stats rate a2b max_queue) packets (want 200), tail drops $q0 -> $(stats rate a2b queue_drops) (want more)" \
	"$(stats rate a2b max_queue)" = 200 -a "$(stats rate a2b queue_drops)" -gt "${q0:-0}"
kill -TERM "$EMU" "$SRV_PID" 2>/dev/null
wait_gone "$EMU" 5

# ---- loss: 5% at random a to b (with 5 ms + 0..10 ms of jitter), 5% in runs of 4 b to a ----
path_up pathemu loss --a2b --loss 5% --delay 5ms --jitter 10ms --b2a --burst 5%,4 --seconds 120
u=$(udp_recv rand in_b $PY "$PROBE" udprecv 6000 2000 0.5 -- \
	in_a $PY "$PROBE" udpsend 198.18.1.1 6000 2000 200 10000)
echo "random loss: $u"
lost=$(field "$u" lost)
# binomial: 2000 x 5% = 100, sigma = sqrt(2000 x 0.05 x 0.95) = 9.7
check loss_binomial "lost ${lost:-?} of 2000 (want 100 +- 39, 4 sigma), receive-buffer drops $(field "$u" rcvbuf_errors) (want 0): $u" \
	"$(within "$lost" 100 39 && echo ok)" = ok -a "$(field "$u" rcvbuf_errors)" = 0
check jitter_in_order "reordered $(field "$u" reordered) (want 0), one-way delay $(field "$u" owd_min_ms)..$(field "$u" owd_max_ms) ms (want 5 at least, up to 10 or more)" \
	"$(field "$u" reordered)" = 0 -a \
	"$(awk -v a="$(field "$u" owd_min_ms)" -v b="$(field "$u" owd_max_ms)" 'BEGIN { print (a >= 5 && b >= 10) }')" = 1
# Gilbert-Elliott, 5% in runs of 4: run lengths geometric, mean 4 (variance 4 x 3); the runs
# received between two, mean 4 x 95 / 5 = 76 (variance 76 x 75); over IPv6, b to a
u=$(udp_recv burst in_a $PY "$PROBE" udprecv 6000 6000 0.5 -- \
	in_b $PY "$PROBE" udpsend fd00:5e:0:a::1 6000 6000 200 10000)
echo "bursty loss: $u"
runs=$(field "$u" runs) gaps=$(field "$u" gaps)
tol_run=$(awk -v n="${runs:-0}" 'BEGIN { print n ? 4 * sqrt(12 / n) : 0 }')
tol_gap=$(awk -v n="${gaps:-0}" 'BEGIN { print n ? 4 * sqrt(76 * 75 / n) : 0 }')
check burst_run_length "mean run $(field "$u" mean_run) of $runs (want 4 +- $tol_run): $u" \
	"$(within "$(field "$u" mean_run)" 4 "$tol_run" && echo ok)" = ok -a "${runs:-0}" -ge 20
check burst_gap "mean gap $(field "$u" mean_gap) of $gaps (want 76 +- $tol_gap): $u" \
	"$(within "$(field "$u" mean_gap)" 76 "$tol_gap" && echo ok)" = ok -a "${gaps:-0}" -ge 20
# SIGKILL: nothing of its own cleanup runs; the cleaner's does
kill -KILL "$EMU"
busywait 5000 nothing_left
check kill_cleanup "left 5 s after SIGKILL:$(leftovers)" -z "$(leftovers)"

# ---- --mtu 9000, and --seconds: it ends by itself ----
if path_start ends --mtu 9000 --seconds 3 && serve_b srv3; then
	r=$(in_a $PY "$PROBE" rtt 198.18.1.1 5001 2 2>&1)
	check mtu_asked "tcpi_snd_mss '$(field "$r" snd_mss)' (want 8948: a 9000-byte MTU): $r" \
		"$(field "$r" snd_mss)" = 8948
	wait_gone "$EMU" 6
	busywait 5000 nothing_left
	check seconds_end "left:$(leftovers); last line '$(tail -n 1 "$TMP/ends.emu")'" \
		-z "$(leftovers)" -a "$(tail -n 1 "$TMP/ends.emu")" = "END reason=seconds"
else
	fail seconds_end "no path or server: $(cat "$TMP/ends.emuerr" "$TMP/srv3.err" 2>/dev/null)"
fi
