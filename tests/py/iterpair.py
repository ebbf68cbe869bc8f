"""Both ends of connections whose options another process changes, each end reading its own
socket back (the kernel's values as the process itself sees them).  Knows nothing of
socktune.

  iterpair.py serve --family 4|6 --port P [--undumpable]
      listens on 127.0.0.1 or ::1 port P, prints "PORT P uid U dumpable D", and answers each
      line "q" on each connection with one JSON line of its own end's options; ends once no
      connection came for --wait s.
      --undumpable: prctl(PR_SET_DUMPABLE, 0) first (no ptrace, no pidfd_getfd but root's).
  iterpair.py ask --family 4|6 --dir D PORT [PORT...]
      connects once to each port, prints "READY lport1 lport2 ...", then for round r = 1, 2,
      ... waits for the file D/go.r (at most --wait s, default 300; none: exits) and prints,
      for each connection k, "r k SERVER-JSON" (the server's end, as the server reads it)
      and "r k client CLIENT-JSON" (this end), then "DONE r".
"""
import argparse, ctypes, json, os, socket, struct, sys, threading, time

TCP_INFO = 11
SO_PRIORITY = 12
TCP_DELACK_MAX_US = 46


def own(s):
    info = s.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 104)
    # struct tcp_info: 8 u8, then u32s: rto ato snd_mss rcv_mss unacked sacked lost retrans
    # fackets last_data_sent last_ack_sent last_data_recv last_ack_recv pmtu rcv_ssthresh rtt
    # rttvar snd_ssthresh snd_cwnd ...
    u32 = struct.unpack_from("<" + "I" * 19, info, 8)
    try:
        delack = s.getsockopt(socket.IPPROTO_TCP, TCP_DELACK_MAX_US)
    except OSError:  # (before Linux 6.15)
        delack = None
    return {"nodelay": s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY),
            "delack_max_us": delack,
            "rcvbuf": s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
            "priority": s.getsockopt(socket.SOL_SOCKET, SO_PRIORITY),
            "ssthresh": u32[17], "cwnd": u32[18]}


def serve(a):
    if a.undumpable:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    libc = ctypes.CDLL(None)
    dumpable = libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
    fam = socket.AF_INET6 if a.family == "6" else socket.AF_INET
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("::1" if a.family == "6" else "127.0.0.1", a.port))
    ls.listen(16)
    print("PORT %d uid %d dumpable %d" % (ls.getsockname()[1], os.getuid(), dumpable), flush=True)

    def conn(s):
        f = s.makefile("rb")
        for line in f:
            if line.strip() == b"q":
                s.sendall((json.dumps(own(s)) + "\n").encode())
        s.close()

    ls.settimeout(a.wait)  # (no new connection for that long: done, its own end)
    while True:
        try:
            s, _ = ls.accept()
        except socket.timeout:
            return
        threading.Thread(target=conn, args=(s,), daemon=True).start()


def ask(a):
    fam = socket.AF_INET6 if a.family == "6" else socket.AF_INET
    host = "::1" if a.family == "6" else "127.0.0.1"
    conns = []
    for p in a.ports:
        s = socket.create_connection((host, int(p)), timeout=10)
        conns.append((s, s.makefile("rb")))
    print("READY " + " ".join(str(s.getsockname()[1]) for s, _ in conns), flush=True)
    for r in range(1, 100):
        go = os.path.join(a.dir, "go.%d" % r)
        end = time.time() + a.wait
        while not os.path.exists(go):
            if time.time() > end:
                return
            time.sleep(0.02)
        for k, (s, f) in enumerate(conns):
            s.sendall(b"q\n")
            print("%d %d %s" % (r, k, f.readline().decode().strip()), flush=True)
            print("%d %d client %s" % (r, k, json.dumps(own(s))), flush=True)
        print("DONE %d" % r, flush=True)


p = argparse.ArgumentParser()
p.add_argument("mode", choices=["serve", "ask"])
p.add_argument("--family", default="4")
p.add_argument("--port", type=int, default=0)
p.add_argument("--undumpable", action="store_true")
p.add_argument("--dir", default=".")
p.add_argument("--wait", type=float, default=300)
p.add_argument("ports", nargs="*")
a = p.parse_intermixed_args()
serve(a) if a.mode == "serve" else ask(a)
