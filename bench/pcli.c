/* pcli: the benchmark's client across an emulated path, for bench/psrv (bench/paths.sh,
 * tests/t_path_initcwnd.sh).  Arrival times are the kernel's (SO_TIMESTAMPNS: when each
 * segment entered this namespace's stack), so a client woken late by a loaded machine does
 * not count its own delay; each is taken from when connect() was called.
 *
 *   pcli token HOST PORT BYTES N SPACING_MS [SAMPLES]
 *       N new connections, one started every SPACING_MS, each asking for a BYTES preamble
 *       and a 20-byte token: the time to the token, the data's flights (distinct arrivals
 *       more than half tcpi_min_rtt apart: the handshake plus the flights are the round
 *       trips), tcpi_min_rtt, and the time over it.  Prints mode=token n= failed= mean_us=
 *       p50_us= p99_us= max_us= min_rtt_us= rt_min= rt_p50= rt_max= flights_min=
 *       flights_max=; SAMPLES gets one line per connection: us flights min_rtt_us
 *   pcli sse HOST PORT COUNT [SAMPLES]
 *       one connection, COUNT tokens (one every 20 ms): the gaps between their arrivals.
 *       Prints mode=sse n= p50_us= p99_us= max_us= over= (gaps over 30 ms)
 *   pcli get HOST PORT BYTES TIMEOUT_S
 *       a new connection asks for BYTES: the time to the last one.  Prints mode=get ok=
 *       us= min_rtt_us= (us is TIMEOUT_S when it ran out: ok=0)
 *   pcli burst HOST PORT N [SAMPLES]
 *       N connects at once, each asking for a 3-byte answer once connected: the time to
 *       connect and to the answer's first byte.  Prints connect_p50_us= connect_p99_us=
 *       connect_over= (connects after 1 s) mode=burst n= failed= p50_us= p99_us= max_us=
 *       over= (answers after 1 s); one not answered in 10 s is failed and counts at the
 *       time it was given up; SAMPLES: per connection, its connect and answer times
 *
 * Every wait is bounded: a connection gives up after 15 s (burst: 10 s, get: TIMEOUT_S). */
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/uio.h>

#include "bench.h"

#define CONN_TIMEOUT_NS (15LL * 1000000000)
#define BURST_TIMEOUT_NS (10LL * 1000000000)
#define TOKEN_LEN 20
#define MAX_STAMPS 4096

static int64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A non-blocking connect begun, receive timestamps on; its start in *t0 (CLOCK_REALTIME,
 * the kernel's timestamps' clock). */
static int start_connect(const char *host, int port, int64_t *t0)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, host, port);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
	*t0 = real_ns();
	if (connect(fd, (struct sockaddr *)&ss, len) != 0 && errno != EINPROGRESS)
		die("connect %s:%d", host, port);
	return fd;
}

/* One read; the kernel's receive time of the last segment it took in *ts (kept when none
 * came with it).  Returns read()'s result. */
static ssize_t rx(int fd, char *buf, size_t n, int64_t *ts)
{
	union {
		char b[CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = n};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
	                   .msg_controllen = sizeof ctl.b};
	ssize_t r = recvmsg(fd, &m, 0);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); r > 0 && c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
			struct timespec t;
			memcpy(&t, CMSG_DATA(c), sizeof t);
			*ts = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
		}
	return r;
}

static int send_req(int fd, char what, long n)
{
	char req[16];
	snprintf(req, sizeof req, "%c%010ld", what, n);
	return send(fd, req, 11, MSG_NOSIGNAL) == 11 ? 0 : -1;
}

/* tcpi_min_rtt (us): the least RTT the connection measured, at offset 148 of the kernel's
 * struct tcp_info (Linux 4.6), past the end of libc's; 0 when the kernel has none. */
static unsigned min_rtt_us(int fd)
{
	unsigned char ti[256];
	socklen_t tl = sizeof ti;
	uint32_t v = 0;
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &tl) == 0 && tl >= 152)
		memcpy(&v, ti + 148, sizeof v);
	return v;
}

