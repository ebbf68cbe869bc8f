#!/bin/sh
# Two `socktune revert all` at once on one journal of 20 changes (20 listeners whose backlog
# apply took from 5 to 4096, the lines as watch --apply writes them): one acts, the other
# waits for the journal's lock and then finds every change marked.  The journal ends with 20
# marks for the 20 changes, the two outputs hold 20 revert lines in all, each socket set
# back once (before 4096 after 5), and every listener's backlog reads 5.
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open' 2>/dev/null; then
	skip revert_concurrent "$PY has no os.pidfd_open"
	exit 0
fi
TOOLS=$ROOT/tests/py/revert_tools.py
tools() { $PY "$TOOLS" "$@"; }
N=20
$PY "$TOOLS" serve $N 5 0 >"$TMP/s.out" 2>"$TMP/s.err" &
S=$!
if ! wait_file "$TMP/s.out" '^READY' 10; then
	fail revert_concurrent.server "$(cat "$TMP/s.err")"
	exit 0
fi
sed -n 's/^L fd=\([0-9]*\) port=\([0-9]*\) inode=\([0-9]*\)$/\1 \2 \3/p' "$TMP/s.out" >"$TMP/l"
J=$TMP/journal.jsonl
tools head >"$J"
chmod 600 "$J"
while read -r fd port ino; do
	tools sock "$S" "$fd" listen 4096 # (what watch --apply does: listen again)
	tools line "$S" "$fd" "$ino" backlog 5 "$(tools sock "$S" "$fd" backlog)" "127.0.0.1:$port" >>"$J"
done <"$TMP/l"
applied=$(grep -c '"event": "apply"' "$J")
"$CLI" revert --journal "$J" all >"$TMP/r1.out" 2>"$TMP/r1.err" &
R1=$!
"$CLI" revert --journal "$J" all >"$TMP/r2.out" 2>"$TMP/r2.err" &
R2=$!
wait "$R1"; rc1=$?
wait "$R2"; rc2=$?
marks=$(grep -c '"event": "revert"' "$J")
lines=$(cat "$TMP/r1.out" "$TMP/r2.out" | grep -c 'event=revert')
set_once=$(cat "$TMP/r1.out" "$TMP/r2.out" | grep 'event=revert .*before=[0-9]* after=5$' | grep -vc ' before=5 ')
at5=0
while read -r fd port ino; do
	[ "$(tools sock "$S" "$fd" backlog)" = 5 ] && at5=$((at5 + 1))
done <"$TMP/l"
check revert_concurrent_once "statuses $rc1 $rc2; changes $applied, marks $marks, revert lines \
$lines (set back: $set_once), listeners at 5: $at5; $(cat "$TMP/r1.err" "$TMP/r2.err" | head -c 300)" \
	"$rc1" = 0 -a "$rc2" = 0 -a "$applied" = $N -a "$marks" = $N -a "$lines" = $N -a \
	"$set_once" = $N -a "$at5" = $N
kill "$S"; wait "$S" 2>/dev/null
exit 0
