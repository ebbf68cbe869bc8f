#!/bin/sh
# Descriptors and processes: dup2/dup3 onto tuned numbers, close_range, a signal
# handler that closes sockets, descriptors beyond the library's table, posix_spawn and vfork
# children, exec chains (shell script -> server), and no descriptor of the library surviving
# into exec'd children.  fdops runs each scenario with and without the library.
. "$(dirname "$0")/lib.sh"

POL="SOCKTUNE_NODELAY=1 SOCKTUNE_KEEPALIVE=1 SOCKTUNE_PRIORITY=3 SOCKTUNE_RCVBUF=256K
SOCKTUNE_QUICKACK=1 SOCKTUNE_LOG=debug"

# fdops MODE: $TMP/MODE.plain and $TMP/MODE.pre (+ $TMP/MODE.log); sets RC
fdops() {
	"$BIN/fdops" "$1" >"$TMP/$1.plain" 2>&1
	# shellcheck disable=SC2086
	env LD_PRELOAD="$LIB" $POL SOCKTUNE_LOG_FILE="$TMP/$1.log" "$BIN/fdops" "$1" \
		>"$TMP/$1.pre" 2>"$TMP/$1.err"
	RC=$?
}

# lines of MODE's output matching PATTERN, identical both ways
same_lines() {
	a=$(grep "$3" "$TMP/$2.plain")
	b=$(grep "$3" "$TMP/$2.pre")
	check "$1" "without: '$(echo $a)' with: '$(echo $b)'" -n "$a" -a "$a" = "$b"
}

fdops dup
check dup_exit "fdops dup exited $RC: $(cat "$TMP/dup.err")" "$RC" = 0
same_lines dup_onto_conn_fresh_tcp dup '^conn-now-fresh-tcp'
same_lines dup3_onto_conn_unix dup '^conn2-now-unix'
same_lines dup3_onto_listener_udp dup '^listener-now-udp'
same_lines dup_copy_reads dup '^read-copy'
check dup_copy_keeps_tuning "a dup of a tuned connection: $(grep conn3-copy "$TMP/dup.pre")" \
	"$(field "$(grep conn3-copy "$TMP/dup.pre")" nodelay)" = 1

fdops closerange
check closerange_exit "exited $RC: $(cat "$TMP/closerange.err")" "$RC" = 0
same_lines closerange_reused closerange 'reused='
same_lines closerange_untouched_after closerange '^closerange-s'
check closerange_cloexec_keeps "CLOSE_RANGE_CLOEXEC left: $(grep after-cloexec "$TMP/closerange.pre")" \
	"$(field "$(grep after-cloexec "$TMP/closerange.pre")" nodelay)" = 1

fdops signal
check signal_exit "exited $RC: $(cat "$TMP/signal.err")" "$RC" = 0
same_lines signal_reused signal 'reused='
same_lines signal_untouched_after signal '^signal-s'

fdops bigfd
if grep -q '^skip=' "$TMP/bigfd.pre"; then
	skip bigfd "cannot raise RLIMIT_NOFILE above the table (no CAP_SYS_RESOURCE here)"
else
	check bigfd_exit "exited $RC: $(cat "$TMP/bigfd.err")" "$RC" = 0
	same_lines bigfd_served bigfd 'accepted='
	same_lines bigfd_app_setsockopt bigfd 'app-nodelay='
	same_lines bigfd_closed bigfd 'listener-closed='
	n=$(count_lines "$TMP/bigfd.log" 'event=adopt')
	check bigfd_adopt_once "$n event=adopt lines for one listener beyond the table (one per accept?)" \
		"$n" -le 1
fi

