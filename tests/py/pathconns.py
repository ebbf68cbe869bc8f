"""Connections whose path a watch reads: pathconns.py MODE ADDR PORT N [SECONDS].
read, stall: listens on ADDR:PORT, opens N connections to it, accepts each, and then
  read   each client sends 1000 bytes the server never reads (they stay in the server's
         receive queue), the server sends 4096 bytes the client reads: nothing is lost;
  stall  the client (SO_RCVBUF 8192, set before connect) never reads, the server (SO_SNDBUF
         16384) writes until its send queue is full: data stays queued; the segments past
         the client's buffer are dropped (skmem d), the server retransmits (about once
         each, measured) and then probes the closed window;
  prints "held N" and keeps them until killed, at most SECONDS (default 60).
accept: listens on ADDR:PORT, prints "listening", accepts and closes each connection, and
  prints "accepted N" once it has accepted N, for at most SECONDS.
connect: N connections to ADDR:PORT one after the other, each closed once made; "done N".
The descriptor limit is raised to its hard limit."""
import resource, socket, sys, time

mode, addr, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
life = float(sys.argv[5]) if len(sys.argv) > 5 else 60
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
if mode == "connect":
    for _ in range(n):
        socket.create_connection((addr, port), timeout=5).close()
    print("done", n, flush=True)
    sys.exit(0)
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((addr, port))
ls.listen(4096)
end = time.monotonic() + life
if mode == "accept":
    print("listening", flush=True)
    ls.settimeout(0.5)
    got = 0
    while time.monotonic() < end:
        try:
            ls.accept()[0].close()
        except socket.timeout:
            continue
        got += 1
        if got == n:
            print("accepted", n, flush=True)
    sys.exit(0)
held = []
for _ in range(n):
    c = socket.socket()
    if mode == "stall":
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    c.connect((addr, port))
    a = ls.accept()[0]
    if mode == "read":
        c.sendall(b"c" * 1000)
        a.sendall(b"s" * 4096)
        got = 0
        while got < 4096:
            got += len(c.recv(4096 - got))
    elif mode == "stall":
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384)
        a.setblocking(False)
        try:
            for _ in range(1000):
                a.send(b"x" * 65536)
        except BlockingIOError:
            pass
    held += [c, a]
print("held", n, flush=True)
time.sleep(max(0, end - time.monotonic()))
