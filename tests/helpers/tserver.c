/* tserver: a small TCP test server that knows nothing of socktune.  It listens on
 * 127.0.0.1 or ::1 (port 0 unless -p), prints "PORT n", and reports what the kernel says
 * about the listener and each accepted socket, so a test can compare runs with and without
 * the preloaded library.
 *
 *   tserver [-4|-6] [-A] [-b BACKLOG] [-n CONNS] [-m accept|hold|ka] [-q REQ] [-r REPLY]
 *           [-R] [-F] [-s] [-p PORT] [-L FD] [-t SECONDS]
 *
 *   -A       accept4(SOCK_CLOEXEC) instead of accept
 *   -b N     listen backlog (default 5; -1 asks for the kernel's maximum)
 *   -n N     connections to serve, then exit (default 1)
 *   -m accept  print, then close each connection (default)
 *      hold    print, keep every connection open until N were accepted
 *      ka      keep-alive: read REQ bytes, answer REPLY bytes, until the client closes
 *   -R       read requests with recv() instead of read()
 *   -F       read into a fixed-size array, so a _FORTIFY_SOURCE build calls __read_chk or
 *            __recv_chk (the default heap buffer gets the plain read/recv)
 *   -s       silent: no getsockopt at all (for syscall counting); only PORT and DONE
 *   -L FD    do not make a listener: accept on the inherited listening socket FD
 *   -t S     give up after S seconds (default 30)
 *
 * Output (stdout, one line each, flushed):
 *   PORT 40123
 *   LISTENER backlog=5 rcvbuf=131072 sndbuf=16384 nodelay=0
 *   CONN i=0 rcvbuf=... sndbuf=... nodelay=... backlog=... cwnd=... delack_max_us=...
 *            (values of the ACCEPTED socket: cwnd its tcpi_snd_cwnd, delack_max_us -1 before
 *            Linux 6.15; backlog read from the listener)
 *   DONE conns=N requests=M
 */
#include <arpa/inet.h>
#include <signal.h>

#include "common.h"

