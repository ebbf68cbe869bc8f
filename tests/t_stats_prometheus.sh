#!/bin/sh
# socktune stats --format prometheus: the text a real Prometheus parser reads
# (python3-prometheus-client), every family with HELP and TYPE, counters named _total, the
# values those of `stats --json` for the same files (an IPv4 and an IPv6 server); --output
# replaces the file whole by rename (a reader of the old file keeps it; no temporary file
# left), refuses a symlink or a FIFO, says ENOSPC on a full disk and leaves the old file;
# --watch rewrites it with the counters of the moment, --count times.
. "$(dirname "$0")/lib.sh"
N=5

if ! $PY -c 'import prometheus_client' 2>/dev/null; then
	skip stats-prometheus "$PY has no prometheus_client (apt-get install python3-prometheus-client)"
	exit 0
fi

# ---- two servers' files: IPv4 (N held connections, backlog 64, rcvbuf), IPv6 (2) ----
rm -f "$TMP/go"
if ! start_server v4 SOCKTUNE_STATS="$TMP/v4.%p" SOCKTUNE_BACKLOG=64 SOCKTUNE_RCVBUF=64K \
	LD_PRELOAD="$LIB" -- $PY "$ROOT/tests/py/holdserver.py" "$TMP/go" $N exit; then
	fail stats-prometheus.servers "holdserver did not start: $(cat "$TMP/v4.err")"
	exit 0
fi
V4=$TMP/v4.$SRV_PID p4=$SRV_PORT
$PY -c '
import socket, sys, time
cs = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5) for _ in range(int(sys.argv[2]))]
time.sleep(0.3)
open(sys.argv[3], "w").close()
time.sleep(0.5)' "$p4" $N "$TMP/go"
wait "$SRV_PID"
export SOCKTUNE_STATS="$TMP/v6.%p"
opt_serve v6 6 2
unset SOCKTUNE_STATS
V6=$TMP/v6.$SRV_PID
if [ ! -f "$V4" ] || [ ! -f "$V6" ]; then
	fail stats-prometheus.files "no stats files: $(ls "$TMP") $(cat "$TMP/v4.err" "$TMP/v6.err")"
	exit 0
fi

"$CLI" stats --json "$V4" >"$TMP/v4.json" && "$CLI" stats --json "$V6" >"$TMP/v6.json"
"$CLI" stats --format prometheus "$V4" "$V6" >"$TMP/prom.txt" 2>"$TMP/prom.err"
rc=$?
check stats-prometheus.status "status $rc: $(cat "$TMP/prom.err")" $rc -eq 0

# Parsed by the client library; the layout (each family's HELP and TYPE once, before its
# samples; counters _total) checked on the text itself, which the parser does not enforce.
$PY - "$TMP/prom.txt" "$TMP/v4.json" "$TMP/v6.json" >"$TMP/checker.out" 2>&1 <<'EOF'
import json, sys
from prometheus_client.parser import text_string_to_metric_families

text = open(sys.argv[1]).read()
docs = [json.load(open(p))["files"][0] for p in sys.argv[2:]]
def check(name, ok, why):
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, why)))

try:
    fams = list(text_string_to_metric_families(text))
    check("stats-prometheus.parses", len(fams) >= 15, "%d families" % len(fams))
except Exception as e:
    check("stats-prometheus.parses", False, repr(e))
    sys.exit(0)

helps, types, bad = {}, {}, []
for line in text.splitlines():
    if line.startswith("# HELP "):
        n = line.split()[2]
        helps[n] = helps.get(n, 0) + 1
    elif line.startswith("# TYPE "):
        _, _, n, t = line.split()
        types[n] = types.get(n, 0) + 1
        if t == "counter" and not n.endswith("_total"):
            bad.append("counter %s" % n)
    elif line and not line.startswith("#"):
        n = line.split("{")[0].split()[0]
        if n not in types or n not in helps:
            bad.append("sample before HELP/TYPE: %s" % n)
