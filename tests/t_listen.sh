#!/bin/sh
# Listener options, read back by the server itself on the ACCEPTED socket (getsockopt) and
# on the listener (TCP_INFO tcpi_sacked = backlog in force), compared with the log's
# *.effective values and with an untuned run; clamps against the host's sysctls.
. "$(dirname "$0")/lib.sh"

# run NAME FAMILY [VAR=value...] -- [tserver args]: tserver serving 2 connections, and the
# client that makes them.  Fails the test NAME when the server does not come up.
run() {
	_n=$1 _fam=$2
	shift 2
	ts_serve "$_n" "$_fam" 2 "$@"
}

# same NAME WHAT A B: PASS when A = B (and both are not empty).
same() {
	if [ -n "$3" ] && [ "$3" = "$4" ]; then pass "$1"; else fail "$1" "$2: '$3' != '$4'"; fi
}

rmem_max=$(cat /proc/sys/net/core/rmem_max)
wmem_max=$(cat /proc/sys/net/core/wmem_max)
somaxconn=$(cat /proc/sys/net/core/somaxconn)

for fam in 4 6; do
	host=$(host_of "$fam")
	# the untuned run: what the kernel and the app do by themselves
	run base_v$fam "$fam" -- -"$fam" -n 2 -m hold || continue
	b_rcv=$(ts_val base_v$fam CONN rcvbuf)
	b_snd=$(ts_val base_v$fam CONN sndbuf)
	b_nd=$(ts_val base_v$fam CONN nodelay)
	b_bl=$(ts_val base_v$fam CONN backlog)
	check base_v${fam}_untouched "untuned run: nodelay=$b_nd backlog=$b_bl" "$b_nd" = 0 -a "$b_bl" = 5
	check base_v${fam}_silent "an untuned run wrote to stderr" ! -s "$TMP/base_v$fam.err"

	for acc in accept accept4; do
		n=tuned_v${fam}_$acc
		aflag=""
		[ "$acc" = accept4 ] && aflag=-A
		run $n "$fam" LD_PRELOAD="$LIB" SOCKTUNE_RCVBUF=256K SOCKTUNE_SNDBUF=128k \
			SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=300 -- -"$fam" $aflag -n 2 -m hold || continue
		line=$(log_line $n listen)
		if [ -z "$line" ]; then
			fail $n "no event=listen line: $(cat "$TMP/$n.err")"
			continue
		fi
		for i in 1 2; do
			c_rcv=$(ts_val $n CONN rcvbuf $i)
			c_snd=$(ts_val $n CONN sndbuf $i)
			same ${n}_conn${i}_rcvbuf "accepted SO_RCVBUF vs log rcvbuf.effective" \
				"$c_rcv" "$(field "$line" rcvbuf.effective)"
			same ${n}_conn${i}_sndbuf "accepted SO_SNDBUF vs log sndbuf.effective" \
				"$c_snd" "$(field "$line" sndbuf.effective)"
			check ${n}_conn${i}_rcvbuf_value "SO_RCVBUF $c_rcv, want 2 x 262144, untuned $b_rcv" \
				"$c_rcv" = 524288 -a "$c_rcv" != "$b_rcv"
			check ${n}_conn${i}_sndbuf_value "SO_SNDBUF $c_snd, want 2 x 131072, untuned $b_snd" \
				"$c_snd" = 262144 -a "$c_snd" != "$b_snd"
			check ${n}_conn${i}_nodelay "accepted TCP_NODELAY is $(ts_val $n CONN nodelay $i)" \
				"$(ts_val $n CONN nodelay $i)" = 1
			same ${n}_conn${i}_backlog "TCP_INFO backlog vs log backlog.effective" \
				"$(ts_val $n CONN backlog $i)" "$(field "$line" backlog.effective)"
		done
		check ${n}_backlog_value "TCP_INFO backlog $(ts_val $n CONN backlog), want 300" \
			"$(ts_val $n CONN backlog)" = 300
		check ${n}_log_keys "listen line: $line" \
			"$(field "$line" backlog.app)" = 5 -a "$(field "$line" backlog.want)" = 300 \
			-a "$(field "$line" rcvbuf.want)" = 262144 -a "$(field "$line" sndbuf.want)" = 131072 \
			-a "$(field "$line" nodelay)" = 1 -a "$(field "$line" level)" = info
		if [ "$fam" = 6 ]; then want_addr="[::1]:$SRV_PORT"; else want_addr="127.0.0.1:$SRV_PORT"; fi
		same ${n}_log_addr "listen line addr" "$(field "$line" addr)" "$want_addr"
		check ${n}_one_line "stderr: $(cat "$TMP/$n.err")" \
			"$(wc -l <"$TMP/$n.err")" -eq 1 -a "$(count_lines "$TMP/$n.err" event=listen)" -eq 1
	done

	# backlog policy: MIN raises, MAX lowers, BACKLOG wins over both
	for c in "SOCKTUNE_BACKLOG_MIN=64 5 64" "SOCKTUNE_BACKLOG_MAX=3 5 3" \
		"SOCKTUNE_BACKLOG_MIN=2 5 5" "SOCKTUNE_BACKLOG_MAX=200 5 5"; do
		set -- $c
		var=$1 app=$2 want=$3
		n=backlog_v${fam}_$(echo "$var" | sed 's/SOCKTUNE_//; s/=/_/')
		run $n "$fam" LD_PRELOAD="$LIB" "$var" -- -"$fam" -b "$app" -n 1 || continue
		line=$(log_line $n listen)
		check $n "app $app with $var: TCP_INFO $(ts_val $n CONN backlog), log: $line" \
			"$(ts_val $n CONN backlog)" = "$want" -a "$(field "$line" backlog.effective)" = "$want" \
			-a "$(field "$line" backlog.app)" = "$app" -a "$(field "$line" backlog.want)" = "$want"
	done
	n=backlog_v${fam}_wins
	run $n "$fam" LD_PRELOAD="$LIB" SOCKTUNE_BACKLOG=20 SOCKTUNE_BACKLOG_MIN=64 \
		SOCKTUNE_BACKLOG_MAX=3 -- -"$fam" -n 1 && check $n "BACKLOG=20 with MIN=64 MAX=3: $(ts_val $n CONN backlog)" \
		"$(ts_val $n CONN backlog)" = 20
