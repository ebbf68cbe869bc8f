"""A server with two listeners (backlog 4096 each), a connection accepted on each (from a
client process of its own), and an outgoing connection to a backend:
   svcserver.py BACKEND_PORT [SECONDS]
Prints "PORTS a b", then, on each SIGUSR1, "NODELAY a=N b=N out=N": TCP_NODELAY of the two
accepted connections and of the outgoing one, as getsockopt reads them.  Gives up after
SECONDS (default 30); SIGTERM ends it and its client."""
import signal, socket, subprocess, sys, time

secs = float(sys.argv[2]) if len(sys.argv) > 2 else 30
clients = []
def end(*_):
    for c in clients:
        c.kill()
    sys.exit(143)
signal.signal(signal.SIGTERM, end)
out = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
ls = []
for _ in range(2):
    l = socket.socket()
    l.bind(("127.0.0.1", 0))
    l.listen(4096)
    ls.append(l)
ports = [l.getsockname()[1] for l in ls]
clients.append(subprocess.Popen([sys.executable, "-c", """
import socket, sys, time
c = [socket.create_connection(("127.0.0.1", int(p)), timeout=5) for p in sys.argv[2:]]
time.sleep(float(sys.argv[1]))""", str(secs), str(ports[0]), str(ports[1])]))
acc = [l.accept()[0] for l in ls]
nd = lambda s: s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
signal.signal(signal.SIGUSR1, lambda *_: print("NODELAY a=%d b=%d out=%d" % (nd(acc[0]), nd(acc[1]), nd(out)), flush=True))
print("PORTS %d %d" % tuple(ports), flush=True)
time.sleep(secs)
clients[0].kill()
