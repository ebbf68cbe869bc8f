# Sourced by tests/lib.sh (its helpers, its variables): the helpers of what needs root and
# a kernel feature, each of which skips the test with the reason where this machine lacks it.

# ---- a cgroup of the test's own (socktune --cgroup) ----

# cg_test_dir NAME: skips NAME (and exits) unless this machine can run socktune --cgroup and
# a cgroup of the test's own can be made; then $CG is that cgroup (under the v2 mount, named
# for NAME and this shell's pid), and cg_cleanup, run at exit (AT_EXIT), ends its
# processes, detaches every program from it (ours and the test's own) and removes it.
cg_test_dir() {
	"$CLI" --cgroup --initcwnd 40 -- true 2>"$TMP/probe.err"
	_rc=$?
	if [ $_rc -ne 0 ]; then
		skip "$1" "this machine cannot run the cgroup mode (status $_rc): $(grep -v '^socktune pid=' "$TMP/probe.err" | head -n 1)"
		exit 0
	fi
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
	busywait 3000 sh -c "rmdir '$CG' 2>/dev/null || [ ! -e '$CG' ]"
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
# 198.18.0.1, end b 198.18.1.1); the emulator removes them when it ends (lib_exit's kill)
path_start() {
	_pn=$1
	shift
	"$BIN/pathemu" --name "$_pn" "$@" >"$TMP/$_pn.emu" 2>"$TMP/$_pn.emuerr" &
	EMU=$!
	wait_file "$TMP/$_pn.emu" '^READY ' 5 || return 1
	_pr=$(grep '^READY ' "$TMP/$_pn.emu")
	NA=$(field "$_pr" a) NB=$(field "$_pr" b)
}
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
