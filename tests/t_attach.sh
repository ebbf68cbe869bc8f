#!/bin/sh
# socktune attach: a server started with nothing preloaded is tuned live, from outside
# (pidfd_getfd).  Asserted on what the kernel reports: the backlog in force (ss Send-Q),
# keep-alive requests over 30 ms (Nagle x delayed ACK) on a new connection and on one that
# was open before the attach, options read back; and every refusal is one line and a status.
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip attach "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi

# python's http.server, HTTP/1.1 keep-alive, nothing preloaded
p=$(free_port)
$PY -m http.server -b 127.0.0.1 -p HTTP/1.1 "$p" >/dev/null 2>"$TMP/http.err" &
http=$!
if ! wait_listen "$p" 5; then
	fail attach_server "http.server did not start: $(cat "$TMP/http.err")"
	exit 0
fi
sendq() { ss -Hltn "sport = :$1" | awk '{ print $3; exit }'; }

# a connection opened before the attach, kept open across it: 10 GETs before, 10 after
$PY "$ROOT/tests/py/kaget.py" "$p" "$TMP/early.go" "$TMP/early.out" &
early=$!
busywait 10000 file_has "$TMP/early.out" '^before='

check attach_backlog_before "Send-Q $(sendq "$p"), want 5 (http.server's own)" "$(sendq "$p")" = 5
"$CLI" attach --nodelay --backlog 4096 --connections "$http" >"$TMP/attach.out" 2>"$TMP/attach.err"
rc=$?
# (its requests after: 2 of 10 over 30 ms allowed, a fifth: python at both ends, on a loaded
# machine; 8 or more of 10 while the connection keeps Nagle on)
cured_within attach_connection_fixed 2 kaget_again "$TMP/early.go" "$TMP/early.out"
fixed=$OVER fixed_tries=$TRIES
kaget_end "$TMP/early.go"
check attach_status "status $rc: $(cat "$TMP/attach.out" "$TMP/attach.err")" "$rc" = 0
check attach_backlog_live "Send-Q $(sendq "$p"), want 4096" "$(sendq "$p")" = 4096
line=$(grep "^socktune pid=$http level=info event=attach " "$TMP/attach.out")
check attach_line "line: $line" "$(field "$line" nodelay)" = 1 -a \
	"$(field "$line" backlog.before)" = 5 -a "$(field "$line" backlog.effective)" = 4096
wait $early
echo "# established connection, requests over 30 ms of 10: $(tr "\n" " " <"$TMP/early.out")"
check attach_connection_before "$(cat "$TMP/early.out")" "$(sed -n 's/^before=//p' "$TMP/early.out")" -ge 8
check attach_connection_fixed "established connection after --connections, tries $fixed_tries: $(cat "$TMP/early.out")" \
	"${fixed:-99}" -le 2
check attach_connection_line "no attach-connection line: $(cat "$TMP/attach.out")" \
	-n "$(grep "pid=$http level=info event=attach-connection .*nodelay=1" "$TMP/attach.out")"

# a new keep-alive connection after the attach: it inherits TCP_NODELAY from the listener
# (6 of 30 over 30 ms allowed, a fifth: a python server's answer, on a loaded machine)
new_conn() {
	res=$("$BIN/kaclient" http -n 30 -t 30 -T 10 127.0.0.1 "$p")
	OVER=$(kc_val "$res" over)
}
cured_within attach_new_connections 6 new_conn
check attach_new_connections "after the attach, tries $TRIES: $res" "$OVER" -le 6 -a \
	"$(kc_val "$res" done)" = 30
kill $http 2>/dev/null
wait $http 2>/dev/null

# :PORT with two prefork processes sharing one listener: both found, the listener tuned once
start_server pre -- "$BIN/mtserver" -4 -P 2 -t 1 -T 30 &&
	busywait 5000 file_has "$TMP/pre.out" '^READY' 2
"$CLI" attach --rcvbuf 256K ":$SRV_PORT" >"$TMP/pre.attach" 2>&1
rc=$?
check attach_port_status "status $rc: $(cat "$TMP/pre.attach")" "$rc" = 0
check attach_port_tuned_once "$(cat "$TMP/pre.attach")" \
	"$(count_lines "$TMP/pre.attach" '^socktune pid=[0-9]* level=info event=attach ')" = 1 -a \
	"$(count_lines "$TMP/pre.attach" '^socktune pid=[0-9]* level=info event=attach-shared ')" = 1
check attach_port_rcvbuf "$(cat "$TMP/pre.attach")" \
	-n "$(grep 'event=attach .*rcvbuf.want=262144 rcvbuf.effective=524288' "$TMP/pre.attach")"
