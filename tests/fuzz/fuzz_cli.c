/* The command's argv parsing: parse_args of cli/args.c, linked as the command links it.
 * Its messages go to a stream on /dev/null (fd 2 stays for the sanitizers).  argv: the
 * input's NUL-separated words. */
#include <stdio.h>
#include <stdlib.h>

#include "../../cli/cli.h"
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
	enum cli_status r = parse_args(argc, argv, &c, fuzz_null);
	FUZZ_ASSERT(r == CLI_GO || r == CLI_HELP || r == CLI_VERSION || r == CLI_BAD);
	free(buf);
	return 0;
}
