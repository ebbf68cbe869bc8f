# The helper library of the tests/t_*.sh scripts (POSIX sh), the one file they source, as
# their first command:  . "$(dirname "$0")/lib.sh"
# Results are lines: PASS name / FAIL name: why / SKIP name: why (counted by tests/run.sh).
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
LIB_SO=$B/libsocktune.so # the file itself
CLI=$B/socktune          # the command
LIB=$LIB_SO              # what tests put in LD_PRELOAD
# Sanitizer builds (make sanitize, make tsan): the sanitizer runtime must be the first object
# in LD_PRELOAD, ahead of the library built with it (docs/hardening.md).
[ -n "${ST_SANITIZER_PRELOAD:-}" ] && LIB=$ST_SANITIZER_PRELOAD:$LIB_SO
# make valgrind points ST_BIN at wrappers that run the helpers under memcheck.
BIN=${ST_BIN:-$B/tests/bin}
PY=/usr/bin/python3 # Debian's, dynamically linked (a pyenv shim or a static build is not)
TMP=$(mktemp -d /tmp/socktune-test.XXXXXX)
# The records of the BPF programs socktune attaches (cli/host/owned.h): the test's own, so
# that no test sees, or sweeps, another's (and nothing is written to the host's /run).
RUNTIME_DIRECTORY=$TMP/run
export RUNTIME_DIRECTORY
NS_LIST="" # the network namespaces setup_ns made and cleanup_ns has not removed
# Everything a test starts in the background is killed on exit, then its namespaces, its
# ports and its files go.  A test with more to undo names it in AT_EXIT (a command run
# first: cg_cleanup, say), so that all of this still happens.
AT_EXIT=""
trap 'lib_exit' EXIT
# (a signal, as run.sh's time limit or ^C sends, ends the test through the same cleanup)
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
lib_exit() {
	# (a second signal, run.sh's or timeout(1)'s, must not cut the cleanup short: a namespace
	# or cgroup of the test would be left on the host)
	trap '' HUP INT TERM
	[ -n "$AT_EXIT" ] && eval "$AT_EXIT"
	kill_jobs
	cleanup_ns $NS_LIST
	release_ports
	rm -rf "$TMP"
}
# kill_jobs: every process this shell started in the background and has not waited for gets
# SIGTERM.  (Not $(jobs -p): dash runs a command substitution in a subshell, which has no
# jobs: the list was always empty, and each run of the suite left an http.server and a watch
# running.)
kill_jobs() {
	jobs -p >"$TMP/.jobs" 2>/dev/null || return 0
	for _kj in $(cat "$TMP/.jobs"); do kill "$_kj" 2>/dev/null; done
}

# pass NAME, fail NAME WHY, skip NAME WHY: one result line.
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

# check NAME "what" test-args...: PASS when the test(1) expression holds.
check() {
	name=$1 what=$2
	shift 2
	if [ "$@" ]; then pass "$name"; else fail "$name" "$what"; fi
}

