#!/bin/sh
# doctor on a server that sets TCP_NODELAY back to 0 on each connection it accepts (as Go's
# SetNoDelay(false), hyper 0.14 and Erlang's inets do), after `socktune attach --nodelay` set
# its listener to 1: the listener reads 1, its connections 0, and every new connection
# stalls 44 ms a response.  doctor says the program overrides it per connection and prints
# only fixes that hold against the program's own call: no listener form (attach --nodelay,
# the wrapper's --attach); the live fix it prints (attach --cgroup: the cgroup mode's hook
# refuses the program's setsockopt), run as printed, cures the next connection, and so does
# its next-start fix (the preload, precedence policy).  Counted: responses over 30 ms of 30
# (each stall is the client's 40 ms delayed ACK; a cured response takes well under 1 ms).
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip doctor_perconn "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi
"$CLI" --cgroup --nodelay -- true 2>"$TMP/probe.err"
if grep -q 'setsockopt is not held' "$TMP/probe.err"; then
	skip doctor_perconn "the kernel refused the cgroup setsockopt hook here: $(grep 'not held' "$TMP/probe.err")"
	exit 0
fi
cg_test_dir doctor_perconn

REQS=30
# kc NAME PORT: REQS keep-alive requests on a new connection; the count over 30 ms
kc() {
	"$BIN/kaclient" http -n $REQS -t 30 -T 15 127.0.0.1 "$2" >"$TMP/$1.kc" 2>&1
	sed -n 's/.* over=\([0-9]*\) .*/\1/p' "$TMP/$1.kc"
}

# the server in the test's cgroup, its listener set to 1 from outside
start_server -t 10 srv -- sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -n 100 -t 60' \
	sh "$CG" "$BIN/resetsrv" || { fail doctor_perconn "resetsrv did not start: $(cat "$TMP/srv.err")"; exit 0; }
"$CLI" attach --nodelay "$SRV_PID" >"$TMP/attach.out" 2>"$TMP/attach.err"
before=$(kc before "$SRV_PORT")

# doctor watching while a client's session runs
"$BIN/kaclient" http -n 100 -t 30 -T 15 127.0.0.1 "$SRV_PORT" >"$TMP/along.kc" 2>&1 &
cl=$!
sleep 0.3
"$CLI" doctor --seconds 2 --json "$SRV_PID" >"$TMP/doc.json" 2>"$TMP/doc.err"
rc=$?
wait "$cl"
k=$(kinds "$TMP/doc.json")
fixes=$(finding "$TMP/doc.json" nagle-delayed-ack fix)
note=$(finding "$TMP/doc.json" nagle-delayed-ack note)
check doctor_perconn.found "status $rc; findings: '$k'; evidence $(finding "$TMP/doc.json" nagle-delayed-ack evidence); before: $before of $REQS over 30 ms" \
	"$rc" = 1 -a "${before:-0}" -ge $((REQS / 2)) -a \
	"$(finding "$TMP/doc.json" nagle-delayed-ack evidence.listener_nodelay)" = True -a \
	"$(finding "$TMP/doc.json" nagle-delayed-ack evidence.connection_nodelay)" = False 2>/dev/null
check doctor_perconn.says_override "summary: $(finding "$TMP/doc.json" nagle-delayed-ack summary); note: $note" \
	-n "$(finding "$TMP/doc.json" nagle-delayed-ack summary | grep 'turns Nagle back on on each connection')" -a \
	-n "$(echo "$note" | grep 'sets TCP_NODELAY to 0 itself on each connection')"
check doctor_perconn.no_listener_forms "fixes: $fixes" -n "$fixes" -a \
	-z "$(echo "$fixes" | grep -e 'socktune attach --nodelay' -e 'socktune --attach ')"

# the live fix as printed, then a new connection counted
live=$(echo "$fixes" | grep '^socktune attach ' | head -n 1)
PATH="$B:$PATH" sh -c "$live" >"$TMP/live.out" 2>"$TMP/live.err"
after=$(kc after "$SRV_PORT")
echo "INFO doctor_perconn: responses over 30 ms of $REQS: $before after attach --nodelay, $after after '$live'"
check doctor_perconn.live_fix_cures "'$live' ($(head -c 300 "$TMP/live.err")): $(cat "$TMP/after.kc"); before: $before of $REQS" \
	-n "$live" -a "${after:-99}" -le 2
kill "$SRV_PID" 2>/dev/null
wait "$SRV_PID" 2>/dev/null

# each next start as printed (the preload: its value set back after the program's call; the
# cgroup mode: its hook refuses the call), then a new connection counted
n=0
echo "$fixes" | grep -e "-- $BIN/resetsrv" >"$TMP/next.list"
while IFS= read -r next; do
	n=$((n + 1))
	rm -f "$TMP/next$n.out"
	(PATH="$B:$PATH" exec sh -c "$next") >"$TMP/next$n.out" 2>"$TMP/next$n.err" &
	np=$!
	wait_file "$TMP/next$n.out" '^PORT ' 10
	nport=$(sed -n 's/^PORT //p' "$TMP/next$n.out")
	again=$(kc next$n "${nport:-1}")
	check doctor_perconn.next_start_cures_$n "'$next': $(cat "$TMP/next$n.kc"); server: $(grep '^CONN' "$TMP/next$n.out" | head -n 1) $(grep -v '^socktune pid=' "$TMP/next$n.err" | head -c 300)" \
		-n "$nport" -a "${again:-99}" -le 2 -a -n "$(grep '^CONN nodelay=1' "$TMP/next$n.out")"
	for p in $(pgrep -P "$np"); do kill "$p"; done # (the shell's child: the server, or the wrapper)
	kill "$np" 2>/dev/null
	wait "$np" 2>/dev/null
done <"$TMP/next.list"
check doctor_perconn.next_starts "next-start fixes run: $n ($(cat "$TMP/next.list"))" "$n" -ge 2
exit 0
