#!/bin/sh
# MPTCP sockets under the library (IPPROTO_MPTCP, 262): the kernel's MPTCP takes only some of
# TCP's options and refuses the others with the ENOPROTOOPT a kernel without the option
# gives.  Such a refusal on an MPTCP listener names MPTCP as the cause (before: "Linux 6.15 or
# later has TCP_DELACK_MAX_US" on 6.18), and the option stays on for the TCP listeners of the
# same process (before: action=disabled, the TCP listener made after it left at 200000 us).
# The options MPTCP takes (TCP_NODELAY) are set on it as on TCP.
. "$(dirname "$0")/lib.sh"

SRV='
import socket
def listener(proto):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    s.bind(("127.0.0.1", 0)); s.listen(5)
    return s
def get(s, opt):
    try:
        return s.getsockopt(6, opt)
    except OSError:
        return -1  # MPTCP: refused
m = listener(262)
t = listener(0)
print("MPTCP delack=%d nodelay=%d" % (get(m, 46), get(m, 1)))
print("TCP delack=%d nodelay=%d" % (get(t, 46), get(t, 1)))
'
if ! $PY -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); socket.socket().setsockopt(6, 46, 5000)' 2>/dev/null; then
	skip mptcp "no MPTCP, or no TCP_DELACK_MAX_US, in this kernel"
	exit 0
fi
kept=$($PY -c 'import socket; s = socket.socket(); s.setsockopt(6, 46, 5000); print(s.getsockopt(6, 46))')
env LD_PRELOAD="$LIB" SOCKTUNE_DELACK_MAX=5ms SOCKTUNE_NODELAY=1 $PY -c "$SRV" >"$TMP/m.out" 2>"$TMP/m.err"
m=$(grep '^MPTCP ' "$TMP/m.out") t=$(grep '^TCP ' "$TMP/m.out")
check mptcp_tcp_listener_kept "TCP listener: $t (want delack $kept); $(cat "$TMP/m.err")" \
	"$(field "$t" delack)" = "$kept" -a "$(field "$t" nodelay)" = 1
check mptcp_listener_nodelay "MPTCP listener: $m" "$(field "$m" nodelay)" = 1
check mptcp_cause "want one refusal naming MPTCP, none disabling the option: $(cat "$TMP/m.err")" \
	"$(grep -c 'event=setsockopt option=delack_max .* note="MPTCP sockets refuse TCP_DELACK_MAX_US' "$TMP/m.err")" -eq 1 \
	-a -z "$(grep 'action=disabled\|or later has' "$TMP/m.err")"