# free_port: a TCP port free on both 127.0.0.1 and ::1 (127.0.0.1 alone where there is no
# IPv6), for this test alone until it ends.  Test files run side by side (tests/run.sh), so a
# port that is merely free now may be taken before the server binds it: the port comes from
# outside net.ipv4.ip_local_port_range (below it, or above it when it starts low), where the
# kernel never puts a bind(port 0) or a connect(), and it is reserved, as a directory
# $PORTS/PORT made with mkdir (atomic) naming this shell's pid, which no other free_port
# takes while that pid lives.  lib_exit removes this test's reservations; tests/run.sh
# removes those of a test that did not get to (SIGKILL).  The directory is this user's own
# (made 0700; one of another owner is not used).
PORTS=${ST_PORTS_DIR:-/tmp/socktune-test-ports-$(id -u)}
free_port() {
	mkdir -m 700 "$PORTS" 2>/dev/null
	if [ ! -O "$PORTS" ] || [ -L "$PORTS" ]; then
		echo "free_port: $PORTS is not this user's own directory" >&2
		return 1
	fi
	_fp_n=0
	while [ $_fp_n -lt 20 ]; do
		_fp_n=$((_fp_n + 1))
		_fp=$($PY -c 'import errno, random, socket
lo, hi = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
below, above = (max(1024, lo // 2), lo), (hi + 1, 65536)
a, b = below if below[1] - below[0] >= 1000 or above[1] - above[0] < 1000 else above
for _ in range(200):
    port = random.randrange(a, b) if b > a else 0
    try:
        s = socket.socket(); s.bind(("127.0.0.1", port)); port = s.getsockname()[1]
        t = socket.socket(socket.AF_INET6)
        try:
            t.bind(("::1", port))
        except OSError as e:
            if e.errno not in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT): raise
    except OSError:
        continue
    print(port); break') || return 1
		[ -n "$_fp" ] || return 1
		if mkdir "$PORTS/$_fp" 2>/dev/null; then
			echo $$ >"$PORTS/$_fp/pid"
			echo "$_fp" >>"$TMP/.ports"
			echo "$_fp"
			return 0
		fi
	done
	return 1
}
# release_ports: this test's reservations removed (lib_exit does it).
release_ports() {
	[ -f "$TMP/.ports" ] || return 0
	for _rp in $(cat "$TMP/.ports"); do rm -rf "${PORTS:?}/$_rp"; done
	rm -f "$TMP/.ports"
}

# ---- waits: every one bounded, its timeout an argument ----

# busywait TIMEOUT_MS CMD...: run CMD until it succeeds, every 50 ms, for TIMEOUT_MS at
# least (TIMEOUT_MS/50 sleeps, then one last try); the status of the last try.
busywait() {
	_bw_n=$(($1 / 50))
	shift
	"$@" && return 0
	while [ "$_bw_n" -gt 0 ]; do
		sleep 0.05
		"$@" && return 0
		_bw_n=$((_bw_n - 1))
	done
	return 1
}

# count_lines FILE PATTERN: number of lines matching (0 when none or no file).
count_lines() {
	_c=$(grep -c "$2" "$1" 2>/dev/null)
	echo "${_c:-0}"
}

# file_has FILE PATTERN [N]: true when FILE has at least N (default 1) lines matching PATTERN.
file_has() {
	[ "$(count_lines "$1" "$2")" -ge "${3:-1}" ]
}

# listening PORT: true when something listens on TCP PORT (v4 or v6), as ss sees it.
listening() {
	ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
}

# gone PID: true when no process PID is left.
gone() {
	! kill -0 "$1" 2>/dev/null
}

# wait_listen PORT [SECONDS]: until something listens on PORT; at most SECONDS (default 5).
wait_listen() {
	busywait $((${2:-5} * 1000)) listening "$1"
}

# wait_file FILE PATTERN [SECONDS]: until FILE has a line matching PATTERN; at most SECONDS
# (default 5).
wait_file() {
	busywait $((${3:-5} * 1000)) file_has "$1" "$2"
}

# wait_gone PID [SECONDS]: until process PID is gone; at most SECONDS (default 5).
wait_gone() {
	busywait $((${2:-5} * 1000)) gone "$1"
}

# field LINE KEY: the value of key=value in a logfmt line, a quoted one unquoted (its \" and
# \\ escapes undone); a list's items are keys of their own (fix.0, fix.1).
field() {
	printf '%s\n' "$1" | awk -v k="$2" '{
		s = $0
		while (s != "") {
			sub(/^ +/, "", s)
			if (!match(s, /^[A-Za-z0-9_.]+=/)) { sub(/^[^ ]* ?/, "", s); continue }
			key = substr(s, 1, RLENGTH - 1)
			s = substr(s, RLENGTH + 1)
			v = ""
			if (substr(s, 1, 1) == "\"") {
				s = substr(s, 2)
				while (s != "" && substr(s, 1, 1) != "\"") {
					if (substr(s, 1, 1) == "\\") s = substr(s, 2)
					v = v substr(s, 1, 1)
					s = substr(s, 2)
				}
				s = substr(s, 2)
			} else {
				match(s, /^[^ ]*/)
				v = substr(s, 1, RLENGTH)
				s = substr(s, RLENGTH + 1)
			}
			if (key == k) { print v; exit }
		}
	}'
}

# kernel_range LEVEL OPTNAME TAKEN LO HI: the least and the greatest int a TCP socket takes
# for the socket option (LEVEL, OPTNAME), as "LEAST GREATEST", by bisection on a probe socket
# from TAKEN (a value it takes) down to LO and up to HI (the values taken must be one run);
# "none" when the kernel lacks the option (ENOPROTOOPT), "refused" when it refuses TAKEN.
kernel_range() {
	$PY - "$@" <<'EOF'
import socket, sys
level, name, taken, lo, hi = map(int, sys.argv[1:])
s = socket.socket()
def ok(v):
    try:
        s.setsockopt(level, name, v)
        return True
    except OSError as e:
        if e.errno == 92:
            print("none")
            sys.exit(0)
        return False
if not ok(taken):
    print("refused")
    sys.exit(0)
a, b = lo, taken
while a < b:
    m = (a + b) // 2
    if ok(m): b = m
    else: a = m + 1
c, d = taken, hi
while c < d:
    m = (c + d + 1) // 2
    if ok(m): c = m
    else: d = m - 1
print(a, c)
EOF
}

# kernel_keeps LEVEL OPTNAME VALUE: what getsockopt reads on a TCP socket after setsockopt
# of VALUE (an option the kernel rounds: its rounding); nothing when it refuses VALUE.
kernel_keeps() {
	$PY -c 'import socket, sys
l, o, v = map(int, sys.argv[1:])
s = socket.socket(); s.setsockopt(l, o, v); print(s.getsockopt(l, o))' "$@" 2>/dev/null
}

# refused_by_name NAME WANT [VAR=value...] -- ARGS...: socktune ARGS -- touch FILE, with those
# variables set, is refused before it runs anything: status 2, the program not run, one line
# on stderr, and that line has WANT (a fixed string: "--rto-max 999: out of range (1000ms..").
refused_by_name() {
	_n=$1 _want=$2
	shift 2
	_envs=""
	while [ "$1" != "--" ]; do _envs="$_envs $1"; shift; done
	shift
	rm -f "$TMP/ran"
	# shellcheck disable=SC2086 # the variables, one word each
	env $_envs "$CLI" "$@" -- touch "$TMP/ran" >"$TMP/$_n.out" 2>"$TMP/$_n.err"
	_rc=$?
	check "$_n" "status $_rc (want 2), ran: $([ -e "$TMP/ran" ] && echo yes || echo no), $(wc -l <"$TMP/$_n.err") lines (want 1, with '$_want'): $(cat "$TMP/$_n.err")" \
		"$_rc" = 2 -a ! -e "$TMP/ran" -a "$(wc -l <"$TMP/$_n.err")" = 1 -a \
		-n "$(grep -F -- "$_want" "$TMP/$_n.err")"
}

# json_get FILE|- PATH [LINE]: the value at the dotted PATH (a number indexes a list:
# listeners.0.port) of the JSON document in FILE ("-": stdin) or, with LINE, of the one on
# line LINE (1-based) of FILE, printed as python prints it (True, False, None); nothing and
# status 1 when there is no such value.
json_get() {
	$PY -c 'import json, sys
f = sys.stdin if sys.argv[1] == "-" else open(sys.argv[1])
d = json.loads(f.read().splitlines()[int(sys.argv[3]) - 1]) if len(sys.argv) > 3 else json.load(f)
for k in sys.argv[2].split("."):
    d = d[int(k)] if isinstance(d, list) else d[k]
print(d)' "$@" 2>/dev/null
}

# ---- network namespaces (a test that needs more than 127.0.0.1 and ::1 makes its own) ----

# setup_ns VAR...: for each VAR a new network namespace, its name in $VAR (st-VAR-PID-XXXXXX:
# unique), its loopback up; removed on exit unless cleanup_ns removed it first.  Returns 1
# at the first that cannot be made (not root, no ip netns), with the ones made registered.
setup_ns() {
	for _ns_var in "$@"; do
		_ns_name=st-$_ns_var-$$-$(mktemp -u XXXXXX)
		ip netns add "$_ns_name" || return 1
		NS_LIST="$NS_LIST $_ns_name"
		ip -n "$_ns_name" link set lo up || return 1
		eval "$_ns_var=\$_ns_name"
	done
}

# cleanup_ns NAME...: remove these network namespaces now, with any process left in them
# (only this test's: it made them, by a unique name); returns 1 when one would not go.
cleanup_ns() {
	_ns_rc=0 _ns_keep=""
	for _ns in "$@"; do
		ip netns pids "$_ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$_ns" 2>/dev/null || _ns_rc=1
	done
	for _ns in $NS_LIST; do
		case " $* " in *" $_ns "*) ;; *) _ns_keep="$_ns_keep $_ns" ;; esac
	done
	NS_LIST=$_ns_keep
	return $_ns_rc
}