/* A connect that poll() said is over: 1 connected, -1 refused or timed out. */
static int connected(int fd)
{
	int err = 0;
	socklen_t el = sizeof err;
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
	return err ? -1 : 1;
}

static int64_t *alloc64(long n)
{
	int64_t *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
	if (!p)
		die("calloc");
	return p;
}

/* ---- token: the first token after a preamble, on new connections ---- */

struct tconn {
	int fd, state; /* 0 not started, 1 connecting, 2 reading, 3 done, 4 failed */
	int64_t t0, got, want, last_ts, nstamps;
	int64_t *stamps; /* distinct receive times, in order */
};

/* Its flights: receive times more than half the minimum RTT after the one before. */
static int flights(const struct tconn *c, int64_t min_rtt_ns)
{
	int f = c->nstamps > 0;
	for (int64_t i = 1; i < c->nstamps; i++)
		f += c->stamps[i] - c->stamps[i - 1] > min_rtt_ns / 2;
	return f;
}

static int mode_token(const char *host, int port, long bytes, long n, long spacing_ms, const char *out)
{
	struct tconn *c = calloc((size_t)n, sizeof *c);
	struct pollfd *p = calloc((size_t)n, sizeof *p);
	int64_t *us = alloc64(n), *rtt = alloc64(n), *rt100 = alloc64(n), *fl = alloc64(n);
	static char buf[512]; /* under a segment: each read ends in one, so every segment's
	                       * receive time is seen, however late the reads come */
	if (!c || !p)
		die("calloc");
	int64_t start = now_ns(), deadline = start + n * spacing_ms * 1000000 + CONN_TIMEOUT_NS;
	long done = 0, failed = 0, started = 0, ok = 0;
	FILE *f = out ? fopen(out, "w") : NULL;
	while (done < n && now_ns() < deadline) {
		while (started < n && now_ns() >= start + started * spacing_ms * 1000000) {
			struct tconn *k = &c[started++];
			k->stamps = alloc64(MAX_STAMPS);
			k->want = bytes + TOKEN_LEN;
			k->fd = start_connect(host, port, &k->t0);
			k->state = 1;
		}
		for (long i = 0; i < n; i++) {
			p[i].fd = c[i].state == 1 || c[i].state == 2 ? c[i].fd : -1;
			p[i].events = c[i].state == 1 ? POLLOUT : POLLIN;
			p[i].revents = 0;
		}
		int wait = started < n ? 1 : 50;
		if (poll(p, (nfds_t)n, wait) < 0 && errno != EINTR)
			die("poll");
		for (long i = 0; i < n; i++) {
			struct tconn *k = &c[i];
			if (!p[i].revents)
				continue;
			if (k->state == 1) {
				if (connected(k->fd) < 0 || send_req(k->fd, 't', bytes) != 0)
					k->state = 4;
				else
					k->state = 2;
			} else {
				for (;;) {
					int64_t ts = k->last_ts;
					ssize_t r = rx(k->fd, buf, sizeof buf, &ts);
					if (r < 0 && errno == EAGAIN)
						break;
					if (r <= 0) {
						k->state = k->got == k->want ? 3 : 4;
						break;
					}
					k->got += r;
					if (ts != k->last_ts && k->nstamps < MAX_STAMPS)
						k->stamps[k->nstamps++] = ts;
					k->last_ts = ts;
					if (k->got == k->want) {
						k->state = 3;
						break;
					}
				}
			}
			if (k->state >= 3) {
				unsigned mr = min_rtt_us(k->fd);
				close(k->fd);
				done++;
				if (k->state == 4 || !k->last_ts) {
					failed++;
				} else {
					us[ok] = (k->last_ts - k->t0) / 1000;
					rtt[ok] = mr;
					rt100[ok] = mr ? us[ok] * 100 / mr : 0;
					fl[ok] = flights(k, (int64_t)mr * 1000);
					if (f)
						fprintf(f, "%lld %lld %u\n", (long long)us[ok], (long long)fl[ok], mr);
					ok++;
				}
				free(k->stamps);
				k->stamps = NULL;
			}
		}
	}
	for (long i = 0; i < n; i++)
		if (c[i].state == 1 || c[i].state == 2) { /* ran out of time */
			close(c[i].fd);
			failed++;
		}
	if (f)
		fclose(f);
	long long sum = 0;
	for (long i = 0; i < ok; i++)
		sum += us[i];
	qsort(us, (size_t)ok, sizeof *us, cmp_i64);
	qsort(rtt, (size_t)ok, sizeof *rtt, cmp_i64);
	qsort(rt100, (size_t)ok, sizeof *rt100, cmp_i64);
	qsort(fl, (size_t)ok, sizeof *fl, cmp_i64);
	printf("mode=token n=%ld failed=%ld mean_us=%lld p50_us=%lld p99_us=%lld max_us=%lld "
	       "min_rtt_us=%lld rt_min=%.2f rt_p50=%.2f rt_max=%.2f flights_min=%lld flights_max=%lld\n",
	       ok, failed, ok ? sum / ok : -1, (long long)pct(us, (size_t)ok, 50),
	       (long long)pct(us, (size_t)ok, 99), ok ? (long long)us[ok - 1] : -1,
	       (long long)pct(rtt, (size_t)ok, 50), ok ? rt100[0] / 100.0 : -1,
	       (double)pct(rt100, (size_t)ok, 50) / 100.0, ok ? rt100[ok - 1] / 100.0 : -1,
	       ok ? (long long)fl[0] : -1, ok ? (long long)fl[ok - 1] : -1);
	return failed ? 1 : 0;
}

