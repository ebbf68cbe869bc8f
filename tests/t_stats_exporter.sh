#!/bin/sh
# stats --format prometheus --watch with a quoted FILE pattern: the pattern is matched again
# each round, so a server started after the exporter is in its next rounds; a server that
# exits is written once more, socktune_process_running 0, and then left out.  Every round
# of --output is kept (a reader copies each new file the exporter renames into place).
. "$(dirname "$0")/lib.sh"
mkdir "$TMP/w"

# server NAME: a listener under the library, its stats file $TMP/w/s.PID; it hangs after
# one accept (none comes) until killed.  Sets SPID.
server() {
	start_server "$1" SOCKTUNE_STATS="$TMP/w/s.%p" LD_PRELOAD="$LIB" -- \
		$PY "$ROOT/tests/py/holdserver.py" "$TMP/never" 1 hang &&
		busywait 5000 test -f "$TMP/w/s.$SRV_PID" || { fail stats-exporter.start "$1: $(cat "$TMP/$1.err")"; exit 0; }
	SPID=$SRV_PID
}

# has_series PID VALUE: the latest --output says socktune_process_running{pid=PID} VALUE
has_series() { grep -q "^socktune_process_running{pid=\"$1\",.*} $2\$" "$TMP/metrics" 2>/dev/null; }
no_series() { [ -f "$TMP/metrics" ] && ! grep -q "pid=\"$1\"" "$TMP/metrics"; }

server a
A=$SPID
"$CLI" stats --format prometheus --watch 1 --count 15 --output "$TMP/metrics" "$TMP/w/s.*" \
	2>"$TMP/exporter.err" &
EPID=$!
# every version of the file, in order, until the exporter ends (at most 30 s; its 15 rounds
# leave room for a slow start of server b, under load, before a goes)
$PY -c 'import os, sys, time
path, out, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen, rounds, deadline = None, [], time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        st = os.stat(path)
        if (st.st_ino, st.st_mtime_ns) != seen:
            seen = (st.st_ino, st.st_mtime_ns)
            rounds.append(open(path).read())
    except FileNotFoundError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    time.sleep(0.02)
open(out, "w").write("\n# ROUND\n".join(rounds))' "$TMP/metrics" "$TMP/rounds" $EPID &
RPID=$!

busywait 5000 has_series $A 1
server b
B=$SPID
busywait 5000 has_series $B 1
check stats-exporter.picks-up-new "server b (pid $B) started after the exporter: $(grep socktune_process_running "$TMP/metrics" 2>&1)" \
	-n "$(has_series $B 1 && echo yes)"
kill -9 $A
wait $A 2>/dev/null
said=$(busywait 5000 has_series $A 0 && echo yes)
busywait 5000 no_series $A
check stats-exporter.drops-exited "server a (pid $A) exited: said so: ${said:-no}; now: $(grep socktune_process_running "$TMP/metrics" 2>&1)" \
	"$said" = yes -a -n "$(no_series $A && echo yes)"
busywait 25000 gone $EPID
kill $EPID 2>/dev/null
wait $EPID
rc=$?
busywait 5000 gone $RPID
wait $RPID

# the rounds: a running 1 ... then exactly one round with running 0, then none of a; b in
# the rounds after it appeared, and never before it was started
res=$($PY -c 'import re, sys
rounds = open(sys.argv[1]).read().split("\n# ROUND\n")
a, b = sys.argv[2], sys.argv[3]
def state(text, pid):
    m = re.search(r"^socktune_process_running\{pid=\"%s\",[^}]*\} (\d)$" % pid, text, re.M)
    return m.group(1) if m else "-" if ("pid=\"%s\"" % pid) not in text else "?"
sa = "".join(state(r, a) for r in rounds)
sb = "".join(state(r, b) for r in rounds)
ok = re.fullmatch(r"1+0-+", sa) and re.fullmatch(r"-*1+", sb) and sb[0] == "-"
print("ok" if ok else "a %s b %s (%d rounds)" % (sa, sb, len(rounds)))' "$TMP/rounds" $A $B 2>&1)
check stats-exporter.rounds "status $rc, $res: $(cat "$TMP/exporter.err")" "$res" = ok -a "$rc" = 0
