#!/bin/sh
# The wrapper's attach mode reaches a program, or a descendant of it, that runs in another
# network namespace (`socktune --attach -- ip netns exec NS server`, or a supervisor that
# starts a worker so): its listeners are looked at in that namespace, as `socktune attach
# PID` does.  Before, only the wrapper's own namespace was dumped: the listener kept its
# backlog of 5, and nothing was said.  Asserted on the listener's backlog in force (ss
# Send-Q in the namespace); the namespace's sock_diag socket is let go once no process of
# the program is left there (else it would keep the namespace and its interfaces alive).
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip attach_mode_netns "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! setup_ns NS 2>/dev/null; then
	skip attach_mode_netns "needs root and ip netns"
	exit 0
fi
SERVE='import socket,sys,time; l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen(5); print("PORT", l.getsockname()[1], flush=True); time.sleep(float(sys.argv[1]))'
sendq_ns() { ip netns exec "$NS" ss -Hltn "sport = :$1" | awk '{ print $3; exit }'; }
queue_is() { [ "$(sendq_ns "$1")" = "$2" ]; }

# the program itself, exec'd into the namespace by ip netns exec (the same pid)
if start_server prog -- "$CLI" --attach --backlog 999 -- ip netns exec "$NS" $PY -c "$SERVE" 20; then
	busywait 5000 queue_is "$SRV_PORT" 999
	check mode_netns_program "Send-Q $(sendq_ns "$SRV_PORT") (want 999); $(cat "$TMP/prog.err")" \
		"$(sendq_ns "$SRV_PORT")" = 999 -a "$(count_lines "$TMP/prog.err" "event=attach .*backlog.effective=999")" = 1
else
	fail mode_netns_program "no server: $(cat "$TMP/prog.err")"
fi
kill "$SRV_PID" 2>/dev/null

# a worker the program starts there (a child of a shell that waits for it)
if start_server child -- "$CLI" --attach --backlog 998 -- sh -c "ip netns exec $NS $PY -c '$SERVE' 20 & wait"; then
	busywait 5000 queue_is "$SRV_PORT" 998
	check mode_netns_descendant "Send-Q $(sendq_ns "$SRV_PORT") (want 998); $(cat "$TMP/child.err")" \
		"$(sendq_ns "$SRV_PORT")" = 998
else
	fail mode_netns_descendant "no server: $(cat "$TMP/child.err")"
fi
wrapper=$SRV_PID

# the wrapper's sock_diag socket in that namespace is there while a process of the program
# is, and let go within a walk of the family once none is (the program, a shell outside it,
# still running)
# (ss names a netlink socket's process as tcpdiag:COMM/PID)
# (the count the wait saw is the one checked: the worker lives until the test has seen the
# socket, 30 s at most, or 60 s without a word; a walk of every process's descriptors by ss
# under load, and a sanitizer build's wrapper, can take many seconds)
UNTIL='import os,socket,sys,time; l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen(5); print("PORT", l.getsockname()[1], flush=True)
end = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < end: time.sleep(0.02)'
nl_held() { ip netns exec "$NS" ss -H -f netlink -p 2>/dev/null | grep -c "/$1 "; }
nl_some() { during=$(nl_held "$1"); [ "$during" -ge 1 ]; }
nl_none() { [ "$(nl_held "$1")" = 0 ]; }
if start_server gone -- "$CLI" --attach -- sh -c "ip netns exec $NS $PY -c '$UNTIL' '$TMP/gone.go'; exec sleep 60"; then
	gw=$SRV_PID
	during=0
	busywait 30000 nl_some "$gw"
	touch "$TMP/gone.go"
	busywait 20000 nl_none "$gw"
	after=$(nl_held "$gw")
	check mode_netns_let_go "the wrapper's netlink sockets in the namespace: $during while the worker ran, $after after (want 1, 0)" \
		"$during" -ge 1 -a "$after" = 0 -a -n "$(ps -o pid= -p "$gw")"
else
	fail mode_netns_let_go "no server: $(cat "$TMP/gone.err")"
fi
kill "$wrapper" "$gw" 2>/dev/null || :
