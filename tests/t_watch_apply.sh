#!/bin/sh
# socktune watch --apply and socktune revert, on plain python3 http.servers (no LD_PRELOAD),
# every value read back from the kernel (ss, or getsockopt on a pidfd_getfd copy:
# tests/py/sockopts_of.py), never from what socktune says:
# - without --apply, an accept-queue-overflow finding changes nothing (backlog 5 stays);
# - nagle-delayed-ack (HTTP/1.1 keep-alive GETs, the client's delayed ACK holding the
#   server's second write): the finding is on /metrics and a line; --apply sets TCP_NODELAY
#   on the listener and the connection live, the journal has both changes (before 0, after
#   1); revert all sets both back (0 read back) and marks them in the journal;
# - accept-queue-overflow (backlog 5, a 300-connect burst; on 127.0.0.1 and on ::1): --apply
#   listens again with 4096
#   (or the namespace's somaxconn below it), read back; revert while watch runs sets 5 back,
#   watch backs off (one line), and a second burst's finding changes nothing again;
# - the journal refused at a FIFO, a symlink and a file socktune did not make: one line,
#   status 1, the file left as it was; revert refuses a journal others may write.
. "$(dirname "$0")/lib.sh"

if ! command -v curl >/dev/null || ! command -v ss >/dev/null; then
	skip watch_apply "no curl or ss"
	exit 0
fi
if ! $PY -c 'import os; os.pidfd_open' 2>/dev/null; then
	skip watch_apply "$PY has no os.pidfd_open (the read-back helper needs it)"
	exit 0
fi
SOMAX=$(cat /proc/sys/net/core/somaxconn)
WANT=4096
[ "$SOMAX" -lt "$WANT" ] && WANT=$SOMAX

