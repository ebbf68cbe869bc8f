/* Which process are we: a vfork() child runs in our memory until it execs, and must leave
 * the parent's state alone (its descriptor entries, the log).  Below the log and the
 * descriptor lifecycle, which both ask. */
#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

/* A vfork() child shares our memory until it execs: its close() of an inherited listener
 * or quick-ack connection must not clear the parent's entries.  Only entries whose loss
 * would matter pay the getpid() that tells. */
static pid_t st_pid;

static void forked_child(void)
{
	st_pid = getpid();
	st_fd_forked();
}

void st_pid_init(void)
{
	st_pid = getpid();
	pthread_atfork(NULL, NULL, forked_child);
}

/* Another pid than ours: a vfork() child (our memory), or a child made by _Fork() or
 * clone(), which skip the atfork handler (a copy of it, with our stale pid).  kcmp tells
 * the two apart; a copy takes its own pid from then on.  When kcmp cannot say (an old
 * kernel, no permission), the entries are left alone as in a vfork child. */
#ifndef KCMP_VM
#define KCMP_VM 1
#endif
int st_in_vfork_child(void)
{
	pid_t me = getpid();
	if (me == st_pid)
		return 0;
	int saved = errno;
	long r = syscall(SYS_kcmp, me, st_pid, KCMP_VM, 0, 0);
	/* no such process: our pid's process is gone, and a vfork child cannot outlive the
	 * parent whose memory it runs in */
	int copy = r > 0 || (r < 0 && errno == ESRCH);
	errno = saved;
	if (copy) {
		st_pid = me; /* a copy: writing it changes nothing in the parent */
		return 0;
	}
	return 1;
}
