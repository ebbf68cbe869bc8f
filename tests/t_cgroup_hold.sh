#!/bin/sh
# The cgroup mode holds its values against the program's own setsockopt: a server that sets
# TCP_NODELAY=0 on every connection it accepts (as hyper 0.14 and Erlang's inets do), under
# socktune --cgroup --nodelay, reads NODELAY 1 on its connections after its own reset, and its
# two-write keep-alive responses do not wait for the client's delayed ACK (a count of slow
# requests, against the same server run plainly, where they do); the override is counted and
# said (event=app-override ... count=N action=refused), the call itself succeeds; a server
# that sets the policy's own value is not counted; an outgoing connection the program did not
# tune (no --client) keeps the app's value, one it tuned (--client) is held; IPv6 too.
# Afterwards nothing of ours is left (the cgroup gone, both programs unloaded).  attach
# --cgroup --nodelay on the running server's cgroup holds it the same way, and detach says
# what its hook refused (app_overrides_refused, read from the hook's map).  The hook never
# changes the result of the app's own call: a value the kernel refuses (TCP_KEEPIDLE -5 or 0,
# TCP_KEEPCNT 200; SO_PRIORITY 7 from an unprivileged process; a congestion control not
# loaded) gets the kernel's own error, as without socktune, and is not counted; one in range
# is held and counted, passed with an optlen over a page too; a policy value the app's own
# call may be refused for lack of privilege (a congestion control not in
# net.ipv4.tcp_allowed_congestion_control; SO_PRIORITY above 6) is not held, said in one
# line, and the unprivileged app's own call succeeds as without socktune.  The sock_ops
# program's size is bound by its instruction count alone: 7 IPv4 peers with --client
# --syn-rto --initrwnd load; 16 are refused naming the count.
. "$(dirname "$0")/lib.sh"

BPFQ=$BIN/bpfq
RS=$BIN/resetsrv
REQS=30

"$CLI" --cgroup --nodelay -- true 2>"$TMP/probe.err"
rc=$?
if [ $rc -ne 0 ]; then
	skip cgroup_hold "this machine cannot run socktune --cgroup (status $rc): $(grep -v '^socktune pid=' "$TMP/probe.err" | head -n 1)"
	exit 0
fi
if grep -q 'setsockopt is not held' "$TMP/probe.err"; then
	skip cgroup_hold "the kernel refused the setsockopt hook here: $(grep 'not held' "$TMP/probe.err")"
	exit 0
fi

# rs NAME CMD...: CMD (resetsrv, wrapped or not) in the background; RS_PID, RS_PORT
rs() {
	_n=$1
	shift
	"$@" >"$TMP/$_n.out" 2>"$TMP/$_n.err" &
	RS_PID=$!
	busywait 5000 grep -qs '^PORT ' "$TMP/$_n.out"
	RS_PORT=$(sed -n 's/^PORT //p' "$TMP/$_n.out")
}
# kc NAME [FAMILY]: REQS keep-alive requests on one connection; the count over 30 ms
kc() {
	"$BIN/kaclient" http -n $REQS -t 30 -T 15 "$(host_of "${2:-4}")" "$RS_PORT" >"$TMP/$1.kc" 2>&1
	sed -n 's/.* over=\([0-9]*\) .*/\1/p' "$TMP/$1.kc"
}
# hook_of ERRFILE: the hook attached to the cgroup the running wrapper's log names
hook_of() {
	_dir=$(sed -n 's/.* event=cgroup cgroup=\([^ ]*\) .*/\1/p' "$1" | head -n 1)
	[ -n "$_dir" ] && "$BPFQ" attached "$_dir" setsockopt | sed -n 's/^\([0-9]*\) socktune_hold$/\1/p'
}
# nothing_left NAME ERRFILE HOOK_IDS: the cgroup the log names gone, the sock_ops program it
# names and the hook ids attached there while it ran no longer loaded
nothing_left() {
	_dir=$(sed -n 's/.* event=cgroup cgroup=\([^ ]*\) .*/\1/p' "$2" | head -n 1)
	_id=$(sed -n 's/.* prog_id=\([0-9]*\) .*/\1/p' "$2" | head -n 1)
	busywait 2000 sh -c "! '$BPFQ' loaded socktune | grep -qx '${_id:-x}' && ! '$BPFQ' loaded socktune_hold | grep -qxE '$(echo $3 | tr ' ' '|')'"
	_left=$( ("$BPFQ" loaded socktune; "$BPFQ" loaded socktune_hold) | grep -cxE "${_id:-x}|$(echo ${3:-x} | tr ' ' '|')")
	check "$1" "after the exit: $_dir $([ -e "$_dir" ] && echo "still there" || echo gone); of programs $_id (sock_ops) and ${3:-none} (hook): $_left still loaded" \
		-n "$_dir" -a ! -e "$_dir" -a -n "$3" -a "$_left" = 0
}