kill "$SRV_PID" 2>/dev/null
wait "$SRV_PID" 2>/dev/null

# refusals: one line each, and the status says nothing was tuned
"$CLI" attach --nodelay 2147483646 2>"$TMP/nopid.err" >/dev/null
rc=$?
check attach_no_such_pid "status $rc: $(cat "$TMP/nopid.err")" "$rc" = 3 -a \
	"$(wc -l <"$TMP/nopid.err")" = 1 -a -n "$(grep 'No such process' "$TMP/nopid.err")"
"$CLI" attach --nodelay 1x 2>"$TMP/badpid.err" >/dev/null
check attach_bad_target "status $?: $(cat "$TMP/badpid.err")" "$?" = 2
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	# an unprivileged user against a root server
	$PY -c 'import socket,time; l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen(5); time.sleep(20)' &
	root=$!
	sleep 0.3
	setpriv --reuid 65534 --regid 65534 --clear-groups "$CLI" attach --nodelay "$root" \
		>/dev/null 2>"$TMP/root.err"
	rc=$?
	check attach_not_permitted "status $rc: $(cat "$TMP/root.err")" "$rc" = 3 -a \
		-n "$(grep 'not permitted\|Permission denied' "$TMP/root.err" | grep CAP_SYS_PTRACE)"
	kill $root 2>/dev/null
	# the same by its port: the listener is there, its holder is not readable: said, status 3
	# (before: no line at all, status 3)
	start_server rootport -- $PY -c 'import socket,time; l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen(5); print("PORT", l.getsockname()[1], flush=True); time.sleep(20)'
	setpriv --reuid 65534 --regid 65534 --clear-groups "$CLI" attach --via pidfd --nodelay \
		":$SRV_PORT" >/dev/null 2>"$TMP/rootport.err"
	rc=$?
	check attach_port_not_permitted "status $rc: $(cat "$TMP/rootport.err")" "$rc" = 3 -a \
		-n "$(grep "^socktune: attach :$SRV_PORT: 1 of 1 TCP listeners on port $SRV_PORT held by no process this user may see, not tuned: .*CAP_SYS_PTRACE" "$TMP/rootport.err")" -a \
		"$(sendq "$SRV_PORT")" = 5
	# (--via auto: the TCP iterator, which needs no holder, cannot be used either: both said)
	setpriv --reuid 65534 --regid 65534 --clear-groups "$CLI" attach --nodelay ":$SRV_PORT" \
		>/dev/null 2>"$TMP/rootport2.err"
	rc=$?
	check attach_port_neither_path "status $rc: $(cat "$TMP/rootport2.err")" "$rc" = 3 -a \
		-n "$(grep "^socktune: attach :$SRV_PORT: 127.0.0.1:$SRV_PORT: not tuned: a pidfd copy .*CAP_SYS_PTRACE.*; the TCP iterator cannot be used here: .*CAP_BPF" "$TMP/rootport2.err")" -a \
		"$(sendq "$SRV_PORT")" = 5
	kill "$SRV_PID" 2>/dev/null
	# a target of the same unprivileged user: reached when dumpable, refused when not (a
	# process that changed its uid is not dumpable until it says so: prctl both ways)
	for dumpable in 1 0; do
		setpriv --reuid 65534 --regid 65534 --clear-groups $PY -c '
import ctypes, socket, sys, time
ctypes.CDLL(None).prctl(4, int(sys.argv[1]), 0, 0, 0)   # PR_SET_DUMPABLE
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(5); time.sleep(20)' $dumpable &
		nd=$!
		# (until it listens: after its prctl, so an attach does not find it before either)
		busywait 10000 sh -c "ss -Hltnp | grep -q 'pid=$nd,'"
		setpriv --reuid 65534 --regid 65534 --clear-groups "$CLI" attach --nodelay "$nd" \
			>"$TMP/nd$dumpable.out" 2>"$TMP/nd$dumpable.err"
		rc=$?
		kill $nd 2>/dev/null
		if [ $dumpable = 1 ]; then
			check attach_same_user "status $rc: $(cat "$TMP/nd1.out" "$TMP/nd1.err")" "$rc" = 0 -a \
				-n "$(grep "pid=$nd level=info event=attach .*nodelay=1" "$TMP/nd1.out")"
		else
			check attach_not_dumpable "status $rc: $(cat "$TMP/nd0.err")" "$rc" = 3 -a \
				-n "$(grep 'not permitted\|Permission denied' "$TMP/nd0.err" | grep dumpable)"
		fi
	done
else
	skip attach_not_permitted "needs root (to run a server another user cannot reach)"
fi

