/* Table-driven tests of every parser in common/policy.c: good input, bad input, edges.
 * Prints PASS/FAIL per case group; a failing case also prints its own line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "socktune.h"

#include "unit.h"

#define OK 0
#define BAD -1

struct num_case {
	const char *in;
	long long min, max;
	int rc;
	long long want;
};

static void test_size(void)
{
	static const struct num_case cases[] = {
		{"1", 1, 1073741824, OK, 1},
		{"4096", 1, 1073741824, OK, 4096},
		{"16m", 1, 1073741824, OK, 16LL << 20},
		{"16M", 1, 1073741824, OK, 16LL << 20},
		{"64k", 1, 1073741824, OK, 64LL << 10},
		{"64K", 1, 1073741824, OK, 65536},
		{"1G", 1, 1073741824, OK, 1LL << 30},
		{"1g", 1, 1073741824, OK, 1LL << 30},
		{"1073741824", 1, 1073741824, OK, 1073741824},
		{"007", 1, 1073741824, OK, 7},
		{"2G", 1, 1073741824, BAD, 0},
		{"1073741825", 1, 1073741824, BAD, 0},
		{"1048577K", 1, 1073741824, BAD, 0},
		{"99999999999999999999G", 1, 1073741824, BAD, 0},
		{"99999999999999999999", 1, 1073741824, BAD, 0},
		{"17179869184G", 1, 1LL << 62, BAD, 0}, /* 2^34 << 30 wraps a 64-bit value */
		{"18446744073709551615", 1, 1073741824, BAD, 0},
		{"0", 1, 1073741824, BAD, 0},
		{"0K", 1, 1073741824, BAD, 0},
		{"", 1, 1073741824, BAD, 0},
		{"-1", 1, 1073741824, BAD, 0},
		{"-16M", 1, 1073741824, BAD, 0},
		{"-99999999999999999999", 1, 1073741824, BAD, 0}, /* too large and negative (fuzz) */
		{"-99999999999999999999K", 1, 1073741824, BAD, 0},
		{"+16", 1, 1073741824, BAD, 0},
		{" 16", 1, 1073741824, BAD, 0},
		{"16 ", 1, 1073741824, BAD, 0},
		{"16MB", 1, 1073741824, BAD, 0},
		{"16KiB", 1, 1073741824, BAD, 0},
		{"16T", 1, 1073741824, BAD, 0},
		{"M", 1, 1073741824, BAD, 0},
		{"1.5M", 1, 1073741824, BAD, 0},
		{"0x10", 1, 1073741824, BAD, 0},
		{"abc", 1, 1073741824, BAD, 0},
		{"4k", 8192, 1073741824, BAD, 0}, /* below min after the suffix */
		{"8k", 8192, 1073741824, OK, 8192},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct num_case *c = &cases[i];
		long long out = -12345;
		char err[160] = "";
		int rc = st_parse_size(c->in, c->min, c->max, &out, err, sizeof err);
		if (rc != c->rc)
			CASE_FAIL("st_parse_size(\"%s\") = %d (out %lld), want %d", c->in, rc, out, c->rc);
		else if (rc == OK && out != c->want)
			CASE_FAIL("st_parse_size(\"%s\") -> %lld, want %lld", c->in, out, c->want);
		else if (rc == BAD && err[0] == '\0')
			CASE_FAIL("st_parse_size(\"%s\") failed without a message", c->in);
		else if (rc == BAD && out != -12345)
			CASE_FAIL("st_parse_size(\"%s\") failed but wrote its output", c->in);
	}
	end_group("parse_size");
}

static void test_int(void)
{
	static const struct num_case cases[] = {
		{"1", 1, 2147483647, OK, 1},
		{"4096", 1, 2147483647, OK, 4096},
		{"2147483647", 1, 2147483647, OK, 2147483647},
		{"2147483648", 1, 2147483647, BAD, 0},
		{"99999999999999999999", 1, 2147483647, BAD, 0},
		{"18446744073709551615", 1, 2147483647, BAD, 0},
		{"9223372036854775808", 1, 9223372036854775807LL, BAD, 0},
		{"0", 1, 2147483647, BAD, 0},
		{"0", 0, 4, OK, 0},
		{"5", 0, 4, BAD, 0},
		{"-1", 1, 2147483647, BAD, 0},
		{"-99999999999999999999", 1, 2147483647, BAD, 0}, /* fuzz: *end was left unset */
		{"-777777777777777777777-4", 1, 2147483647, BAD, 0},
		{"-5", -10, 10, BAD, 0}, /* documented: digits only */
		{"", 1, 2147483647, BAD, 0},
		{"12a", 1, 2147483647, BAD, 0},
		{"1k", 1, 2147483647, BAD, 0},
		{" 1", 1, 2147483647, BAD, 0},
		{"1 ", 1, 2147483647, BAD, 0},
		{"+1", 1, 2147483647, BAD, 0},
		{"0x10", 1, 2147483647, BAD, 0},
		{"00012", 1, 2147483647, OK, 12},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct num_case *c = &cases[i];
		long long out = -12345;
		char err[160] = "";
		int rc = st_parse_int(c->in, c->min, c->max, &out, err, sizeof err);
		if (rc != c->rc)
			CASE_FAIL("st_parse_int(\"%s\", %lld..%lld) = %d (out %lld), want %d", c->in,
			          c->min, c->max, rc, out, c->rc);
		else if (rc == OK && out != c->want)
			CASE_FAIL("st_parse_int(\"%s\") -> %lld, want %lld", c->in, out, c->want);
		else if (rc == BAD && err[0] == '\0')
			CASE_FAIL("st_parse_int(\"%s\") failed without a message", c->in);
		else if (rc == BAD && out != -12345)
			CASE_FAIL("st_parse_int(\"%s\") failed but wrote its output", c->in);
	}
	/* the message says why */
	char err[160];
	long long out;
	st_parse_int("2147483648", 1, 2147483647, &out, err, sizeof err);
	if (!strstr(err, "range"))
		CASE_FAIL("out-of-range message \"%s\" does not say range", err);
	st_parse_int("12a", 1, 2147483647, &out, err, sizeof err);
	if (!strstr(err, "number"))
		CASE_FAIL("not-a-number message \"%s\" does not say number", err);
	/* a tiny buffer is never overrun */
	char tiny[4] = {'x', 'x', 'x', 'x'};
	st_parse_int("bad", 1, 2, &out, tiny, 3);
	if (tiny[3] != 'x' || tiny[2] != '\0')
		CASE_FAIL("message overran a 3-byte buffer");
	end_group("parse_int");
}