/* Waits until fd is ready for events or the deadline (now_ns()) passes: 1, or 0. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = (deadline - now_ns()) / 1000000;
		if (left <= 0)
			return 0;
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, left > 1000 ? 1000 : (int)left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			die("poll");
	}
}

/* ---- sse: the gaps between tokens of a stream ---- */

static int mode_sse(const char *host, int port, long count, const char *out)
{
	int64_t t0, deadline = now_ns() + CONN_TIMEOUT_NS + count * 20000000LL;
	int fd = start_connect(host, port, &t0);
	if (!wait_fd(fd, POLLOUT, deadline) || connected(fd) < 0 || send_req(fd, 'e', count) != 0)
		die("sse: connect %s:%d", host, port);
	int64_t *gap = alloc64(count), prev = 0;
	long got = 0, n = 0;
	char tok[TOKEN_LEN];
	size_t have = 0;
	while (got < count && wait_fd(fd, POLLIN, deadline)) {
		int64_t ts = 0;
		/* a token per read: its own segment's time, or the one it shared */
		ssize_t r = rx(fd, tok + have, TOKEN_LEN - have, &ts);
		if (r < 0 && errno == EAGAIN)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		if (have < TOKEN_LEN)
			continue;
		have = 0;
		if (got++ > 0)
			gap[n++] = (ts - prev) / 1000;
		prev = ts;
	}
	close(fd);
	report("sse", gap, (size_t)n, out, 30000, (size_t)(count - got));
	return got == count ? 0 : 1;
}

/* ---- get: one response of BYTES on a new connection ---- */

static int mode_get(const char *host, int port, long bytes, long timeout_s)
{
	int64_t t0, ts = 0, deadline = now_ns() + timeout_s * 1000000000LL;
	int fd = start_connect(host, port, &t0);
	long got = 0;
	static char buf[65536];
	if (wait_fd(fd, POLLOUT, deadline) && connected(fd) > 0 && send_req(fd, 'g', bytes) == 0)
		while (got < bytes && wait_fd(fd, POLLIN, deadline)) {
			ssize_t r = rx(fd, buf, sizeof buf, &ts);
			if (r < 0 && errno == EAGAIN)
				continue;
			if (r <= 0)
				break;
			got += r;
		}
	int ok = got == bytes && ts;
	unsigned mr = min_rtt_us(fd);
	close(fd);
	printf("mode=get bytes=%ld ok=%d us=%lld min_rtt_us=%u\n", bytes, ok,
	       ok ? (long long)(ts - t0) / 1000 : timeout_s * 1000000LL, mr);
	return ok ? 0 : 1;
}

