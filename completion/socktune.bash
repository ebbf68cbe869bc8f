# bash completion for socktune(1).  What it offers comes from the command itself:
# `socktune --list-options` names the subcommands (the command's table, no list here),
# `socktune --list-options SUB` the options of one (run: running a program), each "--name",
# "--name ARG" or "--name ARG<TAB>values", the policy options read from the same table as
# --help.  So the completion of an installed socktune is that socktune's, and nothing here
# goes stale when an option or a subcommand is added.
# Installed as $(PREFIX)/share/bash-completion/completions/socktune.

_socktune()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev= cmd=${COMP_WORDS[0]} sub=run i=1 w line
	local -a lines opts
	local -A takes values
	COMPREPLY=()
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	# the command as typed (./build/socktune), else the one on PATH
	cmd=${cmd/#\~/$HOME}
	[[ $cmd == */* && -x $cmd ]] || cmd=$(type -P socktune) || return 0

	# the subcommands, as this socktune names them ("run", the wrapper's, is no word of it)
	local -a subs
	for w in $("$cmd" --list-options 2>/dev/null); do
		[[ $w == run ]] && continue
		subs+=("$w")
		[[ $w == "${COMP_WORDS[1]-}" ]] && sub=$w i=2
	done
	if ((COMP_CWORD == 1)) && [[ $cur != -* ]]; then
		COMPREPLY=($(compgen -W "${subs[*]}" -- "$cur"))
		[[ -n $cur ]] && COMPREPLY+=($(compgen -c -- "$cur"))
		return 0
	fi

	mapfile -t lines < <("$cmd" --list-options "$sub" 2>/dev/null)
	for line in "${lines[@]}"; do
		w=${line%%[ $'\t']*}
		opts+=("$w")
		[[ $line == *' '* ]] && { takes[$w]=1; values[$w]=; }
		[[ $line == *$'\t'* ]] && values[$w]=${line#*$'\t'}
		[[ $line == *' '* ]] && { local a=${line#* }; a=${a%%$'\t'*}; [[ $a == PATH || $a == FILE ]] && values[$w]=@files; }
		# a network namespace: its names (all) or a file (/run/netns/NAME, /proc/PID/ns/net)
		[[ $line == *' NETNS'* ]] && values[$w]="${values[$w]} @files"
	done

	# --opt=value: bash splits the word at '=' (COMP_WORDBREAKS)
	if [[ $cur == = ]]; then
		cur= prev=${COMP_WORDS[COMP_CWORD - 1]}
	elif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi

	# where we are: after an option that takes a value, after `--` or the program (run)
	local expect_value=0 program_at=0
	for ((; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if ((expect_value)); then
			expect_value=0
			continue
		fi
		[[ $w == = ]] && { expect_value=1; continue; }
		if [[ $sub == run && ( $w == -- || $w != -* ) ]]; then
			program_at=$((i + 1))
			[[ $w == -- ]] || program_at=$i
			break
		fi
		[[ -n ${takes[$w]-} && ${COMP_WORDS[i + 1]-} != = ]] && expect_value=1
	done
	if ((program_at)); then
		if ((COMP_CWORD == program_at)); then
			COMPREPLY=($(compgen -c -- "$cur"))
		else
			compopt -o default 2>/dev/null
		fi
		return 0
	fi

	if [[ -n ${takes[$prev]-} ]] && { ((expect_value)) || [[ ${COMP_WORDS[COMP_CWORD - 1]} == = ]]; }; then
		if [[ ${values[$prev]} == *@files ]]; then
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
			w=${values[$prev]%@files}
			[[ -n ${w// /} ]] && COMPREPLY+=($(compgen -W "$w" -- "$cur"))
		elif [[ -n ${values[$prev]} ]]; then
			COMPREPLY=($(compgen -W "${values[$prev]}" -- "$cur"))
		fi
		return 0
	fi

	if [[ $cur == -* ]]; then
		local shown=()
		for w in "${opts[@]}"; do
			[[ $w == --no-* && $cur != --no* ]] && continue
			shown+=("$w")
		done
		COMPREPLY=($(compgen -W "${shown[*]}" -- "$cur"))
		return 0
	fi
	case $sub in
	attach | detach)
		local pids=(/proc/[0-9]*)
		COMPREPLY=($(compgen -W "${pids[*]#/proc/}" -- "$cur"))
		;;
	stats)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		;;
	run)
		COMPREPLY=($(compgen -c -- "$cur"))
		;;
	esac
	return 0
}
complete -F _socktune socktune
