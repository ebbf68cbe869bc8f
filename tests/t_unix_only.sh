#!/bin/sh
# A server of UNIX sockets only (socket, bind, listen, socketpair, connect, accept, read:
# unixsrv) makes, under the library with a policy, exactly the system calls it makes without
# it, counted with strace from its first call of its own (unlink) to its exit: the library
# saw each of those sockets made, so it asks the kernel nothing about them (no SO_PROTOCOL
# at listen(), none at accept()) and maps no descriptor table.
# A TCP socket no hook saw made (a raw syscall, as io_uring makes one) is still looked at and
# tuned at its listen(), even under the number a UNIX listener had before it was closed.
. "$(dirname "$0")/lib.sh"

if ! command -v strace >/dev/null 2>&1; then
	skip unix_only "strace not installed (.ci/run installs it)"
	exit 0
fi

POL="SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=77 SOCKTUNE_RCVBUF=64K SOCKTUNE_REUSEPORT=1 SOCKTUNE_QUICKACK=1 SOCKTUNE_LOG=debug"

# traced NAME [VAR=value...]: unixsrv under strace into $TMP/NAME.st, its output NAME.out;
# NAME.calls: the names of the calls from its first own one (the unlink of its path) on
traced() {
	_n=$1
	shift
	env "$@" strace -f -qq -o "$TMP/$_n.st" "$BIN/unixsrv" "$TMP/$_n.sock" 3 \
		>"$TMP/$_n.out" 2>"$TMP/$_n.err"
	sed -n '/^[0-9]*  *unlink(/,$p' "$TMP/$_n.st" | sed -E 's/^[0-9]+ +//; s/\(.*//' |
		if [ "${ST_SANITIZER:-}" = valgrind ]; then
			# (memcheck's own calls, which translating more code adds: the socket calls only)
			grep -xE 'socket|socketpair|bind|listen|accept4?|connect|[gs]etsockopt|getsockname'
		else
			cat
		fi >"$TMP/$_n.calls"
}

traced plain
# shellcheck disable=SC2086
traced policy LD_PRELOAD="$LIB" $POL
traced empty LD_PRELOAD="$LIB"
plain=$(wc -l <"$TMP/plain.calls")
check unix_only_runs "plain: $(cat "$TMP/plain.out"); $(head -c 300 "$TMP/plain.err")" \
	"$(cat "$TMP/plain.out")" = "UNIX ok 3" -a "$plain" -ge 13
for n in policy empty; do
	extra=$(diff "$TMP/plain.calls" "$TMP/$n.calls" | grep '^[<>]' | tr '\n' ' ')
	check unix_only_same_calls_$n "$(cat "$TMP/$n.out"): $(wc -l <"$TMP/$n.calls") calls against $plain without the library; differ: $extra" \
		"$(cat "$TMP/$n.out")" = "UNIX ok 3" -a -z "$extra"
	# the whole run, the library's start included: no getsockopt or setsockopt at all
	so=$(grep -c 'sockopt(' "$TMP/$n.st")
	check unix_only_no_sockopt_$n "$so sockopt calls: $(grep 'sockopt(' "$TMP/$n.st" | head -n 3 | tr '\n' ';')" "$so" -eq 0
done
# the table is one anonymous map of 8 bytes per descriptor, 65,536 at least
big=$(grep MAP_ANONYMOUS "$TMP/policy.st" | grep -cE 'mmap\(NULL, (52[4-9][0-9]{3}|5[3-9][0-9]{4}|[6-9][0-9]{5}|[0-9]{7,}),')
[ -n "${ST_SANITIZER:-}" ] && big=0 # a sanitizer runtime maps big regions of its own
check unix_only_no_table "maps of 512 KiB or more: $big" "$big" -eq 0
check unix_only_silent "the log said: $(head -n 3 "$TMP/policy.err")" ! -s "$TMP/policy.err"

# the number of the UNIX listener (closed through close()) taken by a TCP socket made by a
# raw syscall: looked at and tuned at its listen()
n=unix_then_raw_tcp_tuned
# shellcheck disable=SC2086
env LD_PRELOAD="$LIB" $POL "$BIN/unixsrv" "$TMP/raw.sock" 2 raw >"$TMP/$n.out" 2>"$TMP/$n.err"
line=$(grep '^TCP' "$TMP/$n.out")
check $n "$line (want fd=3 nodelay=1 backlog=77); $(head -n 2 "$TMP/$n.err")" \
	"$(field "$line" fd)" = 3 -a "$(field "$line" nodelay)" = 1 -a "$(field "$line" backlog)" = 77
