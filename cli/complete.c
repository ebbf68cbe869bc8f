/* `socktune --list-options [SUBCOMMAND]`: what the bash completion (completion/socktune.bash)
 * offers, asked of the command itself, so the completion of an installed socktune is that
 * socktune's.  Without SUBCOMMAND: the subcommands, one a line.  With one (run: a program):
 * its options, one a line, "--name" or "--name ARG", then after a tab the values ARG takes
 * when they are a few names.  The policy options come from ST_VARIABLES; the options of the
 * subcommands are listed here, and t_completion checks each against the parsers and
 * every option of --help against this list. */
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "socktune.h"
#include "cli.h"

static const struct sub {
	const char *name;
	int policy;              /* takes the options of ST_VARIABLES */
	int (*takes)(int id);    /* those of them it takes (NULL: all) */
	const char *const *opts;
} subs[] = {
	{"run", 1, NULL, (const char *const[]){"--strict", "--attach", "--cgroup", "--cgroup-path PATH",
	                                      "--peer PREFIX",
	                                      "--print-library", "--help",
	                                      "--version", NULL}},
	{"check", 1, check_takes, (const char *const[]){"--json", "--strict", "--route ADDR", "--cgroup",
	                                               "--peer PREFIX", "--cgroup-path PATH", "--help",
	                                               NULL}},
	{"attach", 1, attach_takes,
	 (const char *const[]){"--json", "--connections", "--follow", "--cgroup", "--cgroup-root",
	                       "--peer PREFIX", "--help", NULL}},
	{"detach", 0, NULL, (const char *const[]){"--json", "--cgroup-root", "--help", NULL}},
	{"stats", 0, NULL, (const char *const[]){"--json", "--format FORMAT\ttable json prometheus",
	                                         "--output PATH", "--watch SECONDS", "--count N",
	                                         "--help", NULL}},
	{"doctor", 0, NULL, (const char *const[]){"--seconds SECONDS", "--json", "--help", NULL}},
	{"watch", 0, NULL, (const char *const[]){"--listen ADDR:PORT", "--textfile PATH",
	                                         "--every SECONDS", "--interval SECONDS",
	                                         "--window SECONDS", "--apply",
	                                         "--apply-netns NETNS\tall", "--journal PATH",
	                                         "--seconds SECONDS", "--help", NULL}},
	{"revert", 0, NULL, (const char *const[]){"--journal PATH", "--help", NULL}},
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
	const struct sub *s = NULL;
	for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
		if (!sub)
			fprintf(out, "%s\n", subs[i].name);
		else if (strcmp(sub, subs[i].name) == 0)
			s = &subs[i];
	}
	if (!sub)
		return 0;
	if (!s) {
		usage_error(stderr, "--list-options %s: not a subcommand (run, check, attach, detach, "
		            "stats, doctor, watch, revert)", sub);
		return EXIT_USAGE;
	}
	for (int i = 0; s->opts[i]; i++)
		fprintf(out, "%s\n", s->opts[i]);
	for (int i = 0; s->policy && i < ST_V_COUNT; i++) {
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
