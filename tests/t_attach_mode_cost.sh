#!/bin/sh
# The wrapper's attach mode (socktune --attach -- PROGRAM) with a program holding 9,000 idle
# connections: a pass every 20 ms of an absolute clock costs a look at its listeners, not a
# walk of its descriptors (it took 72% of a core, the passes 20 ms + the walk apart).
# Asserted on the kernel's counters: the wrapper's CPU time over 3 s, and its voluntary
# context switches (one sleep a pass).
# alone: a cost and a clock measured over 3 s (the wrapper's CPU share, its passes on time)
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'import os; os.pidfd_open(os.getpid())' 2>/dev/null; then
	skip attach_mode_cost "no pidfd_open here (Linux 5.6 or later)"
	exit 0
fi

# in a network namespace of the test's own when it can make one (listeners other programs
# open here would each be looked at once)
cat >"$TMP/idle.py" <<'EOF'
import socket, sys, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(4096)
cs, ss = [], []
for _ in range(int(sys.argv[1])):
    cs.append(socket.create_connection(l.getsockname()))
    ss.append(l.accept()[0])
print("PORT", l.getsockname()[1], flush=True)
time.sleep(float(sys.argv[2]))
EOF
NSX=""
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && setup_ns IDLE 2>/dev/null; then
	NSX="ip netns exec $IDLE"
fi
(
	ulimit -n 20000 2>/dev/null || exit 0
	# shellcheck disable=SC2086 # the namespace words are split on purpose
	exec $NSX "$CLI" --attach --nodelay -- $PY "$TMP/idle.py" 4500 6
) >"$TMP/idle.out" 2>"$TMP/idle.err" &
sub=$!
if busywait 20000 file_has "$TMP/idle.out" '^PORT'; then
	wrapper=$sub # (ip netns exec execs the command: the same pid)
	$PY - "$wrapper" >"$TMP/idle.cost" <<'EOF'
import os, sys, time
w = sys.argv[1]
def now():
    f = open("/proc/%s/stat" % w).read().rsplit(")", 1)[1].split()
    v = [l for l in open("/proc/%s/status" % w) if l.startswith("voluntary_ctxt_switches")][0]
    return time.monotonic(), int(f[11]) + int(f[12]), int(v.split()[1])
t0, c0, v0 = now(); time.sleep(3); t1, c1, v1 = now()
cpu = (c1 - c0) / os.sysconf("SC_CLK_TCK") / (t1 - t0)
print("cpu=%.3f passes=%d expected=%d" % (cpu, v1 - v0, round((t1 - t0) / 0.020)))
EOF
	cat "$TMP/idle.cost" | sed 's/^/# 9000 idle connections: /'
	l=$(cat "$TMP/idle.cost")
	check mode_idle_connections_cpu "$l (want cpu under 0.10 of a core); $(head -c 300 "$TMP/idle.err")" \
		-n "$(printf '%s' "$l" | awk -F'[= ]' '$2 < 0.10 { print }')"
	check mode_pass_clock "$l (want passes within 10% of expected)" \
		-n "$(printf '%s' "$l" | awk -F'[= ]' '$4 >= 0.9 * $6 && $4 <= 1.1 * $6 + 5 { print }')"
else
	fail mode_idle_connections_cpu "the program did not start: $(head -c 300 "$TMP/idle.err")"
fi
kill $sub 2>/dev/null # (measured: the program's 6 s are not waited out)
wait $sub
[ -n "$NSX" ] && cleanup_ns "$IDLE"

