#!/bin/sh
# socktune watch: a plain python3 http.server (backlog 5, no LD_PRELOAD) stopped with SIGSTOP
# under a 300-connect burst shows on /metrics its backlog 5, the queue full while stopped,
# drops above 0 and the namespace's ListenOverflows up; no listener series has a pid label;
# a restart on the same port continues the same series (one scrape says up 0 while it is
# gone, the next none); the text parses with prometheus_client, each family's HELP and TYPE
# once; --textfile writes a file that parses; doctor's accept-queue-overflow finding is a
# series while it holds, with one line on stderr (its fix) when it appears and one when it
# clears, and a flap is damped (it takes twice the quiet windows to clear); clients that connect and say nothing, or send
# a huge header slowly, do not stop /metrics answering another client within 2 s; other
# paths are 404; SIGTERM ends it (143).
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import prometheus_client' 2>/dev/null; then
	skip watch "$PY has no prometheus_client (apt-get install python3-prometheus-client)"
	exit 0
fi
if ! command -v curl >/dev/null; then
	skip watch "no curl"
	exit 0
fi

P=$(free_port)
M=$(free_port)
while [ "$M" = "$P" ]; do M=$(free_port); done
# The server runs in a cgroup v2 named as a systemd service, where one can be made: its
# unit label comes from there.  A wrapper moves itself in before it execs the server, so the
# watch never sees the server elsewhere.
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
UNIT=st-watch-$$.service CGD=""
if [ -n "$CG" ] && mkdir "$CG/$UNIT" 2>/dev/null; then
	CGD=$CG/$UNIT
	# at exit, the servers ended first, then the cgroup (it goes once they have: a bounded wait)
	AT_EXIT='kill_jobs; busywait 3000 sh -c "rmdir $CGD 2>/dev/null || [ ! -e $CGD ]"'
fi
# serve NAME: http.server on $P (backlog 5), in $CGD when there is one
serve() {
	start_server -l "$P" "$1" -- sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs" || exit 1
		shift; exec "$@"' sh "$CGD" $PY -m http.server --bind 127.0.0.1 "$P"
}
if ! serve srv; then
	fail watch.server "http.server did not start: $(cat "$TMP/srv.err")"
	exit 0
fi
SRV=$SRV_PID

"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 --textfile "$TMP/w.prom" --every 0.5 --window 1 \
	":$P" >"$TMP/watch.out" 2>"$TMP/watch.err" &
WPID=$!

# scrape NAME: GET /metrics into $TMP/NAME.txt (2 s at most); its status
scrape() {
	curl -sf -m 2 "http://127.0.0.1:$M/metrics" >"$TMP/$1.txt"
}
# val FILE FAMILY: the value of FAMILY's sample for port $P ("" when none)
val() {
	grep "^$2{.*port=\"$P\"" "$1" | head -n 1 | awk '{ print $NF }'
}
# ns_val FILE FAMILY: the value of a namespace family's sample (the listener's namespace)
ns_val() {
	_ns=$(grep "^socktune_listener_up{.*port=\"$P\"" "$1" | sed -n 's/.*netns="\([0-9]*\)".*/\1/p' | head -n 1)
	grep "^$2{netns=\"$_ns\"}" "$1" | awk '{ print $NF }'
}
# labels FILE: the label set of the listener's up series
labels() {
	grep "^socktune_listener_up{.*port=\"$P\"" "$1" | head -n 1 | sed 's/^[^{]*\({[^}]*}\).*/\1/'
}
has_up() { scrape up && [ "$(val "$TMP/up.txt" socktune_listener_up)" = 1 ]; }

if ! busywait 15000 has_up; then
	fail watch.starts "no socktune_listener_up 1 for :$P: $(cat "$TMP/watch.err") $(head -c 300 "$TMP/up.txt" 2>/dev/null)"
	exit 0
