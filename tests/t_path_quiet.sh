#!/bin/sh
# Where the path findings must stay silent: a healthy 80 ms path (pathemu, no loss) whose
# server answers each new connection with 100 bytes, and loopback (a namespace of the
# test's own) whose server writes the 46,000-byte preamble of slow start's case (loopback's
# MSS is ~65 KB: one flight, and its round trip is microseconds).  doctor and watch follow
# the connections' ends there (doctor's connections_closed counts them: the rules had their
# numbers) and name none of slow-start-limited, loss-limited, receive-buffer-limited.
. "$(dirname "$0")/lib.sh"

path_needs path_quiet
PF=$ROOT/tests/py/pathfind.py
path_up path_quiet pq --delay 40ms --seconds 60
path_loss_based "$NB" >/dev/null
if ! setup_ns LO; then
	fail path_quiet.setup "cannot make a network namespace"
	exit 0
fi
SRV_WRAP="nsenter --net=/run/netns/$NB"
start_server far -- $PY "$PF" serve 5001 quiet && FAR=$SRV_PID
SRV_WRAP="nsenter --net=/run/netns/$LO"
start_server lo -- $PY "$PF" serve 5002 pre 46000 && LOOP=$SRV_PID
SRV_WRAP=""
if [ -z "${FAR:-}" ] || [ -z "${LOOP:-}" ]; then
	fail path_quiet.setup "no servers: $(cat "$TMP/far.err" "$TMP/lo.err")"
	exit 0
fi
"$CLI" watch --listen "127.0.0.1:$(free_port)" --interval 0.1 --window 1 "$FAR" "$LOOP" \
	>/dev/null 2>"$TMP/watch.err" &
"$CLI" doctor --json --seconds 3 "$FAR" "$LOOP" >"$TMP/doc.json" 2>"$TMP/doc.err" &
D=$!
wait_file "$TMP/doc.err" '^socktune: doctor: watching ' 10
nsenter --net="/run/netns/$NA" $PY "$PF" short 198.18.1.1 5001 6 >"$TMP/far.cli" &
nsenter --net="/run/netns/$LO" $PY "$PF" token 127.0.0.1 5002 20 0.02 >"$TMP/lo.cli"
wait "$D"
sleep 1.2 # (watch's next window judged what it saw)
# closed PORT, far PORT: doctor's counts for the listener on PORT
closed() {
	$PY -c 'import json, sys
for l in json.load(open(sys.argv[1]))["listeners"]:
    if l["port"] == int(sys.argv[2]): print(l[sys.argv[3]])' "$TMP/doc.json" "$1" "${2:-connections_closed}" 2>/dev/null
}
echo "far: $(cat "$TMP/far.cli"), $(closed 5001) closed ($(closed 5001 far_connections) far); loopback: $(cat "$TMP/lo.cli"), $(closed 5002) closed ($(closed 5002 near_connections) near); doctor: $(kinds "$TMP/doc.json" | tr '\n' ' ')"
check path_quiet.followed "connections closed: healthy path $(closed 5001) ($(closed 5001 far_connections) far; want 6 and 6), loopback $(closed 5002) ($(closed 5002 near_connections) near; want 20 and 20)" \
	"$(closed 5001)" = 6 -a "$(closed 5001 far_connections)" = 6 -a "$(closed 5002)" = 20 -a \
	"$(closed 5002 near_connections)" = 20
check path_quiet.doctor "doctor's findings: $(kinds "$TMP/doc.json" | tr '\n' ' ')" \
	-z "$(kinds "$TMP/doc.json" | grep -x 'slow-start-limited\|loss-limited\|receive-buffer-limited')"
check path_quiet.watch "watch's lines: $(grep 'event=finding' "$TMP/watch.err")" \
	-z "$(grep 'event=finding .*kind=\(slow-start-limited\|loss-limited\|receive-buffer-limited\)' "$TMP/watch.err")"
