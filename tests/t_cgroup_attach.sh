#!/bin/sh
# socktune attach --cgroup PID|:PORT and socktune detach: a server already running in a cgroup
# of its own (made here under the v2 mount, the server moved into it before it listens): the
# policy's sock_ops program attached to the cgroup its listener was made in, so the next
# connection is tuned and the one before keeps its values; detach, and the next one is
# untuned; a second program of the test's own on that cgroup (it marks each accepted
# connection) keeps working throughout; --peer (127.0.0.2 vs 127.0.0.1 as the client's source,
# ::1, an IPv4 peer on an IPv6 socket) and the ports (--ports: the local port of an accepted
# connection; --client-ports: the remote port of an outgoing one) held by the program; an attach where ours is already replaces it; a
# listener made in the root cgroup (the whole host) is refused, even once its process has
# moved (the listener's cgroup counts, not the process's now).  Asserted on what the kernel
# reports: tserver's CONN lines (tcpi_snd_cwnd, TCP_DELACK_MAX_US), ss -tnie (cwnd, fwmark),
# BPF_PROG_QUERY (bpfq).
. "$(dirname "$0")/lib.sh"

BPFQ=$BIN/bpfq

cg_test_dir cgroup_attach

# hold NAME PORT HOST [SRC]: a connection from SRC (bound before connect) held open; its
# local port in $TMP/NAME.port once connected
cat >"$TMP/hold.py" <<'EOF'
import socket, sys, time
port, host, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
src = sys.argv[4] if len(sys.argv) > 4 else None
s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
if src:
    s.bind((src, 0))
s.settimeout(5)
s.connect((host, port))
open(out + ".tmp", "w").write("%d\n" % s.getsockname()[1])
import os; os.rename(out + ".tmp", out)
time.sleep(30)
EOF
hold() {
	$PY "$TMP/hold.py" "$2" "$3" "$TMP/$1.port" ${4:+"$4"} 2>"$TMP/$1.hold.err" &
	busywait 5000 test -s "$TMP/$1.port"
}

# conn NAME N KEY: KEY of tserver's N-th CONN line (0-based i=), waited for (5 s)
conn() {
	busywait 5000 file_has "$TMP/$1.out" "^CONN i=$2 "
	field "$(grep "^CONN i=$2 " "$TMP/$1.out")" "$3"
}

# ss_of PORT CPORT KEY: what ss says of the server's end of the connection from CPORT
# (KEY cwnd or fwmark)
ss_of() {
	ss -Htnie state established "( sport = :$1 and dport = :$2 )" | tr ' ' '\n' |
		sed -n "s/^$3://p" | head -n 1
}

# ---- a server in its own cgroup, another party's program there first
other=$("$BPFQ" attach "$CG" 77 2>"$TMP/other.err")
check cgroup_attach.other_program "bpfq attach: $other $(cat "$TMP/other.err")" -n "$other"
start_server -t 10 srv -- sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -4 -m hold -n 12 -t 60' \
	sh "$CG" "$BIN/tserver" || { fail cgroup_attach "tserver did not start: $(cat "$TMP/srv.err")"; exit 0; }
srv=$SRV_PID port=$SRV_PORT
hold c0 "$port" 127.0.0.1
c0=$(cat "$TMP/c0.port")
check cgroup_attach.before "conn 0 before the attach: cwnd $(conn srv 0 cwnd) (want 10)" "$(conn srv 0 cwnd)" = 10

"$CLI" attach --cgroup --initcwnd 40 --delack-max 5ms ":$port" >"$TMP/att.out" 2>"$TMP/att.err"
rc=$?
line=$(grep 'event=cgroup_attach' "$TMP/att.out")
check cgroup_attach.attached "status $rc (want 0): $line $(head -c 400 "$TMP/att.err")" "$rc" = 0 -a \
	"$(field "$line" cgroup)" = "$CG" -a "$(field "$line" connections_kept)" = 1 -a "$(field "$line" others)" = 1 -a \
	-n "$(grep 'event=cgroup .*initcwnd=40' "$TMP/att.err")"
check cgroup_attach.both_attached "on $CG: $("$BPFQ" attached "$CG" | tr '\n' ' ') (want other and socktune)" \
	"$("$BPFQ" attached "$CG" | grep -c ' other$')" = 1 -a "$("$BPFQ" attached "$CG" | grep -c ' socktune$')" = 1

