/* socktune stats [--json] [--watch SECONDS [--count N]] FILE: its arguments, and the watch
 * loop; statsview.c reads and prints the file. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_stats.h"
#include "cli.h"

enum cli_status stats_parse(int argc, char **argv, struct stats_args *s, FILE *msg)
{
	char err[160];
	memset(s, 0, sizeof *s);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--json") == 0) {
			s->json = 1;
		} else if (strcmp(a, "--watch") == 0 || strcmp(a, "--count") == 0) {
			long long *dst = a[2] == 'w' ? &s->every : &s->times;
			if (i + 1 >= argc)
				return usage_error(msg, "stats: %s: missing value", a);
			if (st_parse_int(argv[++i], 1, 86400, dst, err, sizeof err) != 0)
				return usage_error(msg, "stats: %s %s: %s", a, argv[i], err);
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			return CLI_HELP;
		} else if (a[0] == '-' && strcmp(a, "-") != 0) {
			return usage_error(msg, "stats: unknown option %s", a);
		} else if (s->file) {
			return usage_error(msg, "stats: one FILE only (%s, then %s)", s->file, a);
		} else {
			s->file = a;
		}
	}
	if (!s->file)
		return usage_error(msg, "stats: which file? (the SOCKTUNE_STATS path, %%p replaced by "
		                   "the pid)");
	if (s->times && !s->every)
		return usage_error(msg, "stats: --count goes with --watch");
	return CLI_GO;
}

int stats_main(const struct stats_args *s)
{
	for (long long n = 1;; n++) {
		if (s->every && !s->json && isatty(STDOUT_FILENO))
			fputs("\033[H\033[2J", stdout);
		int r = st_stats_print(s->file, s->json);
		if (r != 0 || !s->every || (s->times && n >= s->times))
			return r;
		sleep((unsigned)s->every);
	}
}
