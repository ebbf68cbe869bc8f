#!/bin/sh
# socktune attach --nodelay on a server that sets TCP_NODELAY back to 0 on every connection it
# accepts (hyper 0.14, Erlang inets): the listener is tuned, and the kernel hands its 1 to each
# new connection, which the server then resets, so attach's nodelay=1 did not hold (44 ms
# stalls).  attach reads back the connections made after the listener was tuned and says, in
# one warn line, which option the program resets, both values and what holds (attach --cgroup,
# or the preload); a server that leaves it alone gets no such line.  Asserted on what the
# kernel reports to the server (TCP_NODELAY as accepted, and after its own setsockopt) and on
# counts of lines; a client connects all along the attach, so new connections are there.
# A server slow to accept holds, when attach tunes its listener, connections the kernel made
# before with the old 0, queued (no inode yet): accepted after the tune, they are still not
# the program's doing, and get no line; those made after the tune are judged all the same.
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip attach_reset "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi

# connect_along NAME FAMILY PORT [BURST]: BURST connections to PORT at once (default 0, then
# "burst=N" printed), then one every 20 ms, each kept, until $TMP/NAME.stop appears (at most
# 400, or 20 s)
connect_along() {
	$PY - "$(host_of "$2")" "$3" "$TMP/$1.stop" "${4:-0}" >"$TMP/$1.client" 2>&1 <<'EOF' &
import os, socket, sys, time
held, end = [], time.monotonic() + 20
for _ in range(int(sys.argv[4])):
    held.append(socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5))
if held:
    print("burst=%d" % len(held), flush=True)
while not os.path.exists(sys.argv[3]) and len(held) < 400 and time.monotonic() < end:
    held.append(socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5))
    time.sleep(0.02)
print("held=%d" % len(held), flush=True)
EOF
}

# attach_along NAME FAMILY FLAGS [attach args]: nodelayoff FLAGS (-r: it resets; -w MS: it
# accepts nothing until attach tuned its listener, then 4 connections made before wait in its
# accept queue) and a client connecting along, then socktune attach --nodelay [args] PID; its
# status in $rc, its lines in $TMP/NAME.attach (stdout) and $TMP/NAME.aerr (stderr); the
# server ended after
attach_along() {
	_n=$1 _f=$2 _r=$3
	shift 3
	if ! start_server "$_n" -- "$BIN/nodelayoff" "-$_f" $_r -t 30; then
		fail "$_n" "nodelayoff did not start: $(cat "$TMP/$_n.err")"
		return 1
	fi
	_srv=$SRV_PID
	case " $_r " in
	*" -w "*)
		connect_along "$_n" "$_f" "$SRV_PORT" 4
		_cl=$!
		wait_file "$TMP/$_n.client" '^burst=4' 10 # (queued: the server accepts none yet)
		;;
	*)
		connect_along "$_n" "$_f" "$SRV_PORT"
		_cl=$!
		wait_file "$TMP/$_n.out" '^CONN i=0 ' 10 # (the client connects before attach starts)
		;;
	esac
	"$CLI" attach --nodelay "$@" "$_srv" >"$TMP/$_n.attach" 2>"$TMP/$_n.aerr"
	rc=$?
	wait_file "$TMP/$_n.out" 'accepted_nodelay=1' 10 # (one made from the tuned listener)
	: >"$TMP/$_n.stop"
	wait "$_cl"
	kill "$_srv" 2>/dev/null
	wait "$_srv" 2>/dev/null
	return 0
}

