/* swaps: a listener swapped again and again while threads accept on it: the main thread
 * closes the listener and makes a new one, which takes the same descriptor number back
 * (bound to a new port, listened), while accepting threads accept on whatever that number
 * names and connecting threads connect to the current port.  Knows nothing of socktune.
 *
 *   swaps 4|6 SWAPS close|dup2|range [ACCEPTERS] [CONNECTERS]
 *
 *   close  close(), then socket() takes the number back (bind, listen on it)
 *   dup2   a new socket bound and listened elsewhere, then dup2() onto the number and the
 *          new number closed (a reload that replaces the listener in one call)
 *   range  the listener kept at 512: close_range() of 512-519, then a new socket bound,
 *          copied to 512 with fcntl(F_DUPFD) (the lowest free number from 512 on), the
 *          first number closed, and listened at 512
 *
 * For each new listener the main thread reads TCP_NODELAY back right after its listen(),
 * then waits for the accepting threads to take a few connections from it (the number taken
 * back is the old one unless an accepted connection took it first: same_number counts).  Accepted sockets
 * have TCP_NODELAY read too.  Output (stdout), at the end:
 *   SWAPS n=N same_number=N listener_nodelay0=N conns=N conn_nodelay0=N
 * listener_nodelay0: new listeners that read TCP_NODELAY 0 after their listen(); conns: the
 * connections accepted, conn_nodelay0 those of them that read 0.  Bounded: 30 s at most. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

static int family;
static _Atomic int lfd = -1;
static _Atomic unsigned port;
static _Atomic int done;
static _Atomic long conns, conn_untuned, per_gen;

static void *accepter(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		int l = atomic_load(&lfd);
		struct pollfd p = {.fd = l, .events = POLLIN};
		if (poll(&p, 1, 10) != 1 || !(p.revents & POLLIN))
			continue;
		int c = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c < 0)
			continue; /* taken by another thread, or the number is being swapped */
		int nd = sockopt_int(c, IPPROTO_TCP, TCP_NODELAY);
		atomic_fetch_add(&conns, 1);
		atomic_fetch_add(&per_gen, 1);
		if (nd == 0)
			atomic_fetch_add(&conn_untuned, 1);
		close(c);
	}
	return NULL;
}

static void *connecter(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		unsigned pt = atomic_load(&port);
		if (!pt) {
			usleep(1000);
			continue;
		}
		struct sockaddr_storage ss;
		socklen_t len = loopback_addr(family, pt, &ss);
		/* non-blocking, 50 ms at most: a SYN dropped by a full or closed listener would
		 * otherwise wait a second for its retransmit */
		int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (s < 0)
			continue;
		if (connect(s, (struct sockaddr *)&ss, len) != 0) {
			struct pollfd p = {.fd = s, .events = POLLOUT};
			if (errno != EINPROGRESS || poll(&p, 1, 50) != 1)
				usleep(500); /* between two listeners: refused */
		}
		close(s);
	}
	return NULL;
}

static int make_listener(void)
{
	int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0); /* (the accepting
	                                          * threads must not block on a swapped number) */
	if (s < 0)
		die("socket: %s", strerror(errno));
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(family, 0, &ss);
	if (bind(s, (struct sockaddr *)&ss, len) != 0)
		die("bind: %s", strerror(errno));
	return s;
}

/* s moved to 512, where no connection lands (they take the lowest free numbers) */
static int at_512(int s)
{
	int moved = fcntl(s, F_DUPFD_CLOEXEC, 512);
	close(s);
	return moved;
}

int main(int argc, char **argv)
{
	prog_name = "swaps";
	if (argc < 4 || (strcmp(argv[3], "close") && strcmp(argv[3], "dup2") && strcmp(argv[3], "range")))
		die("usage: swaps 4|6 SWAPS close|dup2|range [ACCEPTERS] [CONNECTERS]");
	family = strcmp(argv[1], "6") == 0 ? AF_INET6 : AF_INET;
	int swaps = (int)num_arg("SWAPS", argv[2], 1, 100000), by_dup2 = !strcmp(argv[3], "dup2");
	int by_range = !strcmp(argv[3], "range");
	int na = argc > 4 ? (int)num_arg("ACCEPTERS", argv[4], 1, 64) : 4;
	int nc = argc > 5 ? (int)num_arg("CONNECTERS", argv[5], 1, 64) : 4;
	alarm(60);
	long long deadline = now_us() + 30 * 1000000ll;

	lfd = by_range ? at_512(make_listener()) : make_listener();
	int number = lfd, same = 0, untuned = 0, made = 0;
	pthread_t t[128];
	for (int i = 0; i < na; i++)
		pthread_create(&t[i], NULL, accepter, NULL);
	for (int i = 0; i < nc; i++)
		pthread_create(&t[na + i], NULL, connecter, NULL);
	for (int i = 0; i < swaps && now_us() < deadline; i++, made++) {
		if (i > 0 && by_dup2) {
			int s = make_listener();
			if (listen(s, 64) != 0 || dup2(s, number) != number)
				die("listen, dup2: %s", strerror(errno));
			close(s);
			same++;
		} else if (i > 0 && by_range) {
			atomic_store(&port, 0);
			if (libc_close_range((unsigned)number, (unsigned)number + 7, 0) != 0 ||
			    at_512(make_listener()) != number)
				die("close_range, F_DUPFD: %s", strerror(errno));
			same++;
		} else if (i > 0) {
			atomic_store(&port, 0);
			close(number);
			/* the lowest free number: the old one, unless a connection accepted meanwhile
			 * took it */
			int s = make_listener();
			same += s == number;
			number = s;
			atomic_store(&lfd, s);
		}
		if (!(i > 0 && by_dup2) && listen(number, 64) != 0)
			die("listen: %s", strerror(errno));
		if (sockopt_int(number, IPPROTO_TCP, TCP_NODELAY) == 0)
			untuned++;
		atomic_store(&per_gen, 0);
		atomic_store(&port, local_port(number));
		/* a few connections accepted from this listener, at most 200 ms */
		for (long long until = now_us() + 200000; atomic_load(&per_gen) < 3 && now_us() < until;)
			usleep(200);
	}
	atomic_store(&done, 1);
	for (int i = 0; i < na + nc; i++)
		pthread_join(t[i], NULL);
	printf("SWAPS n=%d same_number=%d listener_nodelay0=%d conns=%ld conn_nodelay0=%ld\n", made,
	       same, untuned, atomic_load(&conns), atomic_load(&conn_untuned));
	return 0;
}
