#!/bin/sh
# The examples must run as shown.  Every socktune command in examples/*/README.md
# and every socktune setting in the example files (Dockerfile ENTRYPOINT, systemd
# Environment=/ExecStart*=, Kubernetes and Compose env) is run for real against
# build/socktune, with nothing real started:
#   - run mode: the program after "--" is replaced by `true` (socktune validates everything
#     before it executes the program; a bad option or value exits 2);
#   - `socktune check ...` runs as is (status 0, or 1 with --strict on a host that would cut a
#     value: both mean it parsed);
#   - environment values alone (Environment=, env:, environment:, docker -e) are exported and
#     checked with `socktune check`.
# A command followed in its README by a comment line "# socktune: MESSAGE" is an example of a
# refusal: it must exit 2 and print MESSAGE.  `socktune stats FILE` needs a live file: skipped.
# examples/prometheus/*.yml are Prometheus's files (t_watch_prometheus checks them).
# `socktune watch ...` would bind its port and write its textfile: its options are parsed,
# in order, up to a `--help` put after them (a bad one exits 2), and nothing is started.
. "$(dirname "$0")/lib.sh"

[ -x "$CLI" ] || { fail examples "$CLI not built"; exit 0; }
cd "$ROOT" || exit 1

US=$(printf '\037') # field separator of the records (not whitespace: empty fields stay)

