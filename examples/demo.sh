#!/bin/sh
# make demo: socktune's main job, before and after, on an unmodified server.
#
# The server is python3's own `-m http.server -p HTTP/1.1`, serving a 2 KB file on
# 127.0.0.1.  Two things go wrong with it out of the box:
#   keep-alive: each response leaves as headers + body in two writes; Nagle holds the body
#     until the client ACKs the headers, and the client delays that ACK ~40 ms;
#   burst:      it listens with a backlog of 5; 300 clients connecting at once overflow the
#     accept queue, the kernel drops their SYNs and they retry after 1 s.
# socktune fixes both from the environment, without touching the server:
#   SOCKTUNE_NODELAY=1  SOCKTUNE_BACKLOG=4096  LD_PRELOAD=build/libsocktune.so
# and `socktune doctor` watches each run from outside and says what it found.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
LIB=$B/libsocktune.so
CLI=$B/socktune
KC=$B/tests/bin/kaclient
PY=/usr/bin/python3 # Debian's, dynamically linked (a pyenv shim would not be preloaded)
REQS=50
CONNS=300

# What it needs besides the build, checked first and said once: Debian's python3 (the server,
# and the free port) and ss of iproute2 (whether the server listens, and its backlog).
need=""
[ -x "$PY" ] || need="$need, $PY (Debian package python3)"
command -v ss >/dev/null 2>&1 || need="$need, ss (Debian package iproute2)"
for t in awk sed tr head mktemp; do
	command -v "$t" >/dev/null 2>&1 || need="$need, $t"
done
if [ -n "$need" ]; then
	echo "demo: missing${need#,}; on Debian: apt-get install python3 iproute2" >&2
	exit 1
fi
for f in "$LIB" "$CLI" "$KC"; do
	[ -f "$f" ] || { echo "demo: missing $f (run make demo)" >&2; exit 1; }
done

TMP=$(mktemp -d /tmp/socktune-demo.XXXXXX)
SERVER=""
cleanup() {
	[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir "$TMP/www"
head -c 2048 /dev/zero | tr '\0' 'a' >"$TMP/www/page.txt"

port() {
	"$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# serve [VAR=value...]: start the unmodified server, wait until it listens (at most 5 s)
serve() {
	PORT=$(port)
	env "$@" "$PY" -m http.server -p HTTP/1.1 -b 127.0.0.1 -d "$TMP/www" "$PORT" \
		>/dev/null 2>"$TMP/server.err" &
	SERVER=$!
	i=0
	while [ $i -lt 100 ]; do
		ss -Hltn "sport = :$PORT" | grep -q . && return 0
		if ! kill -0 "$SERVER" 2>/dev/null; then
			wait "$SERVER"
			echo "demo: the server exited (status $?) before it listened: $(cat "$TMP/server.err")" >&2
			SERVER=""
			exit 1
		fi
		sleep 0.05
		i=$((i + 1))
	done
	echo "demo: the server did not listen on 127.0.0.1:$PORT within 5 s${TMP:+; its stderr: }$(cat "$TMP/server.err")" >&2
	exit 1
}

stop() {
	kill "$SERVER" 2>/dev/null
	wait "$SERVER" 2>/dev/null
	SERVER=""
}

val() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
ms() { awk -v us="$1" 'BEGIN { printf "%.2f ms", us / 1000 }'; }

# measure LABEL [VAR=value...]: one server, the keep-alive run and the burst against it
measure() {
	label=$1
	shift
	serve "$@"
	backlog=$(ss -Hltn "sport = :$PORT" | awk '{ print $3 }')
	# doctor watches both runs (4 s: the untuned ones take about 3)
	"$CLI" doctor --seconds 4 --json ":$PORT" >"$TMP/doctor-$label.json" 2>"$TMP/doctor.err" &
	doc=$!
	# (the runs start once doctor says its window has begun: at most 10 s)
	i=0
	while [ $i -lt 100 ] && ! grep -q 'doctor: watching' "$TMP/doctor.err" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	ka=$("$KC" http -n $REQS -T 15 -u /page.txt 127.0.0.1 "$PORT")
	burst=$("$KC" burst -n $CONNS -T 10 127.0.0.1 "$PORT")
	wait "$doc"
	found=$("$PY" -c 'import json, sys
print(", ".join(f["kind"] for f in json.load(open(sys.argv[1]))["findings"]) or "none")' \
		"$TMP/doctor-$label.json" 2>/dev/null || echo "(doctor: $(cat "$TMP/doctor.err"))")
	stop
	eval "${label}_backlog=\$backlog ${label}_ka=\$ka ${label}_burst=\$burst ${label}_found=\$found"
}

echo "socktune demo: python3 -m http.server -p HTTP/1.1 (unmodified), 127.0.0.1"
echo "  measuring untuned ..."
measure before
echo "  measuring with SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=4096 ..."
measure after LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=4096
echo
echo "  socktune said:"
grep '^socktune' "$TMP/server.err" | sed 's/^/    /'
echo
# shellcheck disable=SC2154 # set by measure through eval
{
	printf '  %-44s %16s %16s\n' "" "before" "after"
	printf '  %-44s %16s %16s\n' "listen backlog (ss -ltn Send-Q)" "$before_backlog" "$after_backlog"
	printf '  %-44s %16s %16s\n' "keep-alive: $REQS GETs, p50 latency" \
		"$(ms "$(val "$before_ka" p50_us)")" "$(ms "$(val "$after_ka" p50_us)")"
	printf '  %-44s %16s %16s\n' "keep-alive: requests over 20 ms" \
		"$(val "$before_ka" over) of $REQS" "$(val "$after_ka" over) of $REQS"
	printf '  %-44s %16s %16s\n' "burst: $CONNS concurrent connects, p50" \
		"$(ms "$(val "$before_burst" p50_us)")" "$(ms "$(val "$after_burst" p50_us)")"
	printf '  %-44s %16s %16s\n' "burst: connects over 500 ms (or failed)" \
		"$(val "$before_burst" over) of $CONNS" "$(val "$after_burst" over) of $CONNS"
}
echo
echo "  socktune doctor :PORT, watching each run from outside:"
echo "    before: $before_found"
echo "    after:  $after_found"
echo
echo "  raw: before $before_ka"
echo "       before $before_burst"
echo "       after  $after_ka"
echo "       after  $after_burst"
