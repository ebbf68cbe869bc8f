/* socktune --attach [OPTIONS] -- PROGRAM: for a program LD_PRELOAD cannot reach (statically
 * linked, Go): the wrapper starts it as its child and stays as a minimal init: it forwards
 * SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH, reaps every child (it may
 * be pid 1 of a container), exits with the program's status or signal, and tunes each new
 * listener of the program and its descendants from outside (attach.c), polling every 20 ms.
 * Connections that arrive before a listener's first poll get the old values. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "socktune.h"
#include "cli.h"

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
#define N_FORWARDED (sizeof forwarded / sizeof forwarded[0])

/* pid and its descendants (from /proc/PID/task/TID/children), at most max. */
static int family_of(int pid, int *out, int max)
{
	int n = 0;
	out[n++] = pid;
	for (int k = 0; k < n && n < max; k++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/task", out[k]);
		DIR *d = opendir(path);
		for (struct dirent *e; d && (e = readdir(d)) && n < max;) {
			if (e->d_name[0] == '.')
				continue;
			char cpath[sizeof path + 270];
			snprintf(cpath, sizeof cpath, "%s/%s/children", path, e->d_name);
			FILE *f = fopen(cpath, "re");
			int c;
			while (f && n < max && fscanf(f, "%d", &c) == 1)
				out[n++] = c;
			if (f)
				fclose(f);
		}
		if (d)
			closedir(d);
	}
	return n;
}

int supervise_main(const struct cli *c, const struct st_policy *p)
{
	if (!c->program) {
		usage_error(stderr, "--attach: no program to run");
		return EXIT_USAGE;
	}
	sigset_t set, old;
	sigemptyset(&set);
	for (size_t k = 0; k < N_FORWARDED; k++)
		sigaddset(&set, forwarded[k]);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	fflush(NULL);
	pid_t child = fork();
	if (child < 0) {
		fprintf(stderr, "socktune: --attach: fork: %s\n", strerror(errno));
		return 126;
	}
	if (child == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(c->program[0], c->program);
		int e = errno;
		fprintf(stderr, "socktune: %s: %s\n", c->program[0],
		        e == ENOENT ? "command not found" : strerror(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	static struct attach_state st;
	struct attach_args a = {.connections = 0};
	st.out = stderr; /* stdout is the program's */
	st.following = 1; /* the program may not have made its sockets yet: no refusal lines */
	for (;;) {
		int fam[64], n = family_of(child, fam, 64);
		for (int k = 0; k < n; k++)
			attach_pid(p, &a, fam[k], &st);
		fflush(stderr);
		struct timespec tick = {0, 20 * 1000 * 1000};
		int sig = sigtimedwait(&set, NULL, &tick);
		if (sig > 0 && sig != SIGCHLD) {
			kill(child, sig);
			continue;
		}
		int status;
		pid_t r;
		while ((r = waitpid(-1, &status, WNOHANG)) > 0) { /* every child: we may be pid 1 */
			if (r != child)
				continue;
			if (WIFSIGNALED(status)) {
				int s = WTERMSIG(status);
				signal(s, SIG_DFL);
				sigprocmask(SIG_SETMASK, &old, NULL);
				raise(s);
				return 128 + s;
			}
			return WEXITSTATUS(status);
		}
		if (r < 0 && errno == ECHILD)
			return 127;
	}
}
