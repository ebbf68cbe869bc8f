#!/bin/sh
# socktune check and the kernel's delayed-ACK controls: the host lines for TCP_DELACK_MAX_US and
# TCP_RTO_MIN_US (Linux 6.15) against a probe made here, and the jiffy they are rounded to.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cli.sh"

# ---- the host lines: what a socket made here sees ----
# probe OPT: "no" (ENOPROTOOPT), "yes READBACK" (5000 us set, then read), or "error ERRNO"
probe() {
	$PY -c '
import errno, socket, sys
s = socket.socket()
try:
    s.setsockopt(6, int(sys.argv[1]), 5000)
    print("yes", s.getsockopt(6, int(sys.argv[1])))
except OSError as e:
    print("no" if e.errno == errno.ENOPROTOOPT else "error %d" % e.errno)' "$1"
}
delack=$(probe 46)
rtomin=$(probe 45)

"$CMD" check --json >"$TMP/json" 2>"$TMP/err"
rc=$?
"$CMD" check >"$TMP/text" 2>>"$TMP/err"
rc2=$?
check check_kernel_runs "status $rc $rc2: $(head -n 2 "$TMP/err")" $rc -eq 0 -a $rc2 -eq 0
got_d=$(json_get "$TMP/json" host.tcp_delack_max_us)
got_r=$(json_get "$TMP/json" host.tcp_rto_min_us)
jiffy=$(json_get "$TMP/json" host.jiffy_us)
hz=$(json_get "$TMP/json" host.hz)
want_d=False want_r=False
case $delack in yes*) want_d=True ;; esac
case $rtomin in yes*) want_r=True ;; esac
check host_us_options_as_probed "probe: delack '$delack' rto_min '$rtomin'; check: $got_d $got_r" \
	"$got_d" = "$want_d" -a "$got_r" = "$want_r"

case $delack in
yes*)
	back=${delack#yes }
	# the kernel rounds 5000 us up to whole jiffies: check's jiffy must say the same
	case $jiffy in
	[0-9]*)
		want=$(((5000 + jiffy - 1) / jiffy * jiffy))
		check host_jiffy_consistent "5000 us read back $back; jiffy $jiffy, HZ $hz predicts $want" \
			"$back" -eq "$want" -a "$hz" -eq $((1000000 / jiffy))
		# 2 jiffies .. HZ/5 jiffies (200 ms), in whole jiffies
		# shellcheck disable=SC2017
		min=$((2000000 / hz)) max=$((hz / 5 * 1000000 / hz))
		line="  TCP_DELACK_MAX_US = yes   # Linux >= 6.15; rounded up to a jiffy: $jiffy us (HZ=$hz), range $min..$max us"
		got=$(grep '^  TCP_DELACK_MAX_US = ' "$TMP/text")
		check host_delack_line "got '$got' want '$line'" "$got" = "$line"
		;;
	*) fail host_jiffy_consistent "the kernel has TCP_DELACK_MAX_US, check found no jiffy ('$jiffy')" ;;
	esac
	;;
no)
	got=$(grep -c '^  TCP_DELACK_MAX_US = no (Linux 6.15 has it)$' "$TMP/text")
	check host_delack_line "$(grep TCP_DELACK "$TMP/text")" "$got" -eq 1 -a "$hz" = None
	skip host_jiffy_consistent "this kernel has no TCP_DELACK_MAX_US (before Linux 6.15)"
	;;
*) skip host_jiffy_consistent "the probe here failed: $delack" ;;
esac
case $rtomin in
yes*) want="  TCP_RTO_MIN_US = yes   # Linux >= 6.15; rounded up to a jiffy: $jiffy us" ;;
*) want="  TCP_RTO_MIN_US = no (Linux 6.15 has it)" ;;
esac
got=$(grep '^  TCP_RTO_MIN_US = ' "$TMP/text")
case $got in "$want"*) pass host_rto_min_line ;; *) fail host_rto_min_line "got '$got' want '$want...'" ;; esac
