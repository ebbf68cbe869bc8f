/* Table-driven tests of the pure rules in common/kernel.c that need no socket: the jiffy from
 * a TCP_DELACK_MAX_US read-back, microsecond rounding at each HZ, and the `ip route change`
 * that adds quickack 1 to a route as the kernel reports it, and the fix of each refusal.
 * PASS/FAIL per group; a failing case also prints its own line. */
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "socktune_kernel.h"

#include "unit.h"

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
	char text[200];
	st_us_range_text(4000, 250, text, sizeof text);
	if (strcmp(text, "rounded up to a jiffy: 4000 us (HZ=250), takes 4001..200000 us (4001 keeps 8000)") != 0)
		CASE_FAIL("range text: %s", text);
	/* another HZ: where socktune's floor (HZ=250's) differs from this kernel's, said */
	st_us_range_text(1000, 1000, text, sizeof text);
	if (strcmp(text, "rounded up to a jiffy: 1000 us (HZ=1000), takes 1001..200000 us (1001 keeps 2000); socktune takes 4001 and up") != 0)
		CASE_FAIL("range text at HZ=1000: %s", text);
	st_us_range_text(10000, 100, text, sizeof text);
	if (strcmp(text, "rounded up to a jiffy: 10000 us (HZ=100), takes 10001..200000 us (10001 keeps 20000); 4001..10000, which socktune takes, are refused here") != 0)
		CASE_FAIL("range text at HZ=100: %s", text);
	end_group("us_rounding");
}

static struct st_route route(int family, unsigned table, unsigned char type, const char *dst,
                             unsigned char len, const char *dev)
{
	struct st_route r;
	memset(&r, 0, sizeof r);
	r.family = family;
	r.table = table;
	r.type = type;
	r.dst_len = len;
	r.protocol = 2;
	r.scope = type == 2 ? 254 : 0;
	snprintf(r.dst, sizeof r.dst, "%s", dst);
	snprintf(r.dev, sizeof r.dev, "%s", dev);
	r.priority = r.nhid = r.pref = r.realms = -1;
	return r;
}

static void metric(struct st_route *r, int i, unsigned v)
{
	r->metric[i] = v;
	r->has_metric |= 1ul << i;
}

static void expect_fix(const char *name, const struct st_route *r, int rc, const char *want)
{
	char fix[600];
	int got = st_fix_route_quickack(r, fix, sizeof fix);
	if (got != rc || (rc == 0 && strcmp(fix, want) != 0) || (rc != 0 && !strstr(fix, want)))
		CASE_FAIL("%s: rc %d, fix '%s'; want rc %d, '%s'", name, got, fix, rc, want);
}

static void test_route_fix(void)
{
	/* 127.0.0.1's own route: the proto is kept (the kernel deletes its local routes by
	 * proto kernel when the address goes) */
	struct st_route r = route(AF_INET, 255, 2, "127.0.0.1", 32, "lo");
	snprintf(r.prefsrc, sizeof r.prefsrc, "127.0.0.1");
	expect_fix("loopback", &r, 0, "ip route change local 127.0.0.1 dev lo table local proto "
	           "kernel scope host src 127.0.0.1 quickack 1");
	if (st_route_quickack(&r))
		CASE_FAIL("no metrics, yet quickack");
	metric(&r, ST_RTAX_QUICKACK, 0);
	if (st_route_quickack(&r))
		CASE_FAIL("quickack 0 taken for quickack 1");
	metric(&r, ST_RTAX_QUICKACK, 1);
	if (!st_route_quickack(&r))
		CASE_FAIL("quickack 1 not seen");

	/* the other metrics repeated (a lock as ip writes it, rto_min's lock implied), the old
	 * quickack left out */
	r = route(AF_INET, 254, 1, "10.9.0.0", 16, "eth0");
	r.protocol = 4;
	r.scope = 253;
	r.priority = 5;
	metric(&r, ST_RTAX_LOCK, 1u << 2 | 1u << 13);
	metric(&r, 2, 1400);
	metric(&r, 4, 80);
	metric(&r, 13, 5);
	metric(&r, ST_RTAX_QUICKACK, 0);
	metric(&r, ST_RTAX_FEATURES, 1);
	r.has_metric |= 1ul << ST_RTAX_CC_ALGO;
	snprintf(r.congctl, sizeof r.congctl, "reno");
	expect_fix("metrics", &r, 0, "ip route change 10.9.0.0/16 dev eth0 table main proto static "
	           "scope link metric 5 mtu lock 1400 rtt 80 features ecn rto_min 5 congctl reno "
	           "quickack 1");

	r = route(AF_INET6, 254, 1, "::", 0, "eth0");
	r.protocol = 3;
	r.priority = 1024;
	snprintf(r.gateway, sizeof r.gateway, "fd00::1");
	expect_fix("ipv6 default", &r, 0, "ip -6 route change default via fd00::1 dev eth0 table "
	           "main proto boot metric 1024 quickack 1");

	r = route(AF_INET, 254, 1, "10.0.0.0", 8, "eth0");
	r.nhid = 7;
	expect_fix("nexthop object", &r, 0, "ip route change 10.0.0.0/8 nhid 7 table main proto "
	           "kernel scope global quickack 1");

	r = route(AF_INET6, 255, 2, "::1", 128, "lo");
	r.priority = 0;
	expect_fix("ipv6 metric 0", &r, -1, "metric 0");
	r = route(AF_INET, 254, 1, "10.0.0.0", 8, "");
	r.unrepeated = ST_R_MULTIPATH;
	expect_fix("multipath", &r, -1, "multipath");
	r = route(AF_INET, 254, 6, "10.0.0.0", 8, "");
	expect_fix("blackhole", &r, -1, "blackhole");

	char name[16];
	st_route_table_name(100, name, sizeof name);
	if (strcmp(name, "100") != 0 || strcmp(st_route_type_name(2), "local") != 0 ||
	    strcmp(st_route_type_name(200), "?") != 0)
		CASE_FAIL("names: table 100 '%s', type 2 '%s'", name, st_route_type_name(2));
	end_group("route_quickack_fix");
}

