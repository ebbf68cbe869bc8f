/* The subcommands of socktune, one row each, and what the command does with a row: run it
 * (its parser, then its main, a refusal under --json an error object on stdout too), and
 * name it in a "did you mean".  The top-level help (runhelp.c) and --list-options
 * (complete.c, the bash completion) list the rows.  A new subcommand is a folder of its own
 * under cli/ (the Makefile builds every one) and a row here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "record.h"
#include "subcommands.h"
#include "cgroup/cgroup.h"
#include "doctor/doctor.h"
#include "revert/revert.h"
#include "watch/watch.h"
#include "host/inspect.h"
#include "check/check.h"
#include "stats/stats.h"
#include "attach/attach.h"

/* (In the order of socktune --help.  check and attach take the wrapper's options as well:
 * their parsers are the wrapper's, policyargs.c.) */
const struct subcommand subcommands[] = {
	{"check", "what this host will grant for the same options, and why",
	 check_help, check_parse, check_run, sizeof(struct policy_args),
	 SUB_JSON | SUB_POLICY | SUB_STDIO,
	 (const char *const[]){"--json", "--strict", "--route ADDR", "--cgroup", "--peer PREFIX",
	                       "--cgroup-path PATH", "--help", NULL}, check_takes},
	{"attach", "tune a server that is already running, from outside (--cgroup: the kernel "
	 "tunes its next connections)",
	 attach_help, attach_parse, attach_run, sizeof(struct policy_args),
	 SUB_JSON | SUB_POLICY | SUB_STDIO | SUB_STOP,
	 (const char *const[]){"--json", "--connections", "--follow", "--via VIA\tpidfd bpf auto",
	                       "--cgroup", "--cgroup-root", "--peer PREFIX", "--help", NULL},
	 attach_takes},
	{"detach", "remove what attach --cgroup or --cgroup left attached to a cgroup",
	 detach_help, cg_detach_parse, cg_detach_main, sizeof(struct cg_detach_args),
	 SUB_JSON | SUB_STDIO,
	 (const char *const[]){"--json", "--cgroup-root", "--help", NULL}, NULL},
	{"doctor", "watch a running server's listeners and connections and name the setting that "
	 "cures what it saw",
	 doctor_help, doctor_parse, doctor_main, sizeof(struct shared_window), SUB_JSON | SUB_STOP,
	 (const char *const[]){"--seconds SECONDS", "--json", "--help", NULL}, NULL},
	{"stats", "read the statistics file the library writes (--stats PATH)",
	 stats_help, stats_parse, stats_main, sizeof(struct stats_args), SUB_JSON | SUB_STOP,
	 (const char *const[]){"--json", "--format FORMAT\ttable json prometheus", "--output PATH",
	                       "--watch SECONDS", "--count N", "--help", NULL}, NULL},
	{"watch", "every listener of the node as Prometheus metrics and findings; with --apply, "
	 "their socket-option cures applied and journalled",
	 watch_help, watch_parse, watch_main, sizeof(struct watch_args), SUB_STDIO | SUB_STOP,
	 (const char *const[]){"--listen ADDR:PORT", "--textfile PATH", "--every SECONDS",
	                       "--interval SECONDS", "--window SECONDS", "--apply",
	                       "--apply-netns NETNS\tall", "--via VIA\tpidfd bpf auto",
	                       "--journal PATH", "--seconds SECONDS", "--help", NULL}, NULL},
	{"revert", "undo what watch --apply changed, from its journal",
	 revert_help, revert_parse, revert_main, sizeof(struct revert_args), SUB_STDIO,
	 (const char *const[]){"--journal PATH", "--via VIA\tpidfd bpf auto", "--help", NULL},
	 NULL},
};
const size_t n_subcommands = sizeof subcommands / sizeof subcommands[0];

const struct subcommand *subcommand_find(const char *name)
{
	for (size_t k = 0; k < n_subcommands; k++)
		if (strcmp(name, subcommands[k].name) == 0)
			return &subcommands[k];
	return NULL;
}

/* A first word that is not a subcommand but one typo from one (stat, doctr), or two from
 * one and no program here (dcotr), was meant as the subcommand: refused, with the
 * subcommand and the way to run the program all the same.  One typo is enough, program or
 * not: `socktune stat FILE` would run stat(1) on the file. */
int subcommand_typo(const char *word)
{
	char path[4096];
	int limit = strlen(word) <= 4 ? 1 : 2;
	for (size_t k = 0; k < n_subcommands; k++) {
		const char *name = subcommands[k].name;
		int d = st_edit_distance(word, name);
		if (d > limit || (d == 2 && resolve_program(word, path) == 0))
			continue;
		usage_error(stderr, "%s: not a subcommand (did you mean %s? socktune %s --help); to "
		            "run the program %s: socktune -- %s", word, name, name, word, word);
		return 1;
	}
	return 0;
}

/* Where a parser writes its refusal: stderr, or, when the subcommand takes --json and the
 * command line asks for it (before any "--"), a buffer that refusal_end writes to stderr
 * and, as an error object, to stdout: a pipeline reads the failure, not nothing. */
static struct {
	const char *command;
	char *text;
	size_t len;
} refusal;

static FILE *refusal_start(const struct subcommand *s, int argc, char **argv)
{
	int json = 0;
	for (int i = 1; (s->flags & SUB_JSON) && i < argc && strcmp(argv[i], "--") != 0; i++)
		json |= strcmp(argv[i], "--json") == 0;
	FILE *f = json ? open_memstream(&refusal.text, &refusal.len) : NULL;
	refusal.command = s->name;
	return f ? f : stderr;
}

/* What the parser said, written; status passed on */
static int refusal_end(FILE *msg, int status)
{
	if (msg == stderr)
		return status;
	fclose(msg);
	if (!refusal.text || !refusal.len)
		return status;
	fputs(refusal.text, stderr);
	char *text = refusal.text, *end = text + strlen(text);
	while (end > text && end[-1] == '\n')
		*--end = '\0';
	if (strncmp(text, "socktune: ", 10) == 0)
		text += 10;
	if (status != 0)
		rec_error_json(stdout, refusal.command, text, status);
	return status;
}

int subcommand_run(const struct subcommand *s, int argc, char **argv)
{
	static void *args; /* (for the whole run: main's data may point into it) */
	FILE *msg = refusal_start(s, argc, argv);
	args = calloc(1, s->args_size);
	if (!args) {
		usage_error(msg, "%s: out of memory", s->name);
		return refusal_end(msg, 1);
	}
	enum cli_status r = s->parse(argc, argv, args, msg);
	if (r != CLI_GO)
		return refusal_end(msg, exit_status(r, s->help));
	refusal_end(msg, 0);
	if (s->flags & SUB_STDIO)
		stdio_fill();
	int status = s->main(args);
	return (s->flags & SUB_STOP) ? stop_end(status) : status;
}
