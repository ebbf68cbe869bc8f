/* What a wrapper that runs the program as its child does with signals and with the program's
 * end, the same in socktune --attach (attach/supervise.c) and socktune --cgroup (cgroup/run.c):
 * which signals go on to the program, how one is passed on, and the program's status made
 * the wrapper's own. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* Not forwarded: what a fault raises in the process itself, and what cannot be caught. */
static int forwarded(int sig)
{
	switch (sig) {
	case SIGKILL: case SIGSTOP: case SIGCHLD:
	case SIGSEGV: case SIGBUS: case SIGILL: case SIGFPE: case SIGTRAP: case SIGSYS:
		return 0;
	default:
		return 1;
	}
}

void child_sigset(sigset_t *set)
{
	sigemptyset(set);
	for (int s = 1; s < NSIG; s++)
		if (forwarded(s) || s == SIGCHLD)
			sigaddset(set, s);
}

/* One the kernel sent the terminal's process group (^C, ^Z, a resize) reached the program
 * already, unless the program left our group (GNU timeout, a shell with job control:
 * setpgid), where it goes on to it as the terminal would have sent it; ^Z stops us too, so
 * that the shell sees the job stopped.  One we sent ourselves (SIGPIPE of our own write to a
 * closed stderr) is not passed on. */
int child_sig_done(const siginfo_t *info, pid_t child, int program_alive)
{
	int sig = info->si_signo;
	if (info->si_code == SI_KERNEL) {
		if (program_alive && getpgid(child) >= 0 && getpgid(child) != getpgrp())
			kill(child, sig);
		if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
			kill(getpid(), SIGSTOP);
		return 1;
	}
	return info->si_code == SI_USER && info->si_pid == getpid();
}

void child_sig_pass(const siginfo_t *info, pid_t to)
{
	if (info->si_code == SI_QUEUE)
		sigqueue(to, info->si_signo, info->si_value);
	else
		kill(to, info->si_signo);
}

int child_status(int status)
{
	return WIFSIGNALED(status) ? end_by_signal(WTERMSIG(status)) : WEXITSTATUS(status);
}