hold c1 "$port" 127.0.0.1
delack=$(conn srv 1 delack_max_us)
check cgroup_attach.next_tuned "conn 1 after the attach: cwnd $(conn srv 1 cwnd) (want 40), delack_max_us $delack (want 5000-10000)" \
	"$(conn srv 1 cwnd)" = 40 -a "${delack:-0}" -ge 5000 -a "${delack:-0}" -le 10000
check cgroup_attach.earlier_unchanged "conn 0 now, as ss reads it: cwnd $(ss_of "$port" "$c0" cwnd) (want 10)" \
	"$(ss_of "$port" "$c0" cwnd)" = 10

# again, with --json: one document; ours replaced (the first one's sock_ops program and its
# setsockopt hook, which holds --delack-max), not doubled
"$CLI" attach --cgroup --json --initcwnd 40 "$srv" >"$TMP/att2.json" 2>"$TMP/att2.err"
rc=$?
check cgroup_attach.replaces "status $rc, json: $(head -c 400 "$TMP/att2.json"), attached: $("$BPFQ" attached "$CG" | tr '\n' ' ')" \
	"$rc" = 0 -a "$(json_get "$TMP/att2.json" command)" = attach -a \
	"$(json_get "$TMP/att2.json" cgroups.0.cgroup)" = "$CG" -a "$(json_get "$TMP/att2.json" cgroups.0.replaced)" = 2 -a \
	"$(json_get "$TMP/att2.json" status)" = 0 -a "$("$BPFQ" attached "$CG" | grep -c ' socktune$')" = 1

bad=$(schema_problems "$TMP/att2.json")
check cgroup_attach.json_schema "keys not in socktune --schema: $bad" -z "$bad"

"$CLI" detach ":$port" >"$TMP/det.out" 2>"$TMP/det.err"
rc=$?
line=$(grep 'event=cgroup_detach' "$TMP/det.out")
check cgroup_detach.detached "status $rc (want 0): $line $(head -c 300 "$TMP/det.err"); attached now: $("$BPFQ" attached "$CG" | tr '\n' ' ')" \
	"$rc" = 0 -a "$(field "$line" detached)" = 1 -a "$(field "$line" others)" = 1 -a \
	"$("$BPFQ" attached "$CG")" = "$other other"
hold c2 "$port" 127.0.0.1
check cgroup_detach.next_untuned "conn 2 after the detach: cwnd $(conn srv 2 cwnd) delack_max_us $(conn srv 2 delack_max_us) (want 10, 200000)" \
	"$(conn srv 2 cwnd)" = 10 -a "$(conn srv 2 delack_max_us)" = 200000
marks=$(for c in c0 c1 c2; do ss_of "$port" "$(cat "$TMP/$c.port")" fwmark; done | tr '\n' ' ')
check cgroup_attach.other_kept_working "the test's own program's fwmark on conns 0, 1, 2: $marks (want 0x4d each)" \
	"$marks" = "0x4d 0x4d 0x4d "
"$CLI" detach --json "$srv" >"$TMP/det2.json" 2>"$TMP/det2.err"
rc=$?
check cgroup_detach.none_of_ours "status $rc (want 1): $(head -c 300 "$TMP/det2.err"); json status $(json_get "$TMP/det2.json" status); other still there: $("$BPFQ" attached "$CG" | tr '\n' ' ')" \
	"$rc" = 1 -a "$(json_get "$TMP/det2.json" status)" = 1 -a "$("$BPFQ" attached "$CG")" = "$other other"

# the report to a full disk: lost, and said (status 1 with no word before)
"$CLI" detach --json "$srv" >/dev/full 2>"$TMP/det3.err"
rc=$?
check cgroup_detach.stdout_full "status $rc (want 1): $(head -c 300 "$TMP/det3.err")" \
	"$rc" = 1 -a -n "$(grep 'stdout: .*space' "$TMP/det3.err")"

bad=$(schema_problems "$TMP/det2.json")
check cgroup_detach.json_schema "keys not in socktune --schema: $bad" -z "$bad"

