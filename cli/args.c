/* The command line: its parser, --help, and the policy the program will run with.  The
 * options are the ST_VARIABLES table of socktune.h, every value parsed by policy.c, the code
 * the library itself runs; nothing here exits (each parser returns a status to main). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "socktune.h"
#include "cli.h"

extern char **environ;

/* One line, "socktune: " and the message, on f.  Returns CLI_BAD, so that a parser says
 * `return usage_error(msg, ...)`. */
enum cli_status usage_error(FILE *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("socktune: ", f);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	va_end(ap);
	return CLI_BAD;
}

/* One option in --help: its name (and argument) in the first HELP_HEAD columns, the text
 * from column HELP_TEXT, wrapped at HELP_WIDTH, then tail (the variable) on a line of its
 * own; a name too long for its column has the text on the next line, so a name never runs
 * into its description. */
#define HELP_HEAD 26
#define HELP_TEXT (2 + HELP_HEAD + 1)
#define HELP_WIDTH 79
static void help_entry(FILE *f, const char *head, const char *text, const char *tail)
{
	int col = fprintf(f, "  %s", head);
	if (col > HELP_TEXT - 2) {
		fputc('\n', f);
		col = 0;
	}
	for (const char *w = text; *w;) {
		w += strspn(w, " ");
		size_t len = strcspn(w, " ");
		if (!len)
			break;
		if (col > HELP_TEXT && col + 1 + (int)len > HELP_WIDTH) {
			fputc('\n', f);
			col = 0;
		}
		col += col < HELP_TEXT ? fprintf(f, "%*s", HELP_TEXT - col, "") : fprintf(f, " ");
		col += fprintf(f, "%.*s", (int)len, w);
		w += len;
	}
	fprintf(f, "\n%*s%s\n", HELP_TEXT, "", tail);
}

void usage(FILE *f)
{
	fprintf(f,
	        "usage: socktune [OPTIONS] [--] PROGRAM [ARGS...]\n"
	        "       socktune check [OPTIONS] [--json] [--strict] [--route ADDR]...\n"
	        "       socktune attach [OPTIONS] [--connections] [--follow] [--json] PID...|:PORT...\n"
	        "       socktune stats [--json] [--watch SECONDS [--count N]] FILE\n"
	        "       socktune stats --format prometheus [--output PATH] [--watch SECONDS] FILE...\n"
	        "       socktune doctor [--seconds N] [--json] [PID...|:PORT...]\n"
	        "\n"
	        "Runs PROGRAM in place (same pid, its exit status) with libsocktune preloaded, which\n"
	        "tunes its TCP listeners and logs what the kernel applied.  'check' shows what this\n"
	        "host will grant for the same options, and why.  'doctor' watches a running server's\n"
	        "listeners and connections and names the setting that cures what it saw.\n"
	        "\n"
	        "Options (each sets the SOCKTUNE_* variable shown; given here, it wins over the\n"
	        "environment):\n");
	for (int i = 0; i < ST_V_COUNT; i++) {
		const struct st_var *v = &st_vars[i];
		char head[64], text[320], tail[160];
		snprintf(head, sizeof head, "--%s%s%s", v->option, v->arg[0] ? " " : "", v->arg);
		/* the capability comes from the table's needs, the one text the fixes name too */
		const char *needs = st_is_sockopt(i) ? st_sockopts[i].needs : NULL;
		snprintf(text, sizeof text, "%s%s%s%s", v->help, needs ? " (needs " : "",
		         needs ? needs : "", needs ? ")" : "");
		snprintf(tail, sizeof tail, "[%s; default: %s]", v->env, v->dflt);
		help_entry(f, head, text, tail);
	}
	fprintf(f,
	        "\n"
	        "Flags (options without an argument above) also take --FLAG=VALUE (1/0, yes/no,\n"
	        "on/off, true/false; after '=': --nodelay 1 would run a program named 1) and\n"
	        "--no-FLAG (= 0).  Any option also takes --OPTION=VALUE.\n"
	        "\n"
	        "Command options:\n"
	        "  --strict     run: refuse (status 2) a program LD_PRELOAD cannot reach (statically\n"
	        "               linked, Go, setuid/setgid or file capabilities) instead of warning;\n"
	        "               check: exit 1 unless every configured value takes effect in full\n"
	        "  --json       check, stats, attach, doctor: print JSON\n"
	        "  --seconds N  doctor: watch for N seconds (default 5), then say what was seen\n"
	        "               and which setting cures it; exit 1 with findings\n"
	        "  --connections  attach: also tune the established TCP connections (the options\n"
	        "               that matter on a connection; quick-ack is in-process only)\n"
	        "  --attach     run: start PROGRAM as a child and tune its listeners from outside\n"
	        "               (for a static or Go program; the wrapper stays as its init)\n"
	        "  --follow     attach: keep going, tuning sockets as they appear (every 100 ms),\n"
	        "               until the processes exit or an interrupt\n"
	        "  --route ADDR  check: the route this host sends to ADDR by (IPv4 or IPv6; up to\n"
	        "               %d) and whether it has quickack 1, with the ip route change that adds\n"
	        "               it\n"
	        "  --watch S    stats: print again every S seconds (--count N times; default: until\n"
	        "               interrupted)\n"
	        "  --format F   stats: table (default), json (= --json) or prometheus (the text\n"
	        "               exposition format; several FILEs)\n"
	        "  --output PATH  stats --format prometheus: replace PATH whole each time (a new file\n"
	        "               beside it, renamed over it), e.g. for node_exporter's textfile collector\n"
	        "  --help, --version\n"
	        "\n"
	        "Options end at '--' or at the first argument that is not an option.  To run a\n"
	        "program named 'check': socktune -- check.\n"
	        "\n"
	        "Environment: SOCKTUNE_* as above; %s=PATH to use that library instead of the\n"
	        "one next to the command (./libsocktune.so, then %s/libsocktune.so).\n"
	        "\n"
	        "Exit status: the program's; 2 for a bad option or value (the program is not\n"
	        "started); 126 when the program cannot be executed, 127 when it is not found.\n",
	        CLI_MAX_ROUTES, ST_ENV_LIBRARY, ST_LIBDIR_FROM_BIN);
}

