/* Internal interfaces of libsocktune: the real libc functions, the per-fd table, logging
 * and the apply step.  Nothing here is exported from the shared object. */
#ifndef ST_SHIM_H
#define ST_SHIM_H

#include <stdarg.h>
#include <stdatomic.h>
#include <spawn.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "socktune.h"
#include "socktune_host.h"
#include "hooks.h"
#include "socktune_apply.h"
#include "socktune_kernel.h"
#include "socktune_opts.h"

/* Everything declared below is the library's own (hidden, as -fvisibility=hidden makes its
 * definitions): said here too, so that the hooks read st_ready, st_real and the descriptor
 * table directly instead of through the GOT (one instruction less per hooked call). */
#pragma GCC visibility push(hidden)

/* ---- the real functions: raw system calls until init.c resolves libc's once, with
 * dlsym(RTLD_NEXT) (shim/raw.c); never NULL.  One field per row of ST_HOOKS (hooks.h). ---- */
#define ST_REAL_FIELD(name, symbol, kind, ret, params) ST_IF_REAL(kind, ret(*name) params;)
struct st_real {
	ST_HOOKS(ST_REAL_FIELD)
};
#undef ST_REAL_FIELD

extern struct st_real st_real;
extern struct st_policy st_policy;

/* st_ready: 1 once init ran.  st_enabled: the policy is live (0 with SOCKTUNE_DISABLE or in
 * secure-execution mode, where every hook passes straight through). */
extern _Atomic int st_ready;
extern int st_enabled;
/* Runs init once; returns whether the policy is live for this call (0 on the thread that
 * runs init when it re-enters a hook). */
int st_init(void);

static inline int st_live(void)
{
	if (__builtin_expect(!atomic_load_explicit(&st_ready, memory_order_acquire), 0))
		return st_init();
	return st_enabled;
}

/* ---- per-fd table (fdtable.c): one 64-bit word per descriptor, lock-free ---- */
enum st_kind {
	ST_FD_UNKNOWN = 0, /* never seen: accept() classifies it once */
	ST_FD_IGNORED,     /* seen, not governed: every hook passes it straight through */
	ST_FD_TCP,         /* an in-scope TCP socket made through socket(), not listening yet */
	ST_FD_LISTENER,    /* a tuned listener; the high bits index its record */
	ST_FD_CONN,        /* a connection accepted from a tuned listener */
	ST_FD_CLIENT,      /* a tuned outgoing connection (SOCKTUNE_CLIENT) */
	ST_FD_ADOPTING,    /* a listener being adopted by another thread right now */
	ST_FD_CLOSING,     /* a listener being closed by another thread right now (close(),
	                    * close_range(), closefrom(), dup2() onto it): until the real call
	                    * returns the number still names it, and accept() adopts nothing */
};
#define ST_FD_KIND_MASK 0xfull  /* bits 0..3 */
#define ST_FD_QUICKACK 0x10ull  /* bit 4: re-arm TCP_QUICKACK after every receive */
#define ST_FD_APP_SHIFT 5       /* bits 5..51: the options the app set itself, one bit per
                                 * option an app can set (st_app_index): room for 47 */
#define ST_FD_REC_SHIFT 52      /* bits 52..63: listener record + 1 */
#define ST_FD_KIND(e) ((unsigned)((e) & ST_FD_KIND_MASK))
_Static_assert(((ST_FD_KIND_MASK | ST_FD_QUICKACK) >> ST_FD_APP_SHIFT) == 0,
               "the kind and the quick-ack bit below the app's bits");
_Static_assert(ST_A_COUNT <= ST_FD_REC_SHIFT - ST_FD_APP_SHIFT,
               "one bit in a descriptor's entry per option an app can set");

/* The options the app set itself, in a descriptor's entry. */
#define APP_BITS (((1ull << ST_A_COUNT) - 1) << ST_FD_APP_SHIFT)
/* Option i's bit there (0 for an option no app can set: no call of the app's touches it). */
static inline uint64_t st_app_bit(int i)
{
	int a = st_app_index[i];
	return a < 0 ? 0 : 1ull << (ST_FD_APP_SHIFT + a);
}
/* The options the app set itself by entry e, as a set of options (bit 1 << option). */
static inline uint64_t st_app_options(uint64_t e)
{
	uint64_t mine = 0;
	for (uint64_t b = (e & APP_BITS) >> ST_FD_APP_SHIFT; b; b &= b - 1) /* (mostly none) */
		mine |= 1ull << st_app_option[__builtin_ctzll(b)];
	return mine;
}

struct st_fdmap {
	unsigned size;         /* entries, fixed when the map is made */
	_Atomic unsigned high; /* one past the highest descriptor ever marked */
	_Atomic uint64_t ent[];
};
extern _Atomic(struct st_fdmap *) st_fdmap;

