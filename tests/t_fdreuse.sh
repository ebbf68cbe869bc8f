#!/bin/sh
# Descriptor numbers reused where no hook sees it, and children that share or copy the
# library's memory (fdreuse.c), on IPv4 and IPv6:
# - a listener closed while another thread is blocked in accept() on it, its number taken by
#   a new socket(): the connection that accept() returns belongs to the old listener, and
#   the new one is tuned at its own listen();
# - an accepted connection closed inside libc (fclose(fdopen())) or in a _Fork() child (no
#   atfork handler), its number taken by a UNIX socket (socketpair(), or syscall()): the
#   app's SO_RCVBUF there is the app's, as without the library, and no log line claims it;
# - a vfork() child closing a quick-ack connection leaves the parent's mark: every receive
#   of the parent re-arms quick-ack (strace counts the calls);
# - 1,100 listeners closed by syscall(), their numbers taken by UDP sockets or files: their
#   records are reclaimed, so the next listener gets its per-connection option (SO_PRIORITY,
#   which accepted sockets do not inherit); 10,000 listen/close reloads: the same;
# - a UNIX socket closed inside libc, its number taken by dup() of a TCP socket that then
#   listens: tuned at its listen();
# - a server with UNIX sockets only: no getsockopt at its listen(), none per accept or
#   read, no descriptor table (no 512 KiB map);
#   but a process that made no TCP socket and receives a listener over a UNIX socket (a
#   seamless reload) still adopts it at its first accept;
# - a child that merely inherits its parent's listener (fork and exec of true(1)): with
#   precedence=app the parent app's SO_RCVBUF stays; with SOCKTUNE_STATS the child does not
#   take the stats file over (the parent's snapshots go on, its listener is counted).
. "$(dirname "$0")/lib.sh"
POL="SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=77 SOCKTUNE_RCVBUF=64K SOCKTUNE_QUICKACK=1 SOCKTUNE_PRIORITY=3 SOCKTUNE_LOG=debug"

# run NAME MODE FAM [N]: plain into $TMP/NAME.plain, preloaded into $TMP/NAME.pre (+ .err)
run() {
	_n=$1
	shift
	"$BIN/fdreuse" "$@" >"$TMP/$_n.plain" 2>&1
	# shellcheck disable=SC2086
	env $POL LD_PRELOAD="$LIB" "$BIN/fdreuse" "$@" >"$TMP/$_n.pre" 2>"$TMP/$_n.err"
}

for fam in 4 6; do
	n=reuse_accept_race_v$fam
	run $n accept-race $fam
	line=$(cat "$TMP/$n.pre")
	check $n "new listener on the number: $line ($(grep -v event=listen "$TMP/$n.err" | head -n 3))" \
		"$(field "$line" same)" = 1 -a "$(field "$line" accepted)" = 1 \
		-a "$(field "$line" nodelay)" = 1 -a "$(field "$line" backlog)" = 77

	for mode in fclose-pair fclose-raw fork-raw; do
		n=reuse_${mode}_v$fam
		run $n $mode $fam
		check $n "plain: $(cat "$TMP/$n.plain"); preloaded: $(cat "$TMP/$n.pre")" \
			"$(cat "$TMP/$n.pre")" = "$(cat "$TMP/$n.plain")" -a \
			"$(field "$(cat "$TMP/$n.plain")" same)" = 1
		check ${n}_no_override_claim "$(grep 'app-override' "$TMP/$n.err")" \
			-z "$(grep 'app-override' "$TMP/$n.err")"
	done

	# a UNIX socket's number closed unseen and taken by dup() of a TCP socket: tuned at its
	# listen() (a stale "not governed" mark must never leave a listener untuned)
	n=reuse_unix_dup_v$fam
	run $n unix-dup $fam
	line=$(cat "$TMP/$n.pre")
	check $n "the dup()ed listener: $line (plain: $(cat "$TMP/$n.plain"))" \
		"$(field "$line" same)" = 1 -a "$(field "$line" nodelay)" = 1 -a "$(field "$line" backlog)" = 77

	n=reuse_scm_listener_v$fam
	run $n scm-listener $fam
	line=$(cat "$TMP/$n.pre")
	check $n "received listener: $line; plain: $(cat "$TMP/$n.plain"); $(grep -c event=adopt "$TMP/$n.err") adopt lines" \
		"$(field "$line" backlog)" = 77 -a "$(field "$line" nodelay)" = 1 \
		-a "$(field "$(cat "$TMP/$n.plain")" backlog)" = 5

	n=reuse_inherit_child_precedence_app_v$fam
	env SOCKTUNE_RCVBUF=1M SOCKTUNE_PRECEDENCE=app LD_PRELOAD="$LIB" "$BIN/fdreuse" inherit-child $fam \
		>"$TMP/$n.pre" 2>"$TMP/$n.err"
	line=$(cat "$TMP/$n.pre")
	check $n "$line; $(grep -v 'rcvbuf=app' "$TMP/$n.err" | head -n 2)" \
		"$(field "$line" rcvbuf.before)" = 131072 -a "$(field "$line" rcvbuf.after)" = 131072
	n=reuse_inherit_child_stats_v$fam
	env SOCKTUNE_NODELAY=1 SOCKTUNE_STATS="$TMP/$n.stats" LD_PRELOAD="$LIB" "$BIN/fdreuse" inherit-child $fam \
		>"$TMP/$n.pre" 2>"$TMP/$n.err"
	"$B/socktune" stats --json "$TMP/$n.stats" >"$TMP/$n.json" 2>&1
	check $n "$(cat "$TMP/$n.pre"); $(grep -E 'stats|adopt' "$TMP/$n.err" | head -n 3); $(head -c 300 "$TMP/$n.json")" \
		-z "$(grep -E 'snapshots-off|replaced' "$TMP/$n.err")" -a -n "$(grep '"accepted": *1[,}]' "$TMP/$n.json")"

	for mode in reload-udp reload-file; do
		n=reuse_${mode}_v$fam
		run $n $mode $fam 1100
		check $n "after 1,100 listeners closed behind the hooks' back: $(cat "$TMP/$n.pre") $(grep -m 1 'table-full' "$TMP/$n.err")" \
			"$(field "$(cat "$TMP/$n.pre")" priority)" = 3 -a -z "$(grep 'table-full' "$TMP/$n.err")"
	done
