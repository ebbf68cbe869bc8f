# The path cases of make bench, sourced by bench/run.sh (its start, stop, note, rec, rotate,
# OUT, RES, CLI, BB, B, QUICK): the stalls across a real path, which loopback cannot show.
# Each RTT (20, 80 and 200 ms; make bench-quick: 80) is a pathemu path (tests/helpers/
# pathemu.c: two namespaces joined by TUN devices, MTU 1500, 100 Mbit/s both ways with a
# bandwidth-delay product of queue); servers in end b (198.18.1.1), clients in end a.
#   token  bench/psrv answers a new connection with a 45 KB preamble and a 20-byte token in
#          one write: plain, --cgroup --initcwnd 32, --cgroup --initcwnd 40
#   sse    a token every 20 ms on one connection, the client's delayed ACK at its default:
#          plain (Nagle on), --nodelay; both streams at once
#   body   bench/bsrv body: a 400 KB body in one send, read 200 ms after its headers: plain
#          and --rcvbuf 16M, the server namespace's tcp_rmem[1] at 87380 and at this host's
#   burst  (80 ms) 300 connects at once to psrv -b 16, each with a request: plain and
#          --backlog 4096, tcp_syncookies 1 (the default) and 0 (full: both)
#   loss   0.1%, 1%, 2% each way (make bench-quick: 1%): a 64 KB and a 4 MB response (quick:
#          1 MB), cubic, --congestion bbr, and --cgroup --peer 198.18.0.0/24 --congestion
#          bbr for a far client while a near one (a veth into end b, 198.18.2.0/24) keeps
#          cubic; the three RTTs' paths at once (each its own emulator and bottleneck)
# A namespace other than the first may default only to an algorithm listed in
# net.ipv4.tcp_allowed_congestion_control (cubic is not, on a host that defaults to bbr), so
# psrv sets cubic on its listener (-c cubic): every variant starts from a typical host's
# default.  Both ends run at real-time priority (chrt -f 1), as pathemu does, so that the
# machine's other jobs delay no step of theirs, except the burst's server: how fast it
# accepts is the case.  Times are the client's kernel receive times (pcli), from connect().
# Each row has its physical floor: the round trips no protocol can save (handshake and
# request: 2; the body's reply: 1 after the server's 200 ms) x RTT + the bytes at 100 Mbit/s.

P_RATE=100 # Mbit/s
PE=$B/tests/bin/pathemu
PSRV=$BB/psrv PCLI=$BB/pcli
PREAMBLE=46080 P_BODY=409600 P_BODY_DELAY=200 P_GET_TIMEOUT=30
if [ "$QUICK" = 1 ]; then
	P_RTTS=80 P_TOKEN_ROUNDS=2 P_TOKEN_N=15 P_SSE_ROUNDS=1 P_SSE_N=50 P_BODY_ROUNDS=2
	P_BURST_ROUNDS=1 P_COOKIES=1 P_LOSSES=1 P_SIZES="65536 1048576" P_LOSS_ROUNDS=1
else
	P_RTTS="20 80 200" P_TOKEN_ROUNDS=5 P_TOKEN_N=40 P_SSE_ROUNDS=3 P_SSE_N=100 P_BODY_ROUNDS=5
	P_BURST_ROUNDS=3 P_COOKIES="1 0" P_LOSSES="0.1 1 2" P_SIZES="65536 4194304" P_LOSS_ROUNDS=3
fi
RT="chrt -f 1"
P_HOST_RMEM1=$(cut -f2 /proc/sys/net/ipv4/tcp_rmem) # this host's (the bench's own namespace)