/* The entry for fd, or 0 when there is no table yet or fd is beyond it. */
static inline uint64_t st_fd_get(int fd)
{
	struct st_fdmap *m = atomic_load_explicit(&st_fdmap, memory_order_acquire);
	if (!m || fd < 0 || (unsigned)fd >= m->size)
		return 0;
	return atomic_load_explicit(&m->ent[fd], memory_order_acquire); /* pairs with st_fd_set */
}

/* Set fd's entry, making the table on first use.  Descriptors beyond it stay untracked.
 * Release order: whatever was written before (a listener's record) is seen with the entry. */
void st_fd_set(int fd, uint64_t v);
/* Replace fd's entry only if it still is *expect; returns 1 on success. */
int st_fd_cas(int fd, uint64_t *expect, uint64_t v);
/* Swap fd's entry for v (no table made; 0 when there is none), returning the old one: the
 * one way an entry that holds a listener record is removed, so exactly one caller gets the
 * record to free. */
uint64_t st_fd_xchg(int fd, uint64_t v);
/* fn(fd, its fstat, whether it listens (SO_ACCEPTCONN), ctx) for each open descriptor that
 * is a socket: one pass over /proc/self/fd (raw syscalls, a small buffer: it runs inside
 * hooks).  0 when every descriptor was looked at; 1 when the pass stopped after
 * ST_SCAN_MAX entries (some were not); -1 without /proc. */
#define ST_SCAN_MAX 65536
struct stat;
int st_each_socket_fd(void (*fn)(int fd, const struct stat *st, int listening, void *ctx),
                      void *ctx);
/* Whether fd has a place in the table (made on first use). */
int st_fd_fits(int fd);

/* Numbers the hooks saw made as sockets the policy never governs (socket(AF_UNIX), UDP,
 * socketpair(), a UNIX listener's connections), one bit each for the first ST_OTHER_MAX
 * descriptors, kept in the library's own memory: a process of UNIX sockets makes no table,
 * and its listen() and accept() must not ask the kernel what the library saw made.  A bit
 * goes when a hook sees its number closed or replaced; like an entry of the table, it
 * outlives a close no hook sees (fclose(fdopen()), a raw syscall), and a number reused by
 * a call no hook sees (dup(), fcntl(F_DUPFD)) may name a TCP socket under a stale bit: so a
 * bit is trusted only while the process has no table (no TCP socket of the policy's yet).
 * Once one exists, a socket of unknown kind costs one getsockopt at its listen() again, and
 * a listener is never left untuned on a stale bit. */
#define ST_OTHER_MAX 65536
extern _Atomic uint64_t st_other_bits[ST_OTHER_MAX / 64];
static inline int st_fd_other(int fd)
{
	return fd >= 0 && fd < ST_OTHER_MAX &&
	       !atomic_load_explicit(&st_fdmap, memory_order_acquire) &&
	       (atomic_load_explicit(&st_other_bits[fd / 64], memory_order_relaxed) >> (fd % 64) & 1);
}
/* Mark fd as such a socket (other = 1) or forget it (0). */
void st_fd_set_other(int fd, int other);
/* Forget [first, last] (a close, close_range(), closefrom()). */
void st_fd_forget_others(unsigned first, unsigned last);
/* Entries another thread holds for a moment (ST_FD_ADOPTING: an adoption at accept(), a
 * listen() tuning; ST_FD_CLOSING: a listener's close), counted from before the entry is
 * taken until it is let go.  A fork() child made meanwhile has no thread to let them go:
 * st_fd_forked() (its atfork handler) makes them unknown again, so its copy of such a
 * listener is adopted at its first accept instead of waited for at every one. */
extern _Atomic int st_fd_held;
void st_fd_forked(void);
/* Wait a bounded time while fd's entry e is another thread's for a moment (ST_FD_ADOPTING,
 * ST_FD_CLOSING); returns the entry then. */
uint64_t st_fd_settled(int fd, uint64_t e);

/* ---- listeners (apply.c) ---- */
#define ST_MAX_LISTENERS 1024

/* After socket() made fd: remember whether it is a TCP socket the policy may govern. */
void st_socket_made(int fd, int domain, int type, int protocol);
/* The listen() hook's body: apply the policy, call the real listen(), read back, log. */
int st_listen(int fd, int backlog);
/* The bind(), connect() and setsockopt() hooks' bodies. */
int st_bind(int fd, const struct sockaddr *addr, socklen_t len);
int st_connect(int fd, const struct sockaddr *addr, socklen_t len);
int st_setsockopt(int fd, int level, int optname, const void *val, socklen_t len);
/* At init: tune the TCP listeners inherited at exec. */
void st_adopt_inherited(void);
/* After a successful accept()/accept4() on lfd returned cfd. */
void st_accepted(int lfd, int cfd);
/* After a receive call returned data on a connection marked for quick-ack. */
void st_rearm_quickack(int fd);
/* Remember our pid, and a fork child's, to tell a vfork child (which shares our memory). */
void st_pid_init(void);
/* Whether this is a vfork() child running in our memory (a getpid(), and kcmp when the
 * pid is not ours): for the rare paths that must leave the parent's state alone. */
