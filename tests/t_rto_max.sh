#!/bin/sh
# --rto-max (SOCKTUNE_RTO_MAX, TCP_RTO_MAX_MS, Linux 6.15): the longest retransmission timeout,
# in milliseconds.  Validation takes the kernel's own range and no other (probed here: a
# value outside is refused by name before anything runs, by the wrapper from an option, from
# the environment and with --cgroup; the library logs one error line naming the variable and
# applies the rest); a value the kernel rounds up to a jiffy reads back as the kernel keeps
# it, on the listener, the accepted connection and (--client) the outgoing one, IPv4 and
# IPv6, and on an accepted connection the app's own setsockopt is put back (precedence
# policy) or kept (app); check, --help and the manual say the range; the cgroup mode's
# program sets it on both ends, and its setsockopt hook holds it against the app's own value
# while a value the kernel refuses still fails with the kernel's EINVAL.
. "$(dirname "$0")/lib.sh"

# the kernel's range, by bisection from 10000 ms (the kernel's: 1000..120000, HZ or not)
range=$(kernel_range 6 44 10000 1 10000000)
case "$range" in
none) skip rto_max "this kernel has no TCP_RTO_MAX_MS (older than Linux 6.15)"; exit 0 ;;
*' '*) ;;
*) fail rto_max_probe "probe: $range"; exit 0 ;;
esac
least=${range% *} most=${range#* }
default=$($PY -c 'import socket; print(socket.socket().getsockopt(6, 44))')
kept=$(kernel_keeps 6 44 1001) # a jiffy's rounding (HZ=250: 1004)

# ---- validation's range is the kernel's, as its refusal says it: "out of range (Nms..Mms"
"$CLI" --rto-max 1 -- true 2>"$TMP/range.err"
said=$(sed -n 's/.*out of range (\([0-9]*\)ms\.\.\([0-9]*\)ms;.*/\1 \2/p' "$TMP/range.err")
check rto_max.range_is_kernels "the kernel takes $least..$most ms; validation: $(cat "$TMP/range.err")" \
	"$said" = "$least $most"

# ---- refused by name, before anything runs
refused_by_name rto_max.option_below "--rto-max $((least - 1)): out of range (${least}ms..${most}ms" -- --rto-max $((least - 1)) --nodelay
refused_by_name rto_max.option_above "--rto-max $((most + 1))ms: out of range (${least}ms..${most}ms" -- --rto-max "$((most + 1))ms"
refused_by_name rto_max.env_below "SOCKTUNE_RTO_MAX=0.5s: out of range (${least}ms.." SOCKTUNE_RTO_MAX=0.5s -- --nodelay
refused_by_name rto_max.cgroup_below "--rto-max 999: out of range (${least}ms.." -- --cgroup --rto-max 999

# ---- the server: a listener, a connection of its own to it (outgoing), the one accepted;
# then its own setsockopt of 3000 on the accepted one, read again
SRV='import socket, sys
fam, host = (socket.AF_INET6, "::1") if sys.argv[1] == "6" else (socket.AF_INET, "127.0.0.1")
l = socket.socket(fam); l.bind((host, 0)); l.listen()
c0 = socket.create_connection(l.getsockname()[:2]); c, _ = l.accept()
before = c.getsockopt(6, 44)
c.setsockopt(6, 44, 3000)
print("listener=%d accepted=%d outgoing=%d own=%d nodelay=%d" % (l.getsockopt(6, 44), before,
      c0.getsockopt(6, 44), c.getsockopt(6, 44), c.getsockopt(6, 1)))'

# ---- the library: the variable named once, the rest applied, the option left alone
n=rto_max.library_out_of_range
SOCKTUNE_RTO_MAX=999 SOCKTUNE_NODELAY=1 LD_PRELOAD="$LIB" $PY -c "$SRV" 4 >"$TMP/$n.out" 2>"$TMP/$n.err"
line=$(cat "$TMP/$n.out")
check $n "$line (want listener=$default nodelay=1); log: $(head -c 400 "$TMP/$n.err")" \
	"$(field "$line" listener)" = "$default" -a "$(field "$line" nodelay)" = 1 -a \
	"$(count_lines "$TMP/$n.err" 'level=error')" = 1 -a \
	-n "$(grep 'level=error event=config variable=SOCKTUNE_RTO_MAX value="999" error="out of range ('"$least"'ms\.\.'"$most"'ms' "$TMP/$n.err")"

# ---- read back as the kernel keeps it: listener, accepted, outgoing (--client), v4 and v6;
# the app's own value on the accepted connection put back (policy)
for fam in 4 6; do
	n=rto_max.read_back_v$fam
	"$CLI" --rto-max 1001 --client -- $PY -c "$SRV" $fam >"$TMP/$n.out" 2>"$TMP/$n.err"
	line=$(cat "$TMP/$n.out")
	check $n "$line (want $kept on the listener, accepted and outgoing, and after the app's own 3000); log: $(head -c 400 "$TMP/$n.err")" \
		"$(field "$line" listener)" = "$kept" -a "$(field "$line" accepted)" = "$kept" -a \
		"$(field "$line" outgoing)" = "$kept" -a "$(field "$line" own)" = "$kept" -a \
		-n "$(grep "event=listen .*rto_max_ms.want=1001 rto_max_ms.effective=$kept" "$TMP/$n.err")" -a \
		-n "$(grep "event=client .*rto_max_ms.want=1001 rto_max_ms.effective=$kept" "$TMP/$n.err")" -a \
		-z "$(grep 'level=warn' "$TMP/$n.err")"
done
# without --client the outgoing connection is the program's
n=rto_max.outgoing_untouched_without_client
SOCKTUNE_RTO_MAX=5s LD_PRELOAD="$LIB" $PY -c "$SRV" 4 >"$TMP/$n.out" 2>"$TMP/$n.err"
line=$(cat "$TMP/$n.out")
check $n "$line (want listener=5000 outgoing=$default)" \
	"$(field "$line" listener)" = 5000 -a "$(field "$line" outgoing)" = "$default"

# ---- precedence: the app's own value set before listen(): overwritten and said (policy),
# kept on the listener and its connections (app)
SRVP='import socket
l = socket.socket(); l.setsockopt(6, 44, 3000); l.bind(("127.0.0.1", 0)); l.listen()
c0 = socket.create_connection(l.getsockname()); c, _ = l.accept()
before = c.getsockopt(6, 44)
c.setsockopt(6, 44, 7000)
print("listener=%d accepted=%d own=%d" % (l.getsockopt(6, 44), before, c.getsockopt(6, 44)))'
n=rto_max.precedence_policy
SOCKTUNE_RTO_MAX=1001 LD_PRELOAD="$LIB" $PY -c "$SRVP" >"$TMP/$n.out" 2>"$TMP/$n.err"
line=$(cat "$TMP/$n.out")
check $n "$line (want $kept everywhere); log: $(grep 'app-override' "$TMP/$n.err" | head -c 400)" \
	"$(field "$line" listener)" = "$kept" -a "$(field "$line" accepted)" = "$kept" -a \
	"$(field "$line" own)" = "$kept" -a \
	-n "$(grep 'event=app-override .*socket=listener option=rto_max app_value=3000 want=1001' "$TMP/$n.err")"
n=rto_max.precedence_app
SOCKTUNE_PRECEDENCE=app SOCKTUNE_RTO_MAX=1001 LD_PRELOAD="$LIB" $PY -c "$SRVP" >"$TMP/$n.out" 2>"$TMP/$n.err"
line=$(cat "$TMP/$n.out")
check $n "$line (want listener=3000 accepted=3000 own=7000); log: $(head -c 400 "$TMP/$n.err")" \
	"$(field "$line" listener)" = 3000 -a "$(field "$line" accepted)" = 3000 -a \
	"$(field "$line" own)" = 7000 -a -n "$(grep 'event=listen .*app_kept\.0=rto_max' "$TMP/$n.err")"

# ---- check, --help and the manual
c=$("$CLI" check --rto-max 1001 2>&1 | grep 'rto-max' | tr '\n' ' ')
check rto_max.check "check --rto-max 1001: $c" -n "$(echo "$c" | grep "1001 -> $kept  ok")"
h=$("$CLI" --help | awk '/^  --rto-max/ { on = 1 } on && /^  --/ && !/rto-max/ { exit } on' | tr '\n' ' ' | tr -s ' ')
check rto_max.help "--help: $h" -n "$(echo "$h" | grep -F "range ${least}ms..${most}ms")"
m=$(awk '/^\.BI \\-\\-rto\\-max / { on = 1; next } on && /^\.TP/ { exit } on' "$ROOT/docs/socktune.1" | tr '\n' ' ')
check rto_max.man "socktune.1 --rto-max: $m" -n "$(echo "$m" | grep -F "${least}ms..${most}ms")"

# ---- the cgroup mode: the sock_ops program's bpf_setsockopt, on both ends
n=rto_max.cgroup
"$CLI" --cgroup --client --rto-max 1001 -- $PY -c "$SRV" 4 >"$TMP/$n.out" 2>"$TMP/$n.err"
rc=$?
if [ $rc -ne 0 ] && grep -q 'needs CAP_BPF\|not in a cgroup v2\|no cgroup v2' "$TMP/$n.err"; then
	skip rto_max.cgroup "this machine cannot run socktune --cgroup: $(grep -v '^socktune pid=' "$TMP/$n.err" | head -n 1)"
	exit 0
fi
line=$(cat "$TMP/$n.out")
# (the listener is no connection: the program tunes connections when they are established)
check $n "status $rc, $line (want accepted=$kept outgoing=$kept); log: $(head -c 500 "$TMP/$n.err")" \
	"$rc" = 0 -a "$(field "$line" accepted)" = "$kept" -a "$(field "$line" outgoing)" = "$kept" -a \
	-n "$(grep "event=cgroup .*conn=accepted .*rto_max_ms.want=1001 rto_max_ms.effective=$kept" "$TMP/$n.err")" -a \
	-n "$(grep "event=cgroup .*conn=outgoing .*rto_max_ms.want=1001 rto_max_ms.effective=$kept" "$TMP/$n.err")"

# ---- its setsockopt hook: the app's value in the kernel's range held (and counted), one
# outside it fails with the kernel's own EINVAL (not made a success by our value)
if grep -q 'setsockopt is not held' "$TMP/$n.err"; then
	skip rto_max.cgroup_hook "the kernel refused the setsockopt hook here"
	exit 0
fi
SETS="-s TCP_RTO_MAX_MS=$((least - 1)) -s TCP_RTO_MAX_MS=$((most + 1)) -s TCP_RTO_MAX_MS=3000"
"$CLI" --cgroup --rto-max 9000 -- "$BIN/resetsrv" -n 1 -t 20 $SETS >"$TMP/hook.out" 2>"$TMP/hook.err" &
pid=$!
busywait 5000 grep -qs '^PORT ' "$TMP/hook.out"
"$BIN/kaclient" http -n 1 -T 5 127.0.0.1 "$(sed -n 's/^PORT //p' "$TMP/hook.out")" >/dev/null 2>&1
wait $pid
rc=$?
set_of() { sed -n "s/^SET TCP_RTO_MAX_MS=$1 \(rc=[^ ]* read=[^ ]*\)$/\1/p" "$TMP/hook.out" | head -n 1; }
said=$(grep 'event=app-override .*option=rto_max ' "$TMP/hook.err" | tail -n 1)
check rto_max.cgroup_hook_out_of_range_kernels_error "status $rc; $((least - 1)): $(set_of $((least - 1))), $((most + 1)): $(set_of $((most + 1))) (want rc=22 read=9000 both)" \
	"$rc" = 0 -a "$(set_of $((least - 1)))" = "rc=22 read=9000" -a "$(set_of $((most + 1)))" = "rc=22 read=9000"
check rto_max.cgroup_hook_held "3000: $(set_of 3000) (want rc=0 read=9000); log: $said" \
	"$(set_of 3000)" = "rc=0 read=9000" -a "$(field "$said" app_value)" = 3000 -a \
	"$(field "$said" count)" = 1
