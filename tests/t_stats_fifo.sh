#!/bin/sh
# socktune stats and files that are not regular files: a FIFO is refused at once, one line
# naming it (before, open() waited for a writer for ever); the same under --json; under
# --format prometheus --watch a FIFO that a quoted pattern matches is left out, said once,
# and the rounds go on with the real stats file (before, the exporter stopped in its open).
# The first SIGTERM ends a --watch whose write waits on a reader that reads nothing (a pipe
# of 4 KiB kept full): status 143 within 5 s (before, SA_RESTART put the write back to
# sleep and only a second signal ended it).  Every wait here is bounded (timeout, python).
. "$(dirname "$0")/lib.sh"
for v in $(env | sed -n 's/^\(SOCKTUNE_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
mkdir "$TMP/w"
mkfifo "$TMP/w/s.fifo" || { skip stats_fifo "mkfifo failed"; exit 0; }

# ---- stats FIFO, stats --json FIFO: refused at once ----
timeout -k 5 10 "$CLI" stats "$TMP/w/s.fifo" >"$TMP/t.out" 2>"$TMP/t.err"
rc=$?
check stats_fifo.table_refused "status $rc (want 1; 124: still waiting after 10 s), stderr: $(cat "$TMP/t.err")" \
	"$rc" = 1 -a "$(grep -c . "$TMP/t.err")" = 1 -a \
	"$(grep -c "^socktune stats: $TMP/w/s.fifo: a FIFO: not read" "$TMP/t.err")" = 1 -a ! -s "$TMP/t.out"
timeout -k 5 10 "$CLI" stats --json "$TMP/w/s.fifo" >"$TMP/j.out" 2>"$TMP/j.err"
rc=$?
check stats_fifo.json_refused "status $rc (want 1), json: $(cat "$TMP/j.out")" \
	"$rc" = 1 -a "$(json_get "$TMP/j.out" status)" = 1 -a \
	-n "$(json_get "$TMP/j.out" error | grep "s.fifo: a FIFO")"
timeout -k 5 10 "$CLI" stats /dev/null >/dev/null 2>"$TMP/d.err"
rc=$?
check stats_fifo.device_refused "status $rc (want 1), stderr: $(cat "$TMP/d.err")" \
	"$rc" = 1 -a -n "$(grep '/dev/null: a character device: not read' "$TMP/d.err")"

# ---- --format prometheus --watch 'PATTERN': the FIFO left out, said once ----
start_server srv SOCKTUNE_STATS="$TMP/w/s.%p" LD_PRELOAD="$LIB" -- \
	$PY "$ROOT/tests/py/holdserver.py" "$TMP/never" 1 hang &&
	busywait 5000 test -f "$TMP/w/s.$SRV_PID" || { fail stats_fifo.start "$(cat "$TMP/srv.err")"; exit 0; }
SPID=$SRV_PID
timeout -k 5 20 "$CLI" stats --format prometheus --watch 1 --count 3 "$TMP/w/s.*" >"$TMP/p.out" 2>"$TMP/p.err"
rc=$?
rounds=$(grep -c "^socktune_process_running{pid=\"$SPID\",.*} 1\$" "$TMP/p.out")
said=$(grep -c "s.fifo (matches $TMP/w/s\.\*): a FIFO: left out" "$TMP/p.err")
check stats_fifo.pattern_goes_on "status $rc (want 0; 124: stopped), $rounds rounds with pid $SPID (want 3), FIFO said $said times (want 1): $(cat "$TMP/p.err")" \
	"$rc" = 0 -a "$rounds" = 3 -a "$said" = 1 -a "$(grep -c 's.fifo' "$TMP/p.out")" = 0

# ---- the first SIGTERM ends a --watch whose stdout's reader reads nothing ----
$PY - "$CLI" "$TMP/w/s.$SPID" >"$TMP/sig.res" 2>&1 <<'EOF'
import fcntl, os, signal, subprocess, sys, termios, time, array
cli, path = sys.argv[1], sys.argv[2]
r, w = os.pipe()
fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ: one page, full after a few rounds
p = subprocess.Popen([cli, "stats", "--json", "--watch", "1", path], stdout=w,
                     stderr=subprocess.DEVNULL)
os.close(w)
def queued():
    b = array.array("i", [0])
    fcntl.ioctl(r, termios.FIONREAD, b)
    return b[0]
# full: nothing more taken for 3 s while a round is due every second (at most 30 s)
last, since, end = -1, time.monotonic(), time.monotonic() + 30
while time.monotonic() < end and p.poll() is None:
    q = queued()
    if q != last:
        last, since = q, time.monotonic()
    elif q > 0 and time.monotonic() - since >= 3:
        break
    time.sleep(0.1)
if p.poll() is not None:
    print("ENDED-EARLY", p.returncode); sys.exit(0)
t0 = time.monotonic()
p.send_signal(signal.SIGTERM)
try:
    rc = p.wait(timeout=5)
    print("ENDED", rc, "%.2f" % (time.monotonic() - t0), "queued", last)
except subprocess.TimeoutExpired:
    print("ALIVE-5s", "queued", last)
    p.kill(); p.wait()
EOF
res=$(cat "$TMP/sig.res")
check stats_fifo.first_sigterm_ends "$res (want: ENDED -15 within 5 s)" -n "$(echo "$res" | grep '^ENDED -15 ')"
kill "$SPID" 2>/dev/null
