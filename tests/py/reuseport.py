"""N listeners on one port (SO_REUSEPORT), each held by a process of its own: a sleep,
exec'd with it (the parent closes its copy).   reuseport.py N SECONDS [one]
With "one", this process holds all N itself (an SO_REUSEPORT group of one server), none
accepting.  Backlog 5 each.
Prints "PIDS pid..." (the holders) and "PORT n", then waits SECONDS.  SIGTERM ends the
holders started so far with it (a test that ends early leaves none for SECONDS)."""
import os, signal, socket, subprocess, sys, time

n, secs, port, ps, ls = int(sys.argv[1]), sys.argv[2], 0, [], []
one = sys.argv[3:] == ["one"]


def end(*_):
    for p in ps:
        p.kill()
    sys.exit(143)


signal.signal(signal.SIGTERM, end)
for _ in range(n):
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    l.bind(("127.0.0.1", port))
    l.listen(5)
    port = l.getsockname()[1]
    if one:
        ls.append(l)
        continue
    ps.append(subprocess.Popen(["sleep", secs], pass_fds=[l.fileno()]))
    l.close()
print("PIDS", " ".join(str(p.pid) for p in ps) if ps else os.getpid(), flush=True)
print("PORT", port, flush=True)
time.sleep(float(secs))