once = [n for n in set(helps) | set(types) if helps.get(n) != 1 or types.get(n) != 1]
check("stats-prometheus.help-type-once", not once and not bad, "%s %s" % (once, bad[:3]))
counters = sorted(f.name for f in fams if f.type == "counter")
check("stats-prometheus.counters", len(counters) >= 8, "counters: %s" % counters)

samples = {}
for f in fams:
    for s in f.samples:
        samples[(s.name, tuple(sorted(s.labels.items())))] = s.value

def get(name, **labels):
    return samples.get((name, tuple(sorted((k, str(v)) for k, v in labels.items()))))

mism = []
def same(what, got, want):
    if got is None or float(got) != float(want):
        mism.append("%s: %s, json %s" % (what, got, want))

for d in docs:
    pid, proc = d["pid"], d["process"]
    who = dict(pid=pid, netns=d["netns"])
    for key in ("quickack_rearms", "setsockopt_failures", "app_overrides_refused",
                "retired_listeners", "retired_accepted"):
        same("%s %s" % (pid, key), get("socktune_%s_total" % key, **who), proc[key])
    same("%s running" % pid, get("socktune_process_running", **who), int(d["running"]))
    same("%s live" % pid, get("socktune_values_live", **who), int(d["source"] == "live"))
    same("%s started" % pid, get("socktune_process_start_time_seconds", **who), d["started_s"])
    if d["source"] == "snapshot":
        got = get("socktune_snapshot_time_seconds", **who)
        if got is None or abs(got - d["snapshot_s"]) > 0.001:
            mism.append("%s snapshot_s %s, json %s" % (pid, got, d["snapshot_s"]))
    for l in d["listeners"]:
        host = l["addr"].rsplit(":", 1)[0].strip("[]")
        lab = dict(who, addr=host, port=l["port"], slot=l["slot"])
        same("%s:%s backlog" % (host, l["port"]), get("socktune_listener_backlog", **lab),
             l["backlog"]["effective"])
        for key, name in (("accepted", "accepted_total"),
                          ("queue_peak", "accept_queue_peak"), ("queue_last", "accept_queue"),
                          ("samples", "accept_queue_samples_total"), ("adopted", "adopted"),
                          ("closed", "closed")):
            same("%s:%s %s" % (host, l["port"], key), get("socktune_listener_" + name, **lab), int(l[key]))
        for key, name in (("rcvbuf", "receive_buffer"), ("sndbuf", "send_buffer")):
            got = get("socktune_listener_%s_bytes" % name, **lab)
            if l[key] is None and got is not None:
                mism.append("%s shown though unset" % key)
            elif l[key] is not None:
                same("%s:%s %s" % (host, l["port"], key), got, l[key]["effective"])
check("stats-prometheus.values-match-json", not mism, "; ".join(mism[:6]))

v4 = docs[0]["listeners"][0] if docs[0]["listeners"] else {}
check("stats-prometheus.v4-values", v4.get("accepted") == 5
      and v4.get("backlog") == {"effective": 64}
      and (v4.get("rcvbuf") or {}).get("effective", 0) > 0, "json listener %s" % v4)
addrs = sorted(dict(v)["addr"] for k, v in samples if k == "socktune_listener_backlog")
check("stats-prometheus.address-labels", addrs == ["127.0.0.1", "::1"], "addresses %s" % addrs)
EOF
rc=$?
cat "$TMP/checker.out"
# (a checker that died part way printed only some of its lines)
check stats-prometheus.checker "status $rc: $(tail -n 5 "$TMP/checker.out")" $rc -eq 0

# the same file twice: each series once (a scraper refuses a scrape with a series twice)
"$CLI" stats --format prometheus "$V4" "$V4" >"$TMP/twice.txt" 2>"$TMP/twice.err"
rc=$?
check stats-prometheus.path-twice "status $rc; series seen twice: $(grep -v '^#' "$TMP/twice.txt" | sed 's/ [^ ]*$//' | sort | uniq -d | head -n 3)" \
	$rc -eq 0 -a "$(grep -c '^socktune_stats_file_readable{' "$TMP/twice.txt")" -eq 1 \
	-a -z "$(grep -v '^#' "$TMP/twice.txt" | sed 's/ [^ ]*$//' | sort | uniq -d)"

