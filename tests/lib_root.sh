# Sourced by tests/lib.sh (its helpers, its variables): the helpers of what needs root and
# a kernel feature, each of which skips the test with the reason where this machine lacks it.

# ---- a cgroup of the test's own (socktune --cgroup) ----

# cg_needs NAME: skips NAME (and exits) unless this machine can run socktune --cgroup (its
# first line of refusal said)
cg_needs() {
	"$CLI" --cgroup --initcwnd 40 -- true 2>"$TMP/probe.err"
	_rc=$?
	if [ $_rc -ne 0 ]; then
		skip "$1" "this machine cannot run the cgroup mode (status $_rc): $(grep -v '^socktune pid=' "$TMP/probe.err" | head -n 1)"
		exit 0
	fi
}
# cg_test_dir NAME: skips NAME (and exits) unless this machine can run socktune --cgroup and
# a cgroup of the test's own can be made; then $CG is that cgroup (under the v2 mount, named
# for NAME and this shell's pid), and cg_cleanup, run at exit (AT_EXIT), ends its
# processes, detaches every program from it (ours and the test's own) and removes it.
cg_test_dir() {
	cg_needs "$1"
	MNT=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
	CG=$MNT/socktune-$1-test-$$
	if [ -z "$MNT" ] || ! mkdir "$CG" 2>"$TMP/mkdir.err"; then
		skip "$1" "cannot make a test cgroup under '$MNT': $(cat "$TMP/mkdir.err")"
		exit 0
	fi
	AT_EXIT=cg_cleanup
}
cg_cleanup() {
	kill_jobs
	for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill "$p" 2>/dev/null; done
	for id in $( ("$BIN/bpfq" attached "$CG"; "$BIN/bpfq" attached "$CG" setsockopt) 2>/dev/null | cut -d' ' -f1); do
		"$BIN/bpfq" detach "$CG" "$id"
	done
	# (a process killed leaves the cgroup when it is reaped: each foreground command's wait
	# reaps this shell's children too)
	busywait 10000 sh -c "rmdir '$CG' 2>/dev/null || [ ! -e '$CG' ]" && return 0
	echo "# $CG not removed: it still holds $(for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do
		printf '%s ' "$p:$(cut -d' ' -f2,3 "/proc/$p/stat" 2>/dev/null)"; done)"
}

# ---- the TCP iterator (cli/host/bpfiter.c): options set on open connections, no ptrace ----

# Words put in front of a command: AS_NOBODY runs it as uid and gid 65534, no other group
# (a server whose sockets root reaches only as another uid's); NOPTRACE without
# CAP_SYS_PTRACE (no pidfd_getfd copy: what is left is the iterator); NOCAPS without
# CAP_BPF and CAP_SYS_ADMIN too (neither path).
AS_NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
NOPTRACE="setpriv --bounding-set=-sys_ptrace"
NOCAPS="setpriv --bounding-set=-sys_ptrace,-bpf,-sys_admin"

# needs_iterator NAME [TOOL...]: skips NAME (and exits) unless the test runs as root with
# every TOOL (setpriv, ip, ss...) and this kernel runs socktune's TCP iterator (iterprobe
# probe: its reason said when it does not)
needs_iterator() {
	_ni=$1 _ni_ok=1
	shift
	[ "$(id -u)" = 0 ] || _ni_ok=0
	for _ni_t in "$@"; do command -v "$_ni_t" >/dev/null || _ni_ok=0; done
	if [ $_ni_ok = 0 ]; then
		skip "$_ni" "needs root$([ $# -gt 0 ] && printf ', %s' "$@" | sed 's/\(.*\), /\1 and /')"
		exit 0
	fi
	if ! _ni_why=$("$BIN/iterprobe" probe); then
		skip "$_ni" "$_ni_why"
		exit 0
	fi
}
# iter_none_left NAME FILE: every event=iterator line of FILE (socktune's stderr) names a
# program, map and link the kernel no longer has (by their ids), and there is one at least
iter_none_left() {
	grep 'event=iterator ' "$2" >"$TMP/iter.lines" 2>/dev/null
	_nl_n=0 _nl_bad=""
	while read -r _nl; do
		_nl_n=$((_nl_n + 1))
		_nl_r=$("$BIN/iterprobe" ids "$(field "$_nl" prog_id)" "$(field "$_nl" map_id)" "$(field "$_nl" link_id)")
		[ "$_nl_r" = "left prog=0 map=0 link=0" ] || _nl_bad="$_nl_bad [$_nl -> $_nl_r]"
	done <"$TMP/iter.lines"
	check "$1" "runs $_nl_n, left:${_nl_bad:- none} ($(cat "$2"))" "$_nl_n" -ge 1 -a -z "$_nl_bad"
}

