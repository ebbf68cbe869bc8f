#!/bin/sh
# socktune watch --apply --via bpf and socktune revert, run as root without CAP_SYS_PTRACE,
# on python http.servers of another uid made non-dumpable (no pidfd copy, no holder
# readable): the nagle-delayed-ack cure (TCP_NODELAY) set on the listener and its open
# keep-alive connection through the TCP iterator, journalled with via bpf and the sockets'
# cookies; revert sets both back the same way; every value read from the kernel by this test
# (pidfd_getfd: it keeps CAP_SYS_PTRACE).  The backlog cure, which only a copy makes (listen()
# again), is refused under auto for such a server, said once, the backlog left as it was.
# No program, map or link of the iterator is left after any run, by the ids each said.
. "$(dirname "$0")/lib.sh"

needs_iterator watch_apply_via setpriv curl

count() {
	_c=$(grep -c -- "$2" "$1" 2>/dev/null)
	echo "${_c:-0}"
}
journal_has() { [ "$(count "$1" "\"event\": \"$2\"")" -ge "$3" ]; }

# ---- nagle-delayed-ack: NODELAY through the iterator, and back ----
P=$(free_port)
M=$(free_port)
if ! start_server -l "$P" ka -- $AS_NOBODY $PY "$ROOT/tests/py/undumpable.py" http.server \
	--bind 127.0.0.1 --protocol HTTP/1.1 "$P"; then
	fail watch_apply_via.server "http.server did not start: $(cat "$TMP/ka.err")"
	exit 0
fi
KA=$SRV_PID
ka_conn "$P" 90
check nodelay_before "listener $(nodelay_of "$KA" listener), connection :$CP $(nodelay_of "$KA" "$CP") (0 each)" \
	"$(nodelay_of "$KA" listener)/$(nodelay_of "$KA" "$CP")" = 0/0
J=$TMP/j.jsonl
$NOPTRACE "$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 --apply --via bpf \
	--journal "$J" ":$P" >/dev/null 2>"$TMP/w.err" &
W=$!
# (the connections are sampled every 10 s: the second sample shows the stall)
busywait 45000 journal_has "$J" apply 2
kill "$W"
wait "$W" 2>/dev/null
check applied_kernel "listener $(nodelay_of "$KA" listener), connection :$CP $(nodelay_of "$KA" "$CP") (1 each); $(cat "$J"; head -c 1500 "$TMP/w.err")" \
	"$(nodelay_of "$KA" listener)/$(nodelay_of "$KA" "$CP")" = 1/1
check applied_journal "$(grep '"event": "apply"' "$J")" \
	"$(grep '"event": "apply"' "$J" | grep '"option": "nodelay"' | grep '"before": 0, "after": 1' | grep '"via": "bpf"' | grep -c '"cookie": [0-9]')" = 2 -a \
	"$(grep '"event": "apply"' "$J" | grep -c '"pid":')" = 0 -a \
	-n "$(grep "\"peer\": \"127.0.0.1:$CP\"" "$J")"
bad=""
grep '"event": "apply"' "$J" >"$TMP/j.lines"
while read -r l; do
	echo "$l" >"$TMP/one.json"
	bad="$bad$(schema_problems "$TMP/one.json")"
done <"$TMP/j.lines"
check applied_journal_schema "keys not in socktune --schema: ${bad:-none}" -z "$bad"
iter_none_left applied_nothing_left "$TMP/w.err"

# revert: --via pidfd refuses a change the iterator made; auto takes the iterator again
cp "$J" "$TMP/j2.jsonl"
$NOPTRACE "$CLI" revert --journal "$TMP/j2.jsonl" --via pidfd all >"$TMP/r0.out" 2>"$TMP/r0.err"
rc=$?
check revert_pidfd_refused "status $rc: $(cat "$TMP/r0.out" "$TMP/r0.err")" "$rc" = 1 -a \
	"$(count "$TMP/r0.err" 'which --via pidfd refuses')" = 2 -a \
	"$(nodelay_of "$KA" listener)" = 1
$NOPTRACE "$CLI" revert --journal "$J" all >"$TMP/r.out" 2>"$TMP/r.err"
rc=$?
check reverted_kernel "status $rc; listener $(nodelay_of "$KA" listener), connection :$CP $(nodelay_of "$KA" "$CP") (0 each); $(cat "$TMP/r.out" "$TMP/r.err")" \
	"$rc" = 0 -a "$(nodelay_of "$KA" listener)/$(nodelay_of "$KA" "$CP")" = 0/0 -a \
	"$(count "$TMP/r.out" 'event=revert .*option=nodelay .*via=bpf cookie=[0-9]* before=1 after=0')" = 2
check reverted_marked "$(grep '"event": "revert"' "$J")" "$(count "$J" '"event": "revert"')" = 2
iter_none_left reverted_nothing_left "$TMP/r.err"
kill "$KC" "$KA" 2>/dev/null

# ---- accept-queue-overflow under auto: no copy, and the iterator sets no backlog ----
P=$(free_port)
if start_server -l "$P" over -- $AS_NOBODY $PY "$ROOT/tests/py/undumpable.py" http.server \
	--bind 127.0.0.1 "$P"; then
	$NOPTRACE "$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --window 1 --apply \
		--journal "$TMP/j3.jsonl" ":$P" >/dev/null 2>"$TMP/o.err" &
	W=$!
	watching() {
		curl -sf -m 2 "http://127.0.0.1:$M/metrics" 2>/dev/null |
			grep -q "^socktune_listener_up{.*port=\"$P\".*} 1\$"
	}
	busywait 15000 watching
	"$BIN/kaclient" burst -n 300 -T 4 127.0.0.1 "$P" >/dev/null 2>&1
	busywait 10000 sh -c "grep -q 'event=apply-refused .*option=backlog' '$TMP/o.err'"
	sleep 1.5 # (two windows more: a second line would come now)
	"$BIN/kaclient" burst -n 300 -T 4 127.0.0.1 "$P" >/dev/null 2>&1
	sleep 1.5
	kill "$W"
	wait "$W" 2>/dev/null
	echo "# $(grep -m 1 'event=apply-refused' "$TMP/o.err")"
	check backlog_refused "$(grep 'apply' "$TMP/o.err")" \
		"$(count "$TMP/o.err" 'event=apply-refused .*option=backlog .*via=auto reason="the pidfd copy was refused.*the TCP iterator\|event=apply-refused .*option=backlog .*via=auto reason="not through the TCP iterator: a listener.s backlog')" = 1 -a \
		"$(ss -Hltn "sport = :$P" | awk '{ print $3; exit }')" = 5 -a \
		"$(count "$TMP/j3.jsonl" '"event": "apply"')" = 0
	kill "$SRV_PID" 2>/dev/null
else
	fail watch_apply_via.server2 "http.server did not start: $(cat "$TMP/over.err")"
fi
exit 0
