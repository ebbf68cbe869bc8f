/* The exported hooks, each a few lines: call the real function, keep its result and errno,
 * and hand the descriptor to apply.c.  Also the one-time init that resolves the real
 * functions and reads the policy, which the constructor and every hook may trigger. */
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

#define ST_EXPORT __attribute__((visibility("default")))

struct st_policy st_policy;
_Atomic int st_ready;
int st_enabled;

extern char **environ;

static void die(const char *name, const char *why)
{
	char msg[160];
	int n = snprintf(msg, sizeof msg, "socktune: fatal: %s: %s\n", name, why);
	ssize_t w = write(STDERR_FILENO, msg, n > 0 ? (size_t)n : 0);
	(void)w;
	abort();
}

/* The next definition after ours, libc's.  Getting our own hook back would mean endless
 * recursion (proxychains-ng's load_sym makes the same check). */
static void *load_sym(const char *name, void *ours, int optional)
{
	void *sym = dlsym(RTLD_NEXT, name);
	if (sym == ours)
		die(name, "dlsym(RTLD_NEXT) returned the hook itself");
	if (!sym && !optional)
		die(name, "not found in the libraries after libsocktune");
	return sym;
}

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

static void on_config_error(void *ctx, const char *name, const char *value, const char *msg)
{
	(void)ctx;
	st_log_defer(name, value, msg);
}

static void init_once(void)
{
	/* One pointer store each: a signal handler on this thread sees either the raw
	 * fallback (shim/raw.c) or libc's function, both right.  An optional symbol libc lacks
	 * keeps its fallback. */
#define LOAD(field, name, hook, optional)                                          \
	do {                                                                       \
		void *sym_ = load_sym(name, (void *)(hook), optional);             \
		if (sym_)                                                          \
			st_real.field = (__typeof__(st_real.field))sym_;           \
	} while (0)
	LOAD(socket, "socket", socket, 0);
	LOAD(socketpair, "socketpair", socketpair, 0);
	LOAD(bind, "bind", bind, 0);
	LOAD(listen, "listen", listen, 0);
	LOAD(accept, "accept", accept, 0);
	LOAD(accept4, "accept4", accept4, 0);
	LOAD(close, "close", close, 0);
	LOAD(close_range, "close_range", close_range, 1);
	LOAD(closefrom, "closefrom", closefrom, 1);
	LOAD(dup2, "dup2", dup2, 0);
	LOAD(dup3, "dup3", dup3, 0);
	LOAD(read, "read", read, 0);
	LOAD(readv, "readv", readv, 0);
	LOAD(recv, "recv", recv, 0);
	LOAD(recvfrom, "recvfrom", recvfrom, 0);
	LOAD(recvmsg, "recvmsg", recvmsg, 0);
	LOAD(read_chk, "__read_chk", __read_chk, 1);
	LOAD(recv_chk, "__recv_chk", __recv_chk, 1);
	LOAD(recvfrom_chk, "__recvfrom_chk", __recvfrom_chk, 1);
	LOAD(connect, "connect", connect, 0);
	LOAD(setsockopt, "setsockopt", setsockopt, 0);
	LOAD(getsockopt, "getsockopt", NULL, 0);
	LOAD(execve, "execve", execve, 0);
	LOAD(execveat, "execveat", execveat, 1);
	LOAD(fexecve, "fexecve", fexecve, 0);
	LOAD(execv, "execv", execv, 0);
	LOAD(execvp, "execvp", execvp, 0);
	LOAD(execvpe, "execvpe", execvpe, 0);
#undef LOAD

	/* A setuid or file-capability program: the loader should have dropped LD_PRELOAD; if we
	 * are here all the same, do nothing and trust no variable. */
	if (getauxval(AT_SECURE))
		return;
	st_policy_from_env(&st_policy, environ, on_config_error, NULL);
	if (st_on(&st_policy, ST_V_DISABLE))
		return;
	st_log_init(&st_policy);
	st_pid_init();
	st_enabled = 1;
	st_exec_init();
	st_adopt_inherited();
}

/* Init runs once, on the first thread that gets here.  That thread may re-enter a hook
 * before init is over (a signal handler that calls close(), an allocator that reads a file
 * while dlsym runs): such a call passes straight through to the fallbacks in st_real, where
 * waiting for init would wait for itself.  Other threads wait for init, a bounded time. */
/* Who runs init: its pid and tid in one word, 0 before.  A fork() child of a process whose
 * init was under way finds another pid there: the thread running it does not exist in the
 * child, so the child takes init over (every store init makes is idempotent). */
static _Atomic uint64_t init_owner;
static _Atomic int init_wait_over; /* a wait for another thread's init timed out once */

int st_init(void)
{
	int saved = errno; /* the first hooked call's errno is the app's */
	uint64_t pid = (uint64_t)getpid();
	uint64_t me = pid << 32 | (uint32_t)syscall(SYS_gettid), expect = 0;
	int live = 0, mine = atomic_compare_exchange_strong(&init_owner, &expect, me);
	for (int i = 0; !mine && i < 4 && expect && expect >> 32 != pid; i++)
		mine = atomic_compare_exchange_strong(&init_owner, &expect, me);
	if (mine) {
		init_once();
		atomic_store_explicit(&st_ready, 1, memory_order_release);
		live = st_enabled;
	} else if (expect != me) { /* another thread of ours runs init: wait, a bounded time */
		for (int i = 0; i < 100000 && !atomic_load(&init_wait_over) &&
		                !atomic_load_explicit(&st_ready, memory_order_acquire);
		     i++)
			sched_yield();
		if (atomic_load_explicit(&st_ready, memory_order_acquire))
			live = st_enabled;
		else
			atomic_store(&init_wait_over, 1); /* later calls pass through at once */
	}
	errno = saved;
	return live;
}

__attribute__((constructor)) static void st_constructor(void)
{
	st_init();
}

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
	if (st_live() && fd >= 0)
		st_closing((unsigned)fd, (unsigned)fd); /* keeps errno */
	return st_real.close(fd);
}

ST_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	/* Forget before closing, as close() does: once closed, another thread may get a number
	 * back and mark it.  A call the kernel will refuse changes nothing; CLOSE_RANGE_CLOEXEC
	 * (4) only marks the descriptors, they stay open. */
	if (st_live() && first <= last && !(flags & ~(2 | 4)) && !(flags & 4)) {
		int saved = errno;
		st_closing(first, last);
		errno = saved;
	}
	return st_real.close_range(first, last, flags);
}

/* glibc's closefrom() closes through an internal call the close_range() hook never sees. */
ST_EXPORT void closefrom(int lowfd)
{
	if (st_live() && lowfd >= 0) {
		int saved = errno;
		st_closing((unsigned)lowfd, ~0u);
		errno = saved;
	}
	st_real.closefrom(lowfd);
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
