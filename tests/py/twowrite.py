"""Keep-alive client that writes each request in two small writes (Nagle on, as most
clients leave it) and counts requests slower than 30 ms (the delayed ACK waits at least
40 ms: a margin for a busy machine).  Prints one JSON line with the count and the
TCP_NODELAY / SO_RCVBUF the kernel reports on its socket."""
import json, socket, sys, time

host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection((host, port), timeout=5)
over = 0
for i in range(n):
    t = time.monotonic()
    s.sendall(b"GET /x")
    s.sendall(b" HTTP/1.1\n")
    got = b""
    while not got.endswith(b"\n"):
        chunk = s.recv(100)
        if not chunk:
            sys.exit("server closed")
        got += chunk
    if time.monotonic() - t > 0.030:
        over += 1
print(json.dumps({"n": n, "over": over,
                  "nodelay": s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY),
                  "rcvbuf": s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)}), flush=True)