# backlog_of PORT: the backlog in force of the listener on PORT (ss's Send-Q)
backlog_of() {
	ss -Hltn "sport = :$1" | awk '{ print $3; exit }'
}
# count FILE PATTERN: lines of FILE matching PATTERN
count() {
	cat "$1" 2>/dev/null | grep -c -- "$2"
}
journal_has() { [ "$(count "$1" "\"event\": \"$2\"")" -ge "$3" ]; }
line_has() { [ "$(count "$1" "$2")" -ge "$3" ]; }
# watching: watch's /metrics has the listener on port $P (its first sample was taken: a burst
# before it would be in the baseline, and no finding)
watching() {
	curl -sf -m 2 "http://127.0.0.1:$M/metrics" 2>/dev/null |
		grep -q "^socktune_listener_up{.*port=\"$P\".*} 1\$"
}

# ---- refusals: the journal at a FIFO, a symlink, another program's file ----
M=$(free_port)
mkfifo "$TMP/fifo"
timeout 10 "$CLI" watch --listen "127.0.0.1:$M" --apply --journal "$TMP/fifo" --seconds 1 \
	>/dev/null 2>"$TMP/fifo.err"
rc=$?
check watch_apply_refuses_fifo "status $rc, $(cat "$TMP/fifo.err")" "$rc" = 1 -a \
	"$(wc -l <"$TMP/fifo.err")" = 1 -a -n "$(grep 'journal .*fifo: a FIFO: refused' "$TMP/fifo.err")" \
	-a -p "$TMP/fifo"
echo 'not a journal' >"$TMP/other"
ln -s "$TMP/other" "$TMP/link"
timeout 10 "$CLI" watch --listen "127.0.0.1:$M" --apply --journal "$TMP/link" --seconds 1 \
	>/dev/null 2>"$TMP/link.err"
rc=$?
check watch_apply_refuses_symlink "status $rc, $(cat "$TMP/link.err")" "$rc" = 1 -a \
	-n "$(grep 'a symlink: refused' "$TMP/link.err")" -a "$(cat "$TMP/other")" = 'not a journal'
timeout 10 "$CLI" watch --listen "127.0.0.1:$M" --apply --journal "$TMP/other" --seconds 1 \
	>/dev/null 2>"$TMP/other.err"
rc=$?
check watch_apply_refuses_other_file "status $rc, $(cat "$TMP/other.err")" "$rc" = 1 -a \
	-n "$(grep 'did not make' "$TMP/other.err")" -a "$(cat "$TMP/other")" = 'not a journal'
"$CLI" watch --listen "127.0.0.1:$M" --journal "$TMP/j0" --seconds 1 >/dev/null 2>"$TMP/j0.err"
rc=$?
check watch_journal_needs_apply "status $rc, $(cat "$TMP/j0.err")" "$rc" = 2 -a ! -e "$TMP/j0"

# ---- accept-queue-overflow: without --apply nothing changes; with it the backlog ----
P=$(free_port)
M=$(free_port)
while [ "$M" = "$P" ]; do M=$(free_port); done
if ! start_server -l "$P" over -- $PY -m http.server --bind 127.0.0.1 "$P"; then
	fail watch_apply.server "http.server did not start: $(cat "$TMP/over.err")"
	exit 0
fi
OVER=$SRV_PID
HOST=127.0.0.1 ADDR=127.0.0.1
# burst NAME: 300 connects at once (bounded: 4 s)
burst() {
	"$BIN/kaclient" burst -n 300 -T 4 "$HOST" "$P" >"$TMP/$1.client" 2>&1
}
"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 ":$P" \
	>/dev/null 2>"$TMP/advice.err" &
W=$!
busywait 15000 watching
burst advice
busywait 8000 line_has "$TMP/advice.err" 'kind=accept-queue-overflow' 1
kill "$W"; wait "$W" 2>/dev/null
check watch_advice_only "finding: $(count "$TMP/advice.err" 'event=finding '), backlog \
$(backlog_of "$P") (5: unchanged), apply lines $(count "$TMP/advice.err" 'event=apply')" \
	"$(count "$TMP/advice.err" 'kind=accept-queue-overflow')" -ge 1 -a \
	"$(backlog_of "$P")" = 5 -a "$(count "$TMP/advice.err" 'event=apply')" = 0

# over_case 4|6: --apply on the backlog-5 server $OVER on $HOST port $P (ADDR: as the
# journal writes it), revert while watch runs, the back-off
over_case() {
	S=$TMP/state$1
	J=$S/journal.jsonl
	mkdir -p "$S"
	STATE_DIRECTORY=$S "$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 \
		--apply ":$P" >/dev/null 2>"$TMP/over$1.werr" &
	W=$!
	busywait 15000 watching
	burst over1$1
	busywait 10000 journal_has "$J" apply 1
	check watch_apply_backlog_v$1 "backlog read back $(backlog_of "$P") (want $WANT); journal: \
	$(cat "$J" 2>/dev/null); $(cat "$TMP/over$1.werr")" "$(backlog_of "$P")" = "$WANT"
	check watch_apply_journal_default_v$1 "journal at \$STATE_DIRECTORY/journal.jsonl, mode \
	$(stat -c %a "$J" 2>/dev/null)" -f "$J" -a "$(stat -c %a "$J" 2>/dev/null)" = 600
	line=$(grep '"event": "apply"' "$J" | head -n 1)
	case $line in
	*'"kind": "accept-queue-overflow"'*'"option": "backlog"'*'"before": 5'*"\"after\": $WANT"*"\"pid\": $OVER"*'"fd": '*"\"addr\": \"$ADDR:$P\""*'"time": "'*)
		pass watch_apply_journal_line_v$1 ;;
	*) fail watch_apply_journal_line_v$1 "$line" ;;
	esac
	fid=$(echo "$line" | sed -n 's/.*"finding": "\([0-9a-f]*\)".*/\1/p')
	check watch_apply_journal_why_v$1 "finding $fid in watch's lines" -n "$fid" -a \
		-n "$(grep "event=finding id=$fid kind=accept-queue-overflow" "$TMP/over$1.werr")"
	bad=""
	grep -v '"event": "journal"' "$J" >"$TMP/j.lines"
	while read -r l; do
		echo "$l" >"$TMP/one.json"
		bad="$bad$(schema_problems "$TMP/one.json")"
	done <"$TMP/j.lines"
	check watch_apply_journal_schema_v$1 "keys not in socktune --schema: ${bad:-none}" -z "$bad"

	# back-off: an operator sets the backlog back while watch runs
	STATE_DIRECTORY=$S "$CLI" revert all >"$TMP/rev1$1.out" 2>"$TMP/rev1$1.err"
	rc=$?
	check revert_backlog_v$1 "status $rc, backlog read back $(backlog_of "$P") (5); $(cat "$TMP/rev1$1.out" \
	"$TMP/rev1$1.err")" "$rc" = 0 -a "$(backlog_of "$P")" = 5 -a \
		-n "$(grep "event=revert .*option=backlog .*before=$WANT after=5" "$TMP/rev1$1.out")"
	check revert_marks_journal_v$1 "revert lines $(count "$J" '"event": "revert"')" \
		"$(count "$J" '"event": "revert"')" = 1
	busywait 5000 line_has "$TMP/over$1.werr" 'event=apply-backoff' 1
	# (the first burst's finding cleared first: one that still holds says no line again)
	busywait 15000 line_has "$TMP/over$1.werr" 'event=finding-cleared id=' 1
	n0=$(count "$TMP/over$1.werr" 'event=finding id=.* kind=accept-queue-overflow')
	burst over2$1
	busywait 10000 sh -c "[ \$(grep -c 'event=finding id=.* kind=accept-queue-overflow' '$TMP/over$1.werr') -gt $n0 ]"
	sleep 1.5 # (two windows more: a re-apply would come now)
	check watch_apply_backs_off_v$1 "backoff lines $(count "$TMP/over$1.werr" 'event=apply-backoff') (1), \
	apply lines $(count "$J" '"event": "apply"') (1), backlog $(backlog_of "$P") (5), findings \
	$(count "$TMP/over$1.werr" 'kind=accept-queue-overflow') after $n0" \
		"$(count "$TMP/over$1.werr" 'event=apply-backoff')" = 1 -a \
		"$(count "$J" '"event": "apply"')" = 1 -a "$(backlog_of "$P")" = 5 -a \
		"$(count "$TMP/over$1.werr" 'event=finding id=.* kind=accept-queue-overflow')" -gt "$n0"
	kill "$W"; wait "$W" 2>/dev/null
	STATE_DIRECTORY=$S "$CLI" revert all >"$TMP/rev2$1.out" 2>&1
	rc=$?
	check revert_twice_nothing_v$1 "status $rc: $(cat "$TMP/rev2$1.out")" "$rc" = 0 -a ! -s "$TMP/rev2$1.out"
}
over_case 4
kill "$OVER"; wait "$OVER" 2>/dev/null
P=$(free_port)
while [ "$M" = "$P" ]; do P=$(free_port); done
HOST=::1 ADDR=[::1]
if start_server -l "$P" over6 -- $PY -m http.server --bind ::1 "$P"; then
	OVER=$SRV_PID
	over_case 6
	kill "$OVER"; wait "$OVER" 2>/dev/null
