/* closes: a listener closed by each of the calls that close one, and what takes its number
 * next.  Knows nothing of socktune: a test runs it under the library and reads what the
 * kernel reports.  One line each, on stdout.
 *
 *   closes range-one 4|6   close_range(n, n, 0) of a listener; a socket made by syscall()
 *                          (no hook sees it: io_uring's IORING_OP_SOCKET is the same) takes n,
 *                          is bound and listen()ed:        RAW same=1 nodelay=..
 *   closes dup2 4|6        a second listener dup2()'d onto the first one's number (a reload
 *                          in one call), the second number closed; a connection accepted on
 *                          the number:                     DUP2 priority=.. nodelay=..
 *   closes fork 4|6        a thread close()s the listener while the main thread forks, 100 ms
 *                          into that close (run under strace with close delayed on entry, so
 *                          the child is made while the close is in flight); the child accepts
 *                          a connection on its copy:       CHILD open=1 priority=..
 *   closes fork-listen 4|6 a thread listen()s while the main thread forks, 100 ms into that
 *                          listen (strace delays listen on entry: the library holds the
 *                          socket's entry while it tunes); the child, once the listen is
 *                          done, accepts a connection:     CHILD open=1 priority=..
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "common.h"

static int fam = AF_INET;

static int bound(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(fam, 0, &ss);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) != 0)
		die("socket, bind: %s", strerror(errno));
	return fd;
}

static int listener(void)
{
	int fd = bound(socket(fam, SOCK_STREAM, 0));
	if (listen(fd, 16) != 0)
		die("listen: %s", strerror(errno));
	return fd;
}

/* A connection to port, accepted on lfd: the accepted descriptor (the client's is left open
 * until exit). */
static int accepted(int lfd, unsigned port)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(fam, port, &ss);
	int c = socket(fam, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&ss, len) != 0)
		die("connect: %s", strerror(errno));
	if (wait_fd(lfd, POLLIN, now_us() + 5000000) != 1)
		die("nothing to accept in 5 s");
	int s = accept(lfd, NULL, NULL);
	if (s < 0)
		die("accept: %s", strerror(errno));
	return s;
}

static void range_one(void)
{
	int l = listener();
	if (libc_close_range((unsigned)l, (unsigned)l, 0) != 0)
		die("close_range: %s", strerror(errno));
	int r = bound((int)syscall(SYS_socket, fam, SOCK_STREAM, 0));
	if (listen(r, 16) != 0)
		die("listen: %s", strerror(errno));
	printf("RAW same=%d nodelay=%d\n", r == l, sockopt_int(r, IPPROTO_TCP, TCP_NODELAY));
}

static void dup2_onto(void)
{
	int a = listener(), b = listener();
	unsigned port = local_port(b);
	if (dup2(b, a) != a)
		die("dup2: %s", strerror(errno));
	close(b);
	int s = accepted(a, port);
	printf("DUP2 priority=%d nodelay=%d\n", sockopt_int(s, SOL_SOCKET, SO_PRIORITY),
	       sockopt_int(s, IPPROTO_TCP, TCP_NODELAY));
}

static void *closer(void *arg)
{
	close(*(int *)arg);
	return NULL;
}

static void *listen_on(void *arg)
{
	if (listen(*(int *)arg, 16) != 0)
		die("listen: %s", strerror(errno));
	return NULL;
}

/* call(&l) on a thread; the main thread forks 100 ms into it (the test delays the call's
 * system call on entry); the child, wait_us later, accepts a connection on its copy of l */
static void fork_during(int fd, void *(*call)(void *), useconds_t wait_us)
{
	static int l;
	l = fd;
	unsigned port = local_port(l);
	pthread_t t;
	pthread_create(&t, NULL, call, &l);
	usleep(100000);
	pid_t child = fork();
	if (child == 0) {
		usleep(wait_us);
		int open = fcntl(l, F_GETFD) >= 0;
		int s = open ? accepted(l, port) : -1;
		printf("CHILD open=%d priority=%d\n", open, s >= 0 ? sockopt_int(s, SOL_SOCKET, SO_PRIORITY) : -1);
		fflush(stdout);
		_exit(0);
	}
	pthread_join(t, NULL);
	int status;
	waitpid(child, &status, 0);
}

int main(int argc, char **argv)
{
	prog_name = "closes";
	if (argc != 3)
		die("usage: closes range-one|dup2|fork|fork-listen 4|6");
	fam = strcmp(argv[2], "6") == 0 ? AF_INET6 : AF_INET;
	alarm(20);
	if (strcmp(argv[1], "range-one") == 0)
		range_one();
	else if (strcmp(argv[1], "dup2") == 0)
		dup2_onto();
	else if (strcmp(argv[1], "fork") == 0)
		fork_during(listener(), closer, 0);
	else if (strcmp(argv[1], "fork-listen") == 0)
		/* (500 ms: the parent's listen done, the socket both share listens) */
		fork_during(bound(socket(fam, SOCK_STREAM, 0)), listen_on, 500000);
	else
		die("unknown mode %s", argv[1]);
	return 0;
}
