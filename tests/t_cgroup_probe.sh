#!/bin/sh
# What socktune --cgroup reads back, and from where.  The probe connection is made in a
# network namespace of its own: with --ports PORT, clients connecting to the server's port
# while it starts are never taken (and reset) by the probe (five runs, ten early clients
# each: 0 reset; with the probe on the host's 127.0.0.1:PORT, 5 of 10 were in 2 runs of 3);
# where no namespace can be had (no CAP_SYS_ADMIN) the probe is left out with --ports and the
# program's own first connection read instead.  The program's own first accepted connection
# (and outgoing one, with --client) is read back once it is a tick old: one line source=app
# with what the kernel reports on it, level=warn with the cure when the program changed a
# value after accept.  --cwnd-clamp under BBR (which keeps ssthresh, the clamp's one read-out,
# at infinity): named not_readable, not refused; under cubic read back.  A v4-mapped --peer
# prefix is its IPv4 prefix (it matched no connection before), shorter than /96 refused.
. "$(dirname "$0")/lib.sh"

"$CLI" --cgroup --nodelay -- true 2>"$TMP/can.err"
rc=$?
if [ $rc -ne 0 ]; then
	skip cgroup_probe "this machine cannot run socktune --cgroup (status $rc): $(grep -v '^socktune pid=' "$TMP/can.err" | head -n 1)"
	exit 0
fi

# ---- early clients on the server's own port (--ports PORT): none reset by the probe
cat >"$TMP/early.py" <<'EOF'
import errno, socket, sys, time
port, n, flag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
held, refused, end = [], 0, time.monotonic() + 20
while len(held) < n and time.monotonic() < end:
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        held.append(s)
    except OSError:
        refused += 1
        s.close()
        if refused == 1:
            open(flag, "w").close()
resets = 0
for s in held:
    s.setblocking(False)
    try:
        s.recv(1)
    except BlockingIOError:
        continue
    except OSError as e:
        if e.errno == errno.ECONNRESET:
            resets += 1
print("held=%d resets=%d refused_before=%d" % (len(held), resets, refused), flush=True)
EOF
# early_run NAME WRAPPER_WORDS...: the client looping from before the wrapper starts, ten
# connections held; the wrapper's log in $TMP/NAME.err, the client's counts in $TMP/NAME.cl
early_run() {
	_n=$1
	shift
	_p=$(free_port)
	rm -f "$TMP/$_n.flag"
	$PY "$TMP/early.py" "$_p" 10 "$TMP/$_n.flag" >"$TMP/$_n.cl" 2>&1 &
	_cl=$!
	busywait 5000 test -e "$TMP/$_n.flag"
	"$@" --cgroup --ports "$_p" --nodelay -- "$BIN/tserver" -4 -p "$_p" -m hold -n 10 -t 20 \
		>"$TMP/$_n.out" 2>"$TMP/$_n.err" &
	_w=$!
	wait $_cl
	# (a reset client never reaches the server, which then waits for ten: ended here)
	busywait 3000 gone $_w || kill -TERM $_w 2>/dev/null
	wait $_w
}
resets=0 bad=""
for i in 1 2 3 4 5; do
	early_run early$i "$CLI"
	r=$(field "$(cat "$TMP/early$i.cl")" resets)
	resets=$((resets + ${r:-100}))
	file_has "$TMP/early$i.cl" 'held=10 .*refused_before=[1-9]' ||
		bad="$bad run $i: $(cat "$TMP/early$i.cl");"
	file_has "$TMP/early$i.err" 'level=info event=cgroup .*conn=accepted source=probe nodelay=1' ||
		bad="$bad run $i: no probe line: $(head -c 200 "$TMP/early$i.err");"
done
check cgroup_probe_early_clients_not_reset "$resets resets of 50 early clients (want 0);$bad" \
	"$resets" = 0 -a -z "$bad"
check cgroup_probe_early_clients_tuned "server ends with nodelay=1: $(grep -c '^CONN .* nodelay=1 ' "$TMP/early1.out") of $(grep -c '^CONN ' "$TMP/early1.out") (want 10)" \
	"$(grep -c '^CONN .* nodelay=1 ' "$TMP/early1.out")" = 10