fdops spawn
check spawn_exit "exited $RC: $(cat "$TMP/spawn.err")" "$RC" = 0
same_lines spawn_status spawn 'status='
# the children see only what the parent gave them (fd numbers), with or without the library
[ "${ST_SANITIZER:-}" = valgrind ] || {
a=$(grep '^child ' "$TMP/spawn.plain" | grep fds= | sed 's/.*fds=//; s/:[^,]*//g')
b=$(grep '^child ' "$TMP/spawn.pre" | grep fds= | sed 's/.*fds=//; s/:[^,]*//g')
check spawn_child_fds "child descriptors without: '$(echo $a)' with: '$(echo $b)'" -n "$b" -a "$a" = "$b"
}
n=$(grep -c 'child listener-nodelay=1' "$TMP/spawn.pre")
check spawn_children_tuned "$n of 3 exec'd children had their own listener tuned" "$n" = 3
pids=$(sed -n 's/^child pid=\([0-9]*\).*/\1/p' "$TMP/spawn.pre")
n=0
for p in $pids; do grep -q "pid=$p .*event=listen " "$TMP/spawn.log" && n=$((n + 1)); done
check spawn_children_logged "$n of 3 children logged their listen" "$n" = 3
check spawn_parent_conn_tuned "parent's connection: $(grep parent-conn "$TMP/spawn.pre")" \
	"$(field "$(grep parent-conn "$TMP/spawn.pre")" nodelay)" = 1
# a vfork child closing the parent's listener number before exec must not make the parent
# lose its listener record (the child shares the parent's memory until it execs)
n=$(count_lines "$TMP/spawn.log" 'event=adopt')
check vfork_close_keeps_parent_state "$n event=adopt lines: a vfork child's close() wiped the parent's listener state" \
	"$n" = 0

fdops execfds
if [ "${ST_SANITIZER:-}" = valgrind ]; then
	# valgrind's own descriptors (its log, its copy of the binary) are mixed in there
	skip library_fds "descriptor lists are valgrind's too under make valgrind"
else
check execfds_exit "exited $RC: $(cat "$TMP/execfds.err")" "$RC" = 0
# the library's descriptor: the one the run without the library does not have
plainfds=$(sed -n 's/^libfd fd=\([0-9]*\) .*/\1/p' "$TMP/execfds.plain")
flags=""
for l in $(sed -n 's/^libfd fd=\([0-9]*\) flags=\([0-7]*\).*/\1:\2/p' "$TMP/execfds.pre"); do
	case " $(echo $plainfds) " in *" ${l%%:*} "*) ;; *) flags=${l#*:} ;; esac
done
nlib=$(grep -c '^libfd' "$TMP/execfds.pre")
nplain=$(grep -c '^libfd' "$TMP/execfds.plain")
check logfile_one_fd "$nlib descriptors beyond the test's own, $nplain without the library" \
	"$nlib" = $((nplain + 1))
if [ -n "$flags" ]; then
	f=$((0$flags))
	check logfile_flags "log file flags 0$flags: want O_WRONLY|O_APPEND|O_CLOEXEC|O_NOFOLLOW|O_NONBLOCK" \
		$((f & 3)) = 1 -a $((f & 02000)) != 0 -a $((f & 02000000)) != 0 -a $((f & 0400000)) != 0 \
		-a $((f & 04000)) != 0
fi
a=$(sed -n 's/^exec .*fds=//p' "$TMP/execfds.plain" | sed 's/:[^,]*//g')
b=$(sed -n 's/^exec .*fds=//p' "$TMP/execfds.pre" | sed 's/:[^,]*//g')
check exec_no_library_fd "after exec, without: '$a' with: '$b'" -n "$b" -a "$a" = "$b"
fi

# exec chain: a shell script that execs a shell that execs the server, all under the preload
cat >"$TMP/chain.sh" <<EOS
#!/bin/sh
exec sh -c 'exec "\$0" "\$@"' "$BIN/tserver" "\$@"
EOS
if start_server chain LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=77 -- sh "$TMP/chain.sh" -n 1 -t 10; then
	"$BIN/kaclient" burst -n 1 -T 5 127.0.0.1 "$SRV_PORT" >/dev/null 2>&1
	wait_server
	line=$(grep '^CONN' "$TMP/chain.out")
	check exec_chain_tuned "server after sh -> sh -> exec: $line" \
		"$(field "$line" nodelay)" = 1 -a "$(field "$line" backlog)" = 77
	check exec_chain_one_line "stderr: $(cat "$TMP/chain.err")" \
		"$(grep -c 'event=listen ' "$TMP/chain.err")" = 1 -a "$(grep -vc 'event=listen ' "$TMP/chain.err")" = 0
else
	fail exec_chain_tuned "server did not start: $(cat "$TMP/chain.err")"
fi
