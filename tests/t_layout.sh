#!/bin/sh
# The layout docs/design.md describes holds: every source file is short enough to read in
# one sitting (under 600 lines), and no two of the library's files depend on each other
# (read from the symbols each object defines and uses: a cycle of any length fails).
. "$(dirname "$0")/lib.sh"

long=$(cd "$ROOT" && wc -l shim/*.[ch] common/*.[ch] cli/*.[ch] include/*.h |
	awk '$2 != "total" && $1 >= 600 { printf "%s (%d) ", $2, $1 }')
check files_under_600_lines "too long: $long" -z "$long"

objs=$(ls "$B"/lib/shim/*.o "$B"/lib/common/*.o 2>/dev/null)
if [ -z "$objs" ] || ! command -v nm >/dev/null; then
	skip library_files_acyclic "no objects in $B/lib or no nm"
	exit 0
fi
# shellcheck disable=SC2086 # one argument per object
$PY - $objs >"$TMP/cycles" <<'EOF'
import collections, subprocess, sys
defs, uses = {}, collections.defaultdict(set)
for o in sys.argv[1:]:
    name = "/".join(o.split("/")[-2:])[:-2]
    for l in subprocess.run(["nm", o], capture_output=True, text=True).stdout.splitlines():
        p = l.split()
        if len(p) == 3 and p[1] in "TDBRC":
            defs[p[2]] = name
        elif len(p) == 2 and p[0] == "U":
            uses[name].add(p[1])
dep = {f: {defs[s] for s in uses[f] if s in defs and defs[s] != f} for f in set(defs.values())}
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
EOF
check library_files_acyclic "files that depend on each other: $(cat "$TMP/cycles")" \
	-s "$B/lib/shim/hooks.o" -a ! -s "$TMP/cycles"
