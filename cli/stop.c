/* A loop ended by a signal: SIGINT (^C) and SIGTERM (kill, docker stop, systemctl stop)
 * end doctor's window, attach --follow and stats --watch once what is under way is done
 * (the report, the summary, the round being printed); then the command ends by that same
 * signal, so that the shell's status is 128 + its number (130, 143) and a parent sees a
 * signal: systemd counts a SIGTERM stop as clean, and a shell loop stops at ^C.  stats
 * --watch, whose round may wait on others (a file, a pipe's reader), ends at the first signal
 * even then (stop_on_signals_now). */
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>

#include "cli.h"

volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
	signal(sig, SIG_DFL); /* a second one ends the command at once */
}

static void install(int flags)
{
	struct sigaction sa = {.sa_handler = on_stop, .sa_flags = flags};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void stop_on_signals(void)
{
	install(SA_RESTART); /* a line being written is finished; a sleep or a poll returns at once */
}

void stop_on_signals_now(void)
{
	/* Without SA_RESTART a call that waits on another party (an open or a read that the
	 * kernel lets sleep, a write to a pipe whose reader reads nothing) returns EINTR at the
	 * first signal instead of going back to sleep, so that signal is not swallowed. */
	install(0);
}

const char *stop_name(void)
{
	return stop_signal == SIGTERM ? "SIGTERM" : "SIGINT";
}

int stop_end(int status)
{
	int sig = stop_signal;
	return sig ? end_by_signal(sig) : status;
}

int end_by_signal(int sig)
{
	fflush(stdout);
	fflush(stderr);
	struct rlimit nocore = {0, 0}; /* a wrapper's program's core is the one that counts */
	setrlimit(RLIMIT_CORE, &nocore);
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	return 128 + sig; /* (not reached) */
}
