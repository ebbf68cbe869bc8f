/* A socket of another process changed from outside, one value at a time: pidfd_getfd(2)
 * (Linux 5.6) takes a copy of its descriptor, an option set on the copy is set on the socket
 * itself (with this process's credentials), and listen() on a copy of a listener changes its
 * backlog live (the kernel cuts it to the target namespace's somaxconn).  The copy is held
 * only for the change and closed at once: a socket whose owner closes it while a copy is
 * open lives on.  Each value is read back from the kernel after it is set.  The values are
 * options of the table (ST_V_*), so a cure names its option once.  What watch --apply and
 * socktune revert share. */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "socktune_apply.h"
#include "host/owned.h"
#include "host/probe.h"
#include "host/sockcopy.h"

unsigned long long sockcopy_start_of(int pid)
{
	return own_start_of(pid);
}

/* A copy of fd from pid, the process that started at start when start is not 0.  The start
 * is read once the pidfd is held: the pidfd names the process that had pid when it was
 * opened, and a process that started when the journal says cannot have taken pid after it,
 * so a match then means the pidfd is that process's. */
static int copy_of(int pid, unsigned long long start, int fd, unsigned long long ino)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -1;
	if (start && own_start_of(pid) != start) {
		close(pidfd);
		errno = ESRCH; /* (another process has the pid now) */
		return -1;
	}
	int copy = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	int err = errno;
	close(pidfd);
	if (copy < 0) {
		errno = err;
		return -1;
	}
	struct stat sb;
	if (fstat(copy, &sb) != 0 || !S_ISSOCK(sb.st_mode) ||
	    (ino && (unsigned long long)sb.st_ino != ino)) {
		close(copy);
		errno = ESTALE; /* the number names another file now */
		return -1;
	}
	return copy;
}

int sockcopy_open(int pid, int fd, unsigned long long ino)
{
	return copy_of(pid, 0, fd, ino);
}

int sockcopy_open_proc(int pid, unsigned long long start, int fd, unsigned long long ino)
{
	return copy_of(pid, start, fd, ino);
}

/* Where option opt is on the copy's socket: its level and name, those of its IPv6 option on
 * an IPv6 socket; -1 (EINVAL) for one sockcopy does not take */
static int where_of(int copy, int opt, int *level, int *optname)
{
	long long family;
	const char *label;
	if (opt == ST_V_BACKLOG || !sockcopy_takes(opt)) {
		errno = EINVAL;
		return -1;
	}
	if (probe_get_int(copy, SOL_SOCKET, SO_DOMAIN, &family) != 0)
		return -1;
	st_sockopt_for(opt, (int)family, level, optname, &label);
	return 0;
}

int sockcopy_get(int copy, int opt)
{
	int level, optname;
	long long v;
	if (opt == ST_V_BACKLOG)
		return st_listen_backlog(&cli_raw_ops, copy);
	if (where_of(copy, opt, &level, &optname) != 0 ||
	    probe_get_int(copy, level, optname, &v) != 0)
		return -1;
	return st_opt_is_flag(opt) ? v != 0 : (int)v;
}

int sockcopy_set(int copy, int opt, int v)
{
	int level, optname;
	if (opt == ST_V_BACKLOG)
		return (int)syscall(SYS_listen, copy, v);
	if (where_of(copy, opt, &level, &optname) != 0)
		return -1;
	return probe_set_int(copy, level, optname, v);
}

int sockcopy_read(int pid, int fd, unsigned long long ino, int opt)
{
	int copy = sockcopy_open(pid, fd, ino);
	if (copy < 0)
		return -1;
	int v = sockcopy_get(copy, opt);
	close(copy);
	return v;
}
