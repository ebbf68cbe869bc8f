#!/bin/sh
# socktune watch CGROUP: the listeners a process of that cgroup v2 (or of one below it)
# holds, and no other.  Two plain python3 listeners, one started inside a cgroup of the
# test's own (a child cgroup below it, as a service's own sub-cgroups are), one outside:
# given the cgroup as the mount's directory or as /proc/PID/cgroup writes it, /metrics has
# the first listener (its backlog 5 from the kernel) and not the second; the second shows
# with a :PORT target beside it; a listener in a pod's cgroup layout below it is labelled
# with the pod's uid, its name (its /etc/hostname) and the container's id; a path that is no
# cgroup is not found (status 3).
. "$(dirname "$0")/lib.sh"

if ! command -v curl >/dev/null; then
	skip watch_cgroup "no curl"
	exit 0
fi
MNT=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
CG=$MNT/socktune-watch-cgroup-test-$$
if [ -z "$MNT" ] || ! mkdir "$CG" "$CG/worker" 2>"$TMP/mkdir.err"; then
	skip watch_cgroup "cannot make a test cgroup under '$MNT': $(cat "$TMP/mkdir.err" 2>/dev/null)"
	exit 0
fi
# a Kubernetes pod's layout below it (cgroupfs driver: kubepods/burstable/pod<uid>/<container>)
UID_=3f5c2a1e-7b9d-4c8e-a1f2-0123456789ab
ID64=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
POD=$CG/kubepods/burstable/pod$UID_/$ID64
# every process of the test's cgroups ended, then the cgroups removed, deepest first (a
# cgroup goes only once its processes have: bounded waits)
cg_remove() {
	kill_jobs
	for p in $(cat "$POD/cgroup.procs" "$CG/worker/cgroup.procs" 2>/dev/null); do
		kill "$p" 2>/dev/null
	done
	for d in "$POD" "${POD%/*}" "${POD%/*/*}" "${POD%/*/*/*}" "$CG/worker" "$CG"; do
		busywait 3000 sh -c "rmdir '$d' 2>/dev/null || [ ! -e '$d' ]"
	done
}
AT_EXIT=cg_remove

# (they outlive the test, which ends them: a slow run took over a minute to reach the last case)
LISTENER='import socket,time; l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen(5); print("PORT", l.getsockname()[1], flush=True); time.sleep(600)'
# inside: moves itself into $CG/worker before it execs the listener
if ! start_server in -- sh -c 'echo $$ >"$1/cgroup.procs" || exit 1; shift; exec "$@"' sh "$CG/worker" \
	$PY -c "$LISTENER"; then
	fail watch_cgroup.server "the listener in the cgroup did not start: $(cat "$TMP/in.err")"
	exit 0
fi
IN=$SRV_PORT IN_PID=$SRV_PID
if ! start_server out -- $PY -c "$LISTENER"; then
	fail watch_cgroup.server "the listener outside did not start: $(cat "$TMP/out.err")"
	exit 0
fi
OUT=$SRV_PORT
check watch_cgroup.placed "pid $IN_PID in '$(grep '^0::' "/proc/$IN_PID/cgroup")'" \
	"$(grep '^0::' "/proc/$IN_PID/cgroup")" = "0::${CG#"$MNT"}/worker"

# watched NAME TARGET...: watch with TARGETs until /metrics shows the listener on $IN up
# (10 s at most), then one scrape more into $TMP/NAME.txt after the next sample; the watch
# ended.  A watch that could not bind its port (another test took it in between) is started
# again on another, three times at most.
watched() {
	_n=$1
	shift
	for _try in 1 2 3; do
		_m=$(free_port)
		"$CLI" watch --listen "127.0.0.1:$_m" --interval 0.05 "$@" >"$TMP/$_n.out" 2>"$TMP/$_n.err" &
		_w=$!
		# (10 s of wall time: a watch that does not answer costs each try its curl's 2 s)
		_end=$(($(date +%s) + 10))
		while [ "$(date +%s)" -lt $_end ] && kill -0 $_w 2>/dev/null; do
			curl -sf -m 2 "http://127.0.0.1:$_m/metrics" | grep -q "^socktune_listener_up{.*port=\"$IN\"} 1\$" && break
			sleep 0.05
		done
		kill -0 $_w 2>/dev/null && break
		wait $_w 2>/dev/null
	done
	sleep 0.3
	curl -sf -m 2 "http://127.0.0.1:$_m/metrics" >"$TMP/$_n.txt"
	kill "$_w"
	# (bounded: a watch stuck in a system call does not end on SIGTERM)
	busywait 3000 sh -c "! kill -0 $_w 2>/dev/null" || kill -9 "$_w" 2>/dev/null
	wait "$_w" 2>/dev/null
}
# series FILE PORT: the value of the listener's backlog series on PORT ("" when none)
series() {
	grep "^socktune_listener_backlog{.*port=\"$2\"" "$1" | awk '{ print $NF }'
}

watched mount "$CG"
check watch_cgroup.mount_dir_in "backlog of :$IN '$(series "$TMP/mount.txt" "$IN")' (want 5): $(cat "$TMP/mount.err")" \
	"$(series "$TMP/mount.txt" "$IN")" = 5
