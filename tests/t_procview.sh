#!/bin/sh
# The app's view of its own process is the same with the library logging to a file as
# without it: procview (idle threads sharing the descriptor table, as in any threaded
# server) prints the descriptor table's size, the numbers socket() and dup() hand out, errno,
# the signal mask and its own pending signal around listen().  The first listen() is where
# the library opens its log file and moves it out of the app's way; moving it past the
# table (F_DUPFD_CLOEXEC to 512) made the kernel grow the table, and with threads
# sharing it wait for an RCU grace period: 12-20 ms inside listen(), the socket already
# listening, which Erlang's inets turned into an HTTP 500 for its first request.
. "$(dirname "$0")/lib.sh"

"$BIN/procview" -t 3 -n 2 >"$TMP/plain" 2>"$TMP/plain.err" ||
	fail procview_plain "exited $?: $(cat "$TMP/plain.err")"
check procview_plain_runs "procview printed: $(cat "$TMP/plain")" \
	"$(grep -c '^round=' "$TMP/plain")" -ge 8

for where in file stderr; do
	if [ $where = file ]; then
		set -- SOCKTUNE_LOG_FILE="$TMP/pv.log"
	else
		set -- SOCKTUNE_LOG=info
	fi
	env LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 "$@" "$BIN/procview" -t 3 -n 2 \
		>"$TMP/$where" 2>"$TMP/$where.err"
	rc=$?
	check procview_${where}_exit "exited $rc: $(cat "$TMP/$where.err")" "$rc" = 0
	d=$(diff "$TMP/plain" "$TMP/$where" | grep -v timing | grep '^[<>]' | tr '\n' ';')
	check procview_${where}_same_view "log to $where, the app saw a different process: $d" -z "$d"
	p=$(sed -n 's/^timing round=0 listen_us=//p' "$TMP/plain")
	l=$(sed -n 's/^timing round=0 listen_us=//p' "$TMP/$where")
	echo "# log to $where: first listen() took ${l} us (${p} us without the library)"
done
n=$(grep -c 'event=listen ' "$TMP/pv.log" 2>/dev/null)
check procview_logged "the log file has $n event=listen lines (want 2): the open was exercised" \
	"${n:-0}" = 2
# the table itself: one size before and after every listen()
f=$(grep -o 'fdsize\.[a-z]*=[0-9-]*' "$TMP/file" | sed 's/.*=//' | sort -u | tr '\n' ' ')
check procview_fdtable_not_grown "descriptor table sizes seen with the log file: $f" \
	"$(echo $f | wc -w)" = 1
