#!/bin/sh
# make bench / make bench-quick (BENCH_QUICK=1): the field's stalls on real servers, plain
# vs socktune side by side, and what the library costs; then the same stalls across emulated
# paths (bench/paths.sh).  POSIX sh; needs the programs in $BUILD/bench (bcli, bsrv, pcli,
# psrv, callread, svgchart), the tests' tserver and pathemu, /usr/bin/python3, and for some
# rows strace, valgrind, ip, nsenter and chrt (root, for network namespaces and TUN devices);
# a row whose tool is missing says so.
#
# Every case runs its variants in interleaved rounds (A B, B A, ...) against servers that
# stay up, and the table shows the median of the rounds: the machines are shared and noisy.
# Writes $BUILD/bench/table.md (the table), $BUILD/bench/latency.svg (the chart) and keeps
# raw lines, samples and socktune's logs in $BUILD/bench/out.
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
BB=$B/bench
LIB=$B/libsocktune.so
PY=/usr/bin/python3 # Debian's, dynamically linked (a pyenv shim or a static build is not)
OUT=$BB/out
CLI=$B/socktune # doctor (case 8)
TSRV=$B/tests/bin/tserver # the tests' server: its accept mode is case 5's accept+close loop
RES=$OUT/results
QUICK=${BENCH_QUICK:-0}

if [ "$QUICK" = 1 ]; then
	C8_ROUNDS=1 C8_S=1
	ROUNDS=2 C1_N=32 C2_N=20 C6_N=20 C7_N=20 S7_N1=5 S7_N2=25 C3_N=300 C4_ROUNDS=3 CC_ROUNDS=5 CC_N=1500 SC_N1=50 SC_N2=550 CG_N=20000
else
	C8_ROUNDS=3 C8_S=2
	ROUNDS=5 C1_N=128 C2_N=50 C6_N=30 C7_N=50 S7_N1=10 S7_N2=50 C3_N=300 C4_ROUNDS=5 CC_ROUNDS=15 CC_N=3000 SC_N1=200 SC_N2=1200 CG_N=100000
fi
HOLD_N=10000
C8_N="1000 10000" # connections open while doctor watches (case 8)
if [ "$QUICK" = 1 ]; then C9_N=10000 C9_S=10; else C9_N="10000 100000" C9_S=20; fi # case 9: watch
[ -n "${BENCH_C9_N:-}" ] && C9_N=$BENCH_C9_N
BODY=399360    # 390 KiB of request body
BODY_DELAY=20  # ms the server waits before it reads the body
LIFE=200       # no server outlives this (s)
export BENCH_LIFETIME=$LIFE

for f in bcli bsrv callread svgchart; do
	[ -x "$BB/$f" ] || { echo "bench: $BB/$f missing: run make bench" >&2; exit 2; }
done
[ -f "$LIB" ] || { echo "bench: $LIB missing" >&2; exit 2; }
[ -x "$TSRV" ] || { echo "bench: $TSRV missing: run make bench" >&2; exit 2; }
[ -x "$PY" ] || { echo "bench: $PY missing" >&2; exit 2; }

rm -rf "$OUT"
mkdir -p "$OUT/www"
: >"$RES"
head -c 2048 /dev/zero | tr '\0' 'a' >"$OUT/www/f2k"
SHIM="LD_PRELOAD=$LIB SOCKTUNE_LOG=info"
PIDS=""
NETNS=""
NSX="" # "ip netns exec NAME" while a case runs inside a namespace