# path_up NAME RTT [pathemu options]: a path of RTT ms; PA, PB its namespaces, PE_PID the
# emulator (in $OUT/pids for the cleanup).  1 when it cannot start.
path_up() {
	_pn=$1 _rtt=$2
	shift 2
	_q=$((_rtt * P_RATE * 1000 / 8 / 1500)) # a bandwidth-delay product of 1500-byte packets
	[ $_q -lt 100 ] && _q=100
	"$PE" --name "b$$-$_pn" --seconds 900 --delay "$((_rtt / 2))ms" --rate "${P_RATE}mbit" \
		--queue $_q "$@" >"$OUT/pe-$_pn.out" 2>"$OUT/pe-$_pn.err" &
	PE_PID=$!
	echo "$PE_PID" >>"$OUT/pids"
	_i=0
	while [ $_i -lt 100 ] && ! grep -qs '^READY ' "$OUT/pe-$_pn.out"; do
		sleep 0.05
		_i=$((_i + 1))
	done
	PA=$(sed -n 's/^READY a=\([^ ]*\) .*/\1/p' "$OUT/pe-$_pn.out")
	PB=$(sed -n 's/^READY .* b=\([^ ]*\) .*/\1/p' "$OUT/pe-$_pn.out")
	[ -n "$PA" ] && [ -n "$PB" ]
}
in_ns() {
	_ns=$1
	shift
	nsenter --net="/run/netns/$_ns" "$@"
}
# srv NAME PORT ENVS CMD...: start NAME in end b (BENCH_LIFETIME bounds it), once it says
# PORT (10 s: the cgroup mode probes first).  The preload's log goes to $OUT/NAME.%p.log.
srv() {
	_sn=$1 _sp=$2 _se=$3
	shift 3
	NSX="nsenter --net=/run/netns/$PB"
	start "$_sn" "BENCH_LIFETIME=900 $_se" "$@"
	NSX=""
	echo "$LAST" >>"$OUT/pids"
	eval "srv_$(echo "$_sn" | tr -c 'a-zA-Z0-9\n' _)=$LAST"
	_i=0
	while [ $_i -lt 200 ] && ! grep -qs "^PORT $_sp" "$OUT/$_sn.out"; do
		sleep 0.05
		_i=$((_i + 1))
	done
	grep -qs "^PORT $_sp" "$OUT/$_sn.out" || note "paths: $_sn did not start: $(head -c 300 "$OUT/$_sn.out")"
}
srv_pid() { eval "echo \$srv_$(echo "$1" | tr -c 'a-zA-Z0-9\n' _)"; }
CGV="env -u SOCKTUNE_LOG_FILE $CLI --cgroup" # (the library's log file: refused by the mode)
# pc KEY VARIANT NS CMD...: one client run in NS at real-time priority; its line kept in
# $OUT/lines and in $pline.  (The functions here share one namespace of variables: each
# names its own with a prefix of its own.)
pc() {
	_pk=$1 _pv=$2 _pns=$3
	shift 3
	pline=$(in_ns "$_pns" $RT "$@")
	echo "$_pk $_pv $pline" >>"$OUT/lines"
}
# tcpext NS KEY...: TcpExt counters of namespace NS (run.sh's netstat_tcpext there)
tcpext() {
	NSX="nsenter --net=/run/netns/$1"
	shift
	netstat_tcpext "$@"
	NSX=""
}
# stats FILE COLUMN: "mean p50 p99 max n" of a column of whole numbers
stats() {
	awk -v c="$2" '{ v[++n] = $c; s += $c } END { if (!n) { print "-1 -1 -1 -1 0"; exit }
		for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
		r50 = int((50 * n + 99) / 100); r99 = int((99 * n + 99) / 100)
		printf "%d %d %d %d %d\n", s / n, v[r50 ? r50 : 1], v[r99 ? r99 : 1], v[n], n }' "$1"
}
# conn_vals FILE FIELD [FILTER]: FIELD of psrv's CONN lines matching FILTER, one a line
conn_vals() {
	grep "^CONN ${3:-}" "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"
}

