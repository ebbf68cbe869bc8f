/* The command's argv parsing (parse_args in cli/cli.c, static there): cli.c is included
 * whole, its main renamed, and exit() turned into a jump back here, since parse_args ends a
 * bad command line with exit(2) (and --help, --version with exit(0)).  argv: the input's
 * NUL-separated words. */
#include <setjmp.h>
#include <stdlib.h>

static jmp_buf fuzz_env;
static void fuzz_exit(int status) __attribute__((noreturn));
static void fuzz_exit(int status)
{
	(void)status;
	longjmp(fuzz_env, 1);
}
/* the command's messages and --help go to /dev/null; fd 2 stays for the sanitizers */
#include <stdio.h>
static FILE *fuzz_null;
#define exit(s) fuzz_exit(s)
#define main socktune_main
#undef stdout
#undef stderr
#define stdout fuzz_null
#define stderr fuzz_null
#include "../../cli/cli.c"
#undef stdout
#undef stderr
#undef main
#undef exit

#include "fuzz.h"

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
	if (setjmp(fuzz_env) == 0)
		parse_args(argc, argv, &c);
	free(buf);
	return 0;
}