# ---- the server alone: its reset leaves Nagle on, each two-write response waits
rs plain "$RS" -n 1 -t 20
plain_over=$(kc plain)
wait $RS_PID
check cgroup_hold.stall_without "NODELAY after its reset: $(grep '^CONN' "$TMP/plain.out"); $(cat "$TMP/plain.kc") (want most of $REQS over 30 ms)" \
	-n "$(grep '^CONN nodelay=0 set=0' "$TMP/plain.out")" -a "${plain_over:-0}" -ge $((REQS / 2))

# ---- under --cgroup --nodelay, IPv4 and IPv6: held, not stalled, counted and said
# held FAM: the server under --cgroup --nodelay, REQS requests on one connection; OVER those
# over 30 ms, HELD_KC its client's file.  The first try's run is held$FAM, which every check
# below reads; another (over 2 of REQS: tests/lib.sh cured_within) is held$FAM.TRY, counted
held() {
	_h=held$1
	[ "$TRY" = 1 ] || _h=held$1.$TRY
	rs "$_h" "$CLI" --cgroup --nodelay -- "$RS" "-$1" -n 1 -t 20
	[ "$TRY" = 1 ] && hooks=$(hook_of "$TMP/$_h.err")
	OVER=$(kc "$_h" "$1")
	HELD_KC=$TMP/$_h.kc
	wait $RS_PID
	_hrc=$?
	[ "$TRY" = 1 ] && rc=$_hrc
	return 0
}
for fam in 4 6; do
	cured_within cgroup_hold_v$fam.not_stalled 2 held $fam
	over=$OVER
	echo "INFO cgroup_hold_v$fam: requests over 30 ms: plain $plain_over of $REQS, --cgroup --nodelay ${over:-?} of $REQS"
	check cgroup_hold_v$fam.nodelay_after_reset "$(grep -E '^(CONN|DONE)' "$TMP/held$fam.out" | tr '\n' ' ') status $rc: $(grep -v 'event=' "$TMP/held$fam.err" | head -c 300)" \
		-n "$(grep '^CONN nodelay=1 set=0' "$TMP/held$fam.out")" -a "$rc" = 0
	check cgroup_hold_v$fam.not_stalled "$(cat "$HELD_KC") (want at most 2 of $REQS over 30 ms; plain: $plain_over; tries: $TRIES)" \
		-n "$over" -a "${over:-99}" -le 2
	count=$(sed -n 's/.* event=app-override .* count=\([0-9]*\) .*/\1/p' "$TMP/held$fam.err" | tail -n 1)
	check cgroup_hold_v$fam.override_said "log: $(grep 'event=app-override' "$TMP/held$fam.err" | head -c 400)" \
		-n "$(grep 'level=info event=app-override cgroup=[^ ]* socket=accepted option=nodelay app_value=0 want=1 count=[1-9][0-9]* .*action=refused' "$TMP/held$fam.err")" -a \
		"${count:-0}" = 1
	nothing_left cgroup_hold_v$fam.nothing_left "$TMP/held$fam.err" "$hooks"
done

# ---- a server that sets the policy's own value: nothing to say
rs same "$CLI" --cgroup --nodelay -- "$RS" -v 1 -n 1 -t 20
over=$(kc same)
wait $RS_PID
check cgroup_hold.same_value_not_counted "$(grep '^CONN' "$TMP/same.out"); over=$over; log: $(grep 'event=app-override' "$TMP/same.err" | head -c 300)" \
	-n "$(grep '^CONN nodelay=1 set=0' "$TMP/same.out")" -a -z "$(grep 'event=app-override' "$TMP/same.err")"