# without CAP_SYS_ADMIN (no namespace of its own) and with --ports: no probe on the host's
# port of the scope; said, and the program's own first connection read instead
if command -v setpriv >/dev/null &&
	setpriv --bounding-set -sys_admin "$CLI" --cgroup --nodelay -- true 2>"$TMP/nocap.err"; then
	early_run nons setpriv --bounding-set -sys_admin "$CLI"
	r=$(field "$(cat "$TMP/nons.cl")" resets)
	check cgroup_probe_no_namespace_no_port_taken "client: $(cat "$TMP/nons.cl") (want resets=0); log: $(head -c 500 "$TMP/nons.err")" \
		"${r:-x}" = 0 -a -n "$(grep 'not read back from a probe: .*own first connection is read instead' "$TMP/nons.err")" -a \
		-z "$(grep 'source=probe' "$TMP/nons.err")"
else
	skip cgroup_probe_no_namespace_no_port_taken "socktune --cgroup does not run without CAP_SYS_ADMIN here: $(grep -v '^socktune pid=' "$TMP/nocap.err" | head -n 1)"
fi

# ---- the program's own first connection, read back from a copy of its descriptor
port=$(free_port)
"$CLI" --cgroup --nodelay --rcvbuf 256K -- "$BIN/tserver" -4 -p "$port" -m hold -n 2 -t 10 \
	>"$TMP/app.out" 2>"$TMP/app.err" &
w=$!
wait_file "$TMP/app.out" '^PORT' 10
# the first connection held while the wrapper ticks; the second ends the server
$PY -c 'import socket, sys, time
a = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
open(sys.argv[2], "w").close()
end = time.monotonic() + 10
while time.monotonic() < end and "source=app" not in open(sys.argv[3]).read():
    time.sleep(0.05)
b = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
time.sleep(0.2)' "$port" "$TMP/app.conn" "$TMP/app.err"
wait $w
rc=$?
line=$(grep 'event=cgroup .*source=app' "$TMP/app.err")
srv_nd=$(ts_val app CONN nodelay)
srv_rcv=$(ts_val app CONN rcvbuf)
check cgroup_app_readback "status $rc; app line: '$line' (want nodelay=1 rcvbuf.effective=$srv_rcv, as the server reads its connection: nodelay=$srv_nd rcvbuf=$srv_rcv); $(grep -c 'source=app' "$TMP/app.err") app lines (want 1)" \
	"$rc" = 0 -a -n "$line" -a "$(count_lines "$TMP/app.err" 'source=app')" = 1 -a \
	"$(field "$line" level)" = info -a "$(field "$line" conn)" = accepted -a \
	"$(field "$line" nodelay)" = "$srv_nd" -a "$srv_nd" = 1 -a \
	"$(field "$line" rcvbuf.effective)" = "$srv_rcv"

# a program that sets its own congestion control right after accept, in a buffer too short
# for the policy's name (which the cgroup's setsockopt hook cannot hold): the app line warns,
# naming the cure
cat >"$TMP/cc.py" <<'EOF'
import socket, sys
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(8)
print("PORT %d" % l.getsockname()[1], flush=True)
s, _ = l.accept()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"bbr")
print("CC %s" % s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode(), flush=True)
s.settimeout(10)
s.recv(1)
EOF
if grep -qw bbr /proc/sys/net/ipv4/tcp_available_congestion_control &&
	grep -qw cubic /proc/sys/net/ipv4/tcp_available_congestion_control; then
	start_server -t 10 cc -- "$CLI" --cgroup --congestion cubic -- $PY "$TMP/cc.py"
	$PY -c 'import socket, sys, time
a = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
end = time.monotonic() + 10
while time.monotonic() < end and "source=app" not in open(sys.argv[2]).read():
    time.sleep(0.05)
time.sleep(0.2)
a.close()' "$SRV_PORT" "$TMP/cc.err"
	wait "$SRV_PID"
	line=$(grep 'event=cgroup .*source=app' "$TMP/cc.err")
	check cgroup_app_readback_warns "server: $(grep '^CC' "$TMP/cc.out"); app line: '$line' (want level=warn congestion=bbr, the preload named)" \
		-n "$(grep '^CC bbr' "$TMP/cc.out")" -a "$(field "$line" level)" = warn -a \
		"$(field "$line" congestion)" = bbr -a -n "$(field "$line" note | grep 'preload')"
else
	skip cgroup_app_readback_warns "needs bbr and cubic"
fi

# --client: the program's first outgoing connection too
ts_start out -- -4 -m hold -n 2 -t 10
"$CLI" --cgroup --client --nodelay -- $PY -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
end = time.monotonic() + 10
while time.monotonic() < end and "conn=outgoing source=app" not in open(sys.argv[2]).read():
    time.sleep(0.05)' "$SRV_PORT" "$TMP/outc.err" 2>"$TMP/outc.err"
