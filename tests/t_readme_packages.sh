#!/bin/sh
# README.md's install block runs as root (which may have no sudo: a container's root shell)
# and as a user through sudo, and its `make test` line installs the packages .ci/run
# installs, no fewer and no more (before: `sudo apt-get install build-essential python3
# iproute2`, 3 of the suite's packages, and sudo needed even as root).  The block runs for
# real with apt-get and sudo replaced by stubs that write down how they were called.
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 1

# the first ```sh block of README.md that runs apt-get
awk '/^```sh$/ { inb = 1; blk = ""; next }
	/^```/ && inb { if (blk ~ /apt-get/) { printf "%s", blk; exit } inb = 0; next }
	inb { blk = blk $0 "\n" }' README.md >"$TMP/block.sh"
check readme_packages.block_found "no sh block with apt-get in README.md" -s "$TMP/block.sh"

# the packages of one apt-get line that installs (options dropped), sorted, one a line
packages() { tr ' \t' '\n\n' | grep -v '^-\|^$\|^apt-get$\|^install$\|^\$APT$\|^\$sudo$\|^sudo$\|>/dev/null' | sort -u; }
# .ci/run's install command, continuations joined
sed -e ':a' -e '/\\$/N; s/\\\n//; ta' .ci/run | grep 'apt-get .*install ' | packages >"$TMP/ci"
# the README's install lines: the one with the most packages is the suite's
sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$TMP/block.sh" | sed 's/#.*//' | grep 'apt-get .*install ' >"$TMP/lines"
best=""
n=0
while read -r line; do
	k=$(printf '%s\n' "$line" | packages | grep -c .)
	[ "$k" -gt "$n" ] && n=$k best=$line
done <"$TMP/lines"
printf '%s\n' "$best" | packages >"$TMP/readme"
only_ci=$(comm -23 "$TMP/ci" "$TMP/readme" | tr '\n' ' ')
only_readme=$(comm -13 "$TMP/ci" "$TMP/readme" | tr '\n' ' ')
check readme_packages.same_as_ci "README's suite line: $n packages; .ci/run: $(grep -c . "$TMP/ci"); missing from the README: $only_ci; not in .ci/run: $only_readme" \
	"$(grep -c . "$TMP/ci")" -ge 10 -a -z "$only_ci" -a -z "$only_readme"

# the stubs: each writes "NAME uid ARGS" to the log; sudo then runs the rest as it is
mkdir -p "$TMP/stub"
chmod 755 "$TMP" "$TMP/stub"
cat >"$TMP/stub/apt-get" <<STUB
#!/bin/sh
echo "apt-get \$(id -u) \$*" >>"$TMP/stub/log"
STUB
cat >"$TMP/stub/sudo" <<STUB
#!/bin/sh
echo "sudo \$(id -u) \$*" >>"$TMP/stub/log"
"\$@"
STUB
: >"$TMP/stub/log"
chmod 755 "$TMP/stub/apt-get" "$TMP/stub/sudo"
chmod 666 "$TMP/stub/log"
chmod 644 "$TMP/block.sh"

# run AS...: the block with the stubs first in PATH (no other sudo or apt-get reachable)
run_block() {
	: >"$TMP/stub/log"
	"$@" env -i PATH="$TMP/stub:/usr/bin:/bin" HOME=/ sh -e "$TMP/block.sh" >"$TMP/run.out" 2>&1
}
if [ "$(id -u)" = 0 ]; then
	run_block
	rc=$?
	apts=$(grep -c '^apt-get 0 install' "$TMP/stub/log")
	sudos=$(grep -c '^sudo ' "$TMP/stub/log")
	check readme_packages.as_root "status $rc, apt-get run $apts times as root, sudo $sudos times: $(cat "$TMP/run.out" "$TMP/stub/log" | tr '\n' '|')" \
		"$rc" = 0 -a "$apts" -ge 2 -a "$sudos" = 0
	if command -v setpriv >/dev/null 2>&1; then
		run_block setpriv --reuid=65534 --regid=65534 --clear-groups
		rc=$?
		sudos=$(grep -c '^sudo 65534 apt-get' "$TMP/stub/log")
		check readme_packages.as_user_with_sudo "status $rc, sudo run $sudos times by uid 65534: $(cat "$TMP/run.out" "$TMP/stub/log" | tr '\n' '|')" \
			"$rc" = 0 -a "$sudos" -ge 2
	else
		skip readme_packages.as_user_with_sudo "no setpriv to run the block as another user"
	fi
else
	skip readme_packages.as_root "not root"
fi
