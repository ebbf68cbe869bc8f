#!/bin/sh
# Documentation drift.  Fails when:
#  - a SOCKTUNE_ variable the code reads (ST_VARIABLES in include/socktune.h, plus any other
#    SOCKTUNE_ name in shim/, common/, cli/ and include/*.h, such as SOCKTUNE_LIBRARY) has no entry in
#    docs/libsocktune.7 or no row in the README's variable table;
#  - the docs (README.md, docs/*, examples/) name a SOCKTUNE_ variable the code does not read;
#  - an --option printed by `socktune --help` or a subcommand's --help is missing from
#    docs/socktune.1;
#  - a metric family socktune watch exports (cli/watch/watchprom.c's table, cli/promtext.h's
#    shared ones) is not named in docs/socktune.1;
#  - a man page does not render cleanly (groff -ww).
# The checks first run once against copies with a known drift put in, so a check that
# silently stopped matching anything is itself a failure.
. "$(dirname "$0")/lib.sh"

cd "$ROOT" || exit 1

# ---- what the code reads ----
code_vars() {
	# X(RCVBUF, "RCVBUF", ...) -> SOCKTUNE_RCVBUF
	sed -n 's/^[[:space:]]*X([A-Z0-9_]*, "\([A-Z0-9_]*\)".*/SOCKTUNE_\1/p' include/socktune.h
	# every other name in the code (header guards are not variables)
	cat shim/*.c common/*.c cli/*.c cli/*/*.c include/*.h | grep -o 'SOCKTUNE_[A-Z][A-Z0-9_]*' | grep -v '_H$'
}
code_vars | sort -u >"$TMP/code"
n_table=$(grep -c '^[[:space:]]*X([A-Z0-9_]*, "' include/socktune.h)
n_code=$(wc -l <"$TMP/code")
check code-variables "found $n_code names, $n_table in ST_VARIABLES (parsing socktune.h broke?)" \
	"$n_table" -ge 20 -a "$n_code" -gt "$n_table"
grep -qx SOCKTUNE_LIBRARY "$TMP/code" || fail code-variables "SOCKTUNE_LIBRARY not found in the code"

# ---- the checks, as functions over given files, so they can be tried on broken copies ----

# man_missing MAN7: variables of $TMP/code without an entry (.BI/.BR/.B SOCKTUNE_X=) there.
man_missing() {
	while read -r v; do
		grep -q "^\.B[IR]* $v=" "$1" 2>/dev/null || echo "$v"
	done <"$TMP/code"
}

# readme_missing README: variables of $TMP/code without a table row (| ... SOCKTUNE_X ...).
readme_missing() {
	while read -r v; do
		grep '^[[:space:]]*|' "$1" 2>/dev/null | grep -q "$v\([^A-Z0-9_]\|$\)" || echo "$v"
	done <"$TMP/code"
}

# unknown_names FILE...: SOCKTUNE_ names the docs use that the code does not read.
unknown_names() {
	cat "$@" | grep -o 'SOCKTUNE_[A-Z][A-Z0-9_]*' | sort -u | while read -r v; do
		grep -qx "$v" "$TMP/code" || echo "$v"
	done
}

# all_help: every subcommand's --help (those the command lists), the wrapper's first
all_help() {
	for _s in "" $("$CLI" --list-options | grep -vx run); do
		# shellcheck disable=SC2086 # none or one word
		"$CLI" $_s --help
	done
}

# options_missing MAN1: --options of any --help that MAN1 does not list as an item
# (the tag line after .TP; a mention in passing does not count).
options_missing() {
	# the tags, with \- as - and font escapes gone
	awk 'prev == ".TP" { print } { prev = $0 }' "$1" |
		sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' >"$TMP/man1.txt"
	all_help | grep -o -- '--[a-z][a-z0-9-]*' | grep -v -- '-$' | sort -u | while read -r o; do
		grep -q -- "$o\([^a-z0-9-]\|$\)" "$TMP/man1.txt" || echo "$o"
	done
}

# ---- self-test: each check must catch a drift put in on purpose ----
sed '/^\.BI SOCKTUNE_MARK=/d' docs/libsocktune.7 >"$TMP/bad.7"
printf '| SOCKTUNE_NODELAY | boolean | x |\n' >"$TMP/bad.md"
printf 'run with SOCKTUNE_NO_SUCH_THING=1\n' >"$TMP/bad.txt"
sed '/^\.B \\-\\-rcvbuf\\-force$/d' docs/socktune.1 >"$TMP/bad.1"
check selftest-man7 "dropping SOCKTUNE_MARK's entry went unnoticed" \
	"$(man_missing "$TMP/bad.7")" = SOCKTUNE_MARK
check selftest-readme "a README table of one row was not reported" \
	"$(readme_missing "$TMP/bad.md" | grep -c .)" -eq $((n_code - 1))
check selftest-unknown "SOCKTUNE_NO_SUCH_THING went unnoticed" \
	"$(unknown_names "$TMP/bad.txt")" = SOCKTUNE_NO_SUCH_THING
if [ -x "$CLI" ]; then
	check selftest-options "dropping --rcvbuf-force from the page went unnoticed" \
		"$(options_missing "$TMP/bad.1")" = --rcvbuf-force
fi

# ---- the real documents ----
for f in docs/libsocktune.7 docs/socktune.1 README.md; do
	[ -f "$f" ] || fail "exists-$(basename "$f")" "$f is missing"
done

m=$(man_missing docs/libsocktune.7 | tr '\n' ' ')
check man7-every-variable "no entry in docs/libsocktune.7 for: $m" -z "$m"

m=$(readme_missing README.md | tr '\n' ' ')
check readme-every-variable "no row in README.md's variable table for: $m" -z "$m"

docs=$(find README.md docs examples -type f ! -name '*.svg' ! -name '*.png' 2>/dev/null | sort)
bad=""
for f in $docs; do
	u=$(unknown_names "$f" | tr '\n' ' ')
	[ -n "$u" ] && bad="$bad $f: $u;"
done
check docs-name-only-real-variables "names the code does not read:$bad" -z "$bad"

if [ -x "$CLI" ]; then
	m=$(options_missing docs/socktune.1 | tr '\n' ' ')
	check man1-every-option "options of the --help texts missing from docs/socktune.1: $m" -z "$m"
else
	fail man1-every-option "$CLI not built"
fi

# ---- every metric family of socktune watch named in socktune(1) ----
watch_families() {
	grep -ho '"socktune_[a-z_]*"' cli/watch/watchprom.c cli/promtext.h | tr -d '"' | sort -u
}
# families_missing MAN1: the families MAN1 does not name (as a word: a longer name that
# starts with one is not it)
families_missing() {
	watch_families | while read -r n; do
		grep -q "$n\([^a-z_]\|$\)" "$1" || echo "$n"
	done
}
nf=$(watch_families | grep -c .)
check watch-families-found "found $nf families in cli/watch/watchprom.c and cli/promtext.h" "$nf" -ge 30
sed '/socktune_listener_rtt_seconds/d' docs/socktune.1 >"$TMP/fam.1"
check selftest-watch-families "dropping socktune_listener_rtt_seconds from the page went unnoticed" \
	"$(families_missing "$TMP/fam.1")" = socktune_listener_rtt_seconds
m=$(families_missing docs/socktune.1 | tr '\n' ' ')
check man1-every-watch-family "families socktune watch exports missing from docs/socktune.1: $m" -z "$m"

# ---- the capability an option needs: the table's one text (--help prints it from the
# table's needs) in the option's entry of each document, and no other ----
# needs_list: "option<TAB>variable<TAB>needs" for each entry of --help with "(needs ...)"
needs_list() {
	"$CLI" --help | awk '/^  --/ { if (o) print o "\t" t; o = $1; t = $0; next }
		/^      / { t = t " " $0; next } { if (o) print o "\t" t; o = "" }' | tr -s ' ' |
		sed -n 's/^\(--[a-z-]*\)\t.*(needs \(CAP_[A-Z_]*\( or CAP_[A-Z_]*\)*\)) \[\(SOCKTUNE_[A-Z_]*\);.*/\1\t\4\t\2/p'
}
# caps_in TEXT: every capability phrase ("CAP_A or CAP_B") of TEXT, one a line
caps_in() {
	printf '%s\n' "$1" | tr -s ' \n' '  ' | grep -o 'CAP_[A-Z_]*\( or CAP_[A-Z_]*\)*' | sort -u
}
# needs_drift MAN1 MAN7 README: "doc option: found" for each entry that says another text
needs_drift() {
	needs_list | while IFS="$(printf '\t')" read -r o v n; do
		m1=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$1" | awk -v o="$o" '
			prev == ".TP" { on = $0 ~ ("^[.]B[IR]* " o "( |$)") }
			on && $0 != ".TP" { print } { prev = $0 }')
		m7=$(awk -v v="$v" 'index($0, v "=") { on = 1 } on && /^\.TP/ { on = 0 } on' "$2")
		rd=$(grep "^| \`$v\`" "$3")
		for d in "socktune.1:$m1" "libsocktune.7:$m7" "README.md:$rd"; do
			c=$(caps_in "${d#*:}")
			[ "$c" = "$n" ] || echo "${d%%:*} $o: '$(printf '%s' "$c" | tr '\n' '|')', want '$n'"
		done
	done
}
if [ -x "$CLI" ]; then
	nn=$(needs_list | grep -c .)
	check needs-found "--help names $nn options with (needs ...)" "$nn" -ge 2
	sed 's/^SO_MARK: a number.*/SO_MARK (needs CAP_NET_ADMIN)./' docs/socktune.1 >"$TMP/needs.1"
	check selftest-needs "the old --mark text went unnoticed" \
		-n "$(needs_drift "$TMP/needs.1" docs/libsocktune.7 README.md | grep 'socktune.1 --mark')"
	d=$(needs_drift docs/socktune.1 docs/libsocktune.7 README.md | tr '\n' ';')
	check needs-one-text "capability texts that are not the table's: $d" -z "$d"