cleanup() {
	# (the path cases' workers write the pids of what they start to $OUT/pids)
	for p in $PIDS $(cat "$OUT/pids" 2>/dev/null); do kill "$p" 2>/dev/null; done
	for n in $NETNS; do ip netns del "$n" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

note() { echo "bench: $*" >&2; }
rec() { echo "$1 $2" >>"$RES"; }
# kv LINE KEY: the value of KEY=value in a result line
kv() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
port() { "$BB/bcli" freeport; }

# start NAME "VAR=value ..." CMD...: CMD in the background (inside $NSX if set) with the
# assignments in its environment; output in $OUT/NAME.out, socktune's log in
# $OUT/NAME.%p.log.  $LAST is its pid (env and ip netns exec replace themselves).
start() {
	name=$1 envs=$2
	shift 2
	# shellcheck disable=SC2086
	$NSX env SOCKTUNE_LOG_FILE="$OUT/$name.%p.log" $envs "$@" >"$OUT/$name.out" 2>&1 &
	LAST=$!
	PIDS="$PIDS $LAST"
}
stop() {
	for p in "$@"; do kill "$p" 2>/dev/null; done
	for p in "$@"; do wait "$p" 2>/dev/null; done
}
waitfor() { $NSX "$BB/bcli" wait "$1" "$2" || { note "server on $1:$2 did not start"; exit 1; }; }

# client CASE VARIANT CMD...: run one measurement, keep the line, record its numbers.
client() {
	c=$1 v=$2
	shift 2
	line=$($NSX "$@")
	echo "$c $v $line" >>"$OUT/lines"
	for k in p50_us p99_us over failed send_us ttfb_us total_retrans rate; do
		val=$(kv "$line" $k)
		[ -n "$val" ] && rec "$c.$k.$v" "$val"
	done
}

# rotate R WORDS...: the words rotated by R, so each round starts with another variant.
rotate() {
	r=$1
	shift
	n=$#
	i=0
	while [ $i -lt $((r % n)) ]; do
		first=$1
		shift
		set -- "$@" "$first"
		i=$((i + 1))
	done
	echo "$@"
}

# netstat_tcpext KEY...: the values of TcpExt counters in the current namespace.
netstat_tcpext() {
	$NSX cat /proc/net/netstat | awk -v keys="$*" '
		$1 == "TcpExt:" && !h { for (i = 2; i <= NF; i++) col[$i] = i; h = 1; next }
		$1 == "TcpExt:" && h { n = split(keys, k, " "); s = "";
			for (j = 1; j <= n; j++) s = s (j > 1 ? " " : "") (k[j] in col ? $col[k[j]] : 0);
			print s; exit }'
}

# ns_make NAME: a namespace of ours, with lo up.  Fails (returns 1) when not permitted.
ns_make() {
	ip netns add "$1" 2>/dev/null || return 1
	NETNS="$NETNS $1"
	ip -n "$1" link set lo up
}

T0=$(date +%s)
echo "socktune bench: $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds$([ "$QUICK" = 1 ] && echo ' (quick)')" >&2

# ---- case 1: python http.server -p HTTP/1.1, keep-alive, 2 KB file: NODELAY off / on ----
note "case 1: python http.server keep-alive, $C1_N requests x $ROUNDS rounds"
pa=$(port)
start c1-plain "" timeout $LIFE $PY -m http.server -p HTTP/1.1 -b 127.0.0.1 -d "$OUT/www" "$pa"
sa=$LAST
pb=$(port)
start c1-st "$SHIM SOCKTUNE_NODELAY=1" timeout $LIFE $PY -m http.server -p HTTP/1.1 -b 127.0.0.1 -d "$OUT/www" "$pb"
sb=$LAST
waitfor 127.0.0.1 "$pa"
waitfor 127.0.0.1 "$pb"
r=0
while [ $r -lt "$ROUNDS" ]; do
	for v in $(rotate $r plain st); do
		p=$pa
		[ $v = st ] && p=$pb
		client c1 $v "$BB/bcli" http 127.0.0.1 "$p" "$C1_N" /f2k "$OUT/c1-$v-$r.us"
	done
	r=$((r + 1))
done
stop "$sa" "$sb"
cat "$OUT"/c1-plain-*.us >"$OUT/c1-plain.us"
cat "$OUT"/c1-st-*.us >"$OUT/c1-st.us"

# ---- case 2: keep-alive C server, two-write client with Nagle on: QUICKACK off/once/on ----
note "case 2: two-write client, $C2_N requests x $ROUNDS rounds"
pa=$(port)
start c2-plain "" "$BB/bsrv" ka 127.0.0.1 "$pa"
sa=$LAST
po=$(port)
start c2-once "" "$BB/bsrv" ka 127.0.0.1 "$po" once
so=$LAST
pb=$(port)
start c2-st "$SHIM SOCKTUNE_QUICKACK=1" "$BB/bsrv" ka 127.0.0.1 "$pb"
sb=$LAST
for p in "$pa" "$po" "$pb"; do waitfor 127.0.0.1 "$p"; done
r=0
while [ $r -lt "$ROUNDS" ]; do
	for v in $(rotate $r plain once st); do
		case $v in plain) p=$pa ;; once) p=$po ;; st) p=$pb ;; esac
		client c2 $v "$BB/bcli" twowrite 127.0.0.1 "$p" "$C2_N" "$OUT/c2-$v-$r.us"
	done
	r=$((r + 1))
done
stop "$sa" "$so" "$sb"
for v in plain once st; do cat "$OUT"/c2-$v-*.us >"$OUT/c2-$v.us"; done

# ---- case 6: publish/acknowledge with a client that keeps Nagle on: NODELAY alone moves
# the delayed-ACK wait to the client's side; NODELAY + QUICKACK removes it ----
note "case 6: QoS-1 publish to its own topic, $C6_N exchanges x $ROUNDS rounds"
pa=$(port)
start c6-plain "" "$BB/bsrv" pub 127.0.0.1 "$pa"
sa=$LAST
pn=$(port)
start c6-nd "$SHIM SOCKTUNE_NODELAY=1" "$BB/bsrv" pub 127.0.0.1 "$pn"
sn=$LAST
pq=$(port)
start c6-ndqa "$SHIM SOCKTUNE_NODELAY=1 SOCKTUNE_QUICKACK=1" "$BB/bsrv" pub 127.0.0.1 "$pq"
sq=$LAST
for p in "$pa" "$pn" "$pq"; do waitfor 127.0.0.1 "$p"; done
r=0
while [ $r -lt "$ROUNDS" ]; do
	for v in $(rotate $r plain nd ndqa); do
		case $v in plain) p=$pa ;; nd) p=$pn ;; ndqa) p=$pq ;; esac
		client c6 $v "$BB/bcli" pubsub 127.0.0.1 "$p" "$C6_N" "$OUT/c6-$v-$r.us"
	done
	r=$((r + 1))
done
stop "$sa" "$sn" "$sq"
for v in plain nd ndqa; do cat "$OUT"/c6-$v-*.us >"$OUT/c6-$v.us"; done

# ---- case 7: the two-write client of case 2 against the three cures for the server's
# delayed ACK: capped delayed ACK (TCP_DELACK_MAX_US, and TCP_RTO_MIN_US, which caps it to
# rto_min - 1 jiffy), set once on the listener; TCP_QUICKACK re-armed after every receive;
# and, without the library, the route attribute quickack 1 in a namespace of our own.  What
# counts for the route is the server's route back to the client: on loopback 127.0.0.1's own
# /32 in the local table (changing 127.0.0.0/8 does nothing). ----
C7_V="plain dm dmrto qa"
NS7=stb$$c7
if command -v ip >/dev/null && ns_make $NS7 &&
	ip -n $NS7 route change local 127.0.0.1 dev lo table local proto kernel scope host \
		src 127.0.0.1 quickack 1 2>/dev/null &&
	ip -n $NS7 route show table local 127.0.0.1 | grep -q 'quickack 1'; then
	C7_V="$C7_V rt"
	C7_RT=1
else
	C7_RT=0
