#!/bin/sh
# A listener closed by each call that closes one (closes.c), and what takes its number next,
# IPv4 and IPv6.  Each must leave the number to its next socket as close() does:
# - close_range(n, n, 0) of a listener, then a socket made by syscall() (as io_uring's
#   IORING_OP_SOCKET makes one: no hook sees it) takes n and listen()s: tuned at its listen()
#   (before: TCP_NODELAY 0, no line: the number stayed "ignored" for good);
# - a second listener dup2()'d onto the first one's number (a reload in one call): the
#   connections accepted there get the per-connection option (SO_PRIORITY, which accepted
#   sockets do not inherit; before: 0, the number stayed "ignored");
# - a fork() while another thread is inside close() of the listener (strace holds that close
#   on entry for 300 ms, the fork comes 100 ms in): the child's copy, which it accepts on,
#   gives its connections SO_PRIORITY (before: 0, the child kept the closing mark for good).
. "$(dirname "$0")/lib.sh"

POL="SOCKTUNE_NODELAY=1 SOCKTUNE_PRIORITY=3 SOCKTUNE_LOG=warn"
for fam in 4 6; do
	n=close_range_one_then_raw_socket_v$fam
	# shellcheck disable=SC2086
	env $POL LD_PRELOAD="$LIB" "$BIN/closes" range-one $fam >"$TMP/$n.out" 2>"$TMP/$n.err"
	line=$(cat "$TMP/$n.out")
	check $n "$line $(head -c 300 "$TMP/$n.err")" \
		"$(field "$line" same)" = 1 -a "$(field "$line" nodelay)" = 1

	n=dup2_onto_listener_v$fam
	# shellcheck disable=SC2086
	env $POL LD_PRELOAD="$LIB" "$BIN/closes" dup2 $fam >"$TMP/$n.out" 2>"$TMP/$n.err"
	line=$(cat "$TMP/$n.out")
	check $n "$line $(head -c 300 "$TMP/$n.err")" \
		"$(field "$line" priority)" = 3 -a "$(field "$line" nodelay)" = 1

	n=fork_while_closing_v$fam
	if ! command -v strace >/dev/null 2>&1; then
		skip $n "strace not installed (.ci/run installs it)"
		continue
	fi
	# (the policy for the traced program only, not for strace)
	# shellcheck disable=SC2046
	strace -f -qq -o /dev/null -e trace=close -e inject=close:delay_enter=300000 \
		$(for v in $POL; do printf -- '-E %s ' "$v"; done) -E LD_PRELOAD="$LIB" \
		"$BIN/closes" fork $fam >"$TMP/$n.out" 2>"$TMP/$n.err"
	line=$(cat "$TMP/$n.out")
	check $n "$line $(head -c 300 "$TMP/$n.err")" \
		"$(field "$line" open)" = 1 -a "$(field "$line" priority)" = 3

	# the same while another thread is inside listen() (the entry held while it is tuned)
	n=fork_while_listening_v$fam
	# shellcheck disable=SC2046
	strace -f -qq -o /dev/null -e trace=listen -e inject=listen:delay_enter=300000 \
		$(for v in $POL; do printf -- '-E %s ' "$v"; done) -E LD_PRELOAD="$LIB" \
		"$BIN/closes" fork-listen $fam >"$TMP/$n.out" 2>"$TMP/$n.err"
	line=$(cat "$TMP/$n.out")
	check $n "$line $(head -c 300 "$TMP/$n.err")" \
		"$(field "$line" open)" = 1 -a "$(field "$line" priority)" = 3
done

# without the library the options are the kernel's defaults (the checks above can fail)
"$BIN/closes" dup2 4 >"$TMP/plain.out" 2>&1
check closes_plain "without the library: $(cat "$TMP/plain.out")" \
	"$(field "$(cat "$TMP/plain.out")" priority)" = 0
