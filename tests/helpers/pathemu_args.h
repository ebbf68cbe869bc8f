/* pathemu's command line (the options' meaning: the header of tests/helpers/pathemu.c).
 * Every parser returns 0, or -1 for a value it does not take; pe_args says why on stderr. */
#ifndef PATHEMU_ARGS_H
#define PATHEMU_ARGS_H

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One direction of the path (times in ns, rate in bit/s; 0: none). */
struct pe_path {
	uint64_t delay, jitter, rate, qlimit;
	int qbytes;             /* qlimit is in bytes, not packets */
	double loss;            /* probability per packet */
	double burst, burst_len; /* --burst as given: the share lost, the mean run */
	double to_bad, to_good; /* Gilbert-Elliott: the state's changes, per packet */
};

struct pe_opts {
	const char *name;
	int mtu, rt; /* rt: real-time priority (the default; --no-rt) */
	long long seconds; /* 0: until a signal */
	uint64_t seed;
	struct pe_path path[2]; /* a2b, b2a */
};

/* A decimal number at s, its end in *end; -1 unless finite, in [0, max]. */
static int pe_decimal(const char *s, char **end, double max, double *v)
{
	errno = 0;
	*v = strtod(s, end);
	if (errno || *end == s || !(*v >= 0 && *v <= max))
		return -1;
	return 0;
}

/* 30ms, 500us, 0.2s, 30 (ms): at most an hour, in ns */
static int pe_time(const char *s, uint64_t *ns)
{
	char *end;
	double v;
	if (pe_decimal(s, &end, 3600e3, &v) != 0)
		return -1;
	double unit = 1e6;
	if (!strcmp(end, "us"))
		unit = 1e3;
	else if (!strcmp(end, "s"))
		unit = 1e9;
	else if (*end && strcmp(end, "ms"))
		return -1;
	*ns = (uint64_t)(v * unit + 0.5);
	return *ns <= 3600000000000ull ? 0 : -1;
}

/* "5%" or "5": a share in [0, 1); *end where it stopped (--burst's ",LEN" follows) */
static int pe_pct(const char *s, char **end, double *p)
{
	double v;
	if (pe_decimal(s, end, 100, &v) != 0 || v >= 100)
		return -1;
	if (**end == '%')
		(*end)++;
	*p = v / 100;
	return 0;
}

/* 20mbit, 500kbit, 1gbit, 20m, 20000000: bits per second, 1 kbit/s to 400 Gbit/s */
static int pe_rate(const char *s, uint64_t *bps)
{
	static const struct {
		const char *unit;
		double mult;
	} units[] = {{"", 1}, {"bit", 1}, {"k", 1e3}, {"kbit", 1e3}, {"m", 1e6}, {"mbit", 1e6},
	             {"g", 1e9}, {"gbit", 1e9}};
	char *end;
	double v;
	if (pe_decimal(s, &end, 1e12, &v) != 0)
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (!strcasecmp(end, units[i].unit)) {
			v *= units[i].mult;
			if (v < 1000 || v > 400e9)
				return -1;
			*bps = (uint64_t)(v + 0.5);
			return 0;
		}
	return -1;
}

/* 200 or 200p (packets), 300000b, 300kb, 1mb (bytes, in 1000s) */
static int pe_queue(const char *s, uint64_t *limit, int *bytes)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-' || v == 0 || v > 1000000000ull)
		return -1;
	*bytes = 1;
	if (!*end || !strcasecmp(end, "p"))
		*bytes = 0;
	else if (!strcasecmp(end, "kb"))
		v *= 1000;
	else if (!strcasecmp(end, "mb"))
		v *= 1000000;
	else if (strcasecmp(end, "b"))
		return -1;
	/* (the ring holds a packet a slot: a queue longer than this is no path's, and its ring
	 * would take gigabytes) */
	if (*bytes ? v > 4000000ull : v > 20000ull)
		return -1;
	*limit = v;
	return 0;
}

/* --burst P%,LEN: a run of the bad state lasts 1/to_good packets on average, and the share
 * of packets in it, to_bad / (to_bad + to_good), is P. */
static int pe_burst(const char *s, struct pe_path *p)
{
	char *end;
	double share, len;
	if (pe_pct(s, &end, &share) != 0 || *end != ',' || share <= 0 ||
	    pe_decimal(end + 1, &end, 1e6, &len) != 0 || *end || len < 1) {
		fprintf(stderr, "pathemu: --burst: \"%s\" is not P%%,LEN (5%%,4: 5%% lost, in runs "
		                "of 4 on average)\n", s);
		return -1;
	}
	double to_good = 1 / len, to_bad = share * to_good / (1 - share);
	if (to_bad > 1) {
		fprintf(stderr, "pathemu: --burst %s: runs of %g cannot make %g%% (%g%% at most)\n", s,
		        len, share * 100, 100 * len / (len + 1));
		return -1;
	}
	p->burst = share;
	p->burst_len = len;
	p->to_good = to_good;
	p->to_bad = to_bad;
	return 0;
}

