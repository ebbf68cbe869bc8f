#!/bin/sh
# socktune check and the kernel's delayed-ACK controls: the host lines for TCP_DELACK_MAX_US and
# TCP_RTO_MIN_US (Linux 6.15) against a probe made here, the jiffy they are rounded to, and
# --route: the route the kernel sends to an address by, whether it carries quickack 1, and the
# fix it prints, run in network namespaces made here.
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
got_d=$(json_get "$TMP/json" host.tcp_delack_max_supported)
got_r=$(json_get "$TMP/json" host.tcp_rto_min_supported)
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
		# what rounds up to 2 jiffies (1 jiffy + 1 us) .. HZ/5 jiffies (200 ms); 2 jiffies kept
		# shellcheck disable=SC2017
		min=$((2000000 / hz)) max=$((hz / 5 * 1000000 / hz)) least=$((jiffy + 1))
		line="  TCP_DELACK_MAX_US = yes   # Linux >= 6.15; rounded up to a jiffy: $jiffy us (HZ=$hz), takes $least..$max us ($least keeps $min)"
		# socktune's floor (HZ=250's 4001), where this kernel's differs
		if [ $least -lt 4001 ]; then
			line="$line; socktune takes 4001 and up"
		elif [ $least -gt 4001 ]; then
			line="$line; 4001..$((least - 1)), which socktune takes, are refused here"
		fi
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

# ---- --route on this host: 127.0.0.1's own /32 in the local table, not 127.0.0.0/8 ----
# quickack_of ADDR [NS]: yes or no, as ip(8) sees the route (ip route get fibmatch)
quickack_of() {
	if [ -n "${2:-}" ]; then set -- "$1" ip -n "$2"; else set -- "$1" ip; fi
	_a=$1
	shift
	if "$@" route get fibmatch "$_a" 2>/dev/null | grep -q 'quickack 1'; then echo yes; else echo no; fi
}
want=$(quickack_of 127.0.0.1)
"$CMD" check --strict --route 127.0.0.1 >"$TMP/route" 2>"$TMP/err"
rc=$?
line=$(grep '^  127\.0\.0\.1: ' "$TMP/route")
check route_loopback_local_table "got '$line' (status $rc)" \
	"$line" = "  127.0.0.1: table local, type local, 127.0.0.1/32, dev lo: quickack $want"
# without quickack, --strict still says 0: the route is information, not a configured value
check route_strict_is_information "status $rc: $(cat "$TMP/err")" $rc -eq 0
if [ "$want" = no ]; then
	fix=$(sed -n 's/^    fix: //p' "$TMP/route")
	check route_loopback_fix "got '$fix'" "$fix" = \
		"ip route change local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1"
	check route_fix_note "$(cat "$TMP/route")" \
		"$(grep -c '^    # needs CAP_NET_ADMIN; the route that counts is the server.s route back to its clients' "$TMP/route")" -eq 1
fi
"$CMD" check --json --route 127.0.0.1 --route ::1 >"$TMP/rjson" 2>"$TMP/err"
res=$($PY - "$TMP/rjson" "$want" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r4, r6 = d["routes"]
ok = (r4["addr"] == "127.0.0.1" and r4["family"] == 4 and r4["found"] and r4["table"] == "local"
      and r4["table_id"] == 255 and r4["type"] == "local" and r4["destination"] == "127.0.0.1/32"
      and r4["device"] == "lo" and r4["quickack"] == (sys.argv[2] == "yes")
      and (r4["quickack"] or r4["fix"][0].startswith("ip route change local 127.0.0.1 ")))
# ::1's route is the kernel's own, of metric 0: no ip route change can name it
ok6 = not r6["found"] or (r6["destination"] == "::1/128" and r6["table"] == "local"
      and (r6["quickack"] or (r6["fix"] == [] and "metric 0" in r6["note"])))
print("ok" if ok and ok6 else "mismatch: %r" % d["routes"])
PY
)
check route_json "$res" "$res" = ok

# ---- bad --route values: status 2, one line naming the option and the value ----
n=0
for bad in 1.2.3 ::g localhost 127.0.0.1/8 "fe80::1%lo" ""; do
	n=$((n + 1))
	"$CMD" check --route "$bad" >/dev/null 2>"$TMP/bad"
	rc=$?
	lines=$(wc -l <"$TMP/bad")
	msg=$(cat "$TMP/bad")
	case $msg in
	"socktune: --route $bad: not an IPv4 or IPv6 address"*) ok=1 ;;
	*) ok=0 ;;
	esac
	check "route_bad_value_$n" "'$bad': status $rc, $lines lines: $msg" $rc -eq 2 -a "$lines" -eq 1 -a $ok -eq 1
done
"$CMD" check --route >/dev/null 2>"$TMP/bad"
rc=$?
check route_missing_value "status $rc: $(cat "$TMP/bad")" $rc -eq 2 -a "$(wc -l <"$TMP/bad")" -eq 1 -a \
	"$(grep -c '^socktune: --route: missing value' "$TMP/bad")" -eq 1
