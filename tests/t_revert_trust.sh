#!/bin/sh
# socktune revert changes a socket only when it is provably the one watch --apply changed
# and still holds what apply set; every other line of the journal is said and left.  Each
# journal here is written as watch --apply writes its lines (tests/py/revert_tools.py line:
# the same keys in the same order, pid, pid_start, fd, inode read from the live server),
# then made hostile one way; every value is read back from the kernel (a pidfd_getfd copy),
# never from what socktune says:
# - a line cut short (before its inode, by a truncate or a full disk), one without the
#   process's start time (an older socktune's), one over 8 KiB whose inode names a socket
#   closed since (the fd now holds an unrelated listener), one longer than the reader takes:
#   a value longer than its field (a 32-digit fd, a 17-digit change id: never cut to fit):
#   the unrelated listener's backlog stays 7, each line is said (status 1);
# - a pid that another process has now (pid_start not the one written): left, said;
# - an option revert does not know: one of the table no cure sets ("rcvbuf"), the option's
#   label rather than its key ("TCP_NODELAY"): never taken for TCP_NODELAY (1 stays 1), said
#   by name, status 1, nothing marked in the journal;
# - the application set its own value after apply (1024, where apply set 4096): left at
#   1024, said with both values, and marked in the journal;
# - the journalled process forked a child that holds the listener and exited: revert finds
#   the socket by its inode in the journal's netns and sets it back through the child
#   (held_by=CHILD), never "gone".
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open' 2>/dev/null; then
	skip revert_trust "$PY has no os.pidfd_open"
	exit 0
fi
TOOLS=$ROOT/tests/py/revert_tools.py
tools() { $PY "$TOOLS" "$@"; }

# serve NAME N BACKLOG NODELAY: the tools' server in the background (SRV pid; L1 its first
# listener's "fd port inode")
serve() {
	$PY "$TOOLS" serve "$2" "$3" "$4" >"$TMP/$1.out" 2>"$TMP/$1.err" &
	SRV=$!
	wait_file "$TMP/$1.out" '^READY' 10
}
lsn() { # lsn NAME K FIELD: the K-th listener's fd, port or inode
	sed -n "s/^L fd=\([0-9]*\) port=\([0-9]*\) inode=\([0-9]*\)$/\1 \2 \3/p" "$TMP/$1.out" |
		sed -n "$2p" | awk -v f="$3" '{ print f == "fd" ? $1 : f == "port" ? $2 : $3 }'
}
# journal FILE LINE...: a journal of these lines (after its first), 0600 as watch makes it
journal() {
	_j=$1
	shift
	tools head >"$_j"
	for _l in "$@"; do printf '%s\n' "$_l" >>"$_j"; done
	chmod 600 "$_j"
}
count() { grep -c -- "$2" "$1" 2>/dev/null; }

serve a 1 7 0 || { fail revert_trust.server "$(cat "$TMP/a.err")"; exit 0; }
A=$SRV FD=$(lsn a 1 fd) PORT=$(lsn a 1 port) INO=$(lsn a 1 inode)
backlog() { tools sock "$A" "$FD" backlog; }
check revert_trust_server "backlog $(backlog) (7)" "$(backlog)" = 7
full=$(tools line "$A" "$FD" "$INO" backlog 5 7 "127.0.0.1:$PORT")

# cut_case NAME LINE: revert all on a journal holding LINE: the listener keeps backlog 7,
# the line is said (status 1), nothing marked
cut_case() {
	journal "$TMP/$1.jsonl" "$2"
	"$CLI" revert --journal "$TMP/$1.jsonl" all >"$TMP/$1.out" 2>"$TMP/$1.err"
	rc=$?
	b=$(backlog)
	check "revert_$1" "status $rc, backlog $b (7 stays); $(cat "$TMP/$1.out" "$TMP/$1.err" | cut -c1-400)" \
		"$rc" = 1 -a "$b" = 7 -a "$(count "$TMP/$1.out" "event=revert .*error=\".*$3.*left as it is\"")" = 1 \
		-a "$(count "$TMP/$1.jsonl" '"event": "revert"')" = 0
	[ "$b" = 7 ] || tools sock "$A" "$FD" listen 7
}
# (cut where a truncate or a full disk leaves it: after "netns", before "inode")
cut_case cut_before_inode "${full%%, \"inode\"*}" "a cut line"
cut_case no_pid_start "$(tools line "$A" "$FD" "$INO" backlog 5 7 "127.0.0.1:$PORT" -pid_start)" "no pid_start"
cut_case no_inode "$(tools line "$A" "$FD" "$INO" backlog 5 7 "127.0.0.1:$PORT" -inode)" "no inode"
cut_case no_after "$(tools line "$A" "$FD" "$INO" backlog 5 7 "127.0.0.1:$PORT" -after)" "no after"
# a value longer than its field: never cut to fit (31 zeros and the fd, 32 digits, cut to 31
# read as fd 0; a change id of 17 digits cut to 16 named another change, revert ID took it)
zeros=0000000000000000000000000000000
cut_case long_fd "$(echo "$full" | sed "s/\"fd\": $FD,/\"fd\": $zeros$FD,/")" 'field \\"fd\\" longer'
cut_case long_change "$(tools line "$A" "$FD" "$INO" backlog 5 7 "127.0.0.1:$PORT" change=0123456789abcdef7)" \
	'field \\"change\\" longer'