else
	fail watch_apply.server6 "http.server on ::1 did not start: $(cat "$TMP/over6.err")"
fi

# ---- nagle-delayed-ack: NODELAY live on the listener and the connection ----
P=$(free_port)
while [ "$M" = "$P" ]; do P=$(free_port); done
if ! start_server -l "$P" ka -- $PY -m http.server --bind 127.0.0.1 --protocol HTTP/1.1 "$P"; then
	fail watch_apply.ka_server "http.server did not start: $(cat "$TMP/ka.err")"
	exit 0
fi
KA=$SRV_PID
# keep-alive GETs for 300 s at most (killed when done): the connection outlives the watch's
# 40 s and 30 s waits below and the reverts after them, a sanitizer build's too (2,000,000
# GETs: 100,000 take about a minute once NODELAY is set)
ka_conn "$P" 300 2000000
check watch_nagle_before "listener NODELAY $(nodelay_of "$KA" listener), connection :$CP \
$(nodelay_of "$KA" "$CP") (0 each)" "$(nodelay_of "$KA" listener)" = 0 -a \
	"$(nodelay_of "$KA" "$CP")" = 0
J2=$TMP/nagle.jsonl
"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 --apply --journal "$J2" ":$P" \
	>/dev/null 2>"$TMP/ka.werr" &
W=$!
# (the connections are sampled every 10 s: the second sample shows the stall)
busywait 40000 journal_has "$J2" apply 2
curl -sf -m 2 "http://127.0.0.1:$M/metrics" >"$TMP/ka.prom"
check watch_nagle_metric "$(grep '^socktune_finding{' "$TMP/ka.prom")" \
	-n "$(grep "^socktune_finding{.*kind=\"nagle-delayed-ack\".*port=\"$P\".* 1\$" "$TMP/ka.prom")"
check watch_nagle_line "$(grep 'nagle' "$TMP/ka.werr" | head -c 600)" \
	-n "$(grep "event=finding id=[0-9a-f]* kind=nagle-delayed-ack .*port=$P" "$TMP/ka.werr")"
check watch_apply_nodelay "listener NODELAY $(nodelay_of "$KA" listener), connection :$CP \
$(nodelay_of "$KA" "$CP") (1 each); $(cat "$J2"; cat "$TMP/ka.werr" | head -c 1000)" \
	"$(nodelay_of "$KA" listener)" = 1 -a "$(nodelay_of "$KA" "$CP")" = 1
