/* The socktune command: which of its programs runs (socktune PROGRAM: run.c; check:
 * check.c; attach: attach.c (--cgroup: cgroup/cgattach.c); detach: cgroup/cgattach.c;
 * stats: stats.c; doctor: doctor.c; watch: watch.c; revert: revert.c; --list-options, for the
 * shell's completion: complete.c), and the exit status, which main alone decides. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "socktune.h"
#include "cli.h"
#include "cgroup.h"
#include "doctor.h"
#include "record.h"
#include "revert.h"
#include "watch.h"

static const struct subcommand {
	const char *name;
	void (*help)(FILE *f);
} subs[] = {
	{"check", check_help},
	{"attach", attach_help},
	{"detach", detach_help},
	{"doctor", doctor_help},
	{"stats", stats_help},
	{"watch", watch_help},
	{"revert", revert_help},
};

/* The exit status for what a parser said when it was not CLI_GO; help: whose --help. */
static int exit_status(enum cli_status r, void (*help)(FILE *f))
{
	switch (r) {
	case CLI_HELP:
		help(stdout);
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

/* A first word that is not a subcommand but one typo from one (stat, doctr), or two from
 * one and no program here (dcotr), was meant as the subcommand: refused, with the
 * subcommand and the way to run the program all the same.  One typo is enough, program or
 * not: `socktune stat FILE` would run stat(1) on the file. */
static int subcommand_typo(const char *word)
{
	char path[4096];
	int limit = strlen(word) <= 4 ? 1 : 2;
	for (size_t k = 0; k < sizeof subs / sizeof subs[0]; k++) {
		int d = st_edit_distance(word, subs[k].name);
		if (d > limit || (d == 2 && resolve_program(word, path) == 0))
			continue;
		usage_error(stderr, "%s: not a subcommand (did you mean %s? socktune %s --help); to "
		            "run the program %s: socktune -- %s", word, subs[k].name, subs[k].name, word,
		            word);
		return 1;
	}
	return 0;
}

/* The subcommand of a command line that asks for --json (before any "--"), or NULL: its
 * refusal is a JSON object on stdout too, so a pipeline reads the failure, not nothing. */
static const char *json_command(int argc, char **argv)
{
	static const char *const json_subs[] = {"check", "attach", "detach", "doctor", "stats"};
	const char *sub = NULL;
	for (size_t k = 0; argc > 1 && k < sizeof json_subs / sizeof json_subs[0]; k++)
		if (strcmp(argv[1], json_subs[k]) == 0)
			sub = json_subs[k];
	for (int i = 1; sub && i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--json") == 0)
			return sub;
	return NULL;
}

/* Where a parser writes its refusal: stderr, or under --json a buffer that json_refused
 * writes to stderr and, as an error object, to stdout. */
static struct {
	const char *command;
	char *text;
	size_t len;
} refusal;

static FILE *refusal_stream(int argc, char **argv)
{
	refusal.command = json_command(argc, argv);
	FILE *f = refusal.command ? open_memstream(&refusal.text, &refusal.len) : NULL;
	return f ? f : stderr;
}

static int json_refused(FILE *msg, int status)
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

/* With 0-2 closed, the first socket made takes one, and what is said on stderr goes into it
 * (watch's lines into a sock_diag socket: a message to the kernel).  /dev/null in their place,
 * close-on-exec: a wrapped program still finds them closed, as it was given them. */
static void stdio_fill(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 &&
		    open("/dev/null", (fd ? O_WRONLY : O_RDONLY) | O_CLOEXEC) != fd)
			return;
}

int main(int argc, char **argv)
{
	enum cli_status r;
	FILE *msg = refusal_stream(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--list-options") == 0) /* for the completion */
		return list_options(stdout, argc > 2 ? argv[2] : NULL);
	if (argc == 2 && strcmp(argv[1], "--schema") == 0) { /* the keys of every output */
		rec_print_schema(stdout);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "stats") == 0) {
		struct stats_args s;
		r = stats_parse(argc - 1, argv + 1, &s, msg);
		if (r != CLI_GO)
			return json_refused(msg, exit_status(r, stats_help));
		json_refused(msg, 0);
		int no_stdout = fcntl(1, F_GETFD) < 0;
		stdio_fill();
		if (no_stdout && !s.output) {
			fprintf(stderr, "socktune: stats: stdout is closed: nowhere to print\n");
			return 1;
		}
		return stop_end(stats_main(&s));
	}
	if (argc > 1 && strcmp(argv[1], "doctor") == 0) {
		static struct shared_window d; /* (its tables are large) */
		r = doctor_parse(argc - 1, argv + 1, &d, msg);
		if (r != CLI_GO)
			return json_refused(msg, exit_status(r, doctor_help));
		json_refused(msg, 0);
		return stop_end(doctor_main(&d));
	}
	if (argc > 1 && strcmp(argv[1], "watch") == 0) {
		static struct watch_args a;
		r = watch_parse(argc - 1, argv + 1, &a, msg);
		if (r != CLI_GO)
			return json_refused(msg, exit_status(r, watch_help));
		json_refused(msg, 0);
		stdio_fill();
		return stop_end(watch_main(&a));
	}
	if (argc > 1 && strcmp(argv[1], "revert") == 0) {
		struct revert_args ra;
		r = revert_parse(argc - 1, argv + 1, &ra, msg);
		if (r != CLI_GO)
			return exit_status(r, revert_help);
		return revert_main(&ra);
	}
	if (argc > 1 && strcmp(argv[1], "detach") == 0) {
		struct cg_detach_args d;
		r = cg_detach_parse(argc - 1, argv + 1, &d, msg);
		if (r != CLI_GO)
			return json_refused(msg, exit_status(r, detach_help));
		json_refused(msg, 0);
		stdio_fill();
		return cg_detach_main(&d);
	}
	struct cli c;
	struct st_policy p;
	memset(&c, 0, sizeof c);
	r = parse_args(argc, argv, &c, msg);
	void (*help)(FILE *) = c.check ? check_help : c.attach ? attach_help : run_help;
	if (r == CLI_GO && c.program == argv + 1 && subcommand_typo(argv[1]))
		return EXIT_USAGE;
	if (r == CLI_GO && c.print_library)
		return print_library(argc > 0 ? argv[0] : "socktune");
	if (r == CLI_GO)
		r = build_policy(&c, &p, msg);
	if (r == CLI_GO)
		r = cg_check(&c, &p, msg);
	if (r == CLI_GO && c.attach && !c.cgroup)
		r = attach_check(&c, &p, msg);
	if (r != CLI_GO)
		return json_refused(msg, exit_status(r, help));
	json_refused(msg, 0);
	char path[4096];
	if (c.flag_word && resolve_program(c.flag_word, path) != 0)
		return exit_status(flag_word_error(&c, stderr), help); /* --nodelay 1: no program "1" */
	if (!c.check && !c.attach && congestion_missing(&c, &p))
		return EXIT_USAGE;
	if (c.cgroup)
		stdio_fill();
	if (c.attach && c.cgroup)
		return cg_attach_main(&c, &p);
	if (c.attach) {
		struct attach_args a = {.json = c.json, .connections = c.connections,
		                        .follow = c.follow, .targets = c.program};
		return stop_end(attach_main(&a, &p));
	}
	if (c.cgroup)
		return cgroup_main(&c, &p);
	if (c.supervise)
		return supervise_main(&c, &p);
	return c.check ? check_main(&c, &p) : run_main(&c, &p, argc > 0 ? argv[0] : "socktune");
}
