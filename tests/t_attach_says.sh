#!/bin/sh
# What socktune attach and the wrapper's attach mode say, and do, when they should not tune:
#  - SOCKTUNE_DISABLE=1 / --disable: nothing changed (the backlog in force read back), said
#    once; the wrapper's attach mode runs the program in place, untuned (the same pid);
#  - an option an MPTCP socket refuses: the cause said is MPTCP's, not the kernel's age (it
#    blamed "Linux 6.15 or later" on a kernel that has the option);
#  - --nodelay --connections on a broker whose client writes each message in two pieces with
#    Nagle on (bench/bsrv pub, bcli pubsub): the stall moves to the client's Nagle against the
#    server's delayed ACK, which attach now says, with the fix (before: nothing said, 44 ms per
#    exchange); the fix it prints, run as printed, cures it.
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip attach_says "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi
sendq() { ss -Hltn "sport = :$1" | awk '{ print $3; exit }'; }
LISTENER='import socket,sys,time; l=socket.socket(socket.AF_INET, socket.SOCK_STREAM, int(sys.argv[2])); l.bind(("127.0.0.1",0)); l.listen(5); print("PORT", l.getsockname()[1], "PID", __import__("os").getpid(), flush=True); time.sleep(float(sys.argv[1]))'

# ---- disabled: attach
start_server plain -- $PY -c "$LISTENER" 10 0
for how in env option; do
	if [ $how = env ]; then
		SOCKTUNE_DISABLE=1 "$CLI" attach --backlog 4096 "$SRV_PID" >"$TMP/d.out" 2>"$TMP/d.err"
	else
		"$CLI" attach --disable --backlog 4096 "$SRV_PID" >"$TMP/d.out" 2>"$TMP/d.err"
	fi
	rc=$?
	check "disable_attach_$how" "status $rc, Send-Q $(sendq "$SRV_PORT") (want 5), stdout: $(cat "$TMP/d.out"), stderr: $(cat "$TMP/d.err")" \
		"$rc" = 0 -a "$(sendq "$SRV_PORT")" = 5 -a ! -s "$TMP/d.out" -a \
		"$(cat "$TMP/d.err")" = "socktune: attach: SOCKTUNE_DISABLE=1 (--disable): nothing looked at, nothing changed"
done
kill "$SRV_PID" 2>/dev/null

# ---- disabled: the wrapper's attach mode execs the program in place
for how in env option; do
	if [ $how = env ]; then
		start_server "dm_$how" SOCKTUNE_DISABLE=1 -- "$CLI" --attach --backlog 4096 -- $PY -c "$LISTENER" 3 0
	else
		start_server "dm_$how" -- "$CLI" --disable --attach --backlog 4096 -- $PY -c "$LISTENER" 3 0
	fi
	sleep 0.3 # (a tuning pass would have come by now: 20 ms)
	ppid=$(sed -n 's/.* PID \([0-9]*\).*/\1/p' "$TMP/dm_$how.out")
	check "disable_mode_$how" "Send-Q $(sendq "$SRV_PORT") (want 5), program pid $ppid (want $SRV_PID: in place); stderr: $(cat "$TMP/dm_$how.err")" \
		"$(sendq "$SRV_PORT")" = 5 -a "$ppid" = "$SRV_PID" -a \
		"$(cat "$TMP/dm_$how.err")" = "socktune: --attach: SOCKTUNE_DISABLE=1 (--disable): $PY runs untuned"
	kill "$SRV_PID" 2>/dev/null
done

# ---- MPTCP refuses TCP_DELACK_MAX_US: the cause said is MPTCP
if $PY -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)' 2>/dev/null &&
	$PY -c 'import socket; socket.socket().setsockopt(6, 46, 5000)' 2>/dev/null; then
	start_server mptcp -- $PY -c "$LISTENER" 10 262
	"$CLI" attach --delack-max 5ms --backlog 100 "$SRV_PID" >"$TMP/m.out" 2>"$TMP/m.err"
	rc=$?
	check attach_mptcp_cause "status $rc (want 1: refused); Send-Q $(sendq "$SRV_PORT") (want 100); stderr: $(cat "$TMP/m.err")" \
		"$rc" = 1 -a "$(sendq "$SRV_PORT")" = 100 -a \
		-n "$(grep "^socktune pid=$SRV_PID level=warn event=refused fd=[0-9]* .*error=\"setsockopt TCP_DELACK_MAX_US: Protocol not available\" note=\"MPTCP sockets refuse TCP_DELACK_MAX_US" "$TMP/m.err")" -a \
		-z "$(grep 'Linux 6.15' "$TMP/m.err")"
	kill "$SRV_PID" 2>/dev/null || :
else
	skip attach_mptcp_cause "no MPTCP, or no TCP_DELACK_MAX_US, in this kernel"
