/* What the table-driven unit tests share: a failing case prints its own line, and each
 * group ends with one PASS or FAIL line (counted by tests/run.sh). */
#ifndef ST_UNIT_H
#define ST_UNIT_H

#include <stdio.h>

static int group_failed, failures;

#define CASE_FAIL(...)                     \
	do {                               \
		printf("  case failed: "); \
		printf(__VA_ARGS__);       \
		printf("\n");              \
		group_failed++;            \
	} while (0)

static void end_group(const char *name)
{
	if (group_failed) {
		printf("FAIL %s: %d case(s) failed\n", name, group_failed);
		failures++;
	} else {
		printf("PASS %s\n", name);
	}
	group_failed = 0;
}

#endif
