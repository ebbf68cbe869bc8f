/* The Prometheus text exposition format (version 0.0.4), written once for stats and watch:
 * a family's HELP and TYPE lines, and label values escaped as the format says.  The names
 * are the callers' (their family tables; labels from record.h's key table). */
#ifndef SOCKTUNE_PROMTEXT_H
#define SOCKTUNE_PROMTEXT_H

#include <stdio.h>

/* One metric family: key and scope are the caller's enums (which value, which labels). */
struct prom_family {
	int key;
	int scope;
	const char *name, *type, *help;
};

/* "# HELP name help" and "# TYPE name type" */
void prom_head(FILE *out, const struct prom_family *f);

/* name="value", with a comma before it unless first: backslash, double quote and newline
 * escaped; a byte that starts no valid UTF-8 character written as U+FFFD (the format is
 * UTF-8). */
void prom_label(FILE *out, int first, const char *name, const char *value);

#endif