static void usage(void)
{
	fprintf(stderr, "usage: tserver [-4|-6] [-A] [-b BACKLOG] [-n CONNS] [-m accept|hold|ka] "
	                "[-q REQ] [-r REPLY] [-R] [-F] [-s] [-p PORT] [-L FD] [-t SECONDS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	prog_name = "tserver";
	int family = AF_INET, use_accept4 = 0, backlog = 5, conns = 1, use_recv = 0, silent = 0;
	int inherited = -1, port = 0, timeout = 30, fortified = 0;
	size_t req = 100, reply = 100;
	const char *mode = "accept";
	int c;
	while ((c = getopt(argc, argv, "46Ab:n:m:q:r:RFsL:p:t:")) != -1) {
		switch (c) {
		case '4': family = AF_INET; break;
		case '6': family = AF_INET6; break;
		case 'A': use_accept4 = 1; break;
		case 'b': backlog = (int)num_arg("-b", optarg, -1, 2147483647); break;
		case 'n': conns = (int)num_arg("-n", optarg, 1, 100000); break;
		case 'm': mode = optarg; break;
		case 'q': req = (size_t)num_arg("-q", optarg, 1, 65536); break;
		case 'r': reply = (size_t)num_arg("-r", optarg, 1, 1 << 20); break;
		case 'R': use_recv = 1; break;
		case 'F': fortified = 1; break;
		case 's': silent = 1; break;
		case 'L': inherited = (int)num_arg("-L", optarg, 0, 1 << 20); break;
		case 'p': port = (int)num_arg("-p", optarg, 0, 65535); break;
		case 't': timeout = (int)num_arg("-t", optarg, 1, 3600); break;
		default: usage();
		}
	}
	int m_hold = strcmp(mode, "hold") == 0, m_ka = strcmp(mode, "ka") == 0;
	if (!m_hold && !m_ka && strcmp(mode, "accept") != 0)
		usage();
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)timeout); /* every run is bounded, whatever the client does */

	int lfd = inherited;
	if (lfd < 0) {
		lfd = socket(family, SOCK_STREAM, 0);
		if (lfd < 0)
			die("socket: %s", strerror(errno));
		/* like most servers: a restart on the same port must not fail on TIME_WAIT */
		int one = 1;
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		struct sockaddr_storage ss;
		socklen_t len = loopback_addr(family, (unsigned)port, &ss);
		if (bind(lfd, (struct sockaddr *)&ss, len) != 0)
			die("bind: %s", strerror(errno));
		if (listen(lfd, backlog) != 0)
			die("listen: %s", strerror(errno));
	}
	struct sockaddr_storage me;
	socklen_t melen = sizeof me;
	if (getsockname(lfd, (struct sockaddr *)&me, &melen) != 0)
		die("getsockname: %s", strerror(errno));
	unsigned bound = ntohs(me.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&me)->sin6_port
	                                                : ((struct sockaddr_in *)&me)->sin_port);
	printf("PORT %u\n", bound);
	if (!silent)
		printf("LISTENER backlog=%ld rcvbuf=%d sndbuf=%d nodelay=%d\n", listen_backlog(lfd),
		       sockopt_int(lfd, SOL_SOCKET, SO_RCVBUF), sockopt_int(lfd, SOL_SOCKET, SO_SNDBUF),
		       sockopt_int(lfd, IPPROTO_TCP, TCP_NODELAY));
	fflush(stdout);

	int *held = m_hold ? calloc((size_t)conns, sizeof *held) : NULL;
	char *rbuf = malloc(req), *wbuf = malloc(reply);
	if (!rbuf || !wbuf || (m_hold && !held))
		die("out of memory");
	memset(wbuf, 'r', reply);
	static char fbuf[65536];
	long requests = 0;
	for (int i = 0; i < conns; i++) {
		int cfd = use_accept4 ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC) : accept(lfd, NULL, NULL);
		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED) {
				i--;
				continue;
			}
			die("accept: %s", strerror(errno));
		}
		if (!silent) {
			struct tcp_info ti;
			socklen_t tl = sizeof ti;
			long cwnd = getsockopt(cfd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0 ? (long)ti.tcpi_snd_cwnd : -1;
			printf("CONN i=%d rcvbuf=%d sndbuf=%d nodelay=%d backlog=%ld cwnd=%ld delack_max_us=%d\n",
			       i, sockopt_int(cfd, SOL_SOCKET, SO_RCVBUF), sockopt_int(cfd, SOL_SOCKET, SO_SNDBUF),
			       sockopt_int(cfd, IPPROTO_TCP, TCP_NODELAY), listen_backlog(lfd), cwnd,
			       sockopt_int(cfd, IPPROTO_TCP, 46 /* TCP_DELACK_MAX_US, Linux 6.15 */));
			fflush(stdout);
		}
		if (m_ka) {
			/* one request at a time: a request may arrive in pieces (the two-write client) */
			for (;;) {
				size_t got = 0;
				while (got < req) {
					ssize_t r;
					if (fortified) /* fbuf's size is known: __read_chk, __recv_chk */
						r = use_recv ? recv(cfd, fbuf, req - got, 0)
						             : read(cfd, fbuf, req - got);
					else
						r = use_recv ? recv(cfd, rbuf + got, req - got, 0)
						             : read(cfd, rbuf + got, req - got);
					if (r < 0 && errno == EINTR)
						continue;
					if (r <= 0)
						break;
					got += (size_t)r;
				}
				if (got < req)
					break;
				requests++;
				if (write_full(cfd, wbuf, reply) != 0)
					break;
			}
		}
		if (m_hold)
			held[i] = cfd;
		else
			close(cfd);
	}
	for (int i = 0; m_hold && i < conns; i++)
		close(held[i]);
	printf("DONE conns=%d requests=%ld\n", conns, requests);
	fflush(stdout);
	return 0;
}
