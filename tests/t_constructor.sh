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
# (in a subshell of its own, whose report of a signal is not the test's output)
tuned=$( (LD_PRELOAD=$LIB SOCKTUNE_BACKLOG=77 SOCKTUNE_NODELAY=1 "$TMP/ctormain" 2>"$TMP/err"
	echo "status=$?" >"$TMP/status") 2>/dev/null)
order=$( (LD_DEBUG=files LD_PRELOAD=$LIB "$TMP/ctormain" 2>&1) 2>/dev/null |
	sed -n 's/.*calling init: //p' | grep -n -e libctor -e libsocktune | tr '\n' ' ')
# Under AddressSanitizer the hook, instrumented, runs in libctor's constructor before the
# sanitizer's runtime has initialised (it is not among the objects initialised first), and
# the program dies of SIGSEGV there: a limit of the sanitizer build, not of the library.
if [ -n "${ST_SANITIZER:-}" ] && [ "$(cat "$TMP/status")" != status=0 ]; then
	skip constructor.before-ours "under the $ST_SANITIZER sanitizer the hook runs before its runtime is initialised ($(cat "$TMP/status"))"
	exit 0
fi
case "$order" in
*libctor.so*libsocktune.so*)
	check constructor.before-ours "untuned: $plain; tuned: $tuned ($(cat "$TMP/err"))" \
		"$plain" = "backlog=5 nodelay=0" -a "$tuned" = "backlog=77 nodelay=1" ;;
*)
	skip constructor.before-ours "this loader initialises libsocktune first: $order" ;;
esac