fi
c7_env() {
	case $1 in
	plain | rt) echo "" ;;
	dm) echo "$SHIM SOCKTUNE_DELACK_MAX=5ms" ;;
	dmrto) echo "$SHIM SOCKTUNE_DELACK_MAX=5ms SOCKTUNE_RTO_MIN=5ms" ;;
	qa) echo "$SHIM SOCKTUNE_QUICKACK=1" ;;
	esac
}
c7_nsx() { [ "$1" = rt ] && echo "ip netns exec $NS7"; }
note "case 7: two-write client, delayed-ACK cures ($C7_V), $C7_N requests x $ROUNDS rounds$([ $C7_RT = 1 ] || echo '; no namespace: no route row')"
for v in $C7_V; do
	NSX=$(c7_nsx "$v")
	p=$(port)
	start "c7-$v" "$(c7_env "$v")" "$BB/bsrv" ka 127.0.0.1 "$p"
	eval "c7_port_$v=$p c7_srv_$v=$LAST"
	waitfor 127.0.0.1 "$p"
done
NSX=""
r=0
while [ $r -lt "$ROUNDS" ]; do
	# shellcheck disable=SC2086 # the variants are words
	for v in $(rotate "$r" $C7_V); do
		eval "p=\$c7_port_$v"
		NSX=$(c7_nsx "$v")
		client c7 "$v" "$BB/bcli" twowrite 127.0.0.1 "$p" "$C7_N" "$OUT/c7-$v-$r.us"
		NSX=""
	done
	r=$((r + 1))
done
for v in $C7_V; do
	eval "stop \$c7_srv_$v"
	cat "$OUT/c7-$v"-*.us >"$OUT/c7-$v.us"
done
# what the kernel kept of 5ms (rounded up to a jiffy), from the library's listen lines
C7_KEPT=$(sed -n 's/.* \(delack_max_us.effective=[^ ]*\).*/\1/p' "$OUT"/c7-dm.*.log 2>/dev/null | head -n 1)
C7_KEPT="$C7_KEPT $(sed -n 's/.* \(rto_min_us.effective=[^ ]*\).*/\1/p' "$OUT"/c7-dmrto.*.log 2>/dev/null | head -n 1)"

