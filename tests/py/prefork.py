"""A server whose master holds the listener and forks a worker for each connection it
accepts, then closes its own copy of the connection: the worker alone serves it.
   prefork.py keep|drop
keep: the worker keeps its copy of the listener (a prefork server's workers); drop: it
closes it (PostgreSQL's backends hold the connection only).  Each request (up to a blank
line) gets its answer in two writes, the headers then the body, so the server's Nagle holds
the body until the client's delayed ACK: ~40 ms a request while TCP_NODELAY is 0.  The body
says the connection's TCP_NODELAY as the worker reads it.  Prints "PORT n", then
"WORKER pid" for each connection.  Gives up after 30 s."""
import os, signal, socket, sys, time

mode = sys.argv[1]
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(5)
print("PORT", ls.getsockname()[1], flush=True)
signal.signal(signal.SIGCHLD, signal.SIG_IGN)


def serve(c):
    c.settimeout(30)
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            got = c.recv(65536)
            if not got:
                return
            buf += got
        buf = buf.split(b"\r\n\r\n", 1)[1]
        body = b"nodelay=%d\n" % c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
        c.sendall(body)


deadline = time.monotonic() + 30
ls.settimeout(1)
while time.monotonic() < deadline:
    try:
        c, _ = ls.accept()
    except socket.timeout:
        continue
    pid = os.fork()
    if pid == 0:
        if mode == "drop":
            ls.close()
        try:
            serve(c)
        except OSError:
            pass
        os._exit(0)
    print("WORKER", pid, flush=True)
    c.close()
