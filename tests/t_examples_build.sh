#!/bin/sh
# The Dockerfiles of examples/docker build, replayed without a Docker engine: for each, the
# build stage's COPY lines copy exactly those paths of the tree into an empty directory (the
# stage's WORKDIR), its RUN lines that run make run there as written (a clean environment,
# DESTDIR under $TMP; the package manager's lines are the image's business), and the tree the
# runtime stage copies (COPY --from=build) holds the command and the library.  That installed
# command then runs the image's ENTRYPOINT, with its ENV's SOCKTUNE_* variables, on a python
# server, which reads from the kernel the backlog of its listener and TCP_NODELAY on its
# accepted connection; the library
# is in the server's /proc/PID/maps, at the path `socktune --print-library` prints.  Alpine's
# stage is also built with musl-gcc (link only: a musl library cannot go into Debian's python).
# Last, the library links with -z defs: a tree without common/ (what the Dockerfiles used to
# copy) fails at link time, not at run time with "undefined symbol: st_sockopts".
. "$(dirname "$0")/lib.sh"

command -v make >/dev/null 2>&1 || { skip examples-build "no make"; exit 0; }
CCHOST=${CC:-cc}

# stage FILE: the build stage of FILE (from the first FROM to the next), one instruction a
# line (continuations joined, comments dropped)
stage() {
	awk '/^[[:space:]]*#/ { next }
		{ line = cont $0; cont = "" }
		line ~ /\\$/ { cont = substr(line, 1, length(line) - 1) " "; next }
		toupper(line) ~ /^FROM / { n++; if (n > 1) exit; next }
		n == 1 && line != "" { print line }' "$1"
}

# runtime_from FILE: the source path of the runtime stage's COPY --from=build
runtime_from() {
	awk 'toupper($0) ~ /^COPY --FROM=/ { print $3; exit }' "$1"
}

# replay NAME FILE CTX OUT [VAR=value...]: the build stage of FILE in CTX, installing into
# OUT (DESTDIR=/x becomes DESTDIR=OUT/x); the make output in $TMP/NAME.make.  Status 1 with
# the reason in $TMP/NAME.why when a COPY or a RUN fails.
replay() {
	_rn=$1 _rf=$2 _rc=$3 _ro=$4
	shift 4
	_renv=$* # (COPY's words take the positional parameters below)
	mkdir -p "$_rc" "$_ro"
	: >"$TMP/$_rn.make"
	stage "$_rf" >"$TMP/$_rn.stage"
	while read -r _ins _rest; do
		case $(echo "$_ins" | tr '[:lower:]' '[:upper:]') in
		COPY)
			set -f
			# shellcheck disable=SC2086 # the instruction's words
			set -- $_rest
			set +f
			case $1 in --*) echo "COPY $1 not replayed" >"$TMP/$_rn.why"; return 1 ;; esac
			_dest=$(eval echo "\${$#}")
			case $_dest in /*) echo "COPY to an absolute $_dest" >"$TMP/$_rn.why"; return 1 ;; esac
			while [ $# -gt 1 ]; do
				if [ -d "$ROOT/$1" ]; then
					mkdir -p "$_rc/$_dest" && cp -R "$ROOT/$1/." "$_rc/$_dest/"
				elif [ -f "$ROOT/$1" ]; then
					case $_dest in
					*/ | .) mkdir -p "$_rc/$_dest" && cp "$ROOT/$1" "$_rc/$_dest/" ;;
					*) mkdir -p "$(dirname "$_rc/$_dest")" && cp "$ROOT/$1" "$_rc/$_dest" ;;
					esac
				else
					echo "COPY $1: not in the tree" >"$TMP/$_rn.why"
					return 1
				fi
				shift
			done
			;;
		RUN)
			case $_rest in make*) ;; *) continue ;; esac
			_cmd=$(printf '%s\n' "$_rest" | sed "s|DESTDIR=/|DESTDIR=$_ro/|g")
			# shellcheck disable=SC2086 # the VAR=value words
			if ! (cd "$_rc" && env -i PATH="$PATH" HOME="$TMP" $_renv sh -c "$_cmd") \
				>>"$TMP/$_rn.make" 2>&1; then
				echo "RUN $_cmd: $(grep -i 'error\|undefined\|no rule' "$TMP/$_rn.make" | head -n 3)" \
					>"$TMP/$_rn.why"
				return 1
			fi
			;;
		esac
	done <"$TMP/$_rn.stage"
}

