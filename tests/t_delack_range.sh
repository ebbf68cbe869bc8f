#!/bin/sh
# --delack-max (SOCKTUNE_DELACK_MAX, TCP_DELACK_MAX_US) takes the kernel's range and no
# other: a value the kernel would refuse (under 2 jiffies once rounded up: 2ms at HZ=250) is
# refused before anything runs, by name (the wrapper: one line, status 2, the program not
# started; the library: one error line naming the variable, the rest of the policy applied),
# and the least value validation takes is one the kernel takes, read back on the listener
# and on an accepted connection (and from a --cgroup program, where this machine runs one).
# --help, the manual and check state that same least value; on this kernel (HZ=250) it is
# the least the kernel takes (one less is EINVAL).
. "$(dirname "$0")/lib.sh"

# the kernel's least: the first value of 1..200000 us it takes (1 jiffy + 1 us); "none": no
# TCP_DELACK_MAX_US (a kernel older than Linux 6.15)
least=$(kernel_range 6 46 200000 1 200000 | cut -d' ' -f1)
case "$least" in
none) skip delack_range "this kernel has no TCP_DELACK_MAX_US (older than Linux 6.15)"; exit 0 ;;
'' | *[!0-9]*) fail delack_range_probe "probe: $least"; exit 0 ;;
esac

# the least validation takes, as its refusal says it: "out of range (Nus..Mus; ..."
"$CLI" --delack-max 1us -- true 2>"$TMP/floor.err"
floor=$(sed -n 's/.*out of range (\([0-9]*\)us\.\..*/\1/p' "$TMP/floor.err")
check delack_range_floor_said "refusal: $(cat "$TMP/floor.err")" -n "$floor"
[ -n "$floor" ] || exit 0
# validation must never take what this kernel refuses; a kernel of HZ=1000 takes less than
# socktune does (1001: check says so there), which is not this test's to judge
if [ "$least" -lt "$floor" ]; then
	skip delack_range_is_kernels "this kernel takes $least us, socktune $floor and up (its HZ is over 250)"
else
	check delack_range_is_kernels "this kernel refuses under $least us, validation takes $floor and up" \
		"$least" = "$floor"
fi
kept=$(kernel_keeps 6 46 "$floor")

# ---- refused by name: the wrapper, from an option and from the environment
refused_by_name delack_range_option_2ms "--delack-max 2ms: out of range (${floor}us.." -- --delack-max 2ms --nodelay
refused_by_name delack_range_env_2ms "SOCKTUNE_DELACK_MAX=2ms: out of range (${floor}us.." SOCKTUNE_DELACK_MAX=2ms -- --nodelay
refused_by_name delack_range_below_floor "--delack-max $((floor - 1))us: out of range (${floor}us.." -- --delack-max "$((floor - 1))us"
refused_by_name rto_range_option_2ms "--rto-min 2ms: out of range (${floor}us.." -- --rto-min 2ms
refused_by_name delack_range_cgroup_2ms "--delack-max 2ms: out of range (${floor}us.." -- --cgroup --delack-max 2ms

# ---- the library: the variable named, the rest of the policy applied, the option untouched
SRV='import socket
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c0 = socket.create_connection(l.getsockname()); c, _ = l.accept()
print("listener=%d accepted=%d nodelay=%d" % (l.getsockopt(6, 46), c.getsockopt(6, 46), c.getsockopt(6, 1)))'
n=delack_range_library_2ms
SOCKTUNE_DELACK_MAX=2ms SOCKTUNE_NODELAY=1 LD_PRELOAD="$LIB" $PY -c "$SRV" >"$TMP/$n.out" 2>"$TMP/$n.err"
line=$(cat "$TMP/$n.out")
check $n "$line (want listener=200000 nodelay=1); log: $(head -c 400 "$TMP/$n.err")" \
	"$(field "$line" listener)" = 200000 -a "$(field "$line" nodelay)" = 1 -a \
	"$(count_lines "$TMP/$n.err" 'event=config')" = 1 -a \
	-n "$(grep 'level=error event=config variable=SOCKTUNE_DELACK_MAX value="2ms" error="out of range ('"$floor"'us\.\.' "$TMP/$n.err")" -a \
	-z "$(grep 'event=setsockopt' "$TMP/$n.err")"

# ---- the least accepted value is taken, and read back, on every path
n=delack_range_least_wrapper
"$CLI" --delack-max "${floor}us" -- $PY -c "$SRV" >"$TMP/$n.out" 2>"$TMP/$n.err"
line=$(cat "$TMP/$n.out")
check $n "$line (want $kept on both); log: $(head -c 300 "$TMP/$n.err")" \
	"$(field "$line" listener)" = "$kept" -a "$(field "$line" accepted)" = "$kept" -a \
	-z "$(grep 'level=warn' "$TMP/$n.err")"
n=delack_range_least_library
SOCKTUNE_DELACK_MAX="$floor" LD_PRELOAD="$LIB" $PY -c "$SRV" >"$TMP/$n.out" 2>"$TMP/$n.err"
line=$(cat "$TMP/$n.out")
check $n "$line (want $kept on both); log: $(head -c 300 "$TMP/$n.err")" \
	"$(field "$line" listener)" = "$kept" -a "$(field "$line" accepted)" = "$kept" -a \
	-n "$(grep "delack_max_us.want=$floor delack_max_us.effective=$kept" "$TMP/$n.err")"
# the cgroup program (TCP_BPF_DELACK_MAX): the same least, where this machine runs the mode
n=delack_range_least_cgroup
"$CLI" --cgroup --delack-max "${floor}us" -- $PY -c "$SRV" >"$TMP/$n.out" 2>"$TMP/$n.err"
rc=$?
if [ $rc -ne 0 ] && grep -q 'needs CAP_BPF\|not in a cgroup v2\|no cgroup v2' "$TMP/$n.err"; then
	skip $n "this machine cannot run socktune --cgroup: $(grep -v '^socktune pid=' "$TMP/$n.err" | head -n 1)"
else
	line=$(cat "$TMP/$n.out")
	check $n "status $rc, $line (want accepted=$kept); log: $(head -c 400 "$TMP/$n.err")" \
		"$rc" = 0 -a "$(field "$line" accepted)" = "$kept" -a \
		-n "$(grep "event=cgroup .*delack_max_us.want=$floor delack_max_us.effective=$kept" "$TMP/$n.err")"
fi

# ---- --help, the manual and check state the same least value
h=$("$CLI" --help | awk '/^  --delack-max/ { on = 1 } on && /^  --/ && !/delack-max/ { exit } on' | tr '\n' ' ')
check delack_range_help "--help: $h" -n "$(echo "$h" | grep -F "range ${floor}us..200000us")"
m=$(awk '/^\.BI \\-\\-delack\\-max / { on = 1; next } on && /^\.TP/ { exit } on' "$ROOT/docs/socktune.1" | tr '\n' ' ')
check delack_range_man "socktune.1 --delack-max: $m" -n "$(echo "$m" | grep -F "range ${floor}us..200000us")"
c=$("$CLI" check 2>&1 | grep 'TCP_DELACK_MAX_US = ')
check delack_range_check "check: $c" -n "$(echo "$c" | grep -F "takes ${floor}..200000 us")"
c=$("$CLI" check --delack-max "${floor}us" 2>&1 | grep -i 'delack' | tr '\n' ' ')
check delack_range_check_value "check --delack-max ${floor}us: $c" -n "$(echo "$c" | grep "$kept")"
