/* socktune --help: the wrapper's own, which lists the subcommands (subcommands.c); each
 * subcommand has its own (socktune SUB --help). */
#include <stdio.h>
#include <string.h>

#include "socktune.h"
#include "cli.h"
#include "subcommands.h"
#include "run/run.h"

void run_help(FILE *f)
{
	size_t width = 0;
	fprintf(f, "usage: socktune [OPTIONS] [--] PROGRAM [ARGS...]\n"
	           "       socktune ");
	for (size_t k = 0; k < n_subcommands; k++) {
		size_t len = strlen(subcommands[k].name);
		fprintf(f, "%s%s", k ? "|" : "", subcommands[k].name);
		width = len > width ? len : width;
	}
	fprintf(f,
	        " ...\n"
	        "                (each with its own: socktune SUBCOMMAND --help)\n"
	        "       socktune --schema | --list-options [SUBCOMMAND] | --help | --version\n"
	        "\n"
	        "Runs PROGRAM in place (same pid, its exit status) with libsocktune preloaded, which\n"
	        "tunes its TCP listeners and logs what the kernel applied.\n"
	        "\n"
	        "Subcommands, each with its own --help:\n");
	for (size_t k = 0; k < n_subcommands; k++)
		help_wrapped(f, (int)(width < 6 ? 6 : width) + 5, subcommands[k].name,
		             subcommands[k].summary);
	fputc('\n', f);
	help_policy(f, NULL);
	fprintf(f, "\nCommand options:\n");
	help_entry(f, "--strict", "refuse (status 2) a program LD_PRELOAD cannot reach (statically "
	           "linked, Go, setuid/setgid or file capabilities) instead of warning", NULL);
	help_entry(f, "--attach", "start PROGRAM as a child and tune its listeners from outside "
	           "(for a static or Go program; the wrapper stays as its init)", NULL);
	help_entry(f, "--cgroup", "run PROGRAM in a cgroup of its own, the policy a sock_ops "
	           "program the kernel runs for each of its TCP connections from the first (any "
	           "language, static or Go; needs cgroup v2, CAP_BPF and CAP_NET_ADMIN)", NULL);
	help_entry(f, "--cgroup-path PATH", "with --cgroup: that cgroup (made and removed; one "
	           "that exists is used and kept) instead of socktune-PID under the wrapper's own",
	           NULL);
	char peer[200];
	snprintf(peer, sizeof peer, "with --cgroup: tune only connections whose peer is in PREFIX "
	         "(IPv4 or IPv6, ADDR/LEN or ADDR; up to %d, any of them)", CLI_MAX_PEERS);
	help_entry(f, "--peer PREFIX", peer, NULL);
	help_entry(f, "--print-library", "print the path of the library the command preloads (for "
	           "an LD_PRELOAD= line) and exit", NULL);
	help_entry(f, "--help, --version", "", NULL);
	fprintf(f, "\nAlone on the command line:\n");
	help_entry(f, "--schema", "print every key of the JSON outputs: its name, type and "
	           "meaning", NULL);
	help_entry(f, "--list-options [SUBCOMMAND]", "the subcommands, one a line; with one (run: "
	           "this wrapper), its options: what the bash completion offers", NULL);
	fprintf(f,
	        "\n"
	        "Options end at '--' or at the first argument that is not an option.  A first\n"
	        "argument that is a subcommand, or one or two letters away from one (stat,\n"
	        "doctr), is not run as a program: socktune -- stat runs stat.\n"
	        "\n"
	        "Environment: SOCKTUNE_* as above; %s=PATH to use that library instead of the\n"
	        "one next to the command (./libsocktune.so, then %s/libsocktune.so).\n"
	        "\n"
	        "Exit status: the program's (--attach: once a program that exited 0 leaving\n"
	        "processes has none left, the last one's); 2 for a bad option or value (the\n"
	        "program is not started); 126 when the program cannot be executed, 127 when it\n"
	        "is not found.  Every subcommand's: EXIT STATUS in socktune(1).\n",
	        ST_ENV_LIBRARY, ST_LIBDIR_FROM_BIN);
}
