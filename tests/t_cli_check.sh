#!/bin/sh
# socktune check: the host lines against /proc/sys, the verdicts against the arithmetic of
# this host's limits (rmem_max, somaxconn), --strict's status, and --json parsing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cli.sh"

sysctl_val() { tr -s ' \t' '  ' <"/proc/sys/$(printf '%s' "$1" | tr . /)"; }

"$CMD" check >"$TMP/plain" 2>"$TMP/err"
rc=$?
check check_runs "status $rc: $(cat "$TMP/err")" $rc -eq 0

# Every limit that clamps a setting is printed, with this host's value.
bad= n=0
for name in net.core.rmem_max net.core.wmem_max net.core.somaxconn net.ipv4.tcp_rmem \
	net.ipv4.tcp_wmem net.ipv4.tcp_max_syn_backlog net.ipv4.tcp_available_congestion_control \
	net.ipv4.tcp_allowed_congestion_control net.ipv4.tcp_slow_start_after_idle net.ipv4.tcp_mem; do
	[ -r "/proc/sys/$(printf '%s' "$name" | tr . /)" ] || continue
	n=$((n + 1))
	want=$(sysctl_val "$name")
	got=$(sed -n "s/^  $name = \(.*\)$/\1/p" "$TMP/plain" | sed 's/   #.*//')
	[ "$got" = "$want" ] || bad="$bad $name(got '$got' want '$want')"
done
check check_host_values "$bad" $n -ge 9 -a -z "$bad"

capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
cap=$(((0x$capeff >> 12) & 1))
[ $cap -eq 1 ] && want=yes || want=no
got=$(sed -n 's/^  CAP_NET_ADMIN = //p' "$TMP/plain")
check check_cap_net_admin "got '$got' want '$want'" "$got" = "$want"
got=$(sed -n 's/^  RLIMIT_NOFILE = \([0-9a-z]*\).*/\1/p' "$TMP/plain")
want=$(ulimit -n)
check check_rlimit_nofile "got '$got' want '$want'" "$got" = "$want"
check check_nothing_configured "$(tail -n 1 "$TMP/plain")" "$(tail -n 1 "$TMP/plain")" = "result: nothing configured"

RMEM=$(cat /proc/sys/net/core/rmem_max)
SOMAX=$(cat /proc/sys/net/core/somaxconn)

# rcvbuf above net.core.rmem_max: clamped to 2 x rmem_max, and --strict says 1.
if [ "$RMEM" -le 268435456 ]; then
	want=$((RMEM * 2))
	"$CMD" check --strict --rcvbuf "$want" >"$TMP/out" 2>&1
	rc=$?
	line=$(grep '^  rcvbuf ' "$TMP/out")
	# the fix fits the capabilities present: held, add --rcvbuf-force; not held, both
	head="  rcvbuf        $want -> $((RMEM * 2)) (kernel reports 2x)  clamped by net.core.rmem_max=$RMEM: sysctl -w net.core.rmem_max=$want"
	if [ $cap -eq 1 ]; then
		expect="$head, or add --rcvbuf-force (SOCKTUNE_RCVBUF_FORCE=1; CAP_NET_ADMIN is held)"
	else
		expect="$head, or CAP_NET_ADMIN with SOCKTUNE_RCVBUF_FORCE=1 (--rcvbuf-force)"
	fi
	check check_rcvbuf_clamped "got '$line'" "$line" = "$expect"
	drop="--inh-caps=-all --bounding-set=-all"
	# shellcheck disable=SC2086 # the setpriv options are split on purpose
	if [ $cap -eq 1 ] && command -v setpriv >/dev/null 2>&1 && setpriv $drop true 2>/dev/null; then
		setpriv $drop "$CMD" check --rcvbuf "$want" >"$TMP/out" 2>&1
		line=$(grep '^  rcvbuf ' "$TMP/out")
		check check_rcvbuf_clamped_nocap "got '$line'" \
			"$line" = "$head, or CAP_NET_ADMIN with SOCKTUNE_RCVBUF_FORCE=1 (--rcvbuf-force)"
		setpriv $drop "$CMD" check --rcvbuf "$want" --rcvbuf-force >"$TMP/out" 2>&1
		line=$(grep '^  rcvbuf ' "$TMP/out")
		check check_rcvbuf_forced_nocap "got '$line'" -n "$(printf '%s' "$line" |
			grep -F "SO_RCVBUF fallback): sysctl -w net.core.rmem_max=$want, or grant CAP_NET_ADMIN (for SOCKTUNE_RCVBUF_FORCE=1)")"
	else
		skip check_rcvbuf_clamped_nocap "CAP_NET_ADMIN not held, or setpriv cannot drop it"
	fi
	check check_strict_clamped "status $rc" $rc -eq 1
	"$CMD" check --rcvbuf "$want" >/dev/null 2>&1
	check check_clamped_no_strict "status $?" $? -eq 0
	# The same through the environment: SOCKTUNE_* are honoured by check too.
	SOCKTUNE_RCVBUF=$want "$CMD" check >"$TMP/out" 2>&1
	check check_env_honoured "$(grep '^  rcvbuf' "$TMP/out")" "$(grep -c "^  rcvbuf  *$want -> $((RMEM * 2)) .*clamped" "$TMP/out")" -eq 1
