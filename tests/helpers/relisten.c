/* relisten: a server that does to its listener what real servers do: listen() on it again
 * (puma; a socket-activated server on its inherited listener), copy it with dup(),
 * fcntl(F_DUPFD*), dup2() or dup3() and accept on the copies (h2o's threads, php-fpm's
 * workers), fork workers that each copy it, or exec workers that inherit it.  Knows
 * nothing of socktune.
 *
 *   relisten [-4|-6] [-L FD] [-b BACKLOG] [-B BACKLOG]... [-Q] [-n CONNS]
 *            [-D dup|fcntl|cloexec|dup2|dup3] [-k COPIES] [-f WORKERS] [-x] [-t SECONDS]
 *
 *   -L FD    accept on the inherited listening socket FD (else make one on port 0)
 *   -b N     backlog of the first listen() (default 5)
 *   -B N     listen(fd, N) again (up to 4 times, in order), after -Q's wait
 *   -Q       before the -B calls, wait (at most 5 s) until a connection is queued
 *   -n N     connections to accept in all (default 1)
 *   -D HOW   copy the listener HOW, -k times (default 1), and accept round-robin over the
 *            copies and the original; the copies are closed before the last connection,
 *            which the original accepts
 *   -f W     fork W workers that each accept N/W connections (each making its own copies)
 *   -x       with -f: the workers exec this program with -L and -w (inheriting the listener)
 *   -w       an exec'd worker: no PORT, RELISTEN or DONE lines
 *   -t S     give up after S seconds (default 30)
 *
 * Output (stdout, flushed): PORT n; RELISTEN backlog=N (TCP_INFO, after each -B);
 * CONN pid=P fd=F nodelay=0|1 per connection; DONE conns=N. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "common.h"

static int copy_fd(int fd, const char *how, int k)
{
	int r = -1;
	if (strcmp(how, "dup") == 0)
		r = dup(fd);
	else if (strcmp(how, "fcntl") == 0)
		r = fcntl(fd, F_DUPFD, 10);
	else if (strcmp(how, "cloexec") == 0)
		r = fcntl(fd, F_DUPFD_CLOEXEC, 10);
	else if (strcmp(how, "dup2") == 0)
		r = dup2(fd, 40 + k);
	else if (strcmp(how, "dup3") == 0)
		r = dup3(fd, 40 + k, O_CLOEXEC);
	else
		die("-D %s: not dup, fcntl, cloexec, dup2 or dup3", how);
	if (r < 0)
		die("copy (%s): %s", how, strerror(errno));
	return r;
}

static int accept_one(int lfd)
{
	for (;;) {
		int cfd = accept(lfd, NULL, NULL);
		if (cfd >= 0)
			return cfd;
		if (errno != EINTR && errno != ECONNABORTED)
			die("accept: %s", strerror(errno));
	}
}

static void serve(int lfd, int conns, const char *how, int copies)
{
	int fds[17], nfds = 0;
	for (int k = 0; how && k < copies && k < 16; k++)
		fds[nfds++] = copy_fd(lfd, how, k);
	fds[nfds++] = lfd;
	for (int i = 0; i < conns; i++) {
		if (how && i == conns - 1 && conns > 1) {
			for (int k = 0; k < nfds - 1; k++)
				close(fds[k]); /* the last connection: the original alone */
			nfds = 1;
			fds[0] = lfd;
		}
		int cfd = accept_one(fds[i % nfds]);
		printf("CONN pid=%d fd=%d nodelay=%d\n", (int)getpid(), fds[i % nfds],
		       sockopt_int(cfd, IPPROTO_TCP, TCP_NODELAY));
		fflush(stdout);
		close(cfd);
	}
}

int main(int argc, char **argv)
{
	prog_name = "relisten";
	int family = AF_INET, lfd = -1, backlog = 5, again[4], nagain = 0, queued = 0, conns = 1;
	int copies = 1, workers = 0, exec_workers = 0, quiet = 0, timeout = 30;
	const char *how = NULL;
	int c;
	while ((c = getopt(argc, argv, "46L:b:B:Qn:D:k:f:xwt:")) != -1) {
		switch (c) {
		case '4': family = AF_INET; break;
		case '6': family = AF_INET6; break;
		case 'L': lfd = (int)num_arg("-L", optarg, 0, 1 << 20); break;
		case 'b': backlog = (int)num_arg("-b", optarg, -1, 1 << 30); break;
		case 'B':
			if (nagain == 4)
				die("-B: at most 4 times");
			again[nagain++] = (int)num_arg("-B", optarg, -1, 1 << 30);
			break;
		case 'Q': queued = 1; break;
		case 'n': conns = (int)num_arg("-n", optarg, 1, 100000); break;
		case 'D': how = optarg; break;
		case 'k': copies = (int)num_arg("-k", optarg, 1, 16); break;
		case 'f': workers = (int)num_arg("-f", optarg, 1, 16); break;
		case 'x': exec_workers = 1; break;
		case 'w': quiet = 1; break;
		case 't': timeout = (int)num_arg("-t", optarg, 1, 3600); break;
		default: die("bad option (see the comment at the top of relisten.c)");
		}
	}
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)timeout);

	if (lfd < 0) {
		lfd = socket(family, SOCK_STREAM, 0);
		if (lfd < 0)
			die("socket: %s", strerror(errno));
		struct sockaddr_storage ss;
		socklen_t len = loopback_addr(family, 0, &ss);
		if (bind(lfd, (struct sockaddr *)&ss, len) != 0 || listen(lfd, backlog) != 0)
			die("bind/listen: %s", strerror(errno));
	}
	struct sockaddr_storage me;
	socklen_t melen = sizeof me;
	if (getsockname(lfd, (struct sockaddr *)&me, &melen) != 0)
		die("getsockname: %s", strerror(errno));
	if (!quiet) {
		printf("PORT %u\n", ntohs(me.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&me)->sin6_port
		                                                  : ((struct sockaddr_in *)&me)->sin_port));
		fflush(stdout);
	}
	if (queued) {
		long long deadline = now_us() + 5000000;
		if (wait_fd(lfd, POLLIN, deadline) != 1)
			die("no connection queued within 5 s");
	}
	for (int i = 0; i < nagain; i++) {
		if (listen(lfd, again[i]) != 0)
			die("listen again: %s", strerror(errno));
		printf("RELISTEN backlog=%ld\n", listen_backlog(lfd));
		fflush(stdout);
	}

	if (!workers) {
		serve(lfd, conns, how, copies);
	} else {
		int share = conns / workers;
		pid_t pids[16];
		for (int w = 0; w < workers; w++) {
			int quota = share + (w < conns % workers);
			pids[w] = fork();
			if (pids[w] < 0)
				die("fork: %s", strerror(errno));
			if (pids[w] > 0)
				continue;
			if (exec_workers) {
				char fdarg[16], narg[16];
				snprintf(fdarg, sizeof fdarg, "%d", lfd);
				snprintf(narg, sizeof narg, "%d", quota);
				char *args[] = {argv[0], "-L", fdarg, "-n", narg, "-w",
				                how ? "-D" : NULL, (char *)how, NULL};
				execv("/proc/self/exe", args);
				die("exec: %s", strerror(errno));
			}
			serve(lfd, quota, how, copies);
			fflush(stdout);
			_exit(0);
		}
		for (int w = 0; w < workers; w++) {
			int st;
			waitpid(pids[w], &st, 0);
		}
	}
	if (!quiet) {
		printf("DONE conns=%d\n", conns);
		fflush(stdout);
	}
	return 0;
}
