#!/bin/sh
# Result and errno pass-through: errprobe makes a fixed list of socket calls (most of them
# failing: listen on UDP, on a pipe, on a connected socket; accept on a non-socket...) and
# prints each result and errno; under the library, with a policy that governs every hooked
# call, the output must be byte for byte the same.
. "$(dirname "$0")/lib.sh"

"$BIN/errprobe" >"$TMP/plain" 2>"$TMP/plain.err" || fail errprobe_plain "exited $?: $(cat "$TMP/plain.err")"
check errprobe_plain_runs "errprobe printed $(wc -l <"$TMP/plain") lines" "$(wc -l <"$TMP/plain")" -ge 40

i=0
for policy in "SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=100 SOCKTUNE_QUICKACK=1 SOCKTUNE_RCVBUF=64K" \
	"SOCKTUNE_BACKLOG_MIN=64 SOCKTUNE_SNDBUF=1G SOCKTUNE_LOG=debug SOCKTUNE_RCVBUF_FORCE=1" \
	"SOCKTUNE_PORTS=1 SOCKTUNE_NODELAY=1" "SOCKTUNE_RCVBUF=bad SOCKTUNE_FOO=1" "SOCKTUNE_DISABLE=1"; do
	i=$((i + 1))
	# shellcheck disable=SC2086
	env LD_PRELOAD="$LIB" $policy "$BIN/errprobe" >"$TMP/lib$i" 2>"$TMP/lib$i.err"
	d=$(diff "$TMP/plain" "$TMP/lib$i" | grep '^[<>]' | tr '\n' ';')
	check errno_passthrough_$i "with $policy: $d" -z "$d"
done