done

n=reuse_reload_10000
env SOCKTUNE_PRIORITY=3 SOCKTUNE_LOG=warn LD_PRELOAD="$LIB" "$BIN/fdreuse" reload 4 10000 >"$TMP/$n.pre" 2>"$TMP/$n.err"
check $n "after 10,000 reloads: $(cat "$TMP/$n.pre") $(head -n 2 "$TMP/$n.err")" \
	"$(field "$(cat "$TMP/$n.pre")" priority)" = 3 -a ! -s "$TMP/$n.err"

if command -v strace >/dev/null 2>&1; then
	for fam in 4 6; do
		n=reuse_vfork_keeps_quickack_v$fam
		env $POL LD_PRELOAD="$LIB" strace -f -qq -e trace=setsockopt -o "$TMP/$n.st" \
			"$BIN/fdreuse" vfork-close $fam >"$TMP/$n.pre" 2>"$TMP/$n.err"
		q=$(grep -c TCP_QUICKACK "$TMP/$n.st")
		check $n "TCP_QUICKACK calls: $q, want 4 (the accept and three receives after a vfork child closed its copy); $(cat "$TMP/$n.pre")" \
			"$q" -eq 4 -a "$(cat "$TMP/$n.pre")" = "READS 3"
	done
	n=reuse_unix_only_costs_nothing
	env $POL LD_PRELOAD="$LIB" strace -f -qq -e trace=getsockopt,setsockopt,mmap -o "$TMP/$n.st" \
		"$BIN/fdreuse" unix-only 4 >"$TMP/$n.pre" 2>"$TMP/$n.err"
	# the table is one anonymous map of 8 bytes per descriptor, 65,536 at least
	big=$(grep MAP_ANONYMOUS "$TMP/$n.st" | grep -cE 'mmap\(NULL, (52[4-9][0-9]{3}|5[3-9][0-9]{4}|[6-9][0-9]{5}|[0-9]{7,}),')
	[ -n "${ST_SANITIZER:-}" ] && big=0 # a sanitizer runtime maps big regions of its own
	# the library saw the UNIX socket made: its listen(), accept() and read() ask the kernel
	# nothing (t_unix_only compares every call with a run without the library)
	proto=$(grep -c 'getsockopt(3, SOL_SOCKET, SO_PROTOCOL' "$TMP/$n.st")
	check $n "$(cat "$TMP/$n.pre"): $(grep -c sockopt "$TMP/$n.st") sockopt calls ($proto SO_PROTOCOL of the listener), maps of 512 KiB or more: $big" \
		"$(cat "$TMP/$n.pre")" = "UNIX ok" -a "$(grep -c sockopt "$TMP/$n.st")" -eq 0 -a "$big" -eq 0
else
	skip reuse_strace "strace not installed"
fi
