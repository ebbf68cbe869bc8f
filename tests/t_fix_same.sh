#!/bin/sh
# The library and `socktune check` print the same fix for the same limit: each case drives
# a real clamp or refusal through both (a tserver under the preload, and check --json with
# the same setting), and compares the library's fix.0="..." (its command) and note="..." (its
# prose) with check's "fix" (a list of one command, or none) and "note", part by part.  Both
# come from common/kernel.c (st_fix_split cuts the command from the prose on both sides);
# this fails when either side writes its own.
. "$(dirname "$0")/lib.sh"

# lib_fix NAME EVENT [VAR=value...]: "fix: CMD | note: PROSE" of the first EVENT line of a
# tserver run with the variables (IPv4, one connection); a second command (fix.1) is shown
# as one more "fix:" part, so that it differs from check's.
lib_fix() {
	_n=$1 _ev=$2
	shift 2
	ts_serve "$_n" 4 1 LD_PRELOAD="$LIB" "$@" -- -4 >/dev/null || return 1
	_l=$(log_line "$_n" "$_ev")
	[ -n "$_l" ] || return 1
	_x=$(field "$_l" fix.1)
	echo "fix: $(field "$_l" fix.0) | note: $(field "$_l" note)${_x:+ | fix: $_x}"
}

# check_json_fix: the same of check's one option, from its document on stdin ("fix": an
# array of one command or none, "note": the prose or null).
check_json_fix() {
	$PY -c 'import json, sys
o = json.load(sys.stdin)["options"][0]
assert isinstance(o["fix"], list) and len(o["fix"]) <= 1, o["fix"]
print("fix: %s | note: %s" % ("".join(o["fix"]), o["note"] or ""))'
}

# check_fix ARGS...: the fix of check's one option when run with ARGS (one option given).
check_fix() {
	"$CLI" check --json "$@" 2>/dev/null | check_json_fix
}

# same NAME LIBFIX CHECKFIX: equal, and not empty (a line without fix.0 or note, or none).
same() {
	check "$1" "library: '$2' / check: '$3'" -n "$2" -a "$2" != "fix:  | note: " -a "$2" = "$3"
}

rmem=$(cat /proc/sys/net/core/rmem_max)
wmem=$(cat /proc/sys/net/core/wmem_max)
somax=$(cat /proc/sys/net/core/somaxconn)
tfo=$(cat /proc/sys/net/ipv4/tcp_fastopen)

if [ "$rmem" -lt 268435456 ]; then
	want=$((rmem * 2))
	same rcvbuf_clamp "$(lib_fix rcvbuf clamp SOCKTUNE_RCVBUF=$want)" "$(check_fix --rcvbuf $want)"
	# without any capability: the same fix on both sides, and not the one for CAP_NET_ADMIN held
	nocap="--inh-caps=-all --bounding-set=-all"
	# shellcheck disable=SC2086 # the setpriv options are split on purpose
	if command -v setpriv >/dev/null && setpriv $nocap true 2>/dev/null; then
		lf=$(SRV_WRAP="setpriv $nocap" lib_fix rcvbuf_nocap clamp SOCKTUNE_RCVBUF=$want)
		same rcvbuf_clamp_nocap "$lf" "$(setpriv $nocap "$CLI" check --json --rcvbuf $want |
			check_json_fix)"
		check rcvbuf_clamp_nocap_text "library: '$lf'" \
			"$lf" = "fix: sysctl -w net.core.rmem_max=$want | note: or CAP_NET_ADMIN with SOCKTUNE_RCVBUF_FORCE=1 (--rcvbuf-force)"
	else
		skip rcvbuf_clamp_nocap "setpriv cannot drop capabilities here"
	fi
else
	skip rcvbuf_clamp "net.core.rmem_max=$rmem: too large to exceed"
fi
if [ "$wmem" -lt 268435456 ]; then
	want=$((wmem * 2))
	same sndbuf_clamp "$(lib_fix sndbuf clamp SOCKTUNE_SNDBUF=$want)" "$(check_fix --sndbuf $want)"
else
	skip sndbuf_clamp "net.core.wmem_max=$wmem: too large to exceed"
fi
want=$((somax * 2))
same backlog_clamp "$(lib_fix backlog clamp SOCKTUNE_BACKLOG=$want)" "$(check_fix --backlog $want)"
same congestion_unknown "$(lib_fix cong setsockopt SOCKTUNE_CONGESTION=nosuchcc)" \
	"$(check_fix --congestion nosuchcc)"
if [ $((tfo & 2)) -eq 0 ]; then
	same fastopen_off "$(lib_fix tfo fastopen-disabled SOCKTUNE_FASTOPEN=16)" \
		"$(check_fix --fastopen 16)"
else
	skip fastopen_off "net.ipv4.tcp_fastopen=$tfo: the server side is on"
fi

# SO_MARK without CAP_NET_ADMIN and CAP_NET_RAW: the capability it needs, from the table
drop="--bounding-set -net_admin,-net_raw --inh-caps -net_admin,-net_raw"
# shellcheck disable=SC2086 # the setpriv options are split on purpose
if command -v setpriv >/dev/null && setpriv $drop true 2>/dev/null; then
	SRV_WRAP="setpriv $drop" lib_fix mark setsockopt SOCKTUNE_MARK=7 >"$TMP/mark.fix"
	same mark_denied "$(cat "$TMP/mark.fix")" "$(setpriv $drop "$CLI" check --json --mark 7 |
		check_json_fix)"
	# a congestion module available but not allowed: a command with quotes in it (escaped
	# in the library's line, \"), the capability in the note
	avail=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null)
	allowed=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control 2>/dev/null)
	cc=""
	for a in $avail; do
		case " $allowed " in *" $a "*) ;; *) cc=$a ;; esac
	done
	if [ -n "$cc" ]; then
		lf=$(SRV_WRAP="setpriv $drop" lib_fix cc_denied setsockopt SOCKTUNE_CONGESTION=$cc)
		same congestion_not_allowed "$lf" "$(setpriv $drop "$CLI" check --json --congestion $cc |
			check_json_fix)"
		check congestion_not_allowed_quoted "library: '$lf'" \
			"$lf" = "fix: sysctl -w net.ipv4.tcp_allowed_congestion_control=\"$allowed $cc\" | note: or CAP_NET_ADMIN"
	else
		skip congestion_not_allowed "every available congestion module is allowed here"
	fi
else
	skip mark_denied "setpriv cannot drop CAP_NET_ADMIN here"
fi
