#!/bin/sh
# socktune attach refuses, before anything is looked at (status 2, one line that says why
# and what to add), a command line that would tune nothing: no option to apply, an option
# that cannot reach a running server's sockets from outside (quick-ack, those set before
# bind()), or one that reaches connections only without --connections.  Before, each
# exited 0 having done nothing.  The listener is left as it was (its backlog, ss Send-Q).
. "$(dirname "$0")/lib.sh"
for v in $(env | sed -n 's/^\(SOCKTUNE_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip attach_refused "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi
LISTENER='import socket,time; l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen(5); print("PORT", l.getsockname()[1], flush=True); time.sleep(30)'
if ! start_server lst -- $PY -c "$LISTENER"; then
	fail attach_refused_server "listener did not start: $(cat "$TMP/lst.err")"
	exit 0
fi
port=$SRV_PORT
sendq() { ss -Hltn "sport = :$1" | awk '{ print $3; exit }'; }

# refused NAME WANT ARGS...: attach ARGS exits 2, prints nothing on stdout, says WANT (a
# grep pattern) on stderr, and the backlog is still 5
refused() {
	_n=$1 _w=$2
	shift 2
	"$CLI" attach "$@" >"$TMP/$_n.out" 2>"$TMP/$_n.err"
	_rc=$?
	check "$_n" "status $_rc (want 2), Send-Q $(sendq "$port") (want 5); stderr: $(cat "$TMP/$_n.err"); stdout: $(cat "$TMP/$_n.out")" \
		"$_rc" = 2 -a "$(sendq "$port")" = 5 -a ! -s "$TMP/$_n.out" -a \
		"$(grep -c -- "$_w" "$TMP/$_n.err")" = 1 -a "$(grep -c . "$TMP/$_n.err")" = 1
}
refused attach_nothing_to_apply 'nothing to apply.*add one, e.g. --nodelay' ":$port"
refused attach_nothing_dry_run 'nothing to apply' --dry-run ":$port"
refused attach_quickack_alone '--quickack: .*only the process itself.*--delack-max' --quickack ":$port"
refused attach_quickack_connections '--quickack: ' --quickack --connections ":$port"
refused attach_priority_no_connections '--priority reaches connections only.*add --connections' \
	--priority 3 ":$port"
refused attach_client_no_connections '--client reaches connections only.*add --connections' \
	--nodelay --client ":$port"
refused attach_before_bind '--reuseport: it is set before bind()' --nodelay --reuseport ":$port"
refused attach_syncnt '--syncnt: ' --syncnt 3 ":$port"
refused attach_library_log '--log-file: ' --nodelay --log-file "$TMP/x.log" ":$port"
refused attach_nothing_pid 'nothing to apply' "$SRV_PID"

# under --json a refusal is one document on stdout, the error object (it was written twice:
# by attach's refusal and again by the dispatcher)
refused_json() {
	_n=$1
	shift
	"$CLI" attach --json "$@" >"$TMP/$_n.out" 2>"$TMP/$_n.err"
	_rc=$?
	_doc=$($PY -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], "error" in d)' <"$TMP/$_n.out" 2>&1)
	check "$_n" "status $_rc (want 2), document: $_doc; stdout: $(cat "$TMP/$_n.out")" \
		"$_rc" = 2 -a "$_doc" = "2 True" -a "$(sendq "$port")" = 5
}
refused_json attach_json_nothing_to_apply ":$port"
refused_json attach_json_quickack --quickack ":$port"
refused_json attach_json_priority --priority 3 ":$port"

# what does reach something is not refused: an option in the environment, --priority with
# --connections (the listener's connections), --disable (said, nothing done)
SOCKTUNE_BACKLOG=64 "$CLI" attach ":$port" >"$TMP/env.out" 2>"$TMP/env.err"
rc=$?
check attach_option_from_environment "status $rc, Send-Q $(sendq "$port") (want 64): $(cat "$TMP/env.err")" \
	"$rc" = 0 -a "$(sendq "$port")" = 64
"$CLI" attach --priority 3 --connections ":$port" >"$TMP/prio.out" 2>"$TMP/prio.err"
rc=$?
check attach_priority_connections "status $rc: $(cat "$TMP/prio.err" "$TMP/prio.out")" "$rc" = 0 -a \
	-n "$(grep 'event=attach .*priority=3' "$TMP/prio.out")"
"$CLI" attach --disable ":$port" >/dev/null 2>"$TMP/dis.err"
check attach_disable_not_refused "status $?: $(cat "$TMP/dis.err")" $? = 0
