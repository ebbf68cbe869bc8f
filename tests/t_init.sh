#!/bin/sh
# The library's init, reached from another library's constructor before its own:
# - a signal whose handler calls a hooked function (close(-1)) lands while init runs: the
#   re-entered hook passes straight through (it must not wait for the init it interrupted);
#   500 starts, the timer's delay varied so the signal lands at every stage of init: no hang;
# - a fork() while another thread runs init (slow on purpose: inherited listeners to adopt,
#   stderr a full pipe): the child's hooks never wait for an init whose thread is not there
#   (strace counts the sched_yield of such waits: none in the child);
# - close_range() called before init: the result, errno and effect of libc's.
. "$(dirname "$0")/lib.sh"
CC=${CC:-cc}
$CC -shared -fPIC -o "$TMP/libearly.so" "$ROOT/tests/c/early_lib.c" &&
	$CC -o "$TMP/early" "$ROOT/tests/c/early_main.c" -L"$TMP" -learly -Wl,-rpath,"$TMP" ||
	{ fail init.build "could not build the test program"; exit 0; }

runs=${ST_INIT_RUNS:-500}
hung=0 fired=0 bad=""
i=0
while [ $i -lt "$runs" ]; do
	us=$((5 + (i * 7) % 120))
	out=$(EARLY_MODE=signal EARLY_US=$us SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=64 LD_PRELOAD=$LIB \
		timeout 5 "$TMP/early" 2>&1)
	rc=$?
	if [ $rc = 124 ]; then
		hung=$((hung + 1))
	elif [ $rc != 0 ]; then
		bad="run $i (delay $us us): status $rc: $out"
	fi
	case "$out" in fired=1*) fired=$((fired + 1)) ;; esac
	i=$((i + 1))
done
check init.signal_reentry_no_hang "$hung of $runs starts hung with a signal handler calling close() during init" "$hung" -eq 0
check init.signal_reentry_exits_cleanly "$bad" -z "$bad"
# (the handler must have run in nearly every start, or the test shows nothing)
check init.signal_reentry_fired "the handler ran in $fired of $runs starts" "$fired" -ge $((runs * 9 / 10))

plain=$(EARLY_MODE=close_range "$TMP/early")
pre=$(EARLY_MODE=close_range SOCKTUNE_NODELAY=1 LD_PRELOAD=$LIB "$TMP/early")
check init.close_range_before_init "without the library: $plain; with it: $pre" \
	"$pre" = "$plain" -a -n "$(echo "$plain" | grep 'close_range=0 errno=0 still_open=0')"

# fork during init: python makes 5 inherited listeners and a full pipe as stderr, then execs
if command -v strace >/dev/null 2>&1 && [ -z "${ST_SANITIZER:-}" ]; then
	cat >"$TMP/slowinit.py" <<'EOS'
import os, socket, sys
ls = []
for i in range(5):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8); s.set_inheritable(True); ls.append(s)
r, w = os.pipe()
os.set_blocking(w, False)
try:
    while True: os.write(w, b"x" * 4096)
except BlockingIOError:
    pass
os.set_blocking(w, True)
os.dup2(w, 2)
os.execvp(sys.argv[1], sys.argv[1:])
EOS
	worst=0
	for us in 300 1000 3000; do
		EARLY_MODE=fork EARLY_US=$us SOCKTUNE_NODELAY=1 LD_PRELOAD=$LIB timeout 60 \
			strace -f -qq -e trace=sched_yield -o "$TMP/fork.$us" $PY "$TMP/slowinit.py" "$TMP/early" >/dev/null 2>&1
		n=$(grep -c sched_yield "$TMP/fork.$us")
		[ "$n" -gt "$worst" ] && worst=$n
	done
	check init.fork_during_init_no_wait "$worst sched_yield calls in the worst start (a child waiting for an init that never ends spins 100,000 per hook)" "$worst" -lt 1000
else
	skip init.fork_during_init_no_wait "needs strace (and no sanitizer runtime)"
fi
