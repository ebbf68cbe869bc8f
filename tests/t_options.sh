#!/bin/sh
# Every option read back on the ACCEPTED socket (IPv4 and IPv6), both precedence
# modes against a server that sets its own SO_RCVBUF and clears TCP_NODELAY, dry run, and
# the unprivileged paths of SO_MARK and SOCKTUNE_RCVBUF_FORCE.
. "$(dirname "$0")/lib.sh"

# expect NAME FILE LINE KEY VALUE: PASS when KEY of the JSON line LINE of FILE is VALUE.
expect() {
	got=$(json_get "$2" "$4" "$3")
	if [ "$got" = "$5" ]; then pass "$1"; else fail "$1" "$4 is '$got', want '$5'"; fi
}

rmem_max=$(cat /proc/sys/net/core/rmem_max)
wmem_max=$(cat /proc/sys/net/core/wmem_max)
want_cc=cubic
grep -qw reno /proc/sys/net/ipv4/tcp_available_congestion_control && want_cc=reno

for fam in 4 6; do
	(
		export SOCKTUNE_RCVBUF=256K SOCKTUNE_SNDBUF=128K SOCKTUNE_NODELAY=1 \
			SOCKTUNE_KEEPALIVE=30:10:5 SOCKTUNE_USER_TIMEOUT=30000 SOCKTUNE_CONGESTION=$want_cc \
			SOCKTUNE_NOTSENT_LOWAT=16K SOCKTUNE_DEFER_ACCEPT=5 SOCKTUNE_FASTOPEN=64 \
			SOCKTUNE_REUSEPORT=1 SOCKTUNE_TOS=lowdelay SOCKTUNE_PRIORITY=5 SOCKTUNE_MARK=7
		opt_serve all$fam $fam 2
	)
	f=$TMP/all$fam.out
	for line in 2 3; do
		c="v$fam.conn$((line - 1))"
		expect "options.$c.rcvbuf" "$f" $line rcvbuf 524288
		expect "options.$c.sndbuf" "$f" $line sndbuf 262144
		expect "options.$c.nodelay" "$f" $line nodelay 1
		expect "options.$c.keepalive" "$f" $line keepalive 1
		expect "options.$c.keepidle" "$f" $line keepidle 30
		expect "options.$c.keepintvl" "$f" $line keepintvl 10
		expect "options.$c.keepcnt" "$f" $line keepcnt 5
		expect "options.$c.user_timeout" "$f" $line user_timeout 30000
		expect "options.$c.congestion" "$f" $line congestion $want_cc
		expect "options.$c.notsent_lowat" "$f" $line notsent_lowat 16384
		expect "options.$c.tos" "$f" $line tos 16
		expect "options.$c.priority" "$f" $line priority 5
		expect "options.$c.mark" "$f" $line mark 7
	done
	# Listener-only options, read back on the listener by the server itself.
	expect "options.v$fam.listener.fastopen" "$f" 1 listener.fastopen 64
	expect "options.v$fam.listener.reuseport" "$f" 1 listener.reuseport 1
	da=$(json_get "$f" listener.defer_accept 1)
	check "options.v$fam.listener.defer_accept" "TCP_DEFER_ACCEPT reads $da, want >= 5" "${da:-0}" -ge 5
	line=$(grep 'event=listen ' "$TMP/all$fam.err")
	check "options.v$fam.log" "listen line lacks keys: $line" -n "$(printf '%s' "$line" |
		grep 'keepalive.idle=30' | grep "congestion=$want_cc" | grep 'tos=16' | grep 'mark=7')"
done

# One line per plain integer option (an option added by one row of ST_VARIABLES adds one
# here): NAME SOCKTUNE_X=VALUE LEVEL:OPTNAME EXPECTED, read back on each accepted socket
# (LEVEL:OPTNAME/LEVEL6:OPTNAME6 when IPv6 sockets take another option).  An option this
# kernel lacks (one newer than it: TCP_RTO_MAX_MS, Linux 6.15) is skipped.
while read -r name setting where want; do
	[ -n "$name" ] || continue
	if ! $PY -c 'import socket, sys
l, o = map(int, sys.argv[1].split(":")); socket.socket().getsockopt(l, o)' "${where%/*}" 2>/dev/null; then
		skip "options.one.$name" "this kernel has no option ${where%/*}"
		continue
	fi
	for fam in 4 6; do
		w=${where%/*}
		[ "$fam" = 6 ] && w=${where#*/}
		(
			export "$setting"
			opt_serve "one_$name$fam" "$fam" 1 --read "$name=$w"
		)
		expect "options.one.$name.v$fam" "$TMP/one_$name$fam.out" 2 "$name" "$want"
	done
done <<EOF
user_timeout SOCKTUNE_USER_TIMEOUT=12345 6:18 12345
notsent_lowat SOCKTUNE_NOTSENT_LOWAT=4K 6:25 4096
ttl SOCKTUNE_TTL=33 0:2/41:16 33
window_clamp SOCKTUNE_WINDOW_CLAMP=20000 6:10 20000
pacing_rate SOCKTUNE_PACING_RATE=1M 1:47 1048576
freebind SOCKTUNE_FREEBIND=1 0:15/41:78 1
transparent SOCKTUNE_TRANSPARENT=1 0:19/41:75 1
rto_max SOCKTUNE_RTO_MAX=5s 6:44 5000
EOF

