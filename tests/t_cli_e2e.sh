#!/bin/sh
# End to end: `socktune --nodelay --backlog 4096 -- python3 -m http.server` on 127.0.0.1,
# before and after, seen from outside (ss -ltn Send-Q is a listener's backlog), in the
# library's log (event=listen nodelay=1), and from the same pid (exec in place).  Then the
# same with the small C test server, which a musl build links with musl too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cli.sh"
SOMAX=$(cat /proc/sys/net/core/somaxconn)
WANT=4096
[ "$SOMAX" -lt $WANT ] && WANT=$SOMAX # the kernel's cut; check reports it

sendq() { ss -Hltn "sport = :$1" | awk 'NR == 1 { print $3 }'; }

stop() {
	kill "$1" 2>/dev/null
	wait_gone "$1"
}

if [ $IS_MUSL = 1 ]; then
	skip e2e_http_server "musl build: a musl libsocktune cannot be preloaded into Debian's glibc python3 (the tserver case below covers musl)"
elif ! command -v ss >/dev/null 2>&1; then
	skip e2e_http_server "no ss (iproute2)"
else
	# before: python's http.server listens with backlog 5
	port=$(free_port)
	if start_server -l "$port" e2e_before -- $PY -m http.server -b 127.0.0.1 "$port"; then
		before=$(sendq "$port")
	else
		before=none
	fi
	stop $SRV_PID
	check e2e_before "Send-Q $before, want 5" "$before" = 5

	port=$(free_port)
	start_server -l "$port" e2e -- "$CMD" --nodelay --backlog 4096 --log-file "$TMP/e2e-%p.log" -- \
		$PY -m http.server -b 127.0.0.1 "$port"
	rc=$?
	pid=$SRV_PID
	if [ $rc != 0 ]; then
		fail e2e_http_server "did not listen: $(head -n 3 "$TMP/e2e.err")"
	else
		after=$(sendq "$port")
		check e2e_backlog_ss "Send-Q $after, want $WANT" "$after" = "$WANT"
		reply=$($PY -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[1], timeout=5).status)' "$port" 2>&1)
		check e2e_serves "got '$reply'" "$reply" = 200
		# %p in the log path became the server's pid: the wrapper exec'd in place.
		line=$(grep ' event=listen ' "$TMP/e2e-$pid.log" 2>/dev/null | head -n 1)
		check e2e_log_listen "log: '$line' (files: $(ls "$TMP" | grep e2e | tr '\n' ' '))" \
			-n "$line" -a "$(field "$line" nodelay)" = 1 -a \
			"$(field "$line" backlog.effective)" = "$WANT" -a "$(field "$line" pid)" = "$pid" -a \
			"$(field "$line" addr)" = "127.0.0.1:$port"
	fi
	stop $pid
fi

# The C test server: what its own getsockopt says, before and after.
if [ ! -x "$BIN/tserver" ] || [ ! -x "$BIN/kaclient" ]; then
	skip e2e_tserver "no $BIN/tserver or kaclient"
	exit 0
fi
if ! start_server ts -- "$CMD" --nodelay --backlog 4096 -- "$BIN/tserver" -b 5 -n 1 -t 10; then
	fail e2e_tserver "no PORT line: $(head -n 3 "$TMP/ts.err")"
	exit 0
fi
pid=$SRV_PID port=$SRV_PORT
after=$(sendq "$port")
"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$port" >/dev/null 2>&1
wait $pid
rc=$?
listener=$(grep '^LISTENER ' "$TMP/ts.out")
conn=$(grep '^CONN ' "$TMP/ts.out" | head -n 1)
line=$(grep ' event=listen ' "$TMP/ts.err" | head -n 1)
check e2e_tserver_status "status $rc" $rc -eq 0
check e2e_tserver_ss "Send-Q $after, want $WANT" "$after" = "$WANT"
check e2e_tserver_readback "listener: '$listener' conn: '$conn'" \
	"$(field "$listener" backlog)" = "$WANT" -a "$(field "$listener" nodelay)" = 1 -a \
	"$(field "$conn" nodelay)" = 1
check e2e_tserver_log "log: '$line'" "$(field "$line" nodelay)" = 1 -a \
	"$(field "$line" backlog.app)" = 5 -a "$(field "$line" backlog.effective)" = "$WANT" -a \
	"$(field "$line" pid)" = "$pid"
