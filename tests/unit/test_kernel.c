/* Table-driven tests of the pure rules in common/kernel.c that need no socket: the jiffy from
 * a TCP_DELACK_MAX_US read-back and microsecond rounding at each HZ.  PASS/FAIL per group; a
 * failing case also prints its own line. */
#include <stdio.h>
#include <string.h>

#include "socktune_kernel.h"

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

static void test_hz(void)
{
	/* what getsockopt reports after the first accepted probe value, at each HZ (x86's four,
	 * and 1024: jiffies_to_usecs rounds down, 1953) */
	static const struct { long long asked, back; int rc; long long jiffy, hz; } c[] = {
		{1001, 2000, 0, 1000, 1000},  {3334, 6666, 0, 3333, 300}, {4001, 8000, 0, 4000, 250},
		{10001, 20000, 0, 10000, 100}, {1001, 1953, 0, 976, 1024}, {5000, 8000, 0, 4000, 250},
		{4000, 8000, -1, 0, 0},        {8001, 8000, -1, 0, 0},    {1001, 0, -1, 0, 0},
		{1, 1, -1, 0, 0},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		long long jiffy = 0, hz = 0;
		int rc = st_hz_from_readback(c[i].asked, c[i].back, &jiffy, &hz);
		if (rc != c[i].rc || (rc == 0 && (jiffy != c[i].jiffy || hz != c[i].hz)))
			CASE_FAIL("asked %lld read %lld: rc %d jiffy %lld hz %lld", c[i].asked, c[i].back,
			          rc, jiffy, hz);
	}
	end_group("hz_from_readback");
}

static void test_rounding(void)
{
	static const struct { long long us, hz, want; } c[] = {
		{5000, 250, 8000},    {4001, 250, 8000},    {8000, 250, 8000},  {200000, 250, 200000},
		{5000, 300, 6666},    {9999, 300, 10000},   {1001, 1000, 2000}, {5000, 1000, 5000},
		{5000, 100, 10000},   {10001, 100, 20000},  {5000, 0, 5000},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		long long got = st_us_rounded(c[i].us, c[i].hz);
		if (got != c[i].want)
			CASE_FAIL("%lld us at HZ=%lld: %lld, want %lld", c[i].us, c[i].hz, got, c[i].want);
	}
	static const struct { long long hz, min, max; } r[] = {
		{250, 8000, 200000}, {300, 6666, 200000}, {1000, 2000, 200000}, {100, 20000, 200000},
		{1024, 1953, 199218},
	};
	for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
		if (st_us_min(r[i].hz) != r[i].min || st_us_max(r[i].hz) != r[i].max)
			CASE_FAIL("HZ=%lld: range %lld..%lld", r[i].hz, st_us_min(r[i].hz), st_us_max(r[i].hz));
	char text[120];
	st_us_range_text(4000, 250, text, sizeof text);
	if (strcmp(text, "rounded up to a jiffy: 4000 us (HZ=250), range 8000..200000 us") != 0)
		CASE_FAIL("range text: %s", text);
	end_group("us_rounding");
}

int main(void)
{
	test_hz();
	test_rounding();
	return failures ? 1 : 0;
}
