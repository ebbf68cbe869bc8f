#!/bin/sh
# Each subcommand's --help is its own: its synopsis and the options its parser takes, and
# none of another's (doctor and stats take no tuning option; attach none that cannot reach
# a running server).  A first word a typo away from a subcommand is refused with "did you
# mean" (socktune stat FILE ran stat(1), socktune doctr :8000 said "command not found");
# after --, any program runs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cli.sh"

# has NAME SUB WANT NOT...: SUB's --help (status 0) names every option of WANT (words) and
# none of NOT
has() {
	_n=$1 _s=$2 _w=$3
	shift 3
	# shellcheck disable=SC2086 # SUB is empty (the wrapper) or one word
	"$CMD" $_s --help >"$TMP/help.$_n" 2>&1
	_rc=$? _bad=""
	for _o in $_w; do grep -q -- "$_o\([^a-z-]\|$\)" "$TMP/help.$_n" || _bad="$_bad missing $_o;"; done
	for _o in "$@"; do grep -q -- "$_o\([^a-z-]\|$\)" "$TMP/help.$_n" && _bad="$_bad has $_o;"; done
	check "help_$_n" "status $_rc:$_bad $(head -n 1 "$TMP/help.$_n")" "$_rc" = 0 -a -z "$_bad"
}
has doctor doctor "--seconds --json" --nodelay --backlog --route --watch --connections --strict
has stats stats "--format --watch --count --output --json" --nodelay --backlog --seconds --route
has attach attach "--connections --follow --json --nodelay --backlog --rcvbuf" \
	--quickack --reuseport --freebind --syncnt --log-file --stats --seconds --route --watch --strict
has detach detach "--cgroup-root --json" --nodelay --initcwnd --connections --follow --strict
has check check "--route --strict --json --nodelay --quickack --reuseport" \
	--connections --follow --seconds --watch --attach
has watch watch "--listen --textfile --every --interval --seconds" --nodelay --backlog --json --route --watch
has run "" "--strict --attach --nodelay --quickack --reuseport" \
	--connections --follow --seconds --watch --route --json
for s in doctor stats attach detach check watch; do
	check "help_synopsis_$s" "first line: $(head -n 1 "$TMP/help.$s")" \
		"$(head -n 1 "$TMP/help.$s" | grep -c "^usage: socktune $s ")" = 1
done

# every option a subcommand's --help lists, its parser takes (given before --help: status 0)
bad=""
for s in doctor stats attach detach check watch; do
	for o in $(grep -o -- '^  --[a-z][a-z0-9-]*\( [A-Z/|:]*\)\{0,1\}' "$TMP/help.$s" | tr ' ' '='); do
		o=${o#==}
		case $o in --help | --version) continue ;; esac
		v=${o#*=}
		case $v in "$o") set -- "${o%%=*}" ;; N | SECONDS | SIZE | MS | QLEN | HOPS | BYTES/S) set -- "${o%%=*}" 1 ;;
		F) set -- "${o%%=*}" json ;; *) continue ;; esac
		"$CMD" "$s" "$@" --help >/dev/null 2>"$TMP/acc.err" || bad="$bad $s $*: $(cat "$TMP/acc.err");"
	done
done
check help_options_accepted "refused:$bad" -z "$bad"

# ---- a typo of a subcommand ----
# refused NAME WANT CMD...: status 2, and stderr says "did you mean WANT", nothing on stdout
refused() {
	_n=$1 _w=$2
	shift 2
	"$@" >"$TMP/$_n.out" 2>"$TMP/$_n.err"
	_rc=$?
	check "$_n" "status $_rc, stderr: $(cat "$TMP/$_n.err"), stdout: $(head -c 200 "$TMP/$_n.out")" \
		"$_rc" = 2 -a -n "$(grep "did you mean $_w" "$TMP/$_n.err")" -a ! -s "$TMP/$_n.out"
}
refused typo_stat stats "$CMD" stat /dev/null
refused typo_doctr doctor "$CMD" doctr :8000
refused typo_swapped doctor "$CMD" dcotor :8000
refused typo_attach attach "$CMD" atach 1
refused typo_detach detach "$CMD" detahc 1
refused typo_case stats "$CMD" STATS /dev/null
out=$("$CMD" -- stat -c %n /dev/null 2>"$TMP/dd.err")
rc=$?
check typo_after_dashdash_runs "status $rc, out '$out', stderr: $(cat "$TMP/dd.err")" "$rc" = 0 -a "$out" = /dev/null
"$CMD" -- stat /dev/null >"$TMP/dd2.out" 2>&1
check typo_after_dashdash_runs_stat "status $?: $(head -n 2 "$TMP/dd2.out")" $? = 0 -a \
	-n "$(grep 'File: /dev/null' "$TMP/dd2.out")"
# two letters from a subcommand and a program here: the program (docker is two from doctor)
mkdir "$TMP/bin"
cp "$PROBE" "$TMP/bin/dcotr"
out=$(PATH=$TMP/bin:$PATH "$CMD" dcotr args ok 2>"$TMP/d2.err")
check two_away_program_runs "out '$out', stderr: $(cat "$TMP/d2.err")" "$out" = ok
