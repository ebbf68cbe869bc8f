#!/bin/sh
# Workers exec'd in a way that loses the library run untuned; the master says so, once per
# program: an environment without LD_PRELOAD (postfix, systemd-socket-activate, env -i) or
# without the SOCKTUNE_ variables, an exec the loader runs in secure mode (a setuid file; a
# master whose uid != euid, as squid's).  An exec that keeps the library says nothing, and
# every exec call returns what it returns without the library.  The worker is secprobe,
# which reports whether it was tuned (nodelay=1) and in secure mode.
. "$(dirname "$0")/lib.sh"

TUNE="LD_PRELOAD=$LIB SOCKTUNE_NODELAY=1 SOCKTUNE_LOG=warn"
VARIANTS="execve execveat fexecve execv execvp execvpe execl execlp execle vfork"
chmod 755 "$TMP"
mkdir -m 755 "$TMP/progs"
for v in $VARIANTS worker; do cp "$B/tests/bin/secprobe" "$TMP/progs/$v"; done

# probe NAME MODE VARIANT PROG [COUNT] [VAR=value...]: execprobe under the library;
# output in $TMP/NAME.out, its warnings in $TMP/NAME.err
probe() {
	_n=$1 _m=$2 _v=$3 _p=$4 _c=$5
	shift 5
	# shellcheck disable=SC2086
	env $TUNE "$@" "$BIN/execprobe" run "$_m" "$_v" "$_p" "$_c" >"$TMP/$_n.out" 2>"$TMP/$_n.err"
}
warnings() { grep -c 'event=exec-untuned' "$TMP/$1.err"; }
untuned() { grep -c '^SECURE .*nodelay=0' "$TMP/$1.out"; }
tuned() { grep -c '^SECURE .*nodelay=1' "$TMP/$1.out"; }
line() { grep -m 1 'event=exec-untuned' "$TMP/$1.err"; }

# (a) a worker exec'd with an environment without LD_PRELOAD
probe strip strip execve "$TMP/progs/worker" 1
l=$(line strip)
check env_stripped_warned "$(warnings strip) warnings, worker untuned $(untuned strip): $(cat "$TMP/strip.err")" \
	"$(warnings strip)" -eq 1 -a "$(untuned strip)" -eq 1 -a \
	"$(field "$l" reason)" = env-stripped -a "$(field "$l" program)" = "$TMP/progs/worker"
check env_stripped_line_says_what_holds "$l" \
	-n "$(echo "$l" | grep ' inherited_listeners=0 kept="nothing: it inherits no listener" lost="per-connection work')"
# a worker that inherits the listener (fd without close-on-exec) keeps its options
probe inherit strip execve "$TMP/progs/worker" 1 EXECPROBE_INHERIT=1
l=$(line inherit)
check env_stripped_inherited_listener "$l" \
	-n "$(echo "$l" | grep ' inherited_listeners=1 kept="listener options on inherited sockets" lost=')"

# (c) the same exec with our environment: tuned, silent
probe keep keep execve "$TMP/progs/worker" 1
check kept_silent "$(warnings keep) warnings, worker tuned $(tuned keep): $(cat "$TMP/keep.err")" \
	"$(warnings keep)" -eq 0 -a "$(tuned keep)" -eq 1

# LD_PRELOAD kept, the SOCKTUNE_ variables stripped (env -u, a real program under the library)
env $TUNE env -u SOCKTUNE_NODELAY "$TMP/progs/worker" >"$TMP/nopol.out" 2>"$TMP/nopol.err"
l=$(line nopol)
check policy_stripped_warned "$(cat "$TMP/nopol.out" "$TMP/nopol.err")" \
	"$(warnings nopol)" -eq 1 -a "$(untuned nopol)" -eq 1 -a "$(field "$l" reason)" = env-stripped -a \
	-n "$(echo "$l" | grep 'detail="no SOCKTUNE_ variable')"

# no tuning policy (only a log level): nothing to lose, nothing said
env LD_PRELOAD="$LIB" SOCKTUNE_LOG=debug "$BIN/execprobe" run strip execve "$TMP/progs/worker" 1 \
	>"$TMP/nopolicy.out" 2>"$TMP/nopolicy.err"
check no_policy_silent "$(cat "$TMP/nopolicy.err")" "$(warnings nopolicy)" -eq 0

# (d) a prefork master: 5 workers of one program, each fork()ed (or vfork()ed) and exec'd
probe five strip execve "$TMP/progs/worker" 5
check once_per_program_fork "$(warnings five) warnings for 5 execs: $(cat "$TMP/five.err")" \
	"$(warnings five)" -eq 1 -a "$(untuned five)" -eq 5
probe fivev strip vfork "$TMP/progs/worker" 5
check once_per_program_vfork "$(warnings fivev) warnings for 5 execs: $(cat "$TMP/fivev.err")" \
	"$(warnings fivev)" -eq 1 -a "$(untuned fivev)" -eq 5