# ---- the program's own outgoing connection: untouched without --client (the sock_ops
# program did not tune it), held with --client (socket=client)
rs out "$CLI" --cgroup --nodelay -- "$RS" -O -n 1 -t 20
kc out >/dev/null
wait $RS_PID
check cgroup_hold.outgoing_untuned_left_alone "$(grep '^OUT' "$TMP/out.out") (want the app's 0); log: $(grep 'event=app-override' "$TMP/out.err" | head -c 300)" \
	-n "$(grep '^OUT nodelay=0 set=0' "$TMP/out.out")" -a -z "$(grep 'socket=client' "$TMP/out.err")"
rs outc "$CLI" --cgroup --client --nodelay -- "$RS" -O -n 1 -t 20
kc outc >/dev/null
wait $RS_PID
check cgroup_hold.outgoing_tuned_held "$(grep '^OUT' "$TMP/outc.out") (want 1); log: $(grep 'event=app-override' "$TMP/outc.err" | head -c 400)" \
	-n "$(grep '^OUT nodelay=1 set=0' "$TMP/outc.out")" -a \
	-n "$(grep 'event=app-override .*socket=client option=nodelay app_value=0 want=1 count=1 ' "$TMP/outc.err")"

# ---- the app's own calls keep their results: what the kernel refuses goes through
# untouched (its error, not counted), what it takes is held.  set1 NAME [FAMILY] CMD...: CMD
# (resetsrv with -s, wrapped or not) and one request; its SET lines in $TMP/NAME.out
set1() {
	_n=$1 _f=4
	shift
	case $1 in [46]) _f=$1; shift ;; esac
	rs "$_n" "$@"
	"$BIN/kaclient" http -n 1 -T 5 "$(host_of $_f)" "$RS_PORT" >/dev/null 2>&1
	wait $RS_PID
}
# set_of NAME OPT=VAL: "rc=RC read=X" of that SET line
set_of() { sed -n "s/^SET $2 \(rc=[^ ]* read=[^ ]*\)$/\1/p" "$TMP/$1.out" | head -n 1; }
# said NAME OPTION: the app-override line of OPTION, the last ("" none)
said() { grep "event=app-override .*option=$2 " "$TMP/$1.err" | tail -n 1; }

KA="-s TCP_KEEPIDLE=-5 -s TCP_KEEPIDLE=0 -s TCP_KEEPCNT=200 -s TCP_KEEPIDLE=77 -s TCP_KEEPINTVL=20,8192"
set1 kaplain "$RS" -n 1 -t 20 $KA
set1 kaheld "$CLI" --cgroup --keepalive 60:10:5 -- "$RS" -n 1 -t 20 $KA
res=""
for sv in TCP_KEEPIDLE=-5 TCP_KEEPIDLE=0 TCP_KEEPCNT=200; do
	res="$res $sv: plain $(set_of kaplain $sv), --cgroup $(set_of kaheld $sv);"
done
check cgroup_hold.out_of_range_kernels_error "$res log: $(grep 'event=app-override' "$TMP/kaheld.err" | head -c 400)" \
	"$(set_of kaplain TCP_KEEPIDLE=-5 | cut -d' ' -f1)" = rc=22 -a "$(set_of kaheld TCP_KEEPIDLE=-5)" = "rc=22 read=60" -a \
	"$(set_of kaheld TCP_KEEPIDLE=0)" = "rc=22 read=60" -a "$(set_of kaheld TCP_KEEPCNT=200)" = "rc=22 read=5" -a \
	-z "$(said kaheld keepalive.cnt)"
line=$(said kaheld keepalive.idle)
check cgroup_hold.in_range_held_counted "plain $(set_of kaplain TCP_KEEPIDLE=77), --cgroup $(set_of kaheld TCP_KEEPIDLE=77) (want rc=0 read=60); log: $line" \
	"$(set_of kaplain TCP_KEEPIDLE=77)" = "rc=0 read=77" -a "$(set_of kaheld TCP_KEEPIDLE=77)" = "rc=0 read=60" -a \
	"$(field "$line" app_value)" = 77 -a "$(field "$line" count)" = 1