done

# keys appear only for what is configured
n=keys_nodelay_only
if run $n 4 LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 -- -n 1; then
	line=$(log_line $n listen)
	case "$line" in
	*nodelay=1*backlog* | *backlog.* | *rcvbuf.* | *sndbuf.* | *quickack=*) fail $n "extra keys: $line" ;;
	*" nodelay=1"*) pass $n ;;
	*) fail $n "no nodelay=1: $line" ;;
	esac
fi
n=keys_quickack
if run $n 4 LD_PRELOAD="$LIB" SOCKTUNE_QUICKACK=1 -- -n 1; then
	line=$(log_line $n listen)
	check $n "quickack key: $line" "$(field "$line" quickack)" = 1 -a -z "$(field "$line" nodelay)"
fi

# clamps: one level=warn line per clamp, naming the sysctl and its value read from /proc/sys
if [ $((rmem_max * 2)) -le 1073741824 ]; then
	for fam in 4 6; do
		n=clamp_rcvbuf_v$fam
		want=$((rmem_max * 2))
		run $n "$fam" LD_PRELOAD="$LIB" SOCKTUNE_RCVBUF=$want -- -"$fam" -n 1 || continue
		cl=$(log_line $n clamp)
		line=$(log_line $n listen)
		eff=$(ts_val $n CONN rcvbuf)
		check $n "rcvbuf $want with rmem_max=$rmem_max: accepted $eff, clamp line: $cl" \
			"$eff" = $((rmem_max * 2)) -a "$(field "$cl" effective)" = "$eff" \
			-a "$(field "$line" rcvbuf.effective)" = "$eff" -a "$(field "$cl" want)" = "$want" \
			-a "$(field "$cl" level)" = warn -a "$(field "$cl" option)" = rcvbuf \
			-a "$(field "$cl" limit)" = net.core.rmem_max \
			-a "$(field "$cl" limit_value)" = "$rmem_max"
		check ${n}_fix "clamp line names no remedy: $cl" "$(field "$cl" fix.0)" = "sysctl -w net.core.rmem_max=$want"
		check ${n}_once "clamp lines: $(count_lines "$TMP/$n.err" event=clamp)" \
			"$(count_lines "$TMP/$n.err" event=clamp)" -eq 1
	done
