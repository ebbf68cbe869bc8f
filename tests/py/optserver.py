"""A test server that knows nothing of socktune: listens on 127.0.0.1 or ::1 port 0, prints
its port, accepts N connections and prints, for each, the options the kernel reports on
the ACCEPTED socket as one JSON line.  --app-rcvbuf / --app-nodelay-off / --app-nodelay-on
make it set its own options, before listen() and on each accepted socket, like servers that
do."""
import argparse, json, socket, sys

p = argparse.ArgumentParser()
p.add_argument("--family", default="4")
p.add_argument("--count", type=int, default=1)
p.add_argument("--backlog", type=int, default=5)
p.add_argument("--app-rcvbuf", type=int, default=0)
p.add_argument("--app-nodelay-off", action="store_true")
p.add_argument("--app-nodelay-on", action="store_true")
p.add_argument("--app-priority", type=int, default=-1, help="SO_PRIORITY on the listener only")
p.add_argument("--read", action="append", default=[], metavar="NAME=LEVEL:OPTNAME",
               help="also read this integer option on each accepted socket, as NAME")
p.add_argument("--read-str", action="append", default=[], metavar="NAME=LEVEL:OPTNAME",
               help="the same for an option that holds a name (SO_BINDTODEVICE)")
a = p.parse_args()

fam = socket.AF_INET6 if a.family == "6" else socket.AF_INET
host = "::1" if a.family == "6" else "127.0.0.1"
ls = socket.socket(fam, socket.SOCK_STREAM)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((host, 0))
if a.app_rcvbuf:
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a.app_rcvbuf)
if a.app_nodelay_off:
    ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
if a.app_nodelay_on:
    ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
if a.app_priority >= 0:
    ls.setsockopt(socket.SOL_SOCKET, 12, a.app_priority)  # SO_PRIORITY
ls.listen(a.backlog)
ls.settimeout(20)

TCP_USER_TIMEOUT = 18
TCP_NOTSENT_LOWAT = 25
TCP_CONGESTION = 13
TCP_INFO = 11
IPV6_TCLASS = 67
SO_MARK = 36
SO_PRIORITY = 12
SO_REUSEPORT = 15
TCP_DEFER_ACCEPT = 9
TCP_FASTOPEN = 23

def geti(s, lvl, opt):
    try:
        return s.getsockopt(lvl, opt)
    except OSError as e:
        return "err:%d" % e.errno

info = ls.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 104)
import struct
# struct tcp_info: 8 u8 then u32s: rto, ato, snd_mss, rcv_mss, unacked, sacked, ...
u32 = struct.unpack_from("<" + "I" * 24, info, 8)
listener = {"backlog": u32[5], "defer_accept": geti(ls, socket.IPPROTO_TCP, TCP_DEFER_ACCEPT),
            "fastopen": geti(ls, socket.IPPROTO_TCP, TCP_FASTOPEN),
            "reuseport": geti(ls, socket.SOL_SOCKET, SO_REUSEPORT)}
print(json.dumps({"port": ls.getsockname()[1], "listener": listener}), flush=True)

for _ in range(a.count):
    c, _ = ls.accept()
    if a.app_rcvbuf:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a.app_rcvbuf)
    if a.app_nodelay_off:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
    if a.app_nodelay_on:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    tos = geti(c, socket.IPPROTO_IPV6, IPV6_TCLASS) if fam == socket.AF_INET6 else geti(c, socket.IPPROTO_IP, socket.IP_TOS)
    d = {
        "rcvbuf": geti(c, socket.SOL_SOCKET, socket.SO_RCVBUF),
        "sndbuf": geti(c, socket.SOL_SOCKET, socket.SO_SNDBUF),
        "nodelay": geti(c, socket.IPPROTO_TCP, socket.TCP_NODELAY),
        "keepalive": geti(c, socket.SOL_SOCKET, socket.SO_KEEPALIVE),
        "keepidle": geti(c, socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
        "keepintvl": geti(c, socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
        "keepcnt": geti(c, socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
        "user_timeout": geti(c, socket.IPPROTO_TCP, TCP_USER_TIMEOUT),
        "notsent_lowat": geti(c, socket.IPPROTO_TCP, TCP_NOTSENT_LOWAT),
        "congestion": c.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).split(b"\0")[0].decode(),
        "tos": tos,
        "priority": geti(c, socket.SOL_SOCKET, SO_PRIORITY),
        "mark": geti(c, socket.SOL_SOCKET, SO_MARK),
    }
    for r in a.read:
        name, where = r.split("=")
        level, opt = where.split(":")
        d[name] = geti(c, int(level), int(opt))
    for r in a.read_str:
        name, where = r.split("=")
        level, opt = where.split(":")
        d[name] = c.getsockopt(int(level), int(opt), 16).split(b"\0")[0].decode()
    print(json.dumps(d), flush=True)
    c.close()
