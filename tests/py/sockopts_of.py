"""sockopts_of.py PID: each TCP socket of process PID as the kernel has it, one a line:
"fd=N listening=0|1 port=P peer=Q nodelay=0|1", read on a pidfd_getfd(2) copy (syscall 438:
Python has no wrapper), not from anything socktune says."""
import ctypes
import os
import socket
import sys

pid = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(pid)
for name in sorted(os.listdir("/proc/%d/fd" % pid), key=int):
    try:
        if not os.readlink("/proc/%d/fd/%s" % (pid, name)).startswith("socket:"):
            continue
    except OSError:
        continue
    copy = libc.syscall(438, pidfd, int(name), 0)
    if copy < 0:
        print("fd=%s error=%s" % (name, os.strerror(ctypes.get_errno())))
        continue
    s = socket.socket(fileno=copy)
    try:
        if s.type != socket.SOCK_STREAM or s.family not in (socket.AF_INET, socket.AF_INET6):
            continue
        listening = s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        peer = "-"
        if not listening:
            try:
                peer = s.getpeername()[1]
            except OSError:
                pass
        print("fd=%s listening=%d port=%d peer=%s nodelay=%d" % (
            name, listening, s.getsockname()[1], peer,
            1 if s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) else 0))
    finally:
        s.close()
