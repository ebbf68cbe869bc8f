#!/bin/sh
# The cgroup mode's programs are ours by record and nothing of ours is left behind (issue 29):
# a program that daemonizes is followed (the programs stay attached while what it left runs,
# its connections tuned); a helper that exits after the program is waited for, the cgroup
# then removed; SIGKILL of the wrapper leaves the server tuned and a record, which a later run
# acts on once the cgroup is empty (programs detached, cgroup removed, said); a cgroup the
# program made inside its own is removed with it; two wrappers on one --cgroup-path: the last
# one out removes it, the first blames no one; attach --cgroup over a wrapper's programs
# replaces them (by record) and says whose; detach of a cgroup whose server is gone; another
# party's program named "socktune" is not ours (detach leaves it, doctor says so); at the
# kernel's limit of 64 programs the refusal names it, and a replacement of ours still works.
# Asserted on what the kernel reports: tserver's CONN lines (tcpi_snd_cwnd), BPF_PROG_QUERY
# and BPF_PROG_GET_NEXT_ID (bpfq), the cgroup directories.
. "$(dirname "$0")/lib.sh"

BPFQ=$BIN/bpfq

cg_test_dir cgroup_owned
MNT=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
SHARED=$MNT/socktune-owned-shared-$$
AT_EXIT="cg_cleanup; rmdir '$SHARED' 2>/dev/null"

# conn_to PORT: one connection to 127.0.0.1:PORT, opened and closed
conn_to() {
	$PY -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5).close()' "$1"
}
# cwnd_of FILE I: the accepted connection I's cwnd as tserver read it (5 s for the line)
cwnd_of() {
	busywait 5000 file_has "$1" "^CONN i=$2 " && field "$(grep "^CONN i=$2 " "$1")" cwnd
}
# ids_in ERRFILE: the programs the wrapper's log names (prog_id= and hook ids)
ids_in() {
	sed -n 's/.* prog_id=\([0-9]*\).*/\1/p; s/.* hook_id=\([0-9]*\).*/\1/p' "$1" | sort -u
}
# none_loaded IDS: none of the program ids is loaded any more
none_loaded() {
	_nl=$("$BPFQ" loaded socktune)
	for _i in $1; do printf '%s\n' "$_nl" | grep -qx "$_i" && return 1; done
	return 0
}
cg_of() {
	sed -n 's/.* cgroup=\([^ ]*\).*/\1/p' "$1" | head -n 1
}

# ---- 1. a program that daemonizes: followed, its daemon's connections tuned, then all gone
"$CLI" --cgroup --initcwnd 40 -- sh -c '"$1" -4 -n 2 -t 30 >"$2" 2>&1 & exit 0' sh \
	"$BIN/tserver" "$TMP/d.out" 2>"$TMP/d.err" &
w=$!
wait_file "$TMP/d.out" '^PORT' 10 && wait_file "$TMP/d.err" 'exited and left 1 process' 10
dcg=$(cg_of "$TMP/d.err")
sleep 2.5 # (the wrapper gave up after 2 s before)
conn_to "$(port_of "$TMP/d.out")"
check cgroup_owned.daemon_followed "wrapper alive: $(kill -0 $w 2>&1 && echo yes); cwnd $(cwnd_of "$TMP/d.out" 0): $(head -c 600 "$TMP/d.err")" \
	"$(kill -0 $w 2>/dev/null && echo yes)" = yes -a "$(cwnd_of "$TMP/d.out" 0)" = 40 -a \
	-n "$(grep 'the program stays attached' "$TMP/d.err")"
conn_to "$(port_of "$TMP/d.out")"
wait_gone $w 10
wait $w
rc=$?
check cgroup_owned.daemon_end "status $rc, cgroup $dcg $( [ -e "$dcg" ] && echo left), ids $(ids_in "$TMP/d.err"): $(tail -c 400 "$TMP/d.err")" \
	$rc = 0 -a ! -e "$dcg" -a -n "$dcg" -a -n "$(ids_in "$TMP/d.err")" -a -z "$(grep kept "$TMP/d.err")"
busywait 3000 none_loaded "$(ids_in "$TMP/d.err")"
check cgroup_owned.daemon_unloaded "still loaded: $("$BPFQ" loaded socktune | tr '\n' ' ') of $(ids_in "$TMP/d.err" | tr '\n' ' ')" \
	-n "$(none_loaded "$(ids_in "$TMP/d.err")" && echo ok)"