# ---- token: the first token after a 45 KB preamble, new connections ----
p_token() {
	_r=$1
	_v="plain"
	srv pt$_r-plain 7001 "" $RT "$PSRV" -c cubic 198.18.1.1 7001
	if [ -z "$P_CG_SKIP" ]; then
		_v="plain iw32 iw40"
		srv pt$_r-iw32 7002 "" $CGV --initcwnd 32 -- $RT "$PSRV" -c cubic 198.18.1.1 7002
		srv pt$_r-iw40 7003 "" $CGV --initcwnd 40 -- $RT "$PSRV" -c cubic 198.18.1.1 7003
	fi
	note "paths: token, RTT $_r ms: $_v, $((P_TOKEN_N * P_TOKEN_ROUNDS)) connections each (25 ms apart, $P_TOKEN_ROUNDS rounds)"
	i=0
	while [ $i -lt $P_TOKEN_ROUNDS ]; do
		# shellcheck disable=SC2086
		for v in $(rotate $i $_v); do
			case $v in plain) p=7001 ;; iw32) p=7002 ;; iw40) p=7003 ;; esac
			pc pt.r$_r "$v" "$PA" "$PCLI" token 198.18.1.1 $p $PREAMBLE $P_TOKEN_N 25 "$OUT/pt-$_r-$v-$i.us"
		done
		i=$((i + 1))
	done
	for v in $_v; do
		cat "$OUT/pt-$_r-$v-"*.us >"$OUT/pt-$_r-$v.us"
		set -- $(stats "$OUT/pt-$_r-$v.us" 1)
		rec "pt.mean.r$_r.$v" "$1"
		rec "pt.p99.r$_r.$v" "$3"
		rec "pt.n.r$_r.$v" "$5"
		set -- $(awk '$3 > 0 { printf "%d\n", $1 * 100 / $3 }' "$OUT/pt-$_r-$v.us" >"$OUT/pt-$_r-$v.rt" && stats "$OUT/pt-$_r-$v.rt" 1)
		rec "pt.rt.r$_r.$v" "$(awk -v x="$2" 'BEGIN { printf "%.2f", x / 100 }')"
		set -- $(stats "$OUT/pt-$_r-$v.us" 2)
		rec "pt.flights.r$_r.$v" "$2"
		set -- $(conn_vals "$OUT/pt$_r-$v.out" cwnd0 "req=t" >"$OUT/pt-$_r-$v.cwnd" && stats "$OUT/pt-$_r-$v.cwnd" 1)
		rec "pt.cwnd0.r$_r.$v" "$2"
		stop "$(srv_pid "pt$_r-$v")"
	done
}

# ---- sse: the gaps between tokens sent every 20 ms ----
p_sse() {
	_r=$1
	srv ps$_r-nagle 7011 "" $RT "$PSRV" -c cubic 198.18.1.1 7011
	srv ps$_r-nodelay 7012 "" "$CLI" --nodelay -- $RT "$PSRV" -c cubic 198.18.1.1 7012
	note "paths: sse, RTT $_r ms: Nagle on / --nodelay at once, $P_SSE_N tokens x $P_SSE_ROUNDS rounds"
	i=0
	while [ $i -lt $P_SSE_ROUNDS ]; do
		in_ns "$PA" $RT "$PCLI" sse 198.18.1.1 7011 $P_SSE_N "$OUT/ps-$_r-nagle-$i.us" >"$OUT/ps-$_r-nagle-$i.line" &
		_j=$!
		in_ns "$PA" $RT "$PCLI" sse 198.18.1.1 7012 $P_SSE_N "$OUT/ps-$_r-nodelay-$i.us" >"$OUT/ps-$_r-nodelay-$i.line"
		wait $_j
		i=$((i + 1))
	done
	for v in nagle nodelay; do
		cat "$OUT/ps-$_r-$v-"*.us >"$OUT/ps-$_r-$v.us"
		set -- $(stats "$OUT/ps-$_r-$v.us" 1)
		rec "ps.p50.r$_r.$v" "$2"
		rec "ps.p99.r$_r.$v" "$3"
		rec "ps.max.r$_r.$v" "$4"
		rec "ps.over.r$_r.$v" "$(awk '$1 > 30000 { n++ } END { print n + 0 }' "$OUT/ps-$_r-$v.us")"
		stop "$(srv_pid "ps$_r-$v")"
	done
}

