/* How every subcommand's --help is laid out: one entry per option (help_entry), and the
 * policy options of the ST_VARIABLES table (help_policy), those a subcommand takes.  Each
 * subcommand writes its own help (run: runhelp.c, check.c, attachargs.c, stats.c,
 * doctor.c) from these two. */
#include <stdio.h>
#include <string.h>

#include "socktune.h"
#include "socktune_opts.h"
#include "cli.h"

/* The name (and argument) in the first HELP_HEAD columns, the text from column HELP_TEXT,
 * wrapped at HELP_WIDTH, then tail (the variable), when there is one, on a line of its own;
 * a name too long for its column has the text on the next line, so a name never runs into
 * its description. */
#define HELP_HEAD 26
#define HELP_TEXT (2 + HELP_HEAD + 1)
#define HELP_WIDTH 79
void help_wrapped(FILE *f, int at, const char *head, const char *text)
{
	int col = fprintf(f, "  %s", head);
	if (col > at - 2) {
		fputc('\n', f);
		col = 0;
	}
	for (const char *w = text; *w;) {
		w += strspn(w, " ");
		size_t len = strcspn(w, " ");
		if (!len)
			break;
		if (col > at && col + 1 + (int)len > HELP_WIDTH) {
			fputc('\n', f);
			col = 0;
		}
		col += col < at ? fprintf(f, "%*s", at - col, "") : fprintf(f, " ");
		col += fprintf(f, "%.*s", (int)len, w);
		w += len;
	}
	fputc('\n', f);
}

void help_entry(FILE *f, const char *head, const char *text, const char *tail)
{
	help_wrapped(f, HELP_TEXT, head, text);
	if (tail && *tail)
		fprintf(f, "%*s%s\n", HELP_TEXT, "", tail);
}

void help_policy(FILE *f, int (*takes)(int id))
{
	fprintf(f, "Options (each sets the SOCKTUNE_* variable shown; given here, it wins over the\n"
	           "environment, and a variable it overrides with another value is said):\n");
	for (int i = 0; i < ST_V_COUNT; i++) {
		if (takes && !takes(i))
			continue;
		const struct st_var *v = &st_vars[i];
		char head[64], text[320], tail[160];
		snprintf(head, sizeof head, "--%s%s%s", v->option, v->arg[0] ? " " : "", v->arg);
		/* the capability comes from the table's needs, the one text the fixes name too */
		const char *needs = st_is_sockopt(i) ? st_sockopts[i].needs : NULL;
		/* a duration's range, as validation words it (the kernel's own for the
		 * microsecond options: less is refused before anything runs) */
		char range[64] = "";
		const char *unit = st_duration_unit(v->type);
		if (unit)
			snprintf(range, sizeof range, "; range %lld%s..%lld%s", v->min, unit, v->max, unit);
		snprintf(text, sizeof text, "%s%s%s%s%s", v->help, range, needs ? " (needs " : "",
		         needs ? needs : "", needs ? ")" : "");
		snprintf(tail, sizeof tail, "[%s; default: %s]", v->env, v->dflt);
		help_entry(f, head, text, tail);
	}
	fprintf(f,
	        "\n"
	        "Flags (options without an argument above) also take --FLAG=VALUE (1/0, yes/no,\n"
	        "on/off, true/false; after '=': in --nodelay 1, the 1 is the next argument) and\n"
	        "--no-FLAG (= 0).  Any option also takes --OPTION=VALUE.\n");
}