# every exec variant reaches the check (stripped: one line naming the call), and none
# speaks when the environment is kept
bad="" loud=""
for v in $VARIANTS; do
	probe "s-$v" strip "$v" "$TMP/progs/$v" 2
	l=$(line "s-$v")
	want=$v
	[ "$v" = vfork ] && want=execve
	[ "$(warnings "s-$v")" -eq 1 ] && [ "$(field "$l" call)" = "$want" ] &&
		[ "$(field "$l" program)" = "$TMP/progs/$v" ] && [ "$(untuned "s-$v")" -eq 2 ] ||
		bad="$bad $v($(warnings "s-$v"): $l $(grep -v exec-untuned "$TMP/s-$v.err"))"
	probe "k-$v" keep "$v" "$TMP/progs/$v" 1
	[ "$(warnings "k-$v")" -eq 0 ] && [ "$(tuned "k-$v")" -eq 1 ] ||
		loud="$loud $v($(cat "$TMP/k-$v.err" "$TMP/k-$v.out"))"
done
check every_variant_checked "wrong:$bad" -z "$bad"
check every_variant_silent_when_kept "wrong:$loud" -z "$loud"

# a vfork() child's line goes to the parent's log file (which it holds until exec), and the
# parent's log is still its own afterwards: its second listen line lands in the same file
env LD_PRELOAD="$LIB" SOCKTUNE_NODELAY=1 SOCKTUNE_LOG_FILE="$TMP/vf.%p.log" \
	"$BIN/execprobe" run strip vfork "$TMP/progs/worker" 2 >"$TMP/vf.out" 2>"$TMP/vf.err"
pid=$(field "$(grep '^RUN' "$TMP/vf.out")" pid)
files=$(ls "$TMP" | grep -c '^vf\..*\.log$')
f=$TMP/vf.$pid.log
check vfork_line_in_parent_log "files: $(ls "$TMP" | grep '^vf\.') $(cat "$f" 2>/dev/null) $(cat "$TMP/vf.err")" \
	"$files" -eq 1 -a "$(grep -c 'event=exec-untuned' "$f" 2>/dev/null)" = 1 -a \
	"$(grep -c 'event=listen' "$f" 2>/dev/null)" = 2

# a failing exec: result and errno exactly as without the library (ENOENT, EBADF, EFAULT
# for unreadable arguments, which the check reads without crashing)
"$BIN/execprobe" fail >"$TMP/fail.plain" 2>&1
env $TUNE "$BIN/execprobe" fail >"$TMP/fail.lib" 2>"$TMP/fail.err"
check failing_exec_unchanged "$(diff "$TMP/fail.plain" "$TMP/fail.lib" | tr '\n' ' ')" \
	-n "$(grep -c errno=2 "$TMP/fail.plain" | grep -v '^0$')" -a -z "$(diff "$TMP/fail.plain" "$TMP/fail.lib")"
check failing_exec_silent "$(cat "$TMP/fail.err")" "$(grep -c 'event=exec-untuned' "$TMP/fail.err")" -eq 0

# (b) secure execs: root runs a setuid-nobody copy; a master that dropped its euid
if [ "$(id -u)" != 0 ]; then
	skip secure_exec "needs root (a setuid copy owned by another user)"
	exit 0
fi
if [ -n "${ST_SANITIZER_PRELOAD:-}" ]; then
	skip secure_exec "a sanitizer runtime cannot be preloaded in secure-execution mode"
	exit 0
fi
cp "$B/tests/bin/secprobe" "$TMP/progs/suid"
chown nobody "$TMP/progs/suid" && chmod 4755 "$TMP/progs/suid"
probe suid keep execve "$TMP/progs/suid" 3
l=$(line suid)
check secure_exec_setuid_warned "$(warnings suid) warnings: $(cat "$TMP/suid.out" "$TMP/suid.err")" \
	"$(warnings suid)" -eq 1 -a "$(field "$l" reason)" = secure-exec -a \
	"$(grep -c '^SECURE secure=1 .*nodelay=0' "$TMP/suid.out")" -eq 3 -a \
	-n "$(echo "$l" | grep 'detail="setuid file: effective uid')"
probe euid keep execve "$TMP/progs/worker" 2 EXECPROBE_EUID="$(id -u nobody)"
l=$(line euid)
check secure_exec_euid_warned "$(warnings euid) warnings: $(cat "$TMP/euid.out" "$TMP/euid.err")" \
	"$(warnings euid)" -eq 1 -a "$(field "$l" reason)" = secure-exec -a \
	"$(grep -c '^SECURE secure=1 .*nodelay=0' "$TMP/euid.out")" -eq 2 -a \
	-n "$(echo "$l" | grep 'detail="the process runs with uid 0, euid')"
# a setuid file owned by root, run by root: not secure, tuned, silent
cp "$B/tests/bin/secprobe" "$TMP/progs/suidroot"
chmod 4755 "$TMP/progs/suidroot"
probe suidroot keep execve "$TMP/progs/suidroot" 1
check setuid_same_user_silent "$(cat "$TMP/suidroot.out" "$TMP/suidroot.err")" \
	"$(warnings suidroot)" -eq 0 -a "$(tuned suidroot)" -eq 1
