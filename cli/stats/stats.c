/* socktune stats [--json | --format table|json|prometheus] [--output PATH]
 * [--watch SECONDS [--count N]] FILE...: its arguments, and the watch loop; statsview.c reads
 * and prints a file, statsprom.c writes the Prometheus text, cli/outfile.c replaces --output. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "socktune.h"
#include "socktune_stats.h"
#include "stats/stats.h"
#include "record.h"

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

void stats_help(FILE *f)
{
	fprintf(f,
	        "usage: socktune stats [--watch SECONDS [--count N]] FILE\n"
	        "       socktune stats --json [--watch SECONDS [--count N]] FILE...\n"
	        "       socktune stats --format prometheus [--output PATH] [--watch SECONDS] FILE...\n"
	        "       socktune stats --format prometheus --watch SECONDS 'PATTERN'...\n"
	        "\n"
	        "Reads the statistics file a program under the library writes (--stats PATH,\n"
	        "SOCKTUNE_STATS; %%p in it is the pid): its listeners' counters, live when the\n"
	        "process still runs, and the network namespace's drops.  A FILE that is not a\n"
	        "regular file (a FIFO, a device) is refused at once, never read.\n"
	        "\n"
	        "Options:\n");
	help_entry(f, "--json", "print one JSON document of every FILE (= --format json; with "
	           "--watch one a round, each on one line)", NULL);
	help_entry(f, "--format F", "table (default), json or prometheus (the text exposition "
	           "format; several FILEs)", NULL);
	help_entry(f, "--output PATH", "with --format prometheus: replace PATH whole each time (a new "
	           "file beside it, renamed over it), e.g. for node_exporter's textfile collector",
	           NULL);
	help_entry(f, "--watch SECONDS", "print again every SECONDS seconds, until interrupted; "
	           "with --format prometheus a FILE with * ? [ is a pattern (quoted), matched again "
	           "each round, so a server started later is read; a process that exited is written "
	           "once more (socktune_process_running 0), then left out; a match that is not a "
	           "regular file is left out, said once", NULL);
	help_entry(f, "--count N", "with --watch: N times, then exit", NULL);
	help_entry(f, "--help", "", NULL);
	fprintf(f, "\n"
	           "Exit status: 0; 1 when a file cannot be read as a stats file or the output\n"
	           "cannot be written; 2 for a bad option; 3 when FILE does not exist (prometheus:\n"
	           "when none of the FILEs does); 130 on SIGINT, 143 on SIGTERM (--watch: after\n"
	           "the round being printed; at once while its files are read or while stdout's\n"
	           "reader takes nothing).\n");
}

enum cli_status stats_parse(int argc, char **argv, void *args, FILE *msg)
{
	struct stats_args *s = args;
	char err[160];
	static const char *none[1];
	const char *v;
	memset(s, 0, sizeof *s);
	s->files = argc > 1 ? calloc((size_t)argc, sizeof *s->files) : none;
	if (!s->files)
		return usage_error(msg, "stats: %s", strerror(errno));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--json") == 0) {
			s->format = STATS_JSON;
		} else if (opt_value(argc, argv, &i, "--watch", &v) ||
		           opt_value(argc, argv, &i, "--count", &v)) {
			const char *name = a[2] == 'w' ? "--watch" : "--count";
			if (!v)
				return usage_error(msg, "stats: %s: missing value", name);
			if (st_parse_int(v, 1, 86400, a[2] == 'w' ? &s->every : &s->times, err,
			                 sizeof err) != 0)
				return usage_error(msg, "stats: %s %s: %s", name, v, err);
		} else if (opt_value(argc, argv, &i, "--format", &v)) {
			if (!v)
				return usage_error(msg, "stats: --format: missing value (table, json or "
				                   "prometheus)");
			if (format_arg(s, v, msg) != CLI_GO)
				return CLI_BAD;
		} else if (opt_value(argc, argv, &i, "--output", &v)) {
			if (!v)
				return usage_error(msg, "stats: --output: missing value (PATH)");
			if (!v[0])
				return usage_error(msg, "stats: --output: an empty path");
			s->output = v;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			return CLI_HELP;
		} else if (a[0] == '-' && strcmp(a, "-") != 0) {
			return usage_error(msg, "stats: unknown option %s", a);
		} else {
			s->files[s->nfiles++] = a;
		}
	}
	if (!s->nfiles)
		return usage_error(msg, "stats: which file? (the SOCKTUNE_STATS path, %%p replaced by "
		                   "the pid)");
	if (s->nfiles > 1 && s->format == STATS_TABLE)
		return usage_error(msg, "stats: one FILE only (%s, then %s); several go with --json or "
		                   "--format prometheus", s->files[0], s->files[1]);
	if (s->output && s->format != STATS_PROMETHEUS)
		return usage_error(msg, "stats: --output goes with --format prometheus");
	if (s->times && !s->every)
		return usage_error(msg, "stats: --count goes with --watch");
	return CLI_GO;
}

/* A round's text on stdout.  Written in pieces of at most PIPE_BUF, each once stdout takes
 * it (poll: a pipe then takes the piece without waiting), so a reader that reads nothing
 * keeps the command waiting in ppoll, where the first SIGINT or SIGTERM ends the wait (the
 * signals are blocked from the check of stop_signal to the wait, so one that comes just
 * before it is not lost); what the reader has not taken of the round is dropped and the
 * command ends by the signal.  0, or 1 (said, unless a signal ended it). */
