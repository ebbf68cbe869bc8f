/* mtserver: a threaded, forking echo server for the stress tests.  It knows nothing of
 * socktune.  It listens on 127.0.0.1 or ::1, forks after listen() so several processes
 * accept from one listening socket, and runs accepting threads in each process.
 *
 *   mtserver [-4|-6] [-P PROCS] [-t THREADS] [-m block|epoll] [-N NODELAY] [-B RCVBUF]
 *            [-T SECONDS]
 *
 *   -P N     processes (default 2: the first one and N-1 forked after listen())
 *   -t N     accepting threads per process (default 4)
 *   -m block   each thread: blocking accept() (even threads) or accept4() (odd threads)
 *      epoll   one level-triggered epoll set per process, no EPOLLEXCLUSIVE, a non-blocking
 *              listener and accept4(SOCK_NONBLOCK) until EAGAIN: every wakeup but one is a
 *              spurious EAGAIN, which must come back as exactly -1 with errno EAGAIN
 *   -N V, -B V  count accepted sockets whose TCP_NODELAY / SO_RCVBUF is not V ("untuned")
 *   -T S     give up after S seconds (exit 3; default 60)
 *
 * Connections are echoed until the client closes; threads read with read, recv, readv,
 * recvfrom and recvmsg in turn, so every receive hook runs under the threads.
 *
 * Output (stdout): "PORT n", "PID pid" for every process, "READY pid" once each process's
 * threads run.  On SIGTERM every process prints
 *   SERVED pid=N conns=N reqs=N untuned=N eagain=N badaccept=N
 * and exits 0; the first one first stops the others and prints "CHILD pid=N status=N".
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "common.h"

#define MAX_PROCS 8
#define MAX_THREADS 32

static int lfd, epfd = -1, epoll_mode, want_nodelay = -1, want_rcvbuf = -1;
static _Atomic long conns, reqs, untuned, eagain, badaccept;
static pid_t children[MAX_PROCS];
static int nchildren;

/* Signal-safe decimal append. */
static size_t put_num(char *b, size_t o, const char *key, long v)
{
	char tmp[24];
	int n = 0;
	unsigned long u = v < 0 ? (unsigned long)-v : (unsigned long)v;
	do
		tmp[n++] = (char)('0' + u % 10);
	while ((u /= 10) && n < 23);
	while (*key)
		b[o++] = *key++;
	if (v < 0)
		b[o++] = '-';
	while (n)
		b[o++] = tmp[--n];
	return o;
}

static void report(void)
{
	char b[256];
	size_t o = 0;
	o = put_num(b, o, "SERVED pid=", getpid());
	o = put_num(b, o, " conns=", atomic_load(&conns));
	o = put_num(b, o, " reqs=", atomic_load(&reqs));
	o = put_num(b, o, " untuned=", atomic_load(&untuned));
	o = put_num(b, o, " eagain=", atomic_load(&eagain));
	o = put_num(b, o, " badaccept=", atomic_load(&badaccept));
	b[o++] = '\n';
	ssize_t w = write(STDOUT_FILENO, b, o);
	(void)w;
}

static void on_term(int sig)
{
	(void)sig;
	for (int i = 0; i < nchildren; i++)
		kill(children[i], SIGTERM);
	for (int i = 0; i < nchildren; i++) {
		int st = -1;
		char b[96];
		size_t o = 0;
		if (waitpid(children[i], &st, 0) < 0)
			st = -1;
		o = put_num(b, o, "CHILD pid=", children[i]);
		o = put_num(b, o, " status=", st);
		b[o++] = '\n';
		ssize_t w = write(STDOUT_FILENO, b, o);
		(void)w;
	}
	report();
	_exit(0);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "mtserver: timeout\n";
	ssize_t w = write(STDERR_FILENO, m, sizeof m - 1);
	(void)w;
	for (int i = 0; i < nchildren; i++)
		kill(children[i], SIGKILL);
	_exit(3);
}

static ssize_t receive(int fd, char *buf, size_t n, int how)
{
	struct iovec iov = {.iov_base = buf, .iov_len = n};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	switch (how % 5) {
	case 0: return read(fd, buf, n);
	case 1: return recv(fd, buf, n, 0);
	case 2: return readv(fd, &iov, 1);
	case 3: return recvfrom(fd, buf, n, 0, NULL, NULL);
	default: return recvmsg(fd, &msg, 0);
	}
}

