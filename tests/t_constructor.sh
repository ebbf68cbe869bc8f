#!/bin/sh
# Hooks called before the library's constructor: another library's constructor (here a
# DT_NEEDED library of the program, which the loader initialises before the preloaded
# libsocktune) makes and listens on a TCP socket.  The hook must initialise the library
# itself and tune that listener.
. "$(dirname "$0")/lib.sh"
CC=${CC:-cc}
$CC -shared -fPIC -o "$TMP/libctor.so" "$ROOT/tests/c/ctor_lib.c" &&
	$CC -o "$TMP/ctormain" "$ROOT/tests/c/ctor_main.c" -L"$TMP" -lctor -Wl,-rpath,"$TMP" ||
	{ fail constructor.build "could not build the test program"; exit 0; }

plain=$("$TMP/ctormain")
tuned=$(LD_PRELOAD=$LIB SOCKTUNE_BACKLOG=77 SOCKTUNE_NODELAY=1 "$TMP/ctormain" 2>"$TMP/err")
order=$(LD_DEBUG=files LD_PRELOAD=$LIB "$TMP/ctormain" 2>&1 | sed -n 's/.*calling init: //p' |
	grep -n -e libctor -e libsocktune | tr '\n' ' ')
case "$order" in
*libctor.so*libsocktune.so*)
	check constructor.before-ours "untuned: $plain; tuned: $tuned ($(cat "$TMP/err"))" \
		"$plain" = "backlog=5 nodelay=0" -a "$tuned" = "backlog=77 nodelay=1" ;;
*)
	skip constructor.before-ours "this loader initialises libsocktune first: $order" ;;
esac
