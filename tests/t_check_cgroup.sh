#!/bin/sh
# socktune check on the cgroup mode: usable here (root, cgroup v2 mounted, the kernel loads a
# SOCK_OPS program), and not usable with --cgroup-path at a directory that is no cgroup, or for
# a user without CAP_BPF/CAP_NET_ADMIN (setpriv to nobody): each said in the JSON record with
# the cause, never guessed.
. "$(dirname "$0")/lib.sh"

cg_field() { # FILE KEY: cgroup_mode.KEY of check's document, as JSON
	$PY -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["cgroup_mode"].get(sys.argv[2])))' "$1" "$2" 2>/dev/null
}

"$CLI" --cgroup --initcwnd 40 -- true 2>"$TMP/probe.err"
rc=$?
"$CLI" check --json >"$TMP/ok.json" 2>"$TMP/ok.err"
if [ $rc -ne 0 ]; then
	check check_cgroup_mode_not_usable_where_run_fails "the mode failed here (status $rc) but check says usable: $(cat "$TMP/ok.json" | head -c 400)" \
		"$(cg_field "$TMP/ok.json" usable)" = false
	skip check_cgroup_mode_usable "this machine cannot run socktune --cgroup (status $rc): $(head -n 1 "$TMP/probe.err")"
	exit 0
fi
mount=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
check check_cgroup_mode_usable "want usable, mount $mount, privileged, sockops_loads: $(head -c 600 "$TMP/ok.json")" \
	"$(cg_field "$TMP/ok.json" usable)" = true -a \
	"$(cg_field "$TMP/ok.json" cgroup2_mount)" = "\"$mount\"" -a \
	"$(cg_field "$TMP/ok.json" privileged)" = true -a \
	"$(cg_field "$TMP/ok.json" sockops_loads)" = true
"$CLI" check >"$TMP/ok.txt" 2>&1
check check_cgroup_mode_usable.text "$(grep -A5 'cgroup mode' "$TMP/ok.txt")" \
	-n "$(grep -F 'cgroup mode (socktune --cgroup, attach --cgroup): usable here' "$TMP/ok.txt")" -a \
	-n "$(grep -F "cgroup v2 = $mount" "$TMP/ok.txt")"

mkdir -p "$TMP/notcg"
"$CLI" check --json --cgroup-path "$TMP/notcg" >"$TMP/notcg.json" 2>"$TMP/notcg.err"
check check_cgroup_mode_no_cgroup2 "want not usable, no mount, load not tried: $(head -c 600 "$TMP/notcg.json") $(cat "$TMP/notcg.err")" \
	"$(cg_field "$TMP/notcg.json" usable)" = false -a \
	"$(cg_field "$TMP/notcg.json" cgroup2_mount)" = null -a \
	"$(cg_field "$TMP/notcg.json" sockops_loads)" = null -a \
	-n "$(cg_field "$TMP/notcg.json" reason | grep -F 'no cgroup v2 directory')"

if command -v setpriv >/dev/null; then
	chmod 755 "$TMP"
	setpriv --reuid 65534 --regid 65534 --clear-groups "$CLI" check --json >"$TMP/nopriv.json" 2>"$TMP/nopriv.err"
	check check_cgroup_mode_unprivileged "want not usable, not privileged, the load refused: $(head -c 600 "$TMP/nopriv.json") $(cat "$TMP/nopriv.err")" \
		"$(cg_field "$TMP/nopriv.json" usable)" = false -a \
		"$(cg_field "$TMP/nopriv.json" privileged)" = false -a \
		"$(cg_field "$TMP/nopriv.json" sockops_loads)" = false -a \
		-n "$(cg_field "$TMP/nopriv.json" reason | grep -F 'CAP_BPF')"
	# check --cgroup judges the cgroup mode's policy: where it cannot run, what its program would
	# set takes no effect (--strict fails), and a route's metric is not the program's either
	setpriv --reuid 65534 --regid 65534 --clear-groups "$CLI" check --json --strict --cgroup \
		--initcwnd 40 --route 127.0.0.1 >"$TMP/nopriv_cg.json" 2>"$TMP/nopriv_cg.err"
	rc=$?
	got=$($PY -c 'import json,sys
d = json.load(open(sys.argv[1]))
o = [x for x in d["options"] if x["option"] == "initcwnd"][0]
print(o["in_full"], o["verdict"], d["routes"][0].get("cgroup_initcwnd_wins"))' "$TMP/nopriv_cg.json" 2>&1)
	check check_cgroup_strict_unusable "status $rc (want 1); initcwnd in_full, verdict, route's \
cgroup_initcwnd_wins: $got" "$rc" = 1 -a "$got" = "False failed False"
else
	skip check_cgroup_mode_unprivileged "no setpriv"
fi
