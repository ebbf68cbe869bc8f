#!/bin/sh
# doctor on a server in a cgroup of the test's own with two sock_ops programs attached, ours
# (attach --cgroup) and another party's (bpfq): both listed by id and name, ours with the
# policy decoded from the instructions the kernel holds, equal to what was attached; without
# CAP_SYS_ADMIN (a bounding set without it, as root) no program's owner or policy is claimed.
. "$(dirname "$0")/lib.sh"

BPFQ=$BIN/bpfq
cg_test_dir doctor_cgroup

other=$("$BPFQ" attach "$CG" 2>"$TMP/other.err")
start_server -t 10 srv -- sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -4 -m hold -n 4 -t 60' \
	sh "$CG" "$BIN/tserver" || { fail doctor_cgroup "tserver did not start: $(cat "$TMP/srv.err")"; exit 0; }
"$CLI" attach --cgroup --initcwnd 40 --nodelay --delack-max 5ms --initrwnd 20 --syn-rto 2s \
	--congestion reno "$SRV_PID" >"$TMP/att.out" 2>"$TMP/att.err"
rc=$?
ours=$(sed -n 's/.*event=cgroup_attach .*prog_id=\([0-9]*\).*/\1/p' "$TMP/att.out")
check doctor_cgroup.setup "bpfq: '$other' $(cat "$TMP/other.err"); attach status $rc, ours '$ours': $(head -c 300 "$TMP/att.err")" \
	-n "$other" -a "$rc" = 0 -a -n "$ours"

"$CLI" doctor --seconds 1 --json "$SRV_PID" >"$TMP/doc.json" 2>"$TMP/doc.err"
rc=$?
res=$($PY - "$TMP/doc.json" "$CG" "$other" "$ours" <<'PYEOF'
import json, sys
doc, cg, other, ours = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
mine = [c for c in doc["sockops_cgroups"] if c["cgroup"] == cg]
if len(mine) != 1:
    print("cgroup %s listed %d times: %s" % (cg, len(mine), doc["sockops_cgroups"])); sys.exit()
progs = {p["prog_id"]: p for p in mine[0]["programs"]}
o, s = progs.get(other), progs.get(ours)
if len(progs) != 2 or not o or not s:
    print("want programs %d and %d: %s" % (other, ours, mine[0]["programs"])); sys.exit()
if o["prog_name"] != "other" or o["socktune_prog"] is not False or "policy" in o:
    print("the other party's: %s" % o); sys.exit()
want = {"initcwnd": 40, "nodelay": True, "delack_max_us": {"want": 5000}, "initrwnd": 20,
        "syn_rto_us": {"want": 2000000}, "congestion": "reno"}
if s["prog_name"] != "socktune" or s["socktune_prog"] is not True or s["policy"] != want:
    print("ours: %s (want policy %s)" % (s, want)); sys.exit()
print("ok")
PYEOF
)
check doctor_cgroup.lists_both "status $rc: $res $(head -c 300 "$TMP/doc.err")" "$rc" = 0 -a "$res" = ok

"$CLI" doctor --seconds 1 "$SRV_PID" >"$TMP/doc.txt" 2>&1
check doctor_cgroup.text "$(sed -n '/sock_ops programs/,/^$/p' "$TMP/doc.txt")" \
	-n "$(grep -F "$CG (pid $SRV_PID): 2 programs" "$TMP/doc.txt")" -a \
	-n "$(grep -E "^    id $other other\$" "$TMP/doc.txt")" -a \
	-n "$(grep -E "^    id $ours socktune \(socktune's, by socktune attach --cgroup [0-9]+, [0-9]+ instructions\): sets .*initcwnd=40" "$TMP/doc.txt")"

if command -v setpriv >/dev/null; then
	setpriv --bounding-set=-bpf,-sys_admin,-perfmon "$CLI" doctor --seconds 1 --json "$SRV_PID" \
		>"$TMP/nopriv.json" 2>"$TMP/nopriv.err"
	res=$($PY - "$TMP/nopriv.json" "$CG" <<'PYEOF'
import json, sys
doc, cg = json.load(open(sys.argv[1])), sys.argv[2]
mine = [c for c in doc["sockops_cgroups"] if c["cgroup"] == cg]
bad = [p for c in mine for p in c["programs"]
       if p.get("policy") or p.get("socktune_prog") is not None or not p.get("error")]
print("ok" if mine and not bad else "claimed without the privilege: %s" % mine)
PYEOF
)
	check doctor_cgroup.unprivileged_claims_nothing "$res $(head -c 300 "$TMP/nopriv.err")" "$res" = ok
else
	skip doctor_cgroup.unprivileged_claims_nothing "no setpriv"
fi