# extract FILE LANG: one record per line, fields separated by US:
#   kind (run | env)   expect ("ok" or the expected error message)   env (VAR=val ...)   args
# LANG "md" reads the fenced code blocks of a README; otherwise the whole file is one block
# in that language (sh, dockerfile, ini, yaml).
extract() {
	awk -v lang0="$2" '
	function flush_pending(expect) {
		if (pending != "") print pending_kind "\037" expect "\037" pending_env "\037" pending
		pending = ""
	}
	function add_env(pair) {
		if (pair ~ /^SOCKTUNE_[A-Z0-9_]*=/) benv = benv (benv == "" ? "" : " ") pair
	}
	function end_block() {
		flush_pending("ok")
		if (benv != "" && !block_has_cmd) print "env\037ok\037" benv "\037"
		benv = ""; block_has_cmd = 0
	}
	# a JSON-style array ["socktune", "--x", ...] -> "--x ..."
	function array_args(s,    body, n, a, i, out) {
		body = s; sub(/^[^[]*\[/, "", body); sub(/\].*$/, "", body)
		gsub(/"/, "", body); gsub(/,[ \t]*/, " ", body)
		n = split(body, a, " ")
		if (a[1] != "socktune" && a[1] !~ /\/socktune$/) return "-"
		out = ""
		for (i = 2; i <= n; i++) out = out (out == "" ? "" : " ") a[i]
		return out
	}
	function command(s, envpre,    n, t, i, j, env, args, found) {
		n = split(s, t, /[ \t]+/)
		env = envpre; found = 0; args = ""
		for (i = 1; i <= n; i++) {
			if (t[i] == "") continue
			if (!found && t[i] ~ /^SOCKTUNE_[A-Z0-9_]*=/) { env = env (env == "" ? "" : " ") t[i]; continue }
			if (!found && t[i] == "-e" && t[i + 1] ~ /^SOCKTUNE_/) { env = env (env == "" ? "" : " ") t[i + 1]; i++; continue }
			if (!found && (t[i] == "socktune" || t[i] ~ /\/socktune$/)) { found = 1; continue }
			if (found) args = args (args == "" ? "" : " ") t[i]
		}
		if (found) { pending = args; pending_env = env; pending_kind = "run"; block_has_cmd = 1 }
		else if (env != "" && s ~ /docker (compose )?run/) { pending = ""; pending_env = env; pending_kind = "env"; pending = " "; block_has_cmd = 1 }
	}
	BEGIN { inblock = (lang0 != "md"); lang = lang0 }
	lang0 == "md" && /^```/ {
		if (inblock) { end_block(); inblock = 0 } else { inblock = 1; lang = substr($0, 4) }
		next
	}
	!inblock { next }
	{
		line = $0
		if (cont != "") { sub(/^[ \t]+/, "", line); line = cont " " line; cont = "" }
		if (line ~ /\\$/) { cont = substr(line, 1, length(line) - 1); next }
		stripped = line; sub(/^[ \t]+/, "", stripped)
		if (stripped ~ /^# socktune: /) { msg = stripped; sub(/^# /, "", msg); flush_pending(msg); next }
		if (stripped ~ /^#/ || stripped == "") next
		flush_pending("ok")
		if (line ~ /\[[ \t]*"[^"]*socktune"/) {
			a = array_args(line)
			if (a != "-") { pending = a; pending_env = ""; pending_kind = "run"; block_has_cmd = 1 }
			next
		}
		if (lang == "ini") {
			if (line ~ /^Environment=/) {
				v = line; sub(/^Environment=/, "", v); gsub(/"/, "", v); gsub(/%%/, "%", v)
				add_env(v)
			} else if (line ~ /^ExecStart(Pre)?=.*socktune/) {
				v = line; sub(/^ExecStart(Pre)?=[-@:+!]*/, "", v)
				command(v, benv)
			}
			next
		}
		if (lang == "yaml" || lang == "yml") {
			if (stripped ~ /^(- )?name: *SOCKTUNE_/) { yname = stripped; sub(/^(- )?name: */, "", yname); next }
			if (yname != "" && stripped ~ /^value: */) {
				v = stripped; sub(/^value: */, "", v); gsub(/"/, "", v); add_env(yname "=" v); yname = ""; next
			}
			if (stripped ~ /^(- )?SOCKTUNE_[A-Z0-9_]*[:=]/) {
				v = stripped; sub(/^- /, "", v); gsub(/"/, "", v); sub(/: */, "=", v); add_env(v)
			}
			next
		}
		if (lang !~ /^(sh|bash|shell|console)$/) next
		sub(/^\$ /, "", line)
		command(line, "")
	}
	END { if (inblock) end_block() }
	' "$1"
}

# run_record NAME KIND EXPECT ENV ARGS: run one extracted command and judge it.
run_record() {
	name=$1 kind=$2 expect=$3 env=$4 args=$5
	set -f
	# run mode: cut the program off at "--" and run `true` in its place
	case "$kind $args" in
	"env "*) set -- check ;;
	"run check"* | "run --help"* | "run --version"*) set -- $args ;;
	"run stats"*) set +f; skip "$name" "socktune stats needs a live stats file: $args"; return ;;
	"run watch"*) set -- $args --help ;;
	*)
		set -- $args
		n=0
		for a in "$@"; do
			n=$((n + 1))
			[ "$a" = "--" ] && break
		done
		pre=""
		i=0
		for a in "$@"; do
			i=$((i + 1))
			[ "$i" -lt "$n" ] && pre="$pre $a"
		done
		set -- $pre -- true
		;;
	esac
	# (a sanitizer run's options pass the cleared environment: make sanitize, docs/hardening.md)
	# shellcheck disable=SC2086 # the environment words are split on purpose
	env -i PATH="$PATH" ${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} ${UBSAN_OPTIONS:+UBSAN_OPTIONS=$UBSAN_OPTIONS} $env "$CLI" "$@" >"$TMP/ex.out" 2>"$TMP/ex.err"
	rc=$?
	set +f
	shown="${env:+$env }socktune $*"
	if [ "$expect" = ok ]; then
		if [ "$rc" -eq 0 ] || { [ "$rc" -eq 1 ] && [ "$1" = check ]; }; then
			pass "$name"
		else
			fail "$name" "'$shown' exited $rc: $(head -n 2 "$TMP/ex.err" | tr '\n' ' ')"
		fi
	else
		if [ "$rc" -eq 2 ] && grep -qF "$expect" "$TMP/ex.err"; then
			pass "$name"
		else
			fail "$name" "'$shown' should exit 2 with '$expect'; got $rc: $(head -n 2 "$TMP/ex.err" | tr '\n' ' ')"
		fi
	fi
}

# Self-test: a bad value in each form must be caught.
printf '```sh\nsocktune --backlog 0 -- ./server\n```\n' >"$TMP/bad1.md"
printf '[Service]\nEnvironment=SOCKTUNE_NODELAY=maybe\n' >"$TMP/bad2.conf"
printf 'env:\n  - name: SOCKTUNE_BACKLOG\n    value: "lots"\n' >"$TMP/bad3.yaml"
printf '[Service]\nExecStart=/usr/bin/socktune watch --listen 127.0.0.1:9464 --every 0\n' >"$TMP/bad4.service"
for b in "bad1.md md" "bad2.conf ini" "bad3.yaml yaml" "bad4.service ini"; do
	set -- $b
	out=$(extract "$TMP/$1" "$2" | while IFS=$US read -r kind expect env args; do
		run_record "selftest" "$kind" "$expect" "$env" "$args"
	done)
	case "$out" in
	*"FAIL selftest"*) pass "selftest-catches-$1" ;;
	*) fail "selftest-catches-$1" "a bad value went through: ${out:-no record extracted}" ;;
	esac
done

# The examples.
for d in examples/*/; do
	d=${d%/}
	base=$(basename "$d")
	[ -f "$d/README.md" ] || { fail "readme-$base" "$d has no README.md"; continue; }
	for f in "$d"/*; do
		case "$f" in
		# Prometheus's own files name no socktune command: t_watch_prometheus checks them
		examples/prometheus/*.yml) continue ;;
		*.md) lang=md ;;
		*/Dockerfile*) lang=dockerfile ;;
		*.conf | *.service | *.socket) lang=ini ;;
		*.yaml | *.yml) lang=yaml ;;
		*) continue ;;
		esac
		extract "$f" "$lang" >"$TMP/records"
		k=0
		while IFS=$US read -r kind expect env args; do
			k=$((k + 1))
			run_record "$base/$(basename "$f")#$k" "$kind" "$expect" "$env" "$args"
		done <"$TMP/records"
		# a README or settings file with no socktune command found means the parser missed it
		check "found-$base/$(basename "$f")" "no socktune command or SOCKTUNE_ setting found" "$k" -gt 0
	done
done
