/* The exec family, hooked so that a program exec'd in a way that loses the library (an
 * environment without LD_PRELOAD, an exec the loader runs in secure mode) is named once
 * (exec.c).  Each hook checks, then calls libc's function: result and errno are libc's.
 * glibc's execvp() and execl*() reach the kernel through its internal __execve, never
 * through our execve(): every public entry point has its own hook. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <unistd.h>

#include "shim.h"


extern char **environ;

ST_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                       int flags);
ST_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]);

ST_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	if (st_live())
		st_exec_check("execve", AT_FDCWD, path, 0, 0, envp, 0);
	return st_real.execve(path, argv, envp);
}

ST_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                       int flags)
{
	if (st_live())
		st_exec_check("execveat", dirfd, path, flags, 0, envp, 0);
	return st_real.execveat(dirfd, path, argv, envp, flags);
}

ST_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (st_live())
		st_exec_check("fexecve", fd, "", AT_EMPTY_PATH, 0, envp, 0);
	return st_real.fexecve(fd, argv, envp);
}

ST_EXPORT int execv(const char *path, char *const argv[])
{
	if (st_live())
		st_exec_check("execv", AT_FDCWD, path, 0, 0, environ, 0);
	return st_real.execv(path, argv);
}

ST_EXPORT int execvp(const char *file, char *const argv[])
{
	if (st_live())
		st_exec_check("execvp", AT_FDCWD, file, 0, 1, environ, 0);
	return st_real.execvp(file, argv);
}

ST_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (st_live())
		st_exec_check("execvpe", AT_FDCWD, file, 0, 1, envp, 0);
	return st_real.execvpe(file, argv, envp);
}

/* The list forms have no va_list variant in libc: the arguments are gathered into an
 * array here and handed to the vector form glibc's own execl*() end in (execl and execle:
 * execve with environ or the given envp; execlp: execvp).  The array is a VLA of argc + 1
 * on the stack, as in glibc's execl(), whose frame this one replaces: the call uses the
 * stack it uses without the library, allocates nothing (a vfork() child must not map
 * memory it cannot unmap after a successful exec) and fails as glibc does (E2BIG). */
#define COUNT_ARGS(arg, argc)                                                  \
	do {                                                                   \
		va_list ap_;                                                   \
		va_start(ap_, arg);                                            \
		for ((argc) = 1; (argc) < INT_MAX && va_arg(ap_, char *); (argc)++) \
			;                                                      \
		va_end(ap_);                                                   \
	} while (0)

/* Declares char *argv[] holding arg and the arguments after it, up to and with the NULL;
 * with_envp: also char **envp, the argument after the NULL (execle's).  More arguments than
 * an int counts: -1 with E2BIG from the enclosing function, as glibc's. */
#define GATHER_ARGV(arg, with_envp)                                            \
	long argc_;                                                            \
	COUNT_ARGS(arg, argc_);                                                \
	if (argc_ >= INT_MAX) {                                                \
		errno = E2BIG;                                                 \
		return -1;                                                     \
	}                                                                      \
	char *argv[argc_ + 1];                                                 \
	char **envp = environ;                                                 \
	do {                                                                   \
		va_list ap_;                                                   \
		va_start(ap_, arg);                                            \
		argv[0] = (char *)(arg);                                       \
		for (long i_ = 1; i_ <= argc_; i_++)                           \
			argv[i_] = va_arg(ap_, char *);                        \
		if (with_envp)                                                 \
			envp = va_arg(ap_, char **);                           \
		va_end(ap_);                                                   \
	} while (0)

ST_EXPORT int execl(const char *path, const char *arg, ...)
{
	GATHER_ARGV(arg, 0);
	if (st_live())
		st_exec_check("execl", AT_FDCWD, path, 0, 0, envp, 0);
	return st_real.execve(path, argv, envp);
}

ST_EXPORT int execlp(const char *file, const char *arg, ...)
{
	GATHER_ARGV(arg, 0);
	if (st_live())
		st_exec_check("execlp", AT_FDCWD, file, 0, 1, envp, 0);
	return st_real.execvp(file, argv);
}

ST_EXPORT int execle(const char *path, const char *arg, ...)
{
	GATHER_ARGV(arg, 1);
	if (st_live())
		st_exec_check("execle", AT_FDCWD, path, 0, 0, envp, 0);
	return st_real.execve(path, argv, envp);
}

/* posix_spawn() and posix_spawnp() are not hooked: glibc exports each under two symbol
 * versions (GLIBC_2.2.5, which retries an ENOEXEC file through /bin/sh, and GLIBC_2.15),
 * and an unversioned hook would capture a program linked to the old one and hand it the
 * new behaviour.  A child they start without the library goes unwarned (docs/design.md). */