# Syscalls per request and setsockopt per receive: each variant's server under strace -f (every
# syscall), for two numbers of requests on one connection; the difference leaves out start-up,
# listen(), accept and the connection's set-up.  The server is stopped by its pid once the
# client has its last response: every receive that returned data has been followed by its
# re-arm by then.
# c7_count FILE all|setsockopt|recv: in strace -f -o output ("PID name(...) = R"), the
# syscalls, the setsockopt calls, or the read()s that returned data, up to the last response
# written: what follows (the read of the client's FIN, close, accept again) races with the
# kill and would count in one run and not in the other.
c7_count() {
	awk -v what="$2" '
		what == "all" && $2 ~ /^[a-z_0-9]+\(/ { n++ }
		what == "setsockopt" && $2 ~ /^setsockopt\(/ { n++ }
		what == "recv" && $2 ~ /^read\(/ && $NF ~ /^[1-9][0-9]*$/ { n++ }
		$2 ~ /^write\(/ && /HTTP\/1\.1 200/ { upto = n }
		END { print upto + 0 }' "$1"
}
if command -v strace >/dev/null; then
	note "case 7: syscalls per request (strace -f, $S7_N1 vs $S7_N2 requests)"
	for v in $C7_V; do
		for n in $S7_N1 $S7_N2; do
			NSX=$(c7_nsx "$v")
			p=$(port)
			# shellcheck disable=SC2086,SC2046
			$NSX strace -f -qq -o "$OUT/strace7-$v-$n" env SOCKTUNE_LOG_FILE="$OUT/strace7-$v.%p.log" \
				$(c7_env "$v") "$BB/bsrv" ka 127.0.0.1 "$p" >/dev/null 2>&1 &
			st_pid=$!
			PIDS="$PIDS $st_pid"
			waitfor 127.0.0.1 "$p"
			$NSX "$BB/bcli" twowrite 127.0.0.1 "$p" "$n" >>"$OUT/strace7-$v.client"
			# ip netns exec and env replace themselves: strace's child is the server
			for c in $(cat /proc/"$st_pid"/task/"$st_pid"/children 2>/dev/null); do kill "$c"; done
			wait "$st_pid"
			NSX=""
		done
		d=$((S7_N2 - S7_N1))
		a=$(c7_count "$OUT/strace7-$v-$S7_N1" all) b=$(c7_count "$OUT/strace7-$v-$S7_N2" all)
		rec "c7.sys_total.$v" "$(awk -v a="$a" -v b="$b" -v d=$d 'BEGIN { printf "%.2f", (b - a) / d }')"
		a=$(c7_count "$OUT/strace7-$v-$S7_N1" setsockopt) b=$(c7_count "$OUT/strace7-$v-$S7_N2" setsockopt)
		ra=$(c7_count "$OUT/strace7-$v-$S7_N1" recv) rb=$(c7_count "$OUT/strace7-$v-$S7_N2" recv)
		rec "c7.sys_setsockopt.$v" "$(awk -v a="$a" -v b="$b" -v d=$d 'BEGIN { printf "%.2f", (b - a) / d }')"
		rec "c7.recv.$v" "$(awk -v a="$ra" -v b="$rb" -v d=$d 'BEGIN { printf "%.2f", (b - a) / d }')"
		rec "c7.sys_per_recv.$v" "$(awk -v a="$a" -v b="$b" -v ra="$ra" -v rb="$rb" \
			'BEGIN { printf "%.2f", (rb > ra) ? (b - a) / (rb - ra) : 0 }')"
	done
else
	note "case 7: strace not installed: no syscall counts"
fi
[ $C7_RT = 1 ] && ip netns del $NS7 2>/dev/null

# ---- case 3: python http.server (backlog 5), 300 concurrent connects: BACKLOG unset / 4096 ----
# TcpExt counters are per network namespace: in a namespace of our own, no one else's
# traffic moves them.
NS3=stb$$c3
if ns_make $NS3; then
	NSX="ip netns exec $NS3"
	C3_WHERE="own netns"
else
	C3_WHERE="host netns: counters include other traffic"
fi
note "case 3: $C3_N-connect burst x $ROUNDS rounds ($C3_WHERE)"
pa=8001
pb=8002
[ -z "$NSX" ] && pa=$(port) && pb=$(port)
start c3-plain "" timeout $LIFE $PY -m http.server -b 127.0.0.1 -d "$OUT/www" "$pa"
sa=$LAST
start c3-st "$SHIM SOCKTUNE_BACKLOG=4096" timeout $LIFE $PY -m http.server -b 127.0.0.1 -d "$OUT/www" "$pb"
sb=$LAST
waitfor 127.0.0.1 "$pa"
waitfor 127.0.0.1 "$pb"
r=0
while [ $r -lt "$ROUNDS" ]; do
	for v in $(rotate $r plain st); do
		p=$pa
		[ $v = st ] && p=$pb
		before=$(netstat_tcpext ListenOverflows TCPSynRetrans)
		client c3 $v "$BB/bcli" burst 127.0.0.1 "$p" "$C3_N" "$OUT/c3-$v-$r.us"
		after=$(netstat_tcpext ListenOverflows TCPSynRetrans)
		set -- $before $after
		rec "c3.overflows.$v" $(($3 - $1))
		rec "c3.synretrans.$v" $(($4 - $2))
		sleep 0.3 # let the server's handler threads see the resets
	done
	r=$((r + 1))
done
stop "$sa" "$sb"
NSX=""
for v in plain st; do cat "$OUT"/c3-$v-*.us >"$OUT/c3-$v.us"; done

# ---- case 4: headers + 390 KB body in one send, server reads it after a delay: RCVBUF ----
# body_case TAG SERVER_NSX CLIENT_NSX ADDR
body_case() {
	tag=$1 snsx=$2 cnsx=$3 addr=$4
	NSX=$snsx
	pa=8011
	pb=8012
	[ -z "$snsx" ] && pa=$(port) && pb=$(port)
	start $tag-plain "" "$BB/bsrv" body "$addr" "$pa" $BODY_DELAY
	sa=$LAST
	start $tag-st "$SHIM SOCKTUNE_RCVBUF=16M" "$BB/bsrv" body "$addr" "$pb" $BODY_DELAY
	sb=$LAST
	NSX=$cnsx
	waitfor "$addr" "$pa"
	waitfor "$addr" "$pb"
	r=0
	while [ $r -lt "$C4_ROUNDS" ]; do
		for v in $(rotate $r plain st); do
			p=$pa
			[ $v = st ] && p=$pb
			client $tag $v "$BB/bcli" body "$addr" "$p" $BODY
		done
		r=$((r + 1))
	done
	NSX=""
	stop "$sa" "$sb"
}
note "case 4: $BODY-byte body, loopback, $C4_ROUNDS rounds"
body_case c4lo "" "" 127.0.0.1
NSA=stb$$a NSB=stb$$b
if command -v ip >/dev/null && ns_make $NSA && ns_make $NSB &&
	ip link add stb$$va netns $NSA type veth peer name stb$$vb netns $NSB 2>/dev/null &&
	ip -n $NSA addr add 10.77.0.1/24 dev stb$$va && ip -n $NSB addr add 10.77.0.2/24 dev stb$$vb &&
	ip -n $NSA link set stb$$va mtu 1500 up && ip -n $NSB link set stb$$vb mtu 1500 up; then
	note "case 4: veth (MTU 1500) between two namespaces, $C4_ROUNDS rounds"
	body_case c4veth "ip netns exec $NSA" "ip netns exec $NSB" 10.77.0.1
	C4_VETH=1
else
	note "case 4: no veth (network namespaces not permitted here): loopback only"
	C4_VETH=0
fi
ip netns del $NSA 2>/dev/null
ip netns del $NSB 2>/dev/null

# ---- case 5: overhead ----
# Listener-level policy (what the kernel copies to accepted sockets), and the same with
# QUICKACK, the one option that costs a syscall per connection and per receive.
POL="SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=4096"
note "case 5: accept+close rate, $CC_N connections x $CC_ROUNDS rounds"
pa=$(port)
start c5-plain "" "$TSRV" -m accept -s -b 1024 -n 100000 -t $LIFE -p "$pa"
sa=$LAST
pb=$(port)
start c5-st "$SHIM $POL" "$TSRV" -m accept -s -b 1024 -n 100000 -t $LIFE -p "$pb"
sb=$LAST
pq=$(port)
start c5-qa "$SHIM $POL SOCKTUNE_QUICKACK=1" "$TSRV" -m accept -s -b 1024 -n 100000 -t $LIFE -p "$pq"
sq=$LAST
# the same listener policy with SOCKTUNE_STATS: live counters and the queue sampled <= 10/s
ps=$(port)
start c5-ss "$SHIM $POL SOCKTUNE_STATS=$OUT/c5.stats" "$TSRV" -m accept -s -b 1024 -n 100000 -t $LIFE -p "$ps"
ss_=$LAST
for p in "$pa" "$pb" "$pq" "$ps"; do
	waitfor 127.0.0.1 "$p"
	"$BB/bcli" cc 127.0.0.1 "$p" 500 >/dev/null # warm up
done
# Short rounds, many of them, and the ratio taken within each round: the load of other
# jobs on a shared machine drifts over seconds, and both sides of a ratio see the same.
r=0
while [ $r -lt "$CC_ROUNDS" ]; do
	for v in $(rotate $r plain st qa ss); do
		case $v in plain) p=$pa s=$sa ;; st) p=$pb s=$sb ;; qa) p=$pq s=$sq ;; ss) p=$ps s=$ss_ ;; esac
		# The server's own CPU time (schedstat, ns) is far steadier than the wall rate.
		c0=$(cut -d' ' -f1 /proc/"$s"/schedstat)
		client c5 $v "$BB/bcli" cc 127.0.0.1 "$p" "$CC_N"
		c1=$(cut -d' ' -f1 /proc/"$s"/schedstat)
		rec "c5.cpu.$v" "$(awk -v a="$c0" -v b="$c1" -v n="$CC_N" 'BEGIN { printf("%.3f", (b - a) / n / 1000) }')"
		eval "rate_$v=\$(kv \"\$line\" rate)"
	done
	# shellcheck disable=SC2154
	for v in st qa ss; do
		eval "x=\$rate_$v"
		rec "c5.rate_ratio.$v" "$(awk -v a="$rate_plain" -v b="$x" 'BEGIN { printf("%.4f", (a > 0) ? b / a : 0) }')"
	done
	r=$((r + 1))
