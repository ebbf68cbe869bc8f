#!/bin/sh
# What a first try at the command runs into, each refused or corrected with a message that
# says what to do: a flag followed by a boolean word, a negative number, a misspelt option
# or variable, an algorithm the kernel does not have, the --help columns.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cli.sh"

# refused NAME "text the one line must contain" CMD...: status 2, one line on stderr with
# the text, and the marker file the program would have made absent.
refused() {
	_rn=$1 _rw=$2
	shift 2
	rm -f "$TMP/marker"
	"$@" >"$TMP/out" 2>"$TMP/err"
	_rc=$?
	if [ $_rc -ne 2 ]; then
		fail "$_rn" "status $_rc, want 2: $(cat "$TMP/err")"
	elif [ -e "$TMP/marker" ]; then
		fail "$_rn" "the program was started"
	elif [ "$(wc -l <"$TMP/err")" -ne 1 ]; then
		fail "$_rn" "want one line on stderr: $(tr '\n' '|' <"$TMP/err")"
	elif ! grep -qF -- "$_rw" "$TMP/err"; then
		fail "$_rn" "message lacks '$_rw': $(cat "$TMP/err")"
	else
		pass "$_rn"
	fi
}

# ---- a flag followed by a boolean word: that word would be the program
refused flag_word_dashdash "socktune: --nodelay 1: '1' would be the program; a flag takes its value after '=': --nodelay=1, or just --nodelay" \
	"$CMD" --nodelay 1 -- "$PROBE" touch "$TMP/marker"
refused flag_word_true "--nodelay=true, or just --nodelay" \
	"$CMD" --nodelay true -- "$PROBE" touch "$TMP/marker"
refused flag_word_yes "'yes' would be the program" "$CMD" --nodelay yes -- echo hi
refused flag_word_args "--quickack=on, or just --quickack" \
	"$CMD" --quickack on "$PROBE" touch "$TMP/marker"
refused flag_word_false "--nodelay=off, or just --no-nodelay" "$CMD" --nodelay off
refused flag_word_alone "'1' would be the program" "$CMD" --nodelay 1
refused flag_word_negated "--no-nodelay takes no value" "$CMD" --no-nodelay 0 -- "$PROBE" touch "$TMP/marker"
refused flag_word_check "'1' would be an argument (check takes none)" "$CMD" check --nodelay 1
refused flag_word_attach "--nodelay 1: '1' would be a target (pid 1); a flag takes its value after '=': --nodelay=1" \
	"$CMD" attach --nodelay 1 999999
# what still runs: the value after '=', and a program named true with no arguments
out=$("$CMD" --nodelay=1 -- "$PROBE" env SOCKTUNE_NODELAY 2>&1)
check flag_word_equals "got '$out'" "$out" = SOCKTUNE_NODELAY=1
"$CMD" --nodelay true 2>"$TMP/err"
rc=$?
check flag_word_program_true "status $rc: $(cat "$TMP/err")" $rc -eq 0 -a ! -s "$TMP/err"

# ---- a negative number is out of range, and says the range (options and environment:
# one parser, one message)
refused range_option "socktune: --backlog -1: out of range (1..2147483647)" "$CMD" --backlog=-1 -- "$PROBE" touch "$TMP/marker"
refused range_option_sep "--backlog -1: out of range (1..2147483647)" "$CMD" --backlog -1 -- "$PROBE" touch "$TMP/marker"
refused range_size "--rcvbuf -16M: out of range (1..1073741824 bytes)" "$CMD" --rcvbuf=-16M -- true
refused range_usec "--delack-max -5ms: out of range (4001us..200000us" "$CMD" --delack-max=-5ms -- true
refused range_env "socktune: SOCKTUNE_BACKLOG=-1: out of range (1..2147483647)" env SOCKTUNE_BACKLOG=-1 "$CMD" -- "$PROBE" touch "$TMP/marker"
refused range_not_number "--backlog -1x: not a whole number" "$CMD" --backlog=-1x -- true
ts_serve range_lib 4 1 LD_PRELOAD="$LIB" SOCKTUNE_BACKLOG=-1 -- -4 || true
l=$(grep 'event=config' "$TMP/range_lib.err")
check range_library "config line: $l" -n "$(printf '%s' "$l" | grep -F 'variable=SOCKTUNE_BACKLOG value="-1" error="out of range (1..2147483647)"')"

# ---- did you mean: options and variables, one edit distance for both
refused suggest_option "socktune: unknown option --nodeley (did you mean --nodelay? see socktune --help)" \
	"$CMD" --nodeley -- "$PROBE" touch "$TMP/marker"
refused suggest_negated "unknown option --no-nodeley (did you mean --no-nodelay?" "$CMD" --no-nodeley -- true
refused suggest_none "unknown option --frobnicate (see socktune --help)" "$CMD" --frobnicate -- true
refused suggest_env "socktune: SOCKTUNE_NODELEY=1: unknown variable (did you mean SOCKTUNE_NODELAY?)" \
	env SOCKTUNE_NODELEY=1 "$CMD" -- "$PROBE" touch "$TMP/marker"
