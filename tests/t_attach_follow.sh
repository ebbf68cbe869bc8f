#!/bin/sh
# socktune attach --follow ends when it should: once every target has exited, whatever the
# others given were (a pid that does not exist is refused, and takes no place: it was
# polled as descriptor 0, stdin, so attach never ended on a terminal and said "attach 0:
# exited" on /dev/null), and once the reader of its stdout has left (`attach --follow | head`:
# status 1 and a line on stderr).
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip attach_follow "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi
LISTENER='import socket,sys,time; l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen(5); print("PORT", l.getsockname()[1], flush=True); time.sleep(float(sys.argv[1]))'
# (the target exits once attach has said it tuned it, when the file FILE appears: at most
# 60 s; a fixed lifetime ran out before a sanitizer build's attach had opened it)
UNTIL='import os,socket,sys,time; l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen(5); print("PORT", l.getsockname()[1], flush=True)
end = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < end: time.sleep(0.02)'
bad=2147483646

# stdin a pipe nobody writes to (as a terminal is: never readable) while attach runs, then
# /dev/null
start_server good -- $PY -c "$UNTIL" "$TMP/good.go"
good=$SRV_PID
mkfifo "$TMP/stdin1"
sleep 90 >"$TMP/stdin1" &
writer=$!
"$CLI" attach --follow --nodelay $bad "$good" <"$TMP/stdin1" >"$TMP/f1.out" 2>"$TMP/f1.err" &
fol=$!
wait_file "$TMP/f1.out" "pid=$good level=info event=attach " 30
touch "$TMP/good.go"
busywait 8000 gone $fol
ended=$(gone $fol && echo yes || echo no)
kill $fol $writer 2>/dev/null
check follow_bad_pid_ends "ended: $ended; stderr: $(cat "$TMP/f1.err")" "$ended" = yes -a \
	"$(count_lines "$TMP/f1.err" "^socktune: attach $good: exited$")" = 1 -a \
	"$(count_lines "$TMP/f1.err" "^socktune: attach $bad: pidfd_open: No such process")" = 1 -a \
	"$(count_lines "$TMP/f1.err" 'attach 0:')" = 0

start_server good2 -- $PY -c "$UNTIL" "$TMP/good2.go"
good=$SRV_PID
"$CLI" attach --follow --nodelay $bad "$good" </dev/null >"$TMP/f2.out" 2>"$TMP/f2.err" &
fol=$!
wait_file "$TMP/f2.out" "pid=$good level=info event=attach " 30
touch "$TMP/good2.go"
busywait 8000 gone $fol
wait $fol
rc=$?
check follow_bad_pid_devnull "status $rc (want 1: one refused); stderr: $(cat "$TMP/f2.err")" "$rc" = 1 -a \
	"$(count_lines "$TMP/f2.err" 'attach 0:')" = 0 -a \
	"$(count_lines "$TMP/f2.err" "^socktune: attach $good: exited$")" = 1 -a \
	-n "$(grep "pid=$good level=info event=attach .*nodelay=1" "$TMP/f2.out")"

# | head -n 1: the reader leaves after the first line; attach, with nothing more to write,
# ends all the same (its stdout says POLLERR)
start_server long -- $PY -c "$LISTENER" 20
mkfifo "$TMP/fifo"
"$CLI" attach --follow --nodelay "$SRV_PID" >"$TMP/fifo" 2>"$TMP/f3.err" &
fol=$!
head -n 1 <"$TMP/fifo" >"$TMP/f3.head"
busywait 5000 gone $fol
ended=$(gone $fol && echo yes || echo no)
kill $fol 2>/dev/null
wait $fol
rc=$?
check follow_reader_left "ended: $ended, status $rc (want 1); head: $(cat "$TMP/f3.head"); stderr: $(cat "$TMP/f3.err")" \
	"$ended" = yes -a "$rc" = 1 -a -n "$(grep "pid=$SRV_PID level=info event=attach " "$TMP/f3.head")" -a \
	"$(cat "$TMP/f3.err")" = "socktune: attach: writing the lines: Broken pipe (the reader left): stopped"
kill "$SRV_PID" 2>/dev/null || :

