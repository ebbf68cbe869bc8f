#!/bin/sh
# The layout docs/design.md describes holds: every source file is short enough to read in
# one sitting (under 600 lines); no two of the library's files, and no two of the command's,
# depend on each other (read from the symbols each object defines and uses: a cycle of any
# length fails); and the command's folders are layered: cli/host/ (the host view) uses
# nothing of the command but itself (common/ and libc apart), and a subcommand's folder uses
# no other subcommand's, only cli/host/, cli/findings/ and the top of cli/.
. "$(dirname "$0")/lib.sh"

long=$(cd "$ROOT" && wc -l shim/*.[ch] common/*.[ch] cli/*.[ch] cli/*/*.[ch] include/*.h |
	awk '$2 != "total" && $1 >= 600 { printf "%s (%d) ", $2, $1 }')
check files_under_600_lines "too long: $long" -z "$long"

# The layering below, for headers too: a file in a subcommand's folder includes no header of
# another subcommand's folder (each "x.h" resolved against the folders the command is built
# with), so what two subcommands share lives in cli/findings/, cli/host/ or the top of cli/.
(cd "$ROOT" && for f in cli/*/*.[ch]; do
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
		while read -r h; do
			for d in cli/*/; do
				[ -f "$d$h" ] && echo "$f ${d%/} $h"
			done
		done
done) | awk '{
	split($1, p, "/"); split($2, q, "/")
	if (p[2] != q[2] && q[2] != "host" && q[2] != "findings")
		printf "%s includes %s/%s\n", $1, $2, $3
}' >"$TMP/cli.includes"
check cli_header_layers "includes across layers: $(cat "$TMP/cli.includes")" \
	! -s "$TMP/cli.includes"

if ! command -v nm >/dev/null; then
	skip library_files_acyclic "no nm"
	skip cli_files_acyclic "no nm"
	skip cli_layers "no nm"
	exit 0
fi

# deps NAME=OBJECT...: "A B SYMBOL" for each symbol object A uses that object B defines,
# B not A (an object's name: its source's path without .c).
deps() {
	$PY - "$@" <<'EOF'
import subprocess, sys
defs, uses = {}, {}
for arg in sys.argv[1:]:
    name, o = arg.split("=", 1)
    uses[name] = set()
    for l in subprocess.run(["nm", o], capture_output=True, text=True).stdout.splitlines():
        p = l.split()
        if len(p) == 3 and p[1] in "TDBRC":
            defs[p[2]] = name
        elif len(p) == 2 and p[0] == "U":
            uses[name].add(p[1])
for f in sorted(uses):
    for s in sorted(uses[f]):
        if s in defs and defs[s] != f:
            print(f, defs[s], s)
EOF
}

# cycles < deps: each cycle of files, "a -> b -> a", one a line
cycles() {
	$PY -c '
import collections, sys
dep = collections.defaultdict(set)
for l in sys.stdin:
    a, b, _ = l.split()
    dep[a].add(b)
state = {}
def visit(f, path):
    state[f] = 1
    for g in sorted(dep.get(f, ())):
        if state.get(g) == 1:
            print(" -> ".join(path[path.index(g):] + [g]))
        elif g not in state:
            visit(g, path + [g])
    state[f] = 2
for f in sorted(dep):
    if f not in state:
        visit(f, [f])
'
}

lib_objs=""
for o in "$B"/lib/shim/*.o "$B"/lib/common/*.o; do
	[ -f "$o" ] || continue
	n=${o#"$B"/lib/}
	lib_objs="$lib_objs ${n%.o}=$o"
done
if [ -z "$lib_objs" ]; then
	skip library_files_acyclic "no objects in $B/lib"
else
	# shellcheck disable=SC2086 # one argument per object
	deps $lib_objs | cycles >"$TMP/cycles"
	check library_files_acyclic "files that depend on each other: $(cat "$TMP/cycles")" \
		-s "$B/lib/shim/hooks.o" -a ! -s "$TMP/cycles"
fi

# The command's files, each compiled here with the flags the Makefile builds the command with
# (and common/'s, whose symbols the layering allows everywhere).
flags=$(printf 'st-layout-flags:\n\t@echo $(ST_CFLAGS) $(CLI_INC)\n' |
	make -s --no-print-directory -C "$ROOT" -f Makefile -f - st-layout-flags 2>"$TMP/flags.err")
cli_objs="" failed=""
mkdir -p "$TMP/obj"
for c in $(cd "$ROOT" && ls cli/*.c cli/*/*.c common/*.c); do
	o=$TMP/obj/$(echo "${c%.c}" | tr / _).o
	# shellcheck disable=SC2086 # the flags are words
	if (cd "$ROOT" && ${CC:-cc} $flags -c -o "$o" "$c") 2>>"$TMP/cc.err"; then
		cli_objs="$cli_objs ${c%.c}=$o"
	else
		failed="$failed $c"
	fi
done
if [ -z "$flags" ] || [ -n "$failed" ]; then
	fail cli_files_acyclic "could not compile:$failed $(cat "$TMP/flags.err" "$TMP/cc.err")"
	exit 0
fi
# shellcheck disable=SC2086 # one argument per object
deps $cli_objs >"$TMP/cli.deps"
cycles <"$TMP/cli.deps" >"$TMP/cli.cycles"
check cli_files_acyclic "files that depend on each other: $(cat "$TMP/cli.cycles")" \
	-s "$TMP/cli.deps" -a ! -s "$TMP/cli.cycles"

# A file's layer: common, top (cli/*.c), or its folder under cli/.  Allowed: host uses host
# and common; the top uses anything (main.c dispatches); any other folder itself, host,
# findings, top and common.
$PY - "$TMP/cli.deps" >"$TMP/cli.layers" <<'EOF'
import collections, sys
def layer(f):
    p = f.split("/")
    return "common" if p[0] == "common" else "top" if len(p) == 2 else p[1]
bad = collections.defaultdict(list)
for l in open(sys.argv[1]):
    a, b, sym = l.split()
    la, lb = layer(a), layer(b)
    if la == "common" or la == "top" or la == lb or lb == "common":
        continue
    if la == "host" or lb not in ("host", "findings", "top"):
        bad[(a, b)].append(sym)
for (a, b), syms in sorted(bad.items()):
    print("%s -> %s (%s)" % (a, b, " ".join(syms)))
EOF
check cli_layers "uses across layers: $(cat "$TMP/cli.layers")" \
	-s "$TMP/cli.deps" -a ! -s "$TMP/cli.layers"