fi

# ---- the pages render without warnings ----
if command -v groff >/dev/null 2>&1; then
	for f in docs/*.1 docs/*.7; do
		w=$(groff -man -ww -z "$f" 2>&1)
		check "renders-$(basename "$f")" "groff -man -ww: $w" -z "$w"
	done
else
	skip renders "groff not installed"
fi

# ---- advice for operators, kept where they look ----
# a daemonizing server (listen, fork, the parent exits) and %p in SOCKTUNE_LOG_FILE
check daemon-log-man7 "docs/libsocktune.7's SOCKTUNE_LOG_FILE says nothing of daemonizing servers" \
	-n "$(sed -n '/^\.BI SOCKTUNE_LOG_FILE=/,/^\.TP/p' docs/libsocktune.7 | grep 'daemonizes')"
check daemon-log-troubleshooting "docs/troubleshooting.md has no entry for daemons and %p" \
	-n "$(grep -i '^## .*daemon' docs/troubleshooting.md)" -a \
	-n "$(grep 'For daemonizing servers use a path without `%p`' docs/troubleshooting.md)"
# TCP_NODELAY alone moving the delayed-ACK wait to a client with Nagle on: say so, advise
# --quickack with it
for f in docs/libsocktune.7 docs/socktune.1; do
	check "nodelay-stall-$(basename "$f")" "$f does not say NODELAY can move the delayed-ACK wait" \
		-n "$(tr '\n' ' ' <"$f" | grep -io 'NODELAY.\{0,80\}move the delayed\\-ACK wait.\{0,120\}quickack')"
done
check nodelay-stall-troubleshooting "docs/troubleshooting.md lacks the NODELAY + client Nagle entry" \
	-n "$(grep 'use `--quickack` with `--nodelay`' docs/troubleshooting.md)"
