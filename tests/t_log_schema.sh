#!/bin/sh
# The library's log lines are the logfmt form of the same records as every --json document:
# each key is one of `socktune --schema` (a group's member as group.member, an array's item
# as name.N, or a table name such as keepalive.idle), its value of the table's type (integer,
# boolean 0/1, number, string), no key twice, and each line starts "socktune pid= level=
# event=".  The library is run in the scenarios that make most of its events (a listen with
# a backlog and a buffer clamp, a dry run, a backlog lowered, refusals, configuration
# errors, an exec without the library, a stats file and its summary, a client connection,
# an app's own setsockopt under precedence, an ephemeral port, a relisten, a log file that
# cannot be opened); tests/py/logfmt_check.py checks every line.
. "$(dirname "$0")/lib.sh"

"$CLI" --schema >"$TMP/schema" 2>&1 || { fail log_schema_table "socktune --schema failed"; exit 0; }
somax=$(cat /proc/sys/net/core/somaxconn)
rmax=$(cat /proc/sys/net/core/rmem_max)
big=$((somax < 32768 ? somax * 2 : 65535))
buf=$((rmax * 2))
n=0
# run VAR=value... CMD...: CMD under the preload with that environment; its stderr kept
run() {
	n=$((n + 1))
	env LD_PRELOAD="$LIB" "$@" >"$TMP/run$n.out" 2>"$TMP/run$n.err" </dev/null
}
serve() { # NAME CONNS VAR=value... (tserver -b -1: the kernel's maximum, lowered by a BACKLOG)
	_n=$1 _c=$2
	shift 2
	if ts_start "$_n" LD_PRELOAD="$LIB" "$@" -- -n "$_c" -b -1 -t 10; then
		"$BIN/kaclient" burst -n "$_c" -T 5 127.0.0.1 "$SRV_PORT" >/dev/null 2>&1
		wait_server
	fi
	cp "$TMP/$_n.err" "$TMP/serve-$_n.err"
}

# a listen with a backlog and a buffer clamp, the per-connection work at debug, a stats file
serve clamp 2 SOCKTUNE_LOG=debug SOCKTUNE_BACKLOG_MIN="$big" SOCKTUNE_RCVBUF="$buf" \
	SOCKTUNE_SNDBUF="$buf" SOCKTUNE_NODELAY=1 SOCKTUNE_QUICKACK=1 SOCKTUNE_KEEPALIVE=30:10:5 \
	SOCKTUNE_DELACK_MAX=5ms SOCKTUNE_FASTOPEN=16 SOCKTUNE_STATS="$TMP/st.%p"
# the same as a dry run; a backlog lowered from the kernel's maximum
serve dry 1 SOCKTUNE_DRY_RUN=1 SOCKTUNE_BACKLOG="$big" SOCKTUNE_RCVBUF="$buf" SOCKTUNE_NODELAY=1
serve lowered 1 SOCKTUNE_BACKLOG=16 SOCKTUNE_NODELAY=1 SOCKTUNE_RTO_MIN=5ms
# configuration errors, and an unknown variable
serve config 1 SOCKTUNE_BACKLOG=abc SOCKTUNE_RCVBUF=1Q SOCKTUNE_BOGUS=1 SOCKTUNE_NODELAY=1
# refusals: an unknown congestion name; SO_MARK and SO_RCVBUFFORCE without CAP_NET_ADMIN
serve cc 1 SOCKTUNE_CONGESTION=nosuchcc SOCKTUNE_NODELAY=1 SOCKTUNE_BINDTODEVICE=nosuchdev0
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	TS_CMD="setpriv --reuid 65534 --regid 65534 --clear-groups $BIN/tserver" \
		serve nocap 1 SOCKTUNE_MARK=5 SOCKTUNE_RCVBUF="$buf" SOCKTUNE_RCVBUF_FORCE=1 \
		SOCKTUNE_LOG_FILE=/nonexistent/socktune.log
else
	serve nocap 1 SOCKTUNE_LOG_FILE=/nonexistent/socktune.log SOCKTUNE_NODELAY=1
fi
# an exec that drops the library
run SOCKTUNE_NODELAY=1 $PY -c '
import os, socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
os.set_inheritable(s.fileno(), True)
os.execve("/bin/true", ["true"], {})'
# a stats file that cannot be made; a listen() without bind() (an ephemeral port)
run SOCKTUNE_STATS=/nonexistent/dir/st SOCKTUNE_NODELAY=1 $PY -c '
import socket
s = socket.socket(); s.listen(1)
t = socket.socket(socket.AF_INET6); t.bind(("::1", 0)); t.listen(1)'
# an outgoing connection
start_server plain -- $PY "$ROOT/tests/py/lineserver.py" 4 &&
	run SOCKTUNE_CLIENT=1 SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF="$buf" SOCKTUNE_QUICKACK=1 $PY -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5); c.close()' "$SRV_PORT"
# the app's own setsockopt, under both precedences
for prec in policy app; do
	SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=256K SOCKTUNE_PRIORITY=3 SOCKTUNE_PRECEDENCE=$prec \
		SOCKTUNE_LOG=debug opt_serve prec-$prec 4 1 --app-nodelay-off --app-rcvbuf 65536 \
		--app-priority 1
	cp "$TMP/prec-$prec.err" "$TMP/serve-prec-$prec.err"
done
# listen() again on a tuned listener
if start_server relisten LD_PRELOAD="$LIB" SOCKTUNE_BACKLOG_MAX=64 SOCKTUNE_NODELAY=1 \
	SOCKTUNE_LOG=debug -- "$BIN/relisten" -b 5 -B 1000 -B 20 -n 1 -t 5; then
	"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null 2>&1
	wait_server
fi
cp "$TMP/relisten.err" "$TMP/serve-relisten.err"

$PY "$ROOT/tests/py/logfmt_check.py" "$TMP/schema" "$TMP"/run*.err "$TMP"/serve-*.err \
	>"$TMP/problems" 2>"$TMP/events"
if [ "$(cat "$TMP/problems")" = ok ]; then
	pass log_keys_in_schema
else
	fail log_keys_in_schema "$(wc -l <"$TMP/problems") problems:
$(cat "$TMP/problems")"
fi
# the scenarios made the events they are for (a check that passes on no lines checks nothing)
missing=""
for e in listen clamp backlog-lowered config setsockopt exec-untuned stats summary client \
	app-override accept inherit-check; do
	grep -qx "$e" "$TMP/events" || missing="$missing $e"
done
check log_events_seen "events not seen:$missing (seen: $(tr '\n' ' ' <"$TMP/events"))" -z "$missing"
# (ST_LOG_SCHEMA_KEEP=FILE: every line checked, kept in FILE to read)
[ -z "${ST_LOG_SCHEMA_KEEP:-}" ] || grep -h '^socktune pid=' "$TMP"/run*.err "$TMP"/serve-*.err >"$ST_LOG_SCHEMA_KEEP"