# ---- body: 400 KB in one send to a server that reads it 200 ms late ----
p_body() {
	_r=$1
	_orig=$(in_ns "$PB" cat /proc/sys/net/ipv4/tcp_rmem)
	set -- $(cat /proc/sys/net/ipv4/tcp_rmem) # this host's
	_port=7021
	for m in 87380 host; do
		# (tcp_rmem[1] is a listener's receive buffer from socket(): set before each starts)
		if [ $m = host ]; then _rm="$1 $2 $3"; else _rm="$1 87380 $3"; fi
		in_ns "$PB" sh -c "echo '$_rm' >/proc/sys/net/ipv4/tcp_rmem"
		for v in plain st; do
			_e=""
			[ $v = st ] && _e="$CLI --rcvbuf 16M --"
			start pb$_r-$m-$v "BENCH_LIFETIME=900" nsenter --net="/run/netns/$PB" $_e $RT "$BB/bsrv" body 198.18.1.1 $_port $P_BODY_DELAY
			echo "$LAST" >>"$OUT/pids"
			eval "pb_${m}_$v=$_port pbs_${m}_$v=$LAST"
			in_ns "$PA" "$BB/bcli" wait 198.18.1.1 $_port || note "paths: body server $m $v did not start"
			_port=$((_port + 1))
		done
	done
	in_ns "$PB" sh -c "echo '$_orig' >/proc/sys/net/ipv4/tcp_rmem"
	note "paths: body, RTT $_r ms: tcp_rmem[1] 87380 / $2 x plain / --rcvbuf 16M, $P_BODY_ROUNDS rounds"
	i=0
	while [ $i -lt $P_BODY_ROUNDS ]; do
		for v in $(rotate $i 87380_plain 87380_st host_plain host_st); do
			eval "p=\$pb_$v"
			pc pb.r$_r "$v" "$PA" "$BB/bcli" body 198.18.1.1 "$p" $P_BODY
			for k in ttfb_us send_us total_retrans; do
				rec "pb.$k.r$_r.$v" "$(kv "$pline" $k)"
			done
		done
		i=$((i + 1))
	done
	for v in 87380_plain 87380_st host_plain host_st; do eval "stop \$pbs_$v"; done
}

# ---- burst: 300 connects at once to a backlog of 16 ----
BURST_CTRS_B="ListenOverflows TCPReqQFullDrop SyncookiesSent"
BURST_CTRS_A="TCPSynRetrans TCPTimeouts"
p_burst() {
	_r=$1
	srv pu-plain 7031 "" "$PSRV" -b 16 198.18.1.1 7031
	srv pu-st 7032 "" "$CLI" --backlog 4096 -- "$PSRV" -b 16 198.18.1.1 7032
	_sc0=$(in_ns "$PB" cat /proc/sys/net/ipv4/tcp_syncookies)
	note "paths: burst, RTT $_r ms: 300 connects, backlog 16 / --backlog 4096, tcp_syncookies $P_COOKIES, $P_BURST_ROUNDS rounds"
	i=0
	while [ $i -lt $P_BURST_ROUNDS ]; do
		for sc in $P_COOKIES; do
			in_ns "$PB" sh -c "echo $sc >/proc/sys/net/ipv4/tcp_syncookies"
			for v in $(rotate $i plain st); do
				p=7031
				[ $v = st ] && p=7032
				b0=$(tcpext "$PB" $BURST_CTRS_B) a0=$(tcpext "$PA" $BURST_CTRS_A)
				pc pu.sc$sc "$v" "$PA" "$PCLI" burst 198.18.1.1 $p 300 "$OUT/pu-$sc-$v-$i.us"
				set -- $b0 $(tcpext "$PB" $BURST_CTRS_B) $a0 $(tcpext "$PA" $BURST_CTRS_A)
				rec "pu.ovf.sc$sc.$v" $(($4 - $1))
				rec "pu.reqq.sc$sc.$v" $(($5 - $2))
				rec "pu.cookies.sc$sc.$v" $(($6 - $3))
				rec "pu.synretr.sc$sc.$v" $(($9 - $7))
				rec "pu.rto.sc$sc.$v" $((${10} - $8))
				for k in connect_p50_us connect_p99_us p50_us p99_us failed; do
					rec "pu.$k.sc$sc.$v" "$(kv "$pline" $k)"
				done
				# how many connected (column 1) and were answered (2) within 1 s (no SYN
				# lost), 1-3 s, 3-7 s, 7-10 s (the SYN's retries at 1, 3 and 7 s), or not
				for c in 1 2; do
					awk -v c=$c '{ t = $c / 1e6; b = t < 1 ? 0 : t < 3 ? 1 : t < 7 ? 2 : t < 9.99 ? 3 : 4; n[b]++ }
						END { for (j = 0; j < 5; j++) print j, n[j] + 0 }' "$OUT/pu-$sc-$v-$i.us" |
						while read -r j m; do rec "pu.b$c.sc${sc}_$j.$v" "$m"; done
				done
				sleep 1 # (the server's threads for the late ones end)
			done
		done
		i=$((i + 1))
	done
	in_ns "$PB" sh -c "echo $_sc0 >/proc/sys/net/ipv4/tcp_syncookies"
	stop "$(srv_pid pu-plain)" "$(srv_pid pu-st)"
}

