"""Keep-alive server that answers each newline-terminated request with one line, only
once the whole request has arrived.  Prints "PORT n".  Serves one connection."""
import socket, sys

fam = socket.AF_INET6 if sys.argv[1] == "6" else socket.AF_INET
ls = socket.socket(fam, socket.SOCK_STREAM)
ls.bind(("::1" if sys.argv[1] == "6" else "127.0.0.1", 0))
ls.listen(5)
ls.settimeout(20)
print("PORT", ls.getsockname()[1], flush=True)
c, _ = ls.accept()
c.settimeout(20)
buf = b""
while True:
    chunk = c.recv(4096)
    if not chunk:
        break
    buf += chunk
    while b"\n" in buf:
        _, buf = buf.split(b"\n", 1)
        c.sendall(b"ok\n")