done
stop "$sa" "$sb" "$sq" "$ss_"

# The cgroup mode: the same loop with the kernel tuning each connection from a sock_ops
# program (socktune --cgroup --nodelay: nothing in the server's process), against a plain
# server, interleaved; the program's instruction count from the wrapper's read-back line.
note "case 5: cgroup mode, accept+close rate, $CC_N connections x $CC_ROUNDS rounds"
CG_SKIP=""
"$CLI" --cgroup --nodelay -- true 2>"$OUT/c5cg-probe.err" ||
	CG_SKIP=$(grep -v '^socktune pid=' "$OUT/c5cg-probe.err" | head -n 1 | cut -c1-160)
if [ -z "$CG_SKIP" ]; then
	pa=$(port)
	start c5cg-plain "" "$TSRV" -m accept -s -b 1024 -n 100000 -t $LIFE -p "$pa"
	sa=$LAST
	pc=$(port)
	start c5cg-cg "" env -u SOCKTUNE_LOG_FILE "$CLI" --cgroup --nodelay -- "$TSRV" -m accept -s -b 1024 -n 100000 -t $LIFE -p "$pc"
	wc_=$LAST
	waitfor 127.0.0.1 "$pa"
	waitfor 127.0.0.1 "$pc"
	sc=$(cut -d' ' -f1 /proc/"$wc_"/task/"$wc_"/children 2>/dev/null) # the server (the wrapper stays its parent; SOCKTUNE_LOG_FILE, the library's, is refused under --cgroup)
	insns=$(sed -n 's/.* event=cgroup .*insns=\([0-9]*\).*/\1/p' "$OUT/c5cg-cg.out" | head -n 1)
	[ -n "$insns" ] && rec c5cg.insns.cg "$insns"
	note "case 5: cgroup mode: the generated program is ${insns:-?} instructions"
	for p in "$pa" "$pc"; do "$BB/bcli" cc 127.0.0.1 "$p" 500 >/dev/null; done
	r=0
	while [ $r -lt "$CC_ROUNDS" ]; do
		for v in $(rotate $r plain cg); do
			case $v in plain) p=$pa s=$sa ;; cg) p=$pc s=$sc ;; esac
			c0=$(cut -d' ' -f1 /proc/"$s"/schedstat 2>/dev/null || echo 0)
			client c5cg $v "$BB/bcli" cc 127.0.0.1 "$p" "$CC_N"
			c1=$(cut -d' ' -f1 /proc/"$s"/schedstat 2>/dev/null || echo 0)
			rec "c5cg.cpu.$v" "$(awk -v a="$c0" -v b="$c1" -v n="$CC_N" 'BEGIN { printf("%.3f", (b - a) / n / 1000) }')"
			eval "rate_$v=\$(kv \"\$line\" rate)"
		done
		# shellcheck disable=SC2154
		rec c5cg.rate_ratio.cg "$(awk -v a="$rate_plain" -v b="$rate_cg" 'BEGIN { printf("%.4f", (a > 0) ? b / a : 0) }')"
		r=$((r + 1))
	done
	stop "$sa" "$wc_"
else
	note "case 5: cgroup mode skipped: $CG_SKIP"
fi

# Syscalls per accepted connection: strace -c -f over a server that exits after N accepts,
# for two N; the difference divided by the extra accepts leaves out start-up, listen() and
# the first connection (the one-time inheritance check).
# strace_calls FILE SYSCALL: the calls column of strace -c (0 if absent)
strace_calls() { awk -v s="$2" '$NF == s { print $4; f = 1 } END { if (!f) print 0 }' "$1"; }
if command -v strace >/dev/null; then
	note "case 5: syscalls per accept (strace -c -f, $SC_N1 vs $SC_N2 accepts)"
	for v in plain st qa; do
		case $v in plain) envs="" ;; st) envs="$SHIM $POL" ;; qa) envs="$SHIM $POL SOCKTUNE_QUICKACK=1" ;; esac
		for n in $SC_N1 $SC_N2; do
			p=$(port)
			# shellcheck disable=SC2086
			timeout 60 strace -f -c -o "$OUT/strace-$v-$n" env SOCKTUNE_LOG_FILE="$OUT/strace-$v.%p.log" $envs \
				"$TSRV" -m accept -s -b 1024 -n "$n" -t 60 -p "$p" >/dev/null 2>&1 &
			st_pid=$!
			PIDS="$PIDS $st_pid"
			waitfor 127.0.0.1 "$p"
			"$BB/bcli" cc 127.0.0.1 "$p" $((n - 1)) >/dev/null
			wait "$st_pid"
		done
		d=$((SC_N2 - SC_N1))
		for s in total setsockopt getsockopt; do
			a=$(strace_calls "$OUT/strace-$v-$SC_N1" $s)
			b=$(strace_calls "$OUT/strace-$v-$SC_N2" $s)
			rec "c5.sys_$s.$v" "$(awk -v a="$a" -v b="$b" -v d=$d 'BEGIN { printf "%.2f", (b - a) / d }')"
		done
	done
else
	note "case 5: strace not installed: no syscall counts"
fi