# ---- 3. a helper that exits after the program (squid -N's pinger): waited for, all removed
"$CLI" --cgroup --initcwnd 40 -- sh -c '(sleep 3) & exit 0' 2>"$TMP/h.err"
rc=$?
hcg=$(cg_of "$TMP/h.err")
check cgroup_owned.late_helper "status $rc, cgroup $hcg $( [ -e "$hcg" ] && echo left): $(tail -c 400 "$TMP/h.err")" \
	$rc = 0 -a -n "$hcg" -a ! -e "$hcg" -a -z "$(grep kept "$TMP/h.err")"

# ---- 4. a cgroup the program makes inside its own: removed with it
"$CLI" --cgroup --initcwnd 40 -- sh -c 'mkdir "$1$(sed -n "s/^0:://p" /proc/self/cgroup)/inner"' sh "$MNT" \
	2>"$TMP/i.err"
rc=$?
icg=$(cg_of "$TMP/i.err")
check cgroup_owned.inner_cgroup "status $rc, cgroup $icg $( [ -e "$icg" ] && echo left: $(ls "$icg" | grep -c .)): $(tail -c 400 "$TMP/i.err")" \
	$rc = 0 -a -n "$icg" -a ! -e "$icg"

# ---- 2. SIGKILL of the wrapper: the server stays tuned, a later run cleans up once it is empty
"$CLI" --cgroup --initcwnd 40 --nodelay -- "$BIN/tserver" -4 -n 2 -t 30 >"$TMP/k.out" 2>"$TMP/k.err" &
w=$!
wait_file "$TMP/k.out" '^PORT' 10
kcg=$(cg_of "$TMP/k.err")
kill -9 $w
wait $w 2>/dev/null
conn_to "$(port_of "$TMP/k.out")"
check cgroup_owned.killed_still_tuned "cwnd $(cwnd_of "$TMP/k.out" 0); records: $(ls "$RUNTIME_DIRECTORY" 2>&1)" \
	"$(cwnd_of "$TMP/k.out" 0)" = 40 -a -n "$(ls "$RUNTIME_DIRECTORY" | grep '^cg-.*\.rec$')"
# a run that cannot see the cgroup (ip netns exec: a fresh /sys, no cgroup2) leaves the record
if setup_ns NSX; then
	ip netns exec "$NSX" "$CLI" --cgroup --initcwnd 40 -- true 2>"$TMP/unseen.err"
	check cgroup_owned.unseen_record_kept "records after a run under ip netns exec: $(ls "$RUNTIME_DIRECTORY" | tr '\n' ' '): $(head -c 300 "$TMP/unseen.err")" \
		-n "$(ls "$RUNTIME_DIRECTORY" | grep '^cg-.*\.rec$')"
fi
"$CLI" --cgroup --initcwnd 40 -- true 2>"$TMP/later1.err"
check cgroup_owned.killed_said_running "$(head -c 600 "$TMP/later1.err")" \
	-n "$(grep -F "socktune --cgroup (pid $w) is gone; its programs stay attached to $kcg" "$TMP/later1.err")" -a -d "$kcg"
conn_to "$(port_of "$TMP/k.out")"
busywait 5000 sh -c "! grep -q . '$kcg/cgroup.procs'"
"$CLI" --cgroup --initcwnd 40 -- true 2>"$TMP/later2.err"
check cgroup_owned.killed_cleaned "cgroup $kcg $( [ -e "$kcg" ] && echo left): $(head -c 600 "$TMP/later2.err")" \
	! -e "$kcg" -a -n "$(grep -F "socktune --cgroup (pid $w) is gone and left $kcg empty: 2 programs detached, the cgroup removed" "$TMP/later2.err")"
busywait 3000 none_loaded "$(ids_in "$TMP/k.err")"
check cgroup_owned.killed_unloaded "still loaded: $("$BPFQ" loaded socktune | tr '\n' ' ') of $(ids_in "$TMP/k.err" | tr '\n' ' '); records $(ls "$RUNTIME_DIRECTORY")" \
	-n "$(none_loaded "$(ids_in "$TMP/k.err")" && echo ok)" -a -z "$(ls "$RUNTIME_DIRECTORY" | grep '^cg-')"

