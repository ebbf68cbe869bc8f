#!/bin/sh
# The log in hostile places.  No path named in SOCKTUNE_LOG_FILE makes a hook block (a FIFO
# without a reader: one warning, stderr); a FIFO with a reader and a character device take
# lines; a socket is refused.  A line never goes into a socket: not to a client that got
# number 2 because the server started with stderr closed, not down an inetd-style control
# connection (only a journal stream named by JOURNAL_STREAM is a socket that takes lines).
# 16 threads logging their first line at once open the file once; a forked child with %p
# opens its own once.  A file that refuses writes (/dev/full) is said once.  Bytes that are
# not UTF-8 never reach a line.
. "$(dirname "$0")/lib.sh"

# hex_of STRING: its bytes in hex, as the python clients print what they received
hex_of() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }

for fam in 4 6; do
	host=$(host_of $fam)

	# ---- a FIFO without a reader: no block in listen(), one warning, stderr used
	n=fifo_noreader_$fam
	mkfifo "$TMP/$n.fifo"
	if ts_start $n LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_STATS="$TMP/$n.stats" \
		SOCKTUNE_LOG_FILE="$TMP/$n.fifo" -- -$fam -n 1 -t 10; then
		"$BIN/kaclient" burst -n 1 -T 5 "$host" "$SRV_PORT" >/dev/null 2>&1
		wait_server
		check ${n}_served "connection lines: $(grep -c '^CONN' "$TMP/$n.out")" \
			"$(grep -c '^CONN' "$TMP/$n.out")" = 1
		w=$(grep -c "level=warn event=log-file variable=SOCKTUNE_LOG_FILE path=\"$TMP/$n.fifo\" .*action=stderr" "$TMP/$n.err")
		check ${n}_one_warning "$w warnings; stderr: $(cat "$TMP/$n.err")" "$w" = 1
		check ${n}_falls_back "no listen line on stderr: $(cat "$TMP/$n.err")" \
			"$(grep -c 'event=listen ' "$TMP/$n.err")" = 1
		# the exit-time summary opens the log the same way: it too went to stderr
		check ${n}_summary "no summary line at exit: $(cat "$TMP/$n.err")" \
			"$(grep -c 'event=summary ' "$TMP/$n.err")" = 1
	else
		fail ${n}_served "no PORT within 5 s: blocked opening the FIFO? $(cat "$TMP/$n.err")"
		kill "$SRV_PID" 2>/dev/null
	fi

	# ---- a FIFO with a reader (this shell, read-write so that opening it never waits):
	# lines arrive there, nothing on stderr
	n=fifo_reader_$fam
	mkfifo "$TMP/$n.fifo"
	exec 3<>"$TMP/$n.fifo"
	if ts_start $n LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG_FILE="$TMP/$n.fifo" \
		-- -$fam -n 1 -t 10; then
		"$BIN/kaclient" burst -n 1 -T 5 "$host" "$SRV_PORT" >/dev/null 2>&1
		wait_server
		$PY -c 'import fcntl, os
fcntl.fcntl(3, fcntl.F_SETFL, fcntl.fcntl(3, fcntl.F_GETFL) | os.O_NONBLOCK)
try:
    while True:
        os.write(1, os.read(3, 65536))