# the library: one line, on stderr (never stdout), through its log
ts_serve suggest_lib 4 1 LD_PRELOAD="$LIB" SOCKTUNE_NODELEY=1 -- -4 || true
l=$(grep 'event=config' "$TMP/suggest_lib.err")
check suggest_library "config lines: $l" "$(printf '%s\n' "$l" | grep -c .)" -eq 1 -a \
	-n "$(printf '%s' "$l" | grep -F 'level=warn event=config variable=SOCKTUNE_NODELEY value="1" error="unknown variable (did you mean SOCKTUNE_NODELAY?)"')" -a \
	-z "$(grep socktune "$TMP/suggest_lib.out")"

# ---- --help: a name never runs into its description
"$CMD" --help >"$TMP/help"
# an option line is two blanks, the option (and one argument word), then either the end of
# the line or two blanks at least before the text
bad=$(grep '^  -' "$TMP/help" | grep -v '^  \(-[^ ]*\)\( [^ ][^ ]*\)\{0,1\}\(  .*\)\{0,1\}$')
check help_columns "lines that run into their text: $bad" -z "$bad" -a "$(grep -c '^  --' "$TMP/help")" -ge 40
ka=$(grep -A1 -- '^  --keepalive' "$TMP/help" | tr '\n' '|')
check help_keepalive "got: $ka" -n "$(printf '%s' "$ka" | grep '^  --keepalive on|IDLE:INTVL:CNT|  *SO_KEEPALIVE')"
# the self-test: the old line is caught
check help_columns_selftest "the check missed a name run into its text" \
	"$(printf '  --keepalive on|IDLE:INTVL:CNT SO_KEEPALIVE, with\n' |
		grep -vc '^  \(-[^ ]*\)\( [^ ][^ ]*\)\{0,1\}\(  .*\)\{0,1\}$')" -eq 1

# ---- a congestion control the kernel does not have: refused before anything runs, and
# called missing (not "add it to the allowed list")
avail=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null)
if [ -n "$avail" ]; then
	refused congestion_option "socktune: --congestion nosuchcc: missing: this kernel has no nosuchcc, built in or as a module (available: $avail)" \
		"$CMD" --congestion nosuchcc -- "$PROBE" touch "$TMP/marker"
	refused congestion_env "socktune: SOCKTUNE_CONGESTION=nosuchcc: missing:" \
		env SOCKTUNE_CONGESTION=nosuchcc "$CMD" -- "$PROBE" touch "$TMP/marker"
	refused congestion_attach_mode "--congestion nosuchcc: missing:" \
		"$CMD" --attach --congestion nosuchcc -- "$PROBE" touch "$TMP/marker"
	first=${avail%% *}
	out=$("$CMD" --congestion "$first" -- "$PROBE" env SOCKTUNE_CONGESTION 2>&1)
	check congestion_available_runs "--congestion $first: $out" "$out" = "SOCKTUNE_CONGESTION=$first"
	# the library (a program started without the command) and check: missing, the available
	# list, no allowed list in the fix
	ts_serve congestion_lib 4 1 LD_PRELOAD="$LIB" SOCKTUNE_CONGESTION=nosuchcc -- -4 || true
	l=$(log_line congestion_lib setsockopt)
	check congestion_library "line: $l" -n "$(printf '%s' "$l" | grep -F 'reason=missing')" -a \
		-z "$(field "$l" fix.0)" -a "$(field "$l" note | grep -c allowed)" -eq 0 -a \
		"$(field "$l" note)" = "use one of the available: $avail"
	r=$("$CMD" check --json --congestion nosuchcc | json_get - options.0.reason)
	check congestion_check "reason: $r" "$r" = "missing: this kernel has no nosuchcc, built in or as a module (available: $avail)"
else
	skip congestion_option "no net.ipv4.tcp_available_congestion_control here"
fi

# ---- the capability SO_MARK and IP_TRANSPARENT need, measured: each of CAP_NET_ADMIN and
# CAP_NET_RAW alone is enough (the table's "CAP_NET_ADMIN or CAP_NET_RAW", the one text of
# --help and the docs: t_docs), none is not (t_options, t_fix_same)
for cap in net_raw net_admin; do
	only="--inh-caps=-all --bounding-set=-all,+$cap"
	# shellcheck disable=SC2086 # the setpriv options are split on purpose
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && setpriv $only true 2>/dev/null; then
		(
			export SOCKTUNE_MARK=7 SOCKTUNE_TRANSPARENT=1
			SRV_WRAP="setpriv $only" opt_serve "only_$cap" 4 1 --read tr=0:19
		)
		m=$(json_get "$TMP/only_$cap.out" mark 2) t=$(json_get "$TMP/only_$cap.out" tr 2)
		check "capability_only_$cap" "mark '$m' transparent '$t' (want 7, 1): $(cat "$TMP/only_$cap.err")" \
			"$m" = 7 -a "$t" = 1 -a -z "$(grep 'option=mark\|option=transparent' "$TMP/only_$cap.err")"
	else
		skip "capability_only_$cap" "not root, or setpriv cannot keep only CAP_${cap} here"
	fi
