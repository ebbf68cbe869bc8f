#!/bin/sh
# SOCKTUNE_PORTS: a listener on an excluded port is left exactly as an untuned run leaves it
# (and nothing is logged); one on an included port, alone or in a range, is tuned.
. "$(dirname "$0")/lib.sh"

TUNE="SOCKTUNE_NODELAY=1 SOCKTUNE_RCVBUF=256K SOCKTUNE_BACKLOG=77"

# serve NAME FAMILY PORT [VAR=value...]: tserver on PORT, one connection made to it.
serve() {
	_n=$1 _fam=$2 _port=$3
	shift 3
	if ! ts_start "$_n" "$@" -- -"$_fam" -p "$_port" -n 1; then
		fail "$_n" "tserver did not start on port $_port: $(cat "$TMP/$_n.err")"
		return 1
	fi
	"$BIN/kaclient" burst -n 1 -T 5 "$(host_of "$_fam")" "$SRV_PORT" >/dev/null
	wait_server
}

# values NAME: the accepted socket's values and the backlog, one word.
values() {
	echo "rcvbuf=$(ts_val "$1" CONN rcvbuf)/nodelay=$(ts_val "$1" CONN nodelay)/backlog=$(ts_val "$1" CONN backlog)"
}

for fam in 4 6; do
	port=$(free_port)
	other=$((port == 65535 ? port - 1 : port + 1))
	serve base_v$fam "$fam" "$port" || continue
	base=$(values base_v$fam)

	# excluded: a list and a range that miss the port
	k=0
	for list in "$other" "1-$((port - 1)),$((port + 1))-65535"; do
		k=$((k + 1))
		n=excluded${k}_v$fam
		serve $n "$fam" "$port" LD_PRELOAD="$LIB" $TUNE SOCKTUNE_PORTS="$list" || continue
		check $n "port $port with SOCKTUNE_PORTS=$list: $(values $n), untuned: $base" \
			"$(values $n)" = "$base"
		check ${n}_silent "excluded listener logged: $(cat "$TMP/$n.err")" ! -s "$TMP/$n.err"
	done

	# included: the port alone, in a list, in a range
	k=0
	for list in "$port" "$other,$port" "$((port - 1))-$((port + 1 > 65535 ? 65535 : port + 1))"; do
		k=$((k + 1))
		n=included${k}_v$fam
		serve $n "$fam" "$port" LD_PRELOAD="$LIB" $TUNE SOCKTUNE_PORTS="$list" || continue
		check $n "port $port with SOCKTUNE_PORTS=$list: $(values $n), untuned: $base" \
			"$(values $n)" = "rcvbuf=524288/nodelay=1/backlog=77" -a "$(values $n)" != "$base"
		check ${n}_logged "no event=listen line: $(cat "$TMP/$n.err")" \
			"$(count_lines "$TMP/$n.err" "event=listen .*:$port ")" -eq 1
	done
done
