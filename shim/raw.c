/* The real-function table, filled before init with raw system calls.  Until init has
 * resolved libc's functions with dlsym (and on a thread that re-enters a hook while init
 * runs: a signal handler, an allocator that reads a file), every hook passes its call
 * through one of these, so a hook never has to wait for init or test for NULL.  Each does
 * what the libc function does for a socket; errno is set by syscall(). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

static int raw_socket(int d, int t, int p) { return (int)syscall(SYS_socket, d, t, p); }
static int raw_socketpair(int d, int t, int p, int sv[2])
{
	return (int)syscall(SYS_socketpair, d, t, p, sv);
}
static int raw_bind(int fd, const struct sockaddr *a, socklen_t l)
{
	return (int)syscall(SYS_bind, fd, a, l);
}
static int raw_listen(int fd, int n) { return (int)syscall(SYS_listen, fd, n); }
static int raw_accept4(int fd, struct sockaddr *a, socklen_t *l, int f)
{
	return (int)syscall(SYS_accept4, fd, a, l, f);
}
static int raw_accept(int fd, struct sockaddr *a, socklen_t *l) { return raw_accept4(fd, a, l, 0); }
static int raw_close(int fd) { return (int)syscall(SYS_close, fd); }
static int raw_close_range(unsigned first, unsigned last, int flags)
{
	return (int)syscall(SYS_close_range, first, last, flags);
}
static void raw_closefrom(int lowfd)
{
	int saved = errno;
	syscall(SYS_close_range, (unsigned)lowfd, ~0u, 0);
	errno = saved;
}
static int raw_dup3(int o, int n, int f) { return (int)syscall(SYS_dup3, o, n, f); }
static int raw_dup2(int o, int n)
{
	if (o == n) /* dup3 refuses equal numbers; dup2 checks oldfd and returns it */
		return fcntl(o, F_GETFD) < 0 ? -1 : n;
	return raw_dup3(o, n, 0);
}
static ssize_t raw_read(int fd, void *b, size_t n) { return syscall(SYS_read, fd, b, n); }
static ssize_t raw_readv(int fd, const struct iovec *v, int c) { return syscall(SYS_readv, fd, v, c); }
static ssize_t raw_recvfrom(int fd, void *b, size_t n, int f, struct sockaddr *a, socklen_t *l)
{
	return syscall(SYS_recvfrom, fd, b, n, f, a, l);
}
static ssize_t raw_recv(int fd, void *b, size_t n, int f) { return raw_recvfrom(fd, b, n, f, NULL, NULL); }
static ssize_t raw_recvmsg(int fd, struct msghdr *m, int f) { return syscall(SYS_recvmsg, fd, m, f); }
/* The _chk variants: what glibc's would do before the call (the buffer check). */
static ssize_t raw_read_chk(int fd, void *b, size_t n, size_t len)
{
	if (n > len)
		abort();
	return raw_read(fd, b, n);
}
static ssize_t raw_recv_chk(int fd, void *b, size_t n, size_t len, int f)
{
	if (n > len)
		abort();
	return raw_recv(fd, b, n, f);
}
static ssize_t raw_recvfrom_chk(int fd, void *b, size_t n, size_t len, int f, struct sockaddr *a,
                                socklen_t *l)
{
	if (n > len)
		abort();
	return raw_recvfrom(fd, b, n, f, a, l);
}
static int raw_connect(int fd, const struct sockaddr *a, socklen_t l)
{
	return (int)syscall(SYS_connect, fd, a, l);
}
static int raw_setsockopt(int fd, int lv, int o, const void *v, socklen_t l)
{
	return (int)syscall(SYS_setsockopt, fd, lv, o, v, l);
}
static int raw_getsockopt(int fd, int lv, int o, void *v, socklen_t *l)
{
	return (int)syscall(SYS_getsockopt, fd, lv, o, v, l);
}

static int raw_execve(const char *path, char *const argv[], char *const envp[])
{
	return (int)syscall(SYS_execve, path, argv, envp);
}
static int raw_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int f)
{
	return (int)syscall(SYS_execveat, dirfd, path, argv, envp, f);
}
static int raw_fexecve(int fd, char *const argv[], char *const envp[])
{
	return raw_execveat(fd, "", argv, envp, AT_EMPTY_PATH);
}
extern char **environ;
static int raw_execv(const char *path, char *const argv[]) { return raw_execve(path, argv, environ); }
/* The PATH search is libc's own work: their fallbacks look libc's up at
 * their first call (an exec from a signal handler that lands while init runs). */
static void *next_sym(const char *name)
{
	void *sym = dlsym(RTLD_NEXT, name);
	if (!sym)
		errno = ENOSYS;
	return sym;
}
static int raw_execvp(const char *file, char *const argv[])
{
	int (*f)(const char *, char *const[]) = next_sym("execvp");
	return f ? f(file, argv) : -1;
}
static int raw_execvpe(const char *file, char *const argv[], char *const envp[])
{
	int (*f)(const char *, char *const[], char *const[]) = next_sym("execvpe");
	return f ? f(file, argv, envp) : -1;
}
/* What every part of the library reads, filled once by init (init.c): the policy, and
 * whether it is live (shim.h). */
struct st_policy st_policy;
_Atomic int st_ready;
int st_enabled;

/* the fallback of each real function is raw_<name> */
#define ST_RAW(name, symbol, kind, ret, params) ST_IF_REAL(kind, .name = raw_##name,)
struct st_real st_real = {ST_HOOKS(ST_RAW)};
#undef ST_RAW