else
	skip clamp_rcvbuf "net.core.rmem_max=$rmem_max: twice it is beyond SOCKTUNE_RCVBUF's range"
fi
if [ $((wmem_max * 2)) -le 1073741824 ]; then
	n=clamp_sndbuf_v4
	want=$((wmem_max * 2))
	if run $n 4 LD_PRELOAD="$LIB" SOCKTUNE_SNDBUF=$want -- -n 1; then
		cl=$(log_line $n clamp)
		eff=$(ts_val $n CONN sndbuf)
		check $n "sndbuf $want with wmem_max=$wmem_max: accepted $eff, clamp line: $cl" \
			"$eff" = $((wmem_max * 2)) -a "$(field "$cl" effective)" = "$eff" \
			-a "$(field "$cl" option)" = sndbuf -a "$(field "$cl" limit)" = net.core.wmem_max \
			-a "$(field "$cl" limit_value)" = "$wmem_max"
	fi
else
	skip clamp_sndbuf "net.core.wmem_max=$wmem_max: twice it is beyond SOCKTUNE_SNDBUF's range"
fi
for fam in 4 6; do
	n=clamp_backlog_v$fam
	want=$((somaxconn + 1000))
	run $n "$fam" LD_PRELOAD="$LIB" SOCKTUNE_BACKLOG=$want -- -"$fam" -n 1 || continue
	cl=$(log_line $n clamp)
	eff=$(ts_val $n CONN backlog)
	check $n "backlog $want with somaxconn=$somaxconn: TCP_INFO $eff, clamp line: $cl" \
		"$eff" = "$somaxconn" -a "$(field "$cl" effective)" = "$eff" -a "$(field "$cl" want)" = "$want" \
		-a "$(field "$cl" option)" = backlog -a "$(field "$cl" limit)" = net.core.somaxconn \
		-a "$(field "$cl" limit_value)" = "$somaxconn" \
		-a "$(field "$cl" level)" = warn
done
# no clamp line when nothing was clamped
n=clamp_none
run $n 4 LD_PRELOAD="$LIB" SOCKTUNE_RCVBUF=64K SOCKTUNE_BACKLOG=10 -- -n 1 &&
	check $n "a clamp line without a clamp: $(cat "$TMP/$n.err")" "$(count_lines "$TMP/$n.err" event=clamp)" -eq 0

# SOCKTUNE_RCVBUF_FORCE: with CAP_NET_ADMIN, SO_RCVBUFFORCE goes past rmem_max
cap_eff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
want=$((rmem_max * 2))
if [ $want -le 536870912 ]; then
	n=rcvbuf_force
	if run $n 4 LD_PRELOAD="$LIB" SOCKTUNE_RCVBUF=$want SOCKTUNE_RCVBUF_FORCE=1 -- -n 1; then
		eff=$(ts_val $n CONN rcvbuf)
		if [ -n "$cap_eff" ] && [ $((0x$cap_eff >> 12 & 1)) = 1 ]; then
			check $n "forced rcvbuf $want: accepted $eff, stderr: $(cat "$TMP/$n.err")" \
				"$eff" = $((want * 2)) -a "$(count_lines "$TMP/$n.err" event=clamp)" -eq 0 \
				-a "$(count_lines "$TMP/$n.err" force-fallback)" -eq 0
		else
			check $n "no CAP_NET_ADMIN: want a force-fallback line and a clamp: $(cat "$TMP/$n.err")" \
				"$(count_lines "$TMP/$n.err" event=force-fallback)" -eq 1 \
				-a "$(count_lines "$TMP/$n.err" event=clamp)" -eq 1 -a "$eff" = $((rmem_max * 2))
		fi
	fi