else
	skip check_rcvbuf_clamped "net.core.rmem_max=$RMEM is too large to exceed"
fi
# rcvbuf within it: twice the request, ok, --strict says 0.
small=$((RMEM / 2))
"$CMD" check --strict --rcvbuf "$small" >"$TMP/out" 2>&1
rc=$?
check check_rcvbuf_ok "status $rc, $(grep '^  rcvbuf' "$TMP/out")" $rc -eq 0 -a \
	"$(grep -c "^  rcvbuf  *$small -> $((small * 2)) (kernel reports 2x)  ok" "$TMP/out")" -eq 1

# rcvbuf-force: granted with CAP_NET_ADMIN; without it the library falls back, and says so.
if [ "$RMEM" -le 268435456 ] && [ $cap -eq 1 ]; then
	want=$((RMEM * 2))
	"$CMD" check --strict --rcvbuf "$want" --rcvbuf-force >"$TMP/out" 2>&1
	rc=$?
	check check_force_with_cap "status $rc, $(grep '^  rcvbuf ' "$TMP/out")" $rc -eq 0 -a \
		"$(grep -c "^  rcvbuf  *$want -> $((want * 2)) (kernel reports 2x)  ok via SO_RCVBUFFORCE" "$TMP/out")" -eq 1
	if command -v setpriv >/dev/null 2>&1 &&
		setpriv --inh-caps=-net_admin --bounding-set=-net_admin true 2>/dev/null; then
		setpriv --inh-caps=-net_admin --bounding-set=-net_admin \
			"$CMD" check --strict --rcvbuf "$want" --rcvbuf-force >"$TMP/out" 2>&1
		rc=$?
		check check_force_without_cap "status $rc, $(grep -e '^  rcvbuf' -e CAP_NET "$TMP/out" | tr '\n' '|')" $rc -eq 1 -a \
			"$(grep -c '^  CAP_NET_ADMIN = no' "$TMP/out")" -eq 1 -a \
			"$(grep -c "^  rcvbuf  *$want -> $((RMEM * 2)) .*SO_RCVBUF fallback" "$TMP/out")" -eq 1 -a \
			"$(grep -c '^  rcvbuf-force .*CAP_NET_ADMIN not held' "$TMP/out")" -eq 1
	else
		skip check_force_without_cap "setpriv cannot drop CAP_NET_ADMIN here"
	fi
else
	skip check_force_with_cap "CAP_NET_ADMIN not held or rmem_max too large"
fi

# backlog above net.core.somaxconn: cut to it (read back from a real listener).
want=$((SOMAX + 1))
"$CMD" check --strict --backlog "$want" --nodelay >"$TMP/out" 2>&1
rc=$?
line=$(grep '^  backlog ' "$TMP/out")
expect="  backlog       $want -> $SOMAX  clamped by net.core.somaxconn=$SOMAX: sysctl -w net.core.somaxconn=$want"
check check_backlog_clamped "got '$line'" "$line" = "$expect"
check check_backlog_strict "status $rc" $rc -eq 1
check check_nodelay_ok "$(grep '^  nodelay' "$TMP/out")" "$(grep -c '^  nodelay  *1 -> 1  ok' "$TMP/out")" -eq 1
check check_result_line "$(tail -n 1 "$TMP/out")" "$(tail -n 1 "$TMP/out")" = "result: 1 of 2 configured values would not take effect in full"
"$CMD" check --strict --backlog "$SOMAX" --backlog-min 16 >"$TMP/out" 2>&1
rc=$?
check check_backlog_fits "status $rc, $(grep '^  backlog' "$TMP/out" | tr '\n' '|')" $rc -eq 1 -a \
	"$(grep -c "^  backlog  *$SOMAX -> $SOMAX  ok" "$TMP/out")" -eq 1 -a \
	"$(grep -c '^  backlog-min .*ignored: --backlog is set' "$TMP/out")" -eq 1

