/* socktune stats [--json | --format table|json|prometheus] [--output PATH]
 * [--watch SECONDS [--count N]] FILE...: its arguments, and the watch loop; statsview.c reads
 * and prints a file, statsprom.c writes the Prometheus text, outfile.c replaces --output. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_stats.h"
#include "cli.h"

static enum cli_status format_arg(struct stats_args *s, const char *v, FILE *msg)
{
	static const char *const names[] = {"table", "json", "prometheus"};
	for (int k = 0; k < 3; k++)
		if (strcmp(v, names[k]) == 0) {
			s->format = (enum stats_format)k;
			return CLI_GO;
		}
	return usage_error(msg, "stats: --format %s: not a format (table, json or prometheus)", v);
}

enum cli_status stats_parse(int argc, char **argv, struct stats_args *s, FILE *msg)
{
	char err[160];
	memset(s, 0, sizeof *s);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--json") == 0) {
			s->format = STATS_JSON;
		} else if (strcmp(a, "--watch") == 0 || strcmp(a, "--count") == 0) {
			long long *dst = a[2] == 'w' ? &s->every : &s->times;
			if (i + 1 >= argc)
				return usage_error(msg, "stats: %s: missing value", a);
			if (st_parse_int(argv[++i], 1, 86400, dst, err, sizeof err) != 0)
				return usage_error(msg, "stats: %s %s: %s", a, argv[i], err);
		} else if (strcmp(a, "--format") == 0 || strcmp(a, "--output") == 0) {
			if (i + 1 >= argc)
				return usage_error(msg, "stats: %s: missing value (%s)", a,
				                   a[2] == 'f' ? "table, json or prometheus" : "PATH");
			if (a[2] == 'o' && argv[i + 1][0] == '\0')
				return usage_error(msg, "stats: --output: an empty path");
			if (a[2] == 'o')
				s->output = argv[++i];
			else if (format_arg(s, argv[++i], msg) != CLI_GO)
				return CLI_BAD;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			return CLI_HELP;
		} else if (a[0] == '-' && strcmp(a, "-") != 0) {
			return usage_error(msg, "stats: unknown option %s", a);
		} else if (s->nfiles >= STATS_MAX_FILES) {
			return usage_error(msg, "stats: at most %d files", STATS_MAX_FILES);
		} else {
			s->files[s->nfiles++] = a;
		}
	}
	if (!s->nfiles)
		return usage_error(msg, "stats: which file? (the SOCKTUNE_STATS path, %%p replaced by "
		                   "the pid)");
	if (s->nfiles > 1 && s->format != STATS_PROMETHEUS)
		return usage_error(msg, "stats: one FILE only (%s, then %s); several go with --format "
		                   "prometheus", s->files[0], s->files[1]);
	if (s->output && s->format != STATS_PROMETHEUS)
		return usage_error(msg, "stats: --output goes with --format prometheus");
	if (s->times && !s->every)
		return usage_error(msg, "stats: --count goes with --watch");
	return CLI_GO;
}

/* One round of --format prometheus: every file read, then the text, to stdout or replacing
 * --output.  A file that cannot be read is said on stderr and shown as unreadable (the
 * others still are: one server gone does not blank the rest).  0, or 1 when a file or the
 * output failed. */
static int prometheus_round(const struct stats_args *s, struct stats_view **views)
{
	int r = 0;
	for (int i = 0; i < s->nfiles; i++)
		if (stats_view_load(s->files[i], views[i]) != 0)
			r = 1;
	struct stats_view *ok[STATS_MAX_FILES];
	for (int i = 0; i < s->nfiles; i++)
		ok[i] = views[i]->f ? views[i] : NULL;
	if (!s->output) {
		stats_prometheus(stdout, s->files, ok, s->nfiles);
		return fflush(stdout) == 0 ? r : 1;
	}
	char *text = NULL, err[2 * PATH_MAX + 160];
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m) {
		perror("socktune stats: open_memstream");
		return 1;
	}
	stats_prometheus(m, s->files, ok, s->nfiles);
	if (fclose(m) != 0) {
		free(text);
		perror("socktune stats: open_memstream");
		return 1;
	}
	if (write_atomic(s->output, text, len, err, sizeof err) != 0) {
		fprintf(stderr, "socktune stats: --output %s: %s\n", s->output, err);
		r = 1;
	}
	free(text);
	return r;
}

static int prometheus_main(const struct stats_args *s)
{
	static struct stats_view *views[STATS_MAX_FILES];
	for (int i = 0; i < s->nfiles; i++)
		if (!views[i] && !(views[i] = malloc(sizeof *views[i]))) {
			perror("socktune stats");
			return 1;
		}
	/* A watch goes on when a file or a write fails (the next round may succeed: a server
	 * restarted, space freed); the status says whether any round failed. */
	int r = 0;
	for (long long n = 1;; n++) {
		for (int i = 0; i < s->nfiles; i++)
			views[i]->f = NULL;
		r |= prometheus_round(s, views);
		if (!s->every || (s->times && n >= s->times))
			return r;
		sleep((unsigned)s->every);
	}
}

int stats_main(const struct stats_args *s)
{
	if (s->format == STATS_PROMETHEUS)
		return prometheus_main(s);
	for (long long n = 1;; n++) {
		if (s->every && s->format == STATS_TABLE && isatty(STDOUT_FILENO))
			fputs("\033[H\033[2J", stdout);
		int r = st_stats_print(s->files[0], s->format == STATS_JSON);
		if (r != 0 || !s->every || (s->times && n >= s->times))
			return r;
		sleep((unsigned)s->every);
	}
}
