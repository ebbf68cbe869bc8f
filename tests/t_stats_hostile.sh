#!/bin/sh
# SOCKTUNE_STATS against a hostile world: a full filesystem, the file truncated under a
# running server, a path naming something that is not a stats file (a FIFO, a plain file,
# a symlink, a character device, /dev/null itself), a listener reloaded 300 times, a thread
# with a 16-24 KiB stack, and the exit summary after main() called pthread_exit().  Each
# case on IPv4 and IPv6; each asserts the server kept serving and what became of the file.
. "$(dirname "$0")/lib.sh"
PROBE=$BIN/statsprobe

# warns NAME: the number of level=warn lines in $TMP/NAME.err
warns() {
	count_lines "$TMP/$1.err" 'level=warn'
}

# wrapper scripts for a private mount namespace (unshare -m: no other process sees it)
cat >"$TMP/fullfs.sh" <<'EOF'
# fullfs.sh DIR CMD...: a full 8 KiB tmpfs at DIR, CMD run there, then DIR listed in DIR.ls
dir=$1
shift
mount -t tmpfs -o size=8k none "$dir" || exit 77
dd if=/dev/zero of="$dir/fill" bs=1k count=64 2>/dev/null
"$@"
rc=$?
ls -A "$dir" >"$dir.ls"
exit $rc
EOF
cat >"$TMP/devns.sh" <<'EOF'
# devns.sh OUT CMD...: a private /dev holding only null (c 1 3), CMD run, then what
# /dev/null is written to OUT
out=$1
shift
mount -t tmpfs none /dev && mknod -m 666 /dev/null c 1 3 || exit 77
"$@"
rc=$?
stat -c '%F %t,%T' /dev/null >"$out"
exit $rc
EOF
can_unshare() {
	[ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null
}

for fam in 4 6; do
	host=$(host_of $fam)

	# ---- a full filesystem: the server serves, one warning, no temporary file ----
	if can_unshare; then
		mkdir -p "$TMP/full$fam"
		SRV_WRAP="unshare -m sh $TMP/fullfs.sh $TMP/full$fam" \
			ts_start full$fam LD_PRELOAD=$LIB SOCKTUNE_STATS=$TMP/full$fam/stats -- -$fam -n 3 -t 10
		"$BIN/kaclient" burst -n 3 -T 5 "$host" "$SRV_PORT" >/dev/null 2>&1
		wait_server
		rc=$?
		check stats-hostile.full-disk-serves.ip$fam "status $rc, $(tail -n 2 "$TMP/full$fam.out")" \
			"$rc" = 0 -a -n "$(grep '^DONE conns=3' "$TMP/full$fam.out")"
		check stats-hostile.full-disk-one-warning.ip$fam "$(cat "$TMP/full$fam.err")" \
			"$(warns full$fam)" = 1 -a "$(count_lines "$TMP/full$fam.err" 'event=stats .*action=off')" = 1
		check stats-hostile.full-disk-no-tmp.ip$fam "left in the full fs: $(cat "$TMP/full$fam.ls" 2>/dev/null)" \
			"$(cat "$TMP/full$fam.ls" 2>/dev/null)" = fill
	else
		skip stats-hostile.full-disk.ip$fam "needs root and unshare -m"
	fi

	# ---- the file truncated under the running server (truncate -s 0, then : >) ----
	F=$TMP/trunc$fam
	ts_start trunc$fam LD_PRELOAD=$LIB SOCKTUNE_STATS=$F -- -$fam -n 9 -t 10
	"$BIN/kaclient" burst -n 3 -T 5 "$host" "$SRV_PORT" >/dev/null 2>&1
	truncate -s 0 "$F"
	"$BIN/kaclient" burst -n 3 -T 5 "$host" "$SRV_PORT" >/dev/null 2>&1
	: >"$F"
	sleep 0.15 # past the 100 ms sampling interval: the next accept writes the file again
	"$BIN/kaclient" burst -n 3 -T 5 "$host" "$SRV_PORT" >"$TMP/trunc$fam.client" 2>&1
	wait_server
	rc=$?
	check stats-hostile.truncated-serves.ip$fam "status $rc, $(tail -n 2 "$TMP/trunc$fam.out") $(cat "$TMP/trunc$fam.err")" \
		"$rc" = 0 -a -n "$(grep '^DONE conns=9' "$TMP/trunc$fam.out")"
	"$CLI" stats --json "$F" >"$TMP/trunc$fam.json" 2>&1
	check stats-hostile.truncated-rewritten.ip$fam "$(head -c 300 "$TMP/trunc$fam.json")" \
		"$(json_get "$TMP/trunc$fam.json" files.0.listeners.0.accepted)" = 9

	# ---- stdout on a full disk, or closed: said, status 1 (--watch printed into /dev/full
	# with no word for as long as it ran; closed, the table went to whatever took fd 1) ----
	"$CLI" stats --watch 1 --count 3 "$F" >/dev/full 2>"$TMP/devfull$fam.err"
	rc=$?
	check stats-hostile.stdout-full.ip$fam "status $rc (want 1): $(head -c 300 "$TMP/devfull$fam.err")" \
		"$rc" = 1 -a -n "$(grep 'stats: stdout: .*space' "$TMP/devfull$fam.err")"
	"$CLI" stats "$F" >&- 2>"$TMP/noout$fam.err"
	rc=$?
	check stats-hostile.stdout-closed.ip$fam "status $rc (want 1): $(head -c 300 "$TMP/noout$fam.err")" \
		"$rc" = 1 -a -n "$(grep 'stdout is closed' "$TMP/noout$fam.err")"

	# ---- paths that are not stats files: refused, left exactly as they were ----
	printf 'precious\n\001\002 not a stats file\n' >"$TMP/orig"
	cp "$TMP/orig" "$TMP/plain$fam"
	cp "$TMP/orig" "$TMP/target$fam"
	ln -s "target$fam" "$TMP/link$fam"
	mkfifo "$TMP/fifo$fam"
	for kind in plain link fifo; do
		n=$kind$fam
		ts_start $n LD_PRELOAD=$LIB SOCKTUNE_STATS=$TMP/$n -- -$fam -n 1 -t 10
		"$BIN/kaclient" burst -n 1 -T 5 "$host" "$SRV_PORT" >/dev/null 2>&1
		wait_server
		rc=$?
		case $kind in
		plain) same=$(cmp -s "$TMP/orig" "$TMP/$n" && [ -f "$TMP/$n" ] && echo yes) ;;
		link) same=$(cmp -s "$TMP/orig" "$TMP/target$fam" && [ -L "$TMP/$n" ] && echo yes) ;;
		fifo) same=$([ -p "$TMP/$n" ] && echo yes) ;;
		esac
		check stats-hostile.refused-$kind.ip$fam \
			"status $rc, unchanged: ${same:-no}, $(ls -l "$TMP/$n"), $(cat "$TMP/$n.err")" \
			"$rc" = 0 -a -n "$(grep '^DONE conns=1' "$TMP/$n.out")" -a "${same:-no}" = yes -a \
			"$(warns $n)" = 1 -a "$(count_lines "$TMP/$n.err" 'event=stats-refused')" = 1
	done
	if [ "$(id -u)" = 0 ] && mknod "$TMP/null$fam" c 1 3 2>/dev/null; then
		n=null$fam
		ts_start $n LD_PRELOAD=$LIB SOCKTUNE_STATS=$TMP/$n -- -$fam -n 1 -t 10
		"$BIN/kaclient" burst -n 1 -T 5 "$host" "$SRV_PORT" >/dev/null 2>&1
		wait_server
		rc=$?
		now=$(stat -c '%F %t,%T' "$TMP/$n")
		check stats-hostile.refused-chardev.ip$fam "status $rc, now $now, $(cat "$TMP/$n.err")" \
			"$rc" = 0 -a "$now" = "character special file 1,3" -a "$(warns $n)" = 1 -a \
			"$(count_lines "$TMP/$n.err" 'event=stats-refused')" = 1
	else
		skip stats-hostile.refused-chardev.ip$fam "needs root (mknod)"
	fi
	# /dev/null itself, in a private /dev so a regression cannot break the host's
	if can_unshare; then
		n=devnull$fam
		SRV_WRAP="unshare -m sh $TMP/devns.sh $TMP/$n.after" \
			ts_start $n LD_PRELOAD=$LIB SOCKTUNE_STATS=/dev/null -- -$fam -n 1 -t 10
		"$BIN/kaclient" burst -n 1 -T 5 "$host" "$SRV_PORT" >/dev/null 2>&1
		wait_server
		rc=$?
		check stats-hostile.refused-dev-null.ip$fam "status $rc, /dev/null now: $(cat "$TMP/$n.after" 2>/dev/null), $(cat "$TMP/$n.err")" \
			"$rc" = 0 -a "$(cat "$TMP/$n.after" 2>/dev/null)" = "character special file 1,3" -a \
			"$(warns $n)" = 1 -a "$(count_lines "$TMP/$n.err" 'event=stats-refused')" = 1
	else
		skip stats-hostile.refused-dev-null.ip$fam "needs root and unshare -m"
	fi

	# ---- 300 listener reloads: the last one counted, every earlier one retired ----
	F=$TMP/reload$fam
	mkfifo "$TMP/reload$fam.in"
	SOCKTUNE_STATS=$F LD_PRELOAD=$LIB "$PROBE" reload 300 $fam <"$TMP/reload$fam.in" \
		>"$TMP/reload$fam.out" 2>"$TMP/reload$fam.err" &
	rpid=$!
	exec 9>"$TMP/reload$fam.in" # the probe waits until this closes
	wait_file "$TMP/reload$fam.out" '^READY'
	"$CLI" stats --json "$F" >"$TMP/reload$fam.json" 2>&1
	fds=$(ls -l /proc/$rpid/fd 2>/dev/null | grep -c " -> $F\(\.tmp\..*\)\?$")
	exec 9>&-
	wait $rpid
	rc=$?
	j=$TMP/reload$fam.json
	port=$(port_of "$TMP/reload$fam.out")
	nl=$($PY -c 'import json,sys; print(len(json.load(sys.stdin)["files"][0]["listeners"]))' <"$j" 2>/dev/null)
	check stats-hostile.reload-last-counted.ip$fam "status $rc, $nl listeners, $(head -c 400 "$j")" \
		"$rc" = 0 -a "$nl" = 1 -a "$(json_get "$j" files.0.listeners.0.port)" = "$port" -a \
		"$(json_get "$j" files.0.listeners.0.accepted)" = 3 -a "$(json_get "$j" files.0.listeners.0.closed)" = False
	check stats-hostile.reload-retired.ip$fam "$(head -c 400 "$j")" \
		"$(json_get "$j" files.0.process.retired_listeners)" = 300 -a "$(json_get "$j" files.0.process.retired_accepted)" = 300
	check stats-hostile.live-read.ip$fam "source $(json_get "$j" files.0.source), $fds descriptors on the file" \
		"$(json_get "$j" files.0.source)" = live -a "$fds" = 0

	# ---- a thread with a small stack calls listen() and accept() ----
	if [ -n "${ST_SANITIZER:-}" ]; then
		skip stats-hostile.small-stack.ip$fam "sanitizers need more stack"
	else
		for k in 16 20 24; do
			rm -f "$TMP/stack$fam"
			SOCKTUNE_STATS=$TMP/stack$fam LD_PRELOAD=$LIB "$PROBE" stack $k $fam \
				>"$TMP/stack$fam.out" 2>"$TMP/stack$fam.err"
			rc=$?
			"$CLI" stats --json "$TMP/stack$fam" >"$TMP/stack$fam.json" 2>&1
			check stats-hostile.small-stack-${k}k.ip$fam "status $rc: $(cat "$TMP/stack$fam.err")" \
				"$rc" = 0 -a -n "$(grep '^OK' "$TMP/stack$fam.out")" -a \
				"$(json_get "$TMP/stack$fam.json" files.0.listeners.0.accepted)" = 3
		done
	fi

	# ---- the summary after main() left by pthread_exit(): ListenOverflows still read ----
	SOCKTUNE_STATS=$TMP/mainexit$fam LD_PRELOAD=$LIB "$PROBE" mainexit $fam \
		>"$TMP/mainexit$fam.out" 2>"$TMP/mainexit$fam.err"
	rc=$?
	line=$(log_line mainexit$fam summary)
	lo=$(field "$line" listen_overflows_delta)
	check stats-hostile.summary-after-main-exit.ip$fam "status $rc, summary: $line" \
		"$rc" = 0 -a "$(field "$line" accepted)" = 1 -a "${lo:--1}" -ge 0
