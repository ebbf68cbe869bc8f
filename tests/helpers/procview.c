/* procview: what a threaded server can see of its own process around listen(), printed as
 * key=value lines so that a run under the library can be compared with a plain one.
 *
 * Idle threads share the descriptor table first, as in any threaded server (beam, a
 * thread pool).  Then: the table's size (FDSize in /proc/self/status), the descriptor
 * numbers socket() hands out, errno, the signal mask and the pending set (a SIGUSR2 the
 * app blocked and raised itself must still be pending), before and after a listen() on
 * 127.0.0.1:0; and how long listen() took, the socket already listening meanwhile.
 *
 * procview [-t THREADS] [-n ROUNDS]: ROUNDS listeners, one after the other (the first
 * listen() is where the library opens its log file). */
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include "common.h"

static int wake[2];

static void *idle_thread(void *arg)
{
	(void)arg;
	char c;
	while (read(wake[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

/* FDSize: the descriptor slots the kernel has allocated for the process. */
static long fd_table_size(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "FDSize: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void print_set(const char *key, const sigset_t *s)
{
	printf("%s=", key);
	for (int sig = 1; sig < 32; sig++)
		if (sigismember(s, sig))
			printf("%d,", sig);
	printf("\n");
}

int main(int argc, char **argv)
{
	int threads = 3, rounds = 2, opt;
	prog_name = "procview";
	while ((opt = getopt(argc, argv, "t:n:")) != -1) {
		switch (opt) {
		case 't': threads = (int)num_arg("-t", optarg, 0, 64); break;
		case 'n': rounds = (int)num_arg("-n", optarg, 1, 16); break;
		default: die("usage: procview [-t THREADS] [-n ROUNDS]");
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* SIGUSR2 blocked in every thread and raised once: the app's own pending signal. */
	sigset_t usr2, mask, pending;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);
	if (pipe(wake) != 0)
		die("pipe: %s", strerror(errno));
	pthread_t t[64];
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, idle_thread, NULL) != 0)
			die("pthread_create failed");
	kill(getpid(), SIGUSR2);

	printf("fdsize.start=%ld\n", fd_table_size());
	for (int r = 0; r < rounds; r++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket: %s", strerror(errno));
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
			die("bind: %s", strerror(errno));
		long before = fd_table_size();
		errno = ENOMSG; /* a successful call leaves errno alone */
		long long t0 = now_us();
		int rc = listen(fd, 16);
		long long t1 = now_us();
		int e = errno;
		printf("round=%d listen.rc=%d listen.fd=%d errno.after=%d\n", r, rc, fd, e);
		printf("round=%d fdsize.before=%ld fdsize.after=%ld\n", r, before, fd_table_size());
		/* the numbers the app gets next: the lowest free ones, as without the library */
		int n1 = socket(AF_INET, SOCK_STREAM, 0), n2 = dup(0);
		printf("round=%d next.socket=%d next.dup=%d\n", r, n1, n2);
		close(n2);
		close(n1);
		pthread_sigmask(SIG_BLOCK, NULL, &mask);
		sigpending(&pending);
		printf("round=%d ", r);
		print_set("sigmask", &mask);
		printf("round=%d ", r);
		print_set("pending", &pending);
		/* timing: reported, not compared (the test judges it separately) */
		printf("timing round=%d listen_us=%lld\n", r, t1 - t0);
	}
	/* the pending SIGUSR2 is still the app's to take */
	struct timespec zero = {0, 0};
	int got = sigtimedwait(&usr2, NULL, &zero);
	printf("usr2.taken=%d\n", got);

	if (write(wake[1], "x", 1) != 1)
		die("write: %s", strerror(errno));
	close(wake[1]);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
