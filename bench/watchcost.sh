# Case 9, sourced by bench/run.sh (its start, stop, note, rec, port and PIDS): what
# `socktune watch` costs, node-wide (no targets, its default --interval 0.1), while servers
# on loopback hold N established connections (2N sockets, both ends).  The connections are
# spread over servers of at most C9_CHUNK each (a client's ephemeral ports to one address and
# port, and each process's descriptor limit, bound one pair).  Measured: watch's CPU per
# second from /proc/PID/stat (utime+stime) over C9_S seconds from a second after its first
# textfile (its start-up, the first samples and a walk of every /proc/PID/fd to name the
# services, left out; a connection sample that falls in the window counted), its RSS, and
# from its own metrics the mean wall time of one listener sample and of one connection
# sample, the connections a connection sample returned, and the spacing of those samples.
# Records c9.*.nN; c9_table appends the table.

c9_run() {
	hard=$(ulimit -Hn)
	chunk=25000
	[ "$hard" != unlimited ] && [ "$hard" -lt $((chunk + 100)) ] && chunk=$((hard - 100))
	for n in $C9_N; do
		note "case 9: socktune watch with $n connections open (servers of $chunk at most), ${C9_S} s"
		left=$n sv="" cl="" k=0
		while [ "$left" -gt 0 ]; do
			m=$left
			[ "$m" -gt "$chunk" ] && m=$chunk
			p=$(port)
			start c9-$n-s$k "" "$BB/bsrv" hold 127.0.0.1 "$p" "$m"
			sv="$sv $LAST"
			waitfor 127.0.0.1 "$p"
			"$BB/bcli" hold 127.0.0.1 "$p" "$m" $((C9_S + 60)) >"$OUT/c9-$n-c$k.out" 2>&1 &
			cl="$cl $!"
			PIDS="$PIDS $!"
			i=0
			while [ $i -lt 1200 ] && ! grep -q accepted= "$OUT/c9-$n-s$k.out"; do
				sleep 0.05
				i=$((i + 1))
			done
			grep -q accepted= "$OUT/c9-$n-s$k.out" || note "case 9: server $k has not accepted $m"
			left=$((left - m))
			k=$((k + 1))
		done
		held=$(ss -Htn state established "( sport >= 1024 )" 2>/dev/null | wc -l)
		rec "c9.established.n$n" "$held"
		rm -f "$OUT/c9-$n.prom"
		"$CLI" watch --textfile "$OUT/c9-$n.prom" --every 1 --seconds $((C9_S + 120)) \
			>"$OUT/c9-$n.out" 2>"$OUT/c9-$n.err" &
		w=$!
		PIDS="$PIDS $w"
		# its start-up done (the first file is written after the first samples and the
		# first walk of /proc/PID/fd), and a second more
		i=0
		while [ $i -lt 600 ] && [ ! -f "$OUT/c9-$n.prom" ]; do
			sleep 0.05
			i=$((i + 1))
		done
		sleep 1
		t0=$(awk '{ print $14 + $15 }' /proc/$w/stat)
		sleep "$C9_S"
		t1=$(awk '{ print $14 + $15 }' /proc/$w/stat)
		rec "c9.cpu_pct.n$n" "$(awk -v a="$t0" -v b="$t1" -v s="$C9_S" -v hz="$(getconf CLK_TCK)" \
			'BEGIN { printf "%.3f", (b - a) / hz / s * 100 }')"
		rec "c9.rss_kib.n$n" "$(awk '/^VmRSS:/ { print $2 }' /proc/$w/status)"
		rec "c9.hwm_kib.n$n" "$(awk '/^VmHWM:/ { print $2 }' /proc/$w/status)"
		sleep 1.5 # (a textfile written after the window)
		mv_() { awk -v k="$1" '$1 == k { print $2 }' "$OUT/c9-$n.prom"; }
		ls=$(mv_ socktune_watch_sample_seconds_total) ln=$(mv_ socktune_watch_samples_total)
		cs=$(mv_ socktune_watch_connection_sample_seconds_total)
		cn=$(mv_ socktune_watch_connection_samples_total)
		rec "c9.lsample_ms.n$n" "$(awk -v s="$ls" -v n="$ln" 'BEGIN { if (n > 0) printf "%.4f", s / n * 1000 }')"
		rec "c9.csample_ms.n$n" "$(awk -v s="$cs" -v n="$cn" 'BEGIN { if (n > 0) printf "%.2f", s / n * 1000 }')"
		rec "c9.lsockets.n$n" "$(mv_ socktune_watch_listener_sample_sockets)"
		rec "c9.csockets.n$n" "$(mv_ socktune_watch_connection_sample_sockets)"
		rec "c9.cevery.n$n" "$(mv_ socktune_watch_connection_sample_interval_seconds)"
		# shellcheck disable=SC2086 # pids
		stop $w $cl $sv
	done
}

c9_table() {
	c9() { awk -v k="$1" -v f="${2:-%s}" '$1 == k { v = $2; n++ } END { if (n && v != "") printf f, v; else printf "n/a" }' "$RES"; }
	echo
	echo "| case 9: socktune watch (node-wide, --interval 0.1) | $(for n in $C9_N; do printf '%s connections | ' "$n"; done)"
	echo "|---|$(for n in $C9_N; do printf -- '---|'; done)"
	echo "| established sockets on the node (both ends) | $(for n in $C9_N; do printf '%s | ' "$(c9 c9.established.n$n)"; done)"
	echo "| watch CPU, % of one core (/proc/PID/stat, ${C9_S} s) | $(for n in $C9_N; do printf '%s | ' "$(c9 c9.cpu_pct.n$n %.2f)"; done)"
	echo "| watch RSS (MiB; peak) | $(for n in $C9_N; do printf '%s | ' "$(c9 c9.rss_kib.n$n | awk '{ printf ($1 == "n/a") ? $1 : "%.1f", $1 / 1024 }'); $(c9 c9.hwm_kib.n$n | awk '{ printf ($1 == "n/a") ? $1 : "%.1f", $1 / 1024 }')"; done)"
	echo "| listener sample (ms; sockets it returned) | $(for n in $C9_N; do printf '%s; %s | ' "$(c9 c9.lsample_ms.n$n %.3f)" "$(c9 c9.lsockets.n$n)"; done)"
	echo "| connection sample, with tcp_info (ms; connections it returned) | $(for n in $C9_N; do printf '%s; %s | ' "$(c9 c9.csample_ms.n$n %.1f)" "$(c9 c9.csockets.n$n)"; done)"
	echo "| connection samples every (s) | $(for n in $C9_N; do printf '%s | ' "$(c9 c9.cevery.n$n)"; done)"
	echo "| connection samples' own share, sample / interval (% of one core) | $(for n in $C9_N; do printf '%s | ' "$(awk -v c="$(c9 c9.csample_ms.n$n)" -v e="$(c9 c9.cevery.n$n)" 'BEGIN { if (c == "n/a" || e + 0 == 0) print "n/a"; else printf "%.2f", c / 10 / e }')"; done)"
	echo "| budget at 10,000: <= 1% of a core, <= 64 MiB | $(for n in $C9_N; do
		if [ "$n" = 10000 ]; then
			printf '%s | ' "$(awk -v c="$(c9 c9.cpu_pct.n$n)" -v r="$(c9 c9.rss_kib.n$n)" 'BEGIN { print (c != "n/a" && r != "n/a" && c + 0 <= 1 && r + 0 <= 65536) ? "met" : "NOT met" }')"
		else
			printf -- '- | '
		fi
	done)"
}
