#!/bin/sh
# Which cgroup socktune --cgroup uses.  --cgroup-path is refused as the root cgroup by
# identity, not by its name: under a second mount of cgroup2 the root is refused too (it was
# taken, and the whole host tuned), and a cgroup below it works and tunes.  A relative path
# and one with a trailing slash are the cgroup they name (they were refused with a wrong
# parent).  Under `ip netns exec` (a fresh /sys, no cgroup2) the refusal names
# `nsenter --net=/run/netns/NAME`, which works.  Asserted on the program's /proc/self/cgroup
# and its connection's tcpi_snd_cwnd.
. "$(dirname "$0")/lib.sh"

cg_test_dir cgroup_paths

# tuned NAME WANT_CGROUP ARGS...: socktune --cgroup --client --initcwnd 40 ARGS -- the client,
# against a tserver outside; PASS when it ran in WANT_CGROUP (as /proc/self/cgroup writes it)
# with cwnd 40
tuned() {
	_n=$1 _want=$2
	shift 2
	ts_start "$_n.srv" -- -4 -m hold -n 1 -t 10
	"$CLI" --cgroup --client --initcwnd 40 "$@" -- $PY "$ROOT/tests/py/cwndclient.py" "$SRV_PORT" \
		>"$TMP/$_n.out" 2>"$TMP/$_n.err"
	_rc=$?
	[ $_rc = 0 ] || "$BIN/kaclient" burst -n 1 -T 2 127.0.0.1 "$SRV_PORT" >/dev/null 2>&1
	wait_server
	check "$_n" "status $_rc; read: $(tr '\n' ' ' <"$TMP/$_n.out") (want cwnd=40 cgroup=$_want): $(head -c 300 "$TMP/$_n.err")" \
		"$_rc" = 0 -a "$(field "$(grep cwnd= "$TMP/$_n.out")" cwnd)" = 40 -a \
		"$(sed -n 's/^cgroup=//p' "$TMP/$_n.out")" = "$_want"
}
REL=${CG#"$MNT"}

# ---- a relative --cgroup-path, and one with a trailing slash
(cd "$CG" && tuned cgroup_path_relative "$REL/rel" --cgroup-path rel)
check cgroup_path_relative.removed "$CG/rel left" ! -e "$CG/rel"
tuned cgroup_path_trailing_slash "$REL/trail" --cgroup-path "$CG/trail/"
tuned cgroup_path_dotdot "$REL/dots" --cgroup-path "$CG/../${CG##*/}/dots"

# ---- ip netns exec: a fresh /sys without cgroup2; the refusal names nsenter, which works
if setup_ns NS 2>"$TMP/ns.err"; then
	rm -f "$TMP/ran"
	ip netns exec "$NS" "$CLI" --cgroup --nodelay -- touch "$TMP/ran" 2>"$TMP/netns.err"
	rc=$?
	check cgroup_ip_netns_exec_names_nsenter "status $rc (want 2), ran: $([ -e "$TMP/ran" ] && echo yes || echo no): $(head -c 400 "$TMP/netns.err") (inside: $(ip netns exec "$NS" sh -c 'stat -L -c %i /proc/self/ns/net; stat -c "%n %i" /run/netns/*' 2>&1 | tr '\n' ' '))" \
		"$rc" = 2 -a ! -e "$TMP/ran" -a -n "$(grep -F "nsenter --net=/run/netns/$NS" "$TMP/netns.err")"
	nsenter --net=/run/netns/"$NS" "$CLI" --cgroup --nodelay -- touch "$TMP/ran" 2>"$TMP/nsenter.err"
	rc=$?
	check cgroup_nsenter_works "status $rc (want 0), ran: $([ -e "$TMP/ran" ] && echo yes || echo no): $(head -c 300 "$TMP/nsenter.err")" \
		"$rc" = 0 -a -e "$TMP/ran" -a -n "$(grep 'level=info event=cgroup .*nodelay=1' "$TMP/nsenter.err")"
else
	skip cgroup_ip_netns_exec_names_nsenter "no network namespace: $(cat "$TMP/ns.err")"
fi

# ---- a second mount of cgroup2: its root is the host's root cgroup
M2=$TMP/cg2
mkdir "$M2"
if mount -t cgroup2 none "$M2" 2>"$TMP/mount.err"; then
	SUB=socktune-paths-$$
	AT_EXIT="rmdir '$M2/$SUB' 2>/dev/null; umount '$M2' || umount -l '$M2'; cg_cleanup"
	rm -f "$TMP/ran"
	"$CLI" --cgroup --cgroup-path "$M2" --initcwnd 40 -- touch "$TMP/ran" 2>"$TMP/root2.err"
	rc=$?
	check cgroup_path_second_mount_root_refused "status $rc (want 2), ran: $([ -e "$TMP/ran" ] && echo yes || echo no): $(head -c 300 "$TMP/root2.err")" \
		"$rc" = 2 -a ! -e "$TMP/ran" -a -n "$(grep 'is the root cgroup, the whole host' "$TMP/root2.err")"
	rm -f "$TMP/ran"
	"$CLI" --cgroup --cgroup-path "$M2/" --initcwnd 40 -- touch "$TMP/ran" 2>"$TMP/root2s.err"
	rc=$?
	check cgroup_path_second_mount_root_slash_refused "status $rc (want 2): $(head -c 300 "$TMP/root2s.err")" \
		"$rc" = 2 -a ! -e "$TMP/ran"
	tuned cgroup_path_second_mount_sub "/$SUB" --cgroup-path "$M2/$SUB"
	check cgroup_path_second_mount_sub.removed "$M2/$SUB left" ! -e "$M2/$SUB"
else
	skip cgroup_path_second_mount "mount -t cgroup2: $(cat "$TMP/mount.err")"
fi
