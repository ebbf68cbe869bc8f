# Shared by the tests/t_*.sh scripts (POSIX sh).  Source it: . "$ROOT/tests/lib.sh"
# Results are lines: PASS name / FAIL name: why / SKIP name: why (counted by tests/run.sh).
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
LIB_SO=$B/libsocktune.so # the file itself
LIB=$LIB_SO              # what tests put in LD_PRELOAD
# Sanitizer builds (make asan, make tsan): the sanitizer runtime must be the first object
# in LD_PRELOAD, ahead of the library built with it (docs/hardening.md).
[ -n "${ST_SANITIZER_PRELOAD:-}" ] && LIB=$ST_SANITIZER_PRELOAD:$LIB_SO
# make valgrind points ST_BIN at wrappers that run the helpers under memcheck.
BIN=${ST_BIN:-$B/tests/bin}
PY=/usr/bin/python3 # Debian's, dynamically linked (a pyenv shim or a static build is not)
TMP=$(mktemp -d /tmp/socktune-test.XXXXXX)
# Everything a test starts in the background is killed on exit.
trap 'for p in $(jobs -p); do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

# check NAME "what" test-args...: PASS when the test(1) expression holds.
check() {
	name=$1 what=$2
	shift 2
	if [ "$@" ]; then pass "$name"; else fail "$name" "$what"; fi
}

# A free TCP port on 127.0.0.1 (the kernel picks it; a race with another test is unlikely).
free_port() {
	$PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_listen PORT: until something listens on PORT (v4 or v6), at most 5 s.
wait_listen() {
	i=0
	while [ $i -lt 100 ]; do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# wait_file FILE PATTERN: until FILE has a line matching PATTERN, at most 5 s.
wait_file() {
	i=0
	while [ $i -lt 100 ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# field LINE KEY: the value of key=value in a logfmt line.
field() {
	printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}