/* check --route ADDR: an address literal (a name would be resolved, perhaps to another
 * address than the clients'), at most CLI_MAX_ROUTES of them. */
static enum cli_status route_arg(struct cli *c, const char *val, FILE *msg)
{
	unsigned char b[sizeof(struct in6_addr)];
	if (!c->check)
		return usage_error(msg, "--route: only for 'socktune check'");
	if (!val)
		return usage_error(msg, "--route: missing value (ADDR: an IPv4 or IPv6 address)");
	if (inet_pton(AF_INET, val, b) != 1 && inet_pton(AF_INET6, val, b) != 1)
		return usage_error(msg, "--route %s: not an IPv4 or IPv6 address (a literal: 127.0.0.1, ::1)",
		                   val);
	if (c->nroutes >= CLI_MAX_ROUTES)
		return usage_error(msg, "--route %s: at most %d addresses", val, CLI_MAX_ROUTES);
	c->route[c->nroutes++] = val;
	return CLI_GO;
}

static int is_bool_word(const char *s)
{
	long long v;
	char err[80];
	return st_parse_bool(s, &v, err, sizeof err) == 0;
}

enum cli_status flag_word_error(const struct cli *c, FILE *msg)
{
	long long on = 1;
	char err[80];
	const char *opt = c->flag_opt + 2; /* "nodelay" or "no-nodelay" */
	int negated = strncmp(opt, "no-", 3) == 0 && st_var_by_option(opt) < 0;
	st_parse_bool(c->flag_word, &on, err, sizeof err);
	const char *as = c->check    ? "an argument (check takes none)"
	                 : c->attach ? "a target (pid 1)"
	                             : "the program";
	if (negated)
		return usage_error(msg, "--%s %s: '%s' would be %s; --%s takes no value (write just "
		                   "--%s)", opt, c->flag_word, c->flag_word, as, opt, opt);
	return usage_error(msg, "--%s %s: '%s' would be %s; a flag takes its value after '=': "
	                   "--%s=%s, or just --%s%s", opt, c->flag_word, c->flag_word, as, opt,
	                   c->flag_word, on ? "" : "no-", opt);
}

/* Parse argv into c.  Every value is checked by st_policy_set, the library's parser; what
 * it refuses is one line on msg and CLI_BAD.  The command turns each option into the
 * SOCKTUNE_* variable it mirrors (build_policy), then validates the environment the program
 * will see exactly as the library will read it, so they cannot disagree. */
enum cli_status parse_args(int argc, char **argv, struct cli *c, FILE *msg)
{
	int i = 1;
	if (i < argc && strcmp(argv[i], "check") == 0) {
		c->check = 1;
		i++;
	} else if (i < argc && strcmp(argv[i], "attach") == 0) {
		c->attach = 1;
		i++;
	}
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break; /* the program */
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			return CLI_HELP;
		if (strcmp(a, "--version") == 0)
			return CLI_VERSION;
		if (strcmp(a, "--strict") == 0) {
			c->strict = 1;
			continue;
		}
		if (strcmp(a, "--attach") == 0) {
			if (c->check || c->attach)
				return usage_error(msg, "--attach: only for running a program");
			c->supervise = 1;
			continue;
		}
		if (strcmp(a, "--json") == 0) {
			if (!c->check && !c->attach)
				return usage_error(msg, "--json: only for 'socktune check' and 'socktune attach'");
			c->json = 1;
			continue;
		}
		if (strcmp(a, "--connections") == 0 || strcmp(a, "--follow") == 0) {
			if (!c->attach)
				return usage_error(msg, "%s: only for 'socktune attach'", a);
			if (a[2] == 'c')
				c->connections = 1;
			else
				c->follow = 1;
			continue;
		}
		if (strcmp(a, "--route") == 0 || strncmp(a, "--route=", 8) == 0) {
			if (route_arg(c, a[7] == '=' ? a + 8 : i + 1 < argc ? argv[++i] : NULL, msg) != CLI_GO)
				return CLI_BAD;
			continue;
		}
		if (a[1] != '-')
			return usage_error(msg, "unknown option %s (see socktune --help)", a);