# ---- loss: responses over a lossy path, cubic vs bbr; --peer for the far prefix only ----
# p_loss RTT NEAR_NS: one worker (run in the background, one per RTT), every loss in turn
p_loss() {
	_r=$1 _nn=$2
	for l in $P_LOSSES; do
		_t=$(echo "$l" | tr -d .)
		if ! path_up loss$_r-$_t "$_r" --loss "$l%"; then
			note "paths: no path for loss $l% at $_r ms: $(cat "$OUT/pe-loss$_r-$_t.err")"
			continue
		fi
		# the near client: a veth (MTU 1500, no delay, no loss) from a namespace of ours into end b
		_vn=n$$x$_r$_t _vb=b$$x$_r$_t
		ip link add $_vn netns "$_nn" type veth peer name $_vb netns "$PB" &&
			ip -n "$_nn" addr add 198.18.2.2/24 dev $_vn && ip -n "$_nn" link set $_vn up &&
			ip -n "$PB" addr add 198.18.2.1/24 dev $_vb && ip -n "$PB" link set $_vb up ||
			note "paths: no near client at $_r ms"
		_n=pl$_r-$_t
		srv $_n-cubic 7041 "" $RT "$PSRV" -c cubic 0.0.0.0 7041
		srv $_n-bbr 7042 "" "$CLI" --congestion bbr -- $RT "$PSRV" -c cubic 0.0.0.0 7042
		_v="cubic bbr cubicnear"
		if [ -z "$P_CG_SKIP" ]; then
			srv $_n-peer 7043 "" $CGV --peer 198.18.0.0/24 --congestion bbr -- $RT "$PSRV" -c cubic 0.0.0.0 7043
			_v="$_v peer peernear"
		fi
		note "paths: loss $l%, RTT $_r ms: $_v; $P_SIZES bytes, $P_LOSS_ROUNDS rounds"
		i=0
		while [ $i -lt $P_LOSS_ROUNDS ]; do
			for s in $P_SIZES; do
				# shellcheck disable=SC2086
				for v in $(rotate $i $_v); do
					case $v in
					cubic) c="$PA 198.18.1.1 7041" ;; bbr) c="$PA 198.18.1.1 7042" ;;
					peer) c="$PA 198.18.1.1 7043" ;; cubicnear) c="$_nn 198.18.2.1 7041" ;;
					peernear) c="$_nn 198.18.2.1 7043" ;;
					esac
					set -- $c
					pc "pl.r$_r.l$_t.s$s" "$v" "$1" "$PCLI" get "$2" "$3" "$s" $P_GET_TIMEOUT
					rec "pl.us.r$_r.l$_t.s$s.$v" "$(kv "$pline" us)"
				done
			done
			i=$((i + 1))
		done
		for v in cubic bbr peer; do
			stop "$(srv_pid "$_n-$v")" 2>/dev/null
			[ -f "$OUT/$_n-$v.out" ] || continue
			for s in $P_SIZES; do
				# the far client's connections (198.18.0.1), then the near one's
				for w in far near; do
					if [ $w = far ]; then f="req=g n=$s ok=1 peer=198.18.0.1 "; else f="req=g n=$s ok=1 peer=198.18.2.2 "; fi
					conn_vals "$OUT/$_n-$v.out" total_retrans "$f" >"$OUT/$_n-$v-$s-$w.retr"
					[ -s "$OUT/$_n-$v-$s-$w.retr" ] || continue
					set -- $(stats "$OUT/$_n-$v-$s-$w.retr" 1)
					rec "pl.retr.r$_r.l$_t.s$s.$v$w" "$2"
					echo "$_r $_t $s $v$w $(conn_vals "$OUT/$_n-$v.out" cc "$f" | sort | uniq -c | awk '{ printf "%s%s", (NR > 1 ? "," : ""), $2 }')" >>"$OUT/pl.cc"
				done
			done
		done
		ip -n "$_nn" link del $_vn 2>/dev/null
		kill "$PE_PID" 2>/dev/null
		wait "$PE_PID" 2>/dev/null
	done
}

