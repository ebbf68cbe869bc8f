#!/bin/sh
# Configuration errors and logging: a bad value gives one level=error line naming the
# variable and the value and the rest still applies; an unknown SOCKTUNE_* a warn line; a
# process without a tuned socket prints nothing; stdout is never written; SOCKTUNE_DISABLE,
# SOCKTUNE_LOG and SOCKTUNE_LOG_FILE.
. "$(dirname "$0")/lib.sh"

# run NAME FAMILY [VAR=value...] -- [tserver args]: tserver, one connection.
run() {
	_n=$1 _fam=$2
	shift 2
	ts_serve "$_n" "$_fam" 1 "$@"
}

# only_known_stdout NAME: tserver's stdout holds its own lines and nothing else.
only_known_stdout() {
	_bad=$(grep -cv '^\(PORT\|LISTENER\|CONN\|DONE\) ' "$TMP/$1.out")
	check "${1}_stdout_clean" "stdout has foreign lines: $(grep -v '^\(PORT\|LISTENER\|CONN\|DONE\) ' "$TMP/$1.out")" "$_bad" -eq 0
}

run base 4 -- -n 1 || exit 0
b_nd=$(ts_val base CONN nodelay)
b_rcv=$(ts_val base CONN rcvbuf)
b_bl=$(ts_val base CONN backlog)

# ---- bad values: one error line each, naming variable and value; the others still apply
for fam in 4 6; do
	n=bad_values_v$fam
	run $n "$fam" LD_PRELOAD="$LIB" SOCKTUNE_RCVBUF=bad SOCKTUNE_NODELAY=1 \
		SOCKTUNE_BACKLOG=99999999999999999999 SOCKTUNE_SNDBUF=64k -- -"$fam" -n 1 || continue
	e1=$(grep 'level=error' "$TMP/$n.err" | grep 'SOCKTUNE_RCVBUF')
	e2=$(grep 'level=error' "$TMP/$n.err" | grep 'SOCKTUNE_BACKLOG')
	check ${n}_rcvbuf_line "error line for SOCKTUNE_RCVBUF=bad: $(cat "$TMP/$n.err")" \
		"$(echo "$e1" | grep -c 'value="*bad"*')" -eq 1 -a "$(echo "$e1" | grep -c ignored)" -eq 1
	check ${n}_backlog_line "error line for the overflowing SOCKTUNE_BACKLOG: $(cat "$TMP/$n.err")" \
		"$(echo "$e2" | grep -c '99999999999999999999')" -eq 1
	check ${n}_error_count "want exactly 2 level=error lines: $(cat "$TMP/$n.err")" \
		"$(count_lines "$TMP/$n.err" level=error)" -eq 2
	check ${n}_others_apply "NODELAY=$(ts_val $n CONN nodelay) SNDBUF=$(ts_val $n CONN sndbuf) after the bad ones" \
		"$(ts_val $n CONN nodelay)" = 1 -a "$(ts_val $n CONN sndbuf)" = 131072
	check ${n}_bad_ignored "rcvbuf $(ts_val $n CONN rcvbuf) (untuned $b_rcv), backlog $(ts_val $n CONN backlog) (untuned $b_bl)" \
		"$(ts_val $n CONN rcvbuf)" = "$b_rcv" -a "$(ts_val $n CONN backlog)" = "$b_bl"
	line=$(log_line $n listen)
	check ${n}_listen_line "listen line with bad keys: $line" \
		-n "$line" -a -z "$(field "$line" rcvbuf.want)" -a -z "$(field "$line" backlog.want)"
	only_known_stdout $n
done

for c in "SOCKTUNE_PORTS=9-3" "SOCKTUNE_PORTS=0" "SOCKTUNE_PORTS=65536" "SOCKTUNE_LOG=loud" \
	"SOCKTUNE_RCVBUF=-16M" "SOCKTUNE_RCVBUF=" "SOCKTUNE_NODELAY=maybe" "SOCKTUNE_BACKLOG=0"; do
	var=${c%%=*} val=${c#*=}
	n=bad_$(echo "$c" | tr -c 'A-Za-z0-9\n' '_')
	run $n 4 LD_PRELOAD="$LIB" "$c" SOCKTUNE_BACKLOG_MIN=50 -- -n 1 || continue
	e=$(grep 'level=error' "$TMP/$n.err")
	check $n "$c: want one error line naming it, and BACKLOG_MIN applied: $(cat "$TMP/$n.err")" \
		"$(count_lines "$TMP/$n.err" level=error)" -eq 1 -a "$(echo "$e" | grep -c "variable=$var ")" -eq 1 \
		-a "$(echo "$e" | grep -c "value=\"$val\"")" -eq 1 -a "$(ts_val $n CONN backlog)" = 50
