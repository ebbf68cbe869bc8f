/* The exported socket hooks, each a few lines: call the real function, keep its result and
 * errno, and hand the descriptor to the logic that tunes it (listen.c, accept.c, ...). */
/* This file defines read, recv and recvfrom: glibc's fortified inline wrappers of the same
 * names must not come first (clang then ignores ST_EXPORT and the hooks stay hidden). */
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <spawn.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

ST_EXPORT int close_range(unsigned first, unsigned last, int flags);
ST_EXPORT void closefrom(int lowfd);
ST_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ST_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ST_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                                 struct sockaddr *addr, socklen_t *len);

ST_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len);
/* (not declared by every libc: musl, glibc before 2.34) */
ST_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                       int flags);
ST_EXPORT int setsockopt(int fd, int level, int optname, const void *val, socklen_t len);

/* ---- sockets ---- */

ST_EXPORT int socket(int domain, int type, int protocol)
{
	int live = st_live();
	int fd = st_real.socket(domain, type, protocol);
	if (live && fd >= 0) {
		int saved = errno;
		st_socket_made(fd, domain, type, protocol);
		errno = saved;
	}
	return fd;
}

/* Never a governed socket, but its numbers may carry a stale entry (a descriptor closed
 * where no hook saw it): they are cleared like any new socket's. */
ST_EXPORT int socketpair(int domain, int type, int protocol, int sv[2])
{
	int live = st_live();
	int r = st_real.socketpair(domain, type, protocol, sv);
	if (live && r == 0) {
		int saved = errno;
		st_socket_made(sv[0], domain, type, protocol);
		st_socket_made(sv[1], domain, type, protocol);
		errno = saved;
	}
	return r;
}

ST_EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	if (!st_live())
		return st_real.bind(fd, addr, len);
	return st_bind(fd, addr, len);
}

ST_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	if (!st_live())
		return st_real.connect(fd, addr, len);
	return st_connect(fd, addr, len);
}

ST_EXPORT int setsockopt(int fd, int level, int optname, const void *val, socklen_t len)
{
	if (!st_live())
		return st_real.setsockopt(fd, level, optname, val, len);
	return st_setsockopt(fd, level, optname, val, len);
}

ST_EXPORT int listen(int fd, int backlog)
{
	if (!st_live())
		return st_real.listen(fd, backlog);
	return st_listen(fd, backlog);
}

ST_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	int live = st_live();
	int cfd = st_real.accept(fd, addr, len);
	if (live && cfd >= 0) {
		int saved = errno;
		st_accepted(fd, cfd);
		errno = saved;
	}
	return cfd;
}

ST_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	int live = st_live();
	int cfd = st_real.accept4(fd, addr, len, flags);
	if (live && cfd >= 0) {
		int saved = errno;
		st_accepted(fd, cfd);
		errno = saved;
	}
	return cfd;
}

ST_EXPORT int close(int fd)
{
	if (!st_live() || fd < 0 || !st_closing((unsigned)fd, (unsigned)fd)) /* keeps errno */
		return st_real.close(fd);
	int r = st_real.close(fd); /* a listener's */
	st_closed((unsigned)fd, (unsigned)fd); /* keeps errno too */
	return r;
}

ST_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	/* Forget before closing, as close() does: once closed, another thread may get a number
	 * back and mark it.  A call the kernel will refuse changes nothing; CLOSE_RANGE_CLOEXEC
	 * (4) only marks the descriptors, they stay open. */
	int closing = 0;
	if (st_live() && first <= last && !(flags & ~(2 | 4)) && !(flags & 4)) {
		int saved = errno;
		closing = st_closing(first, last);
		errno = saved;
	}
	int r = st_real.close_range(first, last, flags);
	if (closing)
		st_closed(first, last); /* keeps errno */
	return r;
}

/* glibc's closefrom() closes through an internal call the close_range() hook never sees. */
ST_EXPORT void closefrom(int lowfd)
{
	int closing = 0;
	if (st_live() && lowfd >= 0) {
		int saved = errno;
		closing = st_closing((unsigned)lowfd, ~0u);
		errno = saved;
	}
	st_real.closefrom(lowfd);
	if (closing)
		st_closed((unsigned)lowfd, ~0u);
}

/* dup2()/dup3() onto a descriptor replace what it named: the new number now names the old
 * one's socket (a connection keeps its quick-ack mark; a listener's copy shares its record:
 * the same listener, not adopted again). */
ST_EXPORT int dup2(int oldfd, int newfd)
{
	int live = st_live();
	int r = st_real.dup2(oldfd, newfd);
	if (live && r >= 0 && oldfd != newfd)
		st_duped(oldfd, newfd);
	return r;
}

ST_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	int live = st_live();
	int r = st_real.dup3(oldfd, newfd, flags);
	if (live && r >= 0)
		st_duped(oldfd, newfd);
	return r;
}

/* ---- receive calls: quick-ack re-arm; a single table load for every other descriptor ---- */

ST_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	st_live();
	ssize_t r = st_real.read(fd, buf, n);
	st_after_receive(fd, r);
	return r;
}

ST_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	st_live();
	ssize_t r = st_real.readv(fd, iov, cnt);
	st_after_receive(fd, r);
	return r;
}

ST_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	st_live();
	ssize_t r = st_real.recv(fd, buf, n, flags);
	st_after_receive(fd, r);
	return r;
}

ST_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr,
                           socklen_t *len)
{
	st_live();
	ssize_t r = st_real.recvfrom(fd, buf, n, flags, addr, len);
	st_after_receive(fd, r);
	return r;
}

ST_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	int live = st_live();
	ssize_t r = st_real.recvmsg(fd, msg, flags);
	st_after_receive(fd, r);
	/* descriptors may have come with it (SCM_RIGHTS): a connection handed over by a
	 * primary that accepts for its workers, a listener handed over by the process being
	 * replaced; a message without ancillary data costs nothing more */
	if (live && r >= 0 && msg->msg_controllen)
		st_received(msg);
	return r;
}

/* _FORTIFY_SOURCE builds call these instead; glibc checks the buffer size in them. */
ST_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	st_live();
	ssize_t r = st_real.read_chk(fd, buf, n, buflen);
	st_after_receive(fd, r);
	return r;
}

ST_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	st_live();
	ssize_t r = st_real.recv_chk(fd, buf, n, buflen, flags);
	st_after_receive(fd, r);
	return r;
}

ST_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                                 struct sockaddr *addr, socklen_t *len)
{
	st_live();
	ssize_t r = st_real.recvfrom_chk(fd, buf, n, buflen, flags, addr, len);
	st_after_receive(fd, r);
	return r;
}