static int put_stdout(const char *text, size_t len)
{
	sigset_t stop, old;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, &old);
	int r = 0;
	while (len && !r) {
		struct pollfd pf = {.fd = STDOUT_FILENO, .events = POLLOUT};
		if (stop_signal) {
			r = 1;
		} else if (ppoll(&pf, 1, NULL, &old) < 0) {
			if (errno != EINTR) {
				fprintf(stderr, "socktune: stats: stdout: poll: %s\n", strerror(errno));
				r = 1;
			}
		} else if (!(pf.revents & POLLOUT) && (pf.revents & POLLNVAL)) {
			fprintf(stderr, "socktune: stats: stdout: %s\n", strerror(EBADF));
			r = 1;
		} else {
			/* (unblocked again for the write: a socket or a terminal may still make it wait,
			 * and a signal then ends it with EINTR) */
			sigprocmask(SIG_SETMASK, &old, NULL);
			ssize_t w = write(STDOUT_FILENO, text, len < PIPE_BUF ? len : PIPE_BUF);
			int e = errno;
			sigprocmask(SIG_BLOCK, &stop, NULL);
			errno = e;
			if (w < 0 && errno != EINTR && errno != EAGAIN) {
				fprintf(stderr, "socktune: stats: stdout: %s\n", strerror(errno));
				r = 1;
			}
			if (w > 0) {
				text += w;
				len -= (size_t)w;
			}
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* A round is made in memory (text_open), then written whole: to stdout by put_stdout, or
 * replacing --output. */
struct text {
	char *p;
	size_t len;
	FILE *f;
};

static FILE *text_open(struct text *t)
{
	t->p = NULL;
	t->len = 0;
	t->f = open_memstream(&t->p, &t->len);
	if (!t->f)
		perror("socktune stats: open_memstream");
	return t->f;
}

/* 0 when the text is whole; 1 (said, t freed) when memory ran out */
static int text_close(struct text *t)
{
	if (fclose(t->f) == 0)
		return 0;
	perror("socktune stats: open_memstream");
	free(t->p);
	return 1;
}

/* The Prometheus text of n files (views[i] NULL: paths[i] could not be read), to stdout or
 * replacing --output; 0, or 1 when it could not be written. */
static int write_round(const struct stats_args *s, const char *const *paths,
                       struct stats_view *const *views, int n)
{
	char err[2 * PATH_MAX + 160];
	struct text t;
	if (!text_open(&t))
		return 1;
	stats_prometheus(t.f, paths, views, n);
	if (text_close(&t) != 0)
		return 1;
	int r = 0;
	if (!s->output) {
		r = put_stdout(t.p, t.len);
	} else if (write_atomic(s->output, t.p, t.len, err, sizeof err) != 0) {
		fprintf(stderr, "socktune stats: --output %s: %s\n", s->output, err);
		r = 1;
	}
	free(t.p);
	return r;
}

/* One round of --format prometheus: every file read, then the text.  A file that cannot be
 * read is said on stderr and shown as unreadable (the others still are: one server gone
 * does not blank the rest).  0; 1 when a file or the output failed; EXIT_NOT_FOUND when no
 * file exists. */
static int prometheus_round(const struct stats_args *s, struct stats_view **views)
{
	int r = 0, missing = 0;
	for (int i = 0; i < s->nfiles; i++) {
		int got = stats_view_load(s->files[i], views[i]);
		missing += got == EXIT_NOT_FOUND;
		r |= got != 0;
	}
	if (missing == s->nfiles)
		r = EXIT_NOT_FOUND;
	if (stop_signal) /* (it came while the files were read: the round is not printed) */
		return r;
	struct stats_view **ok = calloc((size_t)s->nfiles + 1, sizeof *ok);
	if (!ok) {
		perror("socktune stats");
		return 1;
	}
	for (int i = 0; i < s->nfiles; i++)
		ok[i] = views[i]->f ? views[i] : NULL;
	int w = write_round(s, s->files, ok, s->nfiles);
	free(ok);
	return w ? w : r;
}

/* One view per file (~100 KiB each: on the heap), NULL when memory ran out. */
static struct stats_view **new_views(int n)
{
	struct stats_view **views = calloc((size_t)n + 1, sizeof *views);
	for (int i = 0; views && i < n; i++)
		if (!(views[i] = malloc(sizeof *views[i])))
			return NULL; /* (the process ends here: nothing to free) */
	if (!views)
		perror("socktune stats");
	return views;
}

/* One round of --json: every file read, then one document (one line a round under --watch:
 * a stream of documents). */
static int json_round(const struct stats_args *s, struct stats_view **views)
{
	int *status = calloc((size_t)s->nfiles + 1, sizeof *status);
	if (!status) {
		rec_error_json(stdout, "stats", strerror(errno), 1);
		return 1;
	}
	for (int i = 0; i < s->nfiles; i++)
		status[i] = stats_view_load(s->files[i], views[i]);
	struct text t;
	int r = 1;
	if (!stop_signal && text_open(&t)) { /* (a signal while the files were read: not printed) */
		r = stats_json(t.f, s->files, views, status, s->nfiles, s->every != 0);
		if (text_close(&t) != 0) {
			r = 1;
		} else {
			if (put_stdout(t.p, t.len) != 0)
				r = 1;
			free(t.p);
		}
	}
	free(status);
	return r;
}

/* One round of the table: the file read, then its table (on a terminal, the screen cleared
 * first under --watch). */
static int table_round(const struct stats_args *s)
{
	struct text t;
	if (!text_open(&t))
		return 1;
	if (s->every && isatty(STDOUT_FILENO))
		fputs("\033[H\033[2J", t.f);
	int r = stats_table(t.f, s->files[0]);
	if (text_close(&t) != 0)
		return 1;
	if (r == 0 && !stop_signal && put_stdout(t.p, t.len) != 0)
		r = 1;
	free(t.p);
	return r;
}

/* The FILE arguments of one round of --format prometheus --watch: each pattern (a glob,
 * quoted so the shell leaves it) expanded again, so a server started after the exporter is
 * read from its next round; a path without a pattern character stays as given (missing, it
 * is shown unreadable); a path named twice, once. */
struct paths {
	char **p;
	int n, cap;
};

static int paths_add(struct paths *ps, const char *path)
{
	for (int i = 0; i < ps->n; i++)
		if (strcmp(ps->p[i], path) == 0)
			return 0;
	if (ps->n == ps->cap) {
		int cap = ps->cap ? 2 * ps->cap : 16;
		char **p = realloc(ps->p, (size_t)cap * sizeof *p);
		if (!p)
			return -1;
		ps->p = p;
		ps->cap = cap;
	}
	if (!(ps->p[ps->n] = strdup(path)))
		return -1;
	ps->n++;
	return 0;
}

static void paths_clear(struct paths *ps)
{
	for (int i = 0; i < ps->n; i++)
		free(ps->p[i]);
	ps->n = 0;
}

static int paths_has(const struct paths *ps, const char *path)
{
	for (int i = 0; i < ps->n; i++)
		if (strcmp(ps->p[i], path) == 0)
			return 1;
	return 0;
}

/* A pattern's match that is not a regular file (a FIFO, a socket, a directory: something
 * else named like the stats files) is left out, said the first round it is seen (odd holds
 * this round's, said the previous round's); opened, a FIFO would wait for a writer for ever
 * and the exporter with it.  -1 when memory ran out. */
static int expand(const struct stats_args *s, struct paths *ps, struct paths *odd,
                  const struct paths *said)
{
	paths_clear(ps);
	paths_clear(odd);
	for (int i = 0; i < s->nfiles; i++) {
		const char *pat = s->files[i];
		if (!strpbrk(pat, "*?[")) {
			if (paths_add(ps, pat) != 0)
				return -1;
			continue;
		}
		glob_t g;
		int r = glob(pat, 0, NULL, &g);
		for (size_t k = 0; r == 0 && k < g.gl_pathc; k++) {
			const char *path = g.gl_pathv[k], *kind = NULL;
			struct stat st;
			if (stat(path, &st) == 0 && (kind = stats_not_regular(st.st_mode))) {
				if (!paths_has(said, path))
					fprintf(stderr, "socktune stats: %s (matches %s): %s: left out (a "
					        "stats file is a regular file)\n", path, pat, kind);
				if (paths_add(odd, path) != 0)
					r = -1;
			} else if (paths_add(ps, path) != 0) {
				r = -1;
			}
		}
		if (r != GLOB_NOMATCH)
			globfree(&g);
		if (r == -1 || r == GLOB_NOSPACE)
			return -1;
	}
	return 0;
}

/* Processes seen exited: each is written once more (socktune_process_running 0), then its
 * file's series are dropped while the file stays that process's.  By path, pid and start. */
struct gone {
	char *path;
	int64_t pid, started;
	int seen; /* still among this round's files */
};
struct gones {
	struct gone *g;
	int n, cap;
};

/* 1: its exit was written already (leave it out), 0: write it now (and remember it) */
static int exit_said(struct gones *gs, const char *path, const struct st_stats_file *f)
{
	for (int i = 0; i < gs->n; i++)
		if (gs->g[i].pid == f->pid && gs->g[i].started == f->started &&
		    strcmp(gs->g[i].path, path) == 0) {
			gs->g[i].seen = 1;
			return 1;
		}
	if (gs->n == gs->cap) {
		int cap = gs->cap ? 2 * gs->cap : 16;
		struct gone *g = realloc(gs->g, (size_t)cap * sizeof *g);
		if (!g)
			return 0; /* (said again next round: more output, nothing wrong) */
		gs->g = g;
		gs->cap = cap;
	}
	char *copy = strdup(path);
	if (copy)
		gs->g[gs->n++] = (struct gone){copy, f->pid, f->started, 1};
	return 0;
}

/* Those not among this round's files are forgotten (the memory stays bounded). */
static void gones_sweep(struct gones *gs)
{
	int k = 0;
	for (int i = 0; i < gs->n; i++) {
		if (gs->g[i].seen) {
			gs->g[i].seen = 0;
			gs->g[k++] = gs->g[i];
		} else {
			free(gs->g[i].path);
		}
	}
	gs->n = k;
}

static void free_views(struct stats_view **views)
{
	for (int i = 0; views && views[i]; i++)
		free(views[i]);
	free(views);
}

/* --watch: the files of each round, those of processes whose exit was written already left
 * out. */
static int prometheus_watch_round(const struct stats_args *s, struct paths *ps,
                                  struct paths odd[2], struct gones *gs)
{
	struct paths t = odd[0]; /* the previous round's left-out files become "said" */
	odd[0] = odd[1];
	odd[1] = t;
	if (expand(s, ps, &odd[0], &odd[1]) != 0) {
		perror("socktune stats: the FILE patterns");
		return 1;
	}
	struct stats_view **views = new_views(ps->n);
	if (!views)
		return 1;
	int r = 0, missing = 0, k = 0;
	const char **shown = calloc((size_t)ps->n + 1, sizeof *shown);
	struct stats_view **kept = calloc((size_t)ps->n + 1, sizeof *kept);
	if (!shown || !kept) {
		perror("socktune stats");
		free(shown);
		free(kept);
		free_views(views);
		return 1;
	}
	for (int i = 0; i < ps->n; i++) {
		views[i]->f = NULL;
		int got = stats_view_load(ps->p[i], views[i]);
		missing += got == EXIT_NOT_FOUND;
		r |= got != 0;
		if (views[i]->f && !stats_running(views[i]->f) && exit_said(gs, ps->p[i], views[i]->f))
			continue;
		shown[k] = ps->p[i];
		kept[k++] = views[i]->f ? views[i] : NULL;
	}
	gones_sweep(gs);
	if (missing == ps->n)
		r = EXIT_NOT_FOUND;
	int w = stop_signal ? 0 : write_round(s, shown, kept, k); /* (a signal while reading) */
	free(shown);
	free(kept);
	free_views(views);
	return w ? w : r;
}

static int prometheus_main(const struct stats_args *s)
{
	/* A watch goes on when a file or a write fails (the next round may succeed: a server
	 * restarted, space freed); the status says the worst round (no file: EXIT_NOT_FOUND). */
	if (!s->every) {
		struct stats_view **views = new_views(s->nfiles);
		if (!views)
			return 1;
		for (int i = 0; i < s->nfiles; i++)
			views[i]->f = NULL;
		return prometheus_round(s, views);
	}
	struct paths ps = {0}, odd[2] = {{0}, {0}};
	struct gones gs = {0};
	int r = 0;
	for (long long n = 1;; n++) {
		int got = prometheus_watch_round(s, &ps, odd, &gs);
		if (got > r)
			r = got;
		if ((s->times && n >= s->times) || stop_signal)
			return r;
		sleep((unsigned)s->every); /* (a signal ends it early) */
		if (stop_signal)
			return r;
	}
}

int stats_main(void *args)
{
	const struct stats_args *s = args;
	int no_stdout = fcntl(1, F_GETFD) < 0;
	stdio_fill();
	if (no_stdout && !s->output) {
		fprintf(stderr, "socktune: stats: stdout is closed: nowhere to print\n");
		return 1;
	}
	if (s->every) /* the round being printed, then the signal's status; a wait on a file
	               * or on stdout's reader ends at the first signal */
		stop_on_signals_now();
	if (s->format == STATS_PROMETHEUS)
		return prometheus_main(s);
	struct stats_view **views = s->format == STATS_JSON ? new_views(s->nfiles) : NULL;
	if (s->format == STATS_JSON && !views) {
		rec_error_json(stdout, "stats", "out of memory", 1);
		return 1;
	}
	for (long long n = 1;; n++) {
		int r = views ? json_round(s, views) : table_round(s);
		if (r != 0 || !s->every || (s->times && n >= s->times) || stop_signal)
			return r;
		sleep((unsigned)s->every); /* (a signal ends it early) */
		if (stop_signal)
			return r;
	}
}