# Instructions per passed-through read(): callgrind, collecting only the read loop.
if command -v valgrind >/dev/null; then
	note "case 5: instructions per read() (callgrind, $CG_N calls)"
	for v in plain st; do
		envs=""
		[ $v = st ] && envs="LD_PRELOAD=$LIB SOCKTUNE_LOG=off $POL"
		# shellcheck disable=SC2086
		env $envs valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind-$v" \
			--toggle-collect=bench_loop "$BB/callread" "$CG_N" >/dev/null 2>"$OUT/callgrind-$v.err"
		ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$OUT/callgrind-$v")
		rec "c5.ir.$v" "$(awk -v i="${ir:-0}" -v n="$CG_N" 'BEGIN { printf "%.1f", i / n }')"
	done
	# The same for the accept hook: a server under callgrind for two numbers of accepts.
	note "case 5: instructions per accept+close (callgrind, $SC_N1 vs $SC_N2 accepts)"
	for v in plain st; do
		envs=""
		[ $v = st ] && envs="LD_PRELOAD=$LIB SOCKTUNE_LOG=off $POL"
		for n in $SC_N1 $SC_N2; do
			p=$(port)
			# shellcheck disable=SC2086
			timeout 60 env $envs valgrind --tool=callgrind --callgrind-out-file="$OUT/cgaccept-$v-$n" \
				"$TSRV" -m accept -s -b 1024 -n "$n" -t 60 -p "$p" >/dev/null 2>&1 &
			cg_pid=$!
			PIDS="$PIDS $cg_pid"
			waitfor 127.0.0.1 "$p"
			"$BB/bcli" cc 127.0.0.1 "$p" $((n - 1)) >/dev/null
			wait "$cg_pid"
		done
		a=$(awk '/^(summary|totals):/ { print $2; exit }' "$OUT/cgaccept-$v-$SC_N1")
		b=$(awk '/^(summary|totals):/ { print $2; exit }' "$OUT/cgaccept-$v-$SC_N2")
		rec "c5.iracc.$v" "$(awk -v a="${a:-0}" -v b="${b:-0}" -v d=$((SC_N2 - SC_N1)) 'BEGIN { printf("%.1f", (b - a) / d) }')"
	done
else
	note "case 5: valgrind not installed: no instruction counts"
fi

# hold_server NAME ENVS N: bsrv hold (with ENVS) for N connections on a new port $p, its pid
# $s, once it listens.  hold_clients NAME N SECONDS: bcli hold opens them (pid $c); returns
# once the server has them all (at most 30 s).
hold_server() {
	p=$(port)
	start "$1" "$2" "$BB/bsrv" hold 127.0.0.1 "$p" $(($3 + 1))
	s=$LAST
	waitfor 127.0.0.1 "$p"
}
hold_clients() {
	"$BB/bcli" hold 127.0.0.1 "$p" "$2" "$3" >"$OUT/$1.client" 2>&1 &
	c=$!
	PIDS="$PIDS $c"
	i=0
	while [ $i -lt 600 ] && ! grep -q accepted= "$OUT/$1.out"; do
		sleep 0.05
		i=$((i + 1))
	done
}

# RSS of a server holding HOLD_N open connections, with and without the library.
hard=$(ulimit -Hn)
[ "$hard" != unlimited ] && [ "$hard" -lt $((HOLD_N + 64)) ] && HOLD_N=$((hard - 64))
note "case 5: RSS at $HOLD_N open connections"
for v in plain st; do
	envs=""
	[ $v = st ] && envs="$SHIM $POL"
	hold_server c5-hold-$v "$envs" $HOLD_N
	rec "c5.rss0.$v" "$(awk '/^VmRSS:/ { print $2 }' /proc/"$s"/status)"
	hold_clients c5-hold-$v $HOLD_N 60
	rss=$(awk '/^VmRSS:/ { print $2 }' /proc/"$s"/status)
	grep -q accepted= "$OUT/c5-hold-$v.out" && rec "c5.rss.$v" "$rss"
	stop "$c" "$s"
done

# ---- case 8: what socktune doctor costs while it watches a server holding N connections:
# the mean time of one listener sample and of one connection sample (sock_diag dumps, as
# doctor measures them itself), and its CPU time per second of window ----
hard=$(ulimit -Hn)
for n in $C8_N; do
	[ "$hard" != unlimited ] && [ "$hard" -lt $((n + 64)) ] && { note "case 8: $n connections need more descriptors than $hard"; continue; }
	note "case 8: doctor with $n connections open, $C8_ROUNDS rounds of ${C8_S} s"
	hold_server c8-$n "" "$n"
	hold_clients c8-$n "$n" 120
	r=0
	while [ $r -lt "$C8_ROUNDS" ]; do
		"$CLI" doctor --seconds "$C8_S" --json ":$p" >"$OUT/c8-$n-$r.json" 2>>"$OUT/c8-$n.err"
		$PY -c 'import json, sys
d = json.load(open(sys.argv[1])); s = d["sampling"]
print(s["listener_sample_us"], s["connection_sample_us"], s["max_connections_in_sample"],
      s["cpu_ms"] / d["window_s"], len(d["findings"]))' "$OUT/c8-$n-$r.json" >"$OUT/c8-$n-$r.nums" || break
		set -- $(cat "$OUT/c8-$n-$r.nums")
		rec "c8.lsample.n$n" "$1"
		rec "c8.csample.n$n" "$2"
		rec "c8.conns.n$n" "$3"
		rec "c8.cpu.n$n" "$4"
		rec "c8.findings.n$n" "$5"
		r=$((r + 1))
	done
	stop "$c" "$s"
done

# median(key): the median of val[key, 1..cnt[key]], "" when there is none: an awk function
# put in front of the programs that summarize rounds (below, and paths.sh's)
AWK_MEDIAN='
function median(key,    n, i, j, t, a) {
	n = cnt[key]
	if (!n) return ""
	for (i = 1; i <= n; i++) a[i] = val[key, i]
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}'

# ---- case 9: what socktune watch costs at N connections (bench/watchcost.sh) ----
. "$ROOT/bench/watchcost.sh"
c9_run