struct str_case {
	const char *in;
	int rc;
	long long want;
};

static void test_bool(void)
{
	static const struct str_case cases[] = {
		{"1", OK, 1},     {"0", OK, 0},      {"yes", OK, 1},   {"no", OK, 0},
		{"on", OK, 1},    {"off", OK, 0},    {"true", OK, 1},  {"false", OK, 0},
		{"YES", OK, 1},   {"Off", OK, 0},    {"TRUE", OK, 1},  {"False", OK, 0},
		{"", BAD, 0},     {"2", BAD, 0},     {"-1", BAD, 0},   {"y", BAD, 0},
		{"n", BAD, 0},    {"yes ", BAD, 0},  {" on", BAD, 0},  {"enable", BAD, 0},
		{"01", BAD, 0},   {"truex", BAD, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct str_case *c = &cases[i];
		long long out = -12345;
		char err[160] = "";
		int rc = st_parse_bool(c->in, &out, err, sizeof err);
		if (rc != c->rc)
			CASE_FAIL("st_parse_bool(\"%s\") = %d, want %d", c->in, rc, c->rc);
		else if (rc == OK && out != c->want)
			CASE_FAIL("st_parse_bool(\"%s\") -> %lld, want %lld", c->in, out, c->want);
		else if (rc == BAD && (err[0] == '\0' || out != -12345))
			CASE_FAIL("st_parse_bool(\"%s\") failed without a message or wrote output", c->in);
	}
	end_group("parse_bool");
}

static void test_log_level(void)
{
	static const struct str_case cases[] = {
		{"off", OK, ST_LOG_OFF},     {"error", OK, ST_LOG_ERROR}, {"warn", OK, ST_LOG_WARN},
		{"info", OK, ST_LOG_INFO},   {"debug", OK, ST_LOG_DEBUG}, {"DEBUG", OK, ST_LOG_DEBUG},
		{"Warn", OK, ST_LOG_WARN},   {"", BAD, 0},                {"warning", BAD, 0},
		{"3", BAD, 0},               {"trace", BAD, 0},           {"info ", BAD, 0},
		{"none", BAD, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct str_case *c = &cases[i];
		long long out = -12345;
		char err[160] = "";
		int rc = st_parse_log_level(c->in, &out, err, sizeof err);
		if (rc != c->rc)
			CASE_FAIL("st_parse_log_level(\"%s\") = %d, want %d", c->in, rc, c->rc);
		else if (rc == OK && out != c->want)
			CASE_FAIL("st_parse_log_level(\"%s\") -> %lld, want %lld", c->in, out, c->want);
		else if (rc == BAD && (err[0] == '\0' || out != -12345))
			CASE_FAIL("st_parse_log_level(\"%s\") failed without a message or wrote output",
			          c->in);
	}
	end_group("parse_log_level");
}

static int count_ports(const uint64_t *bits)
{
	int n = 0;
	for (int i = 0; i < ST_PORTS_WORDS; i++)
		n += __builtin_popcountll(bits[i]);
	return n;
}

static int port_in(const uint64_t *bits, unsigned port)
{
	return port < 65536 && ((bits[port / 64] >> (port % 64)) & 1);
}

struct ports_case {
	const char *in;
	int rc;
	int count;           /* ports set */
	unsigned in1, in2;   /* two ports that must be in (0: none) */
	unsigned out1, out2; /* two ports that must not be in (0: none) */
};

static void test_ports(void)
{
	static const struct ports_case cases[] = {
		{"80", OK, 1, 80, 80, 81, 79},
		{"80,443", OK, 2, 80, 443, 81, 442},
		{"80,443,8000-8099", OK, 102, 8000, 8099, 7999, 8100},
		{"8000-8099", OK, 100, 8000, 8050, 8100, 7999},
		{"1", OK, 1, 1, 1, 2, 0},
		{"65535", OK, 1, 65535, 65535, 65534, 0},
		{"1-65535", OK, 65535, 1, 65535, 0, 0},
		{"5-5", OK, 1, 5, 5, 4, 6},
		{"80,80", OK, 1, 80, 80, 81, 0},
		{"8080-8090,8085", OK, 11, 8080, 8090, 8091, 8079},
		{"0", BAD, 0, 0, 0, 0, 0},
		{"65536", BAD, 0, 0, 0, 0, 0},
		{"99999999999999999999", BAD, 0, 0, 0, 0, 0},
		{"9-3", BAD, 0, 0, 0, 0, 0},
		{"0-10", BAD, 0, 0, 0, 0, 0},
		{"10-65536", BAD, 0, 0, 0, 0, 0},
		{"", BAD, 0, 0, 0, 0, 0},
		{",", BAD, 0, 0, 0, 0, 0},
		{"80,", BAD, 0, 0, 0, 0, 0},
		{",80", BAD, 0, 0, 0, 0, 0},
		{"80,,443", BAD, 0, 0, 0, 0, 0},
		{"80-", BAD, 0, 0, 0, 0, 0},
		{"-80", BAD, 0, 0, 0, 0, 0},
		{"80 ", BAD, 0, 0, 0, 0, 0},
		{"80, 443", BAD, 0, 0, 0, 0, 0},
		{"http", BAD, 0, 0, 0, 0, 0},
		{"80-90-100", BAD, 0, 0, 0, 0, 0},
		{"80;443", BAD, 0, 0, 0, 0, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct ports_case *c = &cases[i];
		uint64_t bits[ST_PORTS_WORDS];
		memset(bits, 0, sizeof bits);
		bits[0] = 1ULL << 7; /* marker: a failed parse must leave the set untouched */
		char err[160] = "";
		int rc = st_parse_ports(c->in, bits, err, sizeof err);
		if (rc != c->rc) {
			CASE_FAIL("st_parse_ports(\"%s\") = %d, want %d", c->in, rc, c->rc);
			continue;
		}
		if (rc == BAD) {
			if (err[0] == '\0')
				CASE_FAIL("st_parse_ports(\"%s\") failed without a message", c->in);
			if (bits[0] != 1ULL << 7 || count_ports(bits) != 1)
				CASE_FAIL("st_parse_ports(\"%s\") failed but changed the set", c->in);
			continue;
		}
		if (count_ports(bits) != c->count)
			CASE_FAIL("st_parse_ports(\"%s\"): %d ports, want %d", c->in, count_ports(bits),
			          c->count);
		if ((c->in1 && !port_in(bits, c->in1)) || (c->in2 && !port_in(bits, c->in2)))
			CASE_FAIL("st_parse_ports(\"%s\"): %u or %u missing", c->in, c->in1, c->in2);
		if ((c->out1 && port_in(bits, c->out1)) || (c->out2 && port_in(bits, c->out2)))
			CASE_FAIL("st_parse_ports(\"%s\"): %u or %u wrongly in", c->in, c->out1, c->out2);
		if (port_in(bits, 0))
			CASE_FAIL("st_parse_ports(\"%s\"): port 0 in the set", c->in);
	}
	end_group("parse_ports");
}

/* Ranges across word boundaries, checked port by port against the plain definition. */
static void test_ports_ranges(void)
{
	unsigned seed = 12345;
	for (int i = 0; i < 3000; i++) {
		seed = seed * 1103515245u + 12345u;
		unsigned lo = 1 + (seed >> 8) % 65535;
		seed = seed * 1103515245u + 12345u;
		unsigned span = i < 1000 ? (seed >> 8) % 130 : (seed >> 8) % 65535;
		unsigned hi = lo + span > 65535 ? 65535 : lo + span;
		char in[32];
		snprintf(in, sizeof in, "%u-%u,%u", lo, hi, 1 + (seed % 65535));
		uint64_t bits[ST_PORTS_WORDS];
		char err[160];
		if (st_parse_ports(in, bits, err, sizeof err) != 0) {
			CASE_FAIL("st_parse_ports(\"%s\") refused: %s", in, err);
			continue;
		}
		unsigned single = 1 + (seed % 65535);
		for (unsigned p = 0; p < 65536; p++) {
			int want = (p >= lo && p <= hi) || p == single;
			if (port_in(bits, p) != want) {
				CASE_FAIL("st_parse_ports(\"%s\"): port %u %s", in, p, want ? "missing" : "wrongly in");
				break;
			}
		}
	}
	end_group("parse_ports_ranges");
}

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The largest list an environment string can hold (128 KiB), of the widest ranges, and of
 * one port repeated: parsing is linear in the text (it cost a loop per port of every range:
 * 2.6 s for 128 KiB of "1-65535,").  The bound is CPU time, about 15 times the 3.5 ms
 * measured here. */
static void test_ports_linear(void)
{
	static char big[128 * 1024];
	static const char *const pieces[] = {"1-65535,", "8080,", "1-65535,80,443-444,"};
	for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
		size_t len = strlen(pieces[k]), o = 0;
		while (o + len < sizeof big - 1) {
			memcpy(big + o, pieces[k], len);
			o += len;
		}
		big[o - 1] = '\0'; /* no trailing comma */
		uint64_t bits[ST_PORTS_WORDS];
		char err[160];
		double t0 = cpu_ms();
		int rc = st_parse_ports(big, bits, err, sizeof err);
		double ms = cpu_ms() - t0;
		if (rc != 0)
			CASE_FAIL("128 KiB of \"%s\" refused: %s", pieces[k], err);
		if (ms > 50)
			CASE_FAIL("128 KiB of \"%s\" took %.1f ms of CPU to parse (want well under 10)",
			          pieces[k], ms);
	}
	end_group("parse_ports_linear");
}

static void test_expand_path(void)
{
	static const struct {
		const char *pattern;
		long pid;
		size_t n;
		int rc;
		const char *want;
	} cases[] = {
		{"/tmp/st.log", 42, 64, OK, "/tmp/st.log"},
		{"/tmp/st-%p.log", 42, 64, OK, "/tmp/st-42.log"},
		{"/tmp/%p/%p", 1234, 64, OK, "/tmp/1234/1234"},
		{"%p", 7, 64, OK, "7"},
		{"/tmp/100%", 7, 64, OK, "/tmp/100%"},
		{"/tmp/%d", 7, 64, OK, "/tmp/%d"},
		{"/tmp/%%p", 7, 64, OK, "/tmp/%7"},
		{"", 7, 64, BAD, NULL},
		{"abcdefgh", 7, 9, OK, "abcdefgh"},  /* exactly fits with its NUL */
		{"abcdefghi", 7, 9, BAD, NULL},      /* one too long */
		{"/x/%p", 4194304, 10, BAD, NULL},   /* "/x/4194304" is 10 chars */
		{"/x/%p", 4194304, 11, OK, "/x/4194304"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[64];
		memset(out, 'Z', sizeof out);
		int rc = st_expand_path(cases[i].pattern, cases[i].pid, out, cases[i].n);
		if (rc != cases[i].rc)
			CASE_FAIL("st_expand_path(\"%s\", n=%zu) = %d, want %d", cases[i].pattern,
			          cases[i].n, rc, cases[i].rc);
		else if (rc == OK && strcmp(out, cases[i].want) != 0)
			CASE_FAIL("st_expand_path(\"%s\") -> \"%s\", want \"%s\"", cases[i].pattern, out,
			          cases[i].want);
		if (cases[i].n < sizeof out && out[cases[i].n] != 'Z')
			CASE_FAIL("st_expand_path(\"%s\") wrote past n=%zu", cases[i].pattern, cases[i].n);
	}
	end_group("expand_path");
}

static void test_policy_set(void)
{
	static const struct {
		enum st_var_id id;
		const char *in;
		int rc;
		long long want;
	} cases[] = {
		{ST_V_RCVBUF, "16M", OK, 16LL << 20},
		{ST_V_RCVBUF, "1G", OK, 1LL << 30},
		{ST_V_RCVBUF, "2G", BAD, 0},
		{ST_V_RCVBUF, "0", BAD, 0},
		{ST_V_RCVBUF, "bad", BAD, 0},
		{ST_V_SNDBUF, "256k", OK, 262144},
		{ST_V_SNDBUF, "-1", BAD, 0},
		{ST_V_BACKLOG, "4096", OK, 4096},
		{ST_V_BACKLOG, "0", BAD, 0},
		{ST_V_BACKLOG, "2147483648", BAD, 0},
		{ST_V_BACKLOG, "4k", BAD, 0},
		{ST_V_BACKLOG_MIN, "128", OK, 128},
		{ST_V_BACKLOG_MAX, "1", OK, 1},
		{ST_V_NODELAY, "1", OK, 1},
		{ST_V_NODELAY, "off", OK, 0},
		{ST_V_NODELAY, "maybe", BAD, 0},
		{ST_V_QUICKACK, "yes", OK, 1},
		{ST_V_RCVBUF_FORCE, "true", OK, 1},
		{ST_V_DISABLE, "0", OK, 0},
		{ST_V_LOG, "debug", OK, ST_LOG_DEBUG},
		{ST_V_LOG, "loud", BAD, 0},
		{ST_V_PORTS, "80,8000-8001", OK, 0},
		{ST_V_PORTS, "9-3", BAD, 0},
		{ST_V_LOG_FILE, "/tmp/x-%p.log", OK, 0},
		{ST_V_LOG_FILE, "", BAD, 0},
		/* the kernel's range (HZ=250): 4000 us is 1 jiffy, EINVAL; 4001 is kept as 8000 */
		{ST_V_DELACK_MAX, "2ms", BAD, 0},
		{ST_V_DELACK_MAX, "4000us", BAD, 0},
		{ST_V_DELACK_MAX, "4001us", OK, 4001},
		{ST_V_DELACK_MAX, "4001", OK, 4001},
		{ST_V_DELACK_MAX, "200ms", OK, 200000},
		{ST_V_DELACK_MAX, "200001us", BAD, 0},
		{ST_V_RTO_MIN, "4ms", BAD, 0},
		{ST_V_RTO_MIN, "5ms", OK, 5000},
		/* milliseconds, the kernel's range: 999 and 120001 are EINVAL */
		{ST_V_RTO_MAX, "1000", OK, 1000},
		{ST_V_RTO_MAX, "10s", OK, 10000},
		{ST_V_RTO_MAX, "120000ms", OK, 120000},
		{ST_V_RTO_MAX, "999", BAD, 0},
		{ST_V_RTO_MAX, "120001", BAD, 0},
		{ST_V_RTO_MAX, "0", BAD, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct st_policy p;
		memset(&p, 0, sizeof p);
		char err[160] = "";
		int rc = st_policy_set(&p, cases[i].id, cases[i].in, err, sizeof err);
		const char *name = st_vars[cases[i].id].env;
		if (rc != cases[i].rc) {
			CASE_FAIL("st_policy_set(%s, \"%s\") = %d, want %d", name, cases[i].in, rc,
			          cases[i].rc);
			continue;
		}
		if (rc == BAD) {
			if (p.set != 0 || err[0] == '\0')
				CASE_FAIL("st_policy_set(%s, \"%s\") failed but marked it set or said nothing",
				          name, cases[i].in);
			continue;
		}
		if (!st_has(&p, cases[i].id) || p.set != 1ULL << cases[i].id)
			CASE_FAIL("st_policy_set(%s) set bits 0x%llx", name, (unsigned long long)p.set);
		if (st_vars[cases[i].id].type != ST_T_PORTS && st_vars[cases[i].id].type != ST_T_PATH &&
		    p.num[cases[i].id] != cases[i].want)
			CASE_FAIL("st_policy_set(%s, \"%s\") -> %lld, want %lld", name, cases[i].in,
			          p.num[cases[i].id], cases[i].want);
	}
	/* ports and paths land in their own fields */
	struct st_policy p;
	memset(&p, 0, sizeof p);
	char err[160];
	st_policy_set(&p, ST_V_PORTS, "80,8000-8001", err, sizeof err);
	if (!port_in(p.ports, 80) || !port_in(p.ports, 8001) || port_in(p.ports, 81) ||
	    port_in(p.ports, 8002))
		CASE_FAIL("SOCKTUNE_PORTS=80,8000-8001 did not fill the port set");
	st_policy_set(&p, ST_V_LOG_FILE, "/tmp/x-%p.log", err, sizeof err);
	if (strcmp(p.log_file, "/tmp/x-%p.log") != 0)
		CASE_FAIL("log_file is \"%s\"", p.log_file);
	/* a path that cannot fit the log_file buffer (with room for a pid) is refused */
	char longp[sizeof p.log_file + 10];
	memset(longp, 'a', sizeof longp - 1);
	longp[0] = '/';
	longp[sizeof longp - 1] = '\0';
	if (st_policy_set(&p, ST_V_LOG_FILE, longp, err, sizeof err) == 0)
		CASE_FAIL("a %zu-byte log path was accepted", strlen(longp));
	/* a failed set leaves an earlier good value alone */
	memset(&p, 0, sizeof p);
	st_policy_set(&p, ST_V_BACKLOG, "100", err, sizeof err);
	st_policy_set(&p, ST_V_BACKLOG, "x", err, sizeof err);
	if (!st_has(&p, ST_V_BACKLOG) || p.num[ST_V_BACKLOG] != 100)
		CASE_FAIL("a bad value replaced the good one before it");
	end_group("policy_set");
}

static void test_var_lookup(void)
{
	for (int i = 0; i < ST_V_COUNT; i++) {
		if (st_var_by_env(st_vars[i].env) != i)
			CASE_FAIL("st_var_by_env(%s) != %d", st_vars[i].env, i);
		if (st_var_by_option(st_vars[i].option) != i)
			CASE_FAIL("st_var_by_option(%s) != %d", st_vars[i].option, i);
		if (strncmp(st_vars[i].env, ST_ENV_PREFIX, strlen(ST_ENV_PREFIX)) != 0)
			CASE_FAIL("%s lacks the prefix", st_vars[i].env);
	}
	if (st_var_by_env("SOCKTUNE_FOO") != -1 || st_var_by_env("RCVBUF") != -1 ||
	    st_var_by_env("socktune_rcvbuf") != -1 || st_var_by_env("") != -1)
		CASE_FAIL("lookup found a name that does not exist");
	if (st_var_by_option("nope") != -1 || st_var_by_option("SOCKTUNE_RCVBUF") != -1)
		CASE_FAIL("option lookup found a name that does not exist");
	end_group("var_lookup");
}

/* ---- st_policy_from_env ---- */

struct seen {
	int n;
	char name[8][64];
	char value[8][64];
	char msg[8][160];
};

static void collect(void *ctx, const char *name, const char *value, const char *msg)
{
	struct seen *s = ctx;
	if (s->n < 8) {
		snprintf(s->name[s->n], sizeof s->name[0], "%s", name);
		snprintf(s->value[s->n], sizeof s->value[0], "%s", value);
		snprintf(s->msg[s->n], sizeof s->msg[0], "%s", msg);
	}
	s->n++;
}

static void test_from_env(void)
{
	/* all good */
	{
		char *env[] = {"PATH=/bin", "SOCKTUNE_RCVBUF=16M", "SOCKTUNE_NODELAY=1",
		               "SOCKTUNE_BACKLOG=4096", "SOCKTUNE_PORTS=80,8000-8099",
		               "SOCKTUNE_LOG=debug", "SOCKTUNE_LOG_FILE=/tmp/l-%p", "HOME=/root",
		               "SOCKTUNE_LIBRARY=/x/libsocktune.so", NULL};
		struct st_policy p;
		memset(&p, 0, sizeof p);
		struct seen s = {0};
		int errs = st_policy_from_env(&p, env, collect, &s);
		if (errs != 0 || s.n != 0)
			CASE_FAIL("good environment: %d errors, first %s", errs, s.n ? s.name[0] : "-");
		if (p.num[ST_V_RCVBUF] != 16LL << 20 || !st_on(&p, ST_V_NODELAY) ||
		    p.num[ST_V_BACKLOG] != 4096 || !port_in(p.ports, 8099) || port_in(p.ports, 8100) ||
		    p.num[ST_V_LOG] != ST_LOG_DEBUG || strcmp(p.log_file, "/tmp/l-%p") != 0)
			CASE_FAIL("good environment: values not filled");
		if (st_has(&p, ST_V_SNDBUF) || st_has(&p, ST_V_QUICKACK) || st_has(&p, ST_V_DISABLE))
			CASE_FAIL("good environment: unset variables marked set");
	}
	/* bad and unknown: each reported once with its name and value; the rest applies */
	{
		char *env[] = {"SOCKTUNE_RCVBUF=bad", "SOCKTUNE_NODELAY=1", "SOCKTUNE_FOO=bar",
		               "SOCKTUNE_BACKLOG=99999999999999999999", "SOCKTUNE_SNDBUF=64k",
		               "SOCKTUNE_PORTS=9-3", NULL};
		struct st_policy p;
		memset(&p, 0, sizeof p);
		struct seen s = {0};
		int errs = st_policy_from_env(&p, env, collect, &s);
		if (errs != 4 || s.n != 4)
			CASE_FAIL("bad environment: %d errors / %d callbacks, want 4", errs, s.n);
		else {
			static const char *const names[] = {"SOCKTUNE_RCVBUF", "SOCKTUNE_FOO",
			                                    "SOCKTUNE_BACKLOG", "SOCKTUNE_PORTS"};
			static const char *const values[] = {"bad", "bar", "99999999999999999999", "9-3"};
			for (int i = 0; i < 4; i++)
				if (strcmp(s.name[i], names[i]) != 0 || strcmp(s.value[i], values[i]) != 0 ||
				    s.msg[i][0] == '\0')
					CASE_FAIL("error %d: %s=%s (%s), want %s=%s", i, s.name[i], s.value[i],
					          s.msg[i], names[i], values[i]);
			if (!strstr(s.msg[1], "unknown"))
				CASE_FAIL("SOCKTUNE_FOO message \"%s\" does not say unknown", s.msg[1]);
		}
		if (!st_on(&p, ST_V_NODELAY) || p.num[ST_V_SNDBUF] != 65536)
			CASE_FAIL("bad environment: the good variables were not applied");
		if (st_has(&p, ST_V_RCVBUF) || st_has(&p, ST_V_BACKLOG) || st_has(&p, ST_V_PORTS))
			CASE_FAIL("bad environment: a bad variable was marked set");
		if (count_ports(p.ports) != 0)
			CASE_FAIL("bad environment: a bad port list filled the set");
	}
	/* edge shapes: no '=', empty value, prefix only, other prefixes, NULL envp, no callback */
	{
		char longname[100];
		memset(longname, 'X', sizeof longname);
		memcpy(longname, "SOCKTUNE_", 9);
		memcpy(longname + 90, "=1", 3);
		char *env[] = {"SOCKTUNE_NODELAY",  "SOCKTUNE_RCVBUF=", "SOCKTUNE_=1",
		               "XSOCKTUNE_NODELAY=1", "socktune_nodelay=1", longname, NULL};
		struct st_policy p;
		memset(&p, 0, sizeof p);
		struct seen s = {0};
		int errs = st_policy_from_env(&p, env, collect, &s);
		if (errs != 3)
			CASE_FAIL("edge environment: %d errors, want 3 (empty RCVBUF, SOCKTUNE_, long name)",
			          errs);
		if (p.set != 0)
			CASE_FAIL("edge environment: set bits 0x%llx", (unsigned long long)p.set);
		if (st_policy_from_env(&p, NULL, collect, &s) != 0)
			CASE_FAIL("NULL envp is not an empty environment");
		char *env2[] = {"SOCKTUNE_RCVBUF=x", NULL};
		if (st_policy_from_env(&p, env2, NULL, NULL) != 1)
			CASE_FAIL("no callback: error not counted");
	}
	/* a later duplicate wins (the environment is read in order) */
	{
		char *env[] = {"SOCKTUNE_BACKLOG=10", "SOCKTUNE_BACKLOG=20", NULL};
		struct st_policy p;
		memset(&p, 0, sizeof p);
		st_policy_from_env(&p, env, NULL, NULL);
		if (p.num[ST_V_BACKLOG] != 20)
			CASE_FAIL("duplicate: got %lld", p.num[ST_V_BACKLOG]);
	}
	end_group("policy_from_env");
}

static void test_table(void)
{
	/* the shared table is consistent with what the parsers accept */
	for (int i = 0; i < ST_V_COUNT; i++) {
		const struct st_var *v = &st_vars[i];
		if (!v->env || !v->option || !v->help || !v->dflt || !v->arg)
			CASE_FAIL("variable %d has a NULL field", i);
		if (v->min > v->max)
			CASE_FAIL("%s: min > max", v->env);
		if (v->type == ST_T_BOOL && v->arg[0] != '\0')
			CASE_FAIL("%s: a flag with an argument name", v->env);
	}
	if (ST_V_COUNT > 64)
		CASE_FAIL("%d variables do not fit the 64-bit set mask", ST_V_COUNT);
	end_group("variable_table");
}

static void test_keepalive(void)
{
	static const struct {
		const char *in;
		int rc;
		long long on;
		int idle, intvl, cnt;
	} cases[] = {
		{"on", OK, 1, 0, 0, 0},       {"1", OK, 1, 0, 0, 0},         {"off", OK, 0, 0, 0, 0},
		{"30:10:5", OK, 1, 30, 10, 5}, {"30::", OK, 1, 30, 0, 0},    {":10:", OK, 1, 0, 10, 0},
		{"::5", OK, 1, 0, 0, 5},      {"::", OK, 1, 0, 0, 0},        {"32767:32767:127", OK, 1, 32767, 32767, 127},
		{"32768::", BAD, 0, 0, 0, 0}, {":32768:", BAD, 0, 0, 0, 0},  {"::128", BAD, 0, 0, 0, 0},
		{"0::", BAD, 0, 0, 0, 0},     {"-1::", BAD, 0, 0, 0, 0},     {"30:10", BAD, 0, 0, 0, 0},
		{"30", BAD, 0, 0, 0, 0},      {"30:10:5:1", BAD, 0, 0, 0, 0}, {"a::", BAD, 0, 0, 0, 0},
		{"30s::", BAD, 0, 0, 0, 0},   {"", BAD, 0, 0, 0, 0},         {"maybe", BAD, 0, 0, 0, 0},
		{"99999999999999999999::", BAD, 0, 0, 0, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		long long on = -7;
		int idle = -7, intvl = -7, cnt = -7;
		char err[160] = "";
		int rc = st_parse_keepalive(cases[i].in, &on, &idle, &intvl, &cnt, err, sizeof err);
		if (rc != cases[i].rc)
			CASE_FAIL("st_parse_keepalive(\"%s\") = %d, want %d", cases[i].in, rc, cases[i].rc);
		else if (rc == OK && (on != cases[i].on || idle != cases[i].idle ||
		                      intvl != cases[i].intvl || cnt != cases[i].cnt))
			CASE_FAIL("st_parse_keepalive(\"%s\") -> %lld %d:%d:%d", cases[i].in, on, idle, intvl,
			          cnt);
		else if (rc == BAD && err[0] == '\0')
			CASE_FAIL("st_parse_keepalive(\"%s\") failed without a message", cases[i].in);
	}
	end_group("parse_keepalive");
}

static void test_tos(void)
{
	static const struct str_case cases[] = {
		{"lowdelay", OK, 0x10}, {"THROUGHPUT", OK, 0x08}, {"reliability", OK, 0x04},
		{"lowcost", OK, 0x02},  {"0", OK, 0},             {"255", OK, 255},
		{"0x10", OK, 16},       {"0XfF", OK, 255},        {"0x00", OK, 0},
		{"256", BAD, 0},        {"0x100", BAD, 0},        {"0x", BAD, 0},
		{"0xg", BAD, 0},        {"0x1g", BAD, 0},         {"-1", BAD, 0},
		{"", BAD, 0},           {"fast", BAD, 0},         {" 16", BAD, 0},
		{"0x-1", BAD, 0},       {"0x+1", BAD, 0},         {"0xffffffffffffffffff", BAD, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		long long out = -12345;
		char err[160] = "";
		int rc = st_parse_tos(cases[i].in, &out, err, sizeof err);
		if (rc != cases[i].rc)
			CASE_FAIL("st_parse_tos(\"%s\") = %d (out %lld), want %d", cases[i].in, rc, out,
			          cases[i].rc);
		else if (rc == OK && out != cases[i].want)
			CASE_FAIL("st_parse_tos(\"%s\") -> %lld, want %lld", cases[i].in, out, cases[i].want);
		else if (rc == BAD && err[0] == '\0')
			CASE_FAIL("st_parse_tos(\"%s\") failed without a message", cases[i].in);
	}
	end_group("parse_tos");
}

static void test_name(void)
{
	static const struct {
		const char *in;
		int rc;
	} cases[] = {
		{"bbr", OK},   {"cubic", OK},          {"reno", OK},  {"dctcp-2_x", OK},
		{"abcdefghijklmno", OK}, /* 15: TCP_CA_NAME_MAX - 1 */
		{"abcdefghijklmnop", BAD}, {"", BAD}, {"bb r", BAD}, {"../x", BAD},
		{"bbr\n", BAD}, {"a=b", BAD},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[16];
		memset(out, 'Z', sizeof out);
		char err[160] = "";
		int rc = st_parse_name(cases[i].in, out, sizeof out, err, sizeof err);
		if (rc != cases[i].rc)
			CASE_FAIL("st_parse_name(\"%s\") = %d, want %d", cases[i].in, rc, cases[i].rc);
		else if (rc == OK && strcmp(out, cases[i].in) != 0)
			CASE_FAIL("st_parse_name(\"%s\") -> \"%.16s\"", cases[i].in, out);
		else if (rc == BAD && err[0] == '\0')
			CASE_FAIL("st_parse_name(\"%s\") failed without a message", cases[i].in);
	}
	/* through the policy: precedence and congestion land where the library reads them */
	struct st_policy p;
	memset(&p, 0, sizeof p);
	char err[160];
	if (st_policy_set(&p, ST_V_CONGESTION, "bbr", err, sizeof err) != 0 ||
	    strcmp(p.name[ST_V_CONGESTION], "bbr") != 0 || !st_has(&p, ST_V_CONGESTION))
		CASE_FAIL("SOCKTUNE_CONGESTION=bbr not stored");
	if (st_policy_set(&p, ST_V_PRECEDENCE, "APP", err, sizeof err) != 0 ||
	    p.num[ST_V_PRECEDENCE] != ST_PRECEDENCE_APP)
		CASE_FAIL("SOCKTUNE_PRECEDENCE=APP not app");
	if (st_policy_set(&p, ST_V_PRECEDENCE, "policy", err, sizeof err) != 0 ||
	    p.num[ST_V_PRECEDENCE] != ST_PRECEDENCE_POLICY)
		CASE_FAIL("SOCKTUNE_PRECEDENCE=policy not policy");
	if (st_policy_set(&p, ST_V_PRECEDENCE, "apps", err, sizeof err) == 0 ||
	    st_policy_set(&p, ST_V_PRECEDENCE, "", err, sizeof err) == 0)
		CASE_FAIL("bad precedence accepted");
	memset(&p, 0, sizeof p);
	if (st_policy_set(&p, ST_V_KEEPALIVE, "60:5:", err, sizeof err) != 0 || !st_on(&p, ST_V_KEEPALIVE) ||
	    p.ka_idle != 60 || p.ka_intvl != 5 || p.ka_cnt != 0)
		CASE_FAIL("SOCKTUNE_KEEPALIVE=60:5: not stored");
	if (st_policy_set(&p, ST_V_KEEPALIVE, "60:5:500", err, sizeof err) == 0)
		CASE_FAIL("SOCKTUNE_KEEPALIVE=60:5:500 accepted");
	if (p.ka_idle != 60 || p.ka_intvl != 5)
		CASE_FAIL("a bad SOCKTUNE_KEEPALIVE changed the stored parts to %d:%d:%d", p.ka_idle,
		          p.ka_intvl, p.ka_cnt);
	end_group("parse_name_precedence");
}

/* The distance "did you mean" reads: a swap of two neighbours is one typo, as are an
 * insertion, a deletion and a substitution; case is not a difference. */
/* Durations in the option's own unit (a bare number is it): microseconds and milliseconds,
 * the other units converted, a value that is not a whole number of the unit refused. */
static void test_durations(void)
{
	static const struct {
		int ms; /* st_parse_msec, else st_parse_usec */
		const char *in;
		long long min, max;
		int rc;
		long long want;
		const char *err; /* a part of the message */
	} c[] = {
		{0, "5ms", 4001, 200000, OK, 5000, ""},
		{0, "0.5s", 1, 1000000, OK, 500000, ""},
		{0, "4001", 4001, 200000, OK, 4001, ""},
		{0, "4000us", 4001, 200000, BAD, 0, "out of range (4001us..200000us; a bare number is us)"},
		{0, "1s", 4001, 200000, BAD, 0, "out of range"},
		{0, "5 ms", 4001, 200000, BAD, 0, "not a duration (a number with us, ms or s; a bare number is us)"},
		{1, "1000", 1000, 120000, OK, 1000, ""},
		{1, "1001", 1000, 120000, OK, 1001, ""},
		{1, "10s", 1000, 120000, OK, 10000, ""},
		{1, "1.5s", 1000, 120000, OK, 1500, ""},
		{1, "2000000us", 1000, 120000, OK, 2000, ""},
		{1, "120s", 1000, 120000, OK, 120000, ""},
		{1, "999", 1000, 120000, BAD, 0, "out of range (1000ms..120000ms; a bare number is ms)"},
		{1, "0", 1000, 120000, BAD, 0, "out of range"},
		{1, "-1", 1000, 120000, BAD, 0, "out of range"},
		{1, "120001", 1000, 120000, BAD, 0, "out of range"},
		{1, "99999999999999999999", 1000, 120000, BAD, 0, "out of range"},
		{1, "1000.5", 1000, 120000, BAD, 0, "not a whole number of ms"},
		{1, "1500500us", 1000, 120000, BAD, 0, "not a whole number of ms"},
		{1, "2m", 1000, 120000, BAD, 0, "a bare number is ms"},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		long long v = -1;
		char err[160] = "";
		int rc = c[i].ms ? st_parse_msec(c[i].in, c[i].min, c[i].max, &v, err, sizeof err)
		                 : st_parse_usec(c[i].in, c[i].min, c[i].max, &v, err, sizeof err);
		if (rc != c[i].rc || (rc == OK && v != c[i].want) || !strstr(err, c[i].err))
			CASE_FAIL("%s \"%s\": rc %d value %lld err '%s'", c[i].ms ? "ms" : "us", c[i].in,
			          rc, v, err);
	}
	end_group("durations");
}

static void test_edit_distance(void)
{
	static const struct {
		const char *a, *b;
		int d;
	} cases[] = {
		{"stats", "stats", 0}, {"stat", "stats", 1},   {"doctr", "doctor", 1},
		{"docotr", "doctor", 1}, {"chekc", "check", 1}, {"STATS", "stats", 0},
		{"atach", "attach", 1}, {"docker", "doctor", 2}, {"start", "stats", 2},
		{"ab", "ba", 1},        {"", "check", 5},
		{"abc", "ca", 3}, /* a swapped pair is not edited again */
		{"cat", "attach", 5},   {"nodealy", "nodelay", 1},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		int d = st_edit_distance(cases[k].a, cases[k].b);
		if (d != cases[k].d)
			CASE_FAIL("distance(%s, %s) = %d, want %d", cases[k].a, cases[k].b, d, cases[k].d);
	}
	if (st_edit_distance("a-name-of-more-than-thirty-one-bytes", "check") != 99)
		CASE_FAIL("a long name is not 99 away");
	end_group("edit_distance");
}

int main(void)
{
	test_size();
	test_int();
	test_bool();
	test_log_level();
	test_ports();
	test_ports_ranges();
	test_ports_linear();
	test_expand_path();
	test_policy_set();
	test_var_lookup();
	test_from_env();
	test_keepalive();
	test_tos();
	test_name();
	test_table();
	test_durations();
	test_edit_distance();
	return failures ? 1 : 0;
}
