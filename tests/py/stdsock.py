"""stdsock.py MODE ARG [VAR=value...]: run a small listener program (this python, with
the VAR=value settings added to its environment, LD_PRELOAD among them) whose descriptor 2
is a socket, and print what the other end of that socket received.

inetd 4|6: inetd style.  This parent accepts a connection on 127.0.0.1 (or ::1) and starts
           the child with descriptors 0, 1 and 2 all that accepted socket.  The child opens
           a passive listener of the same family, then writes "REPLY\\n" on descriptor 1
           (its control connection) and exits.  Prints "GOT <hex of every byte the client
           received>".
journal yes|no: stderr (only) is one end of a unix socket pair, as systemd connects a
           service to the journal; with "yes" JOURNAL_STREAM names that socket
           (device:inode).  Prints "GOT <hex>" of what arrived at the other end.
Every wait is bounded (5 s)."""
import os
import socket
import subprocess
import sys

CHILD = r"""
import os, socket, sys
fam = socket.AF_INET6 if sys.argv[1] == "6" else socket.AF_INET
l = socket.socket(fam, socket.SOCK_STREAM)
l.bind(("::1" if fam == socket.AF_INET6 else "127.0.0.1", 0))
l.listen(8)
os.write(1, b"REPLY\n")
"""


def read_all(s):
    s.settimeout(5)
    got = b""
    while True:
        try:
            b = s.recv(65536)
        except socket.timeout:
            break
        if not b:
            break
        got += b
    return got


def main():
    mode, arg, assigns = sys.argv[1], sys.argv[2], sys.argv[3:]
    env = dict(os.environ)
    for a in assigns:
        k, _, v = a.partition("=")
        env[k] = v
    env.pop("JOURNAL_STREAM", None)
    if mode == "inetd":
        fam = socket.AF_INET6 if arg == "6" else socket.AF_INET
        host = "::1" if arg == "6" else "127.0.0.1"
        lsock = socket.socket(fam, socket.SOCK_STREAM)
        lsock.bind((host, 0))
        lsock.listen(1)
        client = socket.create_connection((host, lsock.getsockname()[1]), timeout=5)
        conn, _ = lsock.accept()
        lsock.close()
        fd = conn.fileno()
        child = subprocess.Popen([sys.executable, "-c", CHILD, arg], stdin=fd, stdout=fd,
                                 stderr=fd, env=env, close_fds=True)
        conn.close()
        got = read_all(client)
    else:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        if arg == "yes":
            st = os.fstat(theirs.fileno())
            env["JOURNAL_STREAM"] = "%d:%d" % (st.st_dev, st.st_ino)
        child = subprocess.Popen([sys.executable, "-c", CHILD, "4"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=theirs.fileno(), env=env, close_fds=True)
        theirs.close()
        got = read_all(ours)
    try:
        rc = child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        child.kill()
        rc = "timeout"
    print("GOT %s" % got.hex())
    print("CHILD %s" % rc)


main()
