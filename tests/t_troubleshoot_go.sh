#!/bin/sh
# docs/troubleshooting.md says how a Go program, out of LD_PRELOAD's reach, is tuned: its
# `socktune --cgroup ... -- ./server` and `socktune attach ... PID` lines are run as written
# on a Go net/http server (tests/go/httpserver.go, in place of ./server and PID), which
# answers with the options the kernel reports on the connection it accepted; the answer must
# be the one the page prints (before, the page said Go programs cannot be fixed, and named
# no such command).
. "$(dirname "$0")/lib.sh"
for v in $(env | sed -n 's/^\(SOCKTUNE_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
cd "$ROOT" || exit 1
doc=docs/troubleshooting.md

# the page's commands and the answer it prints for the Go server
# (the section on programs the library does not reach: other pages name other attach lines)
awk '/^## / { on = /The library logs nothing/ } on' "$doc" >"$TMP/go.md"
cg=$(grep -o '`socktune --cgroup [^`]*-- ./server`' "$TMP/go.md" | head -n 1 | tr -d '`')
at=$(grep -o '`socktune attach [^`]* PID`' "$TMP/go.md" | head -n 1 | tr -d '`')
said=$(tr '\n' ' ' <"$TMP/go.md" | grep -o 'answered *`rcvbuf=[0-9]* delack_max_us=[0-9]*`' | head -n 1 |
	sed 's/.*`\(.*\)`/\1/')
check troubleshoot_go.page "cgroup command: '$cg', attach command: '$at', answer: '$said'" \
	-n "$cg" -a -n "$at" -a -n "$said"
[ -n "$cg" ] && [ -n "$at" ] && [ -n "$said" ] || exit 0
if [ ! -x "$BIN/gohttp" ]; then
	skip troubleshoot_go "no $BIN/gohttp (make test-bins builds it where go is installed)"
	exit 0
fi
# what this kernel keeps of the page's --delack-max (HZ=250: 8000; none before 6.15: skip)
ms=$(printf '%s\n' "$cg" | sed -n 's/.*--delack-max \([0-9]*\)ms.*/\1/p')
kept=$($PY -c "import socket; s=socket.socket(); s.setsockopt(6,46,${ms:-5}*1000); print(s.getsockopt(6,46))" 2>/dev/null)
want_d=$(field "$said" delack_max_us)
if [ -z "$kept" ] || [ "$kept" != "$want_d" ]; then
	skip troubleshoot_go "this kernel keeps ${kept:-no} TCP_DELACK_MAX_US for ${ms}ms (the page: $want_d, HZ=250)"
	exit 0
fi

# the --cgroup line, ./server being gohttp on a free port
port=$(free_port)
set -f
# shellcheck disable=SC2086 # the command's words
set -- ${cg% -- ./server}
set +f
shift # socktune
"$CLI" "$@" -- "$BIN/gohttp" "$port" >"$TMP/cg.out" 2>"$TMP/cg.err" &
W=$!
if wait_listen "$port" 10; then
	got=$(curl -s --max-time 5 "http://127.0.0.1:$port/")
	kill -INT $W 2>/dev/null
	wait $W
	check troubleshoot_go.cgroup "'$cg' on a Go server: '$got', the page: '$said'; $(grep -v 'event=' "$TMP/cg.err" | head -n 2)" \
		"$got" = "$said"
else
	rc=$(kill -0 $W 2>/dev/null && echo running || (wait $W; echo "status $?"))
	if grep -q 'cgroup v2\|CAP_BPF\|cannot run the cgroup mode' "$TMP/cg.err"; then
		skip troubleshoot_go.cgroup "this machine cannot run the cgroup mode: $(head -n 1 "$TMP/cg.err")"
	else
		fail troubleshoot_go.cgroup "the server did not listen ($rc): $(head -c 300 "$TMP/cg.err")"
	fi
	kill $W 2>/dev/null
fi

# the attach line, PID being a plain gohttp's
start_server go2 -- "$BIN/gohttp" || { fail troubleshoot_go.attach "gohttp did not start"; exit 0; }
set -f
# shellcheck disable=SC2086
set -- ${at% PID}
set +f
shift
"$CLI" "$@" "$SRV_PID" >"$TMP/at.out" 2>&1
rc=$?
got=$(curl -s --max-time 5 "http://127.0.0.1:$SRV_PORT/")
check troubleshoot_go.attach "'$at' on a running Go server: status $rc, next connection '$got', the page: '$said': $(head -c 200 "$TMP/at.out")" \
	"$rc" = 0 -a "$got" = "$said"
kill "$SRV_PID" 2>/dev/null
