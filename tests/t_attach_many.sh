#!/bin/sh
# socktune attach has no silent cap: 300 processes each holding a listener on one port
# (SO_REUSEPORT) are all reached by :PORT (it stopped at 64 listeners, status 0), and 300
# PIDs given are all tuned (it ignored those past 256).  Asserted on each listener's backlog
# in force (ss Send-Q).
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip attach_many "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi
N=300
# (the holders live long enough for four runs of a sanitizer build on a loaded machine, and
# are ended here however the test ends: SIGTERM to reuseport.py takes those it started)
AT_EXIT='kill $(sed -n "s/^PIDS //p" "$TMP/many.out" 2>/dev/null) 2>/dev/null'
start_server -t 20 many -- $PY "$ROOT/tests/py/reuseport.py" $N 600 || {
	fail attach_many "the $N listeners did not start: $(cat "$TMP/many.err")"
	exit 0
}
at() { ss -Hltn "sport = :$SRV_PORT" | awk -v q="$1" '$3 == q' | grep -c .; }
check many_listeners_there "$(ss -Hltn "sport = :$SRV_PORT" | grep -c .) listeners" \
	"$(ss -Hltn "sport = :$SRV_PORT" | grep -c .)" = $N

"$CLI" attach --backlog 1000 ":$SRV_PORT" >"$TMP/port.out" 2>"$TMP/port.err"
rc=$?
check many_port_all "status $rc; $(at 1000) of $N at 1000, $(count_lines "$TMP/port.out" '^socktune pid=[0-9]* level=info event=attach ') lines; $(head -c 300 "$TMP/port.err")" \
	"$rc" = 0 -a "$(at 1000)" = $N -a "$(count_lines "$TMP/port.out" '^socktune pid=[0-9]* level=info event=attach ')" = $N

# shellcheck disable=SC2046 # one argument per pid
"$CLI" attach --backlog 2000 $(sed -n 's/^PIDS //p' "$TMP/many.out") >"$TMP/pids.out" 2>"$TMP/pids.err"
rc=$?
check many_pids_all "status $rc; $(at 2000) of $N at 2000; $(head -c 300 "$TMP/pids.err")" \
	"$rc" = 0 -a "$(at 2000)" = $N -a "$(count_lines "$TMP/pids.out" '^socktune pid=[0-9]* level=info event=attach ')" = $N

# ... also with few descriptors to spare: RLIMIT_NOFILE 512, soft and hard (a service's
# limits; Debian's default soft one is 1024): a look at each PID uses its descriptors and
# lets them go (before: each PID kept a pidfd, a sock_diag socket and a second pidfd for the
# run, and past ~170 of 300 'pidfd_open: Too many open files'); with --follow, which keeps
# them, the soft limit is raised to the hard one (soft 512: all 300 followed and tuned)
pids=$(sed -n 's/^PIDS //p' "$TMP/many.out")
# shellcheck disable=SC2086 # one argument per pid
(ulimit -n 512 && exec "$CLI" attach --backlog 2500 $pids) >"$TMP/lim.out" 2>"$TMP/lim.err"
rc=$?
check many_pids_low_nofile "status $rc; $(at 2500) of $N at 2500; $(sort "$TMP/lim.err" | uniq -c | head -c 300)" \
	"$rc" = 0 -a "$(at 2500)" = $N -a "$(count_lines "$TMP/lim.out" '^socktune pid=[0-9]* level=info event=attach ')" = $N
# shellcheck disable=SC2086
(ulimit -S -n 512 && exec "$CLI" attach --follow --backlog 2600 $pids) >"$TMP/limf.out" 2>"$TMP/limf.err" &
fol=$!
busywait 60000 sh -c "[ \$(grep -c '^socktune pid=[0-9]* level=info event=attach ' '$TMP/limf.out') -ge $N ]"
check many_follow_low_soft_nofile "$(at 2600) of $N at 2600; $(sort "$TMP/limf.err" | uniq -c | head -c 300)" \
	"$(at 2600)" = $N -a -z "$(grep 'Too many open files' "$TMP/limf.err")"
kill $fol 2>/dev/null
kill $(sed -n 's/^PIDS //p' "$TMP/many.out") "$SRV_PID" 2>/dev/null || :
wait "$SRV_PID" 2>/dev/null || :