/* The initial window on a route (the path rules' host-wide alternative to --initcwnd): the
 * route repeated, its own initcwnd (and that one's lock) replaced by the new one, the
 * other metrics and locks kept; a route no change can repeat refused with why. */
static void test_route_initcwnd(void)
{
	char fix[600];
	struct st_route r = route(AF_INET, 254, 1, "198.18.0.0", 24, "pe-b");
	r.protocol = 3;
	r.scope = 253;
	if (st_fix_route_initcwnd(&r, 33, fix, sizeof fix) != 0 ||
	    strcmp(fix, "ip route change 198.18.0.0/24 dev pe-b table main proto boot scope link "
	                "initcwnd 33") != 0)
		CASE_FAIL("plain: '%s'", fix);
	metric(&r, ST_RTAX_LOCK, 1u << ST_RTAX_INITCWND | 1u << 2);
	metric(&r, ST_RTAX_INITCWND, 10);
	metric(&r, 2, 1400);
	if (st_fix_route_initcwnd(&r, 20, fix, sizeof fix) != 0 ||
	    strcmp(fix, "ip route change 198.18.0.0/24 dev pe-b table main proto boot scope link "
	                "mtu lock 1400 initcwnd 20") != 0)
		CASE_FAIL("its own initcwnd replaced, mtu's lock kept: '%s'", fix);
	r = route(AF_INET6, 254, 1, "fd00:5e:0:a::", 64, "pe-b");
	r.priority = 1024;
	if (st_fix_route_initcwnd(&r, 12, fix, sizeof fix) != 0 ||
	    strcmp(fix, "ip -6 route change fd00:5e:0:a::/64 dev pe-b table main proto kernel "
	                "metric 1024 initcwnd 12") != 0)
		CASE_FAIL("ipv6: '%s'", fix);
	r.priority = 0;
	if (st_fix_route_initcwnd(&r, 12, fix, sizeof fix) != -1 || !strstr(fix, "--initcwnd"))
		CASE_FAIL("ipv6 metric 0: '%s'", fix);
	r = route(AF_INET, 254, 1, "10.0.0.0", 8, "");
	r.unrepeated = ST_R_ENCAP;
	if (st_fix_route_initcwnd(&r, 12, fix, sizeof fix) != -1 || !strstr(fix, "initcwnd 12"))
		CASE_FAIL("encap: '%s'", fix);
	end_group("route_initcwnd_fix");
}

/* A refusal's fix: the Linux release for an option the kernel lacks, the capability for
 * EPERM; final ones are not tried again on the next socket. */
static void test_refusals(void)
{
	static const struct {
		int opt, err, final;
		const char *fix; /* a part of it; "" for none */
	} cases[] = {
		{ST_V_DELACK_MAX, ENOPROTOOPT, 1, "Linux 6.15 or later has TCP_DELACK_MAX_US"},
		{ST_V_RTO_MIN, ENOPROTOOPT, 1, "Linux 6.15 or later has TCP_RTO_MIN_US"},
		{ST_V_RTO_MAX, ENOPROTOOPT, 1, "Linux 6.15 or later has TCP_RTO_MAX_MS"},
		{ST_V_MAXSEG, ENOPROTOOPT, 1, "a newer kernel"},
		{ST_V_TRANSPARENT, EPERM, 1, "grant CAP_NET_ADMIN or CAP_NET_RAW"},
		{ST_V_MARK, EPERM, 1, "grant CAP_NET_ADMIN or CAP_NET_RAW"},
		{ST_V_NODELAY, EPERM, 0, "grant CAP_NET_ADMIN"},
		{ST_V_BINDTODEVICE, ENODEV, 0, "name an interface"},
		{ST_V_DELACK_MAX, EINVAL, 0, "2 jiffies to 200 ms"},
		{ST_V_TTL, EINVAL, 0, ""},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char fix[160];
		st_fix_refused(cases[k].opt, cases[k].err, fix, sizeof fix);
		int final = st_refusal_is_final(cases[k].opt, cases[k].err);
		if ((*cases[k].fix ? !strstr(fix, cases[k].fix) : *fix != '\0') || final != cases[k].final)
			CASE_FAIL("%s errno %d: fix '%s' final %d, want '%s' final %d",
			          st_vars[cases[k].opt].env, cases[k].err, fix, final, cases[k].fix,
			          cases[k].final);
	}
	end_group("refusal_fixes");
}