# ---- --output: the same text, put in by rename ----
mkdir -p "$TMP/out"
printf '# HELP socktune_old\n' >"$TMP/out/socktune.prom"
ln "$TMP/out/socktune.prom" "$TMP/held" # the old file as a reader that has it open sees it
"$CLI" stats --format prometheus --output "$TMP/out/socktune.prom" "$V4" "$V6" 2>"$TMP/out.err"
rc=$?
# (the namespace's TcpExt counters, ListenOverflows and ListenDrops, may move between the two
# reads: a burst's clients retry for seconds after it, and every listener of the namespace
# counts; the rest is the same text)
ns_free() { grep -v -e '^socktune_listen_overflows_total{' -e '^socktune_listen_drops_total{' "$1"; }
ns_free "$TMP/prom.txt" >"$TMP/prom.cmp"
ns_free "$TMP/out/socktune.prom" >"$TMP/out.cmp"
check stats-prometheus.output "status $rc, $(cat "$TMP/out.err"), diff: $(diff "$TMP/prom.cmp" "$TMP/out.cmp" | head -n 3)" \
	$rc -eq 0 -a -n "$(cmp -s "$TMP/prom.cmp" "$TMP/out.cmp" && echo same)" \
	-a "$(grep -c '^socktune_listen_overflows_total{' "$TMP/out/socktune.prom")" = \
	"$(grep -c '^socktune_listen_overflows_total{' "$TMP/prom.txt")"
check stats-prometheus.output-renamed "the old inode holds '$(cat "$TMP/held")'; dir: $(ls -A "$TMP/out")" \
	"$(cat "$TMP/held")" = "# HELP socktune_old" -a "$(ls -A "$TMP/out")" = socktune.prom

# a file that cannot be read: said, shown as unreadable, the rest still written, status 1
"$CLI" stats --format prometheus --output "$TMP/out/socktune.prom" "$V4" "$TMP/nothing" 2>"$TMP/out.err"
rc=$?
check stats-prometheus.unreadable-file "status $rc, $(cat "$TMP/out.err"): $(grep readable "$TMP/out/socktune.prom")" \
	$rc -eq 1 -a -n "$(grep "^socktune_stats_file_readable{file=\"$TMP/nothing\"} 0$" "$TMP/out/socktune.prom")" \
	-a -n "$(grep '^socktune_listener_backlog{.*} 64$' "$TMP/out/socktune.prom")" \
	-a -n "$(grep "$TMP/nothing: No such file" "$TMP/out.err")"

# ---- a symlink and a FIFO at PATH: refused, left as they were ----
printf 'precious\n' >"$TMP/precious"
ln -s "$TMP/precious" "$TMP/out/link.prom"
"$CLI" stats --format prometheus --output "$TMP/out/link.prom" "$V4" 2>"$TMP/link.err"
rc=$?
check stats-prometheus.refuses-symlink "status $rc, $(cat "$TMP/link.err"), target '$(cat "$TMP/precious")'" \
	$rc -eq 1 -a -L "$TMP/out/link.prom" -a "$(cat "$TMP/precious")" = precious -a \
	-n "$(grep 'symbolic link: not replaced' "$TMP/link.err")"
mkfifo "$TMP/out/fifo.prom"
timeout 5 "$CLI" stats --format prometheus --output "$TMP/out/fifo.prom" "$V4" 2>"$TMP/fifo.err"
rc=$?
check stats-prometheus.refuses-fifo "status $rc, $(cat "$TMP/fifo.err")" \
	$rc -eq 1 -a -p "$TMP/out/fifo.prom" -a -n "$(grep 'FIFO: not replaced' "$TMP/fifo.err")"
