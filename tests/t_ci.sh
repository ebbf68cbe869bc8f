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
