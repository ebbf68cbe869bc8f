/* Table-driven tests of st_sanitize (shim/log.c): what a configuration value, a path or an
 * error text may carry into a logfmt value.  log.c is included whole: the unit tests link
 * policy.c and host.c only, and st_sanitize needs nothing of the library but its file.
 * Prints PASS/FAIL per group; a failing case also prints its own line. */
#include "../../shim/log.c"

struct st_real st_real;
struct st_policy st_policy;
int st_in_vfork_child(void) { return 0; } /* (apply.c's, not linked here) */

static int failures;

struct san_case {
	const char *in;
	size_t n; /* output buffer size */
	const char *want;
};

static void show(const char *label, const char *s)
{
	printf("%s \"", label);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		printf(*c >= 0x20 && *c < 0x7f ? "%c" : "\\x%02x", *c);
	printf("\"");
}

static void run(const char *group, const struct san_case *cases, size_t count)
{
	int bad = 0;
	for (size_t i = 0; i < count; i++) {
		char out[64], inplace[64];
		memset(out, 'Z', sizeof out);
		st_sanitize(cases[i].in, out, cases[i].n);
		/* the same buffer as input and output, as the header allows */
		snprintf(inplace, sizeof inplace, "%s", cases[i].in);
		st_sanitize(inplace, inplace, cases[i].n);
		if (strcmp(out, cases[i].want) != 0 || strcmp(inplace, cases[i].want) != 0) {
			printf("  case failed: ");
			show("in", cases[i].in);
			show(" got", out);
			show(" in place", inplace);
			show(" want", cases[i].want);
			printf("\n");
			bad++;
		}
	}
	if (bad) {
		printf("FAIL %s: %d case(s) failed\n", group, bad);
		failures++;
	} else {
		printf("PASS %s\n", group);
	}
}

static void test_ascii(void)
{
	static const struct san_case cases[] = {
		{"plain", 64, "plain"},
		{"a\"b\\c", 64, "a?b?c"},
		{"tab\there\nnl", 64, "tab?here?nl"},
		{"del\x7f", 64, "del?"},
		{"", 64, ""},
		{"abcdef", 4, "abc"},
		{"abc", 1, ""},
	};
	run("sanitize_ascii", cases, sizeof cases / sizeof cases[0]);
}

static void test_utf8(void)
{
	static const struct san_case cases[] = {
		/* valid multi-byte characters stay */
		{"caf\xc3\xa9", 64, "caf\xc3\xa9"},                /* U+00E9 */
		{"\xe2\x82\xac", 64, "\xe2\x82\xac"},              /* U+20AC */
		{"\xf0\x9f\x98\x80", 64, "\xf0\x9f\x98\x80"},      /* U+1F600 */
		{"\xf4\x8f\xbf\xbf", 64, "\xf4\x8f\xbf\xbf"},      /* U+10FFFF, the last */
		{"\xed\x9f\xbf", 64, "\xed\x9f\xbf"},              /* U+D7FF, below surrogates */
		/* not UTF-8: one '?' per byte that starts no valid character */
		{"x\xff\xfey", 64, "x??y"},
		{"\x80", 64, "?"},                                  /* stray continuation */
		{"\xc3", 64, "?"},                                  /* truncated */
		{"\xc3x", 64, "?x"},
		{"\xe2\x82", 64, "??"},
		{"\xc0\xaf", 64, "??"},                             /* overlong '/' */
		{"\xc1\xbf", 64, "??"},
		{"\xe0\x80\xaf", 64, "???"},                        /* overlong, 3 bytes */
		{"\xf0\x80\x80\xaf", 64, "????"},                   /* overlong, 4 bytes */
		{"\xed\xa0\x80", 64, "???"},                        /* U+D800, a surrogate */
		{"\xed\xbf\xbf", 64, "???"},                        /* U+DFFF */
		{"\xf4\x90\x80\x80", 64, "????"},                   /* past U+10FFFF */
		{"\xf5\x80\x80\x80", 64, "????"},
		{"\xc2\x85", 64, "?"},                              /* U+0085, a C1 control */
		{"\xc2\xa0", 64, "\xc2\xa0"},                       /* U+00A0: not a control */
		/* never half a character at the end of a short buffer */
		{"ab\xc3\xa9", 4, "ab"},
		{"ab\xc3\xa9", 5, "ab\xc3\xa9"},
		{"a\xf0\x9f\x98\x80", 5, "a"},
	};
	run("sanitize_utf8", cases, sizeof cases / sizeof cases[0]);
}

int main(void)
{
	test_ascii();
	test_utf8();
	return failures ? 1 : 0;
}
