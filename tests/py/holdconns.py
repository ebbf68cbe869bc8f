"""Holds connections on loopback: listens on 127.0.0.1:argv[1], opens argv[2] connections
to it and accepts each, prints "held N", then keeps them all until killed (at most argv[3]
seconds, default 60).  The descriptor limit is raised to its hard limit first."""
import resource, socket, sys, time

port, n = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(4096)
held = []
for _ in range(n):
    held.append(socket.create_connection(("127.0.0.1", port)))
    held.append(ls.accept()[0])
print("held", n, flush=True)
time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 60)