rc=$?
"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null 2>&1 # (the server's second)
wait_server
check cgroup_app_readback_outgoing "status $rc: $(grep 'source=app' "$TMP/outc.err" | head -c 300)" \
	"$rc" = 0 -a -n "$(grep 'level=info event=cgroup .*conn=outgoing source=app nodelay=1' "$TMP/outc.err")"

# ---- only connections the program tuned are read back: a server with two listeners, --ports
# on one; its first connection, on the other (out of scope, untuned), gives no app line; the
# in-scope one that follows does.  Marked by the sock_ops program (--nodelay: the setsockopt
# hook's socket storage), and without marks (--initcwnd alone: no hook, the scope applied by
# the wrapper).  With --client and no outgoing connection made, the wrapper stops looking
# after its 120 looks (30 s of ticks) and says so once.
cat >"$TMP/two.py" <<'EOF'
import socket, sys, time
a, b, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
ls = {}
for p in (a, b):
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", p)); l.listen(8); ls[p] = l
print("PORT %d" % a, flush=True)
held = []
for p in (b, a):
    s, _ = ls[p].accept()
    held.append(s)
    print("CONN port=%d nodelay=%d" % (p, s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)), flush=True)
time.sleep(secs)
EOF
# scope_run NAME SECS WRAPPER_ARGS...: the server on ports A (in --ports) and B; a client to
# B held, then (once the wrapper has looked twice) one to A, until the app line is said
scope_run() {
	_n=$1 _s=$2
	shift 2
	_a=$(free_port) _b=$(free_port)
	"$CLI" --cgroup --ports "$_a" "$@" -- $PY "$TMP/two.py" "$_a" "$_b" "$_s" \
		>"$TMP/$_n.out" 2>"$TMP/$_n.err" &
	SCOPE_W=$!
	wait_file "$TMP/$_n.out" '^PORT' 10
	$PY -c 'import socket, sys, time
b = socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=5)
time.sleep(1.5)
a = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
end = time.monotonic() + 10
while time.monotonic() < end and "source=app" not in open(sys.argv[3]).read():
    time.sleep(0.05)
time.sleep(0.5)' "$_a" "$_b" "$TMP/$_n.err" &
	SCOPE_C=$!
}
scope_run marked 60 --client --nodelay
wait $SCOPE_C
line=$(grep 'event=cgroup .*source=app' "$TMP/marked.err")
check cgroup_app_readback_scope_marked "server: $(grep '^CONN' "$TMP/marked.out" | tr '\n' ' ') (want port B nodelay=0 first, then A nodelay=1); app lines: $(grep -c 'source=app' "$TMP/marked.err") (want 1): '$line' (want level=info conn=accepted nodelay=1)" \
	"$(count_lines "$TMP/marked.err" 'source=app')" = 1 -a "$(field "$line" level)" = info -a \
	"$(field "$line" conn)" = accepted -a "$(field "$line" nodelay)" = 1 -a \
	"$(grep -c '^CONN .*nodelay=0' "$TMP/marked.out")" = 1
# the outgoing end never comes: given up within the bound (120 looks of 250 ms; 45 s allowed)
busywait 45000 file_has "$TMP/marked.err" 'own outgoing connection not read back'
check cgroup_app_readback_gives_up "log: $(grep -v 'socktune pid=' "$TMP/marked.err" | head -c 600)" \
	"$(count_lines "$TMP/marked.err" 'own outgoing connection not read back: none it tuned seen in 120 looks')" = 1 -a \
	-z "$(grep 'own accepted connection not read back' "$TMP/marked.err")"
kill -TERM $SCOPE_W 2>/dev/null
{ wait $SCOPE_W; } 2>/dev/null # (the server ends by the signal, said by the shell)

scope_run unmarked 3 --initcwnd 40
wait $SCOPE_C
wait $SCOPE_W
line=$(grep 'event=cgroup .*source=app' "$TMP/unmarked.err")
check cgroup_app_readback_scope_unmarked "app lines: $(grep -c 'source=app' "$TMP/unmarked.err") (want 1): '$line' (want level=info conn=accepted initcwnd=40)" \
	"$(count_lines "$TMP/unmarked.err" 'source=app')" = 1 -a "$(field "$line" level)" = info -a \
	"$(field "$line" conn)" = accepted -a "$(field "$line" initcwnd)" = 40

