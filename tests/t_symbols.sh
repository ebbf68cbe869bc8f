#!/bin/sh
# The shared object exports the hooks and nothing else, depends on libc alone, and the
# library and the test programs build warning-free (-Werror) with gcc and with clang.
. "$(dirname "$0")/lib.sh"

# the hooks the library must export
REQUIRED="socket bind listen accept accept4 close read readv recv recvfrom recvmsg __read_chk __recv_chk __recvfrom_chk"

nm -D --defined-only "${LIB_SO:-$LIB}" >"$TMP/nm" 2>&1 || fail nm "nm -D failed: $(cat "$TMP/nm")"
exported=$(awk 'NF == 3 { print $3 }' "$TMP/nm" | sed 's/@.*//' | sort -u)

missing=""
for s in $REQUIRED; do
	echo "$exported" | grep -qx "$s" || missing="$missing $s"
done
check exports_required_hooks "not exported:$missing" -z "$missing"
grep -q close_range "$(ldd "${LIB_SO:-$LIB}" | awk '/libc\.so/ { print $3 }')" 2>/dev/null &&
	check exports_close_range "libc has close_range, the library does not hook it" \
		-n "$(echo "$exported" | grep -x close_range)"

# every exported symbol is a function (T) that libc exports too: a hook, not an internal
notfunc=$(awk 'NF == 3 && $2 != "T" && $2 != "W" { print $3 }' "$TMP/nm" | tr '\n' ' ')
check exports_functions_only "exported non-functions: $notfunc" -z "$notfunc"
libc=$(ldd "${LIB_SO:-$LIB}" | awk '/libc\.so/ { print $3 }')
if [ -n "$libc" ] && [ -f "$libc" ]; then
	nm -D --defined-only "$libc" | awk 'NF == 3 { print $3 }' | sed 's/@.*//' | sort -u >"$TMP/libc"
	extra=$(echo "$exported" | while read -r s; do grep -qx "$s" "$TMP/libc" || printf '%s ' "$s"; done)
	check exports_only_hooks "exported symbols that are no libc function: $extra" -z "$extra"
else
	skip exports_only_hooks "cannot find libc through ldd"
fi
check exports_no_internals "internal names exported: $(echo "$exported" | grep '^st_' | tr '\n' ' ')" \
	-z "$(echo "$exported" | grep '^st_')"
# the version script and the exports agree
mapped=$(sed -n '/global:/,/local:/p' "$ROOT/shim/libsocktune.map" | tr ' ;\t' '\n\n\n' |
	grep -v -e '^$' -e ':' -e '^/' -e '^\*$' | sort -u)
check exports_match_map "map: $(echo "$mapped" | tr '\n' ' ') / exported: $(echo "$exported" | tr '\n' ' ')" \
	"$mapped" = "$exported"
# the hooked functions are listed once, in ST_HOOKS (shim/hooks.h): every row but the REAL
# ones (looked up, not hooked) is in the version script, and nothing else is
listed=$(sed -n 's/^[[:space:]]*X([a-z_0-9]*, \([a-z_0-9]*\), \(HOOK\|OPTIONAL\|LISTED\),.*/\1/p' \
	"$ROOT/shim/hooks.h" | sort -u)
check hooks_list_matches_map "ST_HOOKS: $(echo "$listed" | tr '\n' ' ') / map: $(echo "$mapped" | tr '\n' ' ')" \
	-n "$listed" -a "$listed" = "$mapped"

needed=$(readelf -d "${LIB_SO:-$LIB}" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
# (a sanitizer build also needs its runtime: make sanitize and make tsan set ST_SANITIZER)
bad=$(for n in $needed; do case "$n" in libc.so.* | libdl.so.* | libpthread.so.* | ld-linux*) ;;
	lib[atu]san.so.* | libubsan.so.*) [ -z "${ST_SANITIZER:-}" ] && printf '%s ' "$n" ;;
	*) printf '%s ' "$n" ;; esac; done)
check depends_on_libc_only "NEEDED: $needed" -n "$needed" -a -z "$bad"

# -Werror with both compilers, into a scratch build directory
for cc in gcc clang; do
	if ! command -v $cc >/dev/null 2>&1; then
		skip build_werror_$cc "$cc not installed"
		continue
	fi
	# one build per compiler: it must be warning-free (CI builds with -Werror) and, whatever
	# the warnings, export every hook (a hook that is not exported is silently never called)
	if make -s -C "$ROOT" CC=$cc BUILD="$TMP/b-$cc" "$TMP/b-$cc/libsocktune.so" >"$TMP/make-$cc" 2>&1; then
		check build_no_warnings_$cc "$(grep -m 3 'warning:' "$TMP/make-$cc" | tr '\n' ' ')" \
			"$(grep -c 'warning:' "$TMP/make-$cc")" -eq 0
		ex=$(nm -D --defined-only "$TMP/b-$cc/libsocktune.so" | awk 'NF == 3 { print $3 }')
		missing=""
		for s in $REQUIRED; do
			echo "$ex" | grep -qx "$s" || missing="$missing $s"
		done
		check exports_with_$cc "built with $cc, not exported:$missing" -z "$missing"
	else
		fail build_$cc "$(grep -m 3 'error' "$TMP/make-$cc" | tr '\n' ' ')"
	fi
	bad=""
	# (-Icli: bpfq and iterprobe name the command's host files as the command does)
	for src in "$ROOT"/tests/helpers/*.c; do
		$cc -std=gnu11 -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Wformat=2 \
			-Wno-format-nonliteral -Werror -O2 -D_FORTIFY_SOURCE=2 -D_GNU_SOURCE \
			-I"$ROOT/include" -I"$ROOT/tests/helpers" -I"$ROOT/cli" -o "$TMP/helper" "$src" -lpthread \
			>>"$TMP/helpers-$cc" 2>&1 || bad="$bad $(basename "$src")"
	done
	check build_helpers_werror_$cc "did not build:$bad $(head -n 3 "$TMP/helpers-$cc" 2>/dev/null | tr '\n' ' ')" -z "$bad"
done
