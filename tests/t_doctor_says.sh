#!/bin/sh
# What doctor and the wrapper say where the user looks:
#  - doctor on a terminal shows its window's progress on stderr (a line written over itself),
#    and where stderr is a file, nothing but its "watching" line;
#  - the wrapper's warning about a Go program (LD_PRELOAD does not reach it) names what does:
#    socktune --attach / --cgroup in front of the command, socktune attach [--cgroup] PID;
#  - doctor :PORT looks in its own network namespace: for a server listening in another one
#    (a namespace this test makes) it says which process listens there and that doctor PID
#    watches it; doctor PID does; with a listener on the port here too, the other is said.
. "$(dirname "$0")/lib.sh"

# ---- the progress line: on a pty, and not on a file
if start_server srv -- "$BIN/resetsrv" -n 1 -t 30; then
	$PY - "$CLI" "$SRV_PID" "$TMP/tty.stdout" >"$TMP/tty.err" 2>&1 <<'EOF'
import os, pty, select, sys, time
cli, pid, out = sys.argv[1], sys.argv[2], sys.argv[3]
child, master = pty.fork()
if child == 0:
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.execv(cli, [cli, "doctor", "--seconds", "1.5", pid])
got, end = b"", time.monotonic() + 20
while time.monotonic() < end:
    r, _, _ = select.select([master], [], [], 1)
    if not r:
        continue
    try:
        b = os.read(master, 4096)
    except OSError:
        break
    if not b:
        break
    got += b
os.waitpid(child, 0)
import re
# updates written over each other (a CR before each), the last cleared before the report
ups = re.findall(rb"\rsocktune: doctor: [0-9.]+ of 1\.5 s; [0-9]+ connections? seen, [0-9]+ queued", got)
print("updates=%d cleared=%d %r" % (len(ups), got.endswith(b"\r" + b" " * 79 + b"\r"), got))
EOF
	tty=$(cat "$TMP/tty.err")
	check doctor_says.progress_on_tty "on the pty: $tty" \
		-n "$(printf '%s\n' "$tty" | grep '^updates=[2-9] cleared=1 ')" -a \
		-n "$(grep -F 'listeners: 1' "$TMP/tty.stdout")"
	"$CLI" doctor --seconds 1.5 "$SRV_PID" >"$TMP/file.out" 2>"$TMP/file.err"
	check doctor_says.nothing_on_a_file "stderr: $(od -c "$TMP/file.err" | head -n 8)" \
		"$(wc -l <"$TMP/file.err")" = 1 -a \
		-n "$(grep -x 'socktune: doctor: watching 1 listener for 1.5 s' "$TMP/file.err")" -a \
		"$(tr -cd '\r' <"$TMP/file.err" | wc -c)" = 0
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
fi

# ---- the wrapper's warning for a Go program names what reaches it
if [ -x "$BIN/gohttp" ]; then
	"$CLI" --nodelay -- "$BIN/gohttp" >"$TMP/go.out" 2>"$TMP/go.err" &
	gp=$!
	wait_file "$TMP/go.out" '^PORT ' 10
	kill "$gp" 2>/dev/null
	wait "$gp" 2>/dev/null
	w=$(grep 'is a Go program' "$TMP/go.err")
	check doctor_says.go_warning_remedies "warning: $w" -n "$w" -a \
		-n "$(echo "$w" | grep -F 'socktune --attach')" -a \
		-n "$(echo "$w" | grep -F 'socktune --cgroup')" -a \
		-n "$(echo "$w" | grep -F 'socktune attach PID')" -a \
		-n "$(echo "$w" | grep -F 'socktune attach --cgroup PID')"
else
	skip doctor_says.go_warning_remedies "no Go here: $BIN/gohttp not built"
fi

# ---- :PORT and a server in another network namespace
if ! setup_ns NS; then
	skip doctor_says.port_elsewhere "cannot make a network namespace here (needs root and ip netns)"
	exit 0
fi
PORT=$(free_port) || { fail doctor_says.port_elsewhere "no free port"; exit 0; }
SRV_WRAP="ip netns exec $NS" start_server ns -- "$BIN/resetsrv" -p "$PORT" -n 1 -t 30 ||
	{ fail doctor_says.port_elsewhere "resetsrv did not start: $(cat "$TMP/ns.err")"; exit 0; }
NS_PID=$SRV_PID
"$CLI" doctor --seconds 0.3 ":$PORT" >"$TMP/port.out" 2>"$TMP/port.err"
rc=$?
check doctor_says.port_elsewhere "status $rc: $(cat "$TMP/port.err")" "$rc" = 3 -a \
	-n "$(grep -F "doctor :$PORT: no TCP listener on this port here" "$TMP/port.err" |
		grep -F "process $NS_PID listens on it in network namespace" |
		grep -F "socktune doctor $NS_PID watches it there")"
"$CLI" doctor --seconds 0.3 --json "$NS_PID" >"$TMP/pid.json" 2>"$TMP/pid.err"
rc=$?
check doctor_says.pid_form_reaches "status $rc, listener port $(json_get "$TMP/pid.json" listeners.0.port): $(cat "$TMP/pid.err")" \
	"$rc" = 0 -a "$(json_get "$TMP/pid.json" listeners.0.port)" = "$PORT" -a \
	"$(json_get "$TMP/pid.json" listeners.0.pid)" = "$NS_PID"
# the same port here too: watched here, the other said
if start_server here -- "$BIN/resetsrv" -p "$PORT" -n 1 -t 30; then
	"$CLI" doctor --seconds 0.3 --json ":$PORT" >"$TMP/both.json" 2>"$TMP/both.err"
	rc=$?
	check doctor_says.port_here_and_there "status $rc, pid $(json_get "$TMP/both.json" listeners.0.pid) (here: $SRV_PID): $(cat "$TMP/both.err")" \
		"$rc" = 0 -a "$(json_get "$TMP/both.json" listeners.0.pid)" = "$SRV_PID" -a \
		-n "$(grep -F "process $NS_PID listens on this port in network namespace" "$TMP/both.err" |
			grep -F "too, which :PORT does not look in: socktune doctor $NS_PID watches it there")"
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
fi
kill "$NS_PID" 2>/dev/null
wait "$NS_PID" 2>/dev/null
exit 0
