/* Shared by the benchmark programs in bench/: clock, exits, address parsing, sorting and
 * percentiles, and the "key=value" result line the driver (bench/run.sh) reads.  These
 * programs know nothing of socktune: the driver preloads it into them (or not). */
#ifndef ST_BENCH_H
#define ST_BENCH_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noreturn, format(printf, 1, 2))) static inline void die(const char *fmt, ...);
static inline void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (errno)
		fprintf(stderr, ": %s", strerror(errno));
	fputc('\n', stderr);
	exit(2);
}

/* "127.0.0.1" or "::1" and a port into ss. */
static inline socklen_t make_addr(struct sockaddr_storage *ss, const char *host, int port)
{
	memset(ss, 0, sizeof *ss);
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		return sizeof *a4;
	}
	if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		return sizeof *a6;
	}
	errno = 0;
	die("not a numeric address: %s", host);
}

static inline long num_arg(const char *s, const char *what)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0) {
		errno = 0;
		die("bad %s: %s", what, s);
	}
	return v;
}

static inline int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of n sorted values. */
static inline int64_t pct(const int64_t *sorted, size_t n, int p)
{
	if (n == 0)
		return -1;
	size_t rank = ((size_t)p * n + 99) / 100;
	return sorted[rank ? rank - 1 : 0];
}

/* Write the samples (microseconds, one a line, in the order taken) to path, then print
 * the summary line "n=.. p50_us=.. p99_us=.. max_us=.. over_us=..:.." on stdout. */
static inline void report(const char *mode, int64_t *us, size_t n, const char *samples,
                          int64_t over_us, size_t failed)
{
	if (samples) {
		FILE *f = fopen(samples, "w");
		if (!f)
			die("open %s", samples);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%lld\n", (long long)us[i]);
		fclose(f);
	}
	size_t over = 0;
	for (size_t i = 0; i < n; i++)
		over += us[i] > over_us;
	qsort(us, n, sizeof *us, cmp_i64);
	printf("mode=%s n=%zu failed=%zu p50_us=%lld p99_us=%lld max_us=%lld over=%zu over_us=%lld\n",
	       mode, n, failed, (long long)pct(us, n, 50), (long long)pct(us, n, 99),
	       n ? (long long)us[n - 1] : -1LL, over, (long long)over_us);
	fflush(stdout);
}

#endif
