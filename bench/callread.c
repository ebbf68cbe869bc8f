/* Instructions a passed-through hook costs: N one-byte read()s of /dev/zero inside
 * bench_loop, which the driver runs under valgrind --tool=callgrind
 * --toggle-collect=bench_loop with and without the library preloaded.  Collection covers
 * only bench_loop (user space: the syscall itself costs no counted instruction), so
 * Ir / N is the cost of one read() call as the program sees it.
 *
 *   callread N    first makes a TCP listener on 127.0.0.1 (so that, preloaded, the library
 *                 is live and its descriptor table exists, as in a real server), then reads.
 *
 * Built without _FORTIFY_SOURCE, so the call is read() itself, not __read_chk. */
#undef _FORTIFY_SOURCE
#include <fcntl.h>

#include "bench.h"

__attribute__((noinline, used)) static long bench_loop(int fd, long n)
{
	char c;
	long got = 0;
	for (long i = 0; i < n; i++)
		got += read(fd, &c, 1);
	return got;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? num_arg(argv[1], "count") : 100000;
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, "127.0.0.1", 0);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&ss, len) != 0 || listen(lfd, 8) != 0)
		die("listener");
	int fd = open("/dev/zero", O_RDONLY);
	if (fd < 0)
		die("open /dev/zero");
	long got = bench_loop(fd, n);
	printf("reads=%ld bytes=%ld\n", n, got);
	return got == n ? 0 : 1;
}
