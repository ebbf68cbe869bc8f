"""stderrpipe.py full|closed CMD...: run CMD with stderr a pipe nobody reads.

full:   the pipe is filled to the brim first and its read end stays open (held by CMD
        itself), so every write to stderr would block forever.
closed: the read end is closed, so a write to stderr raises SIGPIPE (restored to its default
        action here: Python ignores it, and an ignored signal survives exec).
Exits with CMD's status (128+N for a signal)."""
import fcntl
import os
import signal
import sys

mode, cmd = sys.argv[1], sys.argv[2:]
r, w = os.pipe()
if mode == "full":
    fl = fcntl.fcntl(w, fcntl.F_GETFL)
    fcntl.fcntl(w, fcntl.F_SETFL, fl | os.O_NONBLOCK)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    try:
        while True:
            os.write(w, b"x")
    except BlockingIOError:
        pass
    fcntl.fcntl(w, fcntl.F_SETFL, fl)
    os.set_inheritable(r, True)
else:
    os.close(r)
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.dup2(w, 2)
    os.execv(cmd[0], cmd)
os.close(w)
_, status = os.waitpid(pid, 0)
sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
