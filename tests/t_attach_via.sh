#!/bin/sh
# socktune attach --via: a server that no pidfd copy reaches (python's http.server, run as
# another uid and made non-dumpable), attach run as root without CAP_SYS_PTRACE: its
# listener and an open keep-alive connection get TCP_NODELAY and SO_RCVBUF through the TCP
# iterator (via=bpf), the connection's ~40 ms stall gone, each value read from the kernel
# (pidfd_getfd by this test, which keeps CAP_SYS_PTRACE; ss); IPv4 and IPv6.  attach PID on
# it says exactly why not (the root cgroup ties no socket to a process), and tunes it once
# it runs in a cgroup of its own (the cwnd clamp too: ss's ssthresh); another uid's server
# on the next port, a server on the same port in another network namespace, and the client
# ends keep their values.  Without CAP_BPF and CAP_SYS_ADMIN as well, it refuses naming
# both paths; a kernel before 6.4, no BTF, a BTF without bpf_iter_tcp: --via bpf refuses with
# the reason, auto takes the pidfd path; a kernel without TCP_DELACK_MAX_US (emulated):
# auto leaves --delack-max to the iterator.  After every run (a refusal, and a socktune
# killed in mid-run too) no program, map or link of it is in the kernel, by the ids it said.
. "$(dirname "$0")/lib.sh"

needs_iterator attach_via setpriv ip ss
IP=$BIN/iterprobe
PAIR="$ROOT/tests/py/iterpair.py"

