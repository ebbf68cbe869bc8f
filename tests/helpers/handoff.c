/* handoff: a primary that accepts and hands each connection to a worker process over a
 * UNIX socket (sendmsg with SCM_RIGHTS), as node's cluster module does; the worker serves
 * keep-alive request/response on it.  Knows nothing of socktune.
 *
 *   handoff [-4|-6] [-n CONNS] [-q REQ] [-r REPLY] [-m MSGS] [-x] [-t SECONDS]
 *
 *   -n N     connections to accept and hand over, then exit (default 1)
 *   -q/-r    request and reply sizes (default 100 each)
 *   -m M     before each descriptor, M plain messages (no ancillary data) that the worker
 *            also reads with recvmsg and a control buffer (default 0)
 *   -x       the worker execs this program (-w FD) with LD_PRELOAD=$HANDOFF_WORKER_PRELOAD:
 *            a primary that runs without the library hands over to a worker that has it
 *   -w FD    (internal) be the worker, on the inherited UNIX socket FD
 *   -t S     give up after S seconds (default 30)
 *
 * Output (stdout, flushed): PORT n; per connection the worker prints
 *   WORKER i=0 quickack=... priority=... nodelay=...   (the received socket, before serving)
 * and at the end DONE conns=N requests=M (the worker's). */
#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>

#include "common.h"

static long serve(int cfd, size_t req, size_t reply)
{
	char *rbuf = malloc(req), *wbuf = malloc(reply);
	if (!rbuf || !wbuf)
		die("out of memory");
	memset(wbuf, 'r', reply);
	long requests = 0;
	for (;;) {
		size_t got = 0;
		while (got < req) {
			ssize_t r = read(cfd, rbuf + got, req - got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		if (got < req || write_full(cfd, wbuf, reply) != 0)
			break;
		requests++;
	}
	free(rbuf);
	free(wbuf);
	return requests;
}

static int worker_loop(int sock, size_t req, size_t reply)
{
	long requests = 0;
	int i = 0;
	for (;;) {
		int fd = recv_fd(sock);
		if (fd == -2)
			break;
		if (fd < 0)
			continue; /* a plain message */
		printf("WORKER i=%d nodelay=%d priority=%d\n", i++,
		       sockopt_int(fd, IPPROTO_TCP, TCP_NODELAY),
		       sockopt_int(fd, SOL_SOCKET, SO_PRIORITY));
		fflush(stdout);
		requests += serve(fd, req, reply);
		close(fd);
	}
	printf("DONE conns=%d requests=%ld\n", i, requests);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	prog_name = "handoff";
	int family = AF_INET, conns = 1, msgs = 0, timeout = 30, exec_worker = 0, worker_fd = -1;
	size_t req = 100, reply = 100;
	int c;
	while ((c = getopt(argc, argv, "46n:q:r:m:xw:t:")) != -1) {
		switch (c) {
		case '4': family = AF_INET; break;
		case '6': family = AF_INET6; break;
		case 'n': conns = (int)num_arg("-n", optarg, 1, 100000); break;
		case 'q': req = (size_t)num_arg("-q", optarg, 1, 65536); break;
		case 'r': reply = (size_t)num_arg("-r", optarg, 1, 1 << 20); break;
		case 'm': msgs = (int)num_arg("-m", optarg, 0, 1000); break;
		case 'x': exec_worker = 1; break;
		case 'w': worker_fd = (int)num_arg("-w", optarg, 0, 1 << 20); break;
		case 't': timeout = (int)num_arg("-t", optarg, 1, 3600); break;
		default:
			fprintf(stderr, "usage: handoff [-4|-6] [-n CONNS] [-q REQ] [-r REPLY] [-m MSGS] "
			                "[-x] [-t SECONDS]\n");
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)timeout);
	if (worker_fd >= 0)
		return worker_loop(worker_fd, req, reply);

	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair: %s", strerror(errno));
	fflush(stdout);
	pid_t worker = fork();
	if (worker < 0)
		die("fork: %s", strerror(errno));
	if (worker == 0) {
		close(sv[0]);
		if (exec_worker) {
			char fdarg[16], qarg[16], rarg[16], targ[16];
			snprintf(fdarg, sizeof fdarg, "%d", sv[1]);
			snprintf(qarg, sizeof qarg, "%zu", req);
			snprintf(rarg, sizeof rarg, "%zu", reply);
			snprintf(targ, sizeof targ, "%d", timeout);
			const char *pre = getenv("HANDOFF_WORKER_PRELOAD");
			if (pre)
				setenv("LD_PRELOAD", pre, 1);
			char *args[] = {argv[0], "-w", fdarg, "-q", qarg, "-r", rarg, "-t", targ, NULL};
			execv("/proc/self/exe", args);
			die("exec: %s", strerror(errno));
		}
		_exit(worker_loop(sv[1], req, reply));
	}
	close(sv[1]);

	int lfd = socket(family, SOCK_STREAM, 0);
	if (lfd < 0)
		die("socket: %s", strerror(errno));
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(family, 0, &ss);
	if (bind(lfd, (struct sockaddr *)&ss, len) != 0 || listen(lfd, 16) != 0)
		die("bind/listen: %s", strerror(errno));
	len = sizeof ss;
	getsockname(lfd, (struct sockaddr *)&ss, &len);
	printf("PORT %u\n", ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                                            : ((struct sockaddr_in *)&ss)->sin_port));
	fflush(stdout);
	for (int i = 0; i < conns; i++) {
		int cfd = accept(lfd, NULL, NULL);
		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED) {
				i--;
				continue;
			}
			die("accept: %s", strerror(errno));
		}
		for (int k = 0; k < msgs; k++)
			if (write_full(sv[0], "p", 1) != 0)
				die("write: %s", strerror(errno));
		send_fd(sv[0], cfd);
		close(cfd);
	}
	close(sv[0]);
	int st;
	waitpid(worker, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