done

# ---- 2 processes (fork after listen) x 4 accepting threads count into one shared slot:
# every connection counted, read live while they run and from the snapshot after (that
# server ends with _exit(), so the snapshot is the one the last sample wrote) ----
conns=${ST_STRESS_CONNS:-2000}
[ "$conns" -gt 2000 ] && conns=2000
for fam in 4 6; do
	F=$TMP/prefork$fam
	start_server prefork$fam SOCKTUNE_STATS="$F" LD_PRELOAD="$LIB" -- "$BIN/mtserver" -$fam -P 2 -t 4 -T 60 &&
		busywait 10000 file_has "$TMP/prefork$fam.out" '^READY' 2
	spid=$SRV_PID port=$SRV_PORT
	"$BIN/loadgen" -n "$conns" -c 16 -r 1 -w 10 -T 120 "$(host_of $fam)" "$port" >"$TMP/prefork$fam.load" 2>&1
	"$CLI" stats --json "$F" >"$TMP/prefork$fam.live" 2>&1
	# mtserver ends with _exit() (no destructor), like a killed server: the file holds the
	# last sample's copy.  One connection more than 100 ms later makes one (in its accept:
	# the echo of a byte says the accept, and with it the copy, is done).
	sleep 0.15
	$PY -c 'import socket,sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.sendall(b"x"); s.recv(1); s.close()' "$(host_of $fam)" "$port"
	kill -TERM $spid
	wait $spid
	rc=$?
	"$CLI" stats --json "$F" >"$TMP/prefork$fam.snap" 2>&1
	check stats-hostile.prefork-threads-live.ip$fam "status $rc, $(cat "$TMP/prefork$fam.load") $(head -c 300 "$TMP/prefork$fam.live")" \
		"$rc" = 0 -a "$(json_get "$TMP/prefork$fam.live" files.0.source)" = live -a \
		"$(json_get "$TMP/prefork$fam.live" files.0.listeners.0.accepted)" = "$conns"
	check stats-hostile.prefork-threads-snapshot.ip$fam "$(cat "$TMP/prefork$fam.snap" "$TMP/prefork$fam.out" "$TMP/prefork$fam.err")" \
		"$(json_get "$TMP/prefork$fam.snap" files.0.source)" = snapshot -a \
		"$(json_get "$TMP/prefork$fam.snap" files.0.listeners.0.accepted)" = $((conns + 1))
done
