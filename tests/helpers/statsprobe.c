/* statsprobe: listener lifecycles that SOCKTUNE_STATS must survive.  Knows nothing of
 * socktune; each mode connects to its own listener, so it needs no client.
 *
 *   statsprobe reload N 4|6   N times: listen (same port, SO_REUSEADDR), accept one
 *                             connection, close the listener.  Then a last listener accepts
 *                             3, prints "PORT p" and "READY", and waits (at most 10 s) for
 *                             stdin to close.
 *   statsprobe stack K 4|6    the same socket/bind/listen/connect/accept/read/close, 3
 *                             connections, on a thread with a K KiB stack; prints "OK".
 *   statsprobe mainexit 4|6   listens, accepts one, then main() calls pthread_exit() while
 *                             another thread ends the process with exit(0) 200 ms later.
 */
#include <arpa/inet.h>
#include <limits.h>
#include <pthread.h>

#include "common.h"

static int family = AF_INET;

/* A listener on port (0: any); its port in *got.  -1 on failure. */
static int make_listener(int port, int *got)
{
	int fd = socket(family, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(family, (unsigned)port, &ss);
	if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 16) != 0) {
		close(fd);
		return -1;
	}
	len = sizeof ss;
	getsockname(fd, (struct sockaddr *)&ss, &len);
	*got = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                                : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* One connection to ourselves: connect, send a byte, accept, read it, close both.
 * 0 or -1. */
static int one_conn(int lfd, int port)
{
	int c = socket(family, SOCK_STREAM, 0);
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(family, (unsigned)port, &ss);
	if (c < 0 || connect(c, (struct sockaddr *)&ss, len) != 0 || write(c, "x", 1) != 1) {
		if (c >= 0)
			close(c);
		return -1;
	}
	int a = accept(lfd, NULL, NULL);
	char b;
	int ok = a >= 0 && read(a, &b, 1) == 1;
	if (a >= 0)
		close(a);
	close(c);
	return ok ? 0 : -1;
}

static int reload(int n)
{
	int port = 0, got;
	for (int i = 0; i < n; i++) {
		int fd = make_listener(port, &got);
		if (fd < 0 && port != 0)
			fd = make_listener(0, &got); /* the port was taken meanwhile */
		if (fd < 0)
			die("round %d: listen: %s", i, strerror(errno));
		port = got;
		if (one_conn(fd, port) != 0)
			die("round %d: connection: %s", i, strerror(errno));
		close(fd);
	}
	int fd = make_listener(port, &got);
	if (fd < 0)
		fd = make_listener(0, &got);
	if (fd < 0)
		die("last listener: %s", strerror(errno));
	for (int i = 0; i < 3; i++)
		if (one_conn(fd, got) != 0)
			die("last listener: connection: %s", strerror(errno));
	printf("PORT %d\nREADY\n", got);
	fflush(stdout);
	struct pollfd p = {.fd = 0, .events = POLLIN};
	char b;
	if (poll(&p, 1, 10000) == 1)
		(void)!read(0, &b, 1);
	close(fd);
	return 0;
}

static void *small_stack(void *arg)
{
	int got, *ok = arg;
	int fd = make_listener(0, &got);
	*ok = fd >= 0;
	for (int i = 0; i < 3 && *ok; i++)
		*ok = one_conn(fd, got) == 0;
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int stack(int kib)
{
	pthread_attr_t a;
	pthread_t t;
	int ok = 0;
	pthread_attr_init(&a);
	int r = pthread_attr_setstacksize(&a, (size_t)kib * 1024);
	if (r != 0)
		die("pthread_attr_setstacksize %d KiB: %s", kib, strerror(r));
	if ((r = pthread_create(&t, &a, small_stack, &ok)) != 0)
		die("pthread_create: %s", strerror(r));
	pthread_join(t, NULL);
	if (!ok)
		die("the thread's connections failed");
	printf("OK\n");
	return 0;
}

static void *exit_later(void *arg)
{
	(void)arg;
	usleep(200000);
	exit(0); /* the destructors run on this thread; the main thread is gone */
}

static int mainexit(void)
{
	int got;
	int fd = make_listener(0, &got);
	if (fd < 0 || one_conn(fd, got) != 0)
		die("listener: %s", strerror(errno));
	printf("PORT %d\n", got);
	fflush(stdout);
	pthread_t t;
	if (pthread_create(&t, NULL, exit_later, NULL) != 0)
		die("pthread_create");
	pthread_exit(NULL);
}

int main(int argc, char **argv)
{
	prog_name = "statsprobe";
	if (argc < 3)
		die("usage: statsprobe reload N 4|6 | stack K 4|6 | mainexit 4|6");
	const char *fam = argv[argc - 1];
	if (strcmp(fam, "6") == 0)
		family = AF_INET6;
	else if (strcmp(fam, "4") != 0)
		die("family: 4 or 6, not %s", fam);
	if (strcmp(argv[1], "reload") == 0 && argc == 4)
		return reload((int)num_arg("N", argv[2], 0, 1000000));
	if (strcmp(argv[1], "stack") == 0 && argc == 4)
		return stack((int)num_arg("K", argv[2], 16, 1024));
	if (strcmp(argv[1], "mainexit") == 0)
		return mainexit();
	die("unknown mode %s", argv[1]);
}
