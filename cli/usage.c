/* What every subcommand's parser and the dispatcher share, with nothing of the wrapper's
 * parser (args.c) behind it: the one-line refusal (usage_error), an option's value given as
 * `--opt=V` or `--opt V` alike (opt_value), the status of a command line that asked for
 * --help or --version (exit_status), and the standard descriptors filled when the command
 * was started without them (stdio_fill). */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "socktune.h"
#include "cli.h"

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

int opt_value(int argc, char **argv, int *i, const char *name, const char **val)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*val = a[n + 1] ? a + n + 1 : NULL; /* --opt= gives no value */
		return 1;
	}
	if (a[n] != '\0')
		return 0; /* another option that begins with this one's name */
	/* the next word, unless it is another option (--journal --help): then no value was given,
	 * and the option after is left for what it is */
	*val = *i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0 ? argv[++*i] : NULL;
	return 1;
}

int exit_status(enum cli_status r, void (*help)(FILE *f))
{
	switch (r) {
	case CLI_HELP:
		help(stdout);
		return 0;
	case CLI_VERSION:
		printf("socktune %s\n", ST_VERSION);
		return 0;
	case CLI_GO:
	case CLI_BAD:
		break;
	}
	return EXIT_USAGE;
}

/* With 0-2 closed, the first socket made takes one, and what is said on stderr goes into it
 * (watch's lines into a sock_diag socket: a message to the kernel).  /dev/null in their place,
 * close-on-exec: a wrapped program still finds them closed, as it was given them. */
void stdio_fill(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 &&
		    open("/dev/null", (fd ? O_WRONLY : O_RDONLY) | O_CLOEXEC) != fd)
			return;
}
