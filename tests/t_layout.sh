#!/bin/sh
# The layout docs/design.md describes holds: every source file is short enough to read in
# one sitting (under 600 lines); no two of the library's files, and no two of the command's,
# depend on each other (read from the symbols each object defines and uses: a cycle of any
# length fails); and the command's folders are layered: cli/host/ (the host view) uses
# nothing of the command but itself (common/ and libc apart), and a subcommand's folder uses
# no other subcommand's, only cli/host/, cli/findings/ and the top of cli/: neither their
# symbols nor their headers, each header named by its folder ("host/diag.h").
. "$(dirname "$0")/lib.sh"

long=$(cd "$ROOT" && wc -l shim/*.[ch] common/*.[ch] cli/*.[ch] cli/*/*.[ch] include/*.h |
	awk '$2 != "total" && $1 >= 600 { printf "%s (%d) ", $2, $1 }')
check files_under_600_lines "too long: $long" -z "$long"

# The layering below, for headers too, read off the include lines as the compiler resolves
# them (the including file's folder, then -Iinclude -Ishim -Icommon -Icli): cli/host/ includes
# only cli/host/, include/ and common/ headers; a file of a subcommand's folder (or of
# cli/findings/) only its own folder's, cli/host/'s, cli/findings/' and the top's (cli/*.h);
# the top any.  And every include line names a header of cli/ by its path from cli/
# ("host/diag.h", "record.h"): a header of a subfolder named without its folder, or through
# ./ or ../, fails, in cli/ and in the tests and benchmarks that include the command's files.
(cd "$ROOT" && $PY - "$TMP/cli.seen" >"$TMP/cli.includes" 2>"$TMP/cli.names") <<'EOF'
import glob, os, re, sys
inc = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
def layer(path):
    p = path.split("/")
    if p[0] in ("include", "common"):
        return "common"
    if p[0] != "cli":
        return p[0]
    return "top" if len(p) == 2 else p[1]
def allowed(la, lb):
    if la == "host":
        return lb in ("host", "common")
    if la == "top":
        return lb != "shim"
    return lb in (la, "host", "findings", "top", "common")
seen = 0  # include lines of cli/ that name a header of cli/
def lines(f):
    for n, l in enumerate(open(f, errors="replace"), 1):
        m = inc.match(l)
        if m:
            yield n, m.group(1), m.group(2)
for f in sorted(glob.glob("cli/*.[ch]") + glob.glob("cli/*/*.[ch]")):
    here = os.path.dirname(f)
    for n, q, x in lines(f):
        where = ([here] if q == '"' else []) + ["include", "shim", "common", "cli"]
        hit = next((os.path.normpath(os.path.join(d, x)) for d in where
                    if os.path.isfile(os.path.join(d, x))), None)
        if hit is None:
            if q == '"':
                print("%s:%d: \"%s\" is nowhere in the tree" % (f, n, x), file=sys.stderr)
            continue  # a system header
        if any(c in (".", "..") for c in x.split("/")):
            print("%s:%d: \"%s\" names its header through ./ or ../ (name it from cli/)"
                  % (f, n, x), file=sys.stderr)
        elif hit.startswith("cli/") and hit != "cli/" + x:
            print("%s:%d: \"%s\" names no folder (name it from cli/: \"%s\")"
                  % (f, n, x, hit[4:]), file=sys.stderr)
        seen += hit.startswith("cli/")
        if not allowed(layer(f), layer(hit)):
            print("%s includes %s" % (f, hit))
open(sys.argv[1], "w").write("%d\n" % seen)
# The tests' and benchmarks' own includes of the command's files: by the same names.
for f in sorted(glob.glob("tests/*/*.[ch]") + glob.glob("bench/*.[ch]")):
    for n, q, x in lines(f):
        p = os.path.normpath(os.path.join(os.path.dirname(f), x))
        if p.startswith("cli/") and os.path.isfile(p):
            print("%s:%d: \"%s\" names the command's file through ../ (name it from cli/: "
                  "\"%s\", with -Icli)" % (f, n, x, p[4:]), file=sys.stderr)
EOF
check cli_header_layers "includes across layers: $(cat "$TMP/cli.includes")" \
	"$(cat "$TMP/cli.seen" 2>/dev/null || echo 0)" -gt 100 -a ! -s "$TMP/cli.includes"
check cli_include_names "include lines that do not name the folder: $(cat "$TMP/cli.names")" \
	! -s "$TMP/cli.names"

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