		const char *name = a + 2;
		const char *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		char key[64];
		if (len == 0 || len >= sizeof key)
			return usage_error(msg, "unknown option %s (see socktune --help)", a);
		memcpy(key, name, len);
		key[len] = '\0';

		int id = st_var_by_option(key), negated = 0;
		if (id < 0 && strncmp(key, "no-", 3) == 0) {
			id = st_var_by_option(key + 3);
			if (id >= 0 && st_vars[id].type != ST_T_BOOL)
				id = -1;
			negated = id >= 0;
		}
		if (id < 0) {
			const char *near = st_var_suggest(key, 0);
			if (!near && strncmp(key, "no-", 3) == 0 && (near = st_var_suggest(key + 3, 0)) &&
			    st_vars[st_var_by_option(near)].type == ST_T_BOOL)
				return usage_error(msg, "unknown option --%s (did you mean --no-%s? see "
				                   "socktune --help)", key, near);
			if (near)
				return usage_error(msg, "unknown option --%s (did you mean --%s? see "
				                   "socktune --help)", key, near);
			return usage_error(msg, "unknown option --%s (see socktune --help)", key);
		}

		const char *val;
		if (negated) {
			if (eq)
				return usage_error(msg, "%s: --no-%s takes no value", a, key + 3);
			val = "0";
			if (i + 1 < argc && is_bool_word(argv[i + 1]))
				c->flag_at = i;
		} else if (st_vars[id].type == ST_T_BOOL) {
			val = eq ? eq + 1 : "1";
			if (!eq && i + 1 < argc && is_bool_word(argv[i + 1])) {
				c->flag_at = i; /* judged below, once it is known what comes next */
			}
		} else if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			return usage_error(msg, "--%s: missing value (%s)", key, st_vars[id].arg);
		}

		struct st_policy scratch;
		char err[200];
		memset(&scratch, 0, sizeof scratch);
		if (st_policy_set(&scratch, (enum st_var_id)id, val, err, sizeof err) != 0)
			return usage_error(msg, "--%s %s: %s", negated ? key + 3 : key, val, err);
		c->given[id] = val;
	}
	c->program = i < argc ? argv + i : NULL;
	if (c->flag_at && c->program && c->program == argv + c->flag_at + 1) {
		/* --nodelay 1 -- true: "1" is the program.  Refused when what follows shows a value
		 * was meant: "--", other arguments (true and false ignore them, yes prints them
		 * forever), or check (which runs nothing); alone, run.c refuses it unless it is a
		 * program (socktune --nodelay true runs true). */
		c->flag_word = c->program[0];
		c->flag_opt = argv[c->flag_at];
		/* attach --nodelay 1 PID: pid 1 would be tuned too; attach --nodelay 1 alone is
		 * pid 1, a container's server */
		if (c->check || c->program[1])
			return flag_word_error(c, msg);
		if (c->attach)
			c->flag_word = NULL;
	}
	if (c->attach && !c->program)
		return usage_error(msg, "attach: which process? (PID... or :PORT...)");
	if (c->check && c->program)
		return usage_error(msg, "check: unexpected argument %s (check runs no program)",
		                   c->program[0]);
	return CLI_GO;
}

struct env_errors {
	FILE *msg;
	int n;
};

static void on_env_error(void *ctx, const char *name, const char *value, const char *msg)
{
	struct env_errors *e = ctx;
	e->n++;
	usage_error(e->msg, "%s=%s: %s", name, value, msg);
}

/* Put the command-line values into the environment, then read the whole environment the
 * way the library will: a bad SOCKTUNE_* value there stops us before anything runs (each
 * one a line on msg, then CLI_BAD).  A bad variable that an option replaces is gone, so it
 * is not an error. */
enum cli_status build_policy(const struct cli *c, struct st_policy *p, FILE *msg)
{
	for (int i = 0; i < ST_V_COUNT; i++)
		if (c->given[i] && setenv(st_vars[i].env, c->given[i], 1) != 0)
			return usage_error(msg, "%s: %s", st_vars[i].env, strerror(errno));
	struct env_errors e = {msg, 0};
	memset(p, 0, sizeof *p);
	st_policy_from_env(p, environ, on_env_error, &e);
	return e.n ? CLI_BAD : CLI_GO;
}
