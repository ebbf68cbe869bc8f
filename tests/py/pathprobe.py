"""Ends of a connection across pathemu's path (tests/helpers/pathemu.c), each run inside one of
its namespaces, each printing one key=value line of what the kernel reported.

  serve PORT SECONDS            TCP on [::]:PORT (IPv4 too), a thread per connection; the
                                first byte says what it wants: p echo, s sink, t a preamble
                                of N bytes then a token (t, then N as 8 digits); prints PORT
  rtt HOST PORT ROUNDS          ROUNDS one-byte round trips, then the connection's TCP_INFO:
                                RTT min_rtt= rtt= snd_mss= (microseconds, bytes)
  bulk HOST PORT SECONDS CC     sends for SECONDS with congestion control CC: BULK bytes=
                                snd_mss= rtt= min_rtt= retrans=
  token HOST PORT N             a new connection asks for N bytes then a token: TOKEN ms=
                                (from connect() to the token) min_rtt=
  ifrate IFACE START SECONDS    the IP bytes IFACE received (/proc/net/dev, this namespace's)
                                from START s to START + SECONDS s: IFRATE bits_per_s= packets=
  udpsend HOST PORT COUNT SIZE PPS   COUNT datagrams of SIZE bytes (a sequence number and
                                the send time in each) at PPS a second: UDPSEND sent=
  udprecv PORT COUNT IDLE       datagrams on [::]:PORT until COUNT came or none for IDLE s:
                                UDPRECV received= lost= runs= (of lost datagrams)
                                mean_run= mean_gap= gaps= (runs received between two lost)
                                owd_tail_ms= owd_min_ms= owd_max_ms= reordered=
                                rcvbuf_errors= (owd: the one-way delay from the sender's
                                clock to the kernel's receive timestamp; _tail: the median
                                of the last three quarters)
Every wait is bounded."""
import socket
import struct
import sys
import threading
import time

TCP_INFO_LEN = 232
SO_TIMESTAMPNS = 35
HDR = struct.Struct("!IQ")  # sequence number, send time (CLOCK_REALTIME ns)


def tcp_info(s):
    b = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
    u32 = lambda off: struct.unpack_from("I", b, off)[0]
    return {"snd_mss": u32(16), "rtt": u32(68), "retrans": u32(100), "min_rtt": u32(148)}


def connect(host, port):
    return socket.create_connection((host, int(port)), timeout=10)


def recv_exact(c, n):
    got = b""
    while len(got) < n:
        b = c.recv(n - len(got))
        if not b:
            break
        got += b
    return got


def handle(c):
    with c:
        c.settimeout(30)
        cmd = c.recv(1)
        if cmd == b"p":
            while True:
                b = c.recv(64)
                if not b:
                    return
                c.sendall(b)
        elif cmd == b"s":
            while c.recv(1 << 16):
                pass
        elif cmd == b"t":
            n = int(recv_exact(c, 8))
            c.sendall(b"x" * n + b"T")


def serve(port, seconds):
    l = socket.socket(socket.AF_INET6)
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    l.bind(("::", int(port)))
    l.listen(64)
    print("PORT", l.getsockname()[1], flush=True)
    end = time.monotonic() + float(seconds)
    while time.monotonic() < end:
        l.settimeout(max(0.01, end - time.monotonic()))
        try:
            c, _ = l.accept()
        except socket.timeout:
            break
        threading.Thread(target=handle, args=(c,), daemon=True).start()


def rtt(host, port, rounds):
    with connect(host, port) as c:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.sendall(b"p")
        for _ in range(int(rounds)):
            c.sendall(b"x")
            if c.recv(1) != b"x":
                sys.exit("rtt: the echo stopped")
        i = tcp_info(c)
    print("RTT min_rtt=%d rtt=%d snd_mss=%d" % (i["min_rtt"], i["rtt"], i["snd_mss"]))


def bulk(host, port, seconds, cc):
    c = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    c.settimeout(10)
    c.connect((host, int(port)))
    c.sendall(b"s")
    buf = b"x" * 65536
    n = 0
    end = time.monotonic() + float(seconds)
    while time.monotonic() < end:
        n += c.send(buf)
    i = tcp_info(c)
    # (a reset, not a close: what is still unsent is dropped, not left to fill the path)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()
    print("BULK bytes=%d snd_mss=%d rtt=%d min_rtt=%d retrans=%d"
          % (n, i["snd_mss"], i["rtt"], i["min_rtt"], i["retrans"]))


