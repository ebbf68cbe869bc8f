#!/bin/sh
# socktune attach --cgroup --connections: a server in a cgroup of its own, a connection open
# before the attach.  The sock_ops program attached to the cgroup tunes the next connection
# (the initial window: cwnd 40); the open one, which the program never sees, gets the
# program's options that an open connection takes (TCP_NODELAY, the cwnd clamp: ssthresh
# 20) once, through the TCP iterator, each read back by the server on its own socket; the
# initial window is said not to reach it.  --json: the connection in the cgroup's object,
# every key in socktune --schema.  After each run no program, map or link of the iterator
# is in the kernel (by the ids it said).
. "$(dirname "$0")/lib.sh"

needs_iterator cgroup_connections
cg_test_dir cgroup_connections
PAIR="$ROOT/tests/py/iterpair.py"

json() { $PY -c 'import json,sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"; }
end_of() { grep -m 1 "^$2 $3 {" "$1/ask.out" | cut -d' ' -f3-; }
ask_round() {
	: >"$1/go.$2"
	wait_file "$1/ask.out" "^DONE $2\$" 20
}

P=$(free_port)
start_server -t 10 srv -- sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG" \
	$PY "$PAIR" serve --port "$P" --wait 60 ||
	{ fail cgroup_connections "server did not start: $(cat "$TMP/srv.err")"; exit 0; }
mkdir -p "$TMP/a" "$TMP/b"
$PY "$PAIR" ask --dir "$TMP/a" --wait 60 "$P" >"$TMP/a/ask.out" 2>&1 &
wait_file "$TMP/a/ask.out" '^READY' 10
ask_round "$TMP/a" 1

"$CLI" attach --cgroup --connections --nodelay --cwnd-clamp 20 --initcwnd 40 ":$P" \
	>"$TMP/att.out" 2>"$TMP/att.err"
rc=$?
ask_round "$TMP/a" 2
c=$(grep -m 1 'event=attach-connection ' "$TMP/att.out")
check attached "status $rc: $(cat "$TMP/att.out" "$TMP/att.err")" "$rc" = 0 -a \
	-n "$(grep 'event=cgroup_attach .*connections_kept=1' "$TMP/att.out")"
check open_connection_line "$c" "$(field "$c" via)/$(field "$c" nodelay)/$(field "$c" cwnd_clamp)/$(field "$c" cgroup_id)" \
	= "bpf/1/20/$(stat -c %i "$CG")"
before=$(end_of "$TMP/a" 1 0) after=$(end_of "$TMP/a" 2 0)
check open_connection_kernel "before $before after $after" \
	"$(echo "$before" | json nodelay)/$(echo "$after" | json nodelay)/$(echo "$after" | json ssthresh)" = 0/1/20
check initcwnd_not_open "$(cat "$TMP/att.err")" \
	-n "$(grep 'level=warn event=refused .*option=initcwnd .*not on the 1 connection open there' "$TMP/att.err")"
iter_none_left nothing_left "$TMP/att.err"
# the next connection: the program's (the initial window, read by the server on its end)
$PY "$PAIR" ask --dir "$TMP/b" --wait 60 "$P" >"$TMP/b/ask.out" 2>&1 &
wait_file "$TMP/b/ask.out" '^READY' 10
ask_round "$TMP/b" 1
check next_connection_program "$(end_of "$TMP/b" 1 0)" \
	"$(end_of "$TMP/b" 1 0 | json nodelay)/$(end_of "$TMP/b" 1 0 | json cwnd)" = 1/40

# --json: one document, the open connection an object of its cgroup's, every key known
"$CLI" attach --cgroup --connections --nodelay --json ":$P" >"$TMP/att.json" 2>"$TMP/att2.err"
rc=$?
check json_connection "status $rc: $(cat "$TMP/att.json")" "$rc" = 0 -a \
	"$(json_get "$TMP/att.json" cgroups.0.sockets.0.via)" = bpf -a \
	"$(json_get "$TMP/att.json" cgroups.0.sockets.0.nodelay)" = True
bad=$(schema_problems "$TMP/att.json")
check json_schema "keys not in socktune --schema: ${bad:-none}" -z "$bad"
iter_none_left json_nothing_left "$TMP/att2.err"

# --via pidfd cannot reach the open connections here: refused before anything is done
"$CLI" attach --cgroup --connections --via pidfd --nodelay ":$P" >/dev/null 2>"$TMP/pidfd.err"
rc=$?
check via_pidfd_refused "status $rc: $(cat "$TMP/pidfd.err")" "$rc" = 2 -a \
	-n "$(grep 'through the TCP iterator only' "$TMP/pidfd.err")"
exit 0