line=$(said kaheld keepalive.intvl)
check cgroup_hold.optlen_over_a_page_held "TCP_KEEPINTVL=20 with optlen 8192: plain $(set_of kaplain TCP_KEEPINTVL=20), --cgroup $(set_of kaheld TCP_KEEPINTVL=20) (want rc=0 read=10); log: $line" \
	"$(set_of kaplain TCP_KEEPINTVL=20)" = "rc=0 read=20" -a "$(set_of kaheld TCP_KEEPINTVL=20)" = "rc=0 read=10" -a \
	"$(field "$line" count)" = 1

# TCP_CONGESTION: a name any process may choose is held; one not loaded fails as it would
allowed=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control 2>/dev/null)
avail=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null)
cc_a=$(echo $allowed | cut -d' ' -f1) cc_b=$(echo $allowed | cut -d' ' -f2)
if [ -n "$cc_b" ] && [ "$cc_a" != "$cc_b" ]; then
	set1 ccheld "$CLI" --cgroup --congestion "$cc_a" -- "$RS" -n 1 -t 20 -s TCP_CONGESTION=nosuchcc -s TCP_CONGESTION="$cc_b"
	line=$(said ccheld congestion)
	check cgroup_hold.congestion_unknown_enoent_allowed_held "nosuchcc: $(set_of ccheld TCP_CONGESTION=nosuchcc) (want rc=2, ENOENT); $cc_b: $(set_of ccheld TCP_CONGESTION=$cc_b) (want read=$cc_a); log: $line" \
		"$(set_of ccheld TCP_CONGESTION=nosuchcc | cut -d' ' -f1)" = rc=2 -a \
		"$(set_of ccheld TCP_CONGESTION=$cc_b)" = "rc=0 read=$cc_a" -a \
		"$(field "$line" app_name)" = "$cc_b" -a "$(field "$line" count)" = 1
else
	skip cgroup_hold.congestion_unknown_enoent_allowed_held "net.ipv4.tcp_allowed_congestion_control names fewer than two ($allowed)"
fi

# an unprivileged app (setpriv: uid and gid 65534, no capabilities)
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all"
if ! command -v setpriv >/dev/null 2>&1 || ! $NOBODY true 2>/dev/null; then
	skip cgroup_hold.unprivileged "no setpriv that drops to uid 65534 here"
else
	# SO_PRIORITY above 6 needs CAP_NET_ADMIN: the app's 7 fails as it would (not made our 3)
	set1 prplain $NOBODY "$RS" -n 1 -t 20 -s SO_PRIORITY=7 -s SO_PRIORITY=5
	set1 prheld "$CLI" --cgroup --priority 3 -- $NOBODY "$RS" -n 1 -t 20 -s SO_PRIORITY=7 -s SO_PRIORITY=5
	line=$(said prheld priority)
	check cgroup_hold.unprivileged_priority_eperm_kept "7: plain $(set_of prplain SO_PRIORITY=7), --cgroup $(set_of prheld SO_PRIORITY=7) (want rc=1, EPERM, both); 5: $(set_of prheld SO_PRIORITY=5) (want read=3); log: $line" \
		"$(set_of prplain SO_PRIORITY=7 | cut -d' ' -f1)" = rc=1 -a "$(set_of prheld SO_PRIORITY=7)" = "rc=1 read=3" -a \
		"$(set_of prheld SO_PRIORITY=5)" = "rc=0 read=3" -a "$(field "$line" app_value)" = 5 -a "$(field "$line" count)" = 1
	# (--priority takes 0..6, what any process may set: the hook's guard for more, a policy
	# value the app's own call would need CAP_NET_ADMIN for, cannot be reached from here)
	# a congestion control loaded but not allowed: the policy's, not held; the app's own
	# choice of an allowed one succeeds, as without socktune (not made EPERM)
	cc_r=""
	for n in $avail; do
		case " $allowed " in *" $n "*) ;; *) cc_r=$n; break ;; esac
	done
	if [ -z "$cc_r" ]; then
		skip cgroup_hold.unprivileged_congestion_not_allowed_not_held "every loaded congestion control is allowed here ($avail)"
	else
		set1 ccr "$CLI" --cgroup --congestion "$cc_r" -- $NOBODY "$RS" -n 1 -t 20 -s TCP_CONGESTION="$cc_a"
		check cgroup_hold.unprivileged_congestion_not_allowed_not_held "--congestion $cc_r ($allowed allowed): the app's $cc_a: $(set_of ccr TCP_CONGESTION=$cc_a) (want rc=0 read=$cc_a); $(grep 'not held' "$TMP/ccr.err" | head -c 300)" \
			"$(set_of ccr TCP_CONGESTION=$cc_a)" = "rc=0 read=$cc_a" -a \
			-n "$(grep -F "congestion $cc_r (TCP_CONGESTION) is not held" "$TMP/ccr.err")" -a \
			-n "$(grep "event=cgroup .*congestion=$cc_r" "$TMP/ccr.err")"
	fi