fi
pass watch.starts
scrape before
check watch.backlog "backlog '$(val "$TMP/before.txt" socktune_listener_backlog)'" \
	"$(val "$TMP/before.txt" socktune_listener_backlog)" = 5
L1=$(labels "$TMP/before.txt")
check watch.labels "labels $L1" -n "$(echo "$L1" | grep 'comm="python3"')" -a \
	-n "$(echo "$L1" | grep 'addr="127.0.0.1"')" -a -n "$(echo "$L1" | grep 'netns="[0-9][0-9]*"')"
if [ -n "$CGD" ]; then
	check watch.unit_label "labels $L1 (cgroup $CGD)" -n "$(echo "$L1" | grep "unit=\"$UNIT\"")"
else
	skip watch.unit_label "no cgroup v2 to make $UNIT in"
fi
ov0=$(ns_val "$TMP/before.txt" socktune_netns_listen_overflows_total)

# ---- the server stopped, 300 connects at once ----
kill -STOP "$SRV"
"$BIN/kaclient" burst -n 300 -T 4 127.0.0.1 "$P" >"$TMP/burst.out" 2>&1 &
BURST=$!
# (scraped until the full queue, its drops and the namespace's overflows are all there: at
# most 10 s)
stopped_seen() {
	scrape stopped && [ "$(val "$TMP/stopped.txt" socktune_listener_queue_length)" -ge 5 ] 2>/dev/null &&
		[ "$(val "$TMP/stopped.txt" socktune_listener_drops_total)" -gt 0 ] 2>/dev/null &&
		[ "$(ns_val "$TMP/stopped.txt" socktune_netns_listen_overflows_total)" -gt "${ov0:-0}" ] 2>/dev/null
}
busywait 10000 stopped_seen
# doctor's rule, over watch's 1 s windows: the overflow is a finding while it holds
has_finding() {
	scrape finding && grep -q "^socktune_finding{.*kind=\"accept-queue-overflow\",severity=\"critical\",.*port=\"$P\"} 1$" "$TMP/finding.txt"
}
busywait 3000 has_finding
check watch.finding_series "$(grep '^socktune_finding' "$TMP/finding.txt")" \
	-n "$(grep "^socktune_finding{id=\"[0-9a-f]\{16\}\",kind=\"accept-queue-overflow\".*port=\"$P\"} 1$" "$TMP/finding.txt")"
line=$(grep "event=finding .*kind=accept-queue-overflow .*port=$P " "$TMP/watch.err" | head -n 1)
check watch.finding_line "stderr: $(tail -n 3 "$TMP/watch.err")" \
	-n "$(printf '%s' "$line" | grep "^socktune pid=$WPID level=error event=finding id=[0-9a-f]\{16\} .*fix.0=\"socktune attach --backlog 4096 --ports $P $SRV\"")"
FID=$(field "$line" id)
kill -CONT "$SRV"
wait "$BURST"
# (6 quiet windows; a tail of the burst, clients gone, may hold it up to 63 s more)
busywait 80000 file_has "$TMP/watch.err" "event=finding-cleared id=$FID "
check watch.finding_cleared "stderr: $(tail -n 3 "$TMP/watch.err")" \
	"$(count_lines "$TMP/watch.err" "event=finding-cleared id=$FID ")" = 1
scrape cleared
check watch.finding_series_gone "$(grep '^socktune_finding{' "$TMP/cleared.txt")" \
	-z "$(grep "^socktune_finding{id=\"$FID\"" "$TMP/cleared.txt")"
# again soon after: a flap, said, and it takes 12 quiet windows (twice 6) to clear
kill -STOP "$SRV"
"$BIN/kaclient" burst -n 300 -T 3 127.0.0.1 "$P" >"$TMP/burst2.out" 2>&1 &
BURST=$!
busywait 8000 file_has "$TMP/watch.err" "event=finding id=$FID " 2
kill -CONT "$SRV"
wait "$BURST"
again=$(grep "event=finding id=$FID " "$TMP/watch.err" | sed -n 2p)
check watch.finding_flap_damped "second line: $again" \
	-n "$(printf '%s' "$again" | grep 'flaps=1 clears_after_windows=12')"