def token(host, port, n):
    t0 = time.monotonic()
    with connect(host, port) as c:
        c.sendall(b"t%08d" % int(n))
        got = 0
        while True:
            b = c.recv(1 << 16)
            if not b:
                sys.exit("token: closed after %d bytes" % got)
            got += len(b)
            if b.endswith(b"T") and got == int(n) + 1:
                break
        ms = (time.monotonic() - t0) * 1e3
        print("TOKEN ms=%.1f min_rtt=%d" % (ms, tcp_info(c)["min_rtt"]))


def dev_counters(iface):
    for line in open("/proc/net/dev"):
        name, _, rest = line.partition(":")
        if name.strip() == iface:
            f = rest.split()
            return int(f[0]), int(f[1])
    sys.exit("ifrate: no %s here" % iface)


def ifrate(iface, start, seconds):
    time.sleep(float(start))
    t0, (b0, p0) = time.monotonic(), dev_counters(iface)
    time.sleep(float(seconds))
    t1, (b1, p1) = time.monotonic(), dev_counters(iface)
    print("IFRATE bits_per_s=%.0f packets=%d bytes=%d" % ((b1 - b0) * 8 / (t1 - t0), p1 - p0, b1 - b0))


def udpsend(host, port, count, size, pps):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    count, size, pps = int(count), int(size), float(pps)
    pad = b"x" * (size - HDR.size)
    t0 = time.monotonic()
    for i in range(count):
        # in step with the clock: a late start is caught up, never run ahead of
        while time.monotonic() < t0 + i / pps:
            time.sleep(0.0005)
        s.sendto(HDR.pack(i, time.time_ns()) + pad, (host, int(port)))
    print("UDPSEND sent=%d" % count)


def udp_errors():
    rows = [l.split() for l in open("/proc/net/snmp") if l.startswith("Udp:")]
    return int(rows[1][rows[0].index("RcvbufErrors")])


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else -1


def runs_of(flags, value):
    """The lengths of the runs of value in flags that have the other value on both sides."""
    out, n, seen = [], 0, False
    for f in flags:
        if f == value:
            n += 1
        else:
            if n and seen:
                out.append(n)
            n, seen = 0, True
    return out


def udprecv(port, count, idle):
    count = int(count)
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("::", int(port)))
    errs = udp_errors()
    print("PORT", port, flush=True)
    got, reordered, top = {}, 0, -1
    s.settimeout(float(idle) * 4)  # (the first one may take longer: the sender starts)
    deadline = time.monotonic() + 120
    while len(got) < count and time.monotonic() < deadline:
        try:
            data, anc, _, _ = s.recvmsg(65536, 64)
        except socket.timeout:
            break
        s.settimeout(float(idle))
        seq, sent = HDR.unpack_from(data)
        rx = next((struct.unpack("qq", d[:16]) for l, t, d in anc if t == SO_TIMESTAMPNS), None)
        if rx is None or seq >= count:
            continue
        got[seq] = (rx[0] * 10**9 + rx[1] - sent) / 1e6
        reordered += seq < top
        top = max(top, seq)
    received = [k in got for k in range(count)]
    gaps = runs_of([not r for r in received], False)  # received runs between two losses
    # (lost runs at the ends count too: a burst is a burst wherever it falls)
    all_runs = [len(r) for r in "".join("x" if r else "." for r in received).split("x") if r]
    owd = [got[k] for k in sorted(got)]
    tail = owd[len(owd) // 4:]
    print("UDPRECV received=%d lost=%d runs=%d mean_run=%.3f mean_gap=%.3f gaps=%d "
          "owd_tail_ms=%.3f owd_min_ms=%.3f owd_max_ms=%.3f reordered=%d rcvbuf_errors=%d"
          % (len(got), count - len(got), len(all_runs),
             sum(all_runs) / len(all_runs) if all_runs else 0,
             sum(gaps) / len(gaps) if gaps else 0, len(gaps),
             median(tail), min(owd) if owd else -1, max(owd) if owd else -1, reordered,
             udp_errors() - errs))


if __name__ == "__main__":
    cmds = {"serve": serve, "rtt": rtt, "bulk": bulk, "token": token, "ifrate": ifrate,
            "udpsend": udpsend, "udprecv": udprecv}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]](*sys.argv[2:])
