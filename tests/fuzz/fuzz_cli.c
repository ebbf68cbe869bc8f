/* The command's argv parsing: parse_args of cli/args.c, linked as the command links it (a
 * first word check or attach sets that mode, as their rows of cli/subcommands.c do), and
 * every word read as a target (cli/target.c): what it accepts is in range.  Messages go to a
 * stream on /dev/null (fd 2 stays for the sanitizers).  argv: the input's NUL-separated
 * words. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "fuzz.h"

static FILE *fuzz_null;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!fuzz_null && !(fuzz_null = fopen("/dev/null", "w")))
		abort();
	if (size > FUZZ_MAX)
		size = FUZZ_MAX;
	char *buf = malloc(size + 1);
	if (!buf)
		abort();
	memcpy(buf, data, size);
	buf[size] = '\0';
	char *argv[66];
	int argc = 0;
	argv[argc++] = "socktune";
	for (size_t o = 0; o <= size && argc < 65;) {
		argv[argc++] = buf + o;
		o += strlen(buf + o) + 1;
	}
	argv[argc] = NULL;
	struct cli c;
	memset(&c, 0, sizeof c);
	int shift = 0;
	if (argc > 1 && strcmp(argv[1], "check") == 0)
		shift = c.check = 1;
	else if (argc > 1 && strcmp(argv[1], "attach") == 0)
		shift = c.attach = 1;
	enum cli_status r = parse_args(argc - shift, argv + shift, &c, fuzz_null);
	FUZZ_ASSERT(r == CLI_GO || r == CLI_HELP || r == CLI_VERSION || r == CLI_BAD);
	for (int i = 1; i < argc; i++) {
		struct target t;
		if (parse_target(argv[i], TARGET_PID | TARGET_PORT | TARGET_CGROUP, &t) != 0)
			continue;
		FUZZ_ASSERT(t.kind == TARGET_CGROUP ? strchr(argv[i], '/') != NULL
		            : t.kind == TARGET_PORT ? t.port >= 1 && t.port <= 65535 : t.pid >= 1);
	}
	free(buf);
	return 0;
}
