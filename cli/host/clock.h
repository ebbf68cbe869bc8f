/* The clocks the command reads, in one place: the monotonic clock for how long something took
 * and when the next round is due (never stepped by NTP or date, so a loop's pace survives a
 * clock change), and the CPU time this process has used for what a sample costs (a loaded
 * machine stretches wall time, not the CPU a dump took: doctor and watch pace their
 * connection samples by it).  Internal to cli/. */
#ifndef SOCKTUNE_CLOCK_H
#define SOCKTUNE_CLOCK_H

#include <time.h>

static inline double clock_s(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CLOCK_MONOTONIC in seconds, milliseconds and nanoseconds */
static inline double clock_mono_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static inline long long clock_mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static inline long long clock_mono_ms(void)
{
	return clock_mono_ns() / 1000000;
}

/* The CPU time (user and system: a sock_diag dump is the kernel's work) of every thread of
 * this process, in seconds */
static inline double clock_cpu_s(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

#endif