set -- check
for i in 1 2 3 4 5 6 7 8 9; do set -- "$@" --route "127.0.0.$i"; done
"$CMD" "$@" >/dev/null 2>"$TMP/bad"
rc=$?
check route_at_most_8 "status $rc: $(cat "$TMP/bad")" $rc -eq 2 -a \
	"$(cat "$TMP/bad")" = "socktune: --route 127.0.0.9: at most 8 addresses"
"$CMD" --route 127.0.0.1 "$PROBE" exit 0 >/dev/null 2>"$TMP/bad"
rc=$?
check route_only_for_check "status $rc: $(cat "$TMP/bad")" $rc -eq 2 -a \
	"$(cat "$TMP/bad")" = "socktune: --route: only for 'socktune check'"

# ---- in namespaces made here: the printed fix, run, and check's answer after it ----
cap=$(($(printf '%d' "0x$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)") >> 12 & 1))
if [ "$cap" -ne 1 ]; then
	skip route_quickack_after_fix "CAP_NET_ADMIN not held (ip route change needs it)"
	exit 0
fi
if ! setup_ns NS1 NS2 2>"$TMP/ns.err"; then
	skip route_quickack_after_fix "no network namespace: $(head -n 1 "$TMP/ns.err")"
	exit 0
fi
in_ns() { _ns=$1; shift; ip netns exec "$_ns" "$@"; }

# NS1: the fix check prints (the route's proto and src kept), then quickack yes
in_ns "$NS1" "$CMD" check --route 127.0.0.1 >"$TMP/ns1" 2>&1
fix=$(sed -n 's/^    fix: //p' "$TMP/ns1")
check route_ns_fix_printed "$(grep -A3 '^routes' "$TMP/ns1")" \
	"$fix" = "ip route change local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1"
# shellcheck disable=SC2086 # the printed command, split into its words
in_ns "$NS1" $fix 2>"$TMP/ns1.err"
rc=$?
check route_ns_fix_runs "status $rc: $(cat "$TMP/ns1.err")" $rc -eq 0
in_ns "$NS1" "$CMD" check --route 127.0.0.1 --json >"$TMP/ns1.json" 2>&1
check route_quickack_after_fix "$(json_get "$TMP/ns1.json" routes.0)" \
	"$(json_get "$TMP/ns1.json" routes.0.quickack)" = True -a "$(quickack_of 127.0.0.1 "$NS1")" = yes
shown=$(ip -n "$NS1" route show table local exact 127.0.0.1)
check route_fix_keeps_the_rest "$shown" -n "$(printf '%s' "$shown" | grep 'proto kernel scope host src 127.0.0.1 quickack 1')"
check route_ns_left_host_alone "host: $(quickack_of 127.0.0.1)" "$(quickack_of 127.0.0.1)" = "$want"

# NS2: the change as an operator types it (no proto, no src), and an IPv6 route of our own
ip -n "$NS2" route change local 127.0.0.1 dev lo table local quickack 1 2>"$TMP/ns2.err"
in_ns "$NS2" "$CMD" check --route 127.0.0.1 >"$TMP/ns2" 2>&1
check route_quickack_yes_typed "$(cat "$TMP/ns2.err") $(grep '^  127' "$TMP/ns2")" \
	"$(grep -c '^  127\.0\.0\.1: table local, type local, 127\.0\.0\.1/32, dev lo: quickack yes$' "$TMP/ns2")" -eq 1
if ip -n "$NS2" -6 route add 2001:db8::/64 dev lo metric 77 2>"$TMP/ns2.err"; then
	in_ns "$NS2" "$CMD" check --route 2001:db8::5 >"$TMP/ns2v6" 2>&1
	fix=$(sed -n 's/^    fix: //p' "$TMP/ns2v6")
	# shellcheck disable=SC2086
	in_ns "$NS2" $fix 2>"$TMP/ns2.err"
	in_ns "$NS2" "$CMD" check --route 2001:db8::5 >"$TMP/ns2v6b" 2>&1
	check route_ipv6_fix "fix '$fix': $(cat "$TMP/ns2.err") $(grep '^  2001' "$TMP/ns2v6b")" \
		"$fix" = "ip -6 route change 2001:db8::/64 dev lo table main proto boot metric 77 quickack 1" -a \
		"$(grep -c '^  2001:db8::5: table main, type unicast, 2001:db8::/64, dev lo: quickack yes$' "$TMP/ns2v6b")" -eq 1
else
	skip route_ipv6_fix "no IPv6 route in the namespace: $(cat "$TMP/ns2.err")"
fi
cleanup_ns "$NS1" "$NS2"
check route_ns_removed "namespaces left: $(ip netns list | grep -c "st-NS[12]-$$-")" \
	"$(ip netns list | grep -c "st-NS[12]-$$-")" -eq 0
