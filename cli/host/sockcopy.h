/* sockcopy.c: one value of another process's socket, through a pidfd_getfd copy.  A value
 * is an option of the ST_VARIABLES table (ST_V_*): a listener's backlog (listen() again on
 * the copy), or an int socket option (on an IPv6 socket its IPv6 one: IPV6_TCLASS for
 * IP_TOS), a flag read as 0 or 1.  Also the pidfd calls' numbers, for attach's and doctor's
 * own copies.  Internal to cli/. */
#ifndef SOCKTUNE_SOCKCOPY_H
#define SOCKTUNE_SOCKCOPY_H

#include <sys/syscall.h>

#include "socktune_opts.h"

/* (Linux 5.3 and 5.6; older headers lack the numbers) */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

/* Whether sockcopy sets option opt on a live socket, and reads back what it set: the
 * backlog, or an int option that means something after bind() (not a name, not a buffer,
 * which reads back twice what was set, not an outgoing connection's alone) */
static inline int sockcopy_takes(int opt)
{
	if (opt == ST_V_BACKLOG)
		return 1;
	return opt >= 0 && opt < ST_V_COUNT && st_is_sockopt(opt) &&
	       !(st_sockopts[opt].flags &
	         (ST_O_NAME | ST_O_BUFFER | ST_O_BEFORE_BIND | ST_O_CLIENT_ONLY));
}
/* Whether the connections a listener accepts copy option opt from it (the kernel copies
 * TCP_NODELAY, TCP_USER_TIMEOUT, ... at accept; not SO_PRIORITY, not the backlog): a value
 * set on a listener is on its connections accepted since too */
static inline int sockcopy_inherited(int opt)
{
	return opt != ST_V_BACKLOG && sockcopy_takes(opt) &&
	       !(st_sockopts[opt].flags & (ST_O_EACH_CONN | ST_O_LISTENER_ONLY));
}
/* A copy of pid's fd, checked to be the socket of inode ino (0: any socket); -1 with errno
 * (ESTALE: the number names another file now; EPERM: no ptrace access). */
int sockcopy_open(int pid, int fd, unsigned long long ino);
/* Option opt's value on the copy; -1: not readable (EINVAL: not an option sockcopy takes) */
int sockcopy_get(int copy, int opt);
int sockcopy_set(int copy, int opt, int v); /* 0, or -1 with errno */
/* Copy, read, close: the value, or -1 */
int sockcopy_read(int pid, int fd, unsigned long long ino, int opt);
/* pid's start time (/proc/PID/stat field 22, clock ticks after boot); 0: not readable */
unsigned long long sockcopy_start_of(int pid);
/* sockcopy_open, only from the process that started at start (a pid taken by another
 * process since: -1, errno ESRCH, as one gone) */
int sockcopy_open_proc(int pid, unsigned long long start, int fd, unsigned long long ino);

#endif
