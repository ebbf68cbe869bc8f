# The fixture of the tests/t_cli*.sh scripts (POSIX sh), sourced right after lib.sh.  Not a
# part of lib.sh: sourcing it does things (it clears SOCKTUNE_* and LD_PRELOAD from the
# environment and compiles PROBE) that only the tests of the command want.
# CMD is the command under test.  PROBE is a tiny program built here with $CC, the
# compiler of the build under test, so that a musl build preloads its musl library into a
# musl program (a musl libsocktune cannot be preloaded into Debian's glibc sh or python3):
#   probe exit N           exit with status N
#   probe env VAR...       print VAR=value for each that is set
#   probe environ          print the whole environment
#   probe pid FILE         write the pid to FILE
#   probe touch FILE       create FILE
#   probe kill             die of SIGTERM
#   probe args ARG...      print the arguments, one a line
#   anything else          exit 0 (e.g. run as a #! interpreter)
CMD=$CLI
CC=${CC:-cc}
for v in $(env | sed -n 's/^\(SOCKTUNE_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset LD_PRELOAD

cat >"$TMP/probe.c" <<'C'
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "exit") && argc > 2)
		return atoi(argv[2]);
	if (!strcmp(m, "env"))
		for (int i = 2; i < argc; i++)
			if (getenv(argv[i]))
				printf("%s=%s\n", argv[i], getenv(argv[i]));
	if (!strcmp(m, "environ"))
		for (char **e = environ; *e; e++)
			puts(*e);
	if ((!strcmp(m, "pid") || !strcmp(m, "touch")) && argc > 2) {
		FILE *f = fopen(argv[2], "w");
		if (!f)
			return 1;
		fprintf(f, "%ld\n", (long)getpid());
		fclose(f);
	}
	if (!strcmp(m, "kill"))
		raise(SIGTERM);
	if (!strcmp(m, "args"))
		for (int i = 2; i < argc; i++)
			puts(argv[i]);
	return 0;
}
C
PROBE=$TMP/probe
if ! $CC -o "$PROBE" "$TMP/probe.c" 2>"$TMP/probe.err"; then
	fail probe_build "$CC: $(head -n 1 "$TMP/probe.err")"
	exit 0
fi
# 1 when the command under test is linked with musl
IS_MUSL=0
grep -q ld-musl "$CMD" 2>/dev/null && IS_MUSL=1