static int pe_whole(const char *s, long long lo, long long hi, long long *v)
{
	char *end;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno || end == s || *end || *v < lo || *v > hi ? -1 : 0;
}

/* The command line into o (its defaults set by the caller); 0, or -1 with why on stderr.
 * The path options apply to the direction(s) named last: --a2b, --b2a, --both (the first). */
static int pe_args(int argc, char **argv, struct pe_opts *o)
{
	enum { O_NAME = 256, O_MTU, O_SECONDS, O_SEED, O_NO_RT, O_A2B, O_B2A, O_BOTH, O_DELAY,
	       O_JITTER, O_LOSS, O_BURST, O_RATE, O_QUEUE };
	static const struct option opts[] = {
	    {"name", 1, 0, O_NAME},   {"mtu", 1, 0, O_MTU},     {"seconds", 1, 0, O_SECONDS},
	    {"seed", 1, 0, O_SEED},   {"no-rt", 0, 0, O_NO_RT},   {"a2b", 0, 0, O_A2B},
	    {"b2a", 0, 0, O_B2A},     {"both", 0, 0, O_BOTH},   {"delay", 1, 0, O_DELAY},
	    {"jitter", 1, 0, O_JITTER}, {"loss", 1, 0, O_LOSS}, {"burst", 1, 0, O_BURST},
	    {"rate", 1, 0, O_RATE},   {"queue", 1, 0, O_QUEUE}, {0, 0, 0, 0}};
	int c, li = 0, sel = 3, queue_set = 0; /* sel: bit 0 a2b, bit 1 b2a */
	opterr = 1;
	while ((c = getopt_long(argc, argv, "", opts, &li)) != -1) {
		if (c == '?')
			return -1;
		long long n = 0;
		int bad = 0;
		for (int i = 0; i < 2 && !bad; i++) {
			struct pe_path *p = &o->path[i];
			if (!(sel & (1 << i)))
				continue;
			if (c == O_DELAY)
				bad = pe_time(optarg, &p->delay);
			else if (c == O_JITTER)
				bad = pe_time(optarg, &p->jitter);
			else if (c == O_LOSS) {
				char *end;
				bad = pe_pct(optarg, &end, &p->loss) != 0 || *end ? -1 : 0;
			} else if (c == O_BURST)
				bad = pe_burst(optarg, p);
			else if (c == O_RATE)
				bad = pe_rate(optarg, &p->rate);
			else if (c == O_QUEUE) {
				bad = pe_queue(optarg, &p->qlimit, &p->qbytes);
				queue_set |= 1 << i;
			}
		}
		switch (c) {
		case O_NAME:
			o->name = optarg;
			bad = !*optarg || strlen(optarg) > 40 ||
			      strspn(optarg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			                     "0123456789_.-") != strlen(optarg);
			break;
		case O_MTU: /* (576: the least every IPv4 host takes; IPv6 needs 1280) */
			bad = pe_whole(optarg, 576, 65535, &n);
			o->mtu = (int)n;
			break;
		case O_SECONDS:
			bad = pe_whole(optarg, 1, 86400, &o->seconds);
			break;
		case O_SEED:
			bad = pe_whole(optarg, 0, INT64_MAX, &n);
			o->seed = (uint64_t)n;
			break;
		case O_NO_RT:
			o->rt = 0;
			break;
		case O_A2B:
		case O_B2A:
		case O_BOTH:
			sel = c == O_A2B ? 1 : c == O_B2A ? 2 : 3;
			break;
		}
		if (bad && c == O_BURST)
			return -1; /* (pe_burst said why) */
		if (bad) {
			fprintf(stderr, "pathemu: --%s: \"%s\" is not a value it takes\n", opts[li].name,
			        optarg);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pathemu: \"%s\": not an option\n", argv[optind]);
		return -1;
	}
	for (int i = 0; i < 2; i++)
		if ((queue_set & (1 << i)) && !o->path[i].rate) {
			fprintf(stderr, "pathemu: --queue for %s without --rate: a queue fills only "
			                "ahead of a bottleneck\n", i ? "b2a" : "a2b");
			return -1;
		}
	return 0;
}

#endif