q=$(val "$TMP/stopped.txt" socktune_listener_queue_length)
peak=$(val "$TMP/stopped.txt" socktune_listener_queue_peak)
drops=$(val "$TMP/stopped.txt" socktune_listener_drops_total)
ov=$(ns_val "$TMP/stopped.txt" socktune_netns_listen_overflows_total)
check watch.queue_full_while_stopped "queue '$q' peak '$peak' (backlog 5)" \
	"${q:-0}" -ge 5 -a "${q:-0}" -le 6 -a "${peak:-0}" -ge 5
check watch.drops "drops '$drops'" "${drops:-0}" -gt 0
check watch.overflows_up "ListenOverflows '$ov0' -> '$ov'" -n "$ov0" -a "${ov:-0}" -gt "${ov0:-0}"
# the peak is since the last scrape: the queue drained, the next one says so.  Drained
# means no handshake left either: the burst's clients that had their ACK dropped (the queue
# full) still complete their connection after the client exits, when its orphaned socket's
# FIN (which carries the ACK) reaches the server's SYN-RECV request: the queue grows again
# for seconds after the burst (seen: 4 under load, after a scrape said 0)
quiet() {
	[ -z "$(ss -Htn state syn-recv "sport = :$P")" ] &&
		[ -z "$(ss -Htn state syn-sent state fin-wait-1 state fin-wait-2 state established "dport = :$P")" ] &&
		curl -sf -m 2 "http://127.0.0.1:$M/metrics" | grep -q "^socktune_listener_queue_length{.*port=\"$P\".* 0\$"
}
busywait 20000 quiet
scrape drained
scrape drained2
check watch.peak_since_scrape "peak after a scrape of the drained queue: $(val "$TMP/drained2.txt" socktune_listener_queue_peak)" \
	"$(val "$TMP/drained2.txt" socktune_listener_queue_peak)" = 0

# ---- no pid label on any listener series ----
pids=$(grep '^socktune_listener' "$TMP/stopped.txt" | grep -c 'pid=')
check watch.no_pid_label "$pids series with a pid label" "$pids" = 0 -a \
	-n "$(grep '^socktune_listener_up{' "$TMP/stopped.txt")"

# ---- the text parses; each family's HELP and TYPE once, counters _total ----
# parses NAME FILE
parses() {
	$PY - "$2" "$P" >"$TMP/$1.parse" 2>&1 <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
fams = list(text_string_to_metric_families(text))
helps, types, bad = {}, {}, []
for line in text.splitlines():
    if line.startswith("# HELP "):
        n = line.split()[2]; helps[n] = helps.get(n, 0) + 1
    elif line.startswith("# TYPE "):
        _, _, n, t = line.split(); types[n] = types.get(n, 0) + 1
        if t == "counter" and not n.endswith("_total"): bad.append("counter " + n)
    elif line and not line.startswith("#"):
        n = line.split("{")[0].split()[0]
        if n not in types: bad.append("no TYPE before " + n)
once = [n for n in set(helps) | set(types) if helps.get(n) != 1 or types.get(n) != 1]
ours = [s for f in fams for s in f.samples if s.labels.get("port") == sys.argv[2]]
if once or bad or len(fams) < 10 or not ours:
    print("bad: %s %s families=%d ours=%d" % (once, bad[:3], len(fams), len(ours)))
else:
    print("ok %d families" % len(fams))
EOF
	grep -q '^ok' "$TMP/$1.parse"
}
parses text "$TMP/stopped.txt"
check watch.parses "$(cat "$TMP/text.parse")" $? = 0