paths_run() {
	P_SKIP=""
	if [ "$(id -u)" != 0 ] || [ ! -c /dev/net/tun ] || [ ! -x "$PE" ]; then
		P_SKIP="needs root, /dev/net/tun and $PE"
	elif ! $RT true 2>/dev/null; then
		note "paths: chrt -f 1 refused: the ends at normal priority"
		RT=""
	fi
	[ -n "$P_SKIP" ] && { note "paths: skipped: $P_SKIP"; return; }
	P_CG_SKIP=""
	"$CLI" --cgroup --initcwnd 40 -- true 2>"$OUT/paths-cg.err" ||
		P_CG_SKIP=$(grep -v '^socktune pid=' "$OUT/paths-cg.err" | head -n 1 | cut -c1-160)
	[ -n "$P_CG_SKIP" ] && note "paths: no cgroup mode ($P_CG_SKIP): no --initcwnd, no --peer rows"
	: >"$OUT/pl.cc"
	for r in $P_RTTS; do
		if ! path_up p$r "$r"; then
			note "paths: no path: $(cat "$OUT/pe-p$r.err")"
			P_SKIP="pathemu: $(head -n 1 "$OUT/pe-p$r.err")"
			return
		fi
		p_token "$r"
		p_sse "$r"
		p_body "$r"
		[ "$r" = 80 ] && p_burst "$r"
		kill "$PE_PID"
		wait "$PE_PID"
	done
	# the loss case: one worker per RTT, at once (each its own paths); the near namespaces
	# made here, so that the bench's cleanup removes them whatever happens
	wl=""
	for r in $P_RTTS; do
		ns_make stb$$near$r || { note "paths: no near namespace"; continue; }
		p_loss "$r" stb$$near$r &
		wl="$wl $!"
		PIDS="$PIDS $!"
	done
	# shellcheck disable=SC2086
	wait $wl
}

# ---- the tables: before, after, floor, and each over the floor ----

# floor_us RTT ROUND_TRIPS BYTES: the round trips, and BYTES as IP packets of 1448 bytes of
# payload (52 of headers) at the path's rate
floor_us() {
	awk -v r="$1" -v k="$2" -v b="$3" -v rate=$P_RATE 'BEGIN {
		w = b + int((b + 1447) / 1448) * 52; printf "%d", k * r * 1000 + w * 8 / rate }'
}
size_name() { case $1 in 65536) echo "64 KB" ;; 1048576) echo "1 MB" ;; 4194304) echo "4 MB" ;; *) echo "$1 B" ;; esac; }

