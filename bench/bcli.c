/* The benchmark's client.  One program, one mode per case, each printing one result line
 * (and, where asked, every sample to a file for the chart):
 *
 *   bcli http HOST PORT N PATH [SAMPLES]   N keep-alive GETs on one connection (case 1)
 *   bcli twowrite HOST PORT N [SAMPLES]    N requests, each written in two small writes with
 *                                          Nagle on, on one connection (case 2)
 *   bcli burst HOST PORT N [SAMPLES]       N connects started at once, time of each (case 3)
 *   bcli body HOST PORT BYTES              headers + BYTES of body in one send (case 4)
 *   bcli cc HOST PORT N                    N connect / wait for close / close cycles (case 5)
 *   bcli hold HOST PORT N SECONDS          open N connections, keep them until SIGTERM or
 *                                          SECONDS pass, then reset them (case 5, RSS)
 *   bcli pubsub HOST PORT N [SAMPLES]      N QoS-1 publishes to bsrv pub on one connection,
 *                                          Nagle on, subscribed to its own topic: each
 *                                          timed from the PUBLISH until its PUBACK and the
 *                                          forwarded message are in, the forwarded one
 *                                          acknowledged at once (case 6)
 *   bcli wait HOST PORT                    until something accepts there (at most 10 s)
 *   bcli freeport                          a free TCP port on 127.0.0.1
 *
 * Every wait is bounded: receives time out after 10 s, bursts after 15 s. */
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <strings.h>
#include <sys/resource.h>

#include "bench.h"

#define IO_TIMEOUT_S 10

static int tcp_connect(const char *host, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, host, port);
	int fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&ss, len) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Close without TIME_WAIT (an RST), so thousands of cycles do not use up the port range. */
static void close_rst(int fd)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(fd);
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		p += w;
		n -= (size_t)w;
	}
}

/* Read one HTTP response (headers, then Content-Length bytes).  Returns 0, or -1. */
static int read_response(int fd)
{
	static char buf[65536];
	size_t have = 0;
	char *end = NULL;
	while (!end) {
		if (have == sizeof buf - 1)
			return -1;
		ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
		if (r <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = 0;
		end = strstr(buf, "\r\n\r\n");
	}
	long clen = 0;
	for (char *p = buf; p && p < end; p = strstr(p, "\r\n")) {
		while (*p == '\r' || *p == '\n')
			p++;
		if (strncasecmp(p, "Content-Length:", 15) == 0)
			clen = strtol(p + 15, NULL, 10);
	}
	size_t body = have - (size_t)(end + 4 - buf);
	while ((long)body < clen) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r <= 0)
			return -1;
		body += (size_t)r;
	}
	return 0;
}

static int64_t *samples_new(long n)
{
	int64_t *s = calloc((size_t)(n ? n : 1), sizeof *s);
	if (!s)
		die("calloc");
	return s;
}

static int mode_http(const char *host, int port, long n, const char *path, const char *out)
{
	int fd = tcp_connect(host, port);
	if (fd < 0)
		die("connect %s:%d", host, port);
	char req[512];
	int len = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host);
	int64_t *us = samples_new(n);
	long i;
	for (i = 0; i < n; i++) {
		int64_t t0 = now_ns();
		write_all(fd, req, (size_t)len);
		if (read_response(fd) != 0)
			break;
		us[i] = (now_ns() - t0) / 1000;
	}
	close(fd);
	report("http", us, (size_t)i, out, 20000, (size_t)(n - i));
	return i == n ? 0 : 1;
}

static int mode_twowrite(const char *host, int port, long n, const char *out)
{
	int fd = tcp_connect(host, port);
	if (fd < 0)
		die("connect %s:%d", host, port);
	/* Nagle stays on (the default): the second write waits for the first one's ACK. */
	static const char a[] = "GET /x HTTP/1.1\r\n", b[] = "Host: bench\r\n\r\n";
	int64_t *us = samples_new(n);
	long i;
	for (i = 0; i < n; i++) {
		int64_t t0 = now_ns();
		write_all(fd, a, sizeof a - 1);
		write_all(fd, b, sizeof b - 1);
		if (read_response(fd) != 0)
			break;
		us[i] = (now_ns() - t0) / 1000;
	}
	close(fd);
	report("twowrite", us, (size_t)i, out, 20000, (size_t)(n - i));
	return i == n ? 0 : 1;
}