# ---- --textfile: written whole, parses ----
busywait 3000 test -s "$TMP/w.prom"
parses textfile "$TMP/w.prom"
check watch.textfile_parses "$(cat "$TMP/textfile.parse") $(cat "$TMP/watch.err")" $? = 0
# (a write under way has its temporary beside the file for a moment: one left behind stays)
busywait 2000 sh -c "! ls -a '$TMP' | grep -q 'w.prom.tmp'"
check watch.textfile_no_temporary "$(ls -a "$TMP" | grep 'w.prom.')" $? = 0

# another user's file at the path (a shared, sticky directory) is never replaced: status 1,
# its bytes as they were, no temporary left (root's rename took it over)
if [ "$(id -u)" = 0 ]; then
	mkdir "$TMP/shared" && chmod 1777 "$TMP/shared"
	echo "theirs" >"$TMP/shared/o.prom" && chown 65534 "$TMP/shared/o.prom"
	"$CLI" watch --textfile "$TMP/shared/o.prom" --every 0.2 --seconds 1 ":$P" >/dev/null 2>"$TMP/owner.err"
	rc=$?
	check watch.textfile_other_owner "status $rc (want 1), file: $(head -c 60 "$TMP/shared/o.prom"), uid $(stat -c %u "$TMP/shared/o.prom"), left: $(ls -a "$TMP/shared" | tr '\n' ' ') $(cat "$TMP/owner.err")" \
		"$rc" = 1 -a "$(cat "$TMP/shared/o.prom")" = theirs -a "$(stat -c %u "$TMP/shared/o.prom")" = 65534 \
		-a "$(ls -A "$TMP/shared" | wc -l)" = 1
fi
# a file of this user's that socktune did not write (run as root: /etc/passwd is root's) is
# not replaced either; an empty one is (made ready with touch)
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$TMP/mine.prom"
"$CLI" watch --textfile "$TMP/mine.prom" --every 0.2 --seconds 1 ":$P" >/dev/null 2>"$TMP/mine.err"
rc=$?
: >"$TMP/empty.prom"
"$CLI" watch --textfile "$TMP/empty.prom" --every 0.2 --seconds 1 ":$P" >/dev/null 2>"$TMP/empty.err"
rc2=$?
check watch.textfile_not_socktunes "status $rc (want 1), file: $(head -c 60 "$TMP/mine.prom"); empty one: status $rc2 (want 0), $(head -c 30 "$TMP/empty.prom"); $(cat "$TMP/mine.err" "$TMP/empty.err")" \
	"$rc" = 1 -a "$(cat "$TMP/mine.prom")" = "root:x:0:0:root:/root:/bin/sh" -a \
	-n "$(grep -F 'does not begin as this output does' "$TMP/mine.err")" -a \
	"$rc2" = 0 -a "$(head -c 16 "$TMP/empty.prom")" = "# HELP socktune_"

# ---- a restart on the same port: up 0 once, then the same series again ----
kill "$SRV"
wait_gone "$SRV" 3
is_down() { scrape down && [ "$(val "$TMP/down.txt" socktune_listener_up)" = 0 ]; }
busywait 3000 is_down
check watch.gone_says_up_0 "after the server exited: $(grep "port=\"$P\"" "$TMP/down.txt" | head -n 3)" \
	"$(val "$TMP/down.txt" socktune_listener_up)" = 0 -a -z "$(val "$TMP/down.txt" socktune_listener_backlog)"
scrape after_down
check watch.gone_dropped "a second scrape still has: $(grep "^socktune_listener.*port=\"$P\"" "$TMP/after_down.txt" | head -n 2)" \
	-z "$(grep "^socktune_listener.*port=\"$P\"" "$TMP/after_down.txt")"
if ! serve srv2; then
	fail watch.restart "http.server did not start again: $(cat "$TMP/srv2.err")"
else
	busywait 15000 has_up
	L2=$(labels "$TMP/up.txt")
	check watch.restart_same_series "before $L1, after '$L2'" -n "$L1" -a "$L1" = "$L2"
fi

