/* nodelayoff: a server that, as hyper 0.14 and Erlang's inets do, sets TCP_NODELAY itself on
 * each connection it accepts (to 0 with -r, the reset; without -r it leaves it alone), and
 * keeps every connection open.  It listens on 127.0.0.1 or ::1, port 0, backlog 128, prints
 * "PORT n", then for each connection what it carried when accepted (the listener's, as the
 * kernel copied it) and after its own setsockopt:
 *
 *   nodelayoff [-4|-6] [-r] [-w MS] [-n CONNS] [-t SECONDS]
 *
 *   CONN i=0 accepted_nodelay=1 nodelay=0
 *
 * With -w it accepts nothing until its listener reads TCP_NODELAY 1 (set from outside: attach
 * tuned it), then MS milliseconds more: a server slow to accept, whose accept queue holds
 * connections the kernel made before the tune (with the listener's old 0) and that it
 * accepts after.  It exits after CONNS connections (default 1000) or SECONDS (default 30). */
#include "common.h"

int main(int argc, char **argv)
{
	prog_name = "nodelayoff";
	int family = AF_INET, reset = 0, conns = 1000, timeout = 30, c;
	long long wait_ms = -1;
	while ((c = getopt(argc, argv, "46rw:n:t:")) != -1) {
		switch (c) {
		case '4': family = AF_INET; break;
		case '6': family = AF_INET6; break;
		case 'r': reset = 1; break;
		case 'w': wait_ms = num_arg("-w", optarg, 0, 60000); break;
		case 'n': conns = (int)num_arg("-n", optarg, 1, 100000); break;
		case 't': timeout = (int)num_arg("-t", optarg, 1, 3600); break;
		default:
			fprintf(stderr, "usage: nodelayoff [-4|-6] [-r] [-w MS] [-n CONNS] [-t SECONDS]\n");
			return 2;
		}
	}
	raise_nofile();
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(family, 0, &ss);
	int lfd = socket(family, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&ss, len) != 0 || listen(lfd, 128) != 0)
		die("listen: %s", strerror(errno));
	printf("PORT %u\n", local_port(lfd));
	fflush(stdout);
	long long deadline = now_us() + timeout * 1000000LL;
	while (wait_ms >= 0 && sockopt_int(lfd, IPPROTO_TCP, TCP_NODELAY) != 1 && now_us() < deadline)
		usleep(5000);
	if (wait_ms > 0)
		usleep((useconds_t)(wait_ms * 1000));
	for (int i = 0; i < conns;) {
		if (wait_fd(lfd, POLLIN, deadline) <= 0)
			break;
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		int accepted = sockopt_int(fd, IPPROTO_TCP, TCP_NODELAY), off = 0;
		if (reset && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &off, sizeof off) != 0)
			die("setsockopt TCP_NODELAY: %s", strerror(errno));
		printf("CONN i=%d accepted_nodelay=%d nodelay=%d\n", i++, accepted,
		       sockopt_int(fd, IPPROTO_TCP, TCP_NODELAY));
		fflush(stdout);
		/* (kept open: the connection is the evidence a look reads) */
	}
	return 0;
}
