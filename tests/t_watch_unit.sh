#!/bin/sh
# examples/systemd/socktune-watch.service: systemd-analyze verify finds nothing in it (a unit
# with a bad key must be caught first), and the capabilities it grants are the ones socktune
# watch needs, no more: run as nobody (setpriv, no_new_privs, the unit's SecureBits, its
# CapabilityBoundingSet as the bounding set and its AmbientCapabilities as ambient ones), watch names a root python listener in another network namespace
# (comm python3); with any one of them taken away it does not (missing, or not named).
. "$(dirname "$0")/lib.sh"

UNIT=$ROOT/examples/systemd/socktune-watch.service
[ -x "$CLI" ] || { fail watch_unit "$CLI not built"; exit 0; }

# ---- systemd-analyze verify ----
if ! command -v systemd-analyze >/dev/null; then
	skip watch_unit.verify "no systemd-analyze (apt-get install systemd)"
else
	# verify exits 0 on a key it does not know: its output is the verdict.  The command must
	# exist to verify: the built one in place of the installed path; the man page is not
	# installed here (--man=no).
	verify() {
		systemd-analyze verify --man=no "$1" >"$TMP/verify.out" 2>&1 && [ ! -s "$TMP/verify.out" ]
	}
	printf '[Service]\nExecStart=/bin/true\nProtectSystem=maybe\n' >"$TMP/bad.service"
	verify "$TMP/bad.service"
	check watch_unit.verify_selftest "a bad value went through: $(cat "$TMP/verify.out")" $? != 0
	sed "s#/usr/local/bin/socktune#$CLI#" "$UNIT" >"$TMP/socktune-watch.service"
	verify "$TMP/socktune-watch.service"
	check watch_unit.verify "$(cat "$TMP/verify.out")" $? = 0
fi

# ---- the capabilities ----
caps=$(sed -n 's/^AmbientCapabilities=//p' "$UNIT")
bound=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
check watch_unit.caps_bounded "ambient '$caps', bounding set '$bound'" -n "$caps" -a "$caps" = "$bound"
if [ "$(id -u)" != 0 ]; then
	skip watch_unit.caps "not root (setpriv and a network namespace of another user)"
	exit 0
fi
if ! command -v setpriv >/dev/null; then
	skip watch_unit.caps "no setpriv (apt-get install util-linux)"
	exit 0
fi
if ! setup_ns NSA; then
	skip watch_unit.caps "cannot make a network namespace (ip netns add)"
	exit 0
fi
P=$(free_port)
# (its listener is in NSA: waited for there)
ip netns exec "$NSA" "$PY" -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(5); time.sleep(60)' "$P" \
	>"$TMP/srv.out" 2>"$TMP/srv.err" &
SRV=$!
busywait 5000 sh -c "ip netns exec $NSA ss -Hltn 'sport = :$P' | grep -q ."
chmod 711 "$TMP"
mkdir "$TMP/out" && chown 65534:65534 "$TMP/out"
# named CAPS: watch as nobody with CAPS (setpriv's list, "" none) names the listener
named() {
	rm -f "$TMP/out/w.prom"
	setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs --securebits=+noroot,+noroot_locked \
		--bounding-set="-all,$all" --inh-caps="-all${1:+,$1}" --ambient-caps="-all${1:+,$1}" \
		"$CLI" watch --textfile "$TMP/out/w.prom" --every 0.5 --seconds 2.5 >/dev/null 2>"$TMP/caps.err"
	grep -q "^socktune_listener_up{.*port=\"$P\",comm=\"python3\".* 1$" "$TMP/out/w.prom" 2>/dev/null
}
# setpriv_caps "CAP_SYS_PTRACE CAP_X": "+sys_ptrace,+x"
setpriv_caps() {
	echo "$1" | tr 'A-Z ' 'a-z\n' | sed -n 's/^cap_\(.*\)/+\1/p' | paste -sd, -
}
all=$(setpriv_caps "$caps")
named "$all"
check watch_unit.caps_enough "as nobody with $all: $(grep "port=\"$P\"" "$TMP/out/w.prom" 2>/dev/null | head -n 1) $(head -n 2 "$TMP/caps.err")" $? = 0
for c in $caps; do
	rest=$(setpriv_caps "$(echo "$caps" | tr ' ' '\n' | grep -vx "$c" | tr '\n' ' ')")
	named "$rest"
	check "watch_unit.needs_$c" "named without it: $(grep "port=\"$P\"" "$TMP/out/w.prom" | head -n 1)" $? != 0
	# what it cannot see it says: without CAP_SYS_PTRACE the other namespace is not found
	if [ "$c" = CAP_SYS_PTRACE ]; then
		check watch_unit.says_unreadable_namespaces "stderr: $(head -c 300 "$TMP/caps.err")" \
			-n "$(grep 'network namespace of .* is not readable by this process (/proc/PID/ns/net: CAP_SYS_PTRACE)' "$TMP/caps.err")"
	fi
done
kill "$SRV" 2>/dev/null
wait_gone "$SRV" 3