# ---- --peer on the running server: a connection from 127.0.0.2 (inside 127.0.0.2/32) tuned,
# one from 127.0.0.1 (outside) not; the probe's peer, 127.0.0.1, is outside too: said, not read
"$CLI" attach --cgroup --initcwnd 40 --peer 127.0.0.2/32 ":$port" >"$TMP/peer.out" 2>"$TMP/peer.err"
rc=$?
hold c3 "$port" 127.0.0.1 127.0.0.1
hold c4 "$port" 127.0.0.1 127.0.0.2
check cgroup_attach.peer_inside_outside "status $rc; from 127.0.0.1: cwnd $(conn srv 3 cwnd) (want 10), from 127.0.0.2: $(conn srv 4 cwnd) (want 40): $(head -c 300 "$TMP/peer.err")" \
	"$rc" = 0 -a "$(conn srv 3 cwnd)" = 10 -a "$(conn srv 4 cwnd)" = 40 -a -n "$(grep -F 'not read back' "$TMP/peer.err")"
# ---- ports on the running server: its own port in --ports tuned, then (ours replaced) another
# port only: untuned
"$CLI" attach --cgroup --initcwnd 40 --ports "$port" ":$port" >"$TMP/pin.out" 2>"$TMP/pin.err"
rc1=$?
hold c5 "$port" 127.0.0.1
"$CLI" attach --cgroup --initcwnd 40 --ports "$((port + 1))" ":$port" >"$TMP/pout.out" 2>"$TMP/pout.err"
rc2=$?
hold c6 "$port" 127.0.0.1
check cgroup_attach.ports_in_out "status $rc1 $rc2; --ports $port: cwnd $(conn srv 5 cwnd) (want 40), --ports $((port + 1)): $(conn srv 6 cwnd) (want 10); ours: $("$BPFQ" attached "$CG" | grep -c ' socktune$') (want 1): $(head -c 300 "$TMP/pout.err")" \
	"$rc1" = 0 -a "$rc2" = 0 -a "$(conn srv 5 cwnd)" = 40 -a "$(conn srv 6 cwnd)" = 10 -a \
	"$("$BPFQ" attached "$CG" | grep -c ' socktune$')" = 1
"$CLI" detach ":$port" >/dev/null 2>&1

# ---- the same in run mode, on both ends of connections made in the cgroup (tcpi_snd_cwnd of
# the accepted end / of the outgoing one): a listener on HOST [PORT], a connection from each
# source address (each end has its own peer: the outgoing end's is the listener's address)
cat >"$TMP/ends.py" <<'EOF'
import socket, struct, sys
host, srcs = sys.argv[1], sys.argv[2].split(",")
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
l = socket.socket(fam)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((host, int(sys.argv[3]) if len(sys.argv) > 3 else 0))
l.listen(8)
cwnd = lambda s: struct.unpack_from("I", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 80)[0]
out = []
for src in srcs:
    c = socket.socket(fam)
    c.bind((src, 0))
    c.settimeout(5)
    c.connect((host, l.getsockname()[1]))
    s, _ = l.accept()
    out.append("%d/%d" % (cwnd(s), cwnd(c)))
