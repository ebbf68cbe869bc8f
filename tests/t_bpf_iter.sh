#!/bin/sh
# Options set on a running server's open connections without ptrace: a BPF iterator over the
# TCP sockets of a network namespace (cli/host/bpfiter.c, driven by tests/helpers/iterprobe),
# each socket picked by its sock_diag cookie.  A python server of another uid, made
# non-dumpable, has its established loopback connection given TCP_NODELAY 1, SO_RCVBUF and
# TCP_BPF_SNDCWND_CLAMP 20: read back by the server on its own socket (getsockopt, TCP_INFO's
# ssthresh, which the clamp sets too), by ss, and from the iterator's own record.  The same
# server's other connection, the client's end, a neighbour server's connection and a socket
# in another network namespace keep theirs; the other namespace's socket is reached only by
# an iterator made there.  Options the kernel refuses are said one by one, the others
# applied.  After every call no program, map or link of it is left in the kernel.  IPv4 and
# IPv6; then the cost of one call on a namespace of 1,001 sockets (printed, not asserted).
. "$(dirname "$0")/lib.sh"

IP=$BIN/iterprobe
PAIR="$ROOT/tests/py/iterpair.py"
needs_iterator bpf_iter setpriv ip

# line FILE PATTERN: the first line of FILE matching PATTERN
line() { grep -m 1 -- "$2" "$1"; }
# json KEY: KEY's value in the JSON object on stdin
json() { $PY -c 'import json,sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"; }
# opts: the options of the JSON object on stdin (not cwnd, which moves by itself)
opts() {
	$PY -c 'import json,sys; d=json.loads(sys.stdin.read()); print(*("%s=%s" % (k, d[k]) for k in ("nodelay", "rcvbuf", "ssthresh", "priority")))'
}
# end DIR ROUND K [client]: connection K's server end (client: its client end) in ROUND
end() {
	if [ "${4:-}" = client ]; then grep -m 1 "^$2 $3 client " "$1/ask.out" | cut -d' ' -f4-
	else grep -m 1 "^$2 $3 {" "$1/ask.out" | cut -d' ' -f3-; fi
}
# round DIR R: the asking client's round R, its answers within 20 s
round() {
	: >"$1/go.$2"
	wait_file "$1/ask.out" "^DONE $2\$" 20
}
# no_leftovers NAME FILE: the call's program, map and link gone by their ids, and nothing
# of its name left
no_leftovers() {
	check "$1" "$(line "$2" '^left') $(line "$2" '^error')" \
		"$(line "$2" '^left' | cut -d' ' -f2-5)" = "prog=0 map=0 link=0 named=0"
}
# ask_start DIR FAMILY [WRAP...]: a client that holds connections to the ports in $ASK_PORTS
# and answers rounds (tests/py/iterpair.py ask); sets LPORTS, its local ports in order
ask_start() {
	_dir=$1 _fam=$2
	shift 2
	mkdir -p "$_dir"
	"$@" $PY "$PAIR" ask --family "$_fam" --dir "$_dir" $ASK_PORTS >"$_dir/ask.out" 2>"$_dir/ask.err" &
	wait_file "$_dir/ask.out" '^READY' 10 || return 1
	LPORTS=$(line "$_dir/ask.out" '^READY' | cut -d' ' -f2-)
}

# ---- a socket in another network namespace: the iterator of this one must not see it ----
if setup_ns NS; then
	NP=$(free_port)
	SRV_WRAP="ip netns exec $NS" start_server nssrv -- $AS_NOBODY $PY "$PAIR" serve --port "$NP" --undumpable
	ASK_PORTS=$NP
	if ask_start "$TMP/ns" 4 ip netns exec "$NS" && round "$TMP/ns" 1; then
		NSL=$LPORTS
		NSC=$(ip netns exec "$NS" "$IP" cookies "$NP" "$NSL" | awk '{ print $1; exit }')
	fi
	check netns_socket_found "no cookie for the namespace's connection: $(cat "$TMP/nssrv.err" "$TMP/ns/ask.err")" \
		-n "${NSC:-}"
else
	fail netns_made "ip netns add failed"
fi

for FAM in 4 6; do
	D=$TMP/f$FAM
	mkdir -p "$D"
	P1=$(free_port) P2=$(free_port)
	if ! start_server srv$FAM -- $AS_NOBODY $PY "$PAIR" serve --family "$FAM" --port "$P1" --undumpable ||
		! start_server nbr$FAM -- $AS_NOBODY $PY "$PAIR" serve --family "$FAM" --port "$P2" --undumpable; then
		fail "ip${FAM}_servers" "$(cat "$TMP/srv$FAM.err" "$TMP/nbr$FAM.err" 2>/dev/null)"
		continue
	fi
	check "ip${FAM}_server_undumpable" "$(cat "$TMP/srv$FAM.out")" \
		"$(line "$TMP/srv$FAM.out" PORT | cut -d' ' -f3-)" = "uid 65534 dumpable 0"
	# connection 0: the one tuned; 1: the same server's other; 2: the neighbour's
	ASK_PORTS="$P1 $P1 $P2"
	if ! ask_start "$D" "$FAM" || ! round "$D" 1; then
		fail "ip${FAM}_client" "$(cat "$D/ask.err")"
		continue
	fi
	set -- $LPORTS
	L0=$1 L1=$2 L2=$3
	C0=$("$IP" cookies "$P1" "$L0" | awk '$2 == 1 { print $1; exit }')
	C0C=$("$IP" cookies "$L0" "$P1" | awk '$2 == 1 { print $1; exit }')
	check "ip${FAM}_cookie" "no cookie for port $P1 <- $L0: $("$IP" cookies "$P1")" -n "$C0"

	# the call: the server's end of connection 0, and the other namespace's socket, whose
	# cookie this namespace's iterator never meets
	"$IP" set -r "$C0" TCP_NODELAY=1,SO_RCVBUF=65536,TCP_BPF_SNDCWND_CLAMP=20 \
		${NSC:+"$NSC" TCP_NODELAY=1} >"$D/set.out" 2>&1
	check "ip${FAM}_record_nodelay" "$(cat "$D/set.out")" \
		"$(line "$D/set.out" "^opt $C0 TCP_NODELAY ")" = "opt $C0 TCP_NODELAY set=ok read=ok value=1"
	# SO_RCVBUF reads back doubled (the kernel's bookkeeping share)
	check "ip${FAM}_record_rcvbuf" "$(cat "$D/set.out")" \
		"$(line "$D/set.out" "^opt $C0 SO_RCVBUF ")" = "opt $C0 SO_RCVBUF set=ok read=ok value=131072"
	# applied; bpf_getsockopt has no read-back for the clamp
	check "ip${FAM}_record_clamp" "$(cat "$D/set.out")" \
		"$(line "$D/set.out" "^opt $C0 TCP_BPF_SNDCWND_CLAMP ")" = "opt $C0 TCP_BPF_SNDCWND_CLAMP set=ok read=EINVAL value=0"
	[ -z "${NSC:-}" ] || check "ip${FAM}_other_netns_not_visited" "$(cat "$D/set.out")" \
		"$(line "$D/set.out" "^sock $NSC ")" = "sock $NSC visited=0"
	no_leftovers "ip${FAM}_nothing_left" "$D/set.out"

	round "$D" 2
	before=$(end "$D" 1 0) after=$(end "$D" 2 0)
	check "ip${FAM}_server_reads_nodelay" "before $before after $after" \
		"$(echo "$before" | json nodelay)/$(echo "$after" | json nodelay)" = 0/1
	check "ip${FAM}_server_reads_rcvbuf" "before $before after $after" \
		"$(echo "$after" | json rcvbuf)" = 131072
	check "ip${FAM}_server_reads_ssthresh" "before $before after $after" \
		"$(echo "$after" | json ssthresh)" = 20
	ssline=$(ss -Htnim "( sport = :$P1 and dport = :$L0 )")
	check "ip${FAM}_ss_shows" "$ssline" \
		"$(echo "$ssline" | grep -c 'ssthresh:20 ')$(echo "$ssline" | grep -c 'rb131072,')" = 11
	# the untouched: the same server's other connection, the neighbour's, the client's end
	for k in 1 2; do
		check "ip${FAM}_untouched_$k" "before $(end "$D" 1 $k) after $(end "$D" 2 $k)" \
			"$(end "$D" 1 $k | opts)" = "$(end "$D" 2 $k | opts)"
	done
	check "ip${FAM}_untouched_client_end" "before $(end "$D" 1 0 client) after $(end "$D" 2 0 client)" \
		"$(end "$D" 1 0 client | opts)" = "$(end "$D" 2 0 client | opts)"
	check "ip${FAM}_untouched_nodelay" "$(end "$D" 2 1) $(end "$D" 2 2) $(end "$D" 2 0 client)" \
		"$(end "$D" 2 1 | json nodelay)$(end "$D" 2 2 | json nodelay)$(end "$D" 2 0 client | json nodelay)" = 000

	# refused ones said one by one, the others applied: an option the kernel does not know,
	# TCP_QUICKACK (not taken by bpf_setsockopt), TCP_BPF_IW once the connection has sent
	# data (it answered round 1 and 2)
	"$IP" set -r "$C0" 6:9999=1,TCP_QUICKACK=1,TCP_BPF_IW=20,SO_PRIORITY=5 >"$D/bad.out" 2>&1
	check "ip${FAM}_refused_unknown" "$(cat "$D/bad.out")" \
		"$(line "$D/bad.out" "^opt $C0 6:9999 " | cut -d' ' -f4)" = set=EINVAL
	check "ip${FAM}_refused_quickack" "$(cat "$D/bad.out")" \
		"$(line "$D/bad.out" "^opt $C0 TCP_QUICKACK " | cut -d' ' -f4)" = set=EINVAL
	check "ip${FAM}_refused_iw_after_data" "$(cat "$D/bad.out")" \
		"$(line "$D/bad.out" "^opt $C0 TCP_BPF_IW " | cut -d' ' -f4)" = set=EINVAL
	check "ip${FAM}_others_applied" "$(cat "$D/bad.out")" \
		"$(line "$D/bad.out" "^opt $C0 SO_PRIORITY ")" = "opt $C0 SO_PRIORITY set=ok read=ok value=5"
	no_leftovers "ip${FAM}_nothing_left_refused" "$D/bad.out"
	round "$D" 3
	check "ip${FAM}_server_reads_priority" "$(end "$D" 3 0)" "$(end "$D" 3 0 | json priority)" = 5
	check "ip${FAM}_priority_untouched" "$(end "$D" 3 1)" "$(end "$D" 3 1 | json priority)" = 0
done

# ---- the other namespace's socket, by an iterator made there ----
if [ -n "${NSC:-}" ]; then
	"$IP" set -n "/run/netns/$NS" -r "$NSC" TCP_NODELAY=1 >"$TMP/ns/set.out" 2>&1
	check netns_record "$(cat "$TMP/ns/set.out")" \
		"$(line "$TMP/ns/set.out" "^opt $NSC TCP_NODELAY ")" = "opt $NSC TCP_NODELAY set=ok read=ok value=1"
	no_leftovers netns_nothing_left "$TMP/ns/set.out"
	round "$TMP/ns" 2
	check netns_server_reads_nodelay "$(end "$TMP/ns" 1 0) -> $(end "$TMP/ns" 2 0)" \
		"$(end "$TMP/ns" 1 0 | json nodelay)/$(end "$TMP/ns" 2 0 | json nodelay)" = 0/1
fi

# ---- the cost: one call on a namespace of 1,001 sockets (a listener, 500 connections) ----
if setup_ns NB; then
	ip netns exec "$NB" "$IP" bench 500 5 >"$TMP/bench.out" 2>&1
	sed 's/^/  /' "$TMP/bench.out"
	check cost_all_applied "$(cat "$TMP/bench.out")" \
		"$(grep -c '^bench sockets=1001 cookies=1001 .* applied=1001$' "$TMP/bench.out")" = 1
fi

# ---- refused, each with its reason, nothing left behind ----
# a kernel before 6.4 (uname as a 2.6 kernel: setarch's UNAME26 personality)
if command -v setarch >/dev/null; then
	why=$(setarch --uname-2.6 "$IP" probe)
	check refused_old_kernel "$why" "$(echo "$why" | grep -c 'from Linux 6.4')" = 1
fi
# no BTF, and BTF without the iterator (a tmpfs over /sys/kernel/btf in a mount namespace)
if command -v unshare >/dev/null; then
	why=$(unshare -m --propagation private sh -c 'mount -t tmpfs none /sys/kernel/btf && "$1" probe' - "$IP" 2>&1)
	check refused_no_btf "$why" "$(echo "$why" | grep -c '^there is no /sys/kernel/btf/vmlinux')" = 1
	# BTF of one type, INT "int": valid, and no bpf_iter_tcp in it
	$PY -c 'import struct,sys; t=struct.pack("<III", 1, 1 << 24, 4) + struct.pack("<I", 32); s=b"\0int\0"
sys.stdout.buffer.write(struct.pack("<HBBIIIII", 0xeb9f, 1, 0, 24, 0, len(t), len(t), len(s)) + t + s)' >"$TMP/int.btf"
	why=$(unshare -m --propagation private sh -c 'mount -t tmpfs none /sys/kernel/btf && cp "$2" /sys/kernel/btf/vmlinux && "$1" probe' - "$IP" "$TMP/int.btf" 2>&1)
	check refused_no_iterator "$why" "$(echo "$why" | grep -c 'has no bpf_iter_tcp')" = 1
fi
# no capability: the probe says which; a call made anyway fails at its first bpf(2) call
why=$($AS_NOBODY "$IP" probe)
check refused_no_capability "$why" "$(echo "$why" | grep -c 'needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN')" = 1
$AS_NOBODY "$IP" set 5 TCP_NODELAY=1 >"$TMP/nocap.out" 2>&1
check refused_no_capability_call "$(cat "$TMP/nocap.out")" \
	"$(grep -c "^error making the iterator's map of 1 sockets: Operation not permitted" "$TMP/nocap.out")" = 1
# a namespace that cannot be entered: after the program was loaded and linked
"$IP" set -n /dev/null 5 TCP_NODELAY=1 >"$TMP/nons.out" 2>&1
check refused_netns "$(cat "$TMP/nons.out")" \
	"$(grep -c '^error entering the network namespace: Invalid argument' "$TMP/nons.out")" = 1
no_leftovers refused_netns_nothing_left "$TMP/nons.out"
# more distinct options (level, name, value) than the program's record holds, one on each
# of 33 sockets: found after the map was made
many=$(i=1; while [ $i -le 33 ]; do printf '%d SO_PRIORITY=%d ' $((i + 4)) $i; i=$((i + 1)); done)
# shellcheck disable=SC2086 # the words are the arguments
"$IP" set $many >"$TMP/many.out" 2>&1
check refused_too_many "$(cat "$TMP/many.out")" \
	"$(grep -c '^error more than 32 distinct options' "$TMP/many.out")" = 1
no_leftovers refused_too_many_nothing_left "$TMP/many.out"