"$CLI" revert --journal "$TMP/long_change.jsonl" 0123456789abcdef >"$TMP/long_id.out" 2>&1
rc=$?
b=$(backlog)
check revert_long_change_id "revert 0123456789abcdef: status $rc, backlog $b (7 stays); $(cut -c1-300 "$TMP/long_id.out")" \
	"$rc" = 2 -a "$b" = 7 -a "$(count "$TMP/long_change.jsonl" '"event": "revert"')" = 0
[ "$b" = 7 ] || tools sock "$A" "$FD" listen 7
pad=$(head -c 70000 /dev/zero | tr '\0' x)
cut_case too_long "$(tools line "$A" "$FD" "$INO" backlog 5 7 "127.0.0.1:$PORT" -inode -time \
	"note=$pad" "inode=$INO")" "longer than the reader takes"
# a line of 9 KiB (over the old reader's 8 KiB) naming a socket closed since: the fd holds
# an unrelated listener now; read whole, its inode is not that listener's: gone, not touched
gone=$($PY -c 'import os, socket; s = socket.socket(); print(os.fstat(s.fileno()).st_ino)')
journal "$TMP/long.jsonl" "$(tools line "$A" "$FD" "$gone" backlog 5 7 "127.0.0.1:$PORT" -inode -time \
	"note=$(echo "$pad" | cut -c1-9000)" "inode=$gone")"
"$CLI" revert --journal "$TMP/long.jsonl" all >"$TMP/long.out" 2>"$TMP/long.err"
rc=$?
b=$(backlog)
check revert_long_line_other_socket "status $rc, backlog $b (7 stays); $(cat "$TMP/long.out" "$TMP/long.err" | cut -c1-400)" \
	"$rc" = 0 -a "$b" = 7 -a "$(count "$TMP/long.out" 'event=revert .*error="the socket is gone')" = 1
[ "$b" = 7 ] || tools sock "$A" "$FD" listen 7

# ---- a pid another process has now ----
# (the journalled socket closed with its process; the new process of that pid holds a
# socket of its own at that fd: the journalled inode held by none, the pid's socket kept)
start=$($PY -c 'import sys; s = open("/proc/%s/stat" % sys.argv[1]).read(); print(int(s[s.rindex(")") + 2:].split()[19]))' "$A")
journal "$TMP/reused.jsonl" "$(tools line "$A" "$FD" "$gone" backlog 5 7 "127.0.0.1:$PORT" "pid_start=$((start - 1))")"
"$CLI" revert --journal "$TMP/reused.jsonl" all >"$TMP/reused.out" 2>"$TMP/reused.err"
rc=$?
b=$(backlog)
check revert_pid_reused "status $rc, backlog $b (7 stays); $(cat "$TMP/reused.out" "$TMP/reused.err")" \
	"$rc" = 0 -a "$b" = 7 -a "$(count "$TMP/reused.out" "error=\"pid $A is another process now")" = 1
[ "$b" = 7 ] || tools sock "$A" "$FD" listen 7
kill "$A"; wait "$A" 2>/dev/null

# ---- an option revert does not know ----
# (each line as apply would write a NODELAY change, before 0 and after 1, the listener at 1:
# taken for TCP_NODELAY, revert would set it to 0)
serve n 1 5 1 || { fail revert_trust.server_n "$(cat "$TMP/n.err")"; exit 0; }
N=$SRV NFD=$(lsn n 1 fd)
# unknown_case NAME OPTION
unknown_case() {
	journal "$TMP/$1.jsonl" "$(tools line "$N" "$NFD" "$(lsn n 1 inode)" "$2" 0 1 "127.0.0.1:$(lsn n 1 port)")"
	"$CLI" revert --journal "$TMP/$1.jsonl" all >"$TMP/$1.out" 2>"$TMP/$1.err"
	rc=$?
	v=$(tools sock "$N" "$NFD" get-nodelay)
	check "$3" "status $rc, listener NODELAY $v (1 stays), revert lines in the journal \
$(count "$TMP/$1.jsonl" '"event": "revert"') (0); $(cat "$TMP/$1.out" "$TMP/$1.err")" \
		"$rc" = 1 -a "$v" = 1 -a \
		"$(count "$TMP/$1.out" "option \\\\\"$2\\\\\" is not one revert knows (backlog, nodelay")" = 1 -a \
		"$(count "$TMP/$1.jsonl" '"event": "revert"')" = 0
	[ "$v" = 1 ] || tools sock "$N" "$NFD" nodelay 1
}
unknown_case rcvbuf rcvbuf revert_unknown_option
unknown_case label TCP_NODELAY revert_option_label_refused
kill "$N"; wait "$N" 2>/dev/null

