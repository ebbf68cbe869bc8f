#!/bin/sh
# socktune revert run by root on a journal in a directory another user owns: that user swaps
# the journal with a file of their own (renameat2 RENAME_EXCHANGE, in a loop) while revert
# runs, their file naming root's listener (backlog 4096) with "before": 1.  revert opens the
# path once and makes every check on what it opened: whichever file it got, it either reads
# root's journal or refuses the other user's; root's listener keeps its backlog, and the
# attacker's file was refused at least once (the race was live).  The user is nobody
# (setpriv, nothing made); skipped when there is no such user or no setpriv.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v ss >/dev/null ||
	! NOBODY=$(id -u nobody 2>/dev/null); then
	skip revert_swap "needs root, setpriv, ss and a user nobody"
	exit 0
fi
if ! $PY -c 'import os; os.pidfd_open' 2>/dev/null; then
	skip revert_swap "$PY has no os.pidfd_open"
	exit 0
fi
TOOLS=$ROOT/tests/py/revert_tools.py
tools() { $PY "$TOOLS" "$@"; }
as_nobody() { setpriv --reuid="$NOBODY" --regid="$(id -g nobody)" --clear-groups -- "$@"; }

chmod 711 "$TMP" # (nobody reaches its own directory inside, nothing else)
D=$TMP/attic
mkdir "$D" && chown nobody "$D" && chmod 755 "$D"
if ! as_nobody sh -c "touch '$D/probe' && rm '$D/probe'" 2>"$TMP/probe.err"; then
	skip revert_swap "nobody cannot write its directory: $(cat "$TMP/probe.err")"
	exit 0
fi

$PY "$TOOLS" serve 1 4096 0 >"$TMP/s.out" 2>"$TMP/s.err" &
S=$!
if ! wait_file "$TMP/s.out" '^READY' 10; then
	fail revert_swap.server "$(cat "$TMP/s.err")"
	exit 0
fi
# shellcheck disable=SC2046 # (its three words)
set -- $(sed -n 's/^L fd=\([0-9]*\) port=\([0-9]*\) inode=\([0-9]*\)$/\1 \2 \3/p' "$TMP/s.out")
FD=$1 PORT=$2 INO=$3
# (ss's Send-Q of the listener: the backlog in force, read cheaply in the loop below)
backlog() { ss -Hltn "sport = :$PORT" | awk '{ print $3; exit }'; }
B0=$(backlog)

# root's journal (nothing to revert in it), and the other user's file naming root's listener
J=$D/journal.jsonl
tools head >"$J" && chmod 600 "$J"
{ tools head; tools line "$S" "$FD" "$INO" backlog 1 "$B0" "127.0.0.1:$PORT"; } |
	as_nobody sh -c "cat >'$D/evil'"
check revert_swap_setup "journal owner $(stat -c %U "$J"), the other file's $(stat -c %U "$D/evil" 2>&1), backlog $B0" \
	"$(stat -c %u "$J")" = 0 -a "$(stat -c %u "$D/evil" 2>/dev/null)" = "$NOBODY" -a "$B0" -ge 128

# (setpriv itself in the background, no subshell: $SW is the swapper, killed below)
setpriv --reuid="$NOBODY" --regid="$(id -g nobody)" --clear-groups -- "$PY" "$TOOLS" swap "$J" \
	"$D/evil" 25 >"$TMP/swap.out" 2>"$TMP/swap.err" &
SW=$!
i=0 refused=0 acted=0 t0=$(date +%s)
while [ $i -lt 400 ] && [ $(($(date +%s) - t0)) -lt 20 ]; do
	i=$((i + 1))
	"$CLI" revert --journal "$J" all >"$TMP/r.out" 2>"$TMP/r.err"
	grep -q "owned by uid $NOBODY" "$TMP/r.err" && refused=$((refused + 1))
	grep -q 'event=revert' "$TMP/r.out" && acted=$((acted + 1))
	[ "$(backlog)" = "$B0" ] || break
done
kill "$SW" 2>/dev/null
wait "$SW" 2>/dev/null
b=$(backlog)
check revert_swap_no_window "after $i reverts: backlog $b (stays $B0), the other user's file \
refused $refused times, revert lines $acted (0); $(cat "$TMP/r.out" "$TMP/r.err" | head -c 400)" \
	"$b" = "$B0" -a "$refused" -ge 1 -a "$acted" = 0
kill "$S"; wait "$S" 2>/dev/null
exit 0