# TCP_MAXSEG: the listener keeps the value (its log line), an accepted socket reports the MSS
# in use: the value less the TCP options (12 bytes of timestamps on loopback)
for fam in 4 6; do
	SOCKTUNE_MAXSEG=1000 opt_serve "maxseg$fam" "$fam" 1 --read mss=6:2
	mss=$(json_get "$TMP/maxseg$fam.out" mss 2)
	check "options.maxseg.v$fam.accepted" "accepted MSS $mss, want 1000 less options (960..1000)" \
		"${mss:-0}" -le 1000 -a "${mss:-0}" -ge 960
	check "options.maxseg.v$fam.listener" "listen line: $(grep 'event=listen ' "$TMP/maxseg$fam.err")" \
		-n "$(grep 'event=listen .* maxseg=1000' "$TMP/maxseg$fam.err")"
	c=$(count_lines "$TMP/maxseg$fam.err" 'event=inherit ')
	check "options.maxseg.v$fam.no-inherit-warning" "$c inherit warnings (the MSS in use is no copy)" "$c" -eq 0
done

# SO_BINDTODEVICE: a name, set before bind(); the accepted socket is bound to the same device
for fam in 4 6; do
	SOCKTUNE_BINDTODEVICE=lo opt_serve "dev$fam" "$fam" 1 --read-str dev=1:25
	expect "options.bindtodevice.v$fam.accepted" "$TMP/dev$fam.out" 2 dev lo
	check "options.bindtodevice.v$fam.listener" "listen line: $(grep 'event=listen ' "$TMP/dev$fam.err")" \
		-n "$(grep 'event=listen .* bindtodevice=lo' "$TMP/dev$fam.err")"
done
SOCKTUNE_BINDTODEVICE=nosuchdev0 opt_serve devmissing 4 1 --read-str dev=1:25
expect options.bindtodevice.missing.unbound "$TMP/devmissing.out" 2 dev ""
check options.bindtodevice.missing.warned "stderr: $(cat "$TMP/devmissing.err")" \
	-n "$(grep 'event=setsockopt option=bindtodevice .*want_name=nosuchdev0 .*No such device.* note=' "$TMP/devmissing.err")"

# SO_PRIORITY is not inherited: set per connection.  Everything else: zero syscalls per
# accepted connection, checked here by counting setsockopt calls with strace.
if command -v strace >/dev/null; then
	(
		export SOCKTUNE_NODELAY=1 SOCKTUNE_KEEPALIVE=1 SOCKTUNE_TOS=lowdelay
		SRV_WRAP="strace -f -qq -e trace=setsockopt -o $TMP/strace.txt" opt_serve st 4 6
	)
	n=$(grep -c 'setsockopt(' "$TMP/strace.txt")
	# SO_REUSEADDR by the app, then NODELAY, KEEPALIVE, TOS on the listener: 4, not 4 + 6k.
	check options.inherited.zero-per-accept "$n setsockopt calls for 6 connections" "$n" -le 4
else
	skip options.inherited.zero-per-accept "strace not installed"
fi

# ---- precedence ----
(
	export SOCKTUNE_RCVBUF=1M SOCKTUNE_NODELAY=1
	opt_serve prec_policy 4 1 --app-rcvbuf 65536 --app-nodelay-off
	SOCKTUNE_PRECEDENCE=app opt_serve prec_app 4 1 --app-rcvbuf 65536 --app-nodelay-off
)
# SO_PRIORITY is not inherited: the policy's value must reach each accepted socket even when
# the app set its own on the listener first
SOCKTUNE_PRIORITY=5 opt_serve prec_prio 4 2 --app-priority 1
expect precedence.policy.priority-per-connection "$TMP/prec_prio.out" 3 priority 5
expect precedence.policy.rcvbuf "$TMP/prec_policy.out" 2 rcvbuf 2097152
expect precedence.policy.nodelay "$TMP/prec_policy.out" 2 nodelay 1
n=$(grep -c 'event=app-override' "$TMP/prec_policy.err")
# once per socket kind and option: rcvbuf and nodelay, on the socket before listen and on
# the accepted one
check precedence.policy.logged "$n app-override lines, want 4" "$n" -eq 4
check precedence.policy.log-values "no 'app_value=65536 want=1048576'" -n "$(grep 'option=rcvbuf app_value=65536 want=1048576' "$TMP/prec_policy.err")"
# each names the socket it was seen on
n=$(grep 'event=app-override' "$TMP/prec_policy.err" | grep -c ' fd=[0-9][0-9]* addr=127\.0\.0\.1:[0-9][0-9]* ')
check precedence.policy.log-names-socket "$n of 4 app-override lines with fd= and addr=" "$n" -eq 4
expect precedence.app.rcvbuf "$TMP/prec_app.out" 2 rcvbuf 131072
expect precedence.app.nodelay "$TMP/prec_app.out" 2 nodelay 0
check precedence.app.listen-line "listen line should list rcvbuf in app_kept" \
	-n "$(grep 'event=listen .*app_kept\.[0-9]=rcvbuf' "$TMP/prec_app.err")"

