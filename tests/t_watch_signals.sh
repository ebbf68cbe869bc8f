#!/bin/sh
# socktune watch's command line and signals, as its help says: a malformed --listen is a bad
# option (status 2, at parse time, nothing started); SIGHUP does not end it (the namespaces
# and the listeners' services looked up again) nor does SIGUSR1 (a state line); SIGTERM ends
# it with 143.  A systemd unit name of 255 bytes (systemd's longest) is its unit label whole.
# Run as root with a capability another process holds taken away, its warning about a
# namespace it may not read names that capability, not CAP_SYS_PTRACE which it has.
. "$(dirname "$0")/lib.sh"

[ -x "$CLI" ] || { fail watch_signals "$CLI not built"; exit 0; }

# ---- a malformed --listen: 2 ----
for spec in 127.0.0.1:abc 127.0.0.1:70000 999.1.1.1:80 '[::1:80' 127.0.0.1:; do
	"$CLI" watch --listen "$spec" --seconds 1 >/dev/null 2>"$TMP/listen.err"
	rc=$?
	check "watch_signals.listen_malformed[$spec]" "status $rc, not 2: $(cat "$TMP/listen.err")" "$rc" -eq 2
done

# ---- SIGHUP, SIGUSR1, then SIGTERM ----
if ! command -v curl >/dev/null; then
	skip watch_signals.hup "no curl"
else
	M=$(free_port)
	"$CLI" watch --listen "127.0.0.1:$M" --interval 0.05 >/dev/null 2>"$TMP/w.err" &
	W=$!
	busywait 5000 curl -sf -m 1 -o /dev/null "http://127.0.0.1:$M/metrics"
	kill -HUP $W
	busywait 3000 grep -q "SIGHUP" "$TMP/w.err"
	sleep 0.3
	alive=0
	kill -0 $W 2>/dev/null && curl -sf -m 2 -o /dev/null "http://127.0.0.1:$M/metrics" && alive=1
	check watch_signals.hup_kept "SIGHUP ended watch: $(cat "$TMP/w.err")" "$alive" -eq 1
	kill -USR1 $W 2>/dev/null
	busywait 3000 grep -q "SIGUSR1: .* listeners shown" "$TMP/w.err"
	sleep 0.3
	alive=0
	kill -0 $W 2>/dev/null && grep -q "SIGUSR1: .* listeners shown" "$TMP/w.err" && alive=1
	check watch_signals.usr1_state_line "SIGUSR1 ended watch or said nothing: $(cat "$TMP/w.err")" \
		"$alive" -eq 1
	kill -TERM $W 2>/dev/null
	wait $W
	rc=$?
	check watch_signals.term_143 "status $rc after SIGTERM" "$rc" -eq 143
fi

# ---- a 255-byte unit name ----
MNT=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
stem="st-wunit-$$-"
pad=$((255 - ${#stem} - 8))
UNIT=$stem$(head -c "$pad" /dev/zero | tr '\0' u).service
CGU=$MNT/$UNIT
unit_cleanup() {
	kill_jobs
	for p in $(cat "$CGU/cgroup.procs" 2>/dev/null); do kill "$p" 2>/dev/null; done
	busywait 3000 sh -c "rmdir '$CGU' 2>/dev/null || [ ! -e '$CGU' ]"
}
if [ -z "$MNT" ] || [ "$(id -u)" != 0 ] || ! mkdir "$CGU" 2>"$TMP/mkdir.err"; then
	skip watch_signals.unit_255 "cannot make a cgroup under '$MNT': $(cat "$TMP/mkdir.err" 2>/dev/null)"
else
	AT_EXIT=unit_cleanup
	P=$(free_port)
	# the server puts itself in the unit's cgroup before it listens
	"$PY" -c 'import socket, sys, time, os
open(sys.argv[2] + "/cgroup.procs", "w").write(str(os.getpid()))
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(5); time.sleep(30)' \
		"$P" "$CGU" 2>"$TMP/srv.err" &
	busywait 5000 sh -c "ss -Hltn 'sport = :$P' | grep -q ."
	"$CLI" watch --textfile "$TMP/u.prom" --every 0.2 --seconds 1.5 ":$P" 2>"$TMP/u.err"
	got=$(grep "^socktune_listener_up{" "$TMP/u.prom" | grep "port=\"$P\"" | sed -n 's/.*unit="\([^"]*\)".*/\1/p' | head -n 1)
	check watch_signals.unit_255 "unit label '${got}' (${#got} bytes), not the 255-byte '$UNIT'" \
		"$got" = "$UNIT"
fi

# ---- the cause of a namespace not readable ----
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! setup_ns NSC; then
	skip watch_signals.denied_cause "not root, no setpriv, or no network namespace"
else
	# a process in a namespace of its own, with every capability of ours; watch without
	# CAP_SYS_NICE (root, CAP_SYS_PTRACE kept) may not read its /proc/PID/ns/net
	ip netns exec "$NSC" sleep 20 &
	busywait 3000 sh -c "ip netns pids $NSC | grep -q ."
	setpriv --bounding-set=-sys_nice --inh-caps=-sys_nice "$CLI" watch --textfile "$TMP/c.prom" \
		--seconds 1 2>"$TMP/c.err"
	line=$(grep "is not readable by" "$TMP/c.err" | head -n 1)
	ok=0
	case $line in
	*"ns/net: CAP_SYS_PTRACE)"*) ;;
	*CAP_SYS_NICE*) ok=1 ;;
	*"CAP_SYS_"*"holds"*) ok=1 ;; # (another process found first, holding another one)
	esac
	check watch_signals.denied_cause "the warning: '${line:-none}'" "$ok" -eq 1
fi