somaxconn=$(cat /proc/sys/net/core/somaxconn)
for f in "$ROOT"/examples/docker/Dockerfile.*; do
	n=$(basename "$f" | sed 's/^Dockerfile\.//')
	ctx=$TMP/$n/src out=$TMP/$n/out
	if ! replay "$n" "$f" "$ctx" "$out" CC="$CCHOST"; then
		fail "$n.builds" "$(cat "$TMP/$n.why")"
		continue
	fi
	pass "$n.builds"
	from=$(runtime_from "$f")
	root=$out$from
	root=${root%/}
	check "$n.installs" "no $root/bin/socktune or $root/lib/libsocktune.so (COPY --from $from)" \
		-x "$root/bin/socktune" -a -f "$root/lib/libsocktune.so"
	[ -x "$root/bin/socktune" ] || continue

	# the ENTRYPOINT's options, the installed command in place of "socktune", with the
	# SOCKTUNE_* variables of the image's ENV lines (KEY=value pairs)
	opts=$(sed -n 's/^ENTRYPOINT \[ *"socktune", *\(.*\)\]/\1/p' "$f" | tr -d '",' | sed 's/ *--$//')
	envs=$(sed -n 's/^ENV  *//p' "$f" | tr ' ' '\n' | grep '^SOCKTUNE_[A-Z0-9_]*=' | tr -d '"' | tr '\n' ' ')
	want=$(printf '%s\n' "$envs" | tr ' ' '\n' | sed -n 's/^SOCKTUNE_BACKLOG=\([0-9]*\)$/\1/p')
	want=${want:-$(printf '%s\n' "$opts" | sed -n 's/.*--backlog \([0-9]*\).*/\1/p')}
	[ "${want:-0}" -gt "$somaxconn" ] && want=$somaxconn
	# shellcheck disable=SC2086 # the options' and the variables' words
	if start_server "$n.srv" $envs -- "$root/bin/socktune" $opts -- $PY "$ROOT/tests/py/optserver.py" --count 1; then
		maps=$(grep -c "$root/lib/libsocktune.so" "/proc/$SRV_PID/maps" 2>/dev/null)
		printed=$("$root/bin/socktune" --print-library 2>&1)
		$PY -c "import socket; s=socket.create_connection(('127.0.0.1',$SRV_PORT),timeout=5); s.send(b'x'); s.recv(1)" 2>/dev/null
		wait_server
		backlog=$(json_get "$TMP/$n.srv.out" listener.backlog 1)
		nodelay=$(json_get "$TMP/$n.srv.out" nodelay 2)
		check "$n.preloaded" "$root/lib/libsocktune.so mapped ${maps:-0} times in the server" "${maps:-0}" -ge 1
		check "$n.prints-its-library" "printed '$printed'" "$printed" = "$root/lib/libsocktune.so"
		check "$n.tunes-backlog" "backlog $backlog, want ${want:-?} ($opts): $(head -c 300 "$TMP/$n.srv.err")" \
			"$backlog" = "$want"
		check "$n.tunes-nodelay" "TCP_NODELAY $nodelay on the accepted socket: $(head -c 300 "$TMP/$n.srv.err")" \
			"$nodelay" = 1
	else
		fail "$n.runs" "the installed command did not start the server: $(cat "$TMP/$n.srv.err")"
	fi
done

# Alpine's stage with musl (what the image's gcc is)
if command -v musl-gcc >/dev/null 2>&1; then
	f=$ROOT/examples/docker/Dockerfile.alpine
	if replay alpine-musl "$f" "$TMP/musl/src" "$TMP/musl/out" CC=musl-gcc; then
		root=$TMP/musl/out$(runtime_from "$f")
		check alpine-musl.builds "no library or command in $root" \
			-f "$root/lib/libsocktune.so" -a -x "$root/bin/socktune"
	else
		fail alpine-musl.builds "$(cat "$TMP/alpine-musl.why")"
	fi
else
	skip alpine-musl.builds "no musl-gcc (apt-get install musl-tools)"
fi

# -z defs: the library of a tree without common/ does not link
mkdir -p "$TMP/nocommon"
cp -R "$ROOT/Makefile" "$ROOT/include" "$ROOT/shim" "$TMP/nocommon/"
(cd "$TMP/nocommon" && env -i PATH="$PATH" make CC="$CCHOST" build/libsocktune.so) >"$TMP/nocommon.out" 2>&1
rc=$?
check library-links-all-objects "without common/: status $rc, $(grep -c 'undefined reference' "$TMP/nocommon.out") undefined references; $(tail -n 2 "$TMP/nocommon.out" | tr '\n' ' ')" \
	$rc -ne 0 -a ! -f "$TMP/nocommon/build/libsocktune.so" -a \
	"$(grep -c 'undefined reference to .st_' "$TMP/nocommon.out")" -ge 1