check watch_cgroup.mount_dir_not_out ":$OUT: '$(series "$TMP/mount.txt" "$OUT")' (want none)" \
	-z "$(series "$TMP/mount.txt" "$OUT")"

watched relative "${CG#"$MNT"}"
check watch_cgroup.proc_path_in "backlog of :$IN '$(series "$TMP/relative.txt" "$IN")' (want 5): $(cat "$TMP/relative.err")" \
	"$(series "$TMP/relative.txt" "$IN")" = 5
check watch_cgroup.proc_path_not_out ":$OUT: '$(series "$TMP/relative.txt" "$OUT")' (want none)" \
	-z "$(series "$TMP/relative.txt" "$OUT")"

# a spelling with "." and ".." in it is the same cgroup (matched as /proc/PID/cgroup writes it)
watched dots "$CG/worker/./../worker/.."
check watch_cgroup.dots_in "backlog of :$IN '$(series "$TMP/dots.txt" "$IN")' (want 5): $(cat "$TMP/dots.err")" \
	"$(series "$TMP/dots.txt" "$IN")" = 5

watched with_port "$CG" ":$OUT"
check watch_cgroup.with_port "backlogs :$IN '$(series "$TMP/with_port.txt" "$IN")', :$OUT '$(series "$TMP/with_port.txt" "$OUT")' (want 5 5): $(cat "$TMP/with_port.err")" \
	"$(series "$TMP/with_port.txt" "$IN")" = 5 -a "$(series "$TMP/with_port.txt" "$OUT")" = 5

# a listener in the pod's cgroup, in a mount and UTS namespace whose /etc/hostname holds the
# pod's name (as the kubelet gives each container): the series say the pod's uid, its name
# and the container's id.  Two more in the pod whose /etc is the container's own (a tmpfs):
# one's hostname a FIFO (no writer: an open that waited would stop the watch), the other's an
# absolute symlink to /etc/machine-id (resolved in the container's root, where there is none;
# never the host's machine id): neither has a pod_name, and the watch still answers.
# hostile NAME KIND: a listener in $POD whose /etc/hostname is KIND (fifo, link)
hostile() {
	start_server "$1" -- unshare -m -u sh -c 'mount -t tmpfs none /etc || exit 1
		if [ "$1" = fifo ]; then mkfifo /etc/hostname; else ln -s /etc/machine-id /etc/hostname; fi || exit 1
		echo $$ >"$2/cgroup.procs" || exit 1; shift 2; exec "$@"' sh "$2" "$POD" \
		$PY -S -c "$LISTENER"
}
if command -v unshare >/dev/null && mkdir -p "$POD" && echo test-pod-7 >"$TMP/hostname" &&
	start_server pod -- unshare -m -u sh -c 'mount --bind "$1" /etc/hostname || exit 1
		echo $$ >"$2/cgroup.procs" || exit 1; shift 2; exec "$@"' sh "$TMP/hostname" "$POD" \
		$PY -c "$LISTENER"; then
	PODPORT=$SRV_PORT
	hostile fifo fifo && FIFOPORT=$SRV_PORT
	hostile link link && LINKPORT=$SRV_PORT
	IN_SAVED=$IN IN=$PODPORT
	watched pod "$CG"
	IN=$IN_SAVED
	lbl=$(grep "^socktune_listener_backlog{.*port=\"$PODPORT\"" "$TMP/pod.txt")
	check watch_cgroup.pod_labels "series: '$lbl' (want pod=$UID_ pod_name=test-pod-7 container=$ID64): $(cat "$TMP/pod.err")" \
		-n "$(echo "$lbl" | grep "pod=\"$UID_\",pod_name=\"test-pod-7\"")" -a \
		-n "$(echo "$lbl" | grep "container=\"$ID64\"")"
	check watch_cgroup.pod_hostname_private "this host's /etc/hostname: $(cat /etc/hostname)" \
		"$(cat /etc/hostname)" != test-pod-7
	for k in fifo link; do
		eval "kp=\${$(echo "$k" | tr a-z A-Z)PORT:-}"
		lbl=$(grep "^socktune_listener_backlog{.*port=\"$kp\"" "$TMP/pod.txt")
		check watch_cgroup.pod_hostname_$k "series of :$kp: '$lbl' (want pod=$UID_ pod_name=\"\"): $(cat "$TMP/$k.err" 2>/dev/null)" \
			-n "$kp" -a -n "$(echo "$lbl" | grep "pod=\"$UID_\",pod_name=\"\"")"
	done
else
	skip watch_cgroup.pod_labels "cannot start a listener in a mount namespace of its own in $POD: $(cat "$TMP/pod.err" 2>/dev/null)"
fi

"$CLI" watch --listen "127.0.0.1:$(free_port)" "$CG/none" >/dev/null 2>"$TMP/none.err"
rc=$?
check watch_cgroup.not_found "status $rc (want 3): $(cat "$TMP/none.err")" \
	$rc = 3 -a -n "$(grep 'not a cgroup v2 directory' "$TMP/none.err")"