# ---- --cwnd-clamp: BBR keeps ssthresh at infinity (its one read-out): not readable, never
# refused; cubic keeps the clamp there: read back
if grep -qw bbr /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null ||
	modprobe tcp_bbr 2>/dev/null; then
	"$CLI" --cgroup --congestion bbr --cwnd-clamp 50 -- true 2>"$TMP/bbr.err"
	rc=$?
	check cgroup_cwnd_clamp_bbr_not_readable "status $rc (want 0): $(head -c 400 "$TMP/bbr.err")" \
		"$rc" = 0 -a -n "$(grep 'level=info event=cgroup .*not_readable=cwnd-clamp .*congestion=bbr' "$TMP/bbr.err")" -a \
		-z "$(grep 'cwnd_clamp=' "$TMP/bbr.err")"
else
	skip cgroup_cwnd_clamp_bbr_not_readable "no tcp_bbr here"
fi
if grep -qw cubic /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null; then
	"$CLI" --cgroup --congestion cubic --cwnd-clamp 50 -- true 2>"$TMP/cubic.err"
	rc=$?
	check cgroup_cwnd_clamp_cubic_read "status $rc (want 0): $(head -c 400 "$TMP/cubic.err")" \
		"$rc" = 0 -a -n "$(grep 'level=info event=cgroup .*congestion=cubic cwnd_clamp=50' "$TMP/cubic.err")"
else
	skip cgroup_cwnd_clamp_cubic_read "no cubic here"
fi

# ---- a v4-mapped --peer prefix: the IPv4 prefix it names (a 127.0.0.1 client is tuned)
port=$(free_port)
"$CLI" --cgroup --peer ::ffff:127.0.0.0/104 --nodelay -- "$BIN/tserver" -4 -p "$port" -m hold -n 1 -t 10 \
	>"$TMP/mapped.out" 2>"$TMP/mapped.err" &
w=$!
wait_file "$TMP/mapped.out" '^PORT' 10
"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$port" >/dev/null 2>&1
wait $w
check cgroup_peer_v4_mapped "server's connection nodelay=$(ts_val mapped CONN nodelay) (want 1); log: $(head -c 300 "$TMP/mapped.err")" \
	"$(ts_val mapped CONN nodelay)" = 1 -a -n "$(grep 'event=cgroup .*source=probe nodelay=1' "$TMP/mapped.err")"
"$CLI" --cgroup --peer ::ffff:0:0/95 --nodelay -- touch "$TMP/ran95" 2>"$TMP/p95.err"
rc=$?
check cgroup_peer_v4_mapped_short_refused "status $rc (want 2), ran: $([ -e "$TMP/ran95" ] && echo yes || echo no): $(cat "$TMP/p95.err")" \
	"$rc" = 2 -a ! -e "$TMP/ran95" -a -n "$(grep 'v4-mapped prefix shorter than /96' "$TMP/p95.err")"

# the lines are the library's format, every key in the one table
"$CLI" --schema >"$TMP/schema"
res=$($PY "$ROOT/tests/py/logfmt_check.py" "$TMP/schema" $(grep -ls 'event=cgroup' "$TMP"/*.err) 2>/dev/null)
check cgroup_probe_lines_in_schema "$res" "$res" = ok

# ---- attach --cgroup: no wrapper ticks there, so where the probe is left out (no namespace of
# its own, --ports) it does not claim the program's own connection is read
if command -v setpriv >/dev/null &&
	setpriv --bounding-set -sys_admin "$CLI" --cgroup --nodelay -- true 2>/dev/null; then
	cg_test_dir cgroup_attach_probe_words
	start_server -t 10 att -- sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -4 -m hold -n 1 -t 20' \
		sh "$CG" "$BIN/tserver"
	setpriv --bounding-set -sys_admin "$CLI" attach --cgroup --ports "$SRV_PORT" --nodelay ":$SRV_PORT" \
		>"$TMP/attw.out" 2>"$TMP/attw.err"
	rc=$?
	check cgroup_attach_probe_left_out_words "status $rc (want 0): $(head -c 500 "$TMP/attw.err")" \
		"$rc" = 0 -a -n "$(grep 'not read back from a probe: .*tuned all the same' "$TMP/attw.err")" -a \
		-z "$(grep 'read instead' "$TMP/attw.err")"
else
	skip cgroup_attach_probe_left_out_words "socktune --cgroup does not run without CAP_SYS_ADMIN here"
fi
