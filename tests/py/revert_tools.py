"""The t_revert_* tests' tools, knowing nothing of socktune's code:
  serve N BACKLOG NODELAY  N listeners on 127.0.0.1 (port 0), TCP_NODELAY 1 on each when
                           NODELAY is 1; prints "L fd=F port=P inode=I" each, then "READY";
                           accepts and holds every connection; exits after 120 s
  sock PID FD OP [V]       on a pidfd_getfd(2) copy of PID's FD (what an application or an
                           operator does to its own socket): listen V, nodelay V (set),
                           get-nodelay, backlog (the backlog in force: tcpi_sacked)
  nodelays PID             "fd=F listening=0|1 nodelay=0|1" for each TCP socket of PID
  line PID FD INODE OPTION BEFORE AFTER ADDR [KEY=VALUE|-KEY]...
                           one journal line of event apply as socktune watch --apply writes
                           it (its keys, in its order); KEY=VALUE replaces or adds a member
                           (a number when it reads as one), -KEY drops one
  head                     a journal's first line
  swap A B SECONDS         renameat2(A, B, RENAME_EXCHANGE) in a loop for SECONDS; prints the
                           count of swaps at the end"""
import ctypes, json, os, socket, struct, sys, threading, time

libc = ctypes.CDLL(None, use_errno=True)


def copy_of(pid, fd):
    pidfd = os.pidfd_open(pid)
    c = libc.syscall(438, pidfd, fd, 0)
    os.close(pidfd)
    if c < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return socket.socket(fileno=c)


def start_of(pid):
    s = open("/proc/%d/stat" % pid).read()
    return int(s[s.rindex(")") + 2:].split()[19])


def now():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)


cmd = sys.argv[1]
if cmd == "serve":
    n, backlog, nodelay = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    ls = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        if nodelay:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.listen(backlog)
        ls.append(s)
    for s in ls:
        print("L fd=%d port=%d inode=%d" % (s.fileno(), s.getsockname()[1],
                                           os.fstat(s.fileno()).st_ino), flush=True)
    held = []

    def accept(s):
        while True:
            try:
                held.append(s.accept()[0])
            except OSError:
                return
    for s in ls:
        threading.Thread(target=accept, args=(s,), daemon=True).start()
    print("READY", flush=True)
    time.sleep(120)
elif cmd == "sock":
    pid, fd, op = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    s = copy_of(pid, fd)
    if op == "listen":
        s.listen(int(sys.argv[5]))
    elif op == "nodelay":
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, int(sys.argv[5]))
    elif op == "get-nodelay":
        print(1 if s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) else 0)
    elif op == "backlog":
        print(struct.unpack_from("<24I", s.getsockopt(socket.IPPROTO_TCP, 11, 104), 8)[5])
elif cmd == "nodelays":
    pid = int(sys.argv[2])
    for name in sorted(os.listdir("/proc/%d/fd" % pid), key=int):
        try:
            if not os.readlink("/proc/%d/fd/%s" % (pid, name)).startswith("socket:"):
                continue
            s = copy_of(pid, int(name))
        except OSError:
            continue
        if s.type == socket.SOCK_STREAM and s.family == socket.AF_INET:
            print("fd=%s listening=%d nodelay=%d" % (
                name, s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN),
                1 if s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) else 0))
        s.close()
elif cmd == "line":
    pid, fd, ino, opt, before, after, addr = sys.argv[2:9]
    pid = int(pid)
    kind = "accept-queue-overflow" if opt == "backlog" else "nagle-delayed-ack"
    d = {"schema": 1, "command": "watch", "event": "apply",
         "change": os.urandom(8).hex(), "finding": os.urandom(8).hex(), "kind": kind,
         "option": opt, "before": int(before), "after": int(after), "pid": pid,
         "pid_start": start_of(pid), "fd": int(fd), "addr": addr,
         "netns": os.stat("/proc/%d/ns/net" % pid).st_ino, "inode": int(ino), "time": now()}
    for a in sys.argv[9:]:
        if a.startswith("-"):
            d.pop(a[1:], None)
        else:
            k, v = a.split("=", 1)
            d[k] = int(v) if v.lstrip("-").isdigit() else v
    print(json.dumps(d))
elif cmd == "head":
    print(json.dumps({"schema": 1, "command": "watch", "version": "0.1.0", "event": "journal",
                      "time": now()}))
elif cmd == "swap":
    a, b, secs = sys.argv[2].encode(), sys.argv[3].encode(), float(sys.argv[4])
    f = libc.renameat2
    n, end = 0, time.monotonic() + secs
    while time.monotonic() < end:
        for _ in range(200):
            if f(-100, a, -100, b, 2) == 0:  # AT_FDCWD, RENAME_EXCHANGE
                n += 1
    print("swaps", n, flush=True)
