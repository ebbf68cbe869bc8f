/* psrv: the benchmark's server across an emulated path (bench/paths.sh, tests/
 * t_path_initcwnd.sh), a thread per connection, alive at most BENCH_LIFETIME s (300):
 *
 *   psrv [-c CC] [-b BACKLOG] HOST PORT
 *
 *   -c CC       TCP_CONGESTION on the listener, which every accepted connection copies:
 *               the default of a typical host where the namespace cannot have it (a
 *               namespace other than the first may default only to what
 *               net.ipv4.tcp_allowed_congestion_control lists, and cubic is not there
 *               on a host that defaults to bbr)
 *   -b BACKLOG  listen()'s backlog (default 1024)
 *   HOST        an address, or :: for every IPv4 and IPv6 one
 *
 * A request is a letter and ten digits, N:
 *   t  a preamble of N bytes and a 20-byte token, in one write, then close: the token
 *      ends the last segment, so what it waits for is the congestion window alone
 *   e  N tokens of 20 bytes, one every 20 ms by an absolute clock, each its own write
 *      (an SSE stream), then close
 *   g  a response of N bytes, then close
 *   h  a 3-byte answer, then close (a connect burst's request)
 * After each connection, one line on stdout, from the server's end (TCP_INFO):
 *   CONN req=t n=46080 ok=1 peer=198.18.0.1 cc=cubic cwnd0=10 total_retrans=0 snd_mss=1448
 * cwnd0 read at accept, before anything was sent: the initial window it got.
 *
 * It knows nothing of socktune: bench/paths.sh runs it plain, preloaded, or in the cgroup
 * mode. */
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>

#include "bench.h"

#define LIFETIME_S 300
#define REQ_LEN 11
#define TOKEN_LEN 20
#define TOKEN_EVERY_NS 20000000LL

static const char token[TOKEN_LEN + 1] = "data: tok tok tok\n\n.";

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int read_full(int fd, char *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* N bytes of x, the last TOKEN_LEN of them the token when tail is set. */
static int write_bytes(int fd, long n, int tail)
{
	size_t len = (size_t)n + (tail ? TOKEN_LEN : 0);
	char *buf = malloc(len ? len : 1);
	if (!buf)
		return -1;
	memset(buf, 'x', len);
	if (tail)
		memcpy(buf + n, token, TOKEN_LEN);
	int rc = write_all(fd, buf, len);
	free(buf);
	return rc;
}

/* Tokens at t0 + i x 20 ms: a late wakeup does not push the later ones back. */
static int write_stream(int fd, long n)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (long i = 0; i < n; i++) {
		if (i > 0) {
			t.tv_nsec += TOKEN_EVERY_NS;
			while (t.tv_nsec >= 1000000000L) {
				t.tv_nsec -= 1000000000L;
				t.tv_sec++;
			}
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
				;
		}
		if (write_all(fd, token, TOKEN_LEN) != 0)
			return -1;
	}
	return 0;
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct timeval tv = {.tv_sec = 30}; /* a request that never comes ends the thread */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	struct tcp_info ti;
	socklen_t tl = sizeof ti;
	memset(&ti, 0, sizeof ti);
	getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl);
	unsigned cwnd0 = ti.tcpi_snd_cwnd;
	char req[REQ_LEN + 1] = {0};
	int rc = -1;
	long n = -1;
	if (read_full(fd, req, REQ_LEN) == 0) {
		char *end;
		n = strtol(req + 1, &end, 10);
		if (end == req + REQ_LEN && n >= 0) {
			if (req[0] == 't')
				rc = write_bytes(fd, n, 1);
			else if (req[0] == 'e')
				rc = write_stream(fd, n);
			else if (req[0] == 'g')
				rc = write_bytes(fd, n, 0);
			else if (req[0] == 'h')
				rc = write_all(fd, "ok\n", 3);
		}
	}
	char cc[16] = "?", peer[INET6_ADDRSTRLEN] = "?";
	socklen_t cl = sizeof cc - 1;
	getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &cl);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
		inet_ntop(ss.ss_family, ss.ss_family == AF_INET6 ? (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
		                                                : (void *)&((struct sockaddr_in *)&ss)->sin_addr,
		          peer, sizeof peer);
	tl = sizeof ti;
	getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl);
	/* (one printf: the stream's lock keeps the threads' lines whole) */
	printf("CONN req=%c n=%ld ok=%d peer=%s cc=%s cwnd0=%u total_retrans=%u snd_mss=%u\n",
	       req[0] ? req[0] : '-', n, rc == 0, peer, cc, cwnd0, ti.tcpi_total_retrans, ti.tcpi_snd_mss);
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *cc = NULL;
	long backlog = 1024;
	int c;
	while ((c = getopt(argc, argv, "c:b:")) != -1) {
		if (c == 'c')
			cc = optarg;
		else if (c == 'b')
			backlog = num_arg(optarg, "backlog");
		else
			return 2;
	}
	if (argc - optind != 2) {
		fputs("usage: psrv [-c CC] [-b BACKLOG] HOST PORT\n", stderr);
		return 2;
	}
	const char *t = getenv("BENCH_LIFETIME");
	alarm(t ? (unsigned)num_arg(t, "BENCH_LIFETIME") : LIFETIME_S);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, argv[optind], (int)num_arg(argv[optind + 1], "port"));
	int lfd = socket(ss.ss_family, SOCK_STREAM, 0);
	int one = 1, zero = 0;
	if (lfd < 0)
		die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ss.ss_family == AF_INET6)
		setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
	if (cc && setsockopt(lfd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) != 0)
		die("TCP_CONGESTION %s", cc);
	if (bind(lfd, (struct sockaddr *)&ss, len) != 0)
		die("bind %s", argv[optind]);
	if (listen(lfd, (int)backlog) != 0)
		die("listen");
	if (getsockname(lfd, (struct sockaddr *)&ss, &len) == 0)
		printf("PORT %d\n", ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                                                   : ((struct sockaddr_in *)&ss)->sin_port));
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		pthread_t th;
		if (pthread_create(&th, &attr, serve, (void *)(intptr_t)fd) != 0)
			close(fd);
	}
}
