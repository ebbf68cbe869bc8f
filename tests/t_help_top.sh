#!/bin/sh
# `socktune --help` (the top-level help) names every subcommand the command dispatches and
# the forms it takes alone on its command line.  The lists come from the code, not from a
# copy: the rows of cli/subcommands.c's table (subcommands[]), any word main() would compare
# its first argument with (`strcmp(argv[1], "...")`, cli/main.c) or parse_args() its
# arguments with (cli/args.c), and the --forms of main().  Each subcommand must be in the
# usage line and have a line of its own under "Subcommands"; each --form must have a line of
# its own (before, detach, --schema and --list-options were missing).
. "$(dirname "$0")/lib.sh"
[ -x "$CLI" ] || { fail help_top "$CLI not built"; exit 0; }
cd "$ROOT" || exit 1

"$CLI" --help >"$TMP/help" 2>&1
rc=$?
check help_top.status "status $rc" "$rc" = 0

# the subcommands: the rows of subcommands.c ({"name", "summary", ...), main()'s argv[1]
# comparisons that are words, parse_args' argv[i] comparisons with words
subs=$( (sed -n '/^const struct subcommand subcommands\[\] = {/,/^};/p' cli/subcommands.c |
		sed -n 's/^[[:space:]]*{"\([a-z]*\)",.*/\1/p'
	grep -o 'strcmp(argv\[1\], "[a-z][a-z]*")' cli/main.c | sed 's/.*"\(.*\)")/\1/'
	sed -n '/^enum cli_status parse_args/,/^}/p' cli/args.c | grep -o 'strcmp(argv\[i\], "[a-z][a-z]*")' |
		sed 's/.*"\(.*\)")/\1/') | sort -u)
forms=$(grep -o 'strcmp(argv\[1\], "--[a-z-]*")' cli/main.c | sed 's/.*"\(.*\)")/\1/' | sort -u)
check help_top.found "from the code: subcommands '$(echo $subs)', forms '$(echo $forms)'" \
	"$(echo "$subs" | grep -c .)" -ge 7 -a "$(echo "$forms" | grep -c .)" -ge 2

# what the command lists for the completion is the same list
listed=$("$CLI" --list-options | grep -vx run | sort)
check help_top.listed "--list-options: '$(echo $listed)'" "$(echo $listed)" = "$(echo $subs)"

usage=$(sed -n '/^usage:/,/^$/p' "$TMP/help")
section=$(sed -n '/^Subcommands/,/^$/p' "$TMP/help")
for s in $subs; do
	in_usage=$(printf '%s\n' "$usage" | grep -c "[ |]$s[ |]")
	has_line=$(printf '%s\n' "$section" | grep -c "^  $s  ")
	check "help_top.subcommand.$s" "in the usage lines: $in_usage, its line under Subcommands: $has_line" \
		"$in_usage" -ge 1 -a "$has_line" = 1
	# and its own help is there, as the top-level help says
	"$CLI" "$s" --help >/dev/null 2>&1
	check "help_top.subcommand.$s.help" "socktune $s --help: status $?" $? = 0
done
for o in $forms; do
	in_usage=$(printf '%s\n' "$usage" | grep -c -- "[ |]$o[ |]*")
	has_line=$(grep -c -- "^  $o\( \|$\)" "$TMP/help")
	check "help_top.form$o" "in the usage lines: $in_usage, a line of its own: $has_line" \
		"$in_usage" -ge 1 -a "$has_line" = 1
done
