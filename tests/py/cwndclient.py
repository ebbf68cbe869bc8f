"""A client that connects to 127.0.0.1:PORT and prints what its outgoing connection got:
its tcpi_snd_cwnd (cwnd=N) and the cgroup it runs in (cgroup=PATH), for the cgroup mode's
--client tests."""
import socket, struct, sys

s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
print("cwnd=%d" % struct.unpack_from("I", info, 80)[0])
print("cgroup=%s" % open("/proc/self/cgroup").read().split("0::")[-1].strip())