int st_in_vfork_child(void);
/* Set once a recvmsg() brought a TCP socket that is not a connection (a listener, one not
 * listening yet): descriptors exist that no socket() hook saw. */
extern _Atomic int st_fds_received;
/* After recvmsg() returned ancillary data: each descriptor it carried (SCM_RIGHTS) is
 * classified; a TCP connection is governed like one accepted here. */
void st_received(struct msghdr *msg);
/* After dup2()/dup3() made newfd a copy of oldfd. */
void st_duped(int oldfd, int newfd);
/* Before the real close(), close_range() or closefrom(); errno is kept.  Nonzero when the
 * entry of a listener in [first, last] reads ST_FD_CLOSING until the real call: then
 * st_closed(first, last) after it, which makes those entries unknown. */
int st_closing(unsigned first, unsigned last);
void st_closed(unsigned first, unsigned last);

static inline void st_after_receive(int fd, ssize_t r)
{
	if (r > 0 && (st_fd_get(fd) & ST_FD_QUICKACK))
		st_rearm_quickack(fd);
}

/* ---- exec (exec.c): say so when a program is exec'd in a way that loses the library ---- */
/* At init, when the policy is live: the library's own path, and the memory of programs
 * already reported, shared with fork() children. */
void st_exec_init(void);
/* Before an exec of file (relative to dirfd, or looked up in PATH when search is set, as
 * execvp does) with envp: one warning per program that will run without the policy.
 * resetids: POSIX_SPAWN_RESETIDS (the child drops to the real ids first).  Keeps errno. */
void st_exec_check(const char *call, int dirfd, const char *file, int flags, int search,
                   char *const envp[], int resetids);

/* ---- live counters (stats.c), only with SOCKTUNE_STATS ---- */
struct st_stats_file;
extern struct st_stats_file *st_stats;
/* The stats file, made on first use; NULL without SOCKTUNE_STATS. */
struct st_stats_file *st_stats_file(void);
/* A slot for a newly tuned listener, or -1 (no stats, or the file is full). */
int st_stats_listener(int fd, int family, unsigned port, const char *addr, int adopted,
                      int rcvbuf, int sndbuf);
/* Sample the accept queue of slot's listener, at most every 100 ms unless forced. */
void st_stats_sample(int slot, int lfd, int force);
/* slot's listener accepted a connection: counted, and sampled at most every 100 ms. */
void st_stats_accepted(int slot, int lfd);
/* slot's listener was closed: the slot goes back to the pool (see stats.c for who may). */
void st_stats_listener_closed(int slot);

/* ---- logging (log.c) ---- */
extern int st_log_level;
void st_log_init(const struct st_policy *p);
void st_log_line(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same from a vfork() child, which runs in our memory: the log's state is left as the
 * parent has it (the line may go to a file opened and closed for it alone). */
void st_log_line_borrowed(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The level test inline, so a debug line on the accept path costs a compare at info. */
#define st_log(level, ...) \
	((level) <= st_log_level ? st_log_line((level), __VA_ARGS__) : (void)0)
/* Remember a configuration error now; it is logged with the first governed socket, so a
 * process that never makes one stays silent. */
void st_log_defer(const char *name, const char *value, const char *msg);
void st_log_flush_deferred(void);
/* The log's own descriptor (-1: none), so that close() of it by the app is noticed. */
extern _Atomic int st_log_fd;
void st_log_fd_closed(unsigned first, unsigned last);
/* Copy s into out (n bytes) with quotes, backslashes, control characters and bytes that
 * are not UTF-8 (overlongs, surrogates included) replaced by '?', so that it stays inside
 * one logfmt value; a valid character is never cut.  in and out may be the same buffer. */
void st_sanitize(const char *s, char *out, size_t n);

/* s as one logfmt value into out (n bytes): quoted, its quotes and backslashes escaped
 * (\" and \\), control characters and bytes that are not UTF-8 as '?'; a value that does
 * not fit is cut (at most (n - 3) / 2 bytes of s are kept, never half a character). */
void st_quote(const char *s, char *out, size_t n);
/* The same for s's first len bytes. */
void st_quote_n(const char *s, size_t len, char *out, size_t n);
/* A fix as every output of socktune writes it (socktune(1), OUTPUT): its command, the part
 * that runs as printed, as the list fix (" fix.0=\"sysctl -w ...\""), and its prose as note
 * (" note=\"or add --rcvbuf-force ...\""); a fix that is prose alone is a note alone.  Into
 * out (n bytes: 2 * ST_FIX_MAX + 24 holds any), "" for an empty fix. */
#define ST_FIX_MAX 320
void st_fix_keys(const char *fix, char *out, size_t n);

/* A small line builder: logfmt key=value pairs appended to one buffer. */
struct st_line {
	char b[1024];
	size_t n;
};
void st_line_add(struct st_line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What became of option i, its keys appended (st_outcome_keys: the walk every output of an
 * outcome takes) */
void st_line_outcome(struct st_line *l, int i, const struct st_outcome *o, const char *name);

#pragma GCC visibility pop

#endif