done

# ---- a dry run: the clamp line and the listen line say the same effective value (what the
# policy would give), the listen line what the socket has now, and nothing changes
somax=$(cat /proc/sys/net/core/somaxconn)
rmem=$(cat /proc/sys/net/core/rmem_max)
big=$((somax + 1000)) rbig=$((rmem * 2))
if ts_serve dry 4 1 LD_PRELOAD="$LIB" SOCKTUNE_DRY_RUN=1 SOCKTUNE_BACKLOG=$big SOCKTUNE_RCVBUF=$rbig -- -4; then
	cb=$(grep 'event=clamp option=backlog' "$TMP/dry.err") cr=$(grep 'event=clamp option=rcvbuf' "$TMP/dry.err")
	l=$(log_line dry listen)
	check dry_backlog_agrees "clamp: $cb / listen: $l" \
		"$(field "$cb" effective)" = "$somax" -a "$(field "$l" backlog.effective)" = "$somax" -a \
		"$(field "$l" backlog.now)" = "$(ts_val dry LISTENER backlog)" -a "$(field "$l" dry_run)" = 1
	check dry_rcvbuf_agrees "clamp: $cr / listen: $l" \
		"$(field "$cr" effective)" = $((rmem * 2)) -a "$(field "$l" rcvbuf.effective)" = $((rmem * 2)) -a \
		-n "$(field "$l" rcvbuf.now)"
	check dry_changes_nothing "listener backlog $(ts_val dry LISTENER backlog), rcvbuf now $(field "$l" rcvbuf.now)" \
		"$(ts_val dry LISTENER backlog)" != "$somax" -a "$(field "$l" rcvbuf.now)" != $((rmem * 2))
fi

# ---- make demo without ss: what is missing, said once, with the Debian package
mkdir "$TMP/path"
for d in $(printf '%s' "$PATH" | tr ':' ' '); do
	[ -d "$d" ] || continue
	for f in "$d"/*; do
		n=${f##*/}
		[ "$n" = ss ] || [ -e "$TMP/path/$n" ] || [ ! -x "$f" ] || ln -s "$f" "$TMP/path/$n"
	done
done
PATH=$TMP/path BUILD=$B sh "$ROOT/examples/demo.sh" >"$TMP/demo.out" 2>"$TMP/demo.err"
rc=$?
check demo_names_missing "status $rc, stderr: $(head -c 600 "$TMP/demo.err")" $rc -eq 1 -a \
	"$(cat "$TMP/demo.err")" = "demo: missing ss (Debian package iproute2); on Debian: apt-get install python3 iproute2" -a \
	! -s "$TMP/demo.out"

# ---- make test's last lines: the skip reasons grouped, then the count line, last
mkdir -p "$TMP/suite/tests"
cp "$ROOT/tests/run.sh" "$TMP/suite/tests/run.sh"
printf 'echo "PASS one"\necho "SKIP v6: no IPv6 here"\necho "SKIP mark: setpriv missing"\n' >"$TMP/suite/tests/t_a.sh"
printf 'echo "PASS two"\necho "SKIP v6_too: no IPv6 here"\n' >"$TMP/suite/tests/t_b.sh"
TESTS='' BUILD="$TMP/suite/build" sh "$TMP/suite/tests/run.sh" >"$TMP/suite.out" 2>&1
tail -n 5 "$TMP/suite.out" >"$TMP/suite.tail"
printf '%s\n' "skipped, by reason:" "  no IPv6 here: t_a/v6, t_b/v6_too" "  setpriv missing: t_a/mark" "" \
	"2 passed, 0 failed, 3 skipped" >"$TMP/suite.want"
check summary_skip_reasons "last lines: $(tr '\n' '|' <"$TMP/suite.tail")" \
	-z "$(diff "$TMP/suite.want" "$TMP/suite.tail")"
rm "$TMP/suite/tests/t_a.sh" "$TMP/suite/tests/t_b.sh"
printf 'echo "PASS one"\n' >"$TMP/suite/tests/t_c.sh"
TESTS='' BUILD="$TMP/suite/build" sh "$TMP/suite/tests/run.sh" >"$TMP/suite.out" 2>&1
check summary_no_skips "last lines: $(tail -n 3 "$TMP/suite.out" | tr '\n' '|')" \
	"$(tail -n 1 "$TMP/suite.out")" = "1 passed, 0 failed" -a -z "$(grep 'skipped, by reason' "$TMP/suite.out")"
# the README states the closing line as it is printed
check readme_closing_line "README.md: $(grep 'make test' "$ROOT/README.md" | head -n 2 | tr '\n' '|')" \
	-n "$(grep -F '"N passed, N failed, N skipped"' "$ROOT/README.md")"
