#!/bin/sh
# The examples together fire each alert once: every socktune watch they deploy (the systemd
# unit's ExecStart=, the Kubernetes DaemonSet's command, and the commands their READMEs give
# to run) reaches Prometheus by one path, --listen (scraped by examples/prometheus's
# socktune-watch job) or --textfile (node_exporter's job), never both: both would put each
# series in twice, job="socktune-watch" and job="node", and socktune-rules.yml's alerts,
# which name no job, would fire twice.  Each Prometheus example has one job for the watch.
# Read as text (promtool checks the syntax in t_watch_prometheus).
. "$(dirname "$0")/lib.sh"

cd "$ROOT" || exit 1
"$PY" - >"$TMP/paths.out" 2>&1 <<'EOF'
import glob, re, shlex

def commands():
    """(where, args) of each socktune watch an example runs"""
    for f in sorted(glob.glob("examples/*/*.service")):
        for line in open(f):
            if re.match(r"ExecStart(Pre)?=", line) and " watch" in line:
                yield f, shlex.split(line.split("=", 1)[1])
    for f in sorted(glob.glob("examples/*/*.yaml") + glob.glob("examples/*/*.yml")):
        for line in open(f):
            m = re.search(r"(command|args):\s*\[(.*)\]", line)
            if m and '"watch"' in m.group(2):
                yield f, [a.strip().strip('"') for a in m.group(2).split(",")]
    for f in sorted(glob.glob("examples/*/README.md")):
        for line in open(f):
            if re.match(r"\s*(sudo\s+)?socktune\s+watch\b", line):
                yield f, shlex.split(line)

def jobs(f):
    return re.findall(r"^\s*-\s*job_name:\s*(\S+)", open(f).read(), re.M)

n = 0
for where, args in commands():
    n += 1
    paths = [a for a in args if a in ("--listen", "--textfile")]
    print("watch" if len(paths) == 1 else "TWICE", where, " ".join(args))
print("commands", n)
for f in sorted(glob.glob("examples/prometheus/prometheus*.yml")):
    j = [x for x in jobs(f) if "socktune" in x]
    print("jobs", f, len(j))
EOF
cat "$TMP/paths.out" | sed 's/^/# /'
n=$(sed -n 's/^commands //p' "$TMP/paths.out")
check watch_alerts_once.found "no socktune watch found in the examples: $(cat "$TMP/paths.out")" "${n:-0}" -ge 2
twice=$(grep -c "^TWICE" "$TMP/paths.out")
check watch_alerts_once.one_path "watches reaching Prometheus by both --listen and --textfile (each alert twice): $(grep '^TWICE' "$TMP/paths.out")" \
	"$twice" -eq 0
bad=$(awk '$1 == "jobs" && $3 != 1' "$TMP/paths.out")
check watch_alerts_once.one_job "a Prometheus example without exactly one watch job: $bad" -z "$bad"
# the rules select no job: one series per listener is what makes one alert
check watch_alerts_once.rules_no_job "a rule selects by job on a socktune_ series: $(grep -n 'socktune_[a-z_]*{[^}]*job' examples/prometheus/socktune-rules.yml)" \
	-z "$(grep -n 'socktune_[a-z_]*{[^}]*job' examples/prometheus/socktune-rules.yml)"
