#!/bin/sh
# The bash completion (completion/socktune.bash), sourced into bash and called as readline
# would (COMP_WORDS, COMP_CWORD): subcommands, the options of the table (--nodelay), their
# values (log levels, formats), pids for attach, files for --output.  And what it offers
# cannot drift: every option of --help is offered, and every option and value offered is one
# the command accepts (each given to the parser, followed by --help: status 0).
. "$(dirname "$0")/lib.sh"
COMP=$ROOT/completion/socktune.bash

if ! command -v bash >/dev/null 2>&1; then
	skip completion "bash not installed"
	exit 0
fi

# complete WORD...: what the completion offers for these words (the last the one completed),
# one a line.
complete_words() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _socktune
		printf "%s\n" "${COMPREPLY[@]}"' sh "$COMP" "$@" 2>"$TMP/comp.err"
}

# offers NAME WANT WORD...: PASS when WANT is among the offers (a whole line).
offers() {
	_n=$1 _w=$2
	shift 2
	complete_words "$@" >"$TMP/offers"
	check "completion.$_n" "'$*' offers: $(tr '\n' ' ' <"$TMP/offers") $(cat "$TMP/comp.err")" \
		-n "$(grep -x -- "$_w" "$TMP/offers")"
}

offers subcommand-check check "$CLI" ""
offers subcommand-doctor doctor "$CLI" d
offers run-option --nodelay "$CLI" --nod
offers check-option --nodelay "$CLI" check --no
offers check-own-option --route "$CLI" check --r
offers negated-flag --no-nodelay "$CLI" check --no-n
offers log-level debug "$CLI" check --log-level d
offers log-level-equals warn "$CLI" --log-level = w
offers stats-format prometheus "$CLI" stats --format p
touch "$TMP/out.prom"
offers stats-output-file "$TMP/out.prom" "$CLI" stats --output "$TMP/out"
offers attach-pid $$ "$CLI" attach "$$"
offers doctor-seconds --seconds "$CLI" doctor --s
offers program sh "$CLI" --nodelay -- sh
complete_words "$CLI" check -- >"$TMP/offers"
check completion.no-negations-unasked "'check --' offers: $(grep -c -- '^--no-' "$TMP/offers") --no- flags" \
	-z "$(grep -- '^--no-' "$TMP/offers")" -a -n "$(grep -x -- --json "$TMP/offers")"

# ---- every option of each subcommand's --help is offered somewhere ----
for s in $("$CLI" --list-options); do "$CLI" --list-options "$s"; done | cut -f1 | cut -d' ' -f1 |
	sort -u >"$TMP/all"
# (--schema and --list-options: forms of the command alone, not options a completion adds)
missing=$(for s in "" $("$CLI" --list-options | grep -vx run); do "$CLI" $s --help; done | grep -o -- '--[a-z][a-z0-9-]*' | grep -v -- '-$' | grep -vx -- '--schema\|--list-options' | sort -u |
	while read -r o; do grep -qx -- "$o" "$TMP/all" || echo "$o"; done | tr '\n' ' ')
check completion.every-help-option "not offered: $missing" -z "$missing"

# ---- every option and value offered is accepted by the parser ----
# sample VALUE-NAME: a valid value for a command option's argument
sample() {
	case $1 in
	ADDR) echo 127.0.0.1 ;;
	PATH | FILE) echo "$TMP/x" ;;
	SIZE | N | SECONDS | MS | QLEN | HOPS | BYTES/S) echo 1 ;;
	*) echo "" ;;
	esac
}
bad="" tried=0
if "$CLI" doctor --help >/dev/null 2>&1; then subs=$("$CLI" --list-options); else
	subs=$("$CLI" --list-options | grep -vx doctor)
	skip completion.doctor-accepted "this socktune has no doctor subcommand yet"
fi
for s in $subs; do
	pre=$s
	[ "$s" = run ] && pre=""
	"$CLI" --list-options "$s" >"$TMP/opts.$s"
	while IFS='	' read -r spec vals; do
		o=${spec%% *} a=""
		[ "$o" = "$spec" ] || a=${spec#* }
		set -- $vals
		[ $# -gt 0 ] || set -- "$(sample "$a")"
		for v in "$@"; do
			[ -n "$a" ] && [ -z "$v" ] && continue # a value with no sample (LIST, DURATION, ...)
			tried=$((tried + 1))
			if [ -n "$a" ]; then
				# shellcheck disable=SC2086 # pre is empty or one word
				"$CLI" $pre "$o" "$v" --help >/dev/null 2>"$TMP/acc.err" || bad="$bad $s:$o $v ($(head -c 80 "$TMP/acc.err"));"
			else
				# shellcheck disable=SC2086
				"$CLI" $pre "$o" --help >/dev/null 2>"$TMP/acc.err" || bad="$bad $s:$o ($(head -c 80 "$TMP/acc.err"));"
			fi
		done
	done <"$TMP/opts.$s"
done
check completion.offers-are-accepted "$tried tried, refused:$bad" -z "$bad" -a "$tried" -gt 100
"$CLI" --list-options nosuch >/dev/null 2>"$TMP/sub.err"
rc=$?
check completion.unknown-subcommand "status $rc: $(cat "$TMP/sub.err")" $rc -eq 2 -a \
	-n "$(grep 'not a subcommand' "$TMP/sub.err")"
