#!/bin/sh
# An option on the command line wins over its SOCKTUNE_* variable; when the variable held
# another value, the wrapper says so on stderr, one line naming the option and the variable
# with both values (a bad value with its error), and the program runs with the option's value
# (before: nothing said, so a Dockerfile ENV or a ConfigMap that an entrypoint's option
# overrode changed nothing, silently).  The same value, however spelled (yes and 1), is not
# an override; a bad variable no option replaces still exits 2 before anything runs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cli.sh"

# case NAME STATUS SEEN LINES WANT ENV... -- OPTIONS...: the run ends with STATUS, the program
# sees SEEN (VAR=value, "-" when it must not start), stderr has LINES lines of which one
# holds WANT ("" when LINES is 0)
case_() {
	name=$1 want_rc=$2 seen=$3 lines=$4 want=$5
	shift 5
	envs=
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs="$envs $1"; shift; done
	shift
	# shellcheck disable=SC2086 # the VAR=value words
	env $envs "$CMD" "$@" -- "$PROBE" environ >"$TMP/o" 2>"$TMP/e"
	rc=$?
	got=$(grep -c . "$TMP/e")
	ok=1
	[ "$rc" = "$want_rc" ] || ok=0
	[ "$got" = "$lines" ] || ok=0
	if [ "$seen" = - ]; then
		[ -s "$TMP/o" ] && ok=0
	else
		grep -qxF -- "$seen" "$TMP/o" || ok=0
	fi
	[ -z "$want" ] || grep -qF -- "$want" "$TMP/e" || ok=0
	check "$name" "status $rc (want $want_rc), $got lines on stderr (want $lines${want:+, one with '$want'}): $(tr '\n' '|' <"$TMP/e"); program saw: $(grep ^SOCKTUNE_ "$TMP/o" | tr '\n' ' ')" \
		"$ok" = 1
}

case_ override_said 0 SOCKTUNE_BACKLOG=4096 1 \
	"socktune: --backlog 4096 overrides SOCKTUNE_BACKLOG=1024 from the environment" \
	SOCKTUNE_BACKLOG=1024 -- --backlog 4096
case_ override_flag_said 0 SOCKTUNE_NODELAY=1 1 \
	"socktune: --nodelay=1 overrides SOCKTUNE_NODELAY=0 from the environment" \
	SOCKTUNE_NODELAY=0 -- --nodelay
case_ override_bad_named 0 SOCKTUNE_BACKLOG=4096 1 \
	"socktune: --backlog 4096 overrides SOCKTUNE_BACKLOG=lots from the environment (which is not valid: not a whole number)" \
	SOCKTUNE_BACKLOG=lots -- --backlog 4096
case_ override_two 0 SOCKTUNE_RCVBUF=1M 2 "SOCKTUNE_RCVBUF=64K" \
	SOCKTUNE_RCVBUF=64K SOCKTUNE_BACKLOG=10 -- --backlog 20 --rcvbuf 1M
case_ same_value_silent 0 SOCKTUNE_NODELAY=1 0 "" SOCKTUNE_NODELAY=yes -- --nodelay
case_ same_size_silent 0 SOCKTUNE_RCVBUF=1M 0 "" SOCKTUNE_RCVBUF=1048576 -- --rcvbuf 1M
case_ no_variable_silent 0 SOCKTUNE_BACKLOG=4096 0 "" -- --backlog 4096
case_ bad_not_overridden 2 - 1 "socktune: SOCKTUNE_BACKLOG=lots: not a whole number" \
	SOCKTUNE_BACKLOG=lots -- --nodelay
# check and attach read the same policy: the same line
SOCKTUNE_BACKLOG=1024 "$CMD" check --backlog 2048 >/dev/null 2>"$TMP/c"
check override_said_by_check "$(cat "$TMP/c")" \
	"$(grep -c 'socktune: --backlog 2048 overrides SOCKTUNE_BACKLOG=1024 from the environment' "$TMP/c")" = 1
