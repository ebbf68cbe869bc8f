#!/bin/sh
# socktune doctor names the processes a service is: a prefork master holds the listener and
# its workers hold the connections (nginx); a backend forked per connection holds its
# connection and not the listener (postgres).  Each holds a keep-alive connection stalled by
# the server's Nagle; doctor is given the master's pid.  Its fix, run as printed, must reach
# the connection: doctor, run again, reads TCP_NODELAY 1 on it (pidfd_getfd) and finds no
# stall.  A server that writes its title over its argv (redis: the title, then NULs) gets no
# start command, and the reason.  Servers and clients run in a network namespace of the
# test's own.
. "$(dirname "$0")/lib.sh"

if ! setup_ns NS; then
	skip doctor_service "cannot make a network namespace here (needs root and ip netns)"
	exit 0
fi
X="ip netns exec $NS"
PATH="$B:$PATH" # (the fixes name socktune: the one built here)
export PATH

# shape NAME PREFORK-ARGS...: prefork in the namespace, one keep-alive client on it, doctor
# given the master's pid (its JSON in $TMP/NAME.json); MASTER, CLIENT
shape() {
	_n=$1
	shift
	if ! SRV_WRAP="$X" start_server "$_n" -- "$BIN/prefork" -t 60 "$@"; then
		fail "$_n" "prefork did not start: $(cat "$TMP/$_n.err")"
		return 1
	fi
	MASTER=$SRV_PID # (ip netns exec and env exec it)
	$X "$BIN/kaclient" http -n 2000000 -T 40 127.0.0.1 "$SRV_PORT" >"$TMP/$_n.client" 2>&1 &
	CLIENT=$!
	sleep 0.5
	"$CLI" doctor --seconds 3 --json "$MASTER" >"$TMP/$_n.json" 2>"$TMP/$_n.derr"
	return 0
}
# role NAME ROLE: the pids prefork said have ROLE, one per line
role() {
	sed -n "s/^PID \([0-9]*\) role=$2\$/\1/p" "$TMP/$1.out"
}
# cured NAME: the attach fix of NAME's Nagle finding run as printed, then doctor again: the
# connection's TCP_NODELAY as doctor reads it, and its findings, in $TMP/NAME.after.json
cured() {
	_fix=$(finding "$TMP/$1.json" nagle-delayed-ack fix | grep '^socktune attach ')
	echo "$_fix" >"$TMP/$1.fix"
	sh -c "$_fix" >"$TMP/$1.attach" 2>&1
	"$CLI" doctor --seconds 2 --json "$MASTER" >"$TMP/$1.after.json" 2>>"$TMP/$1.derr"
}
stop_shape() {
	kill "$CLIENT" "$MASTER" 2>/dev/null
	wait "$CLIENT" "$MASTER" 2>/dev/null
	busywait 3000 sh -c "! $X ss -Hltn | grep -q ."
}