fi

# ---- NODELAY on a broker: the stall moves to its client's Nagle, and attach says so
BB=$B/bench
MQ=$(free_port)
if [ -x "$BB/bsrv" ] && $PY -c 'import socket; socket.socket().setsockopt(6, 46, 5000)' 2>/dev/null; then
	env BENCH_LIFETIME=120 "$BB/bsrv" pub 127.0.0.1 "$MQ" >"$TMP/pub.out" 2>&1 &
	srv=$!
	"$BB/bcli" wait 127.0.0.1 "$MQ" 2>/dev/null
	# the stall is a race of timers: after NODELAY a connection either stalls on most
	# exchanges or on few (the server's delayed-ACK mode; measured by hand, 2 of 6 new
	# connections stalled): up to 20 clients, each attached to while it runs, 60 s at most
	t_end=$(($(date +%s) + 60))
	for try in $(seq 1 20); do
		[ "$(date +%s)" -lt "$t_end" ] || break
		# (the server's end of the last client's connection gone first: a slow server, under
		# a sanitizer, still held it, and the wait below took it for the new client's)
		busywait 5000 sh -c "! ss -Htn state established '( sport = :$MQ )' | grep -q ."
		timeout 20 "$BB/bcli" pubsub 127.0.0.1 "$MQ" 100000 >"$TMP/pub.client" 2>&1 &
		cl=$!
		# (its connection made and accepted, the server holding it, ino not 0: a loaded
		# machine starts the client late, and the server may not have accepted it yet)
		busywait 5000 sh -c "ss -Htne state established '( sport = :$MQ )' | grep -q 'ino:[1-9]'"
		sleep 0.3
		"$CLI" attach --nodelay --connections "$srv" >"$TMP/pub.attach" 2>"$TMP/pub.err"
		kill "$cl" 2>/dev/null
		wait "$cl" 2>/dev/null
		grep -q 'wait for this server.s delayed ACK' "$TMP/pub.err" && break
	done
	said=$(grep "^socktune pid=$srv level=warn event=client-nagle-stall fd=[0-9]* addr=127.0.0.1:$MQ .*note=\"its peers now wait for this server's delayed ACK" "$TMP/pub.err")
	# Nothing said in those tries: was there a moved stall to say?  A new client of the listener
	# attach set NODELAY on shows it (half or more of its exchanges over 20 ms) or not (a
	# connection that does not stall has a few: 2 to 7 of 30 seen): then both checks are
	# skipped, said
	# (up to 5 new clients, as a connection stalls or not: one that stalls is enough to say
	# the stall was there to be found)
	probe="" stalled=0
	for p in 1 2 3 4 5; do
		[ -z "$said" ] || break
		probe=$(timeout 15 "$BB/bcli" pubsub 127.0.0.1 "$MQ" 30)
		[ "$(field "$probe" n)" = 30 ] && [ "$(field "$probe" over)" -lt 15 ] && continue
		stalled=1
		break
	done
	if [ -z "$said" ] && [ "$stalled" = 0 ]; then
		skip attach_nodelay_moves_stall "no moved stall in $try tries here, nor in 5 new clients after NODELAY (the last: $probe)"
		skip attach_nodelay_moved_stall_cured "no moved stall to cure: $probe"
		kill "$srv" 2>/dev/null
		wait "$srv" 2>/dev/null || :
		exit 0
	fi
	check attach_nodelay_moves_stall "want the moved stall said: $(cat "$TMP/pub.attach") $(cat "$TMP/pub.err")" \
		-n "$said" -a -n "$(grep 'event=attach-connection .*nodelay=1' "$TMP/pub.attach")"
	fix=$(field "$said" fix.0)
	PATH="$B:$PATH" sh -c "$fix" >"$TMP/fix.out" 2>&1
	# the fix read back on the server's connection, and a new client, counted again when a
	# loaded machine held it back (tests/lib.sh cured_within)
	cure_try() {
		line=$(timeout 15 "$BB/bcli" pubsub 127.0.0.1 "$MQ" 30)
		[ "$(field "$line" n)" = 30 ] && OVER=$(field "$line" over)
		:
	}
	cured_within attach_nodelay_moved_stall_cured 5 cure_try
	check attach_nodelay_moved_stall_cured "'$fix' ($(tr '\n' ';' <"$TMP/fix.out")): a new client: $line (tries: $TRIES)" \
		-n "$fix" -a -n "$(grep 'event=attach .*delack_max_us.effective=[0-9]' "$TMP/fix.out")" -a \
		"$(field "$line" n)" = 30 -a "${OVER:-99}" -le 5
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null || : # (killed: not the script's status)
else
	skip attach_nodelay_moves_stall "no bench/bsrv, or no TCP_DELACK_MAX_US in this kernel"
fi