/* Echo until the client closes (or 10 s of silence). */
static void serve(int cfd, int how)
{
	char buf[4096];
	if ((want_nodelay >= 0 && sockopt_int(cfd, IPPROTO_TCP, TCP_NODELAY) != want_nodelay) ||
	    (want_rcvbuf >= 0 && sockopt_int(cfd, SOL_SOCKET, SO_RCVBUF) != want_rcvbuf))
		atomic_fetch_add(&untuned, 1);
	long long deadline = now_us() + 10000000;
	for (;;) {
		if (wait_fd(cfd, POLLIN, deadline) != 1)
			break;
		ssize_t r = receive(cfd, buf, sizeof buf, how++);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		if (write_full(cfd, buf, (size_t)r) != 0)
			break;
		atomic_fetch_add(&reqs, 1);
	}
	close(cfd);
	atomic_fetch_add(&conns, 1);
}

static void *block_thread(void *arg)
{
	int id = (int)(long)arg;
	for (;;) {
		int cfd = (id & 1) ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC) : accept(lfd, NULL, NULL);
		if (cfd < 0) {
			if (errno != EINTR && errno != ECONNABORTED)
				atomic_fetch_add(&badaccept, 1);
			continue;
		}
		serve(cfd, id);
	}
	return NULL;
}

static void *epoll_thread(void *arg)
{
	int id = (int)(long)arg;
	for (;;) {
		struct epoll_event ev;
		int n = epoll_wait(epfd, &ev, 1, 200);
		if (n <= 0)
			continue;
		for (int i = 0; i < 64; i++) {
			errno = 0;
			int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (cfd < 0) {
				if (cfd == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
					atomic_fetch_add(&eagain, 1);
				else if (errno != ECONNABORTED && errno != EINTR)
					atomic_fetch_add(&badaccept, 1);
				break;
			}
			serve(cfd, id);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int family = AF_INET, procs = 2, threads = 4, seconds = 60, opt;
	prog_name = "mtserver";
	while ((opt = getopt(argc, argv, "46P:t:m:N:B:T:")) != -1) {
		switch (opt) {
		case '4': family = AF_INET; break;
		case '6': family = AF_INET6; break;
		case 'P': procs = (int)num_arg("-P", optarg, 1, MAX_PROCS); break;
		case 't': threads = (int)num_arg("-t", optarg, 1, MAX_THREADS); break;
		case 'm':
			if (strcmp(optarg, "epoll") == 0)
				epoll_mode = 1;
			else if (strcmp(optarg, "block") != 0)
				die("-m: block or epoll");
			break;
		case 'N': want_nodelay = (int)num_arg("-N", optarg, 0, 1); break;
		case 'B': want_rcvbuf = (int)num_arg("-B", optarg, 1, 1 << 30); break;
		case 'T': seconds = (int)num_arg("-T", optarg, 1, 3600); break;
		default: die("usage: mtserver [-4|-6] [-P N] [-t N] [-m block|epoll] [-N V] [-B V] [-T S]");
		}
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	signal(SIGPIPE, SIG_IGN);

	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	socklen_t len = parse_addr(family == AF_INET ? "127.0.0.1" : "::1", "0", &ss);
	lfd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | (epoll_mode ? SOCK_NONBLOCK : 0), 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&ss, len) != 0 || listen(lfd, 1024) != 0)
		die("listen: %s", strerror(errno));
	len = sizeof ss;
	getsockname(lfd, (struct sockaddr *)&ss, &len);
	printf("PORT %u\n", ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
	                                            : ((struct sockaddr_in6 *)&ss)->sin6_port));

	/* fork after listen(): the children share the tuned listener */
	for (int i = 1; i < procs; i++) {
		pid_t p = fork();
		if (p < 0)
			die("fork: %s", strerror(errno));
		if (p == 0) {
			nchildren = 0;
			break;
		}
		children[nchildren++] = p;
	}
	printf("PID %ld\n", (long)getpid());

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigfillset(&sa.sa_mask);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	alarm((unsigned)seconds);

	if (epoll_mode) {
		epfd = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
		if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev) != 0)
			die("epoll: %s", strerror(errno));
	}
	/* the threads never take SIGTERM: the main thread's handler reports and exits */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (int i = 0; i < threads; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, epoll_mode ? epoll_thread : block_thread, (void *)(long)i))
			die("pthread_create failed");
		pthread_detach(t);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	printf("READY %ld\n", (long)getpid());
	for (;;)
		pause();
}
