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
#include <sys/prctl.h>
#include <sys/resource.h>
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
	/* the program's orphans become ours: reaped here, and their listeners tuned too */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	signal(SIGPIPE, SIG_IGN); /* (after the fork: the program keeps its own disposition) */
	static struct attach_state st;
	struct attach_args a = {.connections = 0};
	st.out = stderr; /* stdout is the program's */
	st.following = 1; /* the program may not have made its sockets yet: no refusal lines */
	for (;;) {
		int fam[64], n = family_of(getpid(), fam, 64);
		for (int k = 1; k < n; k++) /* (fam[0] is the wrapper itself) */
			attach_pid(p, &a, fam[k], &st);
		attach_alive(&st);
		fflush(stderr);
		struct timespec tick = {0, 20 * 1000 * 1000};
		siginfo_t info;
		int sig = sigtimedwait(&set, &info, &tick);
		if (sig > 0 && sig != SIGCHLD) {
			/* a signal from the terminal reached the program's process group already
			 * (it is ours): only those sent to the wrapper (kill, docker stop) go on */
			if (info.si_code != SI_KERNEL)
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
				struct rlimit nocore = {0, 0}; /* the program's core is the one that counts */
				setrlimit(RLIMIT_CORE, &nocore);
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
