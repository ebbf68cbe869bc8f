#!/bin/sh
# The Debian package: make deb builds socktune_VERSION_ARCH.deb (dpkg-buildpackage, debhelper)
# with the command, the library where the command finds it, the man pages and the bash
# completion, and the examples, whose systemd drop-in names the package's library and command;
# lintian finds no error in it; unpacked into a scratch root (dpkg-deb -x), its
# command runs a python server whose listener then has the backlog asked for and whose
# accepted connection has TCP_NODELAY, both read from the kernel by the server itself.
. "$(dirname "$0")/lib.sh"

for t in dpkg-buildpackage dh dpkg-deb; do
	if ! command -v $t >/dev/null 2>&1; then
		skip package "no $t (apt-get install dpkg-dev debhelper)"
		exit 0
	fi
done
ver=$("$CLI" --version | sed -n 's/^socktune //p')
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
DEB=$TMP/deb/socktune_${ver}_$arch.deb
if ! make -s -C "$ROOT" deb DEBDIR="$TMP/deb" >"$TMP/deb.out" 2>&1 || [ ! -f "$DEB" ]; then
	fail package.builds "make deb: no $DEB: $(grep -i 'error\|warning' "$TMP/deb.out" | head -n 5) $(tail -n 3 "$TMP/deb.out")"
	exit 0
fi
pass package.builds

dpkg-deb -c "$DEB" | awk '{ print $6 }' >"$TMP/files"
missing=""
for f in ./usr/bin/socktune "./usr/lib/$multiarch/socktune/libsocktune.so" \
	./usr/share/man/man1/socktune.1.gz ./usr/share/man/man7/libsocktune.7.gz \
	./usr/share/bash-completion/completions/socktune ./usr/share/doc/socktune/copyright; do
	grep -qx -- "$f" "$TMP/files" || missing="$missing $f"
done
check package.files "missing:$missing (has: $(tr '\n' ' ' <"$TMP/files"))" -z "$missing"
# the examples, each file of the tree's examples/ (the docs helpers may compress one: .gz)
ex=./usr/share/doc/socktune/examples
missing=""
for f in $(cd "$ROOT" && find examples -type f | sort); do
	grep -qx -- "$ex/${f#examples/}\(.gz\)\{0,1\}" "$TMP/files" || missing="$missing $f"
done
check package.examples "not in $ex:$missing" -z "$missing"
check package.version "package $(dpkg-deb -f "$DEB" Version), socktune --version $ver" \
	"$(dpkg-deb -f "$DEB" Version)" = "$ver"

if command -v lintian >/dev/null 2>&1; then
	lintian "$DEB" >"$TMP/lintian" 2>&1
	check package.lintian "$(grep '^E:' "$TMP/lintian" | head -n 5)" -z "$(grep '^E:' "$TMP/lintian")"
else
	skip package.lintian "lintian not installed"
fi

# ---- the unpacked package's command tunes a server ----
R=$TMP/root
dpkg-deb -x "$DEB" "$R"
if start_server pkg -- "$R/usr/bin/socktune" --nodelay --backlog 77 -- \
	$PY "$ROOT/tests/py/optserver.py" --count 1; then
	$PY -c "import socket; s=socket.create_connection(('127.0.0.1',$SRV_PORT),timeout=5); s.send(b'x'); s.recv(1)" 2>/dev/null
	wait_server
	backlog=$(json_get "$TMP/pkg.out" listener.backlog 1)
	nodelay=$(json_get "$TMP/pkg.out" nodelay 2)
	check package.tunes-backlog "backlog $backlog, want 77: $(cat "$TMP/pkg.err")" "$backlog" = 77
	check package.tunes-nodelay "TCP_NODELAY $nodelay on the accepted socket: $(cat "$TMP/pkg.err")" "$nodelay" = 1
else
	fail package.tunes "the packaged command did not start the server: $(cat "$TMP/pkg.err")"
fi
got=$("$R/usr/bin/socktune" -- /usr/bin/env 2>/dev/null | sed -n 's/^LD_PRELOAD=//p')
check package.finds-its-library "LD_PRELOAD=$got" "$got" = "$R/usr/lib/$multiarch/socktune/libsocktune.so"
printed=$("$R/usr/bin/socktune" --print-library 2>&1)
check package.prints-its-library "printed '$printed', the program got '$got'" "$printed" = "$got"

# the systemd drop-in names the package's library and command, files of the package
conf=$R/usr/share/doc/socktune/examples/systemd/socktune.conf
pre=$(sed -n 's/^Environment=LD_PRELOAD=//p' "$conf" 2>/dev/null)
cmd=$(sed -n 's/^ExecStartPre=\([^ ]*\) .*/\1/p' "$conf" 2>/dev/null)
check package.dropin-library "LD_PRELOAD=$pre in $conf" -n "$pre" -a \
	"$pre" = "/usr/lib/$multiarch/socktune/libsocktune.so" -a -f "$R$pre"
check package.dropin-command "ExecStartPre=$cmd in $conf" -n "$cmd" -a -x "$R$cmd"
# and watch's unit its command
unit=${conf%/*}/socktune-watch.service
wcmd=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$unit" 2>/dev/null)
check package.watch-unit-command "ExecStart=$wcmd in $unit" "$wcmd" = /usr/bin/socktune -a -x "$R$wcmd"
readme=${conf%/*}/README.md
check package.dropin-readme "$readme missing or names /usr/local: $(grep -n /usr/local "$readme" 2>/dev/null | head -n 3)" \
	-f "$readme" -a -z "$(grep /usr/local "$readme" 2>/dev/null)"

if command -v bash >/dev/null 2>&1; then
	got=$(bash -c '. "$1"; COMP_WORDS=("$2" --nod); COMP_CWORD=1; _socktune; echo "${COMPREPLY[*]}"' \
		sh "$R/usr/share/bash-completion/completions/socktune" "$R/usr/bin/socktune" 2>&1)
	check package.completion "offers '$got' for --nod" "$got" = --nodelay
fi