/* A refused congestion control: not allowed (available), not loaded (a module), missing
 * (neither: the available ones, and never the allowed list, in the fix). */
static void test_congestion(void)
{
	static const struct {
		const char *name;
		int module;
		const char *reason, *why, *fix, *not_in_fix;
	} cases[] = {
		{"cubic", 0, "not-allowed", "not allowed (net.ipv4.tcp_allowed_congestion_control=reno bbr)",
		 "sysctl -w net.ipv4.tcp_allowed_congestion_control=\"reno bbr cubic\"", "modprobe"},
		{"vegas", 1, "not-loaded", "the module tcp_vegas is installed", "modprobe tcp_vegas",
		 "allowed"},
		{"nosuch", 0, "missing",
		 "missing: this kernel has no nosuch, built in or as a module (available: reno bbr cubic)",
		 "use one of the available: reno bbr cubic", "allowed"},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char why[300], fix[300];
		const char *r = st_why_congestion(cases[k].name, "reno bbr cubic", "reno bbr",
		                                  cases[k].module, why, sizeof why, fix, sizeof fix);
		if (strcmp(r, cases[k].reason) != 0 || !strstr(why, cases[k].why) ||
		    !strstr(fix, cases[k].fix) || strstr(fix, cases[k].not_in_fix))
			CASE_FAIL("%s: %s / why '%s' / fix '%s'", cases[k].name, r, why, fix);
	}
	end_group("congestion_why");
}

/* What a program that cannot see its setsockopt fail (the cgroup mode) reads back, judged: a
 * duration is applied only when it reads what the kernel keeps of it (rounded up to a jiffy),
 * never the default it reads when the set failed, however much larger; another option when
 * not short of it. */
static void test_took(void)
{
	static const struct { long long v, per_s, hz, kept; } k[] = {
		{1001, 1000, 250, 1004}, {1001, 1000, 300, 1003}, {1001, 1000, 1000, 1001},
		{1001, 1000, 100, 1010}, {120000, 1000, 250, 120000}, {119999, 1000, 250, 120000},
		{5000, 1000000, 250, 8000}, {1001, 1000, 0, 1001},
	};
	for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
		if (st_jiffies_kept(k[i].v, k[i].per_s, k[i].hz) != k[i].kept)
			CASE_FAIL("%lld (1/%lld s) at HZ=%lld keeps %lld, want %lld", k[i].v, k[i].per_s,
			          k[i].hz, st_jiffies_kept(k[i].v, k[i].per_s, k[i].hz), k[i].kept);
	static const struct { int opt; long long want, got, hz; int took; } c[] = {
		{ST_V_DELACK_MAX, 5000, 8000, 250, 1},
		{ST_V_DELACK_MAX, 5000, 200000, 250, 0}, /* the default: the set failed */
		{ST_V_DELACK_MAX, 5000, 5000, 250, 0},
		{ST_V_DELACK_MAX, 5000, 8000, 0, 1},     /* HZ unknown: less than 10 ms more */
		{ST_V_DELACK_MAX, 5000, 200000, 0, 0},
		{ST_V_RTO_MAX, 1001, 1004, 250, 1},     /* measured on 6.18, HZ=250 */
		{ST_V_RTO_MAX, 1001, 120000, 250, 0},   /* the default, never below what was asked */
		{ST_V_RTO_MAX, 1001, 1001, 250, 0},
		{ST_V_RTO_MAX, 5000, 5000, 250, 1},
		{ST_V_RTO_MAX, 1001, 1001, 1000, 1},
		{ST_V_RTO_MAX, 1001, 1004, 0, 1},       /* HZ unknown */
		{ST_V_RTO_MAX, 1001, 120000, 0, 0},
		{ST_V_NODELAY, 1, 1, 250, 1},
		{ST_V_NODELAY, 1, 0, 250, 0},
		{ST_V_DEFER_ACCEPT, 5, 7, 250, 1},       /* rounded up, not a duration */
		{ST_V_RCVBUF, 65536, 131072, 250, 1},
		{ST_V_RCVBUF, 65536, 65536, 250, 0},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
		if (st_took(c[i].opt, c[i].want, c[i].got, c[i].hz) != c[i].took)
			CASE_FAIL("%s want %lld reads %lld at HZ=%lld: took %d", st_vars[c[i].opt].env,
			          c[i].want, c[i].got, c[i].hz, !c[i].took);
	end_group("judged_by_what_is_kept");
}

int main(void)
{
	test_congestion();
	test_refusals();
	test_hz();
	test_rounding();
	test_took();
	test_route_fix();
	test_route_initcwnd();
	return failures ? 1 : 0;
}
