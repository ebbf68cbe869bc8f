#!/bin/sh
# socktune check --route ADDR on a path's metrics.  A server's namespace behind veth, its
# routes back to three client addresses: .2 with initcwnd 20, initrwnd 30, congctl reno and
# rto_min 50ms; .3 with congctl lock reno and rto_min 150ms; .4 with none.  check's lines and
# JSON against ip's view of the same routes; check --cgroup's "instead" (who wins, the locks
# too) against the TCP_INFO of connections accepted from each address, by a plain server and
# by one under socktune --cgroup with the same policy; --peer's scope; the refusals.  The
# namespaces are the test's own, removed at the end.
. "$(dirname "$0")/lib.sh"

cap=$(($(printf '%d' "0x$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)") >> 12 & 1))
if [ "$cap" -ne 1 ] || ! command -v nsenter >/dev/null 2>&1; then
	skip route_path "needs CAP_NET_ADMIN and nsenter (ip route in a namespace of the test's own)"
	exit 0
fi
if ! setup_ns SRV CLT 2>"$TMP/ns.err"; then
	skip route_path "no network namespace: $(head -n 1 "$TMP/ns.err")"
	exit 0
fi
# check runs in the server's namespace through nsenter: ip netns exec mounts a sysfs of its
# own, which hides cgroup v2 from the cgroup mode
in_srv() { nsenter --net="/run/netns/$SRV" "$@"; }
V=stv$$
if ! ip link add "${V}s" netns "$SRV" type veth peer name "${V}c" netns "$CLT" 2>"$TMP/veth.err"; then
	skip route_path "no veth pair: $(head -n 1 "$TMP/veth.err")"
	exit 0
fi
ip -n "$SRV" addr add 198.18.0.1/24 dev "${V}s"
for a in 2 3 4; do ip -n "$CLT" addr add "198.18.0.$a/24" dev "${V}c"; done
ip -n "$SRV" link set "${V}s" up
ip -n "$CLT" link set "${V}c" up
# a closed connection's saved RTT would set the next one's first RTO: none saved here
ip netns exec "$SRV" sysctl -qw net.ipv4.tcp_no_metrics_save=1
# the program's congestion control: one other than the routes' reno, loaded here
CC=""
for c in cubic bbr; do
	grep -qw "$c" /proc/sys/net/ipv4/tcp_available_congestion_control && CC=$c && break
done
if [ -z "$CC" ] ||
	! ip -n "$SRV" route add 198.18.0.2/32 dev "${V}s" src 198.18.0.1 initcwnd 20 initrwnd 30 \
		congctl reno rto_min 50ms 2>"$TMP/route.err" ||
	! ip -n "$SRV" route add 198.18.0.3/32 dev "${V}s" src 198.18.0.1 congctl lock reno \
		rto_min 150ms 2>>"$TMP/route.err"; then
	skip route_path "routes with metrics not made (congestion controls: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control)): $(cat "$TMP/route.err")"
	exit 0
fi
ROUTES="--route 198.18.0.2 --route 198.18.0.3 --route 198.18.0.4"
POLICY="--initcwnd 32 --initrwnd 40 --congestion $CC --rto-min 100ms"

# ---- the routes as they are ----
# shellcheck disable=SC2086 # the option words
in_srv "$CLI" check $ROUTES >"$TMP/plain" 2>"$TMP/plain.err"
rc=$?
block() { sed -n "/^  $1: /,/^  198\\|^\$/p" "$TMP/$2"; } # ADDR FILE: that route's lines
block 198.18.0.2 plain >"$TMP/r2"
ns_cc=$(ip netns exec "$SRV" cat /proc/sys/net/ipv4/tcp_congestion_control)
ns_rto=$(ip netns exec "$SRV" cat /proc/sys/net/ipv4/tcp_rto_min_us 2>/dev/null || echo 200000)
check route_path_text "status $rc: $(cat "$TMP/r2" "$TMP/plain.err")" $rc -eq 0 -a \
	-n "$(grep -x '    initcwnd = 20 (kernel default 10)' "$TMP/r2")" -a \
	-n "$(grep '^    initrwnd = 30 (kernel default at most 65535 bytes' "$TMP/r2")" -a \
	-n "$(grep -x "    congctl = reno (kernel default $ns_cc)" "$TMP/r2")" -a \
	-n "$(grep -x "    rto_min = 50 ms, locked (kernel default $((ns_rto / 1000)) ms)" "$TMP/r2")"