else
	skip rcvbuf_force "net.core.rmem_max=$rmem_max is too large to force past"
fi

# backlog clamp against a lowered somaxconn, in a network namespace of our own
if [ "$(id -u)" = 0 ] && setup_ns NS 2>/dev/null; then
	ip netns exec "$NS" sh -c 'echo 64 > /proc/sys/net/core/somaxconn'
	ns_max=$(ip netns exec "$NS" cat /proc/sys/net/core/somaxconn)
	for fam in 4 6; do
		n=clamp_somaxconn_netns_v$fam
		SRV_WRAP="ip netns exec $NS" ts_start $n LD_PRELOAD="$LIB" SOCKTUNE_BACKLOG=1000 -- -"$fam" -n 1 -t 10
		r=$?
		unset SRV_WRAP
		if [ $r != 0 ]; then
			fail $n "tserver did not start in the namespace: $(cat "$TMP/$n.err")"
			continue
		fi
		ip netns exec "$NS" "$BIN/kaclient" burst -n 1 -T 5 "$(host_of $fam)" "$SRV_PORT" >/dev/null
		wait_server
		cl=$(log_line $n clamp)
		check $n "somaxconn=$ns_max in the namespace: TCP_INFO $(ts_val $n CONN backlog), clamp: $cl" \
			"$ns_max" = 64 -a "$(ts_val $n CONN backlog)" = 64 -a "$(field "$cl" effective)" = 64 \
			-a "$(field "$cl" limit)" = net.core.somaxconn -a "$(field "$cl" limit_value)" = 64 \
			-a "$(field "$cl" want)" = 1000
	done
	cleanup_ns "$NS"
else
	skip clamp_somaxconn_netns "cannot create a network namespace (needs root and ip netns)"
fi

# listen(fd, -1) asks for the kernel's maximum: BACKLOG_MIN is satisfied, nothing was cut by
# socktune's policy, so there is no clamp to report (and no "somaxconn=2147483647" remedy)
for fam in 4 6; do
	n=backlog_minus1_v$fam
	run $n "$fam" LD_PRELOAD="$LIB" SOCKTUNE_BACKLOG_MIN=64 -- -"$fam" -b -1 -n 1 || continue
	check $n "app backlog -1 with BACKLOG_MIN=64: TCP_INFO $(ts_val $n CONN backlog) (somaxconn $somaxconn)" \
		"$(ts_val $n CONN backlog)" = "$somaxconn"
	check ${n}_no_clamp "a clamp reported for the app's own 'maximum' backlog: $(log_line $n clamp)" \
		"$(count_lines "$TMP/$n.err" event=clamp)" -eq 0
done

# a listen() that fails (on a connected socket) must leave that socket as it was
n=failed_listen_no_side_effect
LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=256K "$PY" -c '
import socket
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(5)
c = socket.socket(); c.connect(l.getsockname())
before = (c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), c.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
try:
    c.listen(5)
    print("listen succeeded")
except OSError as e:
    after = (c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), c.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
    print("errno=%d before=%s after=%s" % (e.errno, before, after))
' >"$TMP/$n.out" 2>"$TMP/$n.err"
r=$(cat "$TMP/$n.out")
check $n "failed listen changed the socket's options: $r" \
	-n "$(echo "$r" | grep 'errno=22')" -a "$(echo "$r" | sed -n 's/.*before=\(.*\) after=.*/\1/p')" = "$(echo "$r" | sed -n 's/.*after=//p')"
