#!/bin/sh
# watch --apply across a server's restart (python3 http.server, backlog 5, no LD_PRELOAD):
# a 300-connect burst overflows it, --apply listens again with 4096 (read back with ss);
# the server is killed and started again on the same port (a new process, a new socket
# with backlog 5); a second burst overflows the new socket, and --apply cures it too: its
# backlog reads 4096, the journal has a second apply line naming the new pid and the new
# socket's inode.  (The entry of the old socket, whose process is gone, must not block it,
# nor the service pid watch saw first, which no longer exists.)  No scrape comes while the
# server is down, as with Prometheus scraping every 15 s and a restart quicker than that:
# watch keeps the listener (its series continue), which is what used to block the cure.
. "$(dirname "$0")/lib.sh"

if ! command -v ss >/dev/null || ! command -v curl >/dev/null; then
	skip watch_apply_restart "no ss or curl"
	exit 0
fi
SOMAX=$(cat /proc/sys/net/core/somaxconn)
WANT=4096
[ "$SOMAX" -lt "$WANT" ] && WANT=$SOMAX

P=$(free_port)
M=$(free_port)
while [ "$M" = "$P" ]; do M=$(free_port); done
J=$TMP/journal.jsonl
backlog_of() { ss -Hltn "sport = :$P" | awk '{ print $3; exit }'; }
inode_of() { ss -Hltne "sport = :$P" | sed -n 's/.* ino:\([0-9]*\).*/\1/p' | head -n 1; }
applies() { count_lines "$J" '"event": "apply"'; }
# watching: watch's /metrics has the listener on $P up (its first sample was taken: a burst
# before it would be in the baseline)
watching() {
	curl -sf -m 2 "http://127.0.0.1:$M/metrics" 2>/dev/null |
		grep -q "^socktune_listener_up{.*port=\"$P\".*} 1\$"
}
burst() { "$BIN/kaclient" burst -n 300 -T 4 127.0.0.1 "$P" >"$TMP/$1.client" 2>&1; }

if ! start_server -l "$P" srv1 -- $PY -m http.server --bind 127.0.0.1 "$P"; then
	fail watch_apply_restart.server "http.server did not start: $(cat "$TMP/srv1.err")"
	exit 0
fi
S1=$SRV_PID
"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 --apply --journal "$J" \
	":$P" >/dev/null 2>"$TMP/watch.err" &
W=$!
busywait 15000 watching
burst b1
busywait 10000 sh -c "[ \"\$(ss -Hltn 'sport = :$P' | awk '{ print \$3; exit }')\" = $WANT ]"
check watch_apply_restart_first "backlog $(backlog_of) (want $WANT), applies $(applies); \
$(grep -v '^socktune pid=.*event=finding' "$TMP/watch.err" | head -c 600)" \
	"$(backlog_of)" = "$WANT" -a "$(applies)" = 1

# the restart: the old process gone, a new one on the same port
kill "$S1"
wait "$S1" 2>/dev/null
busywait 5000 sh -c "! ss -Hltn 'sport = :$P' | grep -q ."
if ! start_server -l "$P" srv2 -- $PY -m http.server --bind 127.0.0.1 "$P"; then
	fail watch_apply_restart.server2 "http.server did not start again: $(cat "$TMP/srv2.err")"
	exit 0
fi
S2=$SRV_PID
INO2=$(inode_of)
check watch_apply_restart_new_socket "backlog $(backlog_of) (5: the new socket), pid $S2 (not $S1)" \
	"$(backlog_of)" = 5 -a "$S2" != "$S1"
# (watch has seen the new socket: samples every 0.05 s; only then a scrape)
sleep 1
busywait 15000 watching
# the old socket's finding clears first, so that the new one's is a new appearance, as a
# restart minutes later would have it
busywait 20000 sh -c "grep -q 'event=finding-cleared .*kind=accept-queue-overflow' '$TMP/watch.err'"
burst b2
busywait 15000 sh -c "[ \"\$(ss -Hltn 'sport = :$P' | awk '{ print \$3; exit }')\" = $WANT ]"
line=$(grep '"event": "apply"' "$J" 2>/dev/null | sed -n 2p)
check watch_apply_restart_cured "new socket's backlog $(backlog_of) (want $WANT), applies $(applies) \
(2), second: $line; $(grep -v '^socktune pid=.*event=finding ' "$TMP/watch.err" | tail -c 800)" \
	"$(backlog_of)" = "$WANT" -a "$(applies)" = 2 -a \
	-n "$(echo "$line" | grep "\"pid\": $S2," | grep "\"inode\": $INO2[,}]" | grep '"before": 5,')"
kill "$W"
wait "$W" 2>/dev/null
kill "$S2"
wait "$S2" 2>/dev/null
exit 0