# ---- the path cases: the same stalls across emulated paths (bench/paths.sh) ----
. "$ROOT/bench/paths.sh"
paths_run

# ---- the table ----
cat >"$OUT/rows" <<EOF
1 python keep-alive, NODELAY|p50 per request (ms)|c1.p50_us|plain|st|ms
1 python keep-alive, NODELAY|p99 per request (ms)|c1.p99_us|plain|st|ms
1 python keep-alive, NODELAY|requests > 20 ms (of $C1_N)|c1.over|plain|st|n
2 two-write client, QUICKACK|p50 per request (ms)|c2.p50_us|plain|st|ms
2 two-write client, QUICKACK|p99 per request (ms)|c2.p99_us|plain|st|ms
2 two-write client, QUICKACK|requests > 20 ms (of $C2_N)|c2.over|plain|st|n
2 two-write, plain = app sets QUICKACK once at accept|p50 per request (ms)|c2.p50_us|once|st|ms
2 two-write, plain = app sets QUICKACK once at accept|requests > 20 ms (of $C2_N)|c2.over|once|st|n
6 publish/ack, client Nagle on, NODELAY alone|p50 per exchange (ms)|c6.p50_us|plain|nd|ms
6 publish/ack, client Nagle on, NODELAY alone|exchanges > 20 ms (of $C6_N)|c6.over|plain|nd|n
6 publish/ack, client Nagle on, NODELAY+QUICKACK|p50 per exchange (ms)|c6.p50_us|plain|ndqa|ms
6 publish/ack, client Nagle on, NODELAY+QUICKACK|exchanges > 20 ms (of $C6_N)|c6.over|plain|ndqa|n
EOF
for v in dm dmrto qa $([ "$C7_RT" = 1 ] && echo rt); do
	case $v in
	dm) t="7 two-write, DELACK_MAX=5ms" ;;
	dmrto) t="7 two-write, DELACK_MAX=5ms RTO_MIN=5ms" ;;
	qa) t="7 two-write, QUICKACK=1" ;;
	rt) t="7 two-write, no library, route quickack 1 (netns)" ;;
	esac
	cat >>"$OUT/rows" <<EOF
$t|p50 per request (ms)|c7.p50_us|plain|$v|ms
$t|p99 per request (ms)|c7.p99_us|plain|$v|ms
$t|requests > 20 ms (of $C7_N)|c7.over|plain|$v|n
$t|syscalls per request (server, strace)|c7.sys_total|plain|$v|f
$t|receives that returned data per request (server, strace)|c7.recv|plain|$v|f
$t|setsockopt per receive that returned data|c7.sys_per_recv|plain|$v|f
EOF
done
cat >>"$OUT/rows" <<EOF
3 python burst, BACKLOG=4096|connect p50 (ms)|c3.p50_us|plain|st|ms
3 python burst, BACKLOG=4096|connect p99 (ms)|c3.p99_us|plain|st|ms
3 python burst, BACKLOG=4096|connects > 500 ms (of $C3_N)|c3.over|plain|st|n
3 python burst, BACKLOG=4096|TcpExt ListenOverflows delta|c3.overflows|plain|st|n
3 python burst, BACKLOG=4096|TcpExt TCPSynRetrans delta|c3.synretrans|plain|st|n
4 390 KB body, RCVBUF=16M, loopback|time to first response byte (ms)|c4lo.ttfb_us|plain|st|ms
4 390 KB body, RCVBUF=16M, loopback|client send() blocked (ms)|c4lo.send_us|plain|st|ms
4 390 KB body, RCVBUF=16M, loopback|tcpi_total_retrans|c4lo.total_retrans|plain|st|n
EOF
if [ "$C4_VETH" = 1 ]; then
	cat >>"$OUT/rows" <<EOF
4 390 KB body, RCVBUF=16M, veth MTU 1500|time to first response byte (ms)|c4veth.ttfb_us|plain|st|ms
4 390 KB body, RCVBUF=16M, veth MTU 1500|client send() blocked (ms)|c4veth.send_us|plain|st|ms
4 390 KB body, RCVBUF=16M, veth MTU 1500|tcpi_total_retrans|c4veth.total_retrans|plain|st|n
EOF
fi
cat >>"$OUT/rows" <<EOF
5 overhead, NODELAY+BACKLOG|accept+close loop (conn/s; ratio: median of per-round ratios)|c5.rate|plain|st|n|c5.rate_ratio
5 overhead, + QUICKACK|accept+close loop (conn/s; ratio: median of per-round ratios)|c5.rate|plain|qa|n|c5.rate_ratio
5 overhead, + SOCKTUNE_STATS|accept+close loop (conn/s; ratio: median of per-round ratios)|c5.rate|plain|ss|n|c5.rate_ratio
5 overhead, + SOCKTUNE_STATS|server CPU per accept+close (us, schedstat)|c5.cpu|plain|ss|f
5 overhead, NODELAY+BACKLOG|server CPU per accept+close (us, schedstat)|c5.cpu|plain|st|f
5 overhead, + QUICKACK|server CPU per accept+close (us, schedstat)|c5.cpu|plain|qa|f
5 overhead, NODELAY+BACKLOG|syscalls per accepted connection|c5.sys_total|plain|st|f
5 overhead, NODELAY+BACKLOG|setsockopt+getsockopt per accept|c5.sys_setsockopt+c5.sys_getsockopt|plain|st|f
5 overhead, + QUICKACK|syscalls per accepted connection|c5.sys_total|plain|qa|f
5 overhead, + QUICKACK|setsockopt+getsockopt per accept|c5.sys_setsockopt+c5.sys_getsockopt|plain|qa|f
5 overhead, NODELAY+BACKLOG|instructions per read() passed through (callgrind)|c5.ir|plain|st|f1
5 overhead, NODELAY+BACKLOG|instructions per accept+close, user space (callgrind)|c5.iracc|plain|st|f1
5 overhead, NODELAY+BACKLOG|server RSS, listening, 0 connections (KiB)|c5.rss0|plain|st|n
5 overhead, NODELAY+BACKLOG|server RSS at $HOLD_N connections (KiB)|c5.rss|plain|st|n
EOF
if [ -z "$CG_SKIP" ]; then
	cat >>"$OUT/rows" <<EOF
