#!/bin/sh
# attach --cgroup :PORT and detach :PORT where the port's listeners were made in many cgroups
# (SO_REUSEPORT listeners, each made by a process in a cgroup of its own: 20 of them, more
# than the 16 the command took before, when it attached to 16 and skipped the rest without a
# word): each cgroup gets ours, or a line says which were left.  Asserted on BPF_PROG_QUERY
# (bpfq) on each cgroup.
. "$(dirname "$0")/lib.sh"

BPFQ=$BIN/bpfq
N=20

cg_test_dir cgroup_many
AT_EXIT="many_cleanup; cg_cleanup"
many_cleanup() {
	kill_jobs
	for i in $(seq 1 $N); do
		d=$CG/l$i
		[ -d "$d" ] || continue
		for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill "$p" 2>/dev/null; done
		for id in $( ("$BPFQ" attached "$d"; "$BPFQ" attached "$d" setsockopt) 2>/dev/null | cut -d' ' -f1); do
			"$BPFQ" detach "$d" "$id"
		done
		busywait 3000 sh -c "rmdir '$d' 2>/dev/null || [ ! -e '$d' ]"
	done
}

port=$(free_port)
for i in $(seq 1 $N); do
	mkdir "$CG/l$i" || { fail cgroup_many "mkdir $CG/l$i"; exit 0; }
	sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -c "
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind((\"127.0.0.1\", int(sys.argv[1])))
s.listen(8)
open(sys.argv[2], \"w\").write(\"up\")
time.sleep(60)" "$3" "$4"' sh "$CG/l$i" "$PY" "$port" "$TMP/up.$i" &
done
busywait 10000 sh -c "[ \$(ls '$TMP' | grep -c '^up\.') -ge $N ]"
check cgroup_many.listeners "$(ls "$TMP" | grep -c '^up\.') of $N listeners up" "$(ls "$TMP" | grep -c '^up\.')" = $N

"$CLI" attach --cgroup --initcwnd 40 ":$port" >"$TMP/att.out" 2>"$TMP/att.err"
rc=$?
with=0
for i in $(seq 1 $N); do
	[ -n "$("$BPFQ" attached "$CG/l$i" | grep ' socktune$')" ] && with=$((with + 1))
done
check cgroup_many.attached_all "status $rc, $(grep -c event=cgroup_attach "$TMP/att.out") attach lines, ours on $with of $N cgroups: $(head -c 300 "$TMP/att.err")" \
	$rc = 0 -a "$(grep -c event=cgroup_attach "$TMP/att.out")" = $N -a $with = $N

"$CLI" detach ":$port" >"$TMP/det.out" 2>"$TMP/det.err"
rc=$?
with=0
for i in $(seq 1 $N); do
	[ -n "$("$BPFQ" attached "$CG/l$i" | grep ' socktune$')" ] && with=$((with + 1))
done
check cgroup_many.detached_all "status $rc, $(grep -c event=cgroup_detach "$TMP/det.out") detach lines, ours left on $with: $(head -c 300 "$TMP/det.err")" \
	$rc = 0 -a "$(grep -c event=cgroup_detach "$TMP/det.out")" = $N -a $with = 0