/* Case 6: what an MQTT client with Nagle on (paho's default) does when it publishes at
 * QoS 1 to a topic it is subscribed to: PUBLISH, then the broker's forwarded PUBLISH
 * (answered with a PUBACK at once) and its PUBACK, then the next PUBLISH.  16-byte
 * PUBLISH, 4-byte PUBACK, first byte 'P' or 'A' (bsrv pub). */
static int mode_pubsub(const char *host, int port, long n, const char *out)
{
	int fd = tcp_connect(host, port);
	if (fd < 0)
		die("connect %s:%d", host, port);
	static const char pub[16] = "Ptopic/x:hello!", puback[4] = {'A', 2, 0, 1};
	char buf[256];
	int64_t *us = samples_new(n);
	long i;
	size_t have = 0;
	for (i = 0; i < n; i++) {
		int64_t t0 = now_ns();
		write_all(fd, pub, sizeof pub);
		int fwd = 0, acked = 0;
		while (!(fwd && acked)) {
			ssize_t r = read(fd, buf + have, sizeof buf - have);
			if (r <= 0)
				goto out;
			have += (size_t)r;
			size_t off = 0;
			while (have > off) {
				size_t need = buf[off] == 'P' ? sizeof pub : sizeof puback;
				if (have - off < need)
					break;
				if (buf[off] == 'P') {
					fwd = 1;
					write_all(fd, puback, sizeof puback); /* QoS 1: acknowledge at once */
				} else {
					acked = 1;
				}
				off += need;
			}
			memmove(buf, buf + off, have - off);
			have -= off;
		}
		us[i] = (now_ns() - t0) / 1000;
	}
out:
	close(fd);
	report("pubsub", us, (size_t)i, out, 20000, (size_t)(n - i));
	return i == n ? 0 : 1;
}

static int mode_burst(const char *host, int port, long n, const char *out)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, host, port);
	struct pollfd *p = calloc((size_t)n, sizeof *p);
	int64_t *t0 = samples_new(n), *us = samples_new(n);
	if (!p)
		die("calloc");
	for (long i = 0; i < n; i++) {
		p[i].fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (p[i].fd < 0)
			die("socket");
		p[i].events = POLLOUT;
		t0[i] = now_ns();
		if (connect(p[i].fd, (struct sockaddr *)&ss, len) == 0)
			us[i] = 0, p[i].events = 0;
		else if (errno != EINPROGRESS)
			die("connect");
	}
	long pending = n, failed = 0;
	int64_t deadline = now_ns() + 15LL * 1000000000;
	for (long i = 0; i < n; i++)
		pending -= p[i].events == 0;
	while (pending > 0 && now_ns() < deadline) {
		int r = poll(p, (nfds_t)n, 100);
		if (r < 0 && errno != EINTR)
			die("poll");
		int64_t t = now_ns();
		for (long i = 0; r > 0 && i < n; i++) {
			if (!p[i].events || !p[i].revents)
				continue;
			int err = 0;
			socklen_t el = sizeof err;
			getsockopt(p[i].fd, SOL_SOCKET, SO_ERROR, &err, &el);
			failed += err != 0;
			us[i] = (t - t0[i]) / 1000;
			p[i].events = 0;
			p[i].fd = -p[i].fd - 1; /* poll ignores negative descriptors */
			pending--;
		}
	}
	for (long i = 0; i < n; i++) {
		if (p[i].events) /* never completed: counted as failed at the deadline */
			us[i] = (now_ns() - t0[i]) / 1000, failed++;
		close_rst(p[i].fd < 0 ? -p[i].fd - 1 : p[i].fd);
	}
	report("burst", us, (size_t)n, out, 500000, (size_t)failed);
	return 0;
}

/* The body server closes after its response: read to the end.  Returns 1 on a clean end. */
static int read_rest(int fd)
{
	char buf[4096];
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r == 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return 0;
	}
}

