"""The wrapper's attach mode on a terminal of its own (a pty), its program in a process group
of its own (setpgid, as GNU timeout or a shell with job control make one), and a ^C typed
there: the terminal sends SIGINT to its foreground group, the wrapper's.
    ttyint.py SOCKTUNE PYTHON
Prints "ended STATUS" (the program exits 42 on SIGINT, 5 after 10 s) or "still running 5 s
after ^C" (the wrapper is then killed, and the program with it)."""
import os, pty, select, signal, sys, time

cli, py = sys.argv[1], sys.argv[2]
prog = r'''
import os, signal, sys, time
os.setpgid(0, 0)
signal.signal(signal.SIGINT, lambda *a: sys.exit(42))
print("READY", os.getpid(), flush=True)
time.sleep(10)
sys.exit(5)
'''
pid, master = pty.fork()
if pid == 0:
    os.execv(cli, [cli, "--attach", "--", py, "-c", prog])


def read_some(timeout):
    try:
        r, _, _ = select.select([master], [], [], timeout)
        return os.read(master, 1024) if r else b""
    except OSError:
        return b""


out, end = b"", time.monotonic() + 10
while b"READY" not in out and time.monotonic() < end:
    out += read_some(0.5)
time.sleep(0.3)
os.write(master, b"\x03")
end, status = time.monotonic() + 5, None
while status is None and time.monotonic() < end:
    p, st = os.waitpid(pid, os.WNOHANG)
    if p:
        status = st
    else:
        read_some(0.1)
if status is None:
    print("still running 5 s after ^C", flush=True)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    words = out.split()
    if b"READY" in words:
        try:
            os.kill(int(words[words.index(b"READY") + 1]), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass
else:
    print("ended", os.waitstatus_to_exitcode(status), flush=True)
