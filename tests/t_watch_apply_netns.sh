#!/bin/sh
# watch --apply's scope: the network namespaces the operator names.  A python3 http.server
# (backlog 5) in a private network namespace the test makes, overflowed by 300 connects made
# in it; watch runs outside it:
# - watch --apply :PORT (a port of watch's own namespace): the finding is reported (its
#   line, with its fix), one line says it was not applied (scope), once over two bursts, and
#   the backlog in the namespace stays 5, the journal has no change;
# - --apply-netns /run/netns/NAME names it: the backlog reads 4096 there, journalled;
# - --apply-netns all: the same, after the server was started again;
# - the server's PID as the target: its namespace is named, the backlog reads 4096;
# - node-wide (no target) from a namespace of its own: the server's is not watch's, and
#   nothing is changed there;
# - --apply-netns refuses a file that is not a network namespace, and needs --apply.
. "$(dirname "$0")/lib.sh"

if ! command -v ss >/dev/null || ! command -v ip >/dev/null; then
	skip watch_apply_netns "no ss or ip"
	exit 0
fi
if ! setup_ns NSB NSA; then
	skip watch_apply_netns "cannot make a network namespace (ip netns add: root)"
	exit 0
fi
SOMAX=$(ip netns exec "$NSB" cat /proc/sys/net/core/somaxconn)
WANT=4096
[ "$SOMAX" -lt "$WANT" ] && WANT=$SOMAX
P=$(free_port)
M=$(free_port)
while [ "$M" = "$P" ]; do M=$(free_port); done

# ---- the option itself ----
"$CLI" watch --listen "127.0.0.1:$M" --apply --apply-netns "$TMP" --seconds 1 >/dev/null 2>"$TMP/bad.err"
rc=$?
check watch_apply_netns_refuses_file "status $rc: $(cat "$TMP/bad.err")" "$rc" = 2 -a \
	-n "$(grep 'not a network namespace' "$TMP/bad.err")"
"$CLI" watch --listen "127.0.0.1:$M" --apply-netns all --seconds 1 >/dev/null 2>"$TMP/noapply.err"
rc=$?
check watch_apply_netns_needs_apply "status $rc: $(cat "$TMP/noapply.err")" "$rc" = 2

backlog_of() { ss -N "$NSB" -Hltn "sport = :$P" | awk '{ print $3; exit }'; }
in_b() { [ -n "$(backlog_of)" ]; }
applies() { count_lines "$1" '"event": "apply"'; }
# start: the server in the namespace, backlog 5
start() {
	ip netns exec "$NSB" $PY -m http.server --bind 127.0.0.1 "$P" >"$TMP/srv.out" 2>&1 &
	S=$!
	busywait 10000 in_b
}
stop() {
	kill "$S" 2>/dev/null
	wait "$S" 2>/dev/null
	busywait 5000 sh -c "! ss -N '$NSB' -Hltn 'sport = :$P' | grep -q ."
}
burst() {
	ip netns exec "$NSB" "$BIN/kaclient" burst -n 300 -T 4 127.0.0.1 "$P" >"$TMP/burst.client" 2>&1
}
# seen FILE: watch's textfile has the listener on $P up (its first sample was taken)
seen() {
	grep -q "^socktune_listener_up{.*port=\"$P\".*} 1\$" "$1" 2>/dev/null
}
# watch_run NAME ARGS...: watch --apply (its textfile $TMP/NAME.prom, journal $TMP/NAME.jsonl,
# stderr $TMP/NAME.err) in the background (W), once it has seen the listener
watch_run() {
	_n=$1
	shift
	$WRAP "$CLI" watch --textfile "$TMP/$_n.prom" --every 0.1 --interval 0.05 --window 1 --apply \
		--journal "$TMP/$_n.jsonl" "$@" >/dev/null 2>"$TMP/$_n.err" &
	W=$!
	busywait 20000 seen "$TMP/$_n.prom"
}
finding() { file_has "$1" "event=finding .*kind=accept-queue-overflow .*port=$P"; }
watch_end() {
	kill "$W" 2>/dev/null
	wait "$W" 2>/dev/null
}
WRAP=""

if ! start; then
	fail watch_apply_netns.server "http.server did not start in $NSB: $(cat "$TMP/srv.out")"
	exit 0
fi
NSINO=$(stat -L -c %i "/run/netns/$NSB")

# ---- the default: watch's own namespace and the targets', not this one ----
watch_run dflt ":$P"
burst
busywait 15000 finding "$TMP/dflt.err"
busywait 5000 file_has "$TMP/dflt.err" 'event=apply-out-of-scope'
sleep 1.5 # (windows more: an apply would come now)
check watch_apply_netns_default_not_applied "backlog $(backlog_of) (5), applies $(applies "$TMP/dflt.jsonl") \
(0), finding lines $(count_lines "$TMP/dflt.err" 'event=finding .*kind=accept-queue-overflow'); \
$(grep -v 'event=finding' "$TMP/dflt.err" | head -c 800)" \
	"$(backlog_of)" = 5 -a "$(applies "$TMP/dflt.jsonl")" = 0 -a \
	-n "$(grep "event=finding .*kind=accept-queue-overflow .*netns=$NSINO .*port=$P .*fix.0=\"socktune attach --backlog" "$TMP/dflt.err")"