# --follow: a listener the server opens after the attach began is tuned within a poll
p1=$(free_port)
p2=$(free_port)
$PY - "$p1" "$p2" "$TMP/open2" <<'PYEOF' &
import os, socket, sys, time
a = socket.socket(); a.setsockopt(1, 2, 1); a.bind(("127.0.0.1", int(sys.argv[1]))); a.listen(5)
for _ in range(200):                      # the second listener once asked (at most 10 s)
    if os.path.exists(sys.argv[3]): break
    time.sleep(0.05)
b = socket.socket(); b.setsockopt(1, 2, 1); b.bind(("127.0.0.1", int(sys.argv[2]))); b.listen(5)
time.sleep(3)
PYEOF
srv=$!
wait_listen "$p1" 5
"$CLI" attach --follow --backlog 4096 "$srv" >"$TMP/follow.out" 2>"$TMP/follow.err" &
fol=$!
busywait 5000 file_has "$TMP/follow.out" "addr=127.0.0.1:$p1 "
: >"$TMP/open2"
busywait 5000 file_has "$TMP/follow.out" "addr=127.0.0.1:$p2 "
check attach_follow_new_listener "$(cat "$TMP/follow.out" "$TMP/follow.err")" \
	-n "$(grep "pid=$srv level=info event=attach .*addr=127.0.0.1:$p2 .*backlog.effective=4096" "$TMP/follow.out")" \
	-a "$(sendq "$p2")" = 4096
wait $srv 2>/dev/null
busywait 5000 file_has "$TMP/follow.err" "attach $srv: exited"
kill $fol 2>/dev/null
wait $fol 2>/dev/null
check attach_follow_exit_once "$(cat "$TMP/follow.err")" "$(count_lines "$TMP/follow.err" "$srv")" = 1

# a target in its own network namespace, whose somaxconn is lower: the clamp names its value
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && setup_ns NS 2>/dev/null; then
	ip netns exec "$NS" sh -c 'echo 100 >/proc/sys/net/core/somaxconn'
	ip netns exec "$NS" $PY -c 'import socket,time; l=socket.socket(); l.bind(("127.0.0.1",8080)); l.listen(5); time.sleep(20)' &
	nsrv=$!
	busywait 5000 sh -c "ip netns exec $NS ss -Hltn 'sport = :8080' | grep -q ."
	"$CLI" attach --backlog 4096 "$nsrv" >"$TMP/ns.out" 2>"$TMP/ns.err"
	q=$(ip netns exec "$NS" ss -Hltn 'sport = :8080' | awk '{ print $3; exit }')
	check attach_netns_somaxconn "Send-Q $q; $(cat "$TMP/ns.out" "$TMP/ns.err")" "$q" = 100 -a \
		-n "$(grep "^socktune pid=$nsrv level=warn event=backlog-clamped fd=[0-9]* .*backlog.effective=100 limit=net.core.somaxconn limit_value=100 fix.0=\"nsenter --net=/proc/$nsrv/ns/net sysctl -w net.core.somaxconn=4096\"" "$TMP/ns.err")"
	kill $nsrv 2>/dev/null
	wait $nsrv 2>/dev/null
	cleanup_ns "$NS"
else
	skip attach_netns_somaxconn "needs root and ip netns"
fi

# a statically linked server (no preload reaches it): tuned by attach, and by the wrapper's
# --attach mode from its start; the accepted connection reports what the listener carried
if [ -x "$BIN/tserver-static" ] && ! ldd "$BIN/tserver-static" >/dev/null 2>&1; then
	start_server st -- "$BIN/tserver-static" -4 -n 1 -t 10
	"$CLI" attach --nodelay --backlog 4096 "$SRV_PID" >"$TMP/st.attach" 2>&1
	"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null
	wait_server
	check attach_static "CONN: $(grep '^CONN' "$TMP/st.out"); $(cat "$TMP/st.attach")" \
		"$(ts_val st CONN backlog)" = 4096 -a "$(ts_val st CONN nodelay)" = 1

	start_server sup -- "$CLI" --attach --nodelay --backlog 4096 -- "$BIN/tserver-static" -4 -n 1 -t 10
	busywait 5000 file_has "$TMP/sup.err" 'event=attach '
	"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null
	wait "$SRV_PID"
	rc=$?
	check attach_mode_static "status $rc, CONN: $(grep '^CONN' "$TMP/sup.out"); $(cat "$TMP/sup.err")" \
		"$rc" = 0 -a "$(ts_val sup CONN backlog)" = 4096 -a "$(ts_val sup CONN nodelay)" = 1
	# the wrapper forwards SIGTERM and dies as its program did
	start_server supterm -- "$CLI" --attach --nodelay -- "$BIN/tserver-static" -4 -n 5 -t 10
	busywait 5000 file_has "$TMP/supterm.err" 'event=attach '
	kill -TERM "$SRV_PID"
	wait "$SRV_PID"
	rc=$?
	check attach_mode_forwards_sigterm "status $rc (want 143: SIGTERM): $(cat "$TMP/supterm.err")" "$rc" = 143
