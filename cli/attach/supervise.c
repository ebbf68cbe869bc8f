/* socktune --attach [OPTIONS] -- PROGRAM: for a program LD_PRELOAD cannot reach (statically
 * linked, Go): the wrapper starts it as its child and stays as a minimal init.  It forwards
 * every signal that can be caught and is not a fault's, reaps every child (it may be pid 1 of
 * a container), exits with the program's status or signal, and tunes each new listener of
 * the program and its descendants from outside (the listener pass, pass.c), a pass every
 * 20 ms on an absolute clock.
 * Connections that arrive before a listener's first pass get the old values.  A program that
 * daemonizes (exits 0, leaving processes) is followed: the wrapper says so in one line and
 * goes on until the last of them exits, with that one's status. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "socktune.h"
#include "attach/attach.h"
#include "host/clock.h"

#define PASS_NS (ATTACH_PASS_MS * 1000 * 1000L)

/* A signal sent to the wrapper (kill, docker stop) goes on to the program, or once it has
 * exited leaving processes, to each of them that is our child now (child.c: the terminal's
 * and our own go to no one). */
static void forward(const siginfo_t *info, int child, int program_alive)
{
	if (child_sig_done(info, child, program_alive))
		return;
	struct svc_pids to = {0};
	if (program_alive)
		svc_pids_add(&to, child);
	else
		svc_children(getpid(), &to); /* the processes it left are ours now */
	for (size_t k = 0; k < to.n; k++)
		child_sig_pass(info, to.v[k]);
	free(to.v);
}

/* The processes the program left when it exited 0, said in one line; 0 when none. */
static size_t left_behind(FILE *say, const struct cli *c, int child)
{
	struct svc_pids left = {0};
	svc_descendants(getpid(), 0, &left);
	if (left.n) {
		char list[160];
		svc_pids_text(&left, list, sizeof list);
		fprintf(say, "socktune: --attach: %s (pid %d) exited 0 and left %zu process%s "
		        "(%s): their listeners are tuned until the last exits, whose status is ours\n",
		        c->program[0], child, left.n, left.n == 1 ? "" : "es", list);
	}
	free(left.v);
	return left.n;
}

/* The program run in this process: only a failure returns, said, with its status. */
static int exec_program(const struct cli *c)
{
	execvp(c->program[0], c->program);
	int e = errno;
	fprintf(stderr, "socktune: %s: %s\n", c->program[0],
	        e == ENOENT ? "command not found" : strerror(e));
	return e == ENOENT ? 127 : 126;
}

int supervise_main(const struct cli *c, const struct st_policy *p)
{
	if (!c->program) {
		usage_error(stderr, "--attach: no program to run");
		return EXIT_USAGE;
	}
	if (st_on(p, ST_V_DISABLE)) { /* nothing to do: the program runs in place, untuned */
		fprintf(stderr, "socktune: --attach: SOCKTUNE_DISABLE=1 (--disable): %s runs "
		        "untuned\n", c->program[0]);
		fflush(NULL);
		return exec_program(c);
	}
	sigset_t set, old;
	child_sigset(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	/* A parent that left SIGCHLD ignored would have the kernel reap our children for us,
	 * their status lost: ours is the default; the program gets back what it would have had. */
	struct sigaction chld_was, dfl = {.sa_handler = SIG_DFL};
	sigaction(SIGCHLD, &dfl, &chld_was);
	/* the program's orphans become ours: reaped here, and their listeners tuned too.  Set
	 * before the fork: a process inherits whether an ancestor is a subreaper when it is
	 * made, and one made meanwhile (the program's first child, as it daemonizes) would go
	 * to init (7 of 30 daemonizing starts under load with the prctl after the fork) */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	fflush(NULL);
	pid_t child = fork();
	if (child < 0) {
		fprintf(stderr, "socktune: --attach: fork: %s\n", strerror(errno));
		return 126;
	}
	if (child == 0) {
		sigaction(SIGCHLD, &chld_was, NULL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		_exit(exec_program(c));
	}
	signal(SIGPIPE, SIG_IGN); /* (after the fork: the program keeps its own disposition) */
	/* the pass's lines go to stderr (stdout is the program's), each pass's in one write */
	struct attach_pass *pass = attach_pass_open(p, "--attach", 0);
	if (!pass)
		fprintf(stderr, "socktune: --attach: out of memory: %s runs untuned\n", c->program[0]);
	FILE *say = pass ? attach_pass_say(pass) : stderr;
	int program_alive = 1, last = 0;
	for (long long next = clock_mono_ns();;) {
		if (pass)
			attach_pass_run(pass, child);
		/* the next pass on the clock, not 20 ms after this one ended; a pass that came
		 * more than a period late skips the ticks it missed */
		next += PASS_NS;
		if (clock_mono_ns() > next + PASS_NS)
			next = clock_mono_ns() + PASS_NS;
		for (long long wait; (wait = next - clock_mono_ns()) > 0;) {
			struct timespec tick = {wait / 1000000000LL, wait % 1000000000LL};
			siginfo_t info;
			int sig = sigtimedwait(&set, &info, &tick);
			if (sig > 0 && sig != SIGCHLD)
				forward(&info, child, program_alive);
			if (sig != SIGCHLD)
				continue;
			int status;
			pid_t r;
			while ((r = waitpid(-1, &status, WNOHANG)) > 0) { /* every child: we may be pid 1 */
				last = status;
				if (r != child)
					continue;
				program_alive = 0;
				if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !left_behind(say, c, child)) {
					attach_pass_close(pass);
					return child_status(status);
				}
			}
			if (!program_alive && r < 0 && errno == ECHILD) { /* the last one it left exited */
				attach_pass_close(pass); /* (the line that said so, too) */
				return child_status(last);
			}
		}
	}
}