block 198.18.0.4 plain >"$TMP/r4"
check route_path_unset "$(cat "$TMP/r4")" \
	-n "$(grep -x '    initcwnd = unset (kernel default 10)' "$TMP/r4")" -a \
	-n "$(grep '^    initrwnd = unset (kernel default at most 65535 bytes' "$TMP/r4")" -a \
	-n "$(grep -x "    congctl = unset (kernel default $ns_cc)" "$TMP/r4")" -a \
	-n "$(grep -x "    rto_min = unset (kernel default $((ns_rto / 1000)) ms)" "$TMP/r4")" -a \
	"$(grep -c -- '^      --cgroup' "$TMP/plain")" -eq 0

# JSON: the values ip reports for the same lookups (ip -j shows no lock: its text does)
# shellcheck disable=SC2086
in_srv "$CLI" check --json $ROUTES >"$TMP/plain.json" 2>&1
for a in 2 3 4; do
	ip -n "$SRV" -j route get fibmatch "198.18.0.$a" >"$TMP/ip$a.json"
	ip -n "$SRV" route get fibmatch "198.18.0.$a" >"$TMP/ip$a.txt"
done
res=$($PY - "$TMP" "$ns_cc" "$ns_rto" <<'EOF'
import json, sys
tmp, ns_cc, ns_rto = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = json.load(open(tmp + "/plain.json"))
bad = []
for i, a in enumerate((2, 3, 4)):
    r = d["routes"][i]
    ipm = (json.load(open("%s/ip%d.json" % (tmp, a)))[0].get("metrics") or [{}])[0]
    text = open("%s/ip%d.txt" % (tmp, a)).read()
    got = {"initcwnd": r["route_initcwnd"], "initrwnd": r["route_initrwnd"],
           "congestion": r["route_congctl"],
           "rto_min": None if r["route_rto_min_us"] is None else r["route_rto_min_us"] // 1000}
    want = {k: ipm.get(k) for k in got}
    if got != want:
        bad.append("198.18.0.%d: check %r, ip %r" % (a, got, want))
    locks = {"congctl": "congctl lock " in text, "rto_min": "rto_min lock " in text}
    mine = {"congctl": bool(r["route_congctl_locked"]), "rto_min": bool(r["route_rto_min_locked"])}
    if locks != mine:
        bad.append("198.18.0.%d locks: check %r, ip %r" % (a, mine, locks))
    if (r["kernel_initcwnd"], r["kernel_congctl"], r["kernel_rto_min_us"]) != (10, ns_cc, ns_rto):
        bad.append("198.18.0.%d kernel: %r" % (a, r))
    if any(r[k] is not None for k in r if k.startswith("cgroup_")):
        bad.append("198.18.0.%d: cgroup keys without --cgroup: %r" % (a, r))
print("; ".join(bad) or "ok")
EOF
)
check route_path_json_is_ips "$res" "$res" = ok
block 198.18.0.3 plain >"$TMP/r3"
check route_path_locks "$(cat "$TMP/r3")" \
	-n "$(grep -x "    congctl = reno, locked (kernel default $ns_cc)" "$TMP/r3")" -a \
	-n "$(grep -x "    rto_min = 150 ms, locked (kernel default $((ns_rto / 1000)) ms)" "$TMP/r3")"

# ---- check --cgroup: what the program sets instead, and what wins ----
# shellcheck disable=SC2086
in_srv "$CLI" check --cgroup $POLICY $ROUTES >"$TMP/cg" 2>"$TMP/cg.err"
rc=$?
block 198.18.0.2 cg >"$TMP/c2"
block 198.18.0.3 cg >"$TMP/c3"
check route_path_cgroup_text "status $rc: $(cat "$TMP/c2" "$TMP/c3" "$TMP/cg.err")" $rc -eq 0 -a \
	-n "$(grep '^      --cgroup sets 32 instead: ' "$TMP/c2")" -a \
	-n "$(grep '^      --cgroup sets 40 instead: ' "$TMP/c2")" -a \
	-n "$(grep "^      --cgroup sets $CC instead: " "$TMP/c2")" -a \
	-n "$(grep -x "      --cgroup would set 100 ms, but the route's lock wins: 50 ms stays (.*)" "$TMP/c2")" -a \
	-n "$(grep -x "      --cgroup would set $CC, but the route's lock wins: reno stays (.*EPERM.*)" "$TMP/c3")" -a \
	-n "$(grep -x "    (the --cgroup program tunes connections accepted on any port, any peer)" "$TMP/c3")"
# shellcheck disable=SC2086
in_srv "$CLI" check --json --cgroup $POLICY $ROUTES >"$TMP/cg.json" 2>&1
wins=$($PY -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join("%s:%s" % (r["addr"].split(".")[-1], "".join("1" if r["cgroup_%s_wins" % m] else "0"
      for m in ("initcwnd", "initrwnd", "congctl", "rto_min"))) for r in d["routes"]))' "$TMP/cg.json" 2>&1)
# initcwnd initrwnd congctl rto_min: .2's rto_min and .3's congctl and rto_min are the lock's
check route_path_cgroup_wins "got '$wins'" "$wins" = "2:1110 3:1100 4:1111"

# --peer: outside it, the program leaves the address alone; inside, as before
in_srv "$CLI" check --json --cgroup --peer 10.0.0.0/8 --initcwnd 32 --route 198.18.0.2 >"$TMP/out.json" 2>&1
in_srv "$CLI" check --cgroup --peer 10.0.0.0/8 --initcwnd 32 --route 198.18.0.2 >"$TMP/out" 2>&1
check route_path_peer_outside "$(json_get "$TMP/out.json" routes.0) $(grep -- '--cgroup' "$TMP/out")" \
	"$(json_get "$TMP/out.json" routes.0.cgroup_peer_match)" = False -a \
	"$(json_get "$TMP/out.json" routes.0.cgroup_initcwnd_wins)" = False -a \
	-n "$(grep -x '      --cgroup would set 32, but not for 198.18.0.2 (not in --peer 10.0.0.0/8): 20 stays' "$TMP/out")"
in_srv "$CLI" check --json --cgroup --peer 10.0.0.0/8 --peer 198.18.0.0/15 --ports 8000 \
	--initcwnd 32 --route 198.18.0.2 >"$TMP/in.json" 2>&1
check route_path_peer_inside "$(json_get "$TMP/in.json" routes.0)" \
	"$(json_get "$TMP/in.json" routes.0.cgroup_peer_match)" = True -a \
	"$(json_get "$TMP/in.json" routes.0.cgroup_initcwnd_wins)" = True -a \
	"$(json_get "$TMP/in.json" routes.0.cgroup_scope)" = \
	"connections accepted on ports 8000 (--ports), peers in 10.0.0.0/8, 198.18.0.0/15 (--peer)"
bad=""
for f in plain.json cg.json out.json in.json; do
	p=$(schema_problems "$TMP/$f")
	[ -n "$p" ] && bad="$bad $f: $p"
done
check route_path_schema "$bad" -z "$bad"

# ---- refusals: --peer and the cgroup mode's options need --cgroup; what it refuses, refused ----
"$CLI" check --peer 10.0.0.0/8 >/dev/null 2>"$TMP/r1"
r1=$?
"$CLI" check --initcwnd 32 >/dev/null 2>"$TMP/r2e"
r2=$?
"$CLI" check --cgroup --quickack >/dev/null 2>"$TMP/r3e"
r3=$?
check route_path_refusals "status $r1 $r2 $r3: $(cat "$TMP/r1" "$TMP/r2e" "$TMP/r3e")" \
	"$r1 $r2 $r3" = "2 2 2" -a -n "$(grep -F -- '--peer: only with --cgroup' "$TMP/r1")" -a \
	-n "$(grep -F 'socktune check --cgroup' "$TMP/r2e")" -a \
	-n "$(grep -F -- '--cgroup: --quickack: a sock_ops program cannot set TCP_QUICKACK' "$TMP/r3e")"

# ---- what the accepted connections got: TCP_INFO before the server sent anything, then the
# RTO after 30 one-byte round trips (a socket's rto_min reaches it through the RTT samples) ----
cat >"$TMP/srv.py" <<'EOF'
import json, socket, struct, sys
ls = socket.socket()
ls.bind((sys.argv[1], 0)); ls.listen(8); ls.settimeout(20)
print("PORT", ls.getsockname()[1], flush=True)
for _ in range(int(sys.argv[2])):
    c, peer = ls.accept()
    c.settimeout(5)
    ti = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 240)
    u = lambda b, off: struct.unpack_from("I", b, off)[0]
    got = {"peer": peer[0], "cwnd": u(ti, 80), "advmss": u(ti, 84),
           "rcv_wnd": u(ti, 232) if len(ti) >= 236 else None,
           "cc": c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode()}
    for _ in range(30):
        c.sendall(b"x"); c.recv(1)
    got["rto_us"] = u(c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 8)
    print(json.dumps(got), flush=True)
    c.close()