fi

# ---- the program's size: the instruction count binds, not a table of socktune's
peers="--peer 127.0.0.1/32"
for i in 2 3 4 5 6 7; do peers="$peers --peer 10.$i.0.0/16"; done
"$CLI" --cgroup --client --syn-rto 2s --initrwnd 20 --nodelay $peers -- true 2>"$TMP/peers7.err"
rc=$?
check cgroup_hold.seven_peers_load "status $rc: $(head -c 400 "$TMP/peers7.err")" \
	"$rc" = 0 -a -n "$(grep 'level=info event=cgroup .*conn=outgoing' "$TMP/peers7.err")"
for i in $(seq 8 16); do peers="$peers --peer 10.$i.0.0/16"; done
"$CLI" --cgroup --client --syn-rto 2s --initrwnd 20 --nodelay $peers -- true 2>"$TMP/peers16.err"
rc=$?
check cgroup_hold.sixteen_peers_refused_by_count "status $rc: $(head -c 400 "$TMP/peers16.err")" \
	"$rc" = 2 -a -n "$(grep 'would be over 1024 instructions ([0-9]*)' "$TMP/peers16.err")" -a \
	-z "$(grep -E 'labels|jumps' "$TMP/peers16.err")"

# ---- the lines are the library's format, every key in the one table
"$CLI" --schema >"$TMP/schema"
res=$($PY "$ROOT/tests/py/logfmt_check.py" "$TMP/schema" $(grep -ls 'event=app-override' "$TMP"/*.err) 2>/dev/null)
check cgroup_hold.lines_in_schema "$res" "$res" = ok

# ---- attach --cgroup --nodelay on a running server's cgroup: the hook comes with it; its
# count is said by detach (app_overrides_refused), read from the hook's map before it goes
# (a connection again to the same server while over 2 of REQS are over 30 ms, 3 tries at
# most: tests/lib.sh cured_within; it serves 3, and is stopped after: one reset refused each)
cg_test_dir cgroup_hold_attach
rs att sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -n 3 -t 20' sh "$CG" "$RS"
"$CLI" attach --cgroup --nodelay "$RS_PID" >"$TMP/attach.out" 2>"$TMP/attach.err"
rc=$?
att() { OVER=$(kc att); }
cured_within cgroup_hold_attach.not_stalled 2 att
over=$OVER
kill $RS_PID 2>/dev/null
wait $RS_PID
echo "INFO cgroup_hold_attach: requests over 30 ms: plain $plain_over of $REQS, after attach --cgroup --nodelay ${over:-?} of $REQS"
check cgroup_hold_attach.nodelay_after_reset "attach status $rc: $(grep -E '^(CONN|DONE)' "$TMP/att.out" | tr '\n' ' ') $(head -c 300 "$TMP/attach.err"); hook: $("$BPFQ" attached "$CG" setsockopt)" \
	"$rc" = 0 -a -n "$(grep '^CONN nodelay=1 set=0' "$TMP/att.out")"
check cgroup_hold_attach.not_stalled "$(cat "$TMP/att.kc") (want at most 2 of $REQS over 30 ms; plain: $plain_over; tries: $TRIES)" \
	-n "$over" -a "${over:-99}" -le 2
"$CLI" detach "$CG" >"$TMP/det.out" 2>"$TMP/det.err"
rc=$?
line=$(grep 'event=cgroup_detach' "$TMP/det.out")
check cgroup_hold_attach.override_said "status $rc: $line $(head -c 300 "$TMP/det.err") (want $TRY refused: a connection a try)" \
	"$rc" = 0 -a "$(field "$line" app_overrides_refused)" = "$TRY" -a "$(field "$line" detached)" = 2 -a \
	-n "$(printf '%s' "$line" | grep -F "nodelay $TRY (accepted)")" -a -z "$("$BPFQ" attached "$CG" setsockopt)"