# (cleared after 6 quiet windows of 1 s, once the burst's SYN retries (1, 3, 7 s) are over:
# 13 s and more; a sanitizer build is slower, so the waits are long, each bounded)
busywait 40000 file_has "$TMP/dflt.err" 'event=finding-cleared .*kind=accept-queue-overflow'
burst
busywait 30000 file_has "$TMP/dflt.err" 'event=finding .*kind=accept-queue-overflow' 2
sleep 1.5
line=$(grep 'event=apply-out-of-scope' "$TMP/dflt.err" | head -n 1)
check watch_apply_netns_default_said_once "$(count_lines "$TMP/dflt.err" 'event=apply-out-of-scope') \
lines (1) over $(count_lines "$TMP/dflt.err" 'event=finding .*kind=accept-queue-overflow') findings (2): \
$line; backlog $(backlog_of) (5)" \
	"$(count_lines "$TMP/dflt.err" 'event=apply-out-of-scope')" = 1 -a "$(backlog_of)" = 5 -a \
	"$(count_lines "$TMP/dflt.err" 'event=finding .*kind=accept-queue-overflow')" -ge 2 -a \
	"$(field "$line" netns)" = "$NSINO" -a "$(field "$line" pid)" = "$S" -a \
	-n "$(field "$line" reason | grep 'outside --apply.s scope')" -a \
	-n "$(field "$line" note | grep -- "--apply-netns /proc/$S/ns/net")"
watch_end

# ---- named: --apply-netns /run/netns/NAME ----
watch_run named ":$P" --apply-netns "/run/netns/$NSB"
burst
busywait 15000 sh -c "[ \"\$(ss -N '$NSB' -Hltn 'sport = :$P' | awk '{ print \$3; exit }')\" = $WANT ]"
check watch_apply_netns_named "backlog $(backlog_of) (want $WANT), applies $(applies "$TMP/named.jsonl") (1); \
$(grep -v 'event=finding' "$TMP/named.err" | head -c 800)" \
	"$(backlog_of)" = "$WANT" -a "$(applies "$TMP/named.jsonl")" = 1 -a \
	-n "$(grep "\"netns\": $NSINO[,}]" "$TMP/named.jsonl")" -a \
	"$(count_lines "$TMP/named.err" 'event=apply-out-of-scope')" = 0
watch_end

# ---- all ----
stop
start
watch_run all ":$P" --apply-netns all
burst
busywait 15000 sh -c "[ \"\$(ss -N '$NSB' -Hltn 'sport = :$P' | awk '{ print \$3; exit }')\" = $WANT ]"
check watch_apply_netns_all "backlog $(backlog_of) (want $WANT), applies $(applies "$TMP/all.jsonl") (1); \
$(grep -v 'event=finding' "$TMP/all.err" | head -c 800)" \
	"$(backlog_of)" = "$WANT" -a "$(applies "$TMP/all.jsonl")" = 1
watch_end

# ---- a PID target: its namespace is named ----
stop
start
watch_run pid "$S"
burst
busywait 15000 sh -c "[ \"\$(ss -N '$NSB' -Hltn 'sport = :$P' | awk '{ print \$3; exit }')\" = $WANT ]"
check watch_apply_netns_pid_target "backlog $(backlog_of) (want $WANT), applies $(applies "$TMP/pid.jsonl") (1); \
$(grep -v 'event=finding' "$TMP/pid.err" | head -c 800)" \
	"$(backlog_of)" = "$WANT" -a "$(applies "$TMP/pid.jsonl")" = 1
watch_end

# ---- node-wide, from a namespace of its own: the server's is not watch's ----
stop
start
WRAP="ip netns exec $NSA"
watch_run node
WRAP=""
burst
busywait 20000 finding "$TMP/node.err"
busywait 5000 file_has "$TMP/node.err" "event=apply-out-of-scope .*addr=127.0.0.1:$P "
sleep 1.5
check watch_apply_netns_node_wide "backlog $(backlog_of) (5), applies to it \
$(grep -c "\"addr\": \"127.0.0.1:$P\"" "$TMP/node.jsonl" 2>/dev/null); \
$(grep "event=apply-out-of-scope .*addr=127.0.0.1:$P " "$TMP/node.err")" \
	"$(backlog_of)" = 5 -a -z "$(grep "\"addr\": \"127.0.0.1:$P\"" "$TMP/node.jsonl" 2>/dev/null)" -a \
	-n "$(grep "event=apply-out-of-scope .*netns=$NSINO .*reason=" "$TMP/node.err" | grep "addr=127.0.0.1:$P ")"
watch_end
stop
exit 0