EOF
cat >"$TMP/cli.py" <<'EOF'
import socket, sys
for src in sys.argv[3:]:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5, source_address=(src, 0))
    for _ in range(30):
        s.recv(1); s.sendall(b"y")
    s.recv(1)
    s.close()
EOF
# serve NAME [WRAPPER...]: the server in the server's namespace, a connection from each client
# address; its JSON lines in $TMP/NAME.out
serve() {
	_n=$1
	shift
	SRV_WRAP="nsenter --net=/run/netns/$SRV" start_server -t 10 "$_n" -- "$@" $PY "$TMP/srv.py" 198.18.0.1 3 ||
		{ echo "$_n: no server: $(cat "$TMP/$_n.err")"; return 1; }
	ip netns exec "$CLT" $PY "$TMP/cli.py" 198.18.0.1 "$SRV_PORT" 198.18.0.2 198.18.0.3 198.18.0.4 \
		2>"$TMP/$_n.cli"
	wait_server
}
# matches CHECK_JSON NAME: each connection's values against what check said it gets
matches() {
	$PY - "$1" "$TMP/$2.out" <<'EOF'
import json, sys
routes = {r["addr"]: r for r in json.load(open(sys.argv[1]))["routes"]}
conns = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
bad = [] if len(conns) == 3 else ["%d connections" % len(conns)]
for c in conns:
    r = routes[c["peer"]]
    def gets(m, kernel):  # what check says a connection with addr gets
        if r["cgroup_%s_wins" % m]:
            return r["cgroup_" + m + ("_us" if m == "rto_min" else "")]
        route = r["route_" + m + ("_us" if m == "rto_min" else "")]
        counts = route is not None and (m != "rto_min" or r["route_rto_min_locked"])
        return route if counts else kernel
    cwnd, rwnd = gets("initcwnd", r["kernel_initcwnd"]), gets("initrwnd", None)
    cc, rto_min = gets("congctl", r["kernel_congctl"]), gets("rto_min", r["kernel_rto_min_us"])
    ok = (c["cwnd"] == cwnd and c["cc"] == cc and rto_min <= c["rto_us"] < rto_min + 30000 and
          (c["rcv_wnd"] == rwnd * c["advmss"] if rwnd else c["rcv_wnd"] <= r["kernel_initrwnd_bytes"]))
    if not ok:
        bad.append("%s: got %r, check says cwnd %s rwnd %s cc %s rto_min %s"
                   % (c["peer"], c, cwnd, rwnd, cc, rto_min))
print("; ".join(bad) or "ok")
EOF
}
if serve plain >"$TMP/serve.err"; then
	res=$(matches "$TMP/plain.json" plain)
else
	res=$(cat "$TMP/serve.err")
fi
check route_path_plain_measured "$res" "$res" = ok
"$CLI" --cgroup --initcwnd 40 -- true 2>"$TMP/probe.err"
rc=$?
if [ $rc -ne 0 ]; then
	skip route_path_cgroup_measured "this machine cannot run the cgroup mode (status $rc): $(grep -v '^socktune pid=' "$TMP/probe.err" | head -n 1)"
else
	# shellcheck disable=SC2086
	if serve cgmode "$CLI" --cgroup $POLICY -- >"$TMP/serve.err"; then
		res=$(matches "$TMP/cg.json" cgmode)
	else
		res=$(cat "$TMP/serve.err")
	fi
	check route_path_cgroup_measured "$res $(grep -v 'level=info' "$TMP/cgmode.err" | head -c 300)" "$res" = ok
fi

cleanup_ns "$SRV" "$CLT"
check route_path_ns_removed "namespaces left: $(ip netns list | grep -c -- "-$$-")" \
	"$(ip netns list | grep -c -- "-$$-")" -eq 0
