#!/bin/sh
# SOCKTUNE_BACKLOG replaces the app's backlog: when that lowers it (squid asks for 5000,
# h2o 65535, php-fpm -1 = somaxconn), one warning with both values and the advice;
# SOCKTUNE_BACKLOG_MIN only raises (5000 kept, no warning); BACKLOG_MAX lowers on purpose
# (no warning).  IPv4 and IPv6; the backlog in force read back with TCP_INFO.
. "$(dirname "$0")/lib.sh"

somaxconn=$(cat /proc/sys/net/core/somaxconn)
min() { if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi; }

for fam in 4 6; do
	host='127\.0\.0\.1'
	[ "$fam" = 6 ] && host='\[::1\]'

	n=replace_v$fam
	if ts_serve $n $fam 1 LD_PRELOAD="$LIB" SOCKTUNE_BACKLOG=1234 -- -"$fam" -b 5000; then
		c=$(count_lines "$TMP/$n.err" 'event=backlog-lowered')
		w=$(log_line $n backlog-lowered)
		check $n.one-warning "$c backlog-lowered lines, want 1: $(cat "$TMP/$n.err")" "$c" -eq 1
		check $n.values "line: $w" -n "$(printf '%s' "$w" | grep 'level=warn' |
			grep "fd=[0-9][0-9]* addr=$host:$SRV_PORT backlog.app=5000 backlog.want=1234 " |
			grep 'note="use --backlog-min 1234 to only raise"' | grep -v 'fix')"
		check $n.applied "TCP_INFO backlog $(ts_val $n CONN backlog), want $(min 1234 "$somaxconn")" \
			"$(ts_val $n CONN backlog)" = "$(min 1234 "$somaxconn")"
	fi

	n=min_v$fam
	if ts_serve $n $fam 1 LD_PRELOAD="$LIB" SOCKTUNE_BACKLOG_MIN=1234 -- -"$fam" -b 5000; then
		c=$(count_lines "$TMP/$n.err" 'event=backlog-lowered')
		check $n.no-warning "$c backlog-lowered lines, want 0" "$c" -eq 0
		check $n.kept "TCP_INFO backlog $(ts_val $n CONN backlog), want 5000 cut to somaxconn $somaxconn" \
			"$(ts_val $n CONN backlog)" = "$(min 5000 "$somaxconn")" \
			-a "$(field "$(log_line $n listen)" backlog.want)" = 5000
	fi

	n=max_v$fam
	if ts_serve $n $fam 1 LD_PRELOAD="$LIB" SOCKTUNE_BACKLOG_MAX=1234 -- -"$fam" -b 5000; then
		c=$(count_lines "$TMP/$n.err" 'event=backlog-lowered')
		check $n.no-warning "$c backlog-lowered lines with BACKLOG_MAX (lowering asked for), want 0" "$c" -eq 0
	fi

	n=raise_v$fam
	if ts_serve $n $fam 1 LD_PRELOAD="$LIB" SOCKTUNE_BACKLOG=1234 -- -"$fam" -b 100; then
		c=$(count_lines "$TMP/$n.err" 'event=backlog-lowered')
		check $n.no-warning "$c backlog-lowered lines for 100 -> 1234, want 0" "$c" -eq 0
	fi

	# listen(fd, -1) asks for the kernel's maximum, net.core.somaxconn
	n=minus1_v$fam
	if ts_serve $n $fam 1 LD_PRELOAD="$LIB" SOCKTUNE_BACKLOG=1234 -- -"$fam" -b -1; then
		c=$(count_lines "$TMP/$n.err" 'event=backlog-lowered')
		w=$(log_line $n backlog-lowered)
		if [ "$somaxconn" -gt 1234 ]; then
			check $n.one-warning "$c backlog-lowered lines, want 1 (somaxconn $somaxconn)" "$c" -eq 1
			check $n.values "line: $w" -n "$(printf '%s' "$w" |
				grep "backlog.app=-1 somaxconn=$somaxconn backlog.want=1234 ")"
		else
			check $n.no-warning "$c backlog-lowered lines, want 0 (somaxconn $somaxconn <= 1234)" "$c" -eq 0
		fi
	fi
done
