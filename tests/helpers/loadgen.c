/* loadgen: a keep-alive load generator for the stress tests, with bounded concurrency and
 * timeouts.  It knows nothing of socktune and is never preloaded.
 *
 *   loadgen [-n CONNS] [-c CONCURRENCY] [-r REQS] [-s SIZE] [-w SECONDS] [-T SECONDS] HOST PORT
 *
 * CONCURRENCY threads take connection numbers until CONNS were made; each connection sends
 * REQS requests of SIZE bytes (a pattern naming the connection and request) and reads each
 * echo back, then closes.  A connection that fails, times out (-w, per call, default 5 s) or
 * reads back anything else is lost.  The whole run gives up after -T seconds (default 60).
 *
 * Output: "LOADGEN ok=N lost=N reqs=N ms=N", plus up to 5 "ERR conn=N step why" lines.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

static struct sockaddr_storage addr;
static socklen_t addrlen;
static long total, reqs_per_conn, size, wait_ms;
static long long end_us;
static _Atomic long next_conn, ok, lost, reqs, errs;

static void err(long conn, const char *step)
{
	int e = errno;
	if (atomic_fetch_add(&errs, 1) < 5)
		fprintf(stderr, "ERR conn=%ld %s %s\n", conn, step, e ? strerror(e) : "short");
}

static int one(long conn)
{
	char out[4096], in[4096];
	int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err(conn, "socket");
		return -1;
	}
	struct timeval tv = {.tv_sec = wait_ms / 1000, .tv_usec = (wait_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* bounds connect() too */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	int one_ = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one_, sizeof one_);
	if (connect(fd, (struct sockaddr *)&addr, addrlen) != 0) {
		err(conn, "connect");
		close(fd);
		return -1;
	}
	for (long r = 0; r < reqs_per_conn; r++) {
		memset(out, 'a' + (int)(r % 26), (size_t)size);
		snprintf(out, (size_t)size, "%ld/%ld", conn, r);
		errno = 0;
		if (write_full(fd, out, (size_t)size) != 0) {
			err(conn, "write");
			close(fd);
			return -1;
		}
		long long deadline = now_us() + wait_ms * 1000;
		errno = 0;
		if (read_full(fd, in, (size_t)size, deadline) != size || memcmp(in, out, (size_t)size)) {
			err(conn, "read");
			close(fd);
			return -1;
		}
		atomic_fetch_add(&reqs, 1);
	}
	close(fd);
	return 0;
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		long c = atomic_fetch_add(&next_conn, 1);
		if (c >= total)
			break;
		if (now_us() > end_us || one(c) != 0)
			atomic_fetch_add(&lost, 1);
		else
			atomic_fetch_add(&ok, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long conc = 16, seconds = 60;
	int opt;
	prog_name = "loadgen";
	total = 1000, reqs_per_conn = 4, size = 64, wait_ms = 5000;
	while ((opt = getopt(argc, argv, "n:c:r:s:w:T:")) != -1) {
		switch (opt) {
		case 'n': total = num_arg("-n", optarg, 1, 10000000); break;
		case 'c': conc = num_arg("-c", optarg, 1, 512); break;
		case 'r': reqs_per_conn = num_arg("-r", optarg, 1, 100000); break;
		case 's': size = num_arg("-s", optarg, 16, 4096); break;
		case 'w': wait_ms = num_arg("-w", optarg, 1, 600) * 1000; break;
		case 'T': seconds = num_arg("-T", optarg, 1, 3600); break;
		default: die("usage: loadgen [-n N] [-c N] [-r N] [-s N] [-w S] [-T S] HOST PORT");
		}
	}
	if (argc - optind != 2)
		die("usage: loadgen [-n N] [-c N] [-r N] [-s N] [-w S] [-T S] HOST PORT");
	addrlen = parse_addr(argv[optind], argv[optind + 1], &addr);
	raise_nofile();
	long long start = now_us();
	end_us = start + seconds * 1000000LL;
	pthread_t t[512];
	long made = 0;
	for (long i = 0; i < conc; i++, made++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0)
			break;
	if (made == 0)
		die("pthread_create failed");
	for (long i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	printf("LOADGEN ok=%ld lost=%ld reqs=%ld ms=%lld\n", atomic_load(&ok), atomic_load(&lost),
	       atomic_load(&reqs), (now_us() - start) / 1000);
	return atomic_load(&lost) ? 1 : 0;
}
