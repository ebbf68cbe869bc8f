/* Every libc function the library hooks or calls on, listed once.  The real-function table
 * (struct st_real, shim.h), its raw fallbacks (raw.c), the load list (init.c) and the
 * check of the version script (tests/t_symbols.sh reads the X lines below) come from it.
 *
 * X(name, symbol, kind, return type, parameter types)
 *   HOOK      exported under symbol; libc's own found with dlsym(RTLD_NEXT) into st_real.name
 *   OPTIONAL  the same, but libc may lack it (then the raw fallback stays)
 *   REAL      not hooked: only libc's looked up (the library calls it)
 *   LISTED    exported, with no real of its own (the list forms of exec call execve/execvp) */
#ifndef ST_HOOKS_H
#define ST_HOOKS_H

#define ST_HOOKS(X)                                                                            \
	X(socket, socket, HOOK, int, (int, int, int))                                          \
	X(socketpair, socketpair, HOOK, int, (int, int, int, int[2]))                          \
	X(bind, bind, HOOK, int, (int, const struct sockaddr *, socklen_t))                    \
	X(listen, listen, HOOK, int, (int, int))                                               \
	X(connect, connect, HOOK, int, (int, const struct sockaddr *, socklen_t))              \
	X(setsockopt, setsockopt, HOOK, int, (int, int, int, const void *, socklen_t))         \
	X(getsockopt, getsockopt, REAL, int, (int, int, int, void *, socklen_t *))             \
	X(accept, accept, HOOK, int, (int, struct sockaddr *, socklen_t *))                    \
	X(accept4, accept4, HOOK, int, (int, struct sockaddr *, socklen_t *, int))             \
	X(close, close, HOOK, int, (int))                                                      \
	X(close_range, close_range, OPTIONAL, int, (unsigned, unsigned, int))                  \
	X(closefrom, closefrom, OPTIONAL, void, (int))                                         \
	X(dup2, dup2, HOOK, int, (int, int))                                                   \
	X(dup3, dup3, HOOK, int, (int, int, int))                                              \
	X(read, read, HOOK, ssize_t, (int, void *, size_t))                                    \
	X(readv, readv, HOOK, ssize_t, (int, const struct iovec *, int))                       \
	X(recv, recv, HOOK, ssize_t, (int, void *, size_t, int))                               \
	X(recvfrom, recvfrom, HOOK, ssize_t,                                                   \
	  (int, void *, size_t, int, struct sockaddr *, socklen_t *))                          \
	X(recvmsg, recvmsg, HOOK, ssize_t, (int, struct msghdr *, int))                        \
	X(read_chk, __read_chk, OPTIONAL, ssize_t, (int, void *, size_t, size_t))              \
	X(recv_chk, __recv_chk, OPTIONAL, ssize_t, (int, void *, size_t, size_t, int))         \
	X(recvfrom_chk, __recvfrom_chk, OPTIONAL, ssize_t,                                     \
	  (int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *))                  \
	X(execve, execve, HOOK, int, (const char *, char *const[], char *const[]))             \
	X(execveat, execveat, OPTIONAL, int, (int, const char *, char *const[], char *const[], int)) \
	X(fexecve, fexecve, HOOK, int, (int, char *const[], char *const[]))                    \
	X(execv, execv, HOOK, int, (const char *, char *const[]))                              \
	X(execvp, execvp, HOOK, int, (const char *, char *const[]))                            \
	X(execvpe, execvpe, HOOK, int, (const char *, char *const[], char *const[]))           \
	X(execl, execl, LISTED, int, (const char *, const char *, ...))                        \
	X(execlp, execlp, LISTED, int, (const char *, const char *, ...))                      \
	X(execle, execle, LISTED, int, (const char *, const char *, ...))

/* Which kinds have a real function: ST_IF_REAL_<kind>(x) is x for those, nothing else. */
#define ST_IF_REAL_HOOK(...) __VA_ARGS__
#define ST_IF_REAL_OPTIONAL(...) __VA_ARGS__
#define ST_IF_REAL_REAL(...) __VA_ARGS__
#define ST_IF_REAL_LISTED(...)
#define ST_IF_REAL(kind, ...) ST_IF_REAL_##kind(__VA_ARGS__)
#define ST_OPTIONAL_HOOK 0
#define ST_OPTIONAL_OPTIONAL 1
#define ST_OPTIONAL_REAL 0

#define ST_EXPORT __attribute__((visibility("default")))

#endif