else
	skip attach_static "no static tserver here"
fi

# a Go net/http server (Go makes its own system calls: no preload reaches it), built by make
# test-bins when go is installed (.ci/run installs Debian's golang-go): the listener's
# SO_RCVBUF and TCP_DELACK_MAX_US, set by attach, reach the connections it accepts afterwards
if command -v go >/dev/null; then
	if [ -x "$BIN/gohttp" ]; then
		start_server gohttp -- "$BIN/gohttp"
		"$CLI" attach --rcvbuf 256K --delack-max 5ms "$SRV_PID" >"$TMP/go.attach" 2>&1
		body=$(curl -s --max-time 5 "http://127.0.0.1:$SRV_PORT/")
		kill "$SRV_PID" 2>/dev/null
		wait "$SRV_PID" 2>/dev/null
		# what this kernel keeps for 5 ms (HZ=250: 8000); a kernel before 6.15 has none
		kept=$($PY -c 'import socket; s=socket.socket(); s.setsockopt(6,46,5000); print(s.getsockopt(6,46))' 2>/dev/null)
		check attach_go "accepted connection: $body; attach: $(cat "$TMP/go.attach")" \
			"$(field "$body" rcvbuf)" = 524288 -a "$(field "$body" delack_max_us)" = "${kept:-0}"
	else
		fail attach_go "go is installed, but make test-bins did not build $BIN/gohttp"
	fi
else
	skip attach_go "go not installed"
fi

# --dry-run: what would be applied is said, nothing changes
p=$(free_port)
$PY -c 'import socket,sys,time; l=socket.socket(); l.bind(("127.0.0.1",int(sys.argv[1]))); l.listen(5); time.sleep(10)' "$p" &
dry=$!
wait_listen "$p" 5
"$CLI" attach --dry-run --nodelay --backlog 4096 "$dry" >"$TMP/dry.out" 2>&1
l=$(grep '^socktune pid=[0-9]* level=info event=attach ' "$TMP/dry.out")
# effective: what the backlog would be (the library's dry run says the same); before: what it is
would=4096
[ "$(cat /proc/sys/net/core/somaxconn)" -lt 4096 ] && would=$(cat /proc/sys/net/core/somaxconn)
check attach_dry_run "Send-Q $(sendq "$p"); line: $l" "$(sendq "$p")" = 5 -a \
	"$(field "$l" backlog.want)" = 4096 -a "$(field "$l" backlog.effective)" = "$would" -a \
	"$(field "$l" backlog.before)" = 5
kill $dry 2>/dev/null
wait $dry 2>/dev/null || : # (killed: 143)

# the attacher's standard descriptors closed: its messages go nowhere, never into a copy of
# the target's sockets (a copy would otherwise take number 2)
$PY - "$TMP/pair.out" <<'PYEOF' &
import socket, sys, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
c = socket.create_connection(l.getsockname()); s, _ = l.accept(); l.close()
c.settimeout(3); s.settimeout(3)
time.sleep(1.5)                       # the attach runs meanwhile
got = b""
for x in (c, s):
    x.setblocking(False)
    try: got += x.recv(4096)
    except BlockingIOError: pass
open(sys.argv[1], "w").write("bytes=%d\n" % len(got))
PYEOF
pair=$!
sleep 0.5
(exec 0<&- 1>&- 2>&-; "$CLI" attach --connections --rcvbuf 64M "$pair")
wait $pair
check attach_closed_stdio "$(cat "$TMP/pair.out")" "$(sed -n 's/^bytes=//p' "$TMP/pair.out")" = 0

# a socket bound first and listening later is tuned when it listens (--attach, --follow),
# and a listener already tuned is not said again on every pass
p=$(free_port)
start_server late -- "$CLI" --attach --backlog 4096 -- $PY -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); time.sleep(0.3); s.listen(5)
print("PORT", sys.argv[1], flush=True); time.sleep(5)' "$p"
busywait 5000 file_has "$TMP/late.err" "addr=127.0.0.1:$p "
q=$(sendq "$p")
sleep 1 # (passes more: not one of them says the listener again)
kill "$SRV_PID"
wait "$SRV_PID"
check attach_mode_late_listen "Send-Q $q: $(cat "$TMP/late.err")" "$q" = 4096 -a \
	"$(count_lines "$TMP/late.err" "event=attach")" = 1