# Memory exposure: per connection x RLIMIT_NOFILE, tcp_mem in pages; in KiB, MiB, GiB.
"$CMD" check --rcvbuf 64K --sndbuf 64K >"$TMP/out" 2>&1
nofile=$(ulimit -n)
# the unit a person reads: whole when exact, else one decimal (powers of 1024)
human() {
	$PY -c 'import sys
b = int(sys.argv[1]); u = 0; w = 1024
if b < 1024: print("%d bytes" % b); sys.exit()
while u < 3 and b >= w * 1024: w *= 1024; u += 1
n = ["KiB", "MiB", "GiB", "TiB"][u]
print("%d %s" % (b // w, n) if b % w == 0 else "%.1f %s" % (b / w, n))' "$1"
}
per=$(grep '^  per connection = ' "$TMP/out")
worst=$(grep '^  worst case = ' "$TMP/out")
check check_memory "per '$per' worst '$worst'" \
	"$per" = "  per connection = 256 KiB   # receive 128 KiB (rcvbuf) + send 128 KiB (sndbuf)" -a \
	"$worst" = "  worst case = $(human $((262144 * nofile)))   # x $nofile descriptors (RLIMIT_NOFILE)" -a \
	"$(grep -c 'net.ipv4.tcp_mem max = [0-9.]* [KMGT]iB   # [0-9]* pages x' "$TMP/out")" -eq 1 -a \
	"$(grep -c '[0-9]\{7,\} bytes' "$TMP/out")" -eq 0
# no buffer size configured: no memory section (autotuning's maximum is the host's)
"$CMD" check >"$TMP/out" 2>&1
"$CMD" check --nodelay >"$TMP/out2" 2>&1
check check_memory_only_buffers "$(grep -A1 '^memory' "$TMP/out" "$TMP/out2" | tr '\n' '|')" \
	"$(grep -c '^memory\|worst case' "$TMP/out" "$TMP/out2" | grep -vc ':0$')" -eq 0
"$CMD" check --sndbuf 1M >"$TMP/out" 2>&1
check check_memory_sndbuf "$(grep '^  per connection' "$TMP/out")" \
	"$(grep -c '^  per connection = .* + send 2 MiB (sndbuf)$' "$TMP/out")" -eq 1

# --json: parses, and carries the same values.
"$CMD" check --json --strict --backlog "$want" --rcvbuf 64K >"$TMP/json" 2>"$TMP/err"
rc=$?
$PY -m json.tool "$TMP/json" >/dev/null 2>"$TMP/jerr"
check json_parses "status $rc, $(head -n 2 "$TMP/jerr")" $? -eq 0 -a $rc -eq 1
res=$($PY - "$TMP/json" "$SOMAX" "$(sysctl_val net.ipv4.tcp_rmem)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
somax = int(sys.argv[2])
rmem = [int(x) for x in sys.argv[3].split()]
o = {x["option"]: x for x in d["options"]}
ok = (d["host"]["net.core.somaxconn"] == somax and d["host"]["net.ipv4.tcp_rmem"] == rmem
      and o["backlog"]["verdict"] == "clamped" and o["backlog"]["effective"] == somax
      and o["backlog"]["in_full"] is False and o["rcvbuf"]["effective"] == 131072
      and o["rcvbuf"]["kernel_reports_double"] is True and d["not_in_full"] == 1
      and isinstance(d["host"]["net.ipv4.tcp_available_congestion_control"], list))
print("ok" if ok else "mismatch: %r" % d)
PY
)
check json_values "$res" "$res" = ok
# One document, every key in socktune --schema with its type (fix: commands, note: prose).
"$CMD" --schema >"$TMP/schema"
"$CMD" check --json --backlog "$want" --rcvbuf 64K --nodelay --congestion reno --keepalive 30:: \
	--route 127.0.0.1 >"$TMP/json" 2>"$TMP/err"
res=$($PY "$ROOT/tests/py/schema_check.py" "$TMP/schema" "$TMP/json" 2>&1)
check json_schema "$res" "$res" = ok
res=$($PY -c 'import json, sys
d = json.load(open(sys.argv[1]))
o = {x["option"]: x for x in d["options"]}
b = o["backlog"]
ok = (isinstance(b["fix"], list) and all(f.startswith("sysctl -w ") for f in b["fix"])
      and o["nodelay"]["want"] == 1 and o["congestion"]["want_name"] == "reno"
      and d["routes"][0]["family"] == 4 and isinstance(d["host"]["tcp_delack_max_supported"],
                                                        (bool, type(None))))
print("ok" if ok else "mismatch: %r" % d["options"])' "$TMP/json" 2>&1)
check json_typed "$res" "$res" = ok
# Escaping: quotes, backslashes, control characters and bytes that are not UTF-8.
odd=$(printf '%s/a"b\\c\td\001e\377f' "$TMP")
"$CMD" check --json --log-file "$odd" >"$TMP/json" 2>"$TMP/err"
res=$($PY -c '
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
v = [x["value"] for x in d["options"] if x["option"] == "log-file"][0]
print("ok" if v == sys.argv[2] + "/a\"b\\c\td\x01e\ufffdf" else repr(v))' "$TMP/json" "$TMP" 2>&1)
check json_escaping "$res" "$res" = ok
# keepalive, tos and defer-accept are read back on a probe socket, not left "unchecked"
"$CMD" check --keepalive 30:10:5 --tos lowdelay --defer-accept 5 >"$TMP/opts" 2>&1
check check_keepalive_verified "$(grep keepalive "$TMP/opts")" -n "$(grep -E '^ +keepalive +30:10:5 +ok' "$TMP/opts")"
check check_tos_verified "$(grep ' tos ' "$TMP/opts")" -n "$(grep -E '^ +tos +16 -> 16 +ok' "$TMP/opts")"
check check_defer_accept_rounded "$(grep defer "$TMP/opts")" -n "$(grep -E '^ +defer-accept +5 -> [0-9]+ +ok \(rounded up' "$TMP/opts")"