# ---- dry run: nothing changes, the same lines say what would have been applied ----
(
	export SOCKTUNE_DRY_RUN=1 SOCKTUNE_RCVBUF=1M SOCKTUNE_NODELAY=1 SOCKTUNE_BACKLOG=1000 \
		SOCKTUNE_QUICKACK=1 SOCKTUNE_KEEPALIVE=1
	opt_serve dry 4 1
	unset SOCKTUNE_DRY_RUN SOCKTUNE_RCVBUF SOCKTUNE_NODELAY SOCKTUNE_BACKLOG SOCKTUNE_QUICKACK \
		SOCKTUNE_KEEPALIVE
	opt_serve plain 4 1
)
expect dry.backlog "$TMP/dry.out" 1 listener.backlog 5
expect dry.nodelay "$TMP/dry.out" 2 nodelay 0
expect dry.keepalive "$TMP/dry.out" 2 keepalive 0
expect dry.rcvbuf-untouched "$TMP/dry.out" 2 rcvbuf "$(json_get "$TMP/plain.out" rcvbuf 2)"
line=$(grep 'event=listen ' "$TMP/dry.err")
check dry.logged "listen line: $line" -n "$(printf '%s' "$line" | grep 'dry_run=1' | grep 'backlog.want=1000' | grep 'rcvbuf.want=1048576')"

# ---- unprivileged: SO_RCVBUFFORCE needs CAP_NET_ADMIN, SO_MARK CAP_NET_ADMIN or (Linux >= 5.17) CAP_NET_RAW ----
big=$((rmem_max * 4))
(
	export SOCKTUNE_RCVBUF=$big SOCKTUNE_RCVBUF_FORCE=1
	opt_serve force 4 1
)
expect rcvbuf-force.privileged "$TMP/force.out" 2 rcvbuf $((big * 2))
if command -v setpriv >/dev/null && setpriv --bounding-set -net_admin,-net_raw --inh-caps -net_admin,-net_raw true 2>/dev/null; then
	(
		export SOCKTUNE_RCVBUF=$big SOCKTUNE_RCVBUF_FORCE=1 SOCKTUNE_MARK=7 SOCKTUNE_NODELAY=1 \
			SOCKTUNE_TRANSPARENT=1
		SRV_WRAP="setpriv --bounding-set -net_admin,-net_raw --inh-caps -net_admin,-net_raw" \
			opt_serve unpriv 4 2 --read tr=0:19
	)
	expect unprivileged.transparent-unset "$TMP/unpriv.out" 2 tr 0
	n=$(grep 'option=transparent .* note="grant CAP_NET_ADMIN or CAP_NET_RAW" action=disabled' "$TMP/unpriv.err" |
	grep -vc 'fix')
	check unprivileged.transparent-one-warning "$n transparent warnings, want 1: $(cat "$TMP/unpriv.err")" "$n" -eq 1
	expect unprivileged.rcvbuf-fallback "$TMP/unpriv.out" 2 rcvbuf $((rmem_max * 2))
	expect unprivileged.mark-unset "$TMP/unpriv.out" 2 mark 0
	expect unprivileged.rest-applies "$TMP/unpriv.out" 2 nodelay 1
	n=$(grep -c 'option=mark.* note="grant CAP_NET_ADMIN or CAP_NET_RAW"' "$TMP/unpriv.err")
	check unprivileged.mark-one-warning "$n mark warnings, want 1" "$n" -eq 1
	check unprivileged.force-fallback-logged "no force-fallback line" -n "$(grep 'event=force-fallback' "$TMP/unpriv.err")"
else
	skip unprivileged "setpriv cannot drop CAP_NET_ADMIN here"
fi

# ---- a program that only makes outgoing connections, SOCKTUNE_CLIENT off: its own
# setsockopt(TCP_NODELAY) is not an override of anything, and the library stays silent ----
$PY -c '
import socket, sys
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
import subprocess, os
env = dict(os.environ, LD_PRELOAD=sys.argv[1], SOCKTUNE_NODELAY="1", SOCKTUNE_STATS=sys.argv[2])
code = "import socket,sys; c=socket.socket(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0); c.connect((\"127.0.0.1\", int(sys.argv[1]))); print(c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))"
r = subprocess.run(["/usr/bin/python3", "-c", code, str(l.getsockname()[1])], env=env, capture_output=True, text=True, timeout=10)
print("nodelay=%s stderr=%r" % (r.stdout.strip(), r.stderr))
' "$LIB" "$TMP/client-only.stats" >"$TMP/client-only.out" 2>&1
r=$(cat "$TMP/client-only.out")
check client-only.silent "$r" "$r" = "nodelay=0 stderr=''"
check client-only.no-stats-file "a stats file appeared" ! -e "$TMP/client-only.stats"