except BlockingIOError:
    pass' >"$TMP/$n.got"
		check ${n}_lines "listen lines through the FIFO: $(cat "$TMP/$n.got")" \
			"$(grep -c 'event=listen ' "$TMP/$n.got")" = 1
		check ${n}_stderr_quiet "stderr: $(cat "$TMP/$n.err")" ! -s "$TMP/$n.err"
	else
		fail ${n}_lines "tserver did not start: $(cat "$TMP/$n.err")"
		kill "$SRV_PID" 2>/dev/null
	fi
	exec 3<&-

	# ---- stderr closed at start (2>&-, and stdin too, so a connection gets number 2):
	# the client receives exactly the server's bytes
	n=stderr_closed_$fam
	env LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_QUICKACK=1 SOCKTUNE_LOG=debug \
		"$BIN/tserver" -$fam -m ka -n 1 -q 10 -r 10 -t 10 >"$TMP/$n.out" <&- 2>&- &
	SRV_PID=$!
	if wait_file "$TMP/$n.out" '^PORT '; then
		port=$(port_of "$TMP/$n.out")
		got=$($PY -c '
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.sendall(b"q" * 10)
s.shutdown(socket.SHUT_WR)
got = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    got += b
print(got.hex())' "$host" "$port" 2>&1)
		wait_server
		check ${n}_client_bytes "the client got $got (want 10 x 'r')" \
			"$got" = "$(hex_of rrrrrrrrrr)"
	else
		fail ${n}_client_bytes "tserver did not start"
		kill "$SRV_PID" 2>/dev/null
	fi

	# ---- inetd style: 0, 1, 2 are the client socket; the listener's line stays out of it
	n=inetd_$fam
	$PY "$ROOT/tests/py/stdsock.py" inetd $fam LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 \
		SOCKTUNE_LOG=debug >"$TMP/$n.out" 2>&1
	got=$(sed -n 's/^GOT //p' "$TMP/$n.out")
	check ${n}_reply_only "the client got $got (want REPLY\\n); $(cat "$TMP/$n.out")" \
		"$got" = "$(printf 'REPLY\n' | od -An -tx1 | tr -d ' \n')"

	# ---- 16 threads' first lines at once: one descriptor of the log file
	n=threads_$fam
	log=$TMP/$n.log
	env LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG_FILE="$log" \
		"$BIN/logthreads" -$fam -n 16 -s 10 >"$TMP/$n.out" 2>"$TMP/$n.err" &
	lpid=$!
	if wait_file "$TMP/$n.out" '^READY listeners=16'; then
		fds=0
		for f in /proc/$lpid/fd/*; do
			[ "$(readlink "$f" 2>/dev/null)" = "$log" ] && fds=$((fds + 1))
		done
		check ${n}_one_fd "$fds descriptors of the log file" "$fds" = 1
		check ${n}_lines "listen lines: $(grep -c 'event=listen ' "$log")" \
			"$(grep -c 'event=listen ' "$log")" = 16
	else
		fail ${n}_one_fd "logthreads not ready: $(cat "$TMP/$n.out" "$TMP/$n.err")"
	fi
	kill $lpid 2>/dev/null
	wait $lpid 2>/dev/null

	# ---- %p and fork: a child that logs (4 threads at once) opens its own file, once,
	# and keeps no copy of its parent's
	n=forked_$fam
	start_server $n LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG=debug SOCKTUNE_LOG_FILE="$TMP/$n.%p.log" -- \
		"$BIN/mtserver" -$fam -P 2 -t 4 -T 30 &&
		busywait 5000 file_has "$TMP/$n.out" '^READY' 2
	mpid=$SRV_PID
	if [ "$(grep -c '^READY' "$TMP/$n.out")" = 2 ]; then
		# the kernel hands each connection to one of the two; under load one may take a whole
		# burst, so bursts go on (at most 5) until both have accepted and logged
		for _b in 1 2 3 4 5; do
			"$BIN/kaclient" burst -n 32 -T 5 "$host" "$SRV_PORT" >/dev/null 2>&1
			have=0
			for p in $(sed -n 's/^PID //p' "$TMP/$n.out"); do
				[ -f "$TMP/$n.$p.log" ] && have=$((have + 1))
			done
			[ "$have" -ge 2 ] && break
		done
		bad="" logged=0
		for p in $(sed -n 's/^PID //p' "$TMP/$n.out"); do
			[ -f "$TMP/$n.$p.log" ] || continue
			logged=$((logged + 1))
			own=0 other=0
			for f in /proc/$p/fd/*; do
				t=$(readlink "$f" 2>/dev/null)
				case "$t" in
				"$TMP/$n.$p.log") own=$((own + 1)) ;;
				"$TMP/$n."*.log) other=$((other + 1)) ;;
				esac
			done
			[ "$own" = 1 ] && [ "$other" = 0 ] || bad="$bad pid=$p own=$own other=$other"
		done
		check ${n}_own_file_once "descriptors:$bad" -z "$bad"
		check ${n}_both_logged "$logged of 2 processes have a log file" "$logged" = 2
	else
		fail ${n}_own_file_once "mtserver not ready: $(cat "$TMP/$n.out" "$TMP/$n.err")"
	fi
	kill $mpid 2>/dev/null
	wait $mpid 2>/dev/null
done

# ---- a character device takes lines like a file; a socket is refused with one line
n=chardev
if ts_start $n LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG_FILE=/dev/null -- -n 1 -t 10; then
	"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null 2>&1
	wait_server
	check ${n}_quiet "stderr: $(cat "$TMP/$n.err")" ! -s "$TMP/$n.err"
else
	fail ${n}_quiet "tserver did not start: $(cat "$TMP/$n.err")"
fi
n=unix_socket
$PY -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(sys.argv[1]); s.listen(1)
time.sleep(15)' "$TMP/$n.sock" &
spid=$!
busywait 5000 test -S "$TMP/$n.sock"
if ts_start $n LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG_FILE="$TMP/$n.sock" -- -n 1 -t 10; then
	"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null 2>&1
	wait_server
	w=$(grep -c "level=warn event=log-file variable=SOCKTUNE_LOG_FILE path=\"$TMP/$n.sock\"" "$TMP/$n.err")
	check ${n}_one_warning "$w warnings; stderr: $(cat "$TMP/$n.err")" "$w" = 1
else
	fail ${n}_one_warning "tserver did not start: $(cat "$TMP/$n.err")"
fi
kill $spid 2>/dev/null

# ---- a journal stream (stderr a unix socket named by JOURNAL_STREAM) takes lines; the
# same socket unnamed does not
n=journal
$PY "$ROOT/tests/py/stdsock.py" journal yes LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 \
	>"$TMP/$n.out" 2>&1
got=$(sed -n 's/^GOT //p' "$TMP/$n.out" | $PY -c 'import sys; print(bytes.fromhex(sys.stdin.read().strip()).decode(errors="replace"))')
check ${n}_named_takes_lines "the journal got: $got" \
	"$(printf '%s\n' "$got" | grep -c 'event=listen ')" = 1
$PY "$ROOT/tests/py/stdsock.py" journal no LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 \
	>"$TMP/$n.no" 2>&1
check ${n}_unnamed_socket_nothing "the socket got: $(cat "$TMP/$n.no")" \
	"$(sed -n 's/^GOT //p' "$TMP/$n.no")" = ""

# ---- /dev/full: the first failed write is said once on stderr
n=dev_full
if ts_start $n LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG=debug SOCKTUNE_LOG_FILE=/dev/full \
	-- -n 3 -t 10; then
	"$BIN/kaclient" burst -n 3 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null 2>&1
	wait_server
	w=$(grep -c 'level=warn event=log-file variable=SOCKTUNE_LOG_FILE path="/dev/full" error="No space left on device"' "$TMP/$n.err")
	check ${n}_one_warning "$w warnings; stderr: $(cat "$TMP/$n.err")" "$w" = 1
	check ${n}_nothing_else "stderr lines: $(wc -l <"$TMP/$n.err")" "$(wc -l <"$TMP/$n.err")" = 1
	check ${n}_served "connection lines: $(grep -c '^CONN' "$TMP/$n.out")" \
		"$(grep -c '^CONN' "$TMP/$n.out")" = 3
else
	fail ${n}_one_warning "tserver did not start: $(cat "$TMP/$n.err")"
fi

# ---- bytes that are not UTF-8 in values: the lines stay UTF-8; valid characters stay
n=not_utf8
if ts_start $n LD_PRELOAD="$LIB" SOCKTUNE_NODELAY="$(printf 'x\377\376')" \
	SOCKTUNE_CONGESTION="$(printf '\300\257\355\240\200')" SOCKTUNE_TOS="$(printf 'caf\303\251')" \
	-- -n 1 -t 10; then
	"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null 2>&1
	wait_server
	bad=$($PY -c 'import sys
try:
    sys.stdin.buffer.read().decode("utf-8")
    print("")
except UnicodeDecodeError as e:
    print(e)' <"$TMP/$n.err")
	check ${n}_lines_utf8 "stderr is not UTF-8: $bad; $(od -c "$TMP/$n.err" | head -n 20)" -z "$bad"
	check ${n}_escaped "no value=\"x??\" line: $(cat "$TMP/$n.err")" \
		"$(grep -c 'variable=SOCKTUNE_NODELAY value="x??"' "$TMP/$n.err")" = 1
	check ${n}_overlong_surrogate "no value=\"?????\" line: $(cat "$TMP/$n.err")" \
		"$(grep -c 'variable=SOCKTUNE_CONGESTION value="?????"' "$TMP/$n.err")" = 1
	check ${n}_valid_kept "no value=\"café\" line: $(cat "$TMP/$n.err")" \
		"$(grep -c "variable=SOCKTUNE_TOS value=\"$(printf 'caf\303\251')\"" "$TMP/$n.err")" = 1
else
	fail ${n}_lines_utf8 "tserver did not start: $(cat "$TMP/$n.err")"
fi
