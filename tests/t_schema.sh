#!/bin/sh
# One schema for every output: check, attach (two listeners), doctor and stats
# with --json each print exactly one JSON object, with the schema version and the command;
# every member is a key of `socktune --schema` (a group's members as group.member) with the
# table's type (null allowed), so the same thing has the same name and type in all four; no
# value is a logfmt string; a missing target is {"error": ...} with status 3, and a refused
# command line an error object with status 2.  socktune(1) lists every key of the table.
. "$(dirname "$0")/lib.sh"

"$CLI" --schema >"$TMP/schema" 2>&1
check schema_listed "socktune --schema: $(head -n 3 "$TMP/schema")" \
	"$(grep -c '^[a-z.]' "$TMP/schema")" -ge 40
# one name, one meaning and type: no name twice in the table
twice=$(grep -v '^#' "$TMP/schema" | cut -d' ' -f1 | sort | uniq -d | tr '\n' ' ')
check schema_names_once "named twice: $twice" -z "$twice"

# a server with two listeners, its counters in a stats file
cat >"$TMP/two.py" <<'EOF'
import socket, sys, time
a, b = socket.socket(), socket.socket()
for s in (a, b):
    s.bind(("127.0.0.1", 0)); s.listen(5)
print("PORT", a.getsockname()[1], b.getsockname()[1], flush=True)
c = socket.create_connection(a.getsockname()); d = a.accept()
time.sleep(float(sys.argv[1]))
EOF
if ! start_server two SOCKTUNE_STATS="$TMP/st.%p" SOCKTUNE_BACKLOG=16 LD_PRELOAD="$LIB" -- \
	"$PY" "$TMP/two.py" 20; then
	fail schema_server "the server did not start: $(cat "$TMP/two.err")"
	exit 0
fi
pid=$SRV_PID port=$SRV_PORT
busywait 3000 test -s "$TMP/st.$pid"

"$CLI" check --json --backlog 64 --rcvbuf 256K --nodelay >"$TMP/check.json" 2>"$TMP/check.err"
echo $? >"$TMP/check.rc"
"$CLI" attach --json --backlog 32 --nodelay "$pid" >"$TMP/attach.json" 2>"$TMP/attach.err"
echo $? >"$TMP/attach.rc"
"$CLI" doctor --json --seconds 1 ":$port" >"$TMP/doctor.json" 2>"$TMP/doctor.err"
echo $? >"$TMP/doctor.rc"
"$CLI" stats --json "$TMP/st.$pid" >"$TMP/stats.json" 2>"$TMP/stats.err"
echo $? >"$TMP/stats.rc"
# what is not there: a pid that is no process, a port nothing listens on, no file
gone_pid=$((1 << 22))
while kill -0 "$gone_pid" 2>/dev/null; do gone_pid=$((gone_pid - 1)); done
"$CLI" attach --json --nodelay "$gone_pid" >"$TMP/attach_missing.json" 2>/dev/null
echo $? >"$TMP/attach_missing.rc"
"$CLI" doctor --json --seconds 1 ":$(free_port)" >"$TMP/doctor_missing.json" 2>/dev/null
echo $? >"$TMP/doctor_missing.rc"
"$CLI" stats --json "$TMP/no-such-file" >"$TMP/stats_missing.json" 2>/dev/null
echo $? >"$TMP/stats_missing.rc"
"$CLI" doctor --json --bogus >"$TMP/doctor_refused.json" 2>/dev/null
echo $? >"$TMP/doctor_refused.rc"
"$CLI" check --json --rcvbuf 1Q >"$TMP/check_refused.json" 2>/dev/null
echo $? >"$TMP/check_refused.rc"

$PY - "$TMP" "$ROOT/docs/socktune.1" "$ROOT/tests/py" <<'EOF'
import json, re, sys
tmp, man = sys.argv[1], sys.argv[2]
def check(name, ok, why):
    print("PASS %s" % name if ok else "FAIL %s: %s" % (name, why))

table, version = {}, None
for line in open(tmp + "/schema"):
    if line.startswith("#"):
        m = re.search(r"schema (\d+)", line)
        version = int(m.group(1)) if m else None
        continue
    name, typ = line.split()[:2]
    table.setdefault(name, typ)
sys.path.insert(0, sys.argv[3])
import schema_check

docs = {}
for sub in ("check", "attach", "doctor", "stats"):
    rc = open("%s/%s.rc" % (tmp, sub)).read().strip()
    text = open("%s/%s.json" % (tmp, sub)).read()
    try:
        doc = json.loads(text)
    except ValueError as e:
        check("%s_one_document" % sub, False, "rc %s, %s: %r" % (rc, e, text[:200]))
        continue
    check("%s_one_document" % sub, isinstance(doc, dict) and rc in ("0", "1"),
          "rc %s, %s" % (rc, type(doc).__name__))
    if not isinstance(doc, dict):
        continue
    docs[sub] = doc
    check("%s_schema_version" % sub, doc.get("schema") == version and doc.get("command") == sub,
          "schema %r command %r (the table's version: %r)" % (doc.get("schema"),
                                                             doc.get("command"), version))
    bad = schema_check.problems(table, doc)
    check("%s_keys_in_schema" % sub, not bad, "; ".join(bad[:8]))

a = docs.get("attach", {})
socks = a.get("sockets") if isinstance(a.get("sockets"), list) else []
check("attach_two_listeners", len(socks) == 2 and
      all(isinstance(s.get("backlog"), dict) and s["backlog"].get("effective") == 32 and
          s.get("nodelay") is True for s in socks),
      "sockets: %s" % json.dumps(socks)[:300])

for sub, status in (("attach_missing", 3), ("doctor_missing", 3), ("stats_missing", 3),
                    ("doctor_refused", 2), ("check_refused", 2)):
    rc = open("%s/%s.rc" % (tmp, sub)).read().strip()
    text = open("%s/%s.json" % (tmp, sub)).read()
    try:
        doc = json.loads(text)
    except ValueError as e:
        doc = {"unparsed": text[:200]}
    check("%s_error_object" % sub, rc == str(status) and isinstance(doc, dict) and
          isinstance(doc.get("error"), str) and doc.get("status") == status and
          "findings" not in doc and doc.get("schema") == version,
          "rc %s, %r" % (rc, doc))

# socktune(1) lists every key of the table
text = open(man).read().replace("\\-", "-").replace("\\&", "")
missing = [n for n in table if not re.search(r"(^|[^a-z_.])%s([^a-z_]|$)" % re.escape(n), text)]
check("man_lists_schema", not missing, "not in socktune(1): %s" % missing[:10])
EOF
