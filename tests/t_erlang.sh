#!/bin/sh
# Erlang/OTP's inets httpd under the library with a log file (optional: SKIP without erl and
# inets).  beam is threaded from the start; the library opens its log file inside the
# listen() hook and used to move it to 512, past beam's descriptor table (256 slots here):
# the kernel grew the table after an RCU grace period, 12-20 ms with httpd's socket already
# listening and its manager not yet registered, and a first request arriving then got
# HTTP 500 (a badmatch in httpd_request:body_data/2).  beam's table must be the size it is
# without the library: that is the check of the bug.  The first request is sent once
# inets:start(httpd) has returned (erl prints the port then): sent as soon as the port
# listened, it got the same 500 without the library on a loaded machine (2 runs of 8).
# tests/t_procview.sh shows the same without Erlang.
. "$(dirname "$0")/lib.sh"

if ! command -v erl >/dev/null 2>&1; then
	skip erlang_inets "erl not installed"
	exit 0
fi
if ! erl -noshell -eval 'halt(case code:which(inets) of non_existing -> 1; _ -> 0 end).' \
	>/dev/null 2>&1; then
	skip erlang_inets "erl without inets (Debian: erlang-inets)"
	exit 0
fi
mkdir -p "$TMP/www/htdocs" "$TMP/www/logs"
echo hello >"$TMP/www/htdocs/index.html"

# serve NAME [VAR=value...]: httpd on 127.0.0.1, its first request once httpd has started;
# sets FDSIZE (beam's descriptor table), STATUS (the first status line), PID
serve() {
	_n=$1
	shift
	_port=$(free_port)
	start_server -t 15 "$_n" "$@" -- erl -noshell -eval "ok = inets:start(), {ok, _} = inets:start(httpd,
		[{port, $_port}, {server_name, \"t\"}, {server_root, \"$TMP/www\"},
		 {document_root, \"$TMP/www/htdocs\"}, {bind_address, {127,0,0,1}}]),
		io:format(\"PORT ~b~n\", [$_port]),
		receive after 30000 -> ok end."
	_r=$?
	PID=$SRV_PID # erl execs erlexec, which execs beam: the same process
	FDSIZE="" STATUS=""
	if [ $_r = 0 ]; then
		FDSIZE=$(sed -n 's/^FDSize:[[:space:]]*//p' "/proc/$PID/status")
		STATUS=$($PY - "$_port" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
data = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
except OSError:
    pass
print(data.split(b"\r\n", 1)[0].decode(errors="replace") or "nothing")
EOF
)
	fi
}

stop() {
	kill "$PID" 2>/dev/null
	wait "$PID" 2>/dev/null
}

serve plain
plain_fdsize=$FDSIZE
stop
check erlang_plain_serves "without the library: '$STATUS' $(cat "$TMP/plain.out" "$TMP/plain.err" | head -c 300)" \
	-n "$plain_fdsize" -a "$STATUS" = "HTTP/1.1 200 OK"

serve logfile LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG_FILE="$TMP/erl.log"
stop
check erlang_logfile_serves "with a log file: '$STATUS' $(cat "$TMP/logfile.out" "$TMP/logfile.err" | head -c 300)" \
	"$STATUS" = "HTTP/1.1 200 OK"
check erlang_logged "log: $(cat "$TMP/erl.log" 2>/dev/null)" \
	"$(grep -c 'event=listen ' "$TMP/erl.log" 2>/dev/null)" -ge 1
check erlang_fdtable_not_grown "beam's descriptor table: $FDSIZE slots with the log file, $plain_fdsize without" \
	-n "$FDSIZE" -a "$FDSIZE" = "$plain_fdsize"
