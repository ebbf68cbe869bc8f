#!/bin/sh
# The wrapper's attach mode (socktune --attach -- PROGRAM) as an init: every signal that can
# be caught reaches the program (ALRM, PWR, VTALRM, RTMIN+3, XCPU, IO killed the wrapper and
# orphaned it), a terminal's ^C too when the program left the wrapper's process group, also
# while nobody reads its stderr (it waited there for ever); a parent that
# left SIGCHLD ignored does not turn the status into 127, and the program still gets SIGCHLD
# ignored (its cost with 9,000 idle connections: t_attach_mode_cost); 200 workers'
# listeners are all tuned (62 were); a program that daemonizes is
# followed (the wrapper exited, the daemon's listener stayed untuned), said even when what it
# left exits at once (the line was lost); a server that forks
# per connection gets one line per listener (busybox httpd: a line per child that exited,
# some naming pid 0).  Asserted on the kernel's counters: signals the program caught,
# statuses, SigIgn, each listener's backlog (ss Send-Q).
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip attach_mode "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi
sendq() { ss -Hltn "sport = :$1" | awk '{ print $3; exit }'; }

# ---- signals: each caught by the program, the wrapper still there, the program's status
cat >"$TMP/sig.py" <<'EOF'
import os, signal, sys, time
sigs = [signal.SIGALRM, signal.SIGPWR, signal.SIGVTALRM, signal.SIGRTMIN + 3, signal.SIGXCPU,
        signal.SIGIO, signal.SIGUSR1, signal.SIGHUP]
got = set()
def caught(n, _):
    got.add(n)
    print("GOT", n, flush=True)
for s in sigs:
    signal.signal(s, caught)
print("READY", " ".join(str(int(s)) for s in sigs), flush=True)
end = time.monotonic() + 60
while len(got) < len(sigs) and time.monotonic() < end:
    time.sleep(0.05)
sys.exit(0 if len(got) == len(sigs) else 5)
EOF
# (a sanitizer build's wrapper on a loaded machine started the program after more than 5 s:
# 30 s for its READY; it waits 60 s for the signals once it has said it)
start_server sig -- "$CLI" --attach -- $PY "$TMP/sig.py"
wrapper=$SRV_PID
if ! busywait 30000 file_has "$TMP/sig.out" '^READY'; then
	fail mode_forwards_every_signal "no READY from the program in 30 s, no signal sent: $(cat "$TMP/sig.out" "$TMP/sig.err")"
	kill "$wrapper" 2>/dev/null
	wait "$wrapper" 2>/dev/null
else
	# (from one process: one start of python, however loaded the machine)
	$PY -c 'import os, sys, time
for n in sys.argv[2:]:
    os.kill(int(sys.argv[1]), int(n)); time.sleep(0.05)' "$wrapper" $(sed -n 's/^READY //p' "$TMP/sig.out")
	busywait 60000 gone "$wrapper"
	wait "$wrapper"
	rc=$?
	check mode_forwards_every_signal "status $rc (want 0), caught: $(sed -n 's/^GOT //p' "$TMP/sig.out" | tr '\n' ' ')" \
		"$rc" = 0 -a "$(count_lines "$TMP/sig.out" '^GOT')" = 8
fi

# ---- ^C on the wrapper's terminal, the program in a process group of its own (GNU timeout
# makes one): the terminal's SIGINT reached only the wrapper's group, and the wrapper passed
# on none the terminal sent (the program ran on; killed, the wrapper left it orphaned)
line=$($PY "$ROOT/tests/py/ttyint.py" "$CLI" "$PY" 2>&1)
check mode_terminal_int_reaches_program "$line (want: ended 42, the program's SIGINT)" \
	"$line" = "ended 42"

# ---- its stderr a full pipe nobody reads: a SIGTERM still reaches the program, whose
# status is the wrapper's (a line written there waited for room for ever, signals unseen)
PYTHONPATH="$ROOT/tests/py" $PY - "$CLI" "$PY" >"$TMP/stuck.out" 2>&1 <<'EOF'
import os, signal, subprocess, sys, time
from fullpipe import full_pipe
r, w = full_pipe()
p = subprocess.Popen([sys.argv[1], "--attach", "--backlog", "4096", "--", sys.argv[2], "-c",
                      "import socket, time; l = socket.socket(); l.bind(('127.0.0.1', 0)); "
                      "l.listen(5); time.sleep(20)"], stderr=w)
os.close(w)
time.sleep(1.0)                                 # its listener tuned, the line not written
p.send_signal(signal.SIGTERM)
try:
    print("status=%d" % p.wait(timeout=5))
except subprocess.TimeoutExpired:
    print("status=stuck")
    p.kill()
EOF
check mode_stderr_stuck "$(cat "$TMP/stuck.out") (want -15: the program's SIGTERM, raised)" \
	"$(cat "$TMP/stuck.out")" = status=-15

# ---- a parent that left SIGCHLD ignored: the program's status, and its SIGCHLD ignored
$PY -c 'import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])' \
	"$CLI" --attach -- $PY -c 'import sys; sys.stdout.write(open("/proc/self/status").read()); sys.exit(7)' \
	>"$TMP/chld.out" 2>&1
rc=$?
ign=$($PY -c 'import sys; print((int(sys.argv[1], 16) >> 16) & 1)' "$(awk '/^SigIgn/ { print $2 }' "$TMP/chld.out")")
check mode_sigchld_ignored_status "status $rc (want 7); SIGCHLD ignored in the program: $ign; $(grep SigIgn "$TMP/chld.out")" \
	"$rc" = 7 -a "$ign" = 1