# ---- 4. two wrappers on one --cgroup-path: the first leaves it to the second, which removes it
"$CLI" --cgroup --cgroup-path "$SHARED" --initcwnd 40 -- sh -c 'n=0; while [ ! -e "$1" ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done' sh "$TMP/a.go" 2>"$TMP/a.err" &
wa=$!
busywait 5000 file_has "$TMP/a.err" 'event=cgroup'
"$CLI" --cgroup --cgroup-path "$SHARED" --initcwnd 40 -- sh -c 'n=0; while [ ! -e "$1" ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done' sh "$TMP/b.go" 2>"$TMP/b.err" &
wb=$!
busywait 5000 file_has "$TMP/b.err" 'event=cgroup'
busywait 5000 sh -c "[ \$(grep -c . '$SHARED/cgroup.procs') -ge 2 ]"
touch "$TMP/a.go"
wait $wa
check cgroup_owned.shared_first "dir $( [ -d "$SHARED" ] && echo kept): $(tail -c 400 "$TMP/a.err")" \
	-d "$SHARED" -a -z "$(grep 'processes the program left' "$TMP/a.err")" -a \
	-n "$(grep -F "socktune --cgroup (pid $wb) runs in it too" "$TMP/a.err")"
touch "$TMP/b.go"
wait $wb
check cgroup_owned.shared_last "dir $( [ -e "$SHARED" ] && echo left): $(tail -c 400 "$TMP/b.err")" \
	! -e "$SHARED"

# ---- 5. attach --cgroup over a wrapper's programs: replaced by record, whose said; detach clean
"$CLI" --cgroup --initcwnd 20 -- "$BIN/tserver" -4 -n 2 -m hold -t 30 >"$TMP/r.out" 2>"$TMP/r.err" &
w=$!
wait_file "$TMP/r.out" '^PORT' 10
srv=$(pgrep -P $w | head -n 1)
"$CLI" attach --cgroup --initcwnd 40 "$srv" >"$TMP/ra.out" 2>"$TMP/ra.err"
rc=$?
ra=$(grep 'event=cgroup_attach' "$TMP/ra.out")
check cgroup_owned.attach_over_wrapper "status $rc: $ra $(head -c 300 "$TMP/ra.err")" \
	$rc = 0 -a "$(field "$ra" replaced)" -ge 1 -a -n "$(printf '%s' "$ra" | grep -F "socktune --cgroup (pid $w)")"
conn_to "$(port_of "$TMP/r.out")"
check cgroup_owned.attach_over_wrapper_tunes "cwnd $(cwnd_of "$TMP/r.out" 0) (one program: 40, not 20)" \
	"$(cwnd_of "$TMP/r.out" 0)" = 40
rcg=$(cg_of "$TMP/r.err")
"$CLI" detach "$srv" >"$TMP/rd.out" 2>"$TMP/rd.err"
rc=$?
check cgroup_owned.detach_after "status $rc: $(cat "$TMP/rd.out" "$TMP/rd.err" | head -c 400); on $rcg: $("$BPFQ" attached "$rcg" | tr '\n' ' ')" \
	$rc = 0 -a -z "$(grep -i 'No such file' "$TMP/rd.err")" -a -z "$("$BPFQ" attached "$rcg")"
conn_to "$(port_of "$TMP/r.out")"
wait $w
check cgroup_owned.attach_over_wrapper_end "cgroup $rcg $( [ -e "$rcg" ] && echo left): $(tail -c 300 "$TMP/r.err")" ! -e "$rcg"

# ---- 6, 8. a server in a cgroup of the test's: another party's "socktune", detach CGROUP
start_server -t 20 srv -- sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -4 -n 3 -m hold -t 30' \
	sh "$CG" "$BIN/tserver" || { fail cgroup_owned "tserver did not start: $(cat "$TMP/srv.err")"; exit 0; }
srv=$SRV_PID
fake=$("$BPFQ" attach "$CG" 0 socktune)
"$CLI" detach "$srv" >"$TMP/f.out" 2>"$TMP/f.err"
rc=$?
check cgroup_owned.impostor_left "status $rc: $(cat "$TMP/f.err"); on $CG: $("$BPFQ" attached "$CG" | tr '\n' ' ')" \
	$rc = 1 -a -n "$(grep 'one named socktune that socktune did not record' "$TMP/f.err")" -a \
	-n "$("$BPFQ" attached "$CG" | grep "^$fake socktune\$")"
"$CLI" doctor --seconds 1 "$srv" >"$TMP/doc.txt" 2>&1
check cgroup_owned.impostor_doctor "$(sed -n '/sock_ops programs/,/^$/p' "$TMP/doc.txt")" \
	-n "$(grep -E "^    id $fake socktune \(not on socktune's record: another party's\)" "$TMP/doc.txt")"
"$BPFQ" detach "$CG" "$fake"