for fam in 4 6; do
	if [ $fam = 6 ] && ! $PY -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
		skip attach_reset_ip6 "no IPv6 loopback here"
		continue
	fi
	# ---- the server resets: one line, the option, both values, the cure
	attach_along reset$fam $fam -r || continue
	w=$(grep '^socktune pid=[0-9]* level=warn event=reset-per-connection ' "$TMP/reset$fam.aerr")
	evidence="the server's connections: $(grep -c 'accepted_nodelay=1 nodelay=0' "$TMP/reset$fam.out") accepted with 1 and reset to 0"
	check attach_reset_said_ip$fam "status $rc; $evidence; want one reset-per-connection line: $(head -c 700 "$TMP/reset$fam.aerr")" \
		"$rc" = 0 -a "$(count_lines "$TMP/reset$fam.aerr" 'event=reset-per-connection')" = 1 -a \
		"$(field "$w" option)" = nodelay -a "$(field "$w" listener_value)" = 1 -a \
		"$(field "$w" accepted_value)" = 0 -a \
		"$(grep -c 'accepted_nodelay=1 nodelay=0' "$TMP/reset$fam.out")" -ge 1
	check attach_reset_cure_ip$fam "want fix.0 'socktune attach --cgroup --nodelay PID' and the preload named: $w" \
		"$(field "$w" fix.0)" = "socktune attach --cgroup --nodelay $(field "$w" pid)" -a \
		-n "$(field "$w" note | grep -F 'socktune --nodelay -- PROGRAM')"
	check attach_reset_listener_line_ip$fam "want the attach line, nodelay=1: $(cat "$TMP/reset$fam.attach")" \
		"$(count_lines "$TMP/reset$fam.attach" 'event=attach .*nodelay=1')" = 1

	# ---- the server leaves it alone: no line, and its new connections kept the 1
	attach_along keep$fam $fam "" || continue
	check attach_reset_quiet_ip$fam "status $rc; want no reset-per-connection line, and connections accepted after with nodelay 1 kept ($(grep -c 'accepted_nodelay=1 nodelay=1' "$TMP/keep$fam.out")): $(head -c 700 "$TMP/keep$fam.aerr")" \
		"$rc" = 0 -a "$(count_lines "$TMP/keep$fam.aerr" 'event=reset-per-connection')" = 0 -a \
		"$(grep -c 'accepted_nodelay=1 nodelay=1' "$TMP/keep$fam.out")" -ge 1

	# ---- slow to accept: connections queued before the tune, accepted after with the old 0
	attach_along queued$fam $fam "-w 150" || continue
	evidence="accepted after the tune with the old 0: $(grep -c 'accepted_nodelay=0 nodelay=0' "$TMP/queued$fam.out"), with the new 1 kept: $(grep -c 'accepted_nodelay=1 nodelay=1' "$TMP/queued$fam.out")"
	check attach_reset_queued_quiet_ip$fam "status $rc; $evidence; want no reset-per-connection line: $(head -c 700 "$TMP/queued$fam.aerr")" \
		"$rc" = 0 -a "$(count_lines "$TMP/queued$fam.aerr" 'event=reset-per-connection')" = 0 -a \
		"$(grep -c 'accepted_nodelay=0 nodelay=0' "$TMP/queued$fam.out")" -ge 1 -a \
		"$(grep -c 'accepted_nodelay=1 nodelay=1' "$TMP/queued$fam.out")" -ge 1
	attach_along queuedreset$fam $fam "-r -w 150" || continue
	w=$(grep '^socktune pid=[0-9]* level=warn event=reset-per-connection ' "$TMP/queuedreset$fam.aerr")
	evidence="accepted after the tune with the old 0: $(grep -c 'accepted_nodelay=0' "$TMP/queuedreset$fam.out"), with the new 1 and reset: $(grep -c 'accepted_nodelay=1 nodelay=0' "$TMP/queuedreset$fam.out")"
	check attach_reset_queued_said_ip$fam "status $rc; $evidence; want one reset-per-connection line: $(head -c 700 "$TMP/queuedreset$fam.aerr")" \
		"$rc" = 0 -a "$(count_lines "$TMP/queuedreset$fam.aerr" 'event=reset-per-connection')" = 1 -a \
		"$(field "$w" accepted_value)" = 0 -a \
		"$(grep -c 'accepted_nodelay=0' "$TMP/queuedreset$fam.out")" -ge 1 -a \
		"$(grep -c 'accepted_nodelay=1 nodelay=0' "$TMP/queuedreset$fam.out")" -ge 1
done

# ---- --json: the warning in the document, its keys in the schema
attach_along resetjson 4 -r --json
check attach_reset_json "status $rc; want one warning of kind reset-per-connection: $(head -c 700 "$TMP/resetjson.attach")" \
	"$rc" = 0 -a "$(json_get "$TMP/resetjson.attach" warnings.0.kind)" = reset-per-connection -a \
	"$(json_get "$TMP/resetjson.attach" warnings.0.accepted_value)" = 0
check attach_reset_json_schema "$(schema_problems "$TMP/resetjson.attach")" -z "$(schema_problems "$TMP/resetjson.attach")"
