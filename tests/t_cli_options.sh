#!/bin/sh
# socktune command: option parsing, good and bad, table-driven.  Good: the program sees the
# SOCKTUNE_* variable the option mirrors.  Bad: status 2, one line naming the option or
# variable and the value, and the program never started.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cli.sh"

# good NAME "SOCKTUNE_X=value" [ENV=...] -- OPTIONS...
good() {
	name=$1 want=$2
	shift 2
	envs=
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs="$envs $1"; shift; done
	shift
	out=$(env $envs "$CMD" "$@" -- "$PROBE" environ 2>"$TMP/err")
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$name" "status $rc: $(head -n 1 "$TMP/err")"
	elif printf '%s\n' "$out" | grep -qxF -- "$want"; then
		pass "$name"
	else
		fail "$name" "program did not see $want (saw: $(printf '%s\n' "$out" | grep ^SOCKTUNE_ | tr '\n' ' '))"
	fi
}

# bad NAME "text the one line must contain" [ENV=...] -- OPTIONS...
bad() {
	name=$1 want=$2
	shift 2
	envs=
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs="$envs $1"; shift; done
	shift
	rm -f "$TMP/marker"
	env $envs "$CMD" "$@" -- "$PROBE" touch "$TMP/marker" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	lines=$(wc -l <"$TMP/err")
	if [ $rc -ne 2 ]; then
		fail "$name" "status $rc, want 2"
	elif [ -e "$TMP/marker" ]; then
		fail "$name" "the program was started"
	elif [ "$lines" -ne 1 ]; then
		fail "$name" "$lines lines on stderr, want 1: $(tr '\n' '|' <"$TMP/err")"
	elif ! grep -qF -- "$want" "$TMP/err"; then
		fail "$name" "message lacks '$want': $(cat "$TMP/err")"
	else
		pass "$name"
	fi
}

good opt_rcvbuf_suffix SOCKTUNE_RCVBUF=16M -- --rcvbuf 16M
good opt_rcvbuf_equals SOCKTUNE_RCVBUF=1k -- --rcvbuf=1k
good opt_sndbuf SOCKTUNE_SNDBUF=262144 -- --sndbuf 262144
good opt_backlog SOCKTUNE_BACKLOG=4096 -- --backlog 4096
good opt_backlog_min SOCKTUNE_BACKLOG_MIN=128 -- --backlog-min 128
good opt_backlog_max SOCKTUNE_BACKLOG_MAX=65535 -- --backlog-max 65535
good opt_flag SOCKTUNE_NODELAY=1 -- --nodelay
good opt_flag_no SOCKTUNE_NODELAY=0 -- --no-nodelay
good opt_flag_value SOCKTUNE_NODELAY=off -- --nodelay=off
good opt_flag_two SOCKTUNE_RCVBUF_FORCE=1 -- --quickack --rcvbuf-force
good opt_quickack SOCKTUNE_QUICKACK=1 -- --rcvbuf-force --quickack
good opt_ports SOCKTUNE_PORTS=80,443,8000-8099 -- --ports 80,443,8000-8099
good opt_log_level SOCKTUNE_LOG=debug -- --log-level debug
good opt_log_file SOCKTUNE_LOG_FILE=/tmp/st-%p.log -- --log-file /tmp/st-%p.log
good opt_disable SOCKTUNE_DISABLE=1 -- --disable
good opt_env_kept SOCKTUNE_NODELAY=1 SOCKTUNE_NODELAY=1 -- --backlog 10
good opt_cli_wins SOCKTUNE_BACKLOG=20 SOCKTUNE_BACKLOG=10 -- --backlog 20
good opt_cli_replaces_bad_env SOCKTUNE_BACKLOG=20 SOCKTUNE_BACKLOG=zero -- --backlog 20
good opt_last_wins SOCKTUNE_BACKLOG=30 -- --backlog 20 --backlog 30

