#!/bin/sh
# socktune watch's findings under a steady fault do not flap: a server that accepts slowly
# (backlog 5) under a client loop bursting 150 connects every ~1.5 s for ~14 s (bounded:
# 9 bursts), judged over 1 s windows, some of which see no drop: accept-queue-overflow is
# raised once and stays raised while the fault goes on (it clears only after 6 quiet windows
# in a row), and no window of it is called earlier-overflow (drops of now).
. "$(dirname "$0")/lib.sh"

if ! command -v curl >/dev/null; then
	skip watch_flap "no curl"
	exit 0
fi
[ -x "$BIN/kaclient" ] || { fail watch_flap "$BIN/kaclient not built (make test-bins)"; exit 0; }

P=$(free_port)
M=$(free_port)
while [ "$M" = "$P" ]; do M=$(free_port); done
# a server that takes one connection every 50 ms and closes it: the queue drains between
# bursts, so windows without a burst see no drop
if ! start_server -l "$P" srv -- "$PY" -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(5)
end = time.time() + 90
while time.time() < end:
    c, _ = s.accept(); c.close(); time.sleep(0.05)' "$P"; then
	fail watch_flap.server "the server did not start: $(cat "$TMP/srv.err")"
	exit 0
fi
"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 ":$P" \
	>"$TMP/watch.out" 2>"$TMP/watch.err" &
busywait 10000 sh -c "curl -sf -m 1 http://127.0.0.1:$M/metrics | grep -q '^socktune_listener_up{.*port=\"$P\".*} 1'"

i=0
while [ $i -lt 9 ]; do
	"$BIN/kaclient" burst -n 150 -T 1 127.0.0.1 "$P" >>"$TMP/burst.out" 2>&1
	sleep 0.5
	i=$((i + 1))
done
# the fault is over: what watch said during it
cp "$TMP/watch.err" "$TMP/during.err"
raised=$(count_lines "$TMP/during.err" "event=finding .*kind=accept-queue-overflow .*port=$P ")
cleared=$(count_lines "$TMP/during.err" "event=finding-cleared .*kind=accept-queue-overflow .*port=$P ")
earlier=$(count_lines "$TMP/during.err" "event=finding .*kind=earlier-overflow .*port=$P ")
echo "# during the fault: raised $raised, cleared $cleared, earlier-overflow $earlier; drops $(curl -sf -m 2 "http://127.0.0.1:$M/metrics" | grep "^socktune_listener_drops_total{.*port=\"$P\"" | awk '{ print $NF }')"
check watch_flap.raised_once "raised $raised times: $(grep "port=$P " "$TMP/during.err" | cut -c 1-160)" "$raised" -eq 1
check watch_flap.held "cleared $cleared times during the fault: $(grep "port=$P " "$TMP/during.err" | cut -c 1-160)" "$cleared" -eq 0
check watch_flap.no_earlier "earlier-overflow $earlier times during a live fault" "$earlier" -eq 0
# and it clears once the fault is gone: 6 quiet windows (a tail of gone clients may hold it
# a little longer: at most 63 s, the kernel's SYN-ACK retries)
busywait 80000 file_has "$TMP/watch.err" "event=finding-cleared .*kind=accept-queue-overflow .*port=$P "
check watch_flap.clears_after "no clear after the fault: $(tail -n 2 "$TMP/watch.err" | cut -c 1-200)" \
	"$(count_lines "$TMP/watch.err" "event=finding-cleared .*kind=accept-queue-overflow .*port=$P ")" -eq 1

# ---- a live burst from clients in another namespace ----
# The clients retransmit their SYNs in their own namespace, so the server's TCPSynRetrans
# does not rise; a fast acceptor is seldom seen with a connection waiting.  Drops with no
# overflow before them are of now: never earlier-overflow.
if ! setup_ns NSS NSV; then
	skip watch_flap.remote "no network namespaces (root and ip netns needed)"
	exit 0
fi
ip -n "$NSS" link add st-fs type veth peer name st-fc netns "$NSV" &&
	ip -n "$NSS" addr add 10.231.7.1/24 dev st-fs && ip -n "$NSS" link set st-fs up &&
	ip -n "$NSV" addr add 10.231.7.2/24 dev st-fc && ip -n "$NSV" link set st-fc up || {
	skip watch_flap.remote "no veth pair between the namespaces"
	exit 0
}
Q=$(free_port)
N=$(free_port)
ip netns exec "$NSS" "$PY" -c 'import socket, sys, time
s = socket.socket(); s.bind(("10.231.7.1", int(sys.argv[1]))); s.listen(5)
end = time.time() + 60
while time.time() < end:
    c, _ = s.accept(); c.close(); time.sleep(0.01)' "$Q" >"$TMP/rsrv.out" 2>&1 &
busywait 5000 sh -c "ip netns exec $NSS ss -Hltn 'sport = :$Q' | grep -q ."
ip netns exec "$NSS" "$CLI" watch --listen "127.0.0.1:$N" --interval 0.05 --window 1 ":$Q" \
	>"$TMP/rwatch.out" 2>"$TMP/rwatch.err" &
busywait 10000 sh -c "ip netns exec $NSS curl -sf -m 1 http://127.0.0.1:$N/metrics | grep -q '^socktune_listener_up{.*port=\"$Q\".*} 1'"
i=0
while [ $i -lt 8 ]; do
	ip netns exec "$NSV" "$BIN/kaclient" burst -n 300 -T 1 10.231.7.1 "$Q" >>"$TMP/rburst.out" 2>&1
	sleep 0.3
	i=$((i + 1))
done
sleep 1.5
drops=$(ip netns exec "$NSS" curl -sf -m 2 "http://127.0.0.1:$N/metrics" | grep "^socktune_listener_drops_total{.*port=\"$Q\"" | awk '{ print $NF }')
present=$(count_lines "$TMP/rwatch.err" "event=finding .*kind=accept-queue-overflow .*port=$Q ")
earlier=$(count_lines "$TMP/rwatch.err" "event=finding .*kind=earlier-overflow .*port=$Q ")
echo "# remote clients: drops ${drops:-none}, accept-queue-overflow $present, earlier-overflow $earlier"
if [ "${drops:-0}" -eq 0 ]; then
	skip watch_flap.remote "no drop under the remote bursts: $(tail -n 2 "$TMP/rburst.out")"
else
	check watch_flap.remote_live "drops $drops: present $present, earlier $earlier: $(grep "port=$Q " "$TMP/rwatch.err" | cut -c 1-200)" \
		"$present" -ge 1 -a "$earlier" -eq 0
fi
