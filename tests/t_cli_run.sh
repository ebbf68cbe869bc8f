#!/bin/sh
# socktune command, run mode: exit status and pid pass through, LD_PRELOAD composition,
# where the library is found, and the warnings about programs LD_PRELOAD cannot reach
# (static, Go, setuid/setgid, file capabilities), which --strict turns into status 2.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cli.sh"
REAL_LIB=$(cd "$(dirname "${LIB_SO:-$LIB}")" && pwd -P)/libsocktune.so
ours() { grep '^socktune:' "$1"; }

# ---- exit status, pid, signals ----
"$CMD" -- "$PROBE" exit 7 2>/dev/null
check exit_status "status $?" $? -eq 7
"$CMD" "$PROBE" exit 3 2>/dev/null
check exit_status_no_dashdash "status $?" $? -eq 3
"$CMD" --nodelay -- "$PROBE" kill 2>/dev/null
check exit_signal "status $? (want 143: killed by SIGTERM)" $? -eq 143
cat >"$TMP/pid.sh" <<SH
echo \$\$ >"$TMP/pid.outer"
exec "$CMD" --nodelay -- "$PROBE" pid "$TMP/pid.inner"
SH
sh "$TMP/pid.sh" 2>/dev/null
check same_pid "outer $(cat "$TMP/pid.outer" 2>/dev/null) inner $(cat "$TMP/pid.inner" 2>/dev/null)" \
	-s "$TMP/pid.inner" -a "$(cat "$TMP/pid.outer")" = "$(cat "$TMP/pid.inner" 2>/dev/null)"
"$CMD" -- socktune-no-such-program-xyz 2>"$TMP/err"
rc=$?
check not_found_127 "status $rc: $(cat "$TMP/err")" $rc -eq 127 -a "$(grep -c 'command not found' "$TMP/err")" -eq 1
printf 'x\n' >"$TMP/noexec"
"$CMD" -- "$TMP/noexec" 2>/dev/null
check not_executable_126 "status $?" $? -eq 126