5 overhead, cgroup mode (--cgroup --nodelay)|accept+close loop (conn/s; ratio: median of per-round ratios)|c5cg.rate|plain|cg|n|c5cg.rate_ratio
5 overhead, cgroup mode (--cgroup --nodelay)|server CPU per accept+close (us, schedstat)|c5cg.cpu|plain|cg|f
5 overhead, cgroup mode (--cgroup --nodelay)|the generated sock_ops program (instructions)|c5cg.insns|plain|cg|n
EOF
else
	echo "5 overhead, cgroup mode (--cgroup --nodelay)|skipped: $(echo "$CG_SKIP" | tr '|' '/')|none|plain|cg|n" >>"$OUT/rows"
fi
# Median of the rounds for each key; a row's key may be a sum of keys ("a+b").
awk -F'|' "$AWK_MEDIAN"'
	function get(keys, v,    k, n, i, s, m) {
		n = split(keys, k, "+"); s = 0
		for (i = 1; i <= n; i++) { m = median(k[i] "." v); if (m == "") return ""; s += m }
		return s
	}
	function fmt(x, unit) {
		if (x == "") return "n/a"
		if (unit == "ms") return sprintf(x < 10000 ? "%.2f" : "%.1f", x / 1000)
		if (unit == "f") return sprintf("%.2f", x)
		if (unit == "f1") return sprintf("%.1f", x)
		return sprintf("%d", x + 0.5)
	}
	FILENAME == ARGV[1] { split($0, f, " "); cnt[f[1]]++; val[f[1], cnt[f[1]]] = f[2] + 0; next }
	{
		a = get($3, $4); b = get($3, $5)
		ratio = (a == "" || b == "" || a == 0) ? "-" : sprintf("%.3g", b / a)
		if ($7 != "") { m = median($7 "." $5); ratio = m == "" ? "-" : sprintf("%.3f", m) }
		printf "| %s | %s | %s | %s | %s |\n", $1, $2, fmt(a, $6), fmt(b, $6), ratio
	}' "$RES" "$OUT/rows" >"$OUT/table.body"
{
	echo "| case | metric | plain | socktune | ratio |"
	echo "|---|---|---|---|---|"
	cat "$OUT/table.body"
} >"$BB/table.md"

# case 8: one column per number of connections (no plain variant: doctor is not in the path)
c8_med() { awk -v k="$1" -v f="${2:-%.2f}" '$1 == k { v[++n] = $2 } END { if (!n) { print "n/a"; exit }
	for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
	printf f, n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }' "$RES"; }
{
	echo
	echo "| case 8: socktune doctor | $(for n in $C8_N; do printf '%s connections | ' "$n"; done)"
	echo "|---|$(for n in $C8_N; do printf -- '---|'; done)"
	echo "| listener sample (ms) | $(for n in $C8_N; do printf '%s | ' "$(c8_med c8.lsample.n$n | awk '{ printf ($1 == "n/a") ? $1 : "%.3f", $1 / 1000 }')"; done)"
	echo "| connection sample, with tcp_info (ms) | $(for n in $C8_N; do printf '%s | ' "$(c8_med c8.csample.n$n | awk '{ printf ($1 == "n/a") ? $1 : "%.2f", $1 / 1000 }')"; done)"
	echo "| connections in a sample | $(for n in $C8_N; do printf '%s | ' "$(c8_med c8.conns.n$n %d)"; done)"
	echo "| doctor CPU per second watched (ms) | $(for n in $C8_N; do printf '%s | ' "$(c8_med c8.cpu.n$n %.0f)"; done)"
	echo "| findings (idle connections: none expected) | $(for n in $C8_N; do printf '%s | ' "$(c8_med c8.findings.n$n %d)"; done)"
	c9_table
	paths_table
} >>"$BB/table.md"

"$BB/svgchart" "$BB/latency.svg" \
	"Every point is one request (cases 1, 2, 7) or one connect (case 3), all rounds of one run; $(uname -r), $(nproc) CPUs, $(date -u +%Y-%m-%d)." \
	"1  python http.server keep-alive;20000;plain,#d62728,$OUT/c1-plain.us;socktune NODELAY=1,#1f77b4,$OUT/c1-st.us" \
	"2  two-write client;20000;plain,#d62728,$OUT/c2-plain.us;app: QUICKACK once at accept,#ff7f0e,$OUT/c2-once.us;socktune QUICKACK=1,#1f77b4,$OUT/c2-st.us" \
	"7  two-write client: delayed-ACK cures;20000;plain,#d62728,$OUT/c7-plain.us;DELACK_MAX=5ms,#ff7f0e,$OUT/c7-dm.us;DELACK_MAX+RTO_MIN=5ms,#9467bd,$OUT/c7-dmrto.us;QUICKACK=1,#1f77b4,$OUT/c7-qa.us;route quickack 1 (no library),#2ca02c,$OUT/c7-rt.us" \
	"3  300 concurrent connects;500000;plain (backlog 5),#d62728,$OUT/c3-plain.us;socktune BACKLOG=4096,#1f77b4,$OUT/c3-st.us"

echo
cat "$BB/table.md"
echo
echo "medians of $ROUNDS rounds (case 4: $C4_ROUNDS, case 5 rate: $CC_ROUNDS); case 3 in $C3_WHERE; case 7 kernel kept:$C7_KEPT;" \
	"ratio = socktune / plain;" \
	"$(($(date +%s) - T0)) s; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "table: $BB/table.md  chart: $BB/latency.svg  raw: $OUT"