# ---- a real path: pathemu between two namespaces (tests/helpers/pathemu.c) ----

# path_needs NAME: skips NAME (and exits) unless this machine can run pathemu (root, TUN)
path_needs() {
	if [ "$(id -u)" != 0 ]; then
		skip "$1" "needs root (network namespaces, TUN devices)"
		exit 0
	fi
	if [ ! -c /dev/net/tun ]; then
		skip "$1" "no TUN device here (/dev/net/tun)"
		exit 0
	fi
}
# path_start NAME ARGS...: pathemu ARGS in the background (its lines in $TMP/NAME.emu), waited
# for until its READY line (5 s); sets EMU (its pid), NA and NB (its namespaces: end a is
# 198.18.0.1, end b 198.18.1.1) and CLEANER (the pid of its cleaner); the emulator removes
# them when it ends (lib_exit's kill), the cleaner when it is killed
path_start() {
	_pn=$1
	shift
	"$BIN/pathemu" --name "$_pn" "$@" >"$TMP/$_pn.emu" 2>"$TMP/$_pn.emuerr" &
	EMU=$!
	wait_file "$TMP/$_pn.emu" '^READY ' 5 || return 1
	_pr=$(grep '^READY ' "$TMP/$_pn.emu")
	NA=$(field "$_pr" a) NB=$(field "$_pr" b) CLEANER=$(field "$_pr" cleaner)
}
# path_up TEST NAME ARGS...: path_start NAME ARGS, or TEST.setup fails (pathemu's stderr
# said) and the test ends
path_up() {
	_pu=$1
	shift
	path_start "$@" && return 0
	fail "$_pu.setup" "no path: $(cat "$TMP/$1.emuerr")"
	exit 0
}
# path_serve TEST NAME CMD...: start_server NAME -- CMD in end b (entered as nsenter --net=
# does: the mounts stay the host's, its cgroup v2 among them); sets SRV, its pid, or
# TEST.setup fails (its stderr said) and the test ends
path_serve() {
	_ps=$1 _psn=$2
	shift 2
	SRV_WRAP="nsenter --net=/run/netns/$NB"
	start_server "$_psn" -- "$@"
	_ps_rc=$?
	SRV_WRAP=""
	if [ $_ps_rc != 0 ]; then
		fail "$_ps.setup" "no server: $(cat "$TMP/$_psn.err")"
		exit 0
	fi
	SRV=$SRV_PID
}
# in_a CMD...: CMD in the path's end a
in_a() { nsenter --net="/run/netns/$NA" "$@"; }
# path_loss_based NS: the namespace's default congestion control made a loss-based one:
# cubic where the host allows it to namespaces (net.ipv4.tcp_allowed_congestion_control),
# else reno (always allowed); the name on stdout
path_loss_based() {
	for _cc in cubic reno; do
		if ip netns exec "$1" sysctl -qw net.ipv4.tcp_congestion_control=$_cc 2>/dev/null; then
			echo $_cc
			return 0
		fi
	done
	return 1
}
