/* A sysctl as another process's network namespace has it: what caps the options set on that
 * process's sockets (attach's clamps, doctor's limits per namespace). */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "socktune_host.h"
#include "host/diag.h"
#include "host/pidinfo.h"
#include "host/nssysctl.h"

/* A sysctl of the target's network namespace (its somaxconn, rmem_max cap what is set on its
 * sockets, not ours): read here when it is ours, else by a child that joins it (setns needs
 * CAP_SYS_ADMIN).  -1 when it cannot be read.  (Never with a copy open: the child would
 * hold it too.) */
long long target_sysctl(int pid, const char *name)
{
	if (pid_same_ns(pid, "net") == 1)
		return st_sysctl_num(name, -1);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/ns/net", pid);
	int pipefd[2];
	if (pipe(pipefd) != 0)
		return -1;
	pid_t child = fork();
	if (child == 0) {
		long long v = -1;
		int ns = open(path, O_RDONLY | O_CLOEXEC);
		if (ns >= 0 && setns(ns, CLONE_NEWNET) == 0)
			v = st_sysctl_num(name, -1);
		ssize_t w = write(pipefd[1], &v, sizeof v);
		_exit(w == sizeof v ? 0 : 1);
	}
	close(pipefd[1]);
	long long v = -1;
	struct pollfd pf = {.fd = pipefd[0], .events = POLLIN};
	int ready = child > 0 && poll(&pf, 1, 2000) == 1;
	if (ready && read(pipefd[0], &v, sizeof v) != sizeof v)
		v = -1;
	close(pipefd[0]);
	if (child > 0 && !ready)
		kill(child, SIGKILL);
	if (child > 0)
		waitpid(child, NULL, 0);
	return v;
}

int target_sysctl_str(int pid, const char *name, char *out, size_t n)
{
	out[0] = '\0';
	/* /proc/sys/net is the reader's namespace's, as it opens it: read from inside */
	int self = diag_enter(pid);
	if (self < 0 && self != DIAG_SAME_NS)
		return -1;
	int rc = st_sysctl_str(name, out, n);
	diag_leave(self);
	return rc;
}
