#!/bin/sh
# make install into a temporary DESTDIR: the installed command finds ../lib/libsocktune.so;
# make uninstall removes what install put there.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cli.sh"
D=$TMP/dest
# The build is already made by `make test`; install only copies it (the BUILD in use).
if ! make -s -C "$ROOT" install BUILD="$B" PREFIX=/opt/st DESTDIR="$D" >"$TMP/make.out" 2>&1; then
	fail install "make install: $(tail -n 3 "$TMP/make.out")"
	exit 0
fi
check install_files "missing under $D/opt/st" -x "$D/opt/st/bin/socktune" -a -f "$D/opt/st/lib/libsocktune.so"
got=$("$D/opt/st/bin/socktune" --nodelay -- "$PROBE" env LD_PRELOAD SOCKTUNE_NODELAY 2>/dev/null | tr '\n' ' ')
check install_finds_library "got '$got'" "$got" = "LD_PRELOAD=$D/opt/st/lib/libsocktune.so SOCKTUNE_NODELAY=1 "
"$D/opt/st/bin/socktune" check --nodelay >/dev/null 2>&1
check install_check_runs "status $?" $? -eq 0
man=0
for m in "$ROOT"/docs/*.1 "$ROOT"/docs/*.7; do
	[ -f "$m" ] || continue
	sec=${m##*.}
	[ -f "$D/opt/st/share/man/man$sec/$(basename "$m")" ] || man=$((man + 1))
done
check install_man_pages "$man man pages not installed" $man -eq 0
comp=$D/opt/st/share/bash-completion/completions/socktune
check install_completion "no $comp" -f "$comp"
if [ -f "$comp" ] && command -v bash >/dev/null 2>&1; then
	got=$(bash -c '. "$1"; COMP_WORDS=("$2" check --jso); COMP_CWORD=2; _socktune; echo "${COMPREPLY[*]}"' \
		sh "$comp" "$D/opt/st/bin/socktune" 2>&1)
	check install_completion_works "offers '$got' for check --jso" "$got" = --json
fi
# LIBDIR elsewhere under PREFIX: the command is rebuilt to look there, in a copy of the build
# made for ../lib (its objects and times kept: only what LIBDIR changes is built again)
D2=$TMP/dest2
mkdir -p "$TMP/b2"
cp -pR "$B/lib" "$B/libsocktune.so" "$B/socktune" "$B/libdir.stamp" "$TMP/b2/"
if make -s -C "$ROOT" install BUILD="$TMP/b2" PREFIX=/opt/st LIBDIR=/opt/st/lib/x/socktune DESTDIR="$D2" \
	>"$TMP/make2.out" 2>&1; then
	got=$("$D2/opt/st/bin/socktune" -- "$PROBE" env LD_PRELOAD 2>&1)
	check install_libdir "got '$got'" "$got" = "LD_PRELOAD=$D2/opt/st/lib/x/socktune/libsocktune.so"
else
	fail install_libdir "make install LIBDIR=...: $(tail -n 3 "$TMP/make2.out")"
fi
make -s -C "$ROOT" uninstall BUILD="$B" PREFIX=/opt/st DESTDIR="$D" >"$TMP/make.out" 2>&1
left=$(find "$D" -type f | tr '\n' ' ')
check uninstall "left: $left" -z "$left"
