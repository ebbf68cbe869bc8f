/* What a subcommand looks at, as a word of its command line: a process (PID), the
 * listeners on a port of this network namespace (:PORT), or a cgroup v2 directory (any word
 * with a '/').  One reader for attach, attach --cgroup, detach, doctor and watch: their
 * parsers refuse what it refuses, and what they do later reads the word the same way. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* s as a decimal number in [1, max], digits only (no sign, no space): 0, or -1 */
static int number(const char *s, unsigned long long max, unsigned long long *out)
{
	if (!*s || s[strspn(s, "0123456789")] != '\0')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < 1 || v > max)
		return -1;
	*out = v;
	return 0;
}

int parse_target(const char *word, unsigned takes, struct target *t)
{
	unsigned long long v;
	memset(t, 0, sizeof *t);
	t->word = word;
	if (word[0] == ':') {
		t->kind = TARGET_PORT;
		if (number(word + 1, 65535, &v) != 0)
			return -1;
		t->port = (unsigned)v;
	} else if (strchr(word, '/')) {
		t->kind = TARGET_CGROUP;
	} else {
		/* pid_max can be raised to 4194304 (PID_MAX_LIMIT); any int is asked of the kernel,
		 * which says "no such process" of one past it */
		t->kind = TARGET_PID;
		if (number(word, INT_MAX, &v) != 0)
			return -1;
		t->pid = (int)v;
	}
	return (takes & t->kind) ? 0 : -1;
}