done

# ---- an unknown variable: a warn line naming it; the rest applies
n=unknown
if run $n 4 LD_PRELOAD="$LIB" SOCKTUNE_FOO=bar SOCKTUNE_NODELAY=1 -- -n 1; then
	w=$(grep 'level=warn' "$TMP/$n.err" | grep SOCKTUNE_FOO)
	check $n "warn line for SOCKTUNE_FOO: $(cat "$TMP/$n.err")" \
		"$(echo "$w" | grep -c unknown)" -eq 1 -a "$(count_lines "$TMP/$n.err" level=error)" -eq 0 \
		-a "$(ts_val $n CONN nodelay)" = 1
fi

# ---- no tuned socket: nothing at all, even with bad and unknown variables
n=silent_ls
out=$(LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=bad SOCKTUNE_FOO=1 ls / 2>"$TMP/$n.err")
ref=$(ls /)
check $n "ls under the library: stderr '$(cat "$TMP/$n.err")'" ! -s "$TMP/$n.err"
check ${n}_stdout "ls output changed under the library" "$out" = "$ref"
n=silent_sockets
# a TCP client socket, a UDP socket and an AF_UNIX listener: none is a tuned listener
P="$TMP/unix.sock" LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=bad SOCKTUNE_LOG=debug "$PY" -c '
import socket, os
t = socket.socket(); t.close()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0)); u.close()
x = socket.socket(socket.AF_UNIX); p = os.environ["P"]; x.bind(p); x.listen(5); x.close(); os.unlink(p)
print("ok")
' >"$TMP/$n.out" 2>"$TMP/$n.err"
check $n "no tuned socket: stdout '$(cat "$TMP/$n.out")' stderr '$(cat "$TMP/$n.err")'" \
	"$(cat "$TMP/$n.out")" = ok -a ! -s "$TMP/$n.err"

# ---- stdout is never written, even at debug level with errors and clamps
n=stdout_debug
run $n 4 LD_PRELOAD="$LIB" SOCKTUNE_LOG=debug SOCKTUNE_RCVBUF=1G SOCKTUNE_FOO=1 \
	SOCKTUNE_NODELAY=1 SOCKTUNE_QUICKACK=1 -- -n 1 && {
	only_known_stdout $n
	check ${n}_stderr_has_debug "no debug line on stderr: $(cat "$TMP/$n.err")" \
		"$(count_lines "$TMP/$n.err" level=debug)" -ge 1
}

# ---- SOCKTUNE_DISABLE=1: nothing changes, nothing is printed
for fam in 4 6; do
	n=disable_v$fam
	run base_d$fam "$fam" -- -"$fam" -n 1 || continue
	run $n "$fam" LD_PRELOAD="$LIB" SOCKTUNE_DISABLE=1 SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=256K \
		SOCKTUNE_BACKLOG=300 SOCKTUNE_QUICKACK=1 SOCKTUNE_FOO=1 SOCKTUNE_SNDBUF=bad -- -"$fam" -n 1 || continue
	want="$(grep '^\(LISTENER\|CONN\)' "$TMP/base_d$fam.out" | sed 's/sndbuf=[0-9]*//')"
	got="$(grep '^\(LISTENER\|CONN\)' "$TMP/$n.out" | sed 's/sndbuf=[0-9]*//')"
	# (an accepted socket's autotuned SO_SNDBUF varies from run to run, so it is left out)
	check $n "DISABLE=1 changed values: '$got' vs untuned '$want'" "$got" = "$want"
	check ${n}_silent "DISABLE=1 printed: $(cat "$TMP/$n.err")" ! -s "$TMP/$n.err"
