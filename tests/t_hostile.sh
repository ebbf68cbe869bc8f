#!/bin/sh
# Hostile environment: garbage, empty, overflowing, negative, oversized and huge
# values in every SOCKTUNE_* variable: each named in exactly one error line, ignored, the
# valid variables still applied, the server serving.  An unwritable SOCKTUNE_LOG_FILE falls
# back to stderr with one warning naming the variable and the path.  Log writes never block
# the server for long (stderr a full pipe nobody reads) and never raise SIGPIPE (stderr a
# pipe whose reader is gone).
. "$(dirname "$0")/lib.sh"

# every variable with its type and maximum, from the one list in include/socktune.h
VARS=$(sed -n '/^#define ST_VARIABLES/,/^$/p' "$ROOT/include/socktune.h" |
	grep -o 'X([A-Z_]*, "[A-Z_]*", "[a-z-]*", ST_T_[A-Z]*, [0-9]*, [0-9A-Z]*' |
	sed 's/X(\([A-Z_]*\), "[A-Z_]*", "[a-z-]*", ST_T_\([A-Z]*\), [0-9]*, \([0-9]*\).*/\1:\2:\3/')
HUGE=$(printf '%5000s' '' | tr ' ' 'x')
LONGPATH=/tmp/$(printf '%600s' '' | tr ' ' 'p')

# bad CLASS TYPE MAX: the value of that class for a variable of that type, or nothing
# where the class holds a valid value for the type ("-1" is a fine file name).
bad() {
	case "$1:$2" in
	garbage:PATH | overflow:PATH | negative:PATH | negative:NAME) ;;
	garbage:IFNAME | negative:IFNAME) ;; # the kernel takes both as interface names
	garbage:*) echo 'zz%$!' ;;
	empty:*) echo '' ;;
	overflow:*) echo 99999999999999999999G ;;
	negative:*) echo -1 ;;
	oversized:SIZE | oversized:INT | oversized:USEC) echo $(($3 + 1)) ;;
	oversized:BOOL) echo 2 ;;
	oversized:PORTS) echo 80,65536 ;;
	oversized:LOGLEVEL) echo verbose ;;
	oversized:KEEPALIVE) echo 99999:1:1 ;;
	oversized:NAME | oversized:IFNAME) echo abcdefghijklmnop ;;
	oversized:TOS) echo 256 ;;
	oversized:PRECEDENCE) echo policyy ;;
	oversized:PATH) echo "$LONGPATH" ;;
	huge:PATH) echo "$LONGPATH" ;;
	huge:*) echo "$HUGE" ;;
	esac
}

# run CLASS GOOD-VAR GOOD-VALUE: every other variable bad, GOOD-VAR valid
run() {
	cls=$1 good=$2 gval=$3
	n=hostile_${cls}_$(echo "$good" | tr 'A-Z' 'a-z')
	set --
	badvars=""
	for v in $VARS; do
		id=${v%%:*} rest=${v#*:}
		type=${rest%%:*} max=${rest#*:}
		[ "$id" = "$good" ] && continue
		case "$cls:$type" in
		garbage:PATH | overflow:PATH | negative:PATH | negative:NAME) continue ;;
		garbage:IFNAME | negative:IFNAME) continue ;;
		esac
		set -- "$@" "SOCKTUNE_$id=$(bad "$cls" "$type" "$max")"
		badvars="$badvars $id"
	done
	if ! ts_start "$n" "$@" LD_PRELOAD="$LIB" "SOCKTUNE_$good=$gval" -- -n 1 -t 10; then
		fail "${n}_serving" "no PORT: $(head -c 400 "$TMP/$n.err")"
		kill $SRV_PID 2>/dev/null
		return
	fi
	"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null 2>&1
	wait_server
	rc=$?
	check "${n}_serving" "tserver exit $rc, $(grep -c '^CONN' "$TMP/$n.out") connections" \
		"$rc" = 0 -a "$(grep -c '^CONN' "$TMP/$n.out")" = 1
	missing="" twice=""
	for id in $badvars; do
		c=$(grep -c "level=error event=config variable=SOCKTUNE_$id value=" "$TMP/$n.err")
		[ "$c" = 0 ] && missing="$missing $id"
		[ "$c" -gt 1 ] && twice="$twice $id"
	done
	check "${n}_each_named" "no error line for:$missing (of$badvars)" -z "$missing"
	check "${n}_once" "more than one error line for:$twice" -z "$twice"
	lines=$(grep -vc '^socktune pid=[0-9]* level=[a-z]* event=' "$TMP/$n.err")
	check "${n}_lines_well_formed" "$lines stderr lines not socktune logfmt lines" "$lines" = 0
}

