/* The subcommands of socktune, one row each (subcommands.c): the one list that the
 * dispatch, the did-you-mean, the JSON refusal, the top-level help and --list-options (the
 * bash completion) read.  A subcommand is its folder under cli/ and its row. */
#ifndef SOCKTUNE_SUBCOMMANDS_H
#define SOCKTUNE_SUBCOMMANDS_H

#include <stddef.h>
#include <stdio.h>

#include "cli.h"

enum {
	SUB_JSON = 1,   /* takes --json: a refusal is an error object on stdout too */
	SUB_POLICY = 2, /* takes the policy options (ST_VARIABLES, those takes() says) */
	SUB_STDIO = 4,  /* closed descriptors 0-2 are put on /dev/null before main */
	SUB_STOP = 8,   /* main may end on SIGINT or SIGTERM: the command then ends by it */
};

struct subcommand {
	const char *name;
	const char *summary; /* its line in socktune --help */
	void (*help)(FILE *f);
	/* argv[0] is the name; args is args_size bytes of zeros to fill.  A status, never an
	 * exit: what it refuses is one line on msg. */
	enum cli_status (*parse)(int argc, char **argv, void *args, FILE *msg);
	int (*main)(void *args); /* the exit status */
	size_t args_size;
	unsigned flags;
	/* socktune --list-options NAME: "--name", "--name ARG", then after a tab the values
	 * ARG takes when they are a few words; NULL-terminated */
	const char *const *options;
	int (*takes)(int id); /* SUB_POLICY: which of them (NULL: all) */
};

extern const struct subcommand subcommands[];
extern const size_t n_subcommands;

const struct subcommand *subcommand_find(const char *name);
/* argv[0] the subcommand's name: its parse, then its main; the command's status */
int subcommand_run(const struct subcommand *s, int argc, char **argv);
/* 1, with the refusal said, when word is not a subcommand but was meant as one */
int subcommand_typo(const char *word);

#endif