# ---- servers: started one way, in the background ----

# host_of 4|6: the loopback address of the family.
host_of() {
	if [ "$1" = 6 ]; then echo ::1; else echo 127.0.0.1; fi
}

# PORT_LINE: what a server prints once it listens: "PORT n" (the C helpers and the python
# servers; the word may follow others, as in "DAEMON pid PORT n") or a JSON object with
# "port": n (tests/py/optserver.py).  port_of FILE: n from the first such line of FILE.
PORT_LINE='\(^\| \)PORT [0-9]\|"port": [0-9]'
port_of() {
	sed -n -e 's/^\(.* \)\{0,1\}PORT \([0-9][0-9]*\).*/\2/p' -e 's/.*"port": \([0-9][0-9]*\).*/\1/p' "$1" |
		head -n 1
}

# start_server [-t SECONDS] [-l PORT] NAME [VAR=value...] -- CMD [ARGS...]: CMD in the
# background with the VAR=value environment (env(1)), stdout in $TMP/NAME.out, stderr in
# $TMP/NAME.err, then a wait of at most SECONDS (default 5) for its PORT_LINE or, with -l,
# until PORT listens (a server that prints no port, such as python -m http.server).  Sets
# SRV_PID and SRV_PORT; returns 1 when the wait ran out (the process is left running: the
# caller reports it, and the EXIT trap kills it).  SRV_WRAP, when set, goes in front of it
# all (words: an strace or ip netns exec command line, say).
start_server() {
	_sv_t=5 _sv_l=""
	while [ $# -gt 0 ]; do
		case $1 in
		-t) _sv_t=$2 ;;
		-l) _sv_l=$2 ;;
		*) break ;;
		esac
		shift 2
	done
	_sv_name=$1
	shift
	# "VAR=value... -- CMD ARGS..." -> "VAR=value... CMD ARGS..." for env(1), every word
	# as it came (an empty value, spaces, bytes that are not UTF-8)
	_sv_k=$# _sv_sep=""
	while [ "$_sv_k" -gt 0 ]; do
		_sv_a=$1
		shift
		_sv_k=$((_sv_k - 1))
		if [ -z "$_sv_sep" ] && [ "$_sv_a" = "--" ]; then _sv_sep=1; else set -- "$@" "$_sv_a"; fi
	done
	# (emptied here first: the background command's own redirection comes when it runs,
	# and till then a NAME started before has its PORT line there, its port read as this one's)
	: >"$TMP/$_sv_name.out"
	: >"$TMP/$_sv_name.err"
	# shellcheck disable=SC2086 # the wrapper words are split on purpose
	${SRV_WRAP:-} env "$@" >"$TMP/$_sv_name.out" 2>"$TMP/$_sv_name.err" &
	SRV_PID=$!
	if [ -n "$_sv_l" ]; then
		SRV_PORT=$_sv_l
		wait_listen "$SRV_PORT" "$_sv_t"
		return
	fi
	SRV_PORT=""
	wait_file "$TMP/$_sv_name.out" "$PORT_LINE" "$_sv_t" || return 1
	SRV_PORT=$(port_of "$TMP/$_sv_name.out")
	[ -n "$SRV_PORT" ]
}