/* ---- burst: N connects at once, each with a request ---- */

static int mode_burst(const char *host, int port, long n, const char *out)
{
	struct pollfd *p = calloc((size_t)n, sizeof *p);
	int64_t *t0 = alloc64(n), *conn = alloc64(n), *ans = alloc64(n);
	if (!p)
		die("calloc");
	for (long i = 0; i < n; i++) {
		p[i].fd = start_connect(host, port, &t0[i]);
		p[i].events = POLLOUT;
		conn[i] = ans[i] = -1;
	}
	long pending = n, failed = 0;
	int64_t deadline = now_ns() + BURST_TIMEOUT_NS;
	char buf[64];
	while (pending > 0 && now_ns() < deadline) {
		if (poll(p, (nfds_t)n, 100) < 0 && errno != EINTR)
			die("poll");
		for (long i = 0; i < n; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			p[i].revents = 0;
			if (p[i].events == POLLOUT) {
				if (connected(p[i].fd) > 0 && send_req(p[i].fd, 'h', 0) == 0) {
					conn[i] = (real_ns() - t0[i]) / 1000;
					p[i].events = POLLIN;
					continue;
				}
			} else {
				int64_t ts = 0;
				ssize_t r = rx(p[i].fd, buf, sizeof buf, &ts);
				if (r < 0 && errno == EAGAIN)
					continue;
				if (r > 0 && ts)
					ans[i] = (ts - t0[i]) / 1000;
			}
			close(p[i].fd);
			p[i].fd = -1;
			pending--;
		}
	}
	/* refused, reset, or not there by the deadline: failed, counted at the time given up */
	for (long i = 0; i < n; i++) {
		if (p[i].fd >= 0)
			close(p[i].fd);
		int64_t gave_up = (real_ns() - t0[i]) / 1000;
		if (conn[i] < 0)
			conn[i] = gave_up;
		if (ans[i] < 0) {
			ans[i] = gave_up;
			failed++;
		}
	}
	FILE *f = out ? fopen(out, "w") : NULL;
	size_t over_c = 0;
	for (long i = 0; i < n; i++) {
		over_c += conn[i] > 1000000;
		if (f)
			fprintf(f, "%lld %lld\n", (long long)conn[i], (long long)ans[i]);
	}
	if (f)
		fclose(f);
	qsort(conn, (size_t)n, sizeof *conn, cmp_i64);
	printf("connect_p50_us=%lld connect_p99_us=%lld connect_over=%zu ",
	       (long long)pct(conn, (size_t)n, 50), (long long)pct(conn, (size_t)n, 99), over_c);
	report("burst", ans, (size_t)n, NULL, 1000000, (size_t)failed);
	return 0;
}

static void usage(void)
{
	fputs("usage: pcli token HOST PORT BYTES N SPACING_MS [SAMPLES] | sse HOST PORT COUNT [SAMPLES]\n"
	      "       | get HOST PORT BYTES TIMEOUT_S | burst HOST PORT N [SAMPLES]\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc < 5)
		usage();
	const char *m = argv[1], *host = argv[2];
	int port = (int)num_arg(argv[3], "port");
	long n = num_arg(argv[4], "count");
	if (strcmp(m, "token") == 0 && argc >= 7)
		return mode_token(host, port, n, num_arg(argv[5], "connections"),
		                  num_arg(argv[6], "spacing"), argc > 7 ? argv[7] : NULL);
	if (strcmp(m, "sse") == 0)
		return mode_sse(host, port, n, argc > 5 ? argv[5] : NULL);
	if (strcmp(m, "get") == 0 && argc >= 6)
		return mode_get(host, port, n, num_arg(argv[5], "timeout"));
	if (strcmp(m, "burst") == 0)
		return mode_burst(host, port, n, argc > 5 ? argv[5] : NULL);
	usage();
}