# ---- LD_PRELOAD composition ----
# preload [VALUE]: the LD_PRELOAD the program sees when the command starts with VALUE (only
# the command and the probe ever run with it: a musl library would break glibc's sed).
preload() {
	if [ $# -eq 0 ]; then
		"$CMD" -- "$PROBE" env LD_PRELOAD 2>/dev/null | sed 's/^LD_PRELOAD=//'
	else
		env LD_PRELOAD="$1" "$CMD" -- "$PROBE" env LD_PRELOAD 2>/dev/null | sed 's/^LD_PRELOAD=//'
	fi
}
got=$(preload)
check preload_unset "got '$got'" "$got" = "$REAL_LIB"
got=$(preload "")
check preload_empty "got '$got'" "$got" = "$REAL_LIB"
got=$(preload /nonexistent/libother.so)
check preload_keeps_other "got '$got'" "$got" = "$REAL_LIB:/nonexistent/libother.so"
got=$(preload "/nonexistent/a.so ${LIB_SO:-$LIB}:/nonexistent/b.so")
check preload_not_twice "got '$got'" "$got" = "$REAL_LIB:/nonexistent/a.so:/nonexistent/b.so"
got=$(preload "$B/../$(basename "$B")/libsocktune.so")
check preload_not_twice_other_spelling "got '$got'" "$got" = "$REAL_LIB"
got=$(preload /elsewhere/libsocktune.so:/nonexistent/c.so)
check preload_drops_other_copy "got '$got'" "$got" = "$REAL_LIB:/nonexistent/c.so"
got=$("$CMD" --nodelay -- "$CMD" --backlog 8 -- "$PROBE" env LD_PRELOAD SOCKTUNE_NODELAY SOCKTUNE_BACKLOG 2>/dev/null | tr '\n' ' ')
check preload_nested "got '$got'" "$got" = "LD_PRELOAD=$REAL_LIB SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=8 "

# ---- where the library comes from ----
mkdir -p "$TMP/alt" "$TMP/inst/bin" "$TMP/inst/lib" "$TMP/lonely"
cp "${LIB_SO:-$LIB}" "$TMP/alt/libsocktune.so"
got=$(SOCKTUNE_LIBRARY=$TMP/alt/libsocktune.so preload)
check library_from_env "got '$got'" "$got" = "$TMP/alt/libsocktune.so"
rm -f "$TMP/marker"
SOCKTUNE_LIBRARY=$TMP/alt/missing.so "$CMD" -- "$PROBE" touch "$TMP/marker" 2>"$TMP/err"
rc=$?
check library_env_missing "status $rc, $(cat "$TMP/err")" $rc -eq 2 -a ! -e "$TMP/marker" -a \
	"$(grep -c "SOCKTUNE_LIBRARY=$TMP/alt/missing.so" "$TMP/err")" -eq 1
cp "$CMD" "$TMP/inst/bin/socktune"
cp "${LIB_SO:-$LIB}" "$TMP/inst/lib/libsocktune.so"
got=$("$TMP/inst/bin/socktune" -- "$PROBE" env LD_PRELOAD 2>/dev/null)
check library_in_lib_dir "got '$got'" "$got" = "LD_PRELOAD=$TMP/inst/lib/libsocktune.so"
cp "$CMD" "$TMP/lonely/socktune"
"$TMP/lonely/socktune" -- "$PROBE" touch "$TMP/marker" 2>"$TMP/err"
rc=$?
check library_not_found "status $rc, $(cat "$TMP/err")" $rc -eq 2 -a ! -e "$TMP/marker" -a \
	"$(grep -c 'libsocktune.so not found' "$TMP/err")" -eq 1
# --print-library: the path the program then sees first in LD_PRELOAD, from each place
got=$("$CMD" --print-library 2>"$TMP/err")
check print_library "printed '$got' ($(cat "$TMP/err")), the program got '$(preload)'" \
	-f "$got" -a "$got" = "$(preload)" -a "$got" = "$REAL_LIB"
got=$(SOCKTUNE_LIBRARY=$TMP/alt/libsocktune.so "$CMD" --print-library 2>&1)
check print_library_from_env "printed '$got'" "$got" = "$TMP/alt/libsocktune.so"
got=$("$TMP/inst/bin/socktune" --print-library 2>&1)
want=$("$TMP/inst/bin/socktune" -- "$PROBE" env LD_PRELOAD 2>/dev/null | sed 's/^LD_PRELOAD=//')
check print_library_installed "printed '$got', the program got '$want'" \
	"$got" = "$want" -a "$got" = "$TMP/inst/lib/libsocktune.so"
got=$("$TMP/lonely/socktune" --print-library 2>"$TMP/err")
rc=$?
check print_library_not_found "status $rc, printed '$got', $(cat "$TMP/err")" $rc -eq 2 -a -z "$got" -a \
	"$(grep -c 'libsocktune.so not found' "$TMP/err")" -eq 1
"$CMD" check --print-library >/dev/null 2>"$TMP/err"
check print_library_run_only "status $?: $(cat "$TMP/err")" $? -eq 2
if [ -x "$B/socktune-static" ]; then
	got=$("$B/socktune-static" --nodelay -- "$PROBE" env LD_PRELOAD SOCKTUNE_NODELAY 2>/dev/null | tr '\n' ' ')
	check static_command "got '$got'" "$got" = "LD_PRELOAD=$REAL_LIB SOCKTUNE_NODELAY=1 "
	if command -v readelf >/dev/null 2>&1; then
		interp=$(readelf -l "$B/socktune-static" | grep -c 'INTERP')
		check static_command_is_static "has a PT_INTERP" "$interp" -eq 0
	else
		skip static_command_is_static "no readelf (binutils)"
	fi
else
	skip static_command "no $B/socktune-static (make static)"
fi

# ---- what LD_PRELOAD cannot reach ----
# A dynamically linked program: no warning at all.
"$CMD" -- "$PROBE" exit 0 2>"$TMP/err"
check dynamic_no_warning "$(ours "$TMP/err")" $? -eq 0 -a -z "$(ours "$TMP/err")"

# warns NAME PATTERN PROGRAM...: warns and still runs; with --strict, status 2, not started.
warns() {
	name=$1 pattern=$2
	shift 2
	rm -f "$TMP/marker"
	"$CMD" --nodelay -- "$@" 2>"$TMP/err" >/dev/null
	rc=$?
	if [ $rc -ne 0 ] || ! ours "$TMP/err" | grep -q "warning: .*$pattern"; then
		fail "$name" "status $rc, stderr: $(ours "$TMP/err" | tr '\n' '|')"
	else
		pass "$name"
	fi
	"$CMD" --strict --nodelay -- "$@" 2>"$TMP/err" >/dev/null
	rc=$?
	if [ $rc -ne 2 ] || ! ours "$TMP/err" | grep -q "error: .*$pattern.*--strict"; then
		fail "${name}_strict" "status $rc, stderr: $(ours "$TMP/err" | tr '\n' '|')"
	else
		pass "${name}_strict"
	fi
}

printf '#include <stdio.h>\nint main(void) { puts("static hello"); return 0; }\n' >"$TMP/hello.c"
if cc -static -o "$TMP/static-hello" "$TMP/hello.c" 2>"$TMP/cc.err"; then
	warns static_warns "statically linked" "$TMP/static-hello"
	out=$("$CMD" -- "$TMP/static-hello" 2>/dev/null)
	check static_still_runs "got '$out'" "$out" = "static hello"
	# a script is judged by its interpreter
	printf '#!%s\n' "$TMP/static-hello" >"$TMP/script-static"
	chmod +x "$TMP/script-static"
	warns script_static_interpreter "static-hello, the interpreter of .*script-static is statically" "$TMP/script-static"
else
	skip static_warns "cc -static failed: $(head -n 1 "$TMP/cc.err")"
fi
printf '#!%s\n' "$PROBE" >"$TMP/script-ok"
chmod +x "$TMP/script-ok"
"$CMD" --strict -- "$TMP/script-ok" 2>"$TMP/err"
check script_dynamic_ok "status $?, $(ours "$TMP/err")" $? -eq 0 -a -z "$(ours "$TMP/err")"

TRUE=$PROBE # a dynamically linked program of the build's libc
cp "$TRUE" "$TMP/suid-true"
chmod u+s "$TMP/suid-true"
warns setuid_warns "setuid/setgid" "$TMP/suid-true"
cp "$TRUE" "$TMP/sgid-true"
chmod g+xs "$TMP/sgid-true"
warns setgid_warns "setuid/setgid" "$TMP/sgid-true"
# found along PATH as execvp finds it
mkdir -p "$TMP/pathdir"
cp "$TMP/suid-true" "$TMP/pathdir/st-suid-true"
chmod u+s "$TMP/pathdir/st-suid-true"
PATH=$TMP/pathdir:$PATH warns setuid_via_path "st-suid-true is setuid" st-suid-true

if command -v setcap >/dev/null 2>&1; then
	cp "$TRUE" "$TMP/cap-true"
	if setcap cap_net_bind_service+ep "$TMP/cap-true" 2>"$TMP/setcap.err"; then
		warns caps_warns "file capabilities" "$TMP/cap-true"
	else
		skip caps_warns "setcap failed here: $(head -n 1 "$TMP/setcap.err")"
	fi
else
	skip caps_warns "no setcap (libcap2-bin)"
fi

# A Go binary is told apart by its .note.go.buildid section; add one to a C program.
if command -v objcopy >/dev/null 2>&1; then
	printf 'go' >"$TMP/note"
	if objcopy --add-section .note.go.buildid="$TMP/note" "$TRUE" "$TMP/go-true" 2>"$TMP/objcopy.err"; then
		chmod +x "$TMP/go-true"
		warns go_warns "Go program" "$TMP/go-true"
	else
		skip go_warns "objcopy failed: $(head -n 1 "$TMP/objcopy.err")"
	fi
else
	skip go_warns "no objcopy (binutils)"
fi
