"""A keep-alive client on one connection:  kaget.py PORT GOFILE OUTFILE [N [HOST]]
N requests (default 10), then "before=K" in OUTFILE (K: those over 30 ms: the stall is a 40 ms delayed ACK, and a loaded machine makes a cured request 20 ms now and then); then, each
time GOFILE exists (at most 10 s each), it is removed and N more go: "after=K" and
"nodelay=V" (the server's TCP_NODELAY, as its last answer said) appended; 3 times at most
(tests/lib.sh kaget_again: a try of cured_within each), until GOFILE says "end".  Each
request is one write; each answer is read in full.  HOST: 127.0.0.1 unless given (::1)."""
import os, socket, sys, time

port, go, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 10
host = sys.argv[5] if len(sys.argv) > 5 else "127.0.0.1"
s = socket.create_connection((host, port), timeout=5)
last = b""


def get():
    global last
    t = time.monotonic()
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, body = buf.split(b"\r\n\r\n", 1)
    size = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
    while len(body) < size:
        body += s.recv(65536)
    last = body
    return time.monotonic() - t


before = sum(get() > 0.030 for _ in range(n))
open(out, "w").write("before=%d\n" % before)
for _ in range(3):
    for _ in range(200):
        if os.path.exists(go):
            break
        time.sleep(0.05)
    else:
        break
    if open(go).read() == "end\n":
        break
    os.remove(go)
    after = sum(get() > 0.030 for _ in range(n))
    v = last.decode().strip().split("=")[-1] if last.startswith(b"nodelay=") else "?"
    with open(out, "a") as f:
        f.write("after=%d\nnodelay=%s\n" % (after, v))
