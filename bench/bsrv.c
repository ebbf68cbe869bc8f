/* The benchmark's C server, one connection at a time, alive at most SECONDS (alarm):
 *
 *   bsrv ka HOST PORT [once]    keep-alive: answer each request (up to its blank line) with
 *                               one small response; "once" sets TCP_QUICKACK a single time
 *                               at accept, as an application might (case 2)
 *   bsrv body HOST PORT DELAY   read the headers, wait DELAY ms, read Content-Length bytes of
 *                               body, answer, close (case 4)
 *   bsrv hold HOST PORT N       accept and keep every connection; print "accepted=N" once N
 *                               are open, then wait (case 5, RSS)
 *   bsrv pub HOST PORT          a broker in miniature (case 6): for each PUBLISH (16 bytes,
 *                               'P'...) of a client subscribed to its own topic, forward it
 *                               to the client (16 bytes), then acknowledge it (PUBACK, 4
 *                               bytes, 'A'...), in two writes as mosquitto does; the
 *                               client's own PUBACKs for the forwarded message are read
 *                               and need no answer
 *
 * It uses plain accept() and read(), the calls socktune hooks, and knows nothing of it.
 * (The accept+close loop of case 5 is the test helper tserver -m accept -s.) */
#include <netinet/tcp.h>
#include <signal.h>
#include <strings.h>
#include <sys/resource.h>

#include "bench.h"

#define LIFETIME_S 300

static int tcp_listen(const char *host, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, host, port);
	int fd = socket(ss.ss_family, SOCK_STREAM, 0);
	int one = 1;
	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, len) != 0)
		die("bind %s:%d", host, port);
	if (listen(fd, 1024) != 0)
		die("listen");
	return fd;
}

static int accept_one(int lfd)
{
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd >= 0 || errno != EINTR)
			return fd;
	}
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static const char ok_response[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

static void serve_ka(int lfd, int once)
{
	static char buf[8192];
	for (;;) {
		int fd = accept_one(lfd);
		if (fd < 0)
			die("accept");
		if (once) {
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
		}
		size_t have = 0;
		for (;;) {
			ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
			if (r <= 0)
				break;
			have += (size_t)r;
			buf[have] = 0;
			char *end;
			/* Answer every complete request in the buffer; keep a partial one. */
			while ((end = strstr(buf, "\r\n\r\n")) != NULL) {
				write_all(fd, ok_response, sizeof ok_response - 1);
				size_t used = (size_t)(end + 4 - buf);
				memmove(buf, end + 4, have - used + 1);
				have -= used;
			}
			if (have == sizeof buf - 1)
				break;
		}
		close(fd);
	}
}

static void serve_body(int lfd, long delay_ms)
{
	static char buf[65536];
	for (;;) {
		int fd = accept_one(lfd);
		if (fd < 0)
			die("accept");
		size_t have = 0;
		char *end = NULL;
		while (!end && have < sizeof buf - 1) {
			ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
			if (r <= 0)
				break;
			have += (size_t)r;
			buf[have] = 0;
			end = strstr(buf, "\r\n\r\n");
		}
		if (!end) {
			close(fd);
			continue;
		}
		char *cl = strcasestr(buf, "\r\nContent-Length:");
		long want = cl ? strtol(cl + 17, NULL, 10) : 0;
		long got = (long)(have - (size_t)(end + 4 - buf));
		/* A busy application: the body waits in the socket's receive buffer meanwhile. */
		struct timespec ts = {.tv_sec = delay_ms / 1000, .tv_nsec = (delay_ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
		while (got < want) {
			ssize_t r = read(fd, buf, sizeof buf);
			if (r <= 0)
				break;
			got += r;
		}
		write_all(fd, ok_response, sizeof ok_response - 1);
		close(fd);
	}
}

/* The message sizes of case 6, by first byte: a QoS-1 PUBLISH with a short topic and
 * payload, and a PUBACK (MQTT's is 4 bytes). */
#define PUB_LEN 16
#define ACK_LEN 4

static void serve_pub(int lfd)
{
	static const char fwd[PUB_LEN] = "Pforwarded-msg!", ack[ACK_LEN] = {'A', 2, 0, 1};
	static char buf[4096];
	for (;;) {
		int fd = accept_one(lfd);
		if (fd < 0)
			die("accept");
		size_t have = 0;
		for (;;) {
			ssize_t r = read(fd, buf + have, sizeof buf - have);
			if (r <= 0)
				break;
			have += (size_t)r;
			size_t off = 0;
			for (;;) {
				size_t need = buf[off] == 'P' ? PUB_LEN : ACK_LEN;
				if (have - off < need || have == off)
					break;
				if (buf[off] == 'P') {
					/* to the subscriber first, then the publisher's acknowledgement */
					write_all(fd, fwd, sizeof fwd);
					write_all(fd, ack, sizeof ack);
				}
				off += need;
			}
			memmove(buf, buf + off, have - off);
			have -= off;
		}
		close(fd);
	}
}

static void serve_hold(int lfd, long n)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (long i = 1;; i++) {
		int fd = accept_one(lfd);
		if (fd < 0)
			die("accept");
		if (i == n) {
			printf("accepted=%ld\n", i);
			fflush(stdout);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fputs("usage: bsrv ka|body|hold|pub HOST PORT [ARG]\n", stderr);
		return 2;
	}
	const char *m = argv[1];
	int port = (int)num_arg(argv[3], "port");
	const char *t = getenv("BENCH_LIFETIME");
	alarm(t ? (unsigned)num_arg(t, "BENCH_LIFETIME") : LIFETIME_S);
	signal(SIGPIPE, SIG_IGN);
	int lfd = tcp_listen(argv[2], port);
	if (strcmp(m, "ka") == 0)
		serve_ka(lfd, argc > 4 && strcmp(argv[4], "once") == 0);
	else if (strcmp(m, "body") == 0)
		serve_body(lfd, argc > 4 ? num_arg(argv[4], "delay") : 50);
	else if (strcmp(m, "pub") == 0)
		serve_pub(lfd);
	else if (strcmp(m, "hold") == 0 && argc > 4)
		serve_hold(lfd, num_arg(argv[4], "count"));
	else
		die("unknown mode %s", m);
	return 0;
}
