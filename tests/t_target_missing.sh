#!/bin/sh
# A target that is not there has one status, 3, in every subcommand: a pid with no process
# (attach, doctor, watch, attach --cgroup, detach), a :PORT nobody listens on (attach,
# doctor), a stats FILE that does not exist (stats; prometheus when none of its FILEs does).  stats said 1 (as for a file that
# is not a stats file, which stays 1).
. "$(dirname "$0")/lib.sh"
for v in $(env | sed -n 's/^\(SOCKTUNE_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

nopid=2147483646
port=$(free_port) # (free: nobody listens on it)
# status NAME CMD...: the status of CMD, its stderr in $TMP/NAME.err
status() {
	_n=$1
	shift
	"$@" >"$TMP/$_n.out" 2>"$TMP/$_n.err"
	echo $?
}
a_pid=$(status a_pid "$CLI" attach --nodelay $nopid)
d_pid=$(status d_pid "$CLI" doctor --seconds 0.2 $nopid)
a_port=$(status a_port "$CLI" attach --nodelay ":$port")
d_port=$(status d_port "$CLI" doctor --seconds 0.2 ":$port")
s_file=$(status s_file "$CLI" stats "$TMP/no-such-file")
s_json=$(status s_json "$CLI" stats --json "$TMP/no-such-file")
s_prom=$(status s_prom "$CLI" stats --format prometheus "$TMP/no-such-file" "$TMP/nor-this")
got="attach pid $a_pid, doctor pid $d_pid, attach :port $a_port, doctor :port $d_port, stats $s_file, stats --json $s_json, prometheus $s_prom"
check target_missing_one_status "$got (want 3 each); $(cat "$TMP"/*.err)" \
	"$a_pid$d_pid$a_port$d_port$s_file$s_json$s_prom" = 3333333
check target_missing_said "stderr: $(cat "$TMP/a_pid.err" "$TMP/d_port.err" "$TMP/s_file.err")" \
	-n "$(grep 'No such process' "$TMP/a_pid.err")" -a -n "$(grep 'no TCP listener' "$TMP/d_port.err")" -a \
	-n "$(grep 'No such file or directory' "$TMP/s_file.err")"

# watch, and where the cgroup mode runs attach --cgroup and detach: the same status for a pid
# with no process (attach --cgroup and detach took no pid over 0x3fffffff: status 2, "not a
# target", where plain attach said "no such process")
w_pid=$(status w_pid timeout 20 "$CLI" watch --seconds 1 --textfile "$TMP/w.prom" $nopid)
check target_missing_watch "status $w_pid (want 3): $(cat "$TMP/w_pid.err")" \
	"$w_pid" = 3 -a -n "$(grep "watch $nopid: no such process" "$TMP/w_pid.err")"
if "$CLI" --cgroup --initcwnd 40 -- true 2>"$TMP/cgmode.err"; then
	c_pid=$(status c_pid "$CLI" attach --cgroup --initcwnd 40 $nopid)
	t_pid=$(status t_pid "$CLI" detach $nopid)
	check target_missing_cgroup "attach --cgroup status $c_pid, detach status $t_pid (want 3 each): $(cat "$TMP/c_pid.err" "$TMP/t_pid.err")" \
		"$c_pid$t_pid" = 33 -a -n "$(grep "$nopid: no such process" "$TMP/c_pid.err")" -a \
		-n "$(grep "$nopid: no such process" "$TMP/t_pid.err")"
else
	skip target_missing_cgroup "this machine cannot run the cgroup mode: $(grep -v '^socktune pid=' "$TMP/cgmode.err" | head -n 1)"
fi

# what is there but not a target of the kind stays 1: a file that is not a stats file
printf 'x\n' >"$TMP/not-stats"
s_bad=$(status s_bad "$CLI" stats "$TMP/not-stats")
check stats_not_a_stats_file "status $s_bad (want 1): $(cat "$TMP/s_bad.err")" "$s_bad" = 1