static int mode_body(const char *host, int port, long bytes)
{
	int fd = tcp_connect(host, port);
	if (fd < 0)
		die("connect %s:%d", host, port);
	char head[256];
	int hl = snprintf(head, sizeof head,
	                  "POST /upload HTTP/1.1\r\nHost: %s\r\nContent-Length: %ld\r\n\r\n", host, bytes);
	size_t total = (size_t)hl + (size_t)bytes;
	char *buf = malloc(total);
	if (!buf)
		die("malloc");
	memcpy(buf, head, (size_t)hl);
	memset(buf + hl, 'x', (size_t)bytes);
	int64_t t0 = now_ns();
	/* One send of headers and body: it returns once the kernel holds all of it, so its
	 * duration is how long the client is blocked by the peer's receive window. */
	size_t off = 0;
	while (off < total) {
		ssize_t w = send(fd, buf + off, total - off, 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("send");
		off += (size_t)w;
	}
	int64_t t1 = now_ns();
	char c;
	ssize_t r = read(fd, &c, 1);
	int64_t t2 = now_ns();
	struct tcp_info ti;
	socklen_t tl = sizeof ti;
	memset(&ti, 0, sizeof ti);
	getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl);
	int ok = r == 1 && read_rest(fd);
	printf("mode=body bytes=%ld ok=%d send_us=%lld ttfb_us=%lld total_retrans=%u rto_us=%u "
	       "snd_mss=%u rcv_space=%u\n",
	       bytes, ok, (long long)(t1 - t0) / 1000, (long long)(t2 - t0) / 1000,
	       ti.tcpi_total_retrans, ti.tcpi_rto, ti.tcpi_snd_mss, ti.tcpi_rcv_space);
	close(fd);
	free(buf);
	return ok ? 0 : 1;
}

static int mode_cc(const char *host, int port, long n)
{
	int64_t t0 = now_ns();
	long done = 0;
	for (; done < n; done++) {
		int fd = tcp_connect(host, port);
		if (fd < 0)
			break;
		char c;
		ssize_t r = read(fd, &c, 1); /* the server accepts and closes: wait for its FIN */
		close_rst(fd);
		if (r != 0)
			break;
	}
	double s = (double)(now_ns() - t0) / 1e9;
	printf("mode=cc n=%ld done=%ld seconds=%.3f rate=%.0f\n", n, done, s, done / s);
	return done == n ? 0 : 1;
}

static void on_term(int sig)
{
	(void)sig;
}

static int mode_hold(const char *host, int port, long n, long seconds)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	int *fds = calloc((size_t)n, sizeof *fds);
	if (!fds)
		die("calloc");
	long i;
	for (i = 0; i < n; i++)
		if ((fds[i] = tcp_connect(host, port)) < 0)
			break;
	printf("mode=hold n=%ld held=%ld\n", n, i);
	fflush(stdout);
	/* Until SIGTERM (no SA_RESTART: poll returns EINTR) or SECONDS. */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	poll(NULL, 0, (int)(seconds * 1000));
	for (long j = 0; j < i; j++)
		close_rst(fds[j]);
	return i == n ? 0 : 1;
}

static int mode_wait(const char *host, int port)
{
	for (int i = 0; i < 500; i++) {
		int fd = tcp_connect(host, port);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		usleep(20000);
	}
	fprintf(stderr, "bench: nothing listens on %s:%d after 10 s\n", host, port);
	return 1;
}

static int mode_freeport(void)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, "127.0.0.1", 0);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) != 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
		die("freeport");
	printf("%d\n", ntohs(((struct sockaddr_in *)&ss)->sin_port));
	close(fd);
	return 0;
}

static void usage(void)
{
	fputs("usage: bcli http|twowrite|pubsub|burst|body|cc|hold|wait HOST PORT [ARGS]; bcli freeport\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "freeport") == 0)
		return mode_freeport();
	if (argc < 4)
		usage();
	const char *m = argv[1], *host = argv[2];
	int port = (int)num_arg(argv[3], "port");
	long n = argc > 4 ? num_arg(argv[4], "count") : 0;
	if (strcmp(m, "wait") == 0)
		return mode_wait(host, port);
	if (argc < 5)
		usage();
	if (strcmp(m, "http") == 0 && argc >= 6)
		return mode_http(host, port, n, argv[5], argc > 6 ? argv[6] : NULL);
	if (strcmp(m, "twowrite") == 0)
		return mode_twowrite(host, port, n, argc > 5 ? argv[5] : NULL);
	if (strcmp(m, "pubsub") == 0)
		return mode_pubsub(host, port, n, argc > 5 ? argv[5] : NULL);
	if (strcmp(m, "burst") == 0)
		return mode_burst(host, port, n, argc > 5 ? argv[5] : NULL);
	if (strcmp(m, "body") == 0)
		return mode_body(host, port, n);
	if (strcmp(m, "cc") == 0)
		return mode_cc(host, port, n);
	if (strcmp(m, "hold") == 0 && argc >= 6)
		return mode_hold(host, port, n, num_arg(argv[5], "seconds"));
	usage();
}