# wait_server: wait for the last server start_server started (bounded by the server
# itself: tserver gives up after -t s, the others after a timeout of their own).
wait_server() {
	wait "$SRV_PID" 2>/dev/null
}

# ---- the project's test servers: tserver, kaclient, tests/py/optserver.py ----

# ts_start NAME [VAR=value...] -- [tserver args...]: start_server for tserver (its PORT line
# within 5 s); put LD_PRELOAD=$LIB in the environment to preload.  TS_CMD, when set,
# replaces the tserver command (words: a program and its first arguments).
ts_start() {
	_ts_name=$1
	shift
	# insert the command after the first "--" (or at the end: no tserver args)
	_ts_k=$# _ts_sep=""
	while [ "$_ts_k" -gt 0 ]; do
		_ts_a=$1
		shift
		_ts_k=$((_ts_k - 1))
		if [ -z "$_ts_sep" ] && [ "$_ts_a" = "--" ]; then
			_ts_sep=1
			# shellcheck disable=SC2086 # TS_CMD is split into words on purpose
			set -- "$@" -- ${TS_CMD:-"$BIN/tserver"}
		else
			set -- "$@" "$_ts_a"
		fi
	done
	# shellcheck disable=SC2086
	[ -n "$_ts_sep" ] || set -- "$@" -- ${TS_CMD:-"$BIN/tserver"}
	start_server "$_ts_name" "$@"
}

