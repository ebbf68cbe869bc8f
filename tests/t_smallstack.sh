#!/bin/sh
# Every hooked call from a thread whose whole stack is 16 KiB (glibc keeps the thread's
# descriptor and TLS there too), with every feature on (stats file, log file at debug,
# quick-ack, client tuning, every option), on IPv4 and IPv6: the calls succeed, and the
# library adds at most 6.5 KiB to the deepest path (the stack is painted; measured on an AMD
# EPYC with glibc 2.36: 5.8 KiB, 6.0 with the stats file: a line said from inside the
# tuning of a listener, under its own line's buffer).  Both runs bind their symbols at start
# (LD_BIND_NOW): glibc's lazy binder saves the CPU's whole vector state on the stack (1.5 KiB
# here, about twice that with AVX-512), which made the program's own deepest path, the
# baseline, depend on the machine (seen: 5.5 KiB added on one, 6.6 on this one, the same
# code).  Sanitizer builds need far more stack: skipped there.
. "$(dirname "$0")/lib.sh"
if [ -n "${ST_SANITIZER:-}" ]; then
	skip smallstack "a $ST_SANITIZER build needs more stack than 16 KiB"
	exit 0
fi
ALL="SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=77 SOCKTUNE_RCVBUF=64K SOCKTUNE_SNDBUF=64K
SOCKTUNE_QUICKACK=1 SOCKTUNE_PRIORITY=3 SOCKTUNE_KEEPALIVE=30:10:5 SOCKTUNE_CLIENT=1
SOCKTUNE_LOG=debug SOCKTUNE_CONGESTION=nosuchcc SOCKTUNE_USER_TIMEOUT=5000
SOCKTUNE_NOTSENT_LOWAT=16K SOCKTUNE_TOS=lowdelay SOCKTUNE_REUSEPORT=1 SOCKTUNE_DEFER_ACCEPT=1
SOCKTUNE_FASTOPEN=16 SOCKTUNE_BACKLOG_MIN=10"
for fam in 4 6; do
	plain=$(LD_BIND_NOW=1 "$BIN/smallstack" $fam)
	for stats in off on; do
		n=smallstack_v${fam}_stats_$stats
		extra=""
		[ $stats = on ] && extra="SOCKTUNE_STATS=$TMP/$n.stats"
		# shellcheck disable=SC2086
		out=$(env $ALL $extra SOCKTUNE_LOG_FILE="$TMP/$n.log" LD_BIND_NOW=1 LD_PRELOAD="$LIB" "$BIN/smallstack" $fam 2>&1)
		rc=$?
		used=$(field "$out" used)
		base=$(field "$plain" used)
		check $n "status $rc: $out (plain: $plain); log: $(grep -c . "$TMP/$n.log" 2>/dev/null) lines" \
			"$rc" = 0 -a "$(field "$out" ok)" = 1 -a -n "$used" -a "${used:-99999}" -le $((base + 6656)) \
			-a "$(grep -c 'event=listen ' "$TMP/$n.log" 2>/dev/null)" -ge 1
	done
done
