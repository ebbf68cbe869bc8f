/* A library whose constructor runs before libsocktune's own (a DT_NEEDED library of the
 * program: the loader initialises it first) and calls hooks there, before the library's
 * init ran (t_init.sh):
 *   EARLY_MODE=signal: arms a one-shot timer of EARLY_US microseconds whose SIGALRM handler
 *     calls close(-1), then calls socket(), which starts the library's init; the signal
 *     lands during that init often enough (a handler re-entering a hook mid-init);
 *   EARLY_MODE=close_range: close_range() on a descriptor it opened: result, errno and
 *     whether the descriptor is closed, as libc would have it;
 *   EARLY_MODE=fork: a thread calls socket(), starting the library's init, and EARLY_US
 *     later the constructor forks; the child calls close(-1) five times and exits (a child
 *     whose parent's init was under way: the thread running it does not exist there). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

volatile sig_atomic_t early_fired;
int early_close_range_rc = -2, early_close_range_errno, early_still_open = -1;

static void on_alarm(int sig)
{
	(void)sig;
	int saved = errno;
	close(-1);
	early_fired = 1;
	errno = saved;
}

static void *make_socket(void *arg)
{
	(void)arg;
	close(socket(AF_INET, SOCK_STREAM, 0));
	return NULL;
}

__attribute__((constructor)) static void early(void)
{
	const char *mode = getenv("EARLY_MODE");
	if (mode && strcmp(mode, "signal") == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_alarm;
		sigaction(SIGALRM, &sa, NULL);
		long us = getenv("EARLY_US") ? strtol(getenv("EARLY_US"), NULL, 10) : 30;
		struct itimerval it = {{0, 0}, {0, us > 0 ? us : 1}};
		setitimer(ITIMER_REAL, &it, NULL);
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct timespec t0, t;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do /* the timer fires within this bounded wait at the latest */
			clock_gettime(CLOCK_MONOTONIC, &t);
		while (!early_fired && (t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < 50000000L);
		close(fd);
	} else if (mode && strcmp(mode, "fork") == 0) {
		pthread_t t;
		pthread_create(&t, NULL, make_socket, NULL);
		usleep(getenv("EARLY_US") ? (unsigned)strtoul(getenv("EARLY_US"), NULL, 10) : 1000);
		pid_t pid = fork();
		if (pid == 0) {
			for (int i = 0; i < 5; i++)
				close(-1);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
		pthread_join(t, NULL);
	} else if (mode && strcmp(mode, "close_range") == 0) {
		int fd = open("/dev/null", O_RDONLY);
		errno = 0;
		early_close_range_rc = close_range((unsigned)fd, (unsigned)fd, 0);
		early_close_range_errno = errno;
		early_still_open = fcntl(fd, F_GETFD) != -1;
	}
}