# ts_serve NAME FAMILY CONNS [VAR=value...] -- [tserver args]: ts_start, then CONNS
# connections from kaclient (within 5 s; its line in $TMP/NAME.client), then wait_server.
# Fails the test NAME when the server does not come up.
ts_serve() {
	_sn=$1 _sfam=$2 _sc=$3
	shift 3
	if ! ts_start "$_sn" "$@"; then
		fail "$_sn" "tserver did not start: $(cat "$TMP/$_sn.err")"
		return 1
	fi
	"$BIN/kaclient" burst -n "$_sc" -T 5 "$(host_of "$_sfam")" "$SRV_PORT" >"$TMP/$_sn.client"
	wait_server
	return 0
}

# ts_val NAME KIND KEY [N]: KEY=value from the N-th (default 1st) line of tserver's output
# starting with KIND (LISTENER, CONN, DONE).
ts_val() {
	_line=$(grep "^$2 " "$TMP/$1.out" | sed -n "${4:-1}p")
	field "$_line" "$3"
}

# kc_val LINE KEY: the value of KEY in a kaclient result line.
kc_val() {
	field "$1" "$2"
}

# log_line NAME EVENT: the first socktune log line with event=EVENT in $TMP/NAME.err.
log_line() {
	grep "^socktune .* event=$2\( \|$\)" "$TMP/$1.err" | head -n 1
}

# opt_serve NAME FAMILY COUNT [optserver args]: start_server for tests/py/optserver.py
# under the preload (the caller exports the environment; SRV_WRAP as for start_server),
# then COUNT connections that each send a byte and read one (5 s each), then wait_server
# (optserver gives up after 20 s); its output in $TMP/NAME.out (JSON lines) and
# $TMP/NAME.err.  Fails NAME when no server came up.
opt_serve() {
	_on=$1 _of=$2 _oc=$3
	shift 3
	if ! start_server "$_on" LD_PRELOAD="$LIB" -- $PY "$ROOT/tests/py/optserver.py" \
		--family "$_of" --count "$_oc" "$@"; then
		fail "$_on" "server did not start: $(cat "$TMP/$_on.err")"
		return 1
	fi
	_oi=0
	while [ $_oi -lt "$_oc" ]; do
		$PY -c "import socket; s=socket.create_connection(('$(host_of "$_of")',$SRV_PORT),timeout=5); s.send(b'x'); s.recv(1)" 2>/dev/null
		_oi=$((_oi + 1))
	done
	wait_server
}

# ---- another process's sockets, as the kernel has them ----

# nodelay_of PID WHAT: TCP_NODELAY of PID's listener (WHAT "listener") or of its connection
# with the client's port WHAT, read on a pidfd_getfd copy (tests/py/sockopts_of.py: the test
# needs CAP_SYS_PTRACE over PID); "" when there is none
nodelay_of() {
	$PY "$ROOT/tests/py/sockopts_of.py" "$1" 2>/dev/null | awk -v w="$2" '
		w == "listener" && / listening=1 / { sub(/.*nodelay=/, ""); print; exit }
		w != "listener" && $4 == "peer=" w { sub(/.*nodelay=/, ""); print; exit }'
}
# ka_conn PORT SECONDS [N]: kaclient's keep-alive GETs, one connection, to the HTTP/1.1 server
# on 127.0.0.1:PORT in the background for SECONDS or N GETs (default 100000) at most, the
# first to come (its pid in KC, its lines in $TMP/kc.out; once NODELAY is set, http.server
# answered 20,000 in 14 s on a loaded machine); then CP, the client's port of that
# connection once it is established (5 s at most; status 1 when it is not)
ka_conn() {
	"$BIN/kaclient" http -n "${3:-100000}" -T "$2" 127.0.0.1 "$1" >"$TMP/kc.out" 2>&1 &
	KC=$!
	_kp=$1
	busywait 5000 ka_conn_port
}
ka_conn_port() {
	CP=$(ss -Htn state established "dport = :$_kp" | awk '{ n = split($3, a, ":"); print a[n]; exit }')
	[ -n "$CP" ]
}

# ---- a stall's cure, counted on a loaded machine ----

