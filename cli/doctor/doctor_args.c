/* socktune doctor's command line: its help and its parser (doctor.c runs the window). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor.h"

void doctor_help(FILE *f)
{
	fprintf(f,
	        "usage: socktune doctor [--seconds N] [--json] [PID...|:PORT...]\n"
	        "\n"
	        "Watches a running server's TCP listeners and connections (all of this network\n"
	        "namespace's, or those of the processes and ports given: a PID in the process's\n"
	        "own network namespace, a :PORT in this one) for N seconds, then says what it\n"
	        "saw (accept queue overflows, stalls on Nagle or a delayed ACK, clamped buffers,\n"
	        "retransmits) and the setting that cures each, as commands that run as printed.\n"
	        "Nothing of the server is changed.  On a terminal, a line on stderr shows the\n"
	        "window's progress.\n"
	        "\n"
	        "Options:\n");
	help_entry(f, "--seconds N", "watch for N seconds (0.1 to 3600; default 5)", NULL);
	help_entry(f, "--json", "print JSON", NULL);
	help_entry(f, "--help", "", NULL);
	fprintf(f, "\n"
	           "Exit status: 0 when nothing worse than information was found; 1 with a warning\n"
	           "or a critical finding; 2 for a bad option; 3 when a target is not found (no\n"
	           "such process, no listener on the port) or nothing can be looked at; 130 on\n"
	           "SIGINT, 143 on SIGTERM, after the report of what was seen so far.\n");
}

enum cli_status doctor_parse(int argc, char **argv, void *args, FILE *msg)
{
	struct shared_window *d = args;
	memset(d, 0, sizeof *d);
	d->seconds = 5;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		struct target t;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			return CLI_HELP;
		if (strcmp(a, "--json") == 0) {
			d->json = 1;
		} else if (opt_value(argc, argv, &i, "--seconds", &v)) {
			char *end;
			double s = v ? strtod(v, &end) : 0;
			if (!v || end == v || *end || !(s >= 0.1 && s <= 3600))
				return usage_error(msg, "doctor --seconds %s: a number of seconds, 0.1 to 3600",
				                   v ? v : "(missing)");
			d->seconds = s;
		} else if (a[0] == '-' && a[1]) {
			return usage_error(msg, "doctor: unknown option %s (--seconds N, --json)", a);
		} else if (d->ntargets == (int)(sizeof d->targets / sizeof *d->targets)) {
			return usage_error(msg, "doctor: at most %zu targets",
			                   sizeof d->targets / sizeof *d->targets);
		} else if (parse_target(a, TARGET_PID | TARGET_PORT, &t) != 0) {
			return usage_error(msg, "doctor %s: not a pid or :PORT (:1 to :65535)", a);
		} else {
			d->targets[d->ntargets++] = a;
		}
	}
	return CLI_GO;
}
