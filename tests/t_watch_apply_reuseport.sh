#!/bin/sh
# watch --apply on an SO_REUSEPORT group: one process holds 4 listeners on one port, each
# with backlog 5, none accepting (tests/py/reuseport.py ... one).  A 300-connect
# burst spreads over the 4 queues and overflows each; watch sees one listener (their sum),
# and --apply listens again on every one of the 4 sockets: ss reads 4096 on each, the journal
# has 4 apply lines, one per socket (4 inodes).  Then revert sets one socket back (5) while
# watch runs: the back-off check reads each socket, so watch backs off from that one (one
# line naming its inode) and leaves the 3 others at 4096.
# Then the same group held by 4 processes, one socket each (tests/py/reuseport.py 4 SECONDS,
# without "one"): the holder of one socket is not the holder of the others, and watch looks
# in every process for them: 4 x 4096, 4 apply lines, 4 inodes.
. "$(dirname "$0")/lib.sh"

if ! command -v ss >/dev/null || ! command -v curl >/dev/null; then
	skip watch_apply_reuseport "no ss or curl"
	exit 0
fi
SOMAX=$(cat /proc/sys/net/core/somaxconn)
WANT=4096
[ "$SOMAX" -lt "$WANT" ] && WANT=$SOMAX

M=$(free_port)
J=$TMP/journal.jsonl
if ! start_server -t 20 group -- $PY "$ROOT/tests/py/reuseport.py" 4 60 one; then
	fail watch_apply_reuseport.server "no server: $(cat "$TMP/group.err")"
	exit 0
fi
G=$SRV_PID P=$SRV_PORT
# backlogs: the 4 sockets' backlogs in force, sorted, on one line
backlogs() { ss -Hltn "sport = :$P" | awk '{ print $3 }' | sort -n | tr '\n' ' ' | sed 's/ $//'; }
count() { count_lines "$1" "$2"; }
watching() {
	curl -sf -m 2 "http://127.0.0.1:$M/metrics" 2>/dev/null |
		grep -q "^socktune_listener_up{.*port=\"$P\".*} 1\$"
}
check watch_apply_reuseport_group "backlogs: $(backlogs) (5 5 5 5)" "$(backlogs)" = "5 5 5 5"

"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 --apply --journal "$J" ":$P" \
	>/dev/null 2>"$TMP/watch.err" &
W=$!
busywait 15000 watching
"$BIN/kaclient" burst -n 300 -T 4 127.0.0.1 "$P" >"$TMP/burst.client" 2>&1
busywait 15000 sh -c "[ \$(grep -c '\"event\": \"apply\"' '$J' 2>/dev/null) -ge 4 ]"
sleep 0.5
inodes=$(grep '"event": "apply"' "$J" 2>/dev/null | sed -n 's/.*"inode": \([0-9]*\).*/\1/p' | sort -u | wc -l)
check watch_apply_reuseport_all "backlogs: $(backlogs) (4 x $WANT); apply lines \
$(count "$J" '"event": "apply"') (4), inodes $inodes (4); \
$(grep -v 'event=finding' "$TMP/watch.err" | head -c 800)" \
	"$(backlogs)" = "$WANT $WANT $WANT $WANT" -a "$(count "$J" '"event": "apply"')" = 4 -a "$inodes" = 4

# one socket set back by an operator: watch backs off from it, and from it alone
third=$(grep '"event": "apply"' "$J" | sed -n 3p)
id=$(echo "$third" | sed -n 's/.*"change": "\([0-9a-f]*\)".*/\1/p')
ino=$(echo "$third" | sed -n 's/.*"inode": \([0-9]*\).*/\1/p')
"$CLI" revert --journal "$J" "$id" >"$TMP/revert.out" 2>&1
busywait 5000 sh -c "grep -q 'event=apply-backoff' '$TMP/watch.err'"
sleep 1.5 # (windows more: a second back-off line, or a re-apply, would come now)
check watch_apply_reuseport_backoff "backlogs: $(backlogs) (5 and 3 x $WANT); backoff lines \
$(count "$TMP/watch.err" 'event=apply-backoff') (1, inode $ino): $(grep 'event=apply-backoff' "$TMP/watch.err"); \
apply lines $(count "$J" '"event": "apply"') (4); $(cat "$TMP/revert.out")" \
	"$(backlogs)" = "5 $WANT $WANT $WANT" -a "$(count "$TMP/watch.err" 'event=apply-backoff')" = 1 -a \
	-n "$(grep "event=apply-backoff .*now=5 .*inode=$ino" "$TMP/watch.err")" -a \
	"$(count "$J" '"event": "apply"')" = 4
kill "$W"
wait "$W" 2>/dev/null
kill "$G"
wait "$G" 2>/dev/null

# 4 processes, one socket each
J=$TMP/journal2.jsonl
if ! start_server -t 20 procs -- $PY "$ROOT/tests/py/reuseport.py" 4 60; then
	fail watch_apply_reuseport.procs "no server: $(cat "$TMP/procs.err")"
	exit 0
fi
G=$SRV_PID P=$SRV_PORT
SLEEPS=$(sed -n 's/^PIDS //p' "$TMP/procs.out")
AT_EXIT="${AT_EXIT:+$AT_EXIT; }kill $SLEEPS 2>/dev/null"
check watch_apply_reuseport_procs_group "backlogs: $(backlogs) (5 5 5 5); holders $SLEEPS (4)" \
	"$(backlogs)" = "5 5 5 5" -a "$(echo $SLEEPS | wc -w)" = 4
"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 --apply --journal "$J" ":$P" \
	>/dev/null 2>"$TMP/watch2.err" &
W=$!
busywait 15000 watching
# (bursts until the 4 are cured, at most 4: a socket its burst left alone is cured at the next)
for i in 1 2 3 4; do
	"$BIN/kaclient" burst -n 300 -T 4 127.0.0.1 "$P" >"$TMP/burst2.client" 2>&1
	busywait 4000 sh -c "[ \$(grep -c '\"event\": \"apply\"' '$J' 2>/dev/null) -ge 4 ]" && break
done
sleep 0.5
inodes=$(grep '"event": "apply"' "$J" 2>/dev/null | sed -n 's/.*"inode": \([0-9]*\).*/\1/p' | sort -u | wc -l)
pids=$(grep '"event": "apply"' "$J" 2>/dev/null | sed -n 's/.*"pid": \([0-9]*\).*/\1/p' | sort -u | wc -l)
check watch_apply_reuseport_procs "backlogs: $(backlogs) (4 x $WANT); apply lines \
$(count "$J" '"event": "apply"') (4), inodes $inodes (4), holders $pids (4); \
$(grep -v 'event=finding' "$TMP/watch2.err" | head -c 800)" \
	"$(backlogs)" = "$WANT $WANT $WANT $WANT" -a "$(count "$J" '"event": "apply"')" = 4 -a \
	"$inodes" = 4 -a "$pids" = 4
kill "$W"
wait "$W" 2>/dev/null
kill $SLEEPS "$G" 2>/dev/null
wait "$G" 2>/dev/null
exit 0