# 64 programs on the hook: the refusal names the limit
"$BPFQ" attach "$CG" 0 other 64 >"$TMP/others.ids" 2>"$TMP/others.err"
"$CLI" attach --cgroup --initcwnd 40 "$srv" >"$TMP/l.out" 2>"$TMP/l.err"
rc=$?
check cgroup_owned.limit_named "status $rc: $(cat "$TMP/l.err" | head -c 400) ($(grep -c . "$TMP/others.ids") others: $(cat "$TMP/others.err"))" \
	$rc = 2 -a -n "$(grep "limit of 64 programs" "$TMP/l.err")" -a "$(grep -c . "$TMP/others.ids")" = 64
"$BPFQ" detach "$CG" "$(head -n 1 "$TMP/others.ids")"
"$CLI" attach --cgroup --initcwnd 30 "$srv" >"$TMP/l2.out" 2>"$TMP/l2.err"
rc1=$?
"$CLI" attach --cgroup --initcwnd 40 "$srv" >"$TMP/l3.out" 2>"$TMP/l3.err"
rc2=$?
conn_to "$(port_of "$TMP/srv.out")"
check cgroup_owned.limit_replace "status $rc1 then $rc2: $(cat "$TMP/l3.out" "$TMP/l3.err" | head -c 400); cwnd $(cwnd_of "$TMP/srv.out" 0)" \
	$rc1 = 0 -a $rc2 = 0 -a "$(field "$(grep event=cgroup_attach "$TMP/l3.out")" replaced)" -ge 1 -a \
	"$(cwnd_of "$TMP/srv.out" 0)" = 40
for id in $(cat "$TMP/others.ids"); do "$BPFQ" detach "$CG" "$id" 2>/dev/null; done

# detach CGROUP once the server is gone
kill "$srv"
wait_gone "$srv"
"$CLI" detach "$CG" >"$TMP/dc.out" 2>"$TMP/dc.err"
rc=$?
check cgroup_owned.detach_cgroup "status $rc: $(cat "$TMP/dc.out" "$TMP/dc.err" | head -c 400); on $CG: $( ("$BPFQ" attached "$CG"; "$BPFQ" attached "$CG" setsockopt) | tr '\n' ' ')" \
	$rc = 0 -a -n "$(grep 'event=cgroup_detach' "$TMP/dc.out")" -a -z "$("$BPFQ" attached "$CG")" -a \
	-z "$("$BPFQ" attached "$CG" setsockopt)" -a -z "$(ls "$RUNTIME_DIRECTORY" | grep '^cg-')"

# ---- SIGKILL at any moment of the set-up (the record is written before the cgroup is made):
# a later run removes every cgroup those wrappers made.  8 kills, as soon as the directory
# appears or a few ms in.
ROOTCG=$(sed -n 's/^0:://p' /proc/self/cgroup)
early=""
for i in 0 1 2 3 4 5 6 7; do
	"$CLI" --cgroup --initcwnd 40 --nodelay -- sleep 5 2>/dev/null &
	w=$!
	if [ $((i % 2)) = 0 ]; then
		n=0
		while [ ! -e "$MNT${ROOTCG%/}/socktune-$w" ] && [ $n -lt 20000 ] && kill -0 "$w" 2>/dev/null; do
			n=$((n + 1))
		done
	else
		sleep "0.0$i"
	fi
	kill -9 "$w"
	wait "$w" 2>/dev/null
	early="$early $w"
done
# setup_ended: no process left in the cgroups of those wrappers (each a program that started,
# ended here, as a server's own end, and waited for: a cgroup that still holds one is not
# swept); those still there in $in_setup
setup_ended() {
	in_setup=""
	for w in $early; do
		for p in $(cat "$MNT${ROOTCG%/}/socktune-$w/cgroup.procs" 2>/dev/null); do
			kill "$p" 2>/dev/null
			in_setup="$in_setup $p"
		done
	done
	[ -z "$in_setup" ]
}
busywait 15000 setup_ended
"$CLI" --cgroup --initcwnd 40 -- true 2>"$TMP/sweep.err"
left=""
for w in $early; do
	[ -e "$MNT${ROOTCG%/}/socktune-$w" ] && left="$left socktune-$w"
done
check cgroup_owned.killed_in_setup_swept "left:$left; processes still in them after 15 s:${in_setup:- none}; records: $(ls "$RUNTIME_DIRECTORY" | grep '^cg-' | tr '\n' ' '); $(head -c 600 "$TMP/sweep.err")" \
	-z "$left" -a -z "$(ls "$RUNTIME_DIRECTORY" | grep '^cg-')"
