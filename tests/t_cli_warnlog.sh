#!/bin/sh
# The command's warnings about a program out of LD_PRELOAD's reach (static here) go to
# --log-file as well as stderr: appended, in the library's line format, %p = the pid the
# program runs as (the command execs in place); --strict makes it level=error
# action=refused; --log-level error keeps a warning out of the file.
. "$(dirname "$0")/lib.sh"

PROG=$B/socktune-static # a statically linked program that exits at once
[ -x "$PROG" ] || { skip cli-warnlog "$PROG not built"; exit 0; }

"$CLI" --log-file "$TMP/w.%p.log" --nodelay -- "$PROG" --help >/dev/null 2>"$TMP/w.err" &
pid=$!
wait $pid
rc=$?
line=$(cat "$TMP/w.$pid.log" 2>/dev/null)
check warnlog.pid-file "no line in w.$pid.log (files: $(ls "$TMP"))" -n "$line"
check warnlog.format "line: $line" -n "$(printf '%s' "$line" |
	grep "^socktune pid=$pid level=warn event=unreachable program=\"$PROG\" reason=static detail=\"[^\"]*\" action=untuned$")"
check warnlog.stderr-too "stderr: $(cat "$TMP/w.err")" -n "$(grep 'socktune: warning: .*statically linked' "$TMP/w.err")"
check warnlog.runs "exit status $rc, want 0 (the program ran)" "$rc" -eq 0

# appended, not truncated
echo "socktune pid=1 level=info event=earlier" >"$TMP/a.log"
"$CLI" --log-file "$TMP/a.log" --nodelay -- "$PROG" --help >/dev/null 2>&1
check warnlog.appends "$(cat "$TMP/a.log")" "$(sed -n 1p "$TMP/a.log")" = "socktune pid=1 level=info event=earlier" -a \
	"$(grep -c 'event=unreachable' "$TMP/a.log")" -eq 1

"$CLI" --strict --log-file "$TMP/s.log" --nodelay -- "$PROG" --help >/dev/null 2>&1
rc=$?
check warnlog.strict "status $rc, file: $(cat "$TMP/s.log" 2>/dev/null)" "$rc" -eq 2 -a \
	-n "$(grep 'level=error event=unreachable .*reason=static .*action=refused$' "$TMP/s.log" 2>/dev/null)"

"$CLI" --log-level error --log-file "$TMP/e.log" --nodelay -- "$PROG" --help >/dev/null 2>&1
check warnlog.level "a warning written at --log-level error: $(cat "$TMP/e.log" 2>/dev/null)" \
	-z "$(grep 'event=unreachable' "$TMP/e.log" 2>/dev/null)"