# cured_within NAME BOUND CMD...: CMD, one count of requests after a stall's cure, run in
# this shell (it sets OVER, the requests over the threshold, "" when it got no count; a status
# not 0 when it could not measure, said by itself, ends the tries with that status), again
# while OVER is over BOUND or empty: 3 tries at most, each said ("# NAME: try 2: 7 over, at
# most 5").  OVER and what else CMD sets are the last try's, TRIES every try's count ("9 0");
# TRY, the try's number, is CMD's to read.  Why a try again: the stalls cured are 40 ms
# timers (the delayed ACK, or Nagle waiting for it) that hold nearly every request of every
# try while the cure is missing, so a missing cure fails all three; a cured request takes well
# under 1 ms and goes over the threshold only when the scheduler holds a process back (2 cores
# shared by tests side by side, a sanitizer build 3-20x slower), which comes in bursts.
cured_within() {
	_cw_name=$1 _cw_bound=$2 TRIES="" TRY=0
	shift 2
	while [ "$TRY" -lt 3 ]; do
		TRY=$((TRY + 1))
		OVER=""
		"$@" || return
		TRIES="$TRIES${TRIES:+ }${OVER:-none}"
		_cw_said=${OVER:+$OVER over}
		echo "# $_cw_name: try $TRY: ${_cw_said:-no count}, at most $_cw_bound"
		[ -n "$OVER" ] && [ "$OVER" -le "$_cw_bound" ] && return 0
	done
	return 0
}
# kaget_again GOFILE OUTFILE: tests/py/kaget.py's next requests on its open connection
# (GOFILE made; its line in OUTFILE within 15 s); OVER: those over 30 ms ("" none came).
# kaget_end GOFILE: it closes the connection and ends (GOFILE says so, renamed in whole).
kaget_again() {
	_ka_n=$(count_lines "$2" '^nodelay=')
	: >"$1"
	busywait 15000 file_has "$2" '^nodelay=' $((_ka_n + 1))
	OVER=$(sed -n 's/^after=//p' "$2" | sed -n "$((_ka_n + 1))p")
}
kaget_end() {
	echo end >"$1.end" && mv "$1.end" "$1"
}

# ---- socktune doctor's JSON report ----

# kinds FILE: the findings' kinds of doctor's JSON in FILE, one per line ("" when none)
kinds() {
	$PY -c 'import json, sys
for f in json.load(open(sys.argv[1]))["findings"]: print(f["kind"])' "$1" 2>/dev/null
}
# finding FILE KIND KEY: the KEY of the first finding of KIND (fix: its fixes, one per line;
# evidence.NAME: one value of its evidence; note)
finding() {
	$PY -c 'import json, sys
for f in json.load(open(sys.argv[1]))["findings"]:
    if f["kind"] == sys.argv[2]:
        v = f
        for k in sys.argv[3].split("."): v = v[k]
        print("\n".join(map(str, v)) if isinstance(v, list) else v); break' "$1" "$2" "$3" 2>/dev/null
}
# schema_problems FILE: the keys of the JSON document in FILE that `socktune --schema` lacks
# (a group's members as GROUP.MEMBER, listed there as .MEMBER) or whose value has another
# JSON type (null fits any), one line each (tests/py/schema_check.py); nothing when it fits
schema_problems() {
	"$CLI" --schema >"$TMP/schema.txt" || { echo "socktune --schema failed"; return; }
	$PY "$ROOT/tests/py/schema_check.py" "$TMP/schema.txt" "$1" | grep -v '^ok$'
}
# held_burst WRAP NAME PID PORT SECONDS: through WRAP (words: "ip netns exec NS"), one
# connection to PORT held for 8 s (a server serving it accepts no other), then doctor --json
# on PID for SECONDS (into $TMP/NAME.json) while 300 connects come at once, once its window
# has begun (doctor says so on stderr after its first sample)
held_burst() {
	_hw=$1 _hn=$2 _hp=$3 _hport=$4 _hs=$5
	# shellcheck disable=SC2086 # the wrapper's words
	$_hw $PY -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5); print("HELD", flush=True)
time.sleep(8)' "$_hport" >"$TMP/$_hn.held" &
	wait_file "$TMP/$_hn.held" '^HELD' 10
	"$CLI" doctor --seconds "$_hs" --json "$_hp" >"$TMP/$_hn.json" 2>"$TMP/$_hn.derr" &
	_hd=$!
	wait_file "$TMP/$_hn.derr" '^socktune: doctor: watching ' 20
	# shellcheck disable=SC2086
	$_hw "$BIN/kaclient" burst -n 300 -T 3 127.0.0.1 "$_hport" >"$TMP/$_hn.client" 2>&1
	wait "$_hd"
}

# The helpers of what needs root (a cgroup of the test's own, the TCP iterator, a real path
# between namespaces), a file of their own
. "$ROOT/tests/lib_root.sh"
