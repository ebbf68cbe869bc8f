#!/bin/sh
# receive-buffer-limited, on a real 80 ms path (pathemu): a plain server that reads each
# request body (400,000 bytes) only 0.5 s after the connection came (a lookup first), in a
# namespace whose receive buffers start at 87,380 bytes (net.ipv4.tcp_rmem).  The buffer fills with the unread body, the window it
# advertises closes, and the client waits: its kernel says so (tcpi_rwnd_limited, the time
# the receiver's window held its sending).  doctor names receive-buffer-limited from its
# samples of those connections (half the buffer or more unread, the window under 4
# segments), with --rcvbuf sized from the bodies (twice the largest, a power of two: 1M,
# under net.core.rmem_max); that fix, run as printed, removes most of the stall: the client's rwnd-limited time falls to a tenth of what it was
# or less, its busy time by a fifth or more.
. "$(dirname "$0")/lib.sh"

path_needs path_upload
PF=$ROOT/tests/py/pathfind.py
path_up path_upload up --delay 40ms --seconds 90
path_loss_based "$NB" >/dev/null
ip netns exec "$NB" sysctl -qw net.ipv4.tcp_rmem="4096 87380 6291456"
path_serve path_upload srv $PY "$PF" serve 5001 late 400000
before=$(in_a $PY "$PF" upload 198.18.1.1 5001 400000 2)
echo "plain: $before"
check path_upload.plain "the client's sending held by the server's window: $before (want 200 ms of rwnd-limited time or more over 2 uploads)" \
	"$(field "$before" rwnd_limited_us)" -ge 200000

# doctor's window with uploads in it: 6 uploads in a window of 8 s, up to 3 windows.  Each
# upload holds a full buffer for a few hundred ms of the 0.5 s its reader waits, and doctor
# samples connections every 200 ms or, when a sample costs more CPU (a sanitizer build), as
# much as 20 times that CPU apart: one window's 2 uploads were once all missed in CI
for try in 1 2 3; do
	"$CLI" doctor --json --seconds 8 "$SRV" >"$TMP/doc.json" 2>"$TMP/doc.err" &
	D=$!
	wait_file "$TMP/doc.err" '^socktune: doctor: watching ' 10
	in_a $PY "$PF" upload 198.18.1.1 5001 400000 6 >/dev/null
	wait "$D"
	kinds "$TMP/doc.json" | grep -qx receive-buffer-limited && break
	echo "# window $try: doctor named $(kinds "$TMP/doc.json" | tr '\n' ' ')"
done
ev() { finding "$TMP/doc.json" receive-buffer-limited "evidence.$1"; }
finding "$TMP/doc.json" receive-buffer-limited fix >"$TMP/fixes"
echo "doctor: $(kinds "$TMP/doc.json" | tr '\n' ' '); rcvbuf $(ev rcvbuf.effective), $(ev unread_bytes) unread, window $(ev rcv_wnd_bytes), bodies up to $(ev body_bytes); fixes: $(tr '\n' '|' <"$TMP/fixes")"
check path_upload.doctor "doctor's findings: $(kinds "$TMP/doc.json" | tr '\n' ' ') ($(cat "$TMP/doc.err"))" \
	-n "$(kinds "$TMP/doc.json" | grep -x receive-buffer-limited)"
UNREAD=$(ev unread_bytes) RCVBUF=$(ev rcvbuf.effective) WND=$(ev rcv_wnd_bytes) BODY=$(ev body_bytes)
check path_upload.evidence "rcvbuf '$(ev rcvbuf.effective)' with '$(ev unread_bytes)' unread (want half or more), window '$(ev rcv_wnd_bytes)' (want under 4 segments, 5792), body '$(ev body_bytes)' (want 400000 or more)" \
	"$(( ${UNREAD:-0} * 2 ))" -ge "${RCVBUF:-1}" -a "${WND:-5792}" -lt 5792 -a \
	"${BODY:-0}" -ge 400000
check path_upload.fix_form "the fix: $(sed -n 1p "$TMP/fixes") (want socktune attach --rcvbuf 1M --ports 5001 $SRV)" \
	"$(sed -n 1p "$TMP/fixes")" = "socktune attach --rcvbuf 1M --ports 5001 $SRV"

# the fix, as printed
FIX=$(sed -n 1p "$TMP/fixes")
ok=1
PATH="$B:$PATH" sh -c "$FIX" >"$TMP/fix.out" 2>&1 || ok=0
after=$(in_a $PY "$PF" upload 198.18.1.1 5001 400000 2)
echo "after the fix: $after"
check path_upload.cured "after the fix: $after; before: $before (want rwnd-limited a tenth or less, busy four fifths or less; the fix $( [ $ok = 1 ] && echo ran || cat "$TMP/fix.out"))" \
	$ok = 1 -a "$(( $(field "$after" rwnd_limited_us) * 10 ))" -le "$(field "$before" rwnd_limited_us)" -a \
	"$(( $(field "$after" busy_us) * 5 ))" -le "$(( $(field "$before" busy_us) * 4 ))"
