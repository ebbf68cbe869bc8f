/* socktune revert: the changes of watch --apply's journal undone.  Internal to cli/revert/. */
#ifndef SOCKTUNE_REVERT_H
#define SOCKTUNE_REVERT_H

#include <stdio.h>

#include "cli.h"

struct revert_args {
	const char *journal; /* --journal PATH (NULL: the default, journal.h) */
	const char *which;   /* a change's id, "all", or NULL: list them, change nothing */
};

enum cli_status revert_parse(int argc, char **argv, struct revert_args *a, FILE *msg);
void revert_help(FILE *f);
int revert_main(const struct revert_args *a);

#endif
