/* The socktune command: the forms alone on its command line (--list-options, for the
 * shell's completion: complete.c; --schema), a subcommand (the table of subcommands.c runs
 * it), else the wrapper: socktune [OPTIONS] PROGRAM (run/run.c; --attach: attach/supervise.c;
 * --cgroup: cgroup/run.c).  The exit status is what main returns; nothing below exits. */
#include <stdio.h>
#include <string.h>

#include "socktune.h"
#include "cli.h"
#include "cgroup/cgroup.h"
#include "record.h"
#include "subcommands.h"
#include "host/inspect.h"
#include "run/run.h"
#include "attach/attach.h"

/* socktune [OPTIONS] [--] PROGRAM [ARGS...] */
static int wrapper(int argc, char **argv)
{
	const char *argv0 = argc > 0 ? argv[0] : "socktune";
	struct cli c;
	struct st_policy p;
	memset(&c, 0, sizeof c);
	enum cli_status r = parse_args(argc, argv, &c, stderr);
	if (r == CLI_GO && c.print_library)
		return print_library(argv0);
	if (r == CLI_GO)
		r = build_policy(&c, &p, stderr);
	if (r == CLI_GO)
		r = cg_check(&c, &p, stderr);
	if (r != CLI_GO)
		return exit_status(r, run_help);
	char path[4096];
	if (c.flag_word && resolve_program(c.flag_word, path) != 0)
		return exit_status(flag_word_error(&c, stderr), run_help); /* --nodelay 1: no program "1" */
	if (congestion_missing(&c, &p))
		return EXIT_USAGE;
	if (c.cgroup) {
		stdio_fill();
		return cgroup_main(&c, &p);
	}
	if (c.supervise)
		return supervise_main(&c, &p);
	return run_main(&c, &p, argv0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--list-options") == 0) /* for the completion */
		return list_options(stdout, argc > 2 ? argv[2] : NULL);
	if (argc == 2 && strcmp(argv[1], "--schema") == 0) { /* the keys of every output */
		rec_print_schema(stdout);
		return 0;
	}
	const struct subcommand *s = argc > 1 ? subcommand_find(argv[1]) : NULL;
	if (s)
		return subcommand_run(s, argc - 1, argv + 1);
	/* a first word that is no option is the program, unless it was meant as a subcommand */
	if (argc > 1 && (argv[1][0] != '-' || argv[1][1] == '\0') && subcommand_typo(argv[1]))
		return EXIT_USAGE;
	return wrapper(argc, argv);
}
