#!/bin/sh
# socktune --cgroup with --backlog: the backlog is listen()'s argument, out of a sock_ops
# program's reach, so the cgroup wrapper raises its program's listeners' backlog from outside,
# as the attach mode does (a pass every 20 ms), while the program sets the rest.  A static
# server (no preload reaches it) that listens with backlog 5: the kernel reports the backlog
# asked for (the somaxconn cut named), its connections have TCP_NODELAY from the program, and
# the wrapper's line says what took effect (before: the command was refused, status 2).
# attach --cgroup still refuses it, naming attach --backlog.  Asserted on the listener's
# backlog as the kernel reports it (tcpi_sacked through tserver, ss Send-Q).
. "$(dirname "$0")/lib.sh"

if [ ! -x "$BIN/tserver-static" ]; then
	skip cgroup_backlog "no $BIN/tserver-static (make test-bins)"
	exit 0
fi
cg_needs cgroup_backlog
somaxconn=$(cat /proc/sys/net/core/somaxconn)
want=4096
[ "$somaxconn" -lt $want ] && want=$somaxconn
sendq() { ss -Hltn "sport = :$1" | awk '{ print $3; exit }'; }

for fam in 4 6; do
	if [ $fam = 6 ] && ! $PY -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
		skip cgroup_backlog_ip6 "no IPv6 loopback here"
		continue
	fi
	n=cg$fam
	if ! start_server $n -- "$CLI" --cgroup --nodelay --backlog 4096 -- "$BIN/tserver-static" -$fam \
		-b 5 -n 3 -m hold -t 20; then
		fail cgroup_backlog_ip$fam "the wrapper or its server did not start: $(head -c 400 "$TMP/$n.err")"
		continue
	fi
	# (the pass comes within 20 ms of the listen; a connection before it would get 5)
	busywait 5000 sh -c "[ \"\$(ss -Hltn 'sport = :$SRV_PORT' | awk '{ print \$3; exit }')\" = $want ]"
	q=$(sendq "$SRV_PORT")
	"$BIN/kaclient" burst -n 3 -T 5 "$(host_of $fam)" "$SRV_PORT" >"$TMP/$n.client"
	wait_server
	rc=$?
	check cgroup_backlog_ip$fam "status $rc; Send-Q $q (want $want, somaxconn $somaxconn); CONN backlogs: $(grep '^CONN' "$TMP/$n.out" | sed 's/.* backlog=\([0-9-]*\).*/\1/' | tr '\n' ' ')" \
		"$rc" = 0 -a "$q" = $want -a "$(grep -c "^CONN .* backlog=$want " "$TMP/$n.out")" = 3
	check cgroup_backlog_nodelay_ip$fam "want nodelay=1 on the 3 connections (the program's): $(grep '^CONN' "$TMP/$n.out" | tr '\n' '|')" \
		"$(grep -c '^CONN .* nodelay=1 ' "$TMP/$n.out")" = 3
	line=$(grep '^socktune pid=[0-9]* level=info event=attach ' "$TMP/$n.err")
	check cgroup_backlog_said_ip$fam "want one event=attach line, backlog 5 -> $want, no other option: $(head -c 600 "$TMP/$n.err")" \
		"$(count_lines "$TMP/$n.err" 'event=attach ')" = 1 -a "$(field "$line" backlog.before)" = 5 -a \
		"$(field "$line" backlog.effective)" = $want -a -z "$(field "$line" nodelay)"
	if [ "$somaxconn" -lt 4096 ]; then
		check cgroup_backlog_clamp_named_ip$fam "want a backlog-clamped line naming net.core.somaxconn: $(head -c 600 "$TMP/$n.err")" \
			-n "$(grep 'event=backlog-clamped .*net.core.somaxconn' "$TMP/$n.err")"
	fi
done

# attach --cgroup: the backlog is still not a sock_ops program's; the refusal names attach
"$CLI" attach --cgroup --backlog 4096 $$ >/dev/null 2>"$TMP/attachcg.err"
rc=$?
check cgroup_backlog_attach_cgroup_refused "status $rc (want 2): $(cat "$TMP/attachcg.err")" \
	"$rc" = 2 -a -n "$(grep -F 'socktune attach --backlog N PID (without --cgroup)' "$TMP/attachcg.err")"