bad bad_size "--rcvbuf 12Q" -- --rcvbuf 12Q
bad bad_size_range "--rcvbuf 2G" -- --rcvbuf 2G
bad bad_size_negative "--sndbuf -1" -- --sndbuf -1
bad bad_int_zero "--backlog 0" -- --backlog 0
bad bad_int_word "--backlog-max many" -- --backlog-max many
bad bad_bool "--nodelay maybe" -- --nodelay=maybe
bad bad_no_value "--no-nodelay=1" -- --no-nodelay=1
bad bad_no_nonbool "--no-backlog" -- --no-backlog
bad bad_unknown "--bogus" -- --bogus
bad bad_unknown_short "-x" -- -x
bad bad_ports "--ports 80-70" -- --ports 80-70
bad bad_ports_zero "--ports 0" -- --ports 0
bad bad_log_level "--log-level loud" -- --log-level loud
bad bad_log_file_empty "--log-file" -- --log-file=
bad bad_json_run "--json" -- --json
bad bad_env_value "SOCKTUNE_RCVBUF=lots" SOCKTUNE_RCVBUF=lots --
bad bad_env_unknown "SOCKTUNE_NODELY=1" SOCKTUNE_NODELY=1 --
bad bad_env_range "SOCKTUNE_BACKLOG=0" SOCKTUNE_BACKLOG=0 -- --nodelay

# Missing value and missing program: no "-- touch" after them.
"$CMD" --backlog >/dev/null 2>"$TMP/err"
check bad_missing_value "status $? / $(cat "$TMP/err")" $? -eq 2 -a "$(grep -c 'backlog: missing value' "$TMP/err")" -eq 1
"$CMD" --nodelay >/dev/null 2>"$TMP/err"
check bad_no_program "status $? / $(cat "$TMP/err")" $? -eq 2 -a "$(grep -c 'no program' "$TMP/err")" -eq 1
"$CMD" check --nodelay extra >/dev/null 2>"$TMP/err"
check bad_check_argument "status $? / $(cat "$TMP/err")" $? -eq 2 -a "$(grep -c 'unexpected argument extra' "$TMP/err")" -eq 1

# Options end at the first non-option: the program's own options are left alone.
out=$("$CMD" --nodelay "$PROBE" args --backlog 2>/dev/null)
check opt_program_args "got '$out'" "$out" = "--backlog"

# Every variable of the table is an option and is in --help (options come from the table).
"$CMD" --help >"$TMP/help"
hrc=$?
n=0 missing=
for opt in $(sed -n 's/^[[:space:]]*X([A-Z_]*, *"[A-Z_]*", *"\([a-z-]*\)".*/\1/p' "$ROOT/include/socktune.h"); do
	n=$((n + 1))
	grep -q -- "--$opt\b" "$TMP/help" || missing="$missing $opt"
done
check help_lists_table "status $hrc, $n table entries, missing:$missing" $hrc -eq 0 -a $n -ge 12 -a -z "$missing"
env_missing=
for var in $(sed -n 's/^[[:space:]]*X([A-Z_]*, *"\([A-Z_]*\)".*/SOCKTUNE_\1/p' "$ROOT/include/socktune.h"); do
	grep -q "\[$var;" "$TMP/help" || env_missing="$env_missing $var"
done
check help_names_variables "missing:$env_missing" -z "$env_missing"

# Every flag of the table (no argument in --help) turns its variable on.
flags_bad= nflags=0
for opt in $(sed -n '/^Options/,/^Flags/s/^  --\([a-z-]*\) *\(  .*\)$/\1/p' "$TMP/help" | grep -v '^$'); do
	nflags=$((nflags + 1))
	var=SOCKTUNE_$(printf '%s' "$opt" | tr 'a-z-' 'A-Z_')
	case $opt in log-level) var=SOCKTUNE_LOG ;; esac
	"$CMD" "--$opt" -- "$PROBE" environ 2>/dev/null | grep -qx "$var=1" || flags_bad="$flags_bad $opt"
done
check flags_from_table "$nflags flags, not mapped:$flags_bad" -z "$flags_bad" -a $nflags -ge 4

v=$("$CMD" --version)
check version "got '$v'" "$(printf '%s' "$v" | grep -c '^socktune [0-9]')" -eq 1