# ---- hostile clients: silent ones past the cap, a huge header sent slowly ----
$PY - "$M" >"$TMP/hostile.out" 2>&1 <<'EOF' &
import socket, sys, time
port = int(sys.argv[1])
silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
slow = socket.create_connection(("127.0.0.1", port))
slow.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: ")
end = time.time() + 6
try:
    while time.time() < end:
        slow.sendall(b"a" * 64)
        time.sleep(0.05)
except OSError as e:
    print("slow client cut off:", e)
time.sleep(1)
EOF
HOSTILE=$!
sleep 0.5
# (a scrape that waited for them would wait for their 3 s request deadline: curl's bound is
# under it, and the time is only shown)
t0=$(date +%s%N)
curl -sf -m 2.9 "http://127.0.0.1:$M/metrics" >"$TMP/hostile.txt"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check watch.hostile_clients_do_not_stall "status $rc after $ms ms" $rc = 0 -a \
	-n "$(grep '^socktune_listener_up{' "$TMP/hostile.txt")"
# a header of 100 KB at once: refused (431), and the next client is served
code=$($PY -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
try:
    s.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
except OSError:
    pass
print(s.recv(64).split(b" ")[1].decode())' "$M" 2>&1)
check watch.huge_header_refused "answer '$code'" "$code" = 431
wait "$HOSTILE"
scrape after_hostile
check watch.serves_after_hostile "status $?" $? = 0
code=$(curl -s -o /dev/null -w '%{http_code}' -m 2 "http://127.0.0.1:$M/other")
check watch.other_path_404 "status $code" "$code" = 404

# ---- --listen PORT alone is loopback's ----
# (this watch and the next live 60 s, killed once looked at: a sanitizer build's, started
# late on a loaded machine, was gone or not yet listening within 3 s)
M2=$(free_port)
"$CLI" watch --listen "$M2" --seconds 60 ":$P" >/dev/null 2>"$TMP/w2.err" &
W2=$!
wait_listen "$M2" 30
check watch.listen_default_loopback "$(ss -Hltn "sport = :$M2")" \
	-n "$(ss -Hltn "sport = :$M2" | grep '127.0.0.1:')"
kill "$W2" 2>/dev/null
wait "$W2" 2>/dev/null

# ---- stdout and stderr closed: no socket takes their numbers (its lines went into a
# sock_diag socket at 2, a message to the kernel), and it still serves ----
M3=$(free_port)
"$CLI" watch --listen "$M3" --seconds 60 ":$P" >&- 2>&- &
W3=$!
wait_listen "$M3" 30
std_socks=""
for fd in 0 1 2; do
	case "$(readlink "/proc/$W3/fd/$fd" 2>/dev/null)" in socket:*) std_socks="$std_socks $fd" ;; esac
done
code=$(curl -s -o /dev/null -w '%{http_code}' -m 2 "http://127.0.0.1:$M3/metrics")
check watch.stdio_closed "sockets at descriptors:${std_socks:- none}; /metrics answered $code" \
	-z "$std_socks" -a "$code" = 200
kill "$W3" 2>/dev/null
wait "$W3" 2>/dev/null

# ---- SIGTERM ends it, by that signal ----
kill -TERM "$WPID"
wait_gone "$WPID" 3
wait "$WPID"
rc=$?
check watch.sigterm "status $rc: $(tail -n 2 "$TMP/watch.err")" $rc = 143
# without --listen or --textfile there is nowhere to write: refused
"$CLI" watch >/dev/null 2>"$TMP/none.err"
rc=$?
check watch.needs_output "status $rc: $(cat "$TMP/none.err")" $rc = 2
# the second server goes (not left to the EXIT trap: a server started again was seen to
# outlive it), then the cgroup
kill "$SRV_PID" 2>/dev/null
wait_gone "$SRV_PID" 3
if [ -n "$CGD" ]; then
	rmdir "$CGD" 2>/dev/null
	check watch.cgroup_removed "$CGD is still there: $(cat "$CGD/cgroup.procs" 2>&1)" ! -d "$CGD"
fi