check watch_apply_nodelay_journal "$(grep '"option": "nodelay"' "$J2")" \
	"$(grep '"option": "nodelay"' "$J2" | grep -c '"before": 0, "after": 1')" = 2 -a \
	-n "$(grep "\"peer\": \"127.0.0.1:$CP\"" "$J2")"
# the app leaves NODELAY alone (the healthy case): the listener's new connections are read
# until the cure is seen to hold, then no more (the SIGUSR1 line counts the cures still
# judged: 1 before any new connection, 0 once 40 new ones were read in a connection sample)
judging() {
	n0=$(count "$TMP/ka.werr" 'SIGUSR1: --apply:')
	kill -USR1 "$W"
	busywait 3000 sh -c "[ \$(grep -c 'SIGUSR1: --apply:' '$TMP/ka.werr') -gt $n0 ]"
	grep 'SIGUSR1: --apply:' "$TMP/ka.werr" | tail -n 1 | sed -n 's/.* changes, \([0-9]*\) NODELAY cures.*/\1/p'
}
samples() {
	curl -sf -m 2 "http://127.0.0.1:$M/metrics" 2>/dev/null |
		awk '/^socktune_watch_connection_samples_total / { print $2 }'
}
samples_ge() { [ "$(samples)" -ge "$1" ] 2>/dev/null; }
j0=$(judging)
$PY -c 'import socket, sys, time
s = []
for _ in range(40):  # (spaced: the accept queue of 5 does not overflow, no backlog finding)
    s.append(socket.create_connection(("127.0.0.1", int(sys.argv[1]))))
    time.sleep(0.1)
time.sleep(120)' "$P" >/dev/null 2>&1 &
HC=$!
n0=$(samples)
busywait 30000 samples_ge $((${n0:-0} + 2))
# (a connection sample that read them judges the cure: the count asked for until it is 0,
# 15 s at most, as a sanitizer build's watch may judge some windows later)
j1=$(judging)
t_end=$(($(date +%s) + 15))
while [ "$j1" != 0 ] && [ "$(date +%s)" -lt "$t_end" ]; do
	sleep 0.5
	j1=$(judging)
done
kill "$HC" 2>/dev/null; wait "$HC" 2>/dev/null
check watch_apply_nodelay_judged "NODELAY cures judged: $j0 (1) before, $j1 (0) after 40 new \
connections; samples $n0 -> $(samples); reset lines $(count "$TMP/ka.werr" 'event=apply-reset') (0); \
$(grep 'SIGUSR1' "$TMP/ka.werr")" \
	"$j0" = 1 -a "$j1" = 0 -a "$(count "$TMP/ka.werr" 'event=apply-reset')" = 0
kill "$W"; wait "$W" 2>/dev/null
"$CLI" revert --journal "$J2" >"$TMP/list.out" 2>&1
check revert_lists "$(cat "$TMP/list.out")" "$(count "$TMP/list.out" 'option=nodelay')" = 2 -a \
	"$(nodelay_of "$KA" listener)" = 1
"$CLI" revert --journal "$J2" all >"$TMP/rev3.out" 2>"$TMP/rev3.err"
rc=$?
check revert_nodelay "status $rc; listener NODELAY $(nodelay_of "$KA" listener), connection :$CP \
$(nodelay_of "$KA" "$CP") (0 each); $(cat "$TMP/rev3.out" "$TMP/rev3.err")" "$rc" = 0 -a \
	"$(nodelay_of "$KA" listener)" = 0 -a "$(nodelay_of "$KA" "$CP")" = 0 -a \
	"$(count "$TMP/rev3.out" 'event=revert .*option=nodelay .*before=1 after=0')" = 2
check revert_nodelay_marked "$(grep '"event": "revert"' "$J2")" \
	"$(count "$J2" '"event": "revert"')" = 2
"$CLI" revert --journal "$J2" 0123456789abcdef >/dev/null 2>"$TMP/rev4.err"
rc=$?
check revert_unknown_id "status $rc: $(cat "$TMP/rev4.err")" "$rc" = 2
cp "$J2" "$TMP/open.jsonl" && chmod 666 "$TMP/open.jsonl"
"$CLI" revert --journal "$TMP/open.jsonl" all >"$TMP/rev5.out" 2>"$TMP/rev5.err"
rc=$?
check revert_refuses_writable_journal "status $rc: $(cat "$TMP/rev5.err")" "$rc" = 3 -a \
	! -s "$TMP/rev5.out" -a -n "$(grep 'mode 666: refused' "$TMP/rev5.err")"
kill "$KC" 2>/dev/null; wait "$KC" 2>/dev/null
exit 0
