#!/bin/sh
# .ci/run on a fresh machine: every apt-get waits for the dpkg lock (unattended upgrades may
# hold it at boot) instead of failing at once.  A static check of the script: holding the
# machine's real dpkg lock from a test would stall every other package client on it.
. "$(dirname "$0")/lib.sh"
ci=$ROOT/.ci/run
n_apt=$(grep -c '^[[:space:]]*apt-get ' "$ci")
n_wait=$(grep '^[[:space:]]*apt-get ' "$ci" | grep -c '\$APT')
check ci.apt_waits_for_lock "$n_wait of $n_apt apt-get calls pass \$APT" "$n_apt" -gt 0 -a "$n_wait" -eq "$n_apt"
check ci.apt_lock_timeout "APT=$(sed -n 's/^APT=//p' "$ci")" \
	-n "$(grep '^APT=.*DPkg::Lock::Timeout=[1-9]' "$ci")"
# Every package a test names for its skip ("apt-get install PKG") is one .ci/run installs, so
# CI runs that test instead of skipping it.
awk '/apt-get .*install/ { on = 1 } on { print } on && !/\\$/ { on = 0 }' "$ci" |
	tr ' \t\\' '\n\n\n' | grep '^[a-z0-9][a-z0-9.+-]*$' | sort -u >"$TMP/ci.pkgs"
grep -ho 'apt-get install [a-z0-9][a-z0-9.+-]*' "$ROOT"/tests/t_*.sh | awk '{ print $3 }' |
	sort -u >"$TMP/test.pkgs"
missing=$(comm -23 "$TMP/test.pkgs" "$TMP/ci.pkgs" | tr '\n' ' ')
check ci.installs_what_tests_need "tests name packages .ci/run does not install: $missing" \
	"$(wc -l <"$TMP/test.pkgs")" -ge 3 -a -z "$missing"