# rows: case|metric|RTT|key (less the variant)|before|after|unit|floor (in the key's unit, or -)
paths_rows() {
	nt=$((P_TOKEN_N * P_TOKEN_ROUNDS))
	for r in $P_RTTS; do
		ft=$(floor_us "$r" 2 $((PREAMBLE + 20)))
		frt=$(awk -v f="$ft" -v r="$r" 'BEGIN { printf "%.2f", f / (r * 1000) }') # (in round trips)
		for v in $([ -z "$P_CG_SKIP" ] && echo iw32 iw40); do
			t="first token after a 45 KB preamble, new connection: --cgroup --initcwnd ${v#iw}"
			echo "$t|mean of $nt (ms)|$r|pt.mean.r$r|plain|$v|ms|$ft"
			echo "$t|p99 of $nt (ms)|$r|pt.p99.r$r|plain|$v|ms|$ft"
			echo "$t|round trips (median of time / tcpi_min_rtt)|$r|pt.rt.r$r|plain|$v|f|$frt"
			echo "$t|flights of data (median)|$r|pt.flights.r$r|plain|$v|n|1"
			echo "$t|initial window, server's end (tcpi_snd_cwnd at accept)|$r|pt.cwnd0.r$r|plain|$v|n|-"
		done
	done
	for r in $P_RTTS; do
		t="SSE, a 20-byte token every 20 ms, one connection: --nodelay"
		echo "$t|p99 gap between tokens (ms)|$r|ps.p99.r$r|nagle|nodelay|ms|20000"
		echo "$t|p50 gap (ms; 0: tokens that came in one segment)|$r|ps.p50.r$r|nagle|nodelay|ms|20000"
		echo "$t|gaps over 30 ms (of $((P_SSE_ROUNDS * (P_SSE_N - 1))))|$r|ps.over.r$r|nagle|nodelay|n|0"
	done
	for r in $P_RTTS; do
		for m in 87380 host; do
			t="400 KB body in one send, read 200 ms late, tcp_rmem[1] $([ $m = host ] && echo "$P_HOST_RMEM1 (this host's)" || echo 87380): --rcvbuf 16M"
			echo "$t|time to first response byte (ms)|$r|pb.ttfb_us.r$r|${m}_plain|${m}_st|ms|$((r * 1000 + P_BODY_DELAY * 1000))"
			echo "$t|client send() blocked (ms)|$r|pb.send_us.r$r|${m}_plain|${m}_st|ms|-"
			echo "$t|tcpi_total_retrans (client)|$r|pb.total_retrans.r$r|${m}_plain|${m}_st|n|0"
		done
	done
	case " $P_RTTS " in *" 80 "*) ;; *) return ;; esac
	for sc in $P_COOKIES; do
		t="300 connects at once, backlog 16, tcp_syncookies $sc: --backlog 4096"
		echo "$t|connect p50 (ms; one not connected counts at 10 s)|80|pu.connect_p50_us.sc$sc|plain|st|ms|80000"
		echo "$t|connect p99 (ms)|80|pu.connect_p99_us.sc$sc|plain|st|ms|80000"
		echo "$t|connected in <1 / 1-3 / 3-7 / 7-10 s / not in 10 s|80|pu.b1.sc$sc|plain|st|b5|-"
		echo "$t|answer p50 (ms; one not answered counts at 10 s)|80|pu.p50_us.sc$sc|plain|st|ms|160000"
		echo "$t|answer p99 (ms)|80|pu.p99_us.sc$sc|plain|st|ms|160000"
		echo "$t|answered in <1 / 1-3 / 3-7 / 7-10 s / not in 10 s|80|pu.b2.sc$sc|plain|st|b5|-"
		echo "$t|server TcpExt ListenOverflows|80|pu.ovf.sc$sc|plain|st|n|-"
		echo "$t|server TcpExt TCPReqQFullDrop|80|pu.reqq.sc$sc|plain|st|n|-"
		echo "$t|server TcpExt SyncookiesSent|80|pu.cookies.sc$sc|plain|st|n|-"
		echo "$t|client TcpExt TCPSynRetrans|80|pu.synretr.sc$sc|plain|st|n|-"
		echo "$t|client TcpExt TCPTimeouts|80|pu.rto.sc$sc|plain|st|n|-"
	done
}
paths_rows_loss() {
	for l in $P_LOSSES; do
		lt=$(echo "$l" | tr -d .)
		for s in $P_SIZES; do
			for r in $P_RTTS; do
				k=pl.us.r$r.l$lt.s$s f=$(floor_us "$r" 2 "$s")
				t="loss $l%, $(size_name "$s") response, new connection"
				echo "$t: --congestion bbr|time to the last byte (s)|$r|$k|cubic|bbr|s|$f"
				echo "$t: --congestion bbr|server's retransmitted segments (transfers completed)|$r|pl.retr.r$r.l$lt.s$s|cubicfar|bbrfar|n|-"
				[ -n "$P_CG_SKIP" ] && continue
				echo "$t: --cgroup --peer 198.18.0.0/24 --congestion bbr, far client|time to the last byte (s)|$r|$k|cubic|peer|s|$f"
			done
		done
	done
}