done
n=disable_0
run $n 4 LD_PRELOAD="$LIB" SOCKTUNE_DISABLE=0 SOCKTUNE_NODELAY=1 -- -n 1 &&
	check $n "DISABLE=0 should tune: nodelay=$(ts_val $n CONN nodelay)" "$(ts_val $n CONN nodelay)" = 1

# ---- SOCKTUNE_LOG
n=log_off
run $n 4 LD_PRELOAD="$LIB" SOCKTUNE_LOG=off SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=1G \
	SOCKTUNE_SNDBUF=bad SOCKTUNE_FOO=1 -- -n 1 && {
	check $n "LOG=off printed: $(cat "$TMP/$n.err")" ! -s "$TMP/$n.err"
	check ${n}_still_tunes "LOG=off: nodelay=$(ts_val $n CONN nodelay)" "$(ts_val $n CONN nodelay)" = 1
}
n=log_error
run $n 4 LD_PRELOAD="$LIB" SOCKTUNE_LOG=error SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=1G \
	SOCKTUNE_SNDBUF=bad SOCKTUNE_FOO=1 -- -n 1 &&
	check $n "LOG=error: want the one error line only: $(cat "$TMP/$n.err")" \
		"$(wc -l <"$TMP/$n.err")" -eq 1 -a "$(count_lines "$TMP/$n.err" 'level=error.*SOCKTUNE_SNDBUF')" -eq 1
n=log_warn
run $n 4 LD_PRELOAD="$LIB" SOCKTUNE_LOG=warn SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=1G -- -n 1 &&
	check $n "LOG=warn: want the clamp and no info: $(cat "$TMP/$n.err")" \
		"$(count_lines "$TMP/$n.err" event=clamp)" -eq 1 -a "$(count_lines "$TMP/$n.err" level=info)" -eq 0
n=log_debug_per_conn
if ts_start $n LD_PRELOAD="$LIB" SOCKTUNE_LOG=debug SOCKTUNE_NODELAY=1 -- -n 3 -m hold; then
	"$BIN/kaclient" burst -n 3 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null
	wait_server
	check $n "debug: want one event=accept per connection: $(cat "$TMP/$n.err")" \
		"$(count_lines "$TMP/$n.err" event=accept)" -eq 3
	n=log_info_no_per_conn
	ts_start $n LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 -- -n 3 -m hold &&
		"$BIN/kaclient" burst -n 3 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null
	wait_server
	check $n "info: per-connection lines: $(cat "$TMP/$n.err")" \
		"$(wc -l <"$TMP/$n.err")" -eq 1
else
	fail $n "tserver did not start"
fi

# ---- SOCKTUNE_LOG_FILE with %p: the file of the server's pid gets the lines, stderr none
n=log_file
if ts_start $n LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG_FILE="$TMP/st-%p.log" -- -n 1; then
	pid=$SRV_PID
	"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null
	wait_server
	f="$TMP/st-$pid.log"
	check $n "want event=listen pid=$pid in $f (files: $(ls "$TMP" | grep st-))" \
		"$(count_lines "$f" "^socktune pid=$pid level=info event=listen")" -eq 1
	check ${n}_stderr "stderr with a log file: $(cat "$TMP/$n.err")" ! -s "$TMP/$n.err"
	# appended, never truncated
	echo "marker" >"$TMP/append.log"
	ts_start ${n}_append LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG_FILE="$TMP/append.log" -- -n 1 &&
		"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null
	wait_server
	check ${n}_append "log file: $(cat "$TMP/append.log")" \
		"$(head -n 1 "$TMP/append.log")" = marker -a "$(count_lines "$TMP/append.log" event=listen)" -eq 1
else
	fail $n "tserver did not start"
fi
n=log_file_unwritable
if run $n 4 LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG_FILE=/nonexistent/dir/st.log -- -n 1; then
	check $n "unwritable log file: want a warn naming it, then the lines on stderr: $(cat "$TMP/$n.err")" \
		"$(count_lines "$TMP/$n.err" 'level=warn.*/nonexistent/dir/st.log')" -eq 1 \
		-a "$(count_lines "$TMP/$n.err" event=listen)" -eq 1 -a "$(ts_val $n CONN nodelay)" = 1
fi