# rb_of FLAGS FILTER: the receive buffer (skmem rb) ss shows for the first socket of FILTER
# (FLAGS -l: a listener)
rb_of() {
	ss -Htnm $1 "$2" | tr ' ,(' '\n\n\n' | sed -n 's/^rb\([0-9]*\).*/\1/p' | head -n 1
}
# line FILE PATTERN: the first line of FILE matching PATTERN
line() { grep -m 1 -- "$2" "$1"; }
# json KEY: KEY's value in the JSON object on stdin
json() { $PY -c 'import json,sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"; }
# ask_round DIR R: the iterpair client's round R (each connection's both ends read)
ask_round() {
	: >"$1/go.$2"
	wait_file "$1/ask.out" "^DONE $2\$" 20
}
end_of() { grep -m 1 "^$2 $3 {" "$1/ask.out" | cut -d' ' -f3-; }

# ---- :PORT, IPv4 and IPv6: the listener and an open keep-alive connection ----
for FAM in 4 6; do
	H=$(host_of "$FAM")
	P=$(free_port)
	if ! start_server -l "$P" web$FAM -- $AS_NOBODY $PY "$ROOT/tests/py/undumpable.py" \
		http.server --bind "$H" --protocol HTTP/1.1 "$P"; then
		fail "ip${FAM}_server" "http.server did not start: $(cat "$TMP/web$FAM.err")"
		continue
	fi
	WEB=$SRV_PID
	check "ip${FAM}_server_of_nobody" "$(grep Uid "/proc/$WEB/status")" \
		"$(awk '/^Uid:/ { print $2 }' "/proc/$WEB/status")" = 65534
	# (the pidfd path is refused: no holder of the listener readable without CAP_SYS_PTRACE)
	$NOPTRACE "$CLI" attach --via pidfd --nodelay ":$P" >"$TMP/pidfd$FAM.out" 2>&1
	rc=$?
	check "ip${FAM}_pidfd_refused" "status $rc: $(cat "$TMP/pidfd$FAM.out")" "$rc" = 3 -a \
		-n "$(grep 'held by no process this user may see' "$TMP/pidfd$FAM.out")"
	$PY "$ROOT/tests/py/kaget.py" "$P" "$TMP/go$FAM" "$TMP/early$FAM.out" 10 "$H" &
	early=$!
	busywait 10000 file_has "$TMP/early$FAM.out" '^before='
	CP=$(ss -Htn state established "( dport = :$P )" | awk '{ n = split($3, a, ":"); print a[n]; exit }')
	$NOPTRACE "$CLI" attach --nodelay --rcvbuf 64K --connections ":$P" >"$TMP/a$FAM.out" \
		2>"$TMP/a$FAM.err"
	rc=$?
	# (read while the client holds the connection open)
	lk="$(nodelay_of "$WEB" listener)/$(rb_of -l "sport = :$P")"
	ck="$(nodelay_of "$WEB" "$CP")/$(rb_of "" "( sport = :$P and dport = :$CP )")"
	# (2 of 10 over 30 ms allowed, a fifth: python at both ends, on a loaded machine)
	cured_within "ip${FAM}_stall_gone" 2 kaget_again "$TMP/go$FAM" "$TMP/early$FAM.out"
	kaget_end "$TMP/go$FAM"
	wait $early
	echo "# ip$FAM: requests over 30 ms of 10 on the open connection: $(tr '\n' ' ' <"$TMP/early$FAM.out")"
	l=$(line "$TMP/a$FAM.out" 'event=attach ')
	c=$(line "$TMP/a$FAM.out" 'event=attach-connection ')
	check "ip${FAM}_status" "status $rc: $(cat "$TMP/a$FAM.out" "$TMP/a$FAM.err")" "$rc" = 0
	check "ip${FAM}_listener_line" "$l" "$(field "$l" via)/$(field "$l" found_by)/$(field "$l" nodelay)/$(field "$l" rcvbuf.effective)/$(field "$l" uid)" \
		= "bpf/sock_diag/1/131072/65534"
	check "ip${FAM}_connection_line" "$c" "$(field "$c" via)/$(field "$c" nodelay)/$(field "$c" rcvbuf.effective)" \
		= "bpf/1/131072" -a -n "$(field "$c" cookie)"
	check "ip${FAM}_listener_kernel" "listener NODELAY/rb $lk (want 1/131072)" "$lk" = 1/131072
	check "ip${FAM}_connection_kernel" "connection :$CP NODELAY/rb $ck (want 1/131072)" \
		"$ck" = 1/131072
	check "ip${FAM}_stall_gone" "tries $TRIES: $(cat "$TMP/early$FAM.out")" \
		"$(sed -n 's/^before=//p' "$TMP/early$FAM.out")" -ge 8 -a "${OVER:-99}" -le 2
	iter_none_left "ip${FAM}_nothing_left" "$TMP/a$FAM.err"
	[ "$FAM" = 4 ] && WEB4=$WEB P4=$P
	[ "$FAM" = 6 ] && kill "$WEB"
done

# ---- attach PID: no descriptor readable; tied to it by a cgroup of its own, or said why ----
if [ -n "${WEB4:-}" ]; then
	$NOPTRACE "$CLI" attach --nodelay "$WEB4" >"$TMP/pid.out" 2>"$TMP/pid.err"
	rc=$?
	# (this machine runs it in the root cgroup; elsewhere a cgroup shared with other
	# processes: either is no tie, said)
	check pid_says_why "status $rc: $(cat "$TMP/pid.out" "$TMP/pid.err")" "$rc" = 3 -a \
		-n "$(grep "^socktune: attach $WEB4: not tuned: its descriptors cannot be read (/proc/$WEB4/fd: Permission denied.*cannot be tied to it by their cgroup: it \(is in the root cgroup\|s cgroup .* also holds pid\)" "$TMP/pid.err")" -a \
		! -s "$TMP/pid.out"
	kill "$WEB4"
fi
MNT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
CG=$MNT/socktune-via-test-$$
if [ -z "$MNT" ] || ! mkdir "$CG" 2>"$TMP/mkdir.err"; then
	skip pid_tied "no test cgroup under '$MNT': $(cat "$TMP/mkdir.err" 2>/dev/null)"
else
	AT_EXIT=cg_cleanup
	P=$(free_port) P2=$(free_port)
	start_server -t 10 tied -- sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG" \
		$AS_NOBODY $PY "$PAIR" serve --port "$P" --undumpable --wait 60
	TIED=$SRV_PID
	start_server nbr -- $AS_NOBODY $PY "$PAIR" serve --port "$P2" --undumpable --wait 60
	# the same port in another network namespace, its own client
	if setup_ns NS; then
		SRV_WRAP="ip netns exec $NS" start_server nsrv -- $AS_NOBODY $PY "$PAIR" serve \
			--port "$P" --undumpable --wait 60
		mkdir -p "$TMP/ns"
		ip netns exec "$NS" $PY "$PAIR" ask --dir "$TMP/ns" --wait 60 "$P" >"$TMP/ns/ask.out" 2>&1 &
		wait_file "$TMP/ns/ask.out" '^READY' 10
	fi
	mkdir -p "$TMP/c"
	$PY "$PAIR" ask --dir "$TMP/c" --wait 60 "$P" "$P2" >"$TMP/c/ask.out" 2>"$TMP/c/ask.err" &
	wait_file "$TMP/c/ask.out" '^READY' 10
	ask_round "$TMP/c" 1
	$NOPTRACE "$CLI" attach --nodelay --cwnd-clamp 20 --connections "$TIED" >"$TMP/t.out" 2>"$TMP/t.err"
	rc=$?
	ask_round "$TMP/c" 2
	l=$(line "$TMP/t.out" 'event=attach ')
	c=$(line "$TMP/t.out" 'event=attach-connection ')
	cgid=$(stat -c %i "$CG")
	check pid_tied_status "status $rc: $(cat "$TMP/t.out" "$TMP/t.err")" "$rc" = 0
	check pid_tied_lines "cgroup $cgid: $l / $c" \
		"$(field "$l" target)/$(field "$l" cgroup_id)/$(field "$l" via)/$(field "$l" nodelay)" = "$TIED/$cgid/bpf/1" -a \
		"$(field "$c" via)/$(field "$c" nodelay)/$(field "$c" cwnd_clamp)" = "bpf/1/20"
	# the server's own reading of its end, and ss's
	after=$(end_of "$TMP/c" 2 0)
	check pid_tied_kernel "before $(end_of "$TMP/c" 1 0) after $after" \
		"$(end_of "$TMP/c" 1 0 | json nodelay)/$(echo "$after" | json nodelay)/$(echo "$after" | json ssthresh)" = 0/1/20
	ssline=$(ss -Htni "( sport = :$P and dport = :$(line "$TMP/c/ask.out" '^READY' | cut -d' ' -f2) )")
	check pid_tied_ss "$ssline" "$(echo "$ssline" | grep -c 'ssthresh:20 ')" = 1
	# untouched: the neighbour's connection (another process of the same uid, the next
	# port), the client's ends, the other namespace's server on the same port
	check pid_tied_neighbour "$(end_of "$TMP/c" 1 1) -> $(end_of "$TMP/c" 2 1)" \
		"$(end_of "$TMP/c" 2 1 | json nodelay)/$(end_of "$TMP/c" 2 1 | json ssthresh)" = \
		"0/$(end_of "$TMP/c" 1 1 | json ssthresh)"
	check pid_tied_client_ends "$(grep '^2 [01] client' "$TMP/c/ask.out")" \
		"$(grep '^2 [01] client' "$TMP/c/ask.out" | grep -c '"nodelay": 0')" = 2
	iter_none_left pid_tied_nothing_left "$TMP/t.err"
	# :PORT here leaves the other namespace's server on the same port alone
	$NOPTRACE "$CLI" attach --nodelay --cwnd-clamp 20 --connections ":$P" >"$TMP/p.out" 2>"$TMP/p.err"
	if [ -n "${NS:-}" ]; then
		ask_round "$TMP/ns" 1
		check other_netns_untouched "$(end_of "$TMP/ns" 1 0)" \
			"$(end_of "$TMP/ns" 1 0 | json nodelay)" = 0 -a \
			"$(end_of "$TMP/ns" 1 0 | json ssthresh)" != 20
	fi
	iter_none_left port_nothing_left "$TMP/p.err"

	# ---- neither path: without CAP_BPF and CAP_SYS_ADMIN too, both named ----
	$NOCAPS "$CLI" attach --nodelay --connections ":$P" >"$TMP/n1.out" 2>"$TMP/n1.err"
	rc=$?
	check neither_port "status $rc: $(cat "$TMP/n1.err")" "$rc" = 3 -a \
		-n "$(grep "not tuned: a pidfd copy .*CAP_SYS_PTRACE.*; the TCP iterator cannot be used here: .*CAP_BPF" "$TMP/n1.err")"
	$NOCAPS "$CLI" attach --nodelay --connections "$TIED" >"$TMP/n2.out" 2>"$TMP/n2.err"
	rc=$?
	check neither_pid "status $rc: $(cat "$TMP/n2.err")" "$rc" = 3 -a \
		-n "$(grep "attach $TIED: not tuned: its descriptors cannot be read .*CAP_SYS_PTRACE.*the TCP iterator cannot be used here: .*CAP_BPF" "$TMP/n2.err")"
	check neither_loads_nothing "$(cat "$TMP/n1.err" "$TMP/n2.err")" \
		"$(cat "$TMP/n1.err" "$TMP/n2.err" | grep -c 'event=iterator')" = 0

	# ---- --via pidfd cannot set the clamp: refused before anything is looked at ----
	"$CLI" attach --via pidfd --cwnd-clamp 20 --connections "$TIED" >/dev/null 2>"$TMP/pc.err"
	rc=$?
	check pidfd_refuses_clamp "status $rc: $(cat "$TMP/pc.err")" "$rc" = 2 -a \
		-n "$(grep 'only a BPF program does' "$TMP/pc.err")"

	# ---- a kernel before 6.4 (setarch's uname 2.6), no BTF: refused by --via bpf, pidfd by auto
	if command -v setarch >/dev/null; then
		setarch --uname-2.6 "$CLI" attach --via bpf --nodelay ":$P" >/dev/null 2>"$TMP/old.err"
		rc=$?
		check old_kernel_refused "status $rc: $(cat "$TMP/old.err")" "$rc" = 3 -a \
			-n "$(grep 'the TCP iterator cannot be used here: the kernel is Linux 2.6: .*from Linux 6.4' "$TMP/old.err")"
		setarch --uname-2.6 "$CLI" attach --nodelay ":$P2" >"$TMP/old2.out" 2>"$TMP/old2.err"
		rc=$?
		check old_kernel_auto_pidfd "status $rc: $(cat "$TMP/old2.out" "$TMP/old2.err")" "$rc" = 0 -a \
			"$(field "$(line "$TMP/old2.out" 'event=attach ')" via)" = pidfd
	fi
	if command -v unshare >/dev/null; then
		unshare -m --propagation private sh -c 'mount -t tmpfs none /sys/kernel/btf && exec "$@"' \
			- "$CLI" attach --via bpf --nodelay ":$P" >/dev/null 2>"$TMP/btf.err"
		rc=$?
		check no_btf_refused "status $rc: $(cat "$TMP/btf.err")" "$rc" = 3 -a \
			-n "$(grep 'the TCP iterator cannot be used here: there is no /sys/kernel/btf/vmlinux' "$TMP/btf.err")"
		# a BTF of one type, INT "int": valid, and no bpf_iter_tcp in it
		$PY -c 'import struct,sys; t=struct.pack("<III", 1, 1 << 24, 4) + struct.pack("<I", 32); s=b"\0int\0"
sys.stdout.buffer.write(struct.pack("<HBBIIIII", 0xeb9f, 1, 0, 24, 0, len(t), len(t), len(s)) + t + s)' >"$TMP/int.btf"
		unshare -m --propagation private sh -c 'mount -t tmpfs none /sys/kernel/btf &&
			cp "$1" /sys/kernel/btf/vmlinux && shift && exec "$@"' - "$TMP/int.btf" \
			"$CLI" attach --via bpf --nodelay ":$P" >/dev/null 2>"$TMP/btf2.err"
		rc=$?
		check no_iterator_in_btf_refused "status $rc: $(cat "$TMP/btf2.err")" "$rc" = 3 -a \
			-n "$(grep 'the TCP iterator cannot be used here: /sys/kernel/btf/vmlinux has no bpf_iter_tcp' "$TMP/btf2.err")"
	fi

	# ---- a kernel without TCP_DELACK_MAX_US (before 6.15): every setsockopt of attach's
	# answered ENOPROTOOPT (strace's injection; --delack-max is the only option set), so
	# auto takes the copy and leaves --delack-max to the iterator (TCP_BPF_DELACK_MAX, 5.10),
	# on the neighbour server, which this test's root may copy from ----
	if command -v strace >/dev/null && [ -n "$(kernel_keeps 6 46 5000)" ]; then
		strace -f -o /dev/null -e trace=setsockopt -e inject=setsockopt:error=ENOPROTOOPT \
			"$CLI" attach --delack-max 5ms --connections ":$P2" >"$TMP/dl.out" 2>"$TMP/dl.err"
		rc=$?
		ask_round "$TMP/c" 3
		keeps=$(kernel_keeps 6 46 5000)
		c=$(line "$TMP/dl.out" 'event=attach-connection ')
		check delack_old_kernel_line "status $rc: $(cat "$TMP/dl.out" "$TMP/dl.err")" "$rc" = 0 -a \
			"$(field "$c" via)/$(field "$c" delack_max_us.effective)" = "bpf/$keeps"
		check delack_old_kernel_kernel "server reads $(end_of "$TMP/c" 3 1) (want delack_max_us $keeps)" \
			"$(end_of "$TMP/c" 3 1 | json delack_max_us)" = "$keeps"
		iter_none_left delack_old_kernel_nothing_left "$TMP/dl.err"
	fi

	# ---- socktune killed in mid-run (each bpf(2) call held 0.4 s by strace): the kernel
	# frees the program, map and link with their last descriptor ----
	if command -v strace >/dev/null; then
		"$IP" named >"$TMP/named.before"
		strace -f -o "$TMP/strace.out" -e trace=bpf -e inject=bpf:delay_exit=400000 \
			"$CLI" attach --via bpf --nodelay --connections ":$P" >/dev/null 2>&1 &
		st=$!
		# until a link of bpfiter's is there (its program, map and link all made)
		has_link() { "$IP" named >"$TMP/named.now"; grep -q '^link ' "$TMP/named.now"; }
		busywait 20000 has_link
		victim=$(pgrep -P "$st" | head -n 1)
		mid=$(grep -v -x -F -f "$TMP/named.before" "$TMP/named.now" | tr '\n' ' ')
		[ -n "$victim" ] && kill -KILL "$victim"
		wait "$st" 2>/dev/null
		# (each object by its id: gone once the killed process's descriptors closed)
		gone_all() {
			# shellcheck disable=SC2086 # the kinds and ids, a word each
			set -- $mid
			while [ $# -ge 2 ]; do
				case $1 in
				prog) "$IP" ids "$2" 0 0 | grep -q 'prog=0' || return 1 ;;
				map) "$IP" ids 0 "$2" 0 | grep -q 'map=0' || return 1 ;;
				link) "$IP" ids 0 0 "$2" | grep -q 'link=0' || return 1 ;;
				esac
				shift 2
			done
		}
		busywait 3000 gone_all
		rc=$?
		echo "# killed in mid-run (pid $victim) holding: $mid"
		check killed_mid_run "mid-run: ${mid:-none} (want a prog, a map and a link); after SIGKILL of $victim gone: $([ $rc = 0 ] && echo yes || echo no)" \
			"$(echo "$mid" | grep -c 'prog .*map \|map .*prog ')" = 1 -a \
			-n "$(echo "$mid" | grep 'link ')" -a "$rc" = 0
	fi
fi
exit 0