paths_table() {
	echo
	if [ -n "$P_SKIP" ]; then
		echo "Paths: skipped ($P_SKIP)."
		return
	fi
	{
		paths_rows
		paths_rows_loss
	} >"$OUT/prows"
	echo "Paths (pathemu, ${P_RATE} Mbit/s, MTU 1500; ratio = value / floor; server cubic unless the row says otherwise)"
	echo
	echo "| case | metric | RTT (ms) | before | after | floor | before / floor | after / floor |"
	echo "|---|---|---|---|---|---|---|---|"
	awk -F'|' -v cap=$((P_GET_TIMEOUT * 1000000)) "$AWK_MEDIAN"'
		function fmt(x, unit) {
			if (x == "") return "n/a"
			if (unit == "ms") return sprintf(x < 10000 ? "%.2f" : "%.1f", x / 1000)
			if (unit == "s") return sprintf("%s%.2f", x >= cap ? ">" : "", x / 1e6)
			if (unit == "f") return sprintf("%.2f", x)
			return sprintf("%d", x + 0.5)
		}
		function ratio(x, f) { return (x == "" || f == "-" || f + 0 <= 0) ? "-" : sprintf("%.2f", x / f) }
		# a distribution: five buckets, each the median of its rounds
		function buckets(k, v,    j, s) {
			for (j = 0; j < 5; j++) s = s (j ? " / " : "") fmt(median(k "_" j "." v), "n")
			return s
		}
		FILENAME == ARGV[1] { split($0, f, " "); if (f[2] == "") next; cnt[f[1]]++; val[f[1], cnt[f[1]]] = f[2] + 0; next }
		$7 == "b5" {
			printf "| %s | %s | %s | %s | %s | - | - | - |\n", $1, $2, $3, buckets($4, $5), buckets($4, $6)
			next
		}
		{
			a = median($4 "." $5); b = median($4 "." $6)
			printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, fmt(a, $7), fmt(b, $7),
				($8 == "-" ? "-" : fmt($8, $7)), ratio(a, $8), ratio(b, $8)
		}' "$RES" "$OUT/prows"
	# what the server's end ran: TCP_CONGESTION read on each connection (psrv's CONN lines)
	set -- "$OUT"/pl*-cubic.out "$OUT"/pl*-bbr.out "$OUT"/pl*-peer.out
	[ -f "$1" ] || return 0
	echo
	echo "Congestion control of the server's end, read back on each connection of the loss case (all RTTs, losses, sizes):"
	echo
	awk '/^CONN req=g / { v = FILENAME; sub(/.*-/, "", v); sub(/[.]out$/, "", v)
		w = index($0, " peer=198.18.2.") ? "near client (veth)" : "far client"
		k = (v == "cubic" ? "plain (cubic)" : v == "bbr" ? "--congestion bbr" : "--cgroup --peer 198.18.0.0/24 --congestion bbr") ", " w
		c = $0; sub(/.* cc=/, "", c); sub(/ .*/, "", c); n[k, c]++; keys[k] = 1; ccs[c] = 1 }
		END { for (k in keys) { s = ""; for (c in ccs) if (n[k, c]) s = s (s == "" ? "" : ", ") c " " n[k, c]; print "- " k ": " s } }' "$@" | sort
	# the near client's transfers (veth: no delay, no loss), every RTT and loss together
	for s in $P_SIZES; do
		for v in cubicnear peernear; do
			grep "^pl\.r[0-9]*\.l[0-9]*\.s$s $v " "$OUT/lines" | sed -n 's/.* us=\([0-9]*\).*/\1/p' >"$OUT/pl-$v-$s.us"
		done
		set -- $(stats "$OUT/pl-cubicnear-$s.us" 1) $(stats "$OUT/pl-peernear-$s.us" 1)
		[ "$5" -gt 0 ] && echo "- the near client's $(size_name "$s") responses, median of $5 (ms): plain $(awk -v x="$2" 'BEGIN { printf "%.2f", x / 1000 }'), under --peer $(awk -v x="$7" 'BEGIN { printf "%.2f", x / 1000 }')"
	done
}
