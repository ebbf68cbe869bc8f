#!/bin/sh
# Every subcommand takes an option's value as --opt=VALUE as it takes --opt VALUE (watch
# refused --seconds=5 while doctor took it; stats --watch=1, revert --journal=PATH were
# refused too).  Each read by what the value does: doctor's window, stats' rounds and its
# --output file, watch's end, sample interval and textfile rewrites, check's route, revert's
# journal, and the refusals that name the value given after '='.
. "$(dirname "$0")/lib.sh"
for v in $(env | sed -n 's/^\(SOCKTUNE_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

# between LO HI V: LO <= V <= HI (decimals)
between() {
	awk -v lo="$1" -v hi="$2" -v v="$3" 'BEGIN { exit !(v != "" && v + 0 >= lo && v + 0 <= hi) }'
}

# a listener to look at, under the preload so that it writes a stats file (tserver waits for
# one connection, 300 s at most: it outlives every step below, a sanitizer build's too, and
# is ended at the end)
if ! ts_start srv SOCKTUNE_STATS="$TMP/stats" LD_PRELOAD="$LIB" -- -4 -n 1 -t 300; then
	fail opt_equals.server "tserver did not start: $(cat "$TMP/srv.err")"
	exit 0
fi
port=$SRV_PORT srv=$SRV_PID
busywait 5000 test -s "$TMP/stats"

# ---- doctor --seconds: the window it watched (window_s; the default is 5) ----
for form in equals space; do
	set -- --seconds=0.3
	[ $form = space ] && set -- --seconds 0.3
	"$CLI" doctor "$@" --json ":$port" >"$TMP/doctor.json" 2>"$TMP/doctor.err"
	w=$(json_get "$TMP/doctor.json" window_s)
	check "opt_equals.doctor_seconds_$form" "doctor $*: window_s '$w' (want 0.3 to 2): $(head -c 300 "$TMP/doctor.err")" \
		-n "$w" -a "$(between 0.3 2 "$w" && echo in)" = in
done

# ---- stats --watch=1 --count=2: two rounds, one document a line ----
"$CLI" stats --json --watch=1 --count=2 "$TMP/stats" >"$TMP/rounds.json" 2>"$TMP/rounds.err"
rc=$?
n=$(grep -c . "$TMP/rounds.json")
p2=$(json_get "$TMP/rounds.json" files.0.listeners.0.port 2)
check opt_equals.stats_rounds "status $rc, $n lines (want 2), port of the second '$p2' (want $port): $(cat "$TMP/rounds.err")" \
	"$rc" = 0 -a "$n" = 2 -a "$p2" = "$port"

# ---- stats --format=prometheus --output=FILE: the file, with the listener's port ----
"$CLI" stats --format=prometheus --output="$TMP/out.prom" "$TMP/stats" >"$TMP/prom.out" 2>"$TMP/prom.err"
rc=$?
check opt_equals.stats_output "status $rc, $(grep -c "port=\"$port\"" "$TMP/out.prom" 2>/dev/null) series of port $port in the file, stdout $(wc -c <"$TMP/prom.out") bytes: $(cat "$TMP/prom.err")" \
	"$rc" = 0 -a "$(grep -c "port=\"$port\"" "$TMP/out.prom" 2>/dev/null)" -ge 1 -a ! -s "$TMP/prom.out"

# ---- watch --seconds=2 --interval=0.5 --every=0.2: it ends by itself (status 0: a value
# not taken would be status 2) and the textfile counts at most 6 listener samples (every
# 0.1 s, the default, would be some 20; a loaded machine's late start may leave one) ----
timeout 30 "$CLI" watch --seconds=2 --interval=0.5 --every=0.2 --textfile="$TMP/watch.prom" ":$port" \
	>/dev/null 2>"$TMP/watch.err"
rc=$?
samples=$(sed -n 's/^socktune_watch_samples_total \([0-9]*\)$/\1/p' "$TMP/watch.prom" 2>/dev/null)
check opt_equals.watch_seconds "status $rc (want 0: --seconds=2 ended it): $(head -c 300 "$TMP/watch.err")" "$rc" = 0
check opt_equals.watch_samples "socktune_watch_samples_total '$samples' (want 1 to 6)" \
	-n "$samples" -a "$(between 1 6 "$samples" && echo in)" = in

# ---- check --route=ADDR: that address's route looked up ----
"$CLI" check --json --route=127.0.0.1 >"$TMP/check.json" 2>"$TMP/check.err"
a=$(json_get "$TMP/check.json" routes.0.addr)
check opt_equals.check_route "routes.0.addr '$a' (want 127.0.0.1): $(head -c 300 "$TMP/check.err")" "$a" = 127.0.0.1

# ---- revert --journal=PATH: that journal is the one opened (none there: status 3) ----
"$CLI" revert --journal="$TMP/none.jsonl" >/dev/null 2>"$TMP/revert.err"
rc=$?
check opt_equals.revert_journal "status $rc (want 3): $(cat "$TMP/revert.err")" \
	"$rc" = 3 -a -n "$(grep -F "journal $TMP/none.jsonl: No such file" "$TMP/revert.err")"

# ---- refusals: status 2, the option and the value given after '=' named ----
# refused NAME WANT ARGS...: status 2 and WANT (a fixed string) on stderr
refused() {
	_n=$1 _w=$2
	shift 2
	"$CLI" "$@" >/dev/null 2>"$TMP/$_n.err"
	_rc=$?
	check "opt_equals.refused_$_n" "socktune $*: status $_rc, stderr: $(cat "$TMP/$_n.err") (want: $_w)" \
		"$_rc" = 2 -a -n "$(grep -F -- "$_w" "$TMP/$_n.err")"
}
refused stats_watch "stats: --watch 0: out of range" stats --watch=0 "$TMP/stats"
refused stats_format "stats: --format x: not a format" stats --format=x "$TMP/stats"
refused watch_every "watch --every 0: a number of seconds" watch --every=0 --textfile="$TMP/x.prom"
refused watch_listen "watch --listen 1.2.3: not an address and port" watch --listen=1.2.3
refused watch_apply_netns "watch --apply-netns: widens what --apply may change" \
	watch --apply-netns=all --textfile="$TMP/x.prom"
refused doctor_seconds "doctor --seconds abc: a number of seconds" doctor --seconds=abc
refused revert_empty "revert --journal: missing PATH" revert --journal=
kill "$srv" 2>/dev/null
wait "$srv" 2>/dev/null || :