left=$(ls -A "$TMP/out" | grep -v '^\(socktune\|link\|fifo\)\.prom$')
check stats-prometheus.no-temporary-left "left: $left" -z "$left"

# ---- a full disk: ENOSPC said, the old file kept, nothing left (a private tmpfs) ----
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	mkdir -p "$TMP/full"
	cat >"$TMP/full.sh" <<'EOF'
dir=$1
shift
mount -t tmpfs -o size=8k none "$dir" || exit 77
printf '# HELP socktune_old\n' >"$dir/socktune.prom"
dd if=/dev/zero of="$dir/fill" bs=1k count=64 2>/dev/null
"$@"
rc=$?
ls -A "$dir" | tr '\n' ' ' >"$dir.ls"
cat "$dir/socktune.prom" >"$dir.kept"
exit $rc
EOF
	unshare -m sh "$TMP/full.sh" "$TMP/full" \
		"$CLI" stats --format prometheus --output "$TMP/full/socktune.prom" "$V4" "$V6" 2>"$TMP/full.err"
	rc=$?
	check stats-prometheus.full-disk "status $rc, $(cat "$TMP/full.err"), kept '$(cat "$TMP/full.kept")', dir: $(cat "$TMP/full.ls")" \
		$rc -eq 1 -a -n "$(grep 'No space left on device (ENOSPC)' "$TMP/full.err")" -a \
		"$(cat "$TMP/full.kept")" = "# HELP socktune_old" -a "$(cat "$TMP/full.ls")" = "fill socktune.prom "
else
	skip stats-prometheus.full-disk "needs root and unshare -m"
fi

# ---- --watch: rewritten with the counters of the moment, --count times ----
export SOCKTUNE_STATS="$TMP/w.%p"
# (--count 3: the server outlives the watch, whose rounds drop the series of a process
# that has exited; the third connection ends it)
if start_server w LD_PRELOAD="$LIB" -- $PY "$ROOT/tests/py/optserver.py" --count 3; then
	unset SOCKTUNE_STATS
	W=$TMP/w.$SRV_PID wpid=$SRV_PID
	conn() {
		$PY -c "import socket; s=socket.create_connection(('127.0.0.1',$SRV_PORT),timeout=5); s.send(b'x'); s.recv(1)" 2>/dev/null
	}
	accepted() {
		sed -n 's/^socktune_listener_accepted_total{.*} \([0-9]*\)$/\1/p' "$TMP/w.prom" 2>/dev/null
	}
	conn
	wait_file "$TMP/w.out" rcvbuf
	"$CLI" stats --format prometheus --watch 1 --count 5 --output "$TMP/w.prom" "$W" 2>"$TMP/watch.err" &
	watch=$!
	busywait 5000 test -s "$TMP/w.prom"
	first=$(accepted)
	conn
	# (five rounds a second apart: the last is well after the second connection, however
	# slowly its python3 starts)
	wait_gone $watch 15
	wait $watch
	rc=$?
	check stats-prometheus.watch-rewrites "status $rc, accepted $first then $(accepted); $(cat "$TMP/watch.err")" \
		$rc -eq 0 -a "$first" = 1 -a "$(accepted)" = 2
	conn
	wait $wpid 2>/dev/null
else
	unset SOCKTUNE_STATS
	fail stats-prometheus.watch-rewrites "optserver did not start: $(cat "$TMP/w.err")"
fi

# ---- arguments ----
"$CLI" stats --output "$TMP/x.prom" "$V4" 2>"$TMP/arg.err"
rc=$?
check stats-prometheus.output-needs-format "status $rc: $(cat "$TMP/arg.err")" \
	$rc -eq 2 -a -n "$(grep 'output goes with --format prometheus' "$TMP/arg.err")"
"$CLI" stats --format yaml "$V4" 2>"$TMP/arg.err"
rc=$?
check stats-prometheus.bad-format "status $rc: $(cat "$TMP/arg.err")" \
	$rc -eq 2 -a -n "$(grep 'table, json or prometheus' "$TMP/arg.err")"
