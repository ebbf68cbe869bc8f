#!/bin/sh
# socktune attach's output is the library's: a line reads as a library log line (the same
# prefix, the same option keys for the same policy), and --json is one document of typed
# values (no logfmt inside), a missing target one error document with status 3.
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip attach_records "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi

# opt_keys LINE: the keys of a log line that say what became of an option, sorted, a line
# each (left out: the line's own pid level event fd addr, the library's ephemeral=, attach's
# via=, and the backlog's first stage: backlog.app in the library, backlog.before in attach)
opt_keys() {
	printf '%s\n' "$1" | tr ' ' '\n' | sed -n 's/^\([a-z_.]*\)=.*/\1/p' |
		grep -v '^\(pid\|level\|event\|fd\|addr\|port\|peer\|via\|backlog\.app\|backlog\.before\|ephemeral\)$' |
		sort | tr '\n' ' '
}

# the library's listen line for the policy
env SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=256K SOCKTUNE_BACKLOG=4096 SOCKTUNE_LOG=info \
	LD_PRELOAD="$LIB" $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(5)' \
	2>"$TMP/lib.err"
libline=$(log_line lib listen)

# a plain server with two listeners, nothing preloaded
start_server two -- $PY -c 'import socket, time
ls = []
for _ in range(2):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(5); ls.append(s)
print("PORT", ls[0].getsockname()[1], ls[1].getsockname()[1], flush=True)
time.sleep(30)' || { fail attach_records_server "did not start: $(cat "$TMP/two.err")"; exit 0; }
srv=$SRV_PID

"$CLI" attach --nodelay --rcvbuf 256K --backlog 4096 "$srv" >"$TMP/text.out" 2>"$TMP/text.err"
rc=$?
line=$(grep "^socktune pid=$srv level=info event=attach fd=[0-9]* addr=127.0.0.1:$SRV_PORT " "$TMP/text.out")
check attach_records_line_prefix "status $rc; want 'socktune pid=$srv level=info event=attach fd=N addr=127.0.0.1:$SRV_PORT ...': $(cat "$TMP/text.out" "$TMP/text.err")" \
	"$rc" = 0 -a -n "$line" -a "$(count_lines "$TMP/text.out" "^socktune pid=$srv level=info event=attach ")" = 2
check attach_records_line_keys "attach: '$(opt_keys "$line")', library: '$(opt_keys "$libline")' ($libline)" \
	-n "$libline" -a "$(opt_keys "$line")" = "$(opt_keys "$libline")" -a \
	"$(opt_keys "$line")" = "backlog.effective backlog.want nodelay rcvbuf.effective rcvbuf.want "
check attach_records_line_values "line: $line" "$(field "$line" backlog.before)" = 5 -a \
	"$(field "$line" backlog.effective)" = 4096 -a "$(field "$line" nodelay)" = 1

# --json on the two listeners: one document, the values typed, no logfmt string inside
"$CLI" attach --json --nodelay --rcvbuf 128K --backlog-min 4096 "$srv" >"$TMP/two.json" 2>"$TMP/two.jerr"
rc=$?
said=$($PY -c 'import json, re, sys
d = json.load(open(sys.argv[1]))
bad = []
def walk(v, path):
    if isinstance(v, dict):
        for k, x in v.items(): walk(x, path + "." + k)
    elif isinstance(v, list):
        for i, x in enumerate(v): walk(x, path + "." + str(i))
    elif isinstance(v, str) and re.search(r"=\S*\s+[a-z_.]+=", v):
        bad.append(path)
walk(d, "")
s = d["sockets"]
ok = (d["schema"] == 1 and d["command"] == "attach" and d["tuned"] == 2 and d["refused"] == 0
      and d["status"] == 0 and d["warnings"] == [] and len(s) == 2
      and all(x["event"] == "attach" and x["pid"] == int(sys.argv[2]) and type(x["fd"]) is int
              and x["nodelay"] is True and x["rcvbuf"]["want"] == 131072
              and type(x["rcvbuf"]["effective"]) is int
              and x["backlog"] == {"before": 4096, "want": 4096, "effective": 4096}
              for x in s)
      and not bad)
print("ok" if ok else "bad %s" % bad)' "$TMP/two.json" "$srv" 2>&1)
check attach_records_json "status $rc, $said: $(cat "$TMP/two.json" "$TMP/two.jerr")" \
	"$rc" = 0 -a "$said" = ok
kill "$srv" 2>/dev/null
wait "$srv" 2>/dev/null

# a missing pid: an error document, status 3 in it and as the exit status
"$CLI" attach --json --nodelay "$srv" >"$TMP/gone.json" 2>"$TMP/gone.err"
rc=$?
said=$($PY -c 'import json, sys
d = json.load(open(sys.argv[1]))
print("ok" if d["status"] == 3 and d["error"] and d["command"] == "attach" else "bad")' \
	"$TMP/gone.json" 2>&1)
check attach_records_json_missing "status $rc, $said: $(cat "$TMP/gone.json" "$TMP/gone.err")" \
	"$rc" = 3 -a "$said" = ok -a -s "$TMP/gone.err"