for cls in garbage empty overflow negative oversized huge; do
	run "$cls" NODELAY 1
	line=$(grep '^CONN' "$TMP/hostile_${cls}_nodelay.out")
	check hostile_${cls}_rest_applied "SOCKTUNE_NODELAY=1 among bad ones: $line" \
		"$(field "$line" nodelay)" = 1
	run "$cls" BACKLOG 77
	line=$(grep '^CONN' "$TMP/hostile_${cls}_backlog.out")
	check hostile_${cls}_rest_applied_backlog "SOCKTUNE_BACKLOG=77 among bad ones: $line" \
		"$(field "$line" backlog)" = 77
done

# ---- an unwritable log file: stderr, with one warning naming the variable and the path
mkdir -p "$TMP/logdir"
ln -s "$TMP/logdir/target.log" "$TMP/logdir/link.log"
for case in nodir symlink dir; do
	case $case in
	nodir) path=$TMP/no/such/dir/socktune.log ;;
	symlink) path=$TMP/logdir/link.log ;;
	dir) path=$TMP/logdir ;;
	esac
	n=logfile_$case
	if ts_start $n LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG_FILE="$path" -- -n 1 -t 10; then
		"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null 2>&1
		wait_server
		w=$(grep -c "level=warn event=log-file variable=SOCKTUNE_LOG_FILE path=\"$path\"" "$TMP/$n.err")
		check ${n}_one_warning "$w warnings; stderr: $(cat "$TMP/$n.err")" "$w" = 1
		check ${n}_falls_back "no listen line on stderr: $(cat "$TMP/$n.err")" \
			"$(grep -c 'event=listen ' "$TMP/$n.err")" = 1
		check ${n}_served "connection lines: $(grep -c '^CONN' "$TMP/$n.out")" \
			"$(grep -c '^CONN' "$TMP/$n.out")" = 1
	else
		fail ${n}_one_warning "tserver did not start: $(cat "$TMP/$n.err")"
	fi
done
check logfile_symlink_not_followed "the symlink's target was written" ! -e "$TMP/logdir/target.log"

# ---- stderr a full pipe nobody reads: each log line waits at most ~100 ms, then is dropped
n=stderr_full
if start_server $n -- $PY "$ROOT/tests/py/stderrpipe.py" full /usr/bin/env LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 \
	SOCKTUNE_LOG=debug SOCKTUNE_QUICKACK=1 "$BIN/tserver" -n 10 -t 20; then
	"$BIN/kaclient" burst -n 10 -T 10 127.0.0.1 "$SRV_PORT" >"$TMP/$n.client" 2>&1
	wait_server
	rc=$?
	check ${n}_served "tserver exit $rc, $(grep -c '^CONN' "$TMP/$n.out") of 10 connections" \
		"$rc" = 0 -a "$(grep -c '^CONN' "$TMP/$n.out")" = 10
else
	fail ${n}_served "tserver did not start with a full stderr (blocked in a log write?)"
	kill $SRV_PID 2>/dev/null
fi

# ---- stderr a pipe whose reader is gone: no SIGPIPE for the server
n=stderr_closed
if start_server $n -- $PY "$ROOT/tests/py/stderrpipe.py" closed /usr/bin/env LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 \
	SOCKTUNE_LOG=debug "$BIN/tserver" -n 3 -t 20; then
	"$BIN/kaclient" burst -n 3 -T 10 127.0.0.1 "$SRV_PORT" >/dev/null 2>&1
	wait_server
	rc=$?
	check ${n}_no_sigpipe "tserver exit $rc (141 = SIGPIPE), $(grep -c '^CONN' "$TMP/$n.out") of 3" \
		"$rc" = 0 -a "$(grep -c '^CONN' "$TMP/$n.out")" = 3
else
	fail ${n}_no_sigpipe "tserver did not start: killed by SIGPIPE in the listen log line?"
	kill $SRV_PID 2>/dev/null
fi