# ---- nginx: the master holds the listener, both workers too; one worker the connection ----
if shape nginx -w 2; then
	workers=$(role nginx worker | sort | tr '\n' ' ')
	owners=$(json_get "$TMP/nginx.json" listeners.0.owners | $PY -c 'import ast, sys
print(" ".join(str(o["pid"]) for o in sorted(ast.literal_eval(sys.stdin.read()), key=lambda o: o["pid"])))')
	want=$(printf '%s\n' "$MASTER" $workers | sort -n | tr '\n' ' ')
	check doctor_nginx_owners "owners '$owners', master and workers '$want'" \
		"$owners " = "$want"
	held=$(finding "$TMP/nginx.json" nagle-delayed-ack evidence.connection_pids)
	check doctor_nginx_pids "finding pid $(finding "$TMP/nginx.json" nagle-delayed-ack pid) \
(master $MASTER), connection_pids '$held' (workers: $workers); findings: $(kinds "$TMP/nginx.json")" \
		"$(finding "$TMP/nginx.json" nagle-delayed-ack pid)" = "$MASTER" -a -n "$held" -a \
		"$(echo " $workers" | grep -c " $held ")" = 1
	cured nginx
	check doctor_nginx_fix_reaches "fix '$(cat "$TMP/nginx.fix")' ($(cat "$TMP/nginx.attach")); after: \
nodelay $(json_get "$TMP/nginx.after.json" connections.worst.0.nodelay) on the worker's \
connection, findings: $(kinds "$TMP/nginx.after.json")" \
		"$(json_get "$TMP/nginx.after.json" connections.worst.0.nodelay)" = True -a \
		"$(kinds "$TMP/nginx.after.json" | grep -c '^nagle-delayed-ack$')" = 0
	stop_shape
fi

# ---- postgres: the master holds the listener only, a backend the connection ----
if shape postgres -P; then
	backend=$(role postgres backend)
	check doctor_postgres_pids "owners $(json_get "$TMP/postgres.json" listeners.0.owners), \
connection_pids '$(finding "$TMP/postgres.json" nagle-delayed-ack evidence.connection_pids)', \
backend '$backend'; findings: $(kinds "$TMP/postgres.json")" \
		-n "$backend" -a "$(finding "$TMP/postgres.json" nagle-delayed-ack \
		evidence.connection_pids)" = "$backend" -a \
		"$(json_get "$TMP/postgres.json" listeners.0.owners.0.pid)" = "$MASTER"
	cured postgres
	check doctor_postgres_fix_reaches "fix '$(cat "$TMP/postgres.fix")' ($(cat "$TMP/postgres.attach")); \
after: nodelay $(json_get "$TMP/postgres.after.json" connections.worst.0.nodelay) on the \
backend's connection, findings: $(kinds "$TMP/postgres.after.json")" \
		"$(json_get "$TMP/postgres.after.json" connections.worst.0.nodelay)" = True -a \
		"$(kinds "$TMP/postgres.after.json" | grep -c '^nagle-delayed-ack$')" = 0
	stop_shape
fi

# ---- more holders than doctor names: how many more is said ----
if SRV_WRAP="$X" start_server many -- "$BIN/prefork" -t 30 -w 40; then
	busywait 5000 sh -c "[ \$(grep -c role=worker '$TMP/many.out') = 40 ]"
	"$CLI" doctor --seconds 0.3 --json "$SRV_PID" >"$TMP/many.json" 2>"$TMP/many.derr"
	check doctor_owners_capped "owners $(json_get "$TMP/many.json" listeners.0.owners | grep -o "'pid'" | wc -l), \
not shown $(json_get "$TMP/many.json" listeners.0.owners_not_shown) (41 processes)" \
		"$(json_get "$TMP/many.json" listeners.0.owners | grep -o "'pid'" | wc -l)" = 32 -a \
		"$(json_get "$TMP/many.json" listeners.0.owners_not_shown)" = 9
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
else
	fail doctor_owners_capped "prefork did not start: $(cat "$TMP/many.err")"
fi

# ---- redis: a title over argv, padded with NULs: no start command, the reason ----
if shape redis -T; then
	fixes=$(finding "$TMP/redis.json" nagle-delayed-ack fix)
	note=$(finding "$TMP/redis.json" nagle-delayed-ack note)
	# (the title the kernel shows: "prefork 127.0.0.1:PORT" and empty words)
	case "$fixes" in
	*" -- "*) fail doctor_title_no_command "a start command from a title: $fixes" ;;
	*) case "$fixes|$note" in
		*"socktune attach --nodelay --connections --ports $SRV_PORT $MASTER"*"|"*"rewrote its command line (it shows 'prefork 127.0.0.1:$SRV_PORT' and "*" empty words)"*)
			pass doctor_title_no_command ;;
		*) fail doctor_title_no_command "fixes: $fixes; note: $note; findings: $(kinds "$TMP/redis.json")" ;;
		esac ;;
	esac
	stop_shape
fi
