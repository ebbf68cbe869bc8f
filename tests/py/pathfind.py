"""Servers and clients for the path findings (tests/t_path_findings.sh), each end printing one
key=value line of what it measured and what the kernel reported.

  serve PORT pre N              on each new connection: N bytes (a preamble) then a token
                                byte "T", then close (the server of slow start)
  serve PORT bulk N             on each new connection: N bytes, then close
  serve PORT quiet              on each new connection: 100 bytes, then close
  serve PORT late N             on each new connection: 0.5 s before the first read (a
                                program that looks something up before it reads a body),
                                then N bytes read, then "K" (the server of uploads)
  (serve listens on [::]:PORT, IPv4 too, a thread per connection; prints PORT)
  token HOST PORT COUNT GAP     COUNT new connections GAP s apart, each read to its token:
                                TOKEN n= rounds_max= (round trips to the token: the
                                handshake's, then the flights it came in, told apart by the
                                kernel's receive timestamps) ms_max= rtts_max= (the slowest
                                by the clock: ms from connect() to the token, and that over
                                the connection's tcpi_min_rtt, which a loaded machine
                                stretches) min_rtt_us=
  bulk HOST PORT N CAP          one connection read until N bytes or CAP s: BULK bytes= ms=
                                done=1|0 (0: CAP came first) min_rtt_us=
  short HOST PORT COUNT         COUNT connections, one after the other, each read to its end:
                                SHORT n= ok= (ok: those that got the whole answer)
  upload HOST PORT N COUNT      COUNT uploads of N bytes, each on a new connection, to its
                                "K": UPLOAD n= busy_us= rwnd_limited_us= (the sender's
                                tcp_info, summed: the time it had data to send, and the
                                part of it the receiver's window held it) ms= min_rtt_us=
Every wait is bounded."""
import socket
import struct
import sys
import threading
import time

TCP_INFO_LEN = 232
SO_TIMESTAMPNS = 35


def min_rtt(s):
    b = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
    return struct.unpack_from("I", b, 148)[0]


def connect(host, port):
    return socket.create_connection((host, int(port)), timeout=30)


def handle(c, mode, n):
    with c:
        c.settimeout(30)
        try:
            if mode == "pre":
                c.sendall(b"x" * n + b"T")
            elif mode == "bulk":
                c.sendall(b"x" * n)
            elif mode == "late":
                time.sleep(0.5)
                got = 0
                while got < n:
                    b = c.recv(1 << 16)
                    if not b:
                        break
                    got += len(b)
                c.sendall(b"K")
            else:
                c.sendall(b"q" * 100)
            c.shutdown(socket.SHUT_WR)
            c.recv(1)  # (the client's end: the FIN, so the close is the client's first)
        except OSError:
            pass


def serve(port, mode, n):
    l = socket.socket(socket.AF_INET6)
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    l.bind(("::", int(port)))
    l.listen(128)
    print("PORT", l.getsockname()[1], flush=True)
    l.settimeout(600)
    while True:
        c, _ = l.accept()
        threading.Thread(target=handle, args=(c, mode, n), daemon=True).start()


def flights_to_token(s):
    """Reads s up to its token, one segment at a time with the kernel's receive timestamp of
    each (SO_TIMESTAMPNS): the flights it came in (a gap of half a round trip or more begins
    the next), counted by the kernel's clock, not by when this process got to read"""
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    stamps = []
    while True:
        data, anc, _, _ = s.recvmsg(1448, 64)
        for level, kind, v in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(v) >= 16:
                sec, nsec = struct.unpack_from("qq", v)
                stamps.append(sec + nsec / 1e9)
        if not data or data.endswith(b"T"):
            break
    rtt = min_rtt(s) / 1e6
    gaps = sum(1 for a, b in zip(stamps, stamps[1:]) if rtt and b - a >= rtt / 2)
    return (gaps + 1) if stamps else 0


def token(host, port, count, gap):
    worst_ms = worst_rtts = 0.0
    rtt_of_worst = worst_rounds = 0
    for _ in range(int(count)):
        t = time.monotonic()
        s = connect(host, port)
        flights = flights_to_token(s)
        ms = (time.monotonic() - t) * 1000
        r = min_rtt(s)
        s.close()
        rtts = ms * 1000 / r if r else 0
        if rtts > worst_rtts:
            worst_ms, worst_rtts, rtt_of_worst = ms, rtts, r
        # the handshake's round trip, then the flights
        worst_rounds = max(worst_rounds, 1 + flights)
        time.sleep(float(gap))
    print("TOKEN n=%d rounds_max=%d ms_max=%.1f rtts_max=%.2f min_rtt_us=%d" %
          (int(count), worst_rounds, worst_ms, worst_rtts, rtt_of_worst), flush=True)


def bulk(host, port, n, cap):
    t = time.monotonic()
    end = t + float(cap)
    s = connect(host, port)
    got = 0
    while got < int(n) and time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            b = s.recv(1 << 16)
        except socket.timeout:
            break
        if not b:
            break
        got += len(b)
    ms = (time.monotonic() - t) * 1000
    print("BULK bytes=%d ms=%.0f done=%d min_rtt_us=%d" %
          (got, ms, int(got >= int(n)), min_rtt(s)), flush=True)
    s.close()


def short(host, port, count):
    ok = 0
    for _ in range(int(count)):
        try:
            s = connect(host, port)
            got = b""
            while True:
                b = s.recv(4096)
                if not b:
                    break
                got += b
            s.close()
            ok += len(got) == 100
        except OSError:
            pass
    print("SHORT n=%d ok=%d" % (int(count), ok), flush=True)


def upload(host, port, n, count):
    busy = limited = 0
    t = time.monotonic()
    for _ in range(int(count)):
        s = connect(host, port)
        s.sendall(b"u" * int(n))
        s.recv(1)
        b = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
        busy += struct.unpack_from("Q", b, 168)[0]
        limited += struct.unpack_from("Q", b, 176)[0]
        r = min_rtt(s)
        s.close()
    print("UPLOAD n=%d busy_us=%d rwnd_limited_us=%d ms=%.0f min_rtt_us=%d" %
          (int(count), busy, limited, (time.monotonic() - t) * 1000, r), flush=True)


cmd = sys.argv[1]
if cmd == "serve":
    serve(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 0)
elif cmd == "token":
    token(*sys.argv[2:6])
elif cmd == "bulk":
    bulk(*sys.argv[2:6])
elif cmd == "short":
    short(*sys.argv[2:5])
elif cmd == "upload":
    upload(*sys.argv[2:6])
else:
    sys.exit("unknown command " + cmd)