print(" ".join(out))
EOF
# ends NAME WANT SOCKTUNE-OPTIONS... -- ends.py ARGS: "accepted/outgoing ..." as WANT
ends() {
	_n=$1 _w=$2
	shift 2
	_o=""
	while [ "$1" != "--" ]; do _o="$_o $1"; shift; done
	shift
	# shellcheck disable=SC2086 # the options are words
	_got=$("$CLI" --cgroup --client --initcwnd 40 $_o -- $PY "$TMP/ends.py" "$@" 2>"$TMP/$_n.err")
	_rc=$?
	check "$_n" "status $_rc, cwnd accepted/outgoing: '$_got' (want '$_w'): $(grep -v '^socktune pid' "$TMP/$_n.err" | head -c 300)" \
		"$_rc" = 0 -a "$_got" = "$_w"
}
ends cgroup_peer_v4 "10/10 40/10" --peer 127.0.0.2/32 -- 127.0.0.1 127.0.0.1,127.0.0.2
ends cgroup_peer_v4_prefixes "40/40 40/40" --peer 127.0.0.0/8 --peer fd00::/8 -- 127.0.0.1 127.0.0.1,127.0.0.2
ends cgroup_peer_v6_inside "40/40" --peer ::1/128 -- ::1 ::1
ends cgroup_peer_v6_outside "10/10" --peer fd00::/8 -- ::1 ::1
ends cgroup_peer_v4_mapped "10/10 40/10" --peer 127.0.0.2 -- ::ffff:127.0.0.1 ::ffff:127.0.0.1,::ffff:127.0.0.2
p1=$(free_port)
p2=$(free_port)
ends cgroup_ports_in "40/40" --ports "$p1" -- 127.0.0.1 127.0.0.1 "$p1"
ends cgroup_ports_out "10/40" --ports "$p2" -- 127.0.0.1 127.0.0.1 "$p1"
ends cgroup_client_ports_in "40/40" --client-ports "$p1" -- 127.0.0.1 127.0.0.1 "$p1"
ends cgroup_client_ports_out "40/10" --client-ports "$p2" -- 127.0.0.1 127.0.0.1 "$p1"
ends cgroup_client_ports_range "40/40" --client-ports "1-$p1" -- 127.0.0.1 127.0.0.1 "$p1"
"$CLI" --cgroup --initcwnd 40 --ports "$(seq -s, 1 2 131)" -- true 2>"$TMP/runs.err"
rc=$?
check cgroup_ports_too_many_runs "status $rc (want 2): $(cat "$TMP/runs.err")" "$rc" = 2 -a -n "$(grep -F 'runs' "$TMP/runs.err")"
"$CLI" --cgroup --initcwnd 40 --peer 10.1.2.3/8 -- true 2>"$TMP/pbad.err"
rc=$?
check cgroup_peer_host_bits_refused "status $rc (want 2): $(cat "$TMP/pbad.err")" "$rc" = 2
"$CLI" --initcwnd 40 --peer 10.0.0.0/8 -- true 2>"$TMP/pnc.err"
rc=$?
check cgroup_peer_only_with_cgroup "status $rc (want 2): $(cat "$TMP/pnc.err")" "$rc" = 2 -a -n "$(grep -F -- '--cgroup' "$TMP/pnc.err")"

# ---- not there: status 3
nport=$(free_port)
"$CLI" attach --cgroup --initcwnd 40 ":$nport" >/dev/null 2>"$TMP/nf.err"
rc=$?
check cgroup_attach.not_found "status $rc (want 3): $(cat "$TMP/nf.err")" "$rc" = 3
"$CLI" detach ":$nport" >/dev/null 2>"$TMP/nf2.err"
rc=$?
check cgroup_detach.not_found "status $rc (want 3): $(cat "$TMP/nf2.err")" "$rc" = 3

# ---- the root cgroup: a listener made there is refused, even after its process moved
if [ "$(sed -n 's/^0:://p' /proc/self/cgroup)" = / ]; then
	start_server -t 10 rootsrv -- "$BIN/tserver" -4 -m hold -n 1 -t 20 || fail cgroup_attach.root "no server"
	echo "$SRV_PID" >"$CG/cgroup.procs"
	"$CLI" attach --cgroup --initcwnd 40 "$SRV_PID" >"$TMP/root.out" 2>"$TMP/root.err"
	rc=$?
	check cgroup_attach.root_refused "status $rc (want 2), attached to $MNT: $("$BPFQ" attached "$MNT" | grep -c ' socktune$') of ours: $(head -c 400 "$TMP/root.err")" \
		"$rc" = 2 -a -n "$(grep -F 'root cgroup' "$TMP/root.err")" -a -n "$(grep -F -- '--cgroup-root' "$TMP/root.err")" -a \
		"$("$BPFQ" attached "$MNT" | grep -c ' socktune$')" = 0
	"$CLI" detach "$SRV_PID" >/dev/null 2>"$TMP/root2.err"
	rc=$?
	check cgroup_detach.root_refused "status $rc (want 2): $(head -c 300 "$TMP/root2.err")" "$rc" = 2
	kill "$SRV_PID" 2>/dev/null
else
	skip cgroup_attach.root_refused "the test does not run in the root cgroup"
fi
kill "$srv" 2>/dev/null

# ---- nothing to apply: refused before anything is looked at, --json too
"$CLI" attach --cgroup --json "$$" >"$TMP/none.json" 2>"$TMP/none.err"
rc=$?
check cgroup_attach.nothing_to_apply "status $rc (want 2), json status $(json_get "$TMP/none.json" status): $(cat "$TMP/none.err")" \
	"$rc" = 2 -a "$(json_get "$TMP/none.json" status)" = 2 -a -n "$(grep -F 'nothing to apply' "$TMP/none.err")"
