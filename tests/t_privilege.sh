#!/bin/sh
# Privilege: in secure-execution mode (AT_SECURE: a setuid program run by another
# user) the library does nothing and reads no variable.  The loader itself drops LD_PRELOAD
# entries with a slash in secure mode, so to observe the library's own check the test puts
# it where the loader still takes it: in a private mount namespace, a setuid-root copy of
# the library is bind-mounted over a system library (libanl.so.1, unused by the probe) and
# preloaded by that bare name.  No other process sees the mount.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v unshare >/dev/null; then
	skip privilege "needs root, setpriv and unshare"
	exit 0
fi
if [ -n "${ST_SANITIZER_PRELOAD:-}" ]; then
	skip privilege "a sanitizer runtime cannot be preloaded in secure-execution mode"
	exit 0
fi
chmod 755 "$TMP"
cp "$BIN/secprobe" "$TMP/secprobe"
cp "$BIN/secprobe" "$TMP/secprobe-suid"
chown root "$TMP/secprobe-suid" && chmod 4755 "$TMP/secprobe-suid"
cp "$LIB_SO" "$TMP/libsec.so" && chmod 4755 "$TMP/libsec.so"
ASUSER="setpriv --reuid=nobody --regid=nogroup --clear-groups"
TUNE="SOCKTUNE_NODELAY=1 SOCKTUNE_LOG=debug SOCKTUNE_RCVBUF=garbage SOCKTUNE_LOG_FILE=$TMP/sec.log"

# control: the same user, not setuid: the library tunes
# shellcheck disable=SC2086
$ASUSER env LD_PRELOAD="$TMP/libsec.so" $TUNE SOCKTUNE_LOG_FILE= "$TMP/secprobe" \
	>"$TMP/plain.out" 2>"$TMP/plain.err"
line=$(cat "$TMP/plain.out")
check privilege_control_tuned "not secure: $line $(cat "$TMP/plain.err")" \
	"$(field "$line" secure)" = 0 -a "$(field "$line" nodelay)" = 1

# setuid, preloaded by path: the loader drops it (what users will see)
# shellcheck disable=SC2086
$ASUSER env LD_PRELOAD="$TMP/libsec.so" $TUNE "$TMP/secprobe-suid" >"$TMP/drop.out" 2>"$TMP/drop.err"
line=$(cat "$TMP/drop.out")
check privilege_loader_drops "setuid: $line $(cat "$TMP/drop.err")" \
	"$(field "$line" secure)" = 1 -a "$(field "$line" nodelay)" = 0

# setuid, and the library loaded all the same: it must do nothing and read nothing
target=""
for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /lib64 /usr/lib/aarch64-linux-gnu; do
	[ -f "$d/libanl.so.1" ] && target=$d/libanl.so.1 && break
done
if [ -z "$target" ]; then
	skip privilege_secure_noop "no libanl.so.1 in a trusted directory to stand in for"
	exit 0
fi
# shellcheck disable=SC2086
unshare -m sh -c "mount --make-rprivate / && mount --bind '$TMP/libsec.so' '$target' &&
	$ASUSER env LD_PRELOAD=libanl.so.1 $TUNE '$TMP/secprobe-suid'" >"$TMP/sec.out" 2>"$TMP/sec.err"
line=$(cat "$TMP/sec.out")
if [ -z "$line" ]; then
	skip privilege_secure_noop "could not set up the mount namespace: $(cat "$TMP/sec.err")"
	exit 0
fi
from=$(field "$line" listen_from)
check privilege_secure_loaded "the library did not load in secure mode ($line): the test proves nothing" \
	"$(field "$line" secure)" = 1 -a "${from##*/}" = libanl.so.1
check privilege_secure_noop "secure mode, library loaded: $line" "$(field "$line" nodelay)" = 0
check privilege_secure_silent "secure mode wrote: $(cat "$TMP/sec.err")" ! -s "$TMP/sec.err"
check privilege_secure_no_log_file "secure mode created $TMP/sec.log" ! -e "$TMP/sec.log"