# a closed stdout (>&-): /dev/null takes descriptor 1 (t_closed_stdout), so attach --follow
# goes on and tunes the listener that comes later, its lines discarded, and it waits without
# spinning; before the fix for poll(), a stdout that took no line made poll() return at once
# and attach made a pass each time, a core's worth (2 s: ~1.8 s of CPU)
LATE='import socket,time; time.sleep(3); l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen(5); time.sleep(12)'
$PY -c "$LATE" &
late=$!
"$CLI" attach --follow --nodelay "$late" >&- 2>"$TMP/f4.err" &
fol=$!
busywait 10000 sh -c "$PY '$ROOT/tests/py/sockopts_of.py' $late | grep -q 'listening=1.*nodelay=1'"
lis=$($PY "$ROOT/tests/py/sockopts_of.py" "$late" | grep 'listening=1')
sleep 1
ticks=$(awk '{print $14 + $15}' /proc/$fol/stat 2>/dev/null)
kill $fol 2>/dev/null
wait $fol
rc=$?
# the margin: 5 s of waiting, under a second of CPU even on a loaded machine (a spin took 90%)
check follow_stdout_closed "listener: $lis; $ticks ticks of CPU; status $rc (want 143); stderr: \
$(cat "$TMP/f4.err")" -n "$(echo "$lis" | grep 'nodelay=1')" -a -n "$ticks" -a \
	"${ticks:-999}" -lt 100 -a "$rc" = 143 -a \
	-n "$(grep 'stopped by SIGTERM.*: 1 sockets\? tuned' "$TMP/f4.err")"
kill "$late" 2>/dev/null
$PY -c "$LATE" &
late=$!
$PY - "$CLI" "$late" "$TMP/f5.err" <<'PYEOF' >"$TMP/f5.out"
import socket, subprocess, sys, time
a, b = socket.socketpair()
p = subprocess.Popen([sys.argv[1], "attach", "--follow", "--nodelay", sys.argv[2]], stdout=a,
                     stderr=open(sys.argv[3], "w"))
a.close()
b.close()                                 # the reader leaves before any line
try:
    p.wait(timeout=5)
    print("ended yes status", p.returncode)
except subprocess.TimeoutExpired:
    st = open("/proc/%d/stat" % p.pid).read().split()
    print("ended no: %d ticks of CPU in 5 s" % (int(st[13]) + int(st[14])))
    p.kill()
PYEOF
check follow_stdout_socket_reader_left "$(cat "$TMP/f5.out"); stderr: $(cat "$TMP/f5.err")" \
	"$(cat "$TMP/f5.out")" = "ended yes status 1" -a \
	"$(cat "$TMP/f5.err")" = "socktune: attach: writing the lines: Broken pipe (the reader left): stopped"
kill "$late" 2>/dev/null || :

# SIGTERM (docker stop, systemctl stop) and SIGINT (^C) end --follow after a summary line
# (how long, how many sockets tuned and refused), with the signal's own status, 143 or 130.
# Before, SIGTERM killed it with no summary.
for sig in TERM INT; do
	start_server sig$sig -- $PY -c "$LISTENER" 20
	"$CLI" attach --follow --nodelay "$SRV_PID" >"$TMP/s$sig.out" 2>"$TMP/s$sig.err" &
	fol=$!
	busywait 5000 file_has "$TMP/s$sig.out" "pid=$SRV_PID level=info event=attach "
	kill -$sig $fol
	busywait 5000 gone $fol
	wait $fol
	rc=$?
	want=143
	[ $sig = INT ] && want=130
	check follow_sig$sig "status $rc (want $want); stdout: $(cat "$TMP/s$sig.out"); stderr: $(cat "$TMP/s$sig.err")" \
		"$rc" = $want -a -n "$(grep "pid=$SRV_PID level=info event=attach .*nodelay=1" "$TMP/s$sig.out")" -a \
		"$(grep -c "^socktune: attach: stopped by SIG$sig after [0-9.]* s: 1 socket tuned, 0 refused$" "$TMP/s$sig.err")" = 1
	kill "$SRV_PID" 2>/dev/null || :
done
