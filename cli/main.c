/* The socktune command: which of its programs runs (socktune PROGRAM: run.c; check:
 * check.c; attach: attach.c; stats: stats.c; --list-options, for the shell's completion:
 * complete.c), and the exit status, which main alone decides. */
#include <stdio.h>
#include <string.h>

#include "socktune.h"
#include "cli.h"
#include "doctor.h"

/* The exit status for what a parser said when it was not CLI_GO. */
static int exit_status(enum cli_status r)
{
	switch (r) {
	case CLI_HELP:
		usage(stdout);
		return 0;
	case CLI_VERSION:
		printf("socktune %s\n", ST_VERSION);
		return 0;
	case CLI_GO:
	case CLI_BAD:
		break;
	}
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	enum cli_status r;
	if (argc > 1 && strcmp(argv[1], "--list-options") == 0) /* for the completion */
		return list_options(stdout, argc > 2 ? argv[2] : NULL);
	if (argc > 1 && strcmp(argv[1], "stats") == 0) {
		struct stats_args s;
		r = stats_parse(argc - 1, argv + 1, &s, stderr);
		return r == CLI_GO ? stats_main(&s) : exit_status(r);
	}
	if (argc > 1 && strcmp(argv[1], "doctor") == 0) {
		static struct doctor d; /* (its tables are large) */
		r = doctor_parse(argc - 1, argv + 1, &d, stderr);
		return r == CLI_GO ? doctor_main(&d) : exit_status(r);
	}
	struct cli c;
	struct st_policy p;
	memset(&c, 0, sizeof c);
	r = parse_args(argc, argv, &c, stderr);
	if (r == CLI_GO)
		r = build_policy(&c, &p, stderr);
	if (r != CLI_GO)
		return exit_status(r);
	char path[4096];
	if (c.flag_word && resolve_program(c.flag_word, path) != 0)
		return exit_status(flag_word_error(&c, stderr)); /* --nodelay 1: no program "1" */
	if (!c.check && !c.attach && congestion_missing(&c, &p))
		return EXIT_USAGE;
	if (c.attach) {
		struct attach_args a = {.json = c.json, .connections = c.connections,
		                        .follow = c.follow, .targets = c.program};
		return attach_main(&a, &p);
	}
	if (c.supervise)
		return supervise_main(&c, &p);
	return c.check ? check_main(&c, &p) : run_main(&c, &p, argc > 0 ? argv[0] : "socktune");
}
