/* logthreads: N threads that each make a TCP listener at the same moment (a barrier right
 * before listen()), so that under the preload their first log lines race for the log file.
 * Knows nothing of socktune.
 *
 *   logthreads [-4|-6] [-n THREADS] [-s SECONDS]
 *
 * Prints "READY listeners=N" once every thread's listen() returned, then sleeps SECONDS
 * (default 5) with the listeners open, so a test can look at /proc/PID/fd, and exits 0.
 */
#include <arpa/inet.h>
#include <pthread.h>

#include "common.h"

static pthread_barrier_t start;
static int family = AF_INET;

static void *make_listener(void *arg)
{
	int *out = arg;
	int fd = socket(family, SOCK_STREAM, 0);
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(family, 0, &ss);
	int ok = fd >= 0 && bind(fd, (struct sockaddr *)&ss, len) == 0;
	pthread_barrier_wait(&start); /* every thread's first log line at once */
	*out = ok && listen(fd, 16) == 0 ? fd : -1;
	return NULL;
}

int main(int argc, char **argv)
{
	prog_name = "logthreads";
	int n = 16, secs = 5, c;
	while ((c = getopt(argc, argv, "46n:s:")) != -1) {
		switch (c) {
		case '4': family = AF_INET; break;
		case '6': family = AF_INET6; break;
		case 'n': n = (int)num_arg("-n", optarg, 1, 256); break;
		case 's': secs = (int)num_arg("-s", optarg, 0, 600); break;
		default: die("usage: logthreads [-4|-6] [-n THREADS] [-s SECONDS]");
		}
	}
	pthread_t t[256];
	int fds[256];
	if (pthread_barrier_init(&start, NULL, (unsigned)n) != 0)
		die("pthread_barrier_init failed");
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, make_listener, &fds[i]) != 0)
			die("pthread_create failed");
	int ok = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		ok += fds[i] >= 0;
	}
	printf("READY listeners=%d\n", ok);
	fflush(stdout);
	struct timespec ts = {secs, 0};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return ok == n ? 0 : 1;
}