# ---- the application's own value, set after apply ----
serve p 1 5 0 || { fail revert_trust.server_p "$(cat "$TMP/p.err")"; exit 0; }
P=$SRV PFD=$(lsn p 1 fd)
tools sock "$P" "$PFD" listen 4096 # (what watch --apply does: listen again, 4096)
applied=$(tools sock "$P" "$PFD" backlog)
journal "$TMP/later.jsonl" "$(tools line "$P" "$PFD" "$(lsn p 1 inode)" backlog 5 "$applied" "127.0.0.1:$(lsn p 1 port)")"
tools sock "$P" "$PFD" listen 1024 # (then the application sets its own)
"$CLI" revert --journal "$TMP/later.jsonl" all >"$TMP/later.out" 2>"$TMP/later.err"
rc=$?
b=$(tools sock "$P" "$PFD" backlog)
check revert_keeps_app_value "status $rc, backlog $b (1024 stays; apply set $applied); $(cat "$TMP/later.out" "$TMP/later.err")" \
	"$rc" = 0 -a "$b" = 1024 -a \
	"$(count "$TMP/later.out" "error=\"the value is 1024 now, not the $applied apply set: left")" = 1 -a \
	"$(count "$TMP/later.jsonl" '"event": "revert"')" = 1
"$CLI" revert --journal "$TMP/later.jsonl" all >"$TMP/later2.out" 2>&1
check revert_keeps_app_value_once "second revert: $(cat "$TMP/later2.out")" ! -s "$TMP/later2.out"
kill "$P"; wait "$P" 2>/dev/null

# ---- the journalled process gone, its listener held by its child ----
# (a parent that forks a child and exits; an nginx binary upgrade's old master leaving its
# workers: the socket apply changed is still open and still holds 4096)
CH=""
AT_EXIT='[ -n "$CH" ] && kill "$CH" 2>/dev/null'
$PY -c '
import os, socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(5)
print("L fd=%d port=%d inode=%d" % (s.fileno(), s.getsockname()[1], os.fstat(s.fileno()).st_ino), flush=True)
print("READY", flush=True)
for _ in range(300):  # (30 s at most for the word to fork)
    if os.path.exists(sys.argv[1]):
        break
    time.sleep(0.1)
child = os.fork()
if child:
    print("CHILD %d" % child, flush=True)
    os._exit(0)
time.sleep(60)  # (the child holds the listener, killed at exit)
' "$TMP/fork.go" >"$TMP/f.out" 2>"$TMP/f.err" &
F=$!
if ! wait_file "$TMP/f.out" '^READY' 10; then
	fail revert_trust.server_f "$(cat "$TMP/f.err")"
	exit 0
fi
FFD=$(lsn f 1 fd) FINO=$(lsn f 1 inode)
tools sock "$F" "$FFD" listen 4096 # (what watch --apply does: listen again, 4096)
applied=$(tools sock "$F" "$FFD" backlog)
journal "$TMP/fork.jsonl" "$(tools line "$F" "$FFD" "$FINO" backlog 5 "$applied" "127.0.0.1:$(lsn f 1 port)")"
: >"$TMP/fork.go"
wait_file "$TMP/f.out" '^CHILD ' 10
CH=$(sed -n 's/^CHILD //p' "$TMP/f.out")
wait "$F" 2>/dev/null
wait_gone "$F" 10
b0=$(tools sock "$CH" "$FFD" backlog)
"$CLI" revert --journal "$TMP/fork.jsonl" all >"$TMP/fork.out" 2>"$TMP/fork.err"
rc=$?
b=$(tools sock "$CH" "$FFD" backlog)
check revert_child_holds "status $rc, backlog $b in child $CH (was $b0, apply set $applied; want 5), parent $F gone; $(cat "$TMP/fork.out" "$TMP/fork.err" | cut -c1-500)" \
	"$rc" = 0 -a "$b0" = "$applied" -a "$b" = 5 -a ! -d "/proc/$F" -a \
	"$(count "$TMP/fork.out" "event=revert .*held_by=$CH .*before=$applied after=5")" = 1 -a \
	"$(count "$TMP/fork.out" 'gone')" = 0 -a \
	"$(count "$TMP/fork.jsonl" "\"held_by\": $CH, ")" = 1
kill "$CH" 2>/dev/null
exit 0
