#!/bin/sh
# Rewrite socktune(1)'s table of keys (between the schema-begin and schema-end comments) from
# `socktune --schema`, the one table the outputs are written from: after a key is added to
# cli/record.h, run  docs/schema-man.sh build/socktune  (t_schema fails until it is).
set -eu
cmd=${1:-build/socktune}
man=$(dirname "$0")/socktune.1
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$cmd" --schema | awk '
	/^#/ { next }
	{
		name = $1; type = $2
		$1 = ""; $2 = ""; sub(/^  /, "")
		gsub(/\\/, "\\\\")
		printf ".TP\n.BR \\&%s \" (%s)\"\n%s\n", name, type, $0
	}' >"$tmp"
awk -v table="$tmp" '
	/^\.\\" schema-begin/ { print; while ((getline l < table) > 0) print l; skip = 1; next }
	/^\.\\" schema-end/ { skip = 0 }
	!skip { print }' "$man" >"$man.new"
mv "$man.new" "$man"
