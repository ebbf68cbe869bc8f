#!/bin/sh
# socktune attach holds a copy of a target's socket only for the change, never while it
# writes: with its stdout blocked (a pipe nobody reads yet: `attach ... | less`), it holds no
# copy of the target's sockets, a connection the target closes ends, and a target that
# closes its listener and binds the port again (a reload) succeeds.  A copy held across the
# write kept that socket alive (an epoll server read EBADF for it in a loop; a reload failed
# with EADDRINUSE).  Asserted on the kernel's view: attach's descriptor table
# (/proc/PID/fd), the connections ss still shows, bind()'s result.
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip attach_copies "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi

# the target: a listener and 80 connections accepted on it; at GOFILE a reload: every one of
# them closed, the port bound and listened on again
cat >"$TMP/reload.py" <<'EOF'
import errno, os, socket, subprocess, sys, time
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", 0)); l.listen(128)
port = l.getsockname()[1]
client = subprocess.Popen([sys.executable, "-c", """
import socket, sys, time
c = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5) for _ in range(80)]
time.sleep(20)""", str(port)])
conns = [l.accept()[0] for _ in range(80)]
print("PORT", port, flush=True)
for _ in range(400):
    if os.path.exists(sys.argv[1]): break
    time.sleep(0.025)
for c in conns: c.close()
l.close()
n = socket.socket(); n.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    n.bind(("127.0.0.1", port)); n.listen(5); print("REBIND ok", flush=True)
except OSError as e:
    print("REBIND", errno.errorcode.get(e.errno, e.errno), flush=True)
time.sleep(5)
client.kill()
EOF
start_server reload -- $PY "$TMP/reload.py" "$TMP/go"
target=$SRV_PID port=$SRV_PORT

# attach with its stdout a pipe of one page, full before it starts; once it is blocked
# writing: its copies of the target's sockets counted, the reload asked for, and the
# target's connections the kernel still has open counted (the target closed them all); then
# the pipe read, and attach's status
PYTHONPATH="$ROOT/tests/py" $PY - "$CLI" "$target" "$TMP/go" "$TMP/reload.out" "$port" >"$TMP/blocked" 2>&1 <<'EOF'
import os, subprocess, sys, time
from fullpipe import full_pipe
cli, target, go, out, port = sys.argv[1:6]
r, w = full_pipe()
p = subprocess.Popen([cli, "attach", "--nodelay", "--backlog", "4096", "--connections", target],
                     stdout=w)
os.close(w)
def wchan():
    try: return open("/proc/%d/wchan" % p.pid).read()
    except OSError: return ""
for _ in range(200):                            # blocked in the pipe's write (10 s at most)
    if "pipe" in wchan() or p.poll() is not None: break
    time.sleep(0.05)
theirs = set()
for fd in os.listdir("/proc/%s/fd" % target):
    try: theirs.add(os.readlink("/proc/%s/fd/%s" % (target, fd)))
    except OSError: pass
copies = 0
for fd in os.listdir("/proc/%d/fd" % p.pid):
    try: l = os.readlink("/proc/%d/fd/%s" % (p.pid, fd))
    except OSError: continue
    copies += l.startswith("socket:") and l in theirs
print("blocked=%d copies=%d" % ("pipe" in wchan(), copies))
open(go, "w").close()
for _ in range(200):
    if "REBIND" in open(out).read(): break
    time.sleep(0.05)
time.sleep(0.2)
ss = subprocess.run(["ss", "-Htn", "state", "established", "( sport = :%s )" % port],
                    capture_output=True, text=True).stdout
print("alive=%d" % len(ss.splitlines()))
data = b""
while True:
    b = os.read(r, 65536)
    if not b: break
    data += b
print("status=%d lines=%d" % (p.wait(timeout=10), data.count(b"event=attach")))
EOF
cat "$TMP/blocked" | sed 's/^/# /'
rebind=$(sed -n 's/^REBIND //p' "$TMP/reload.out")
check copies_none_while_blocked "$(cat "$TMP/blocked")" \
	-n "$(grep '^blocked=1 copies=0$' "$TMP/blocked")"
check copies_reload_rebinds "the target's bind after its close: ${rebind:-nothing said} (want ok)" "$rebind" = ok
check copies_closed_ends_them "$(cat "$TMP/blocked")" -n "$(grep '^alive=0$' "$TMP/blocked")"
# (the listener's line first, blocked; the connections closed meanwhile are not said)
check copies_line_written "$(cat "$TMP/blocked")" -n "$(grep '^status=0 lines=[1-9]' "$TMP/blocked")"
