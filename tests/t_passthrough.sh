#!/bin/sh
# Pass-through: with every SOCKTUNE_* option set, each hooked call made with bad
# arguments (EBADF, ENOTSOCK, EINVAL, EOPNOTSUPP, EAGAIN, EFAULT, refused option values)
# returns exactly the value and errno it returns without the library, and never crashes
# where the kernel would report EFAULT; AF_UNIX, UDP, raw and SEQPACKET sockets keep every
# option untouched (getsockopt after each step, with and without the library).
# One PASS/FAIL line per call, named after it.
. "$(dirname "$0")/lib.sh"

cc=$(cut -d' ' -f1 /proc/sys/net/ipv4/tcp_allowed_congestion_control 2>/dev/null)
FULL="SOCKTUNE_RCVBUF=256K SOCKTUNE_RCVBUF_FORCE=1 SOCKTUNE_SNDBUF=128K SOCKTUNE_BACKLOG=64
SOCKTUNE_BACKLOG_MIN=8 SOCKTUNE_BACKLOG_MAX=1024 SOCKTUNE_NODELAY=1 SOCKTUNE_QUICKACK=1
SOCKTUNE_PORTS=1-65535 SOCKTUNE_LOG=debug SOCKTUNE_LOG_FILE=$TMP/full.log
SOCKTUNE_KEEPALIVE=30:10:5 SOCKTUNE_USER_TIMEOUT=5000 SOCKTUNE_CONGESTION=${cc:-reno}
SOCKTUNE_NOTSENT_LOWAT=16K SOCKTUNE_DEFER_ACCEPT=1 SOCKTUNE_FASTOPEN=16 SOCKTUNE_REUSEPORT=1
SOCKTUNE_TOS=lowdelay SOCKTUNE_PRIORITY=3 SOCKTUNE_MARK=7 SOCKTUNE_PRECEDENCE=policy
SOCKTUNE_DRY_RUN=0 SOCKTUNE_CLIENT=1 SOCKTUNE_CLIENT_PORTS=1-65535 SOCKTUNE_DISABLE=0
SOCKTUNE_DELACK_MAX=10ms SOCKTUNE_RTO_MIN=10ms SOCKTUNE_RTO_MAX=10s SOCKTUNE_MAXSEG=1400
SOCKTUNE_WINDOW_CLAMP=1M
SOCKTUNE_SYNCNT=3 SOCKTUNE_PACING_RATE=1G SOCKTUNE_FREEBIND=1 SOCKTUNE_TRANSPARENT=1
SOCKTUNE_BINDTODEVICE=lo SOCKTUNE_TTL=64 SOCKTUNE_STATS=$TMP/stats.%p SOCKTUNE_INITCWND=40
SOCKTUNE_CWND_CLAMP=100 SOCKTUNE_INITRWND=40 SOCKTUNE_SYN_RTO=200ms"

# every variable of include/socktune.h is in FULL (a new option joins this test)
missing=""
for v in $(sed -n 's/^[[:space:]]*X(\([A-Z_]*\), ".*/\1/p' "$ROOT/include/socktune.h"); do
	case " $(echo $FULL) " in *" SOCKTUNE_$v="*) ;; *) missing="$missing $v" ;; esac
done
check passthru_full_policy "variables missing from the full policy:$missing" -z "$missing"

# compare MODE NAME-PREFIX: run passthru MODE both ways, one result per output line
compare() {
	mode=$1 pre=$2
	shift 2
	"$BIN/passthru" "$mode" "$@" >"$TMP/$mode.plain" 2>"$TMP/$mode.plain.err"
	# shellcheck disable=SC2086 # FULL is split into words on purpose
	env LD_PRELOAD="$LIB" $FULL "$BIN/passthru" "$mode" "$@" >"$TMP/$mode.pre" 2>"$TMP/$mode.pre.err"
	rc=$?
	check ${pre}_exit "passthru $mode exited $rc under the library: $(cat "$TMP/$mode.pre.err")" "$rc" = 0
	np=$(wc -l <"$TMP/$mode.plain")
	nl=$(wc -l <"$TMP/$mode.pre")
	check ${pre}_lines "$np lines without the library, $nl with it" "$np" -gt 10 -a "$np" = "$nl"
	# one result per line, named after the call (the words before the first key=value)
	awk -v pre="$pre" 'NR == FNR { a[FNR] = $0; next }
		{ name = a[FNR]; sub(/ *[a-z_-]*=.*/, "", name); gsub(/[^A-Za-z0-9]+/, "_", name)
		  x = a[FNR]; y = $0; gsub(/ +/, " ", x); gsub(/ +/, " ", y)
		  if (x == y) print "PASS " pre "_" name
		  else print "FAIL " pre "_" name ": without: \x27" x "\x27 with: \x27" y "\x27" }' \
		"$TMP/$mode.plain" "$TMP/$mode.pre"
}

compare calls passthru
check passthru_policy_live "no event=listen in the log: the policy was not applied" \
	"$(grep -c 'event=listen ' "$TMP/full.log" 2>/dev/null || echo 0)" -gt 0

mkdir -p "$TMP/sock"
compare opts untouched "$TMP/sock"
grep -q '^raw4 socket=' "$TMP/opts.plain" && skip untouched_raw4 "raw sockets not permitted here"
grep -q '^sctp4 socket=' "$TMP/opts.plain" && skip untouched_sctp4 "no SCTP in this kernel"
exit 0
