#!/bin/sh
# One version: ST_VERSION in include/socktune.h, which `socktune --version` prints; the
# Debian changelog's top entry and the man pages' headers say the same.
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 1
want=$(sed -n 's/^#define ST_VERSION "\(.*\)"/\1/p' include/socktune.h)
got=$("$CLI" --version)
check version.prints "socktune --version: '$got', ST_VERSION $want" -n "$want" -a "$got" = "socktune $want"
got=$("$CLI" check --version 2>&1)
check version.after-subcommand "socktune check --version: '$got'" "$got" = "socktune $want"
deb=$(sed -n '1s/^socktune (\([^)]*\)).*/\1/p' debian/changelog)
check version.debian-changelog "debian/changelog: '$deb', ST_VERSION $want" "$deb" = "$want"
for m in docs/*.1 docs/*.7; do
	th=$(sed -n 's/^\.TH .*"socktune \([^"]*\)".*/\1/p' "$m")
	check "version.man-$(basename "$m")" "$m says '$th', ST_VERSION $want" "$th" = "$want"
done
