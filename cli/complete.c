/* `socktune --list-options [SUBCOMMAND]`: what the bash completion (completion/socktune.bash)
 * offers, asked of the command itself, so the completion of an installed socktune is that
 * socktune's.  Without SUBCOMMAND: the subcommands, one a line (the rows of subcommands.c,
 * after the wrapper, "run").  With one (run: a program): its options, one a line, "--name"
 * or "--name ARG", then after a tab the values ARG takes when they are a few names.  The
 * policy options come from ST_VARIABLES; a subcommand's own are listed in its row, and
 * t_completion checks each against the parsers and every option of --help against them. */
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "socktune.h"
#include "cli.h"
#include "subcommands.h"

/* The wrapper, "run" here, is no subcommand (socktune run runs run): its options */
static const struct subcommand wrapper = {
	.name = "run",
	.flags = SUB_POLICY,
	.options = (const char *const[]){"--strict", "--attach", "--cgroup", "--cgroup-path PATH",
	                                 "--peer PREFIX", "--print-library", "--help", "--version",
	                                 NULL},
};

/* The names an option's value may be, when they are a few words: the host's own for a
 * congestion control algorithm (those available) and an interface. */
static const char *values_of(const struct st_var *v)
{
	static char buf[1024];
	switch (v->type) {
	case ST_T_NAME: {
		FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_congestion_control", "re");
		int got = f && fgets(buf, sizeof buf, f);
		if (f)
			fclose(f);
		buf[got ? strcspn(buf, "\n") : 0] = '\0';
		return got ? buf : NULL;
	}
	case ST_T_IFNAME: {
		struct if_nameindex *ifs = if_nameindex();
		size_t o = 0;
		buf[0] = '\0';
		for (struct if_nameindex *p = ifs; p && p->if_name; p++)
			if (o + strlen(p->if_name) + 2 < sizeof buf)
				o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", o ? " " : "",
				                      p->if_name);
		if (ifs)
			if_freenameindex(ifs);
		return o ? buf : NULL;
	}
	case ST_T_LOGLEVEL:
		return "off error warn info debug";
	case ST_T_PRECEDENCE:
		return "policy app";
	case ST_T_TOS:
		return "lowdelay throughput reliability lowcost";
	case ST_T_KEEPALIVE:
		return "on off";
	default:
		return NULL;
	}
}

int list_options(FILE *out, const char *sub)
{
	const struct subcommand *s = NULL;
	if (!sub) {
		fprintf(out, "%s\n", wrapper.name);
		for (size_t k = 0; k < n_subcommands; k++)
			fprintf(out, "%s\n", subcommands[k].name);
		return 0;
	}
	s = strcmp(sub, wrapper.name) == 0 ? &wrapper : subcommand_find(sub);
	if (!s) {
		char names[512];
		size_t o = (size_t)snprintf(names, sizeof names, "%s", wrapper.name);
		for (size_t k = 0; k < n_subcommands && o < sizeof names; k++)
			o += (size_t)snprintf(names + o, sizeof names - o, ", %s", subcommands[k].name);
		usage_error(stderr, "--list-options %s: not a subcommand (%s)", sub, names);
		return EXIT_USAGE;
	}
	for (int i = 0; s->options[i]; i++)
		fprintf(out, "%s\n", s->options[i]);
	for (int i = 0; (s->flags & SUB_POLICY) && i < ST_V_COUNT; i++) {
		const struct st_var *v = &st_vars[i];
		if (s->takes && !s->takes(i))
			continue;
		const char *vals = values_of(v);
		fprintf(out, "--%s%s%s%s%s\n", v->option, v->arg[0] ? " " : "", v->arg,
		        vals ? "\t" : "", vals ? vals : "");
		if (v->type == ST_T_BOOL)
			fprintf(out, "--no-%s\n", v->option);
	}
	return 0;
}