# ---- 200 workers, each with a listener of its own on one port (SO_REUSEPORT): all tuned
start_server -t 20 workers -- "$CLI" --attach --backlog 4096 -- $PY "$ROOT/tests/py/reuseport.py" 200 30
at4096() { [ "$(ss -Hltn "sport = :$SRV_PORT" | awk '$3 == 4096' | grep -c .)" = 200 ]; }
busywait 15000 at4096
check mode_200_workers "$(ss -Hltn "sport = :$SRV_PORT" | awk '$3 == 4096' | grep -c .) of 200 at 4096; lines $(count_lines "$TMP/workers.err" 'event=attach ')" \
	"$(ss -Hltn "sport = :$SRV_PORT" | awk '$3 == 4096' | grep -c .)" = 200 -a \
	"$(count_lines "$TMP/workers.err" 'event=attach ')" = 200
kill "$SRV_PID" 2>/dev/null
wait "$SRV_PID" 2>/dev/null
# shellcheck disable=SC2046 # one argument per pid: the workers, orphans now
kill $(sed -n 's/^PIDS //p' "$TMP/workers.out") 2>/dev/null

# ---- a program that daemonizes: exits 0, its daemon opens a listener later, exits 3 once
# its backlog has been read (a file the test makes; at most 20 s)
cat >"$TMP/daemon.py" <<'EOF'
import os, socket, sys, time
time.sleep(0.5)
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(5)
open(sys.argv[1], "w").write("PORT %d\n" % l.getsockname()[1])
end = time.monotonic() + 90
while not os.path.exists(sys.argv[1] + ".read") and time.monotonic() < end:
    time.sleep(0.02)
sys.exit(3)
EOF
"$CLI" --attach --backlog 4096 -- sh -c "setsid $PY '$TMP/daemon.py' '$TMP/daemon.port' >/dev/null 2>'$TMP/daemon.py.err' & exit 0" \
	>"$TMP/daemon.out" 2>"$TMP/daemon.err" &
wrapper=$!
# (30 s for its port, as for READY above; the daemon waits 90 s for the word to exit)
if ! busywait 30000 file_has "$TMP/daemon.port" '^PORT'; then
	fail mode_daemon_followed "no port from the daemon in 30 s: $(cat "$TMP/daemon.err" "$TMP/daemon.py.err")"
	touch "$TMP/daemon.port.read"
	busywait 8000 gone $wrapper
	kill $wrapper 2>/dev/null
	wait $wrapper 2>/dev/null
else
	dport=$(port_of "$TMP/daemon.port")
	busywait 10000 sh -c "ss -Hltn 'sport = :$dport' | grep -q ' 4096 '"
	q=$(sendq "$dport")
	touch "$TMP/daemon.port.read"
	busywait 8000 gone $wrapper
	wait $wrapper
	rc=$?
	check mode_daemon_followed "Send-Q $q (want 4096), status $rc (want 3, the daemon's): $(cat "$TMP/daemon.err" "$TMP/daemon.py.err")" \
		"$q" = 4096 -a "$rc" = 3 -a \
		"$(count_lines "$TMP/daemon.err" 'exited 0 and left 1 process (')" = 1
fi
# a process left that exits at once (the status taken is its own): the line that says so is
# written before the wrapper ends (it was lost in the buffer: a status of 7 from a program
# that exited 0, and not a word; 20 of 20 runs)
"$CLI" --attach -- sh -c 'sh -c "exit 7" & exit 0' >/dev/null 2>"$TMP/left.err"
rc=$?
check mode_left_said_before_exit "status $rc (want 7, the last one's), stderr: $(cat "$TMP/left.err")" \
	"$rc" = 7 -a "$(count_lines "$TMP/left.err" '^socktune: --attach: sh (pid [0-9]*) exited 0 and left 1 process (')" = 1

# ---- busybox httpd forks a child per connection: 200 requests, 4 clients at once
if command -v busybox >/dev/null && busybox httpd --help >/dev/null 2>&1; then
	mkdir "$TMP/www" && echo hello >"$TMP/www/index.html"
	p=$(free_port)
	start_server -l "$p" bb -- "$CLI" --attach --nodelay --backlog 4096 -- busybox httpd -f -p "127.0.0.1:$p" -h "$TMP/www"
	busywait 3000 sh -c "ss -Hltn 'sport = :$p' | grep -q ' 4096 '"
	$PY - "$p" >"$TMP/bb.client" <<'EOF'
import socket, sys, threading
ok = [0]
def client():
    for _ in range(50):
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
        s.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
        got = b""
        while True:
            b = s.recv(4096)
            if not b: break
            got += b
        ok[0] += b"hello" in got
        s.close()
ts = [threading.Thread(target=client) for _ in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print("ok=%d" % ok[0])
EOF
	sleep 0.3
	check mode_fork_per_connection_quiet "$(cat "$TMP/bb.client"); Send-Q $(sendq "$p"); stderr: $(head -c 600 "$TMP/bb.err")" \
		"$(cat "$TMP/bb.client")" = ok=200 -a "$(sendq "$p")" = 4096 -a \
		"$(grep -c . "$TMP/bb.err")" = 1 -a "$(count_lines "$TMP/bb.err" "^socktune pid=[0-9]* level=info event=attach fd=[0-9]* addr=127.0.0.1:$p ")" = 1
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null || :
else
	skip mode_fork_per_connection_quiet "no busybox httpd here (Debian package busybox)"
fi
