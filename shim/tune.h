/* What the library's tuning files share (listen.c, accept.c, receive.c, client.c,
 * precedence.c, lifecycle.c, records.c, sock.c, tune.c): the listener records, the
 * socket helpers, and the apply step as the library runs it.  Not used by the hooks. */
#ifndef ST_TUNE_H
#define ST_TUNE_H

#include <stdatomic.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <sys/socket.h>

#include "shim.h"

_Static_assert(ST_MAX_LISTENERS < (1 << (64 - ST_FD_REC_SHIFT)), "record numbers fit the entry");

/* ---- listener records (records.c) ---- */

struct st_listener {
	_Atomic int used;
	_Atomic int refs;        /* entries that name it: a listener and its copies (dup()) */
	_Atomic int checked;     /* 0: no connection accepted yet, 1: being checked, 2: checked */
	_Atomic uint64_t percon; /* options applied per accepted connection (bit 1 << option) */
	_Atomic int queued;      /* adopted: connections that were queued before the tuning */
	int family;
	int fd;             /* the number it was tuned under, and the socket's inode: a record */
	_Atomic unsigned long ino; /* whose number now names something else is reclaimed when
	                            * full; a copy of the listener finds its record by it (0
	                            * until the record is complete, and once it is free) */
	_Atomic int stats_slot; /* SOCKTUNE_STATS slot, or -1; STATS_LATER, STATS_CLAIMING */
	int eff[ST_O_COUNT]; /* what the kernel reports on the listener, ST_UNREAD if not applied */
};
#define STATS_LATER (-2)
#define STATS_CLAIMING (-3)

extern struct st_listener st_listeners[ST_MAX_LISTENERS];

static inline struct st_listener *st_record_of(uint64_t e)
{
	return ST_FD_KIND(e) == ST_FD_LISTENER && (e >> ST_FD_REC_SHIFT)
	               ? &st_listeners[(e >> ST_FD_REC_SHIFT) - 1] : NULL;
}

static inline uint64_t st_listener_entry(unsigned index)
{
	return ST_FD_LISTENER | ((uint64_t)(index + 1) << ST_FD_REC_SHIFT);
}

/* Each entry that names a record holds one reference; the last one released closes the
 * listener's stats slot and frees the record (a copy closed alone leaves both). */
void st_release_record(uint64_t e);
/* A free record (reclaiming those whose listener was closed unseen when all are taken). */
struct st_listener *st_listener_alloc(unsigned *index);
/* A copy of a tuned listener: fd (entry still expect) joins the record of the socket with
 * inode ino.  The new entry, 0 when no tuned listener has it, or SHARE_LOST when fd's
 * entry changed meanwhile (then nothing is to be done for fd at all). */
#define SHARE_LOST (~0ull)
uint64_t st_share_listener(int fd, uint64_t expect, unsigned long ino);
/* A new socket under a number whose old entry was never cleared (closed by a path the
 * hooks do not see: fclose(), closefrom() inside libc, a raw syscall): the new entry first,
 * then the old listener's record back to the pool.  (Inline: it runs on every accept.) */
static inline void st_replace_entry(int fd, uint64_t v)
{
	uint64_t old = st_fd_get(fd);
	if (old == v)
		return;
	if (!st_record_of(old))
		st_fd_set(fd, v); /* (makes the table when there is none: then nothing was there) */
	else
		st_release_record(st_fd_xchg(fd, v)); /* exactly one caller frees a record */
}
/* Whether fd, whose entry is e, is a TCP socket still (else the entry is dropped). */
int st_still_tcp(int fd, uint64_t e);

/* The scan of inherited descriptors at start looked at every descriptor (listen.c).  Then,
 * while there is no descriptor table, the process has made no TCP socket through socket(),
 * inherited no TCP socket (listening or not) and listened on none (listen() classifies a
 * socket of unknown kind, and a TCP one gets an entry, which makes the table): accept() on a
 * descriptor of unknown kind is none of ours, and a server of UNIX sockets pays nothing
 * per accept (no getsockopt, no table); unless descriptors were received.  What this cannot
 * see: a listener made and listened by raw system calls (or io_uring) alone. */
extern int st_inherited_scanned;
static inline int st_none_of_ours(uint64_t e)
{
	return ST_FD_KIND(e) == ST_FD_UNKNOWN &&
	       !atomic_load_explicit(&st_fdmap, memory_order_acquire) && st_inherited_scanned &&
	       !atomic_load_explicit(&st_fds_received, memory_order_relaxed);
}

/* ---- socket helpers (sock.c): each a syscall and a message ---- */

struct st_err {
	char msg[160];
};
/* The real setsockopt/getsockopt as the apply step reaches them (a refusal counted). */
extern const struct st_sockops st_ops;

static inline void st_count(_Atomic uint64_t *counter)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}
int st_set_int(struct st_err *e, int fd, int level, int opt, const char *label, int val);
int st_get_int(int fd, int level, int opt, int *val);
int st_get_name(int fd, int level, int optname, char *buf, socklen_t n);
int st_format_addr(const struct sockaddr *sa, char *out, size_t n, unsigned *port);
/* The caller's address, copied without trusting the pointer: 0 when *out holds an
 * AF_INET or AF_INET6 address of the right length. */
int st_copy_addr(const struct sockaddr *sa, socklen_t len, struct sockaddr_storage *out);
/* fd's local address as text, its port; returns its family. */
int st_local_addr(int fd, char *out, size_t n, unsigned *port);
int st_in_scope(int domain, int type, int protocol);
/* A socket the hooks did not see being made: whether it is a TCP socket. */
int st_is_tcp_socket(int fd);
/* One getsockopt: SO_PROTOCOL is TCP (or MPTCP). */
int st_is_tcp_proto(int fd);
/* Its TCP state (TCP_CLOSE, TCP_LISTEN, ...) from TCP_INFO; -1 when it has none. */
int st_tcp_state(int fd);
unsigned long st_socket_ino(int fd);
#define ST_ADDR_MAX (INET6_ADDRSTRLEN + 10)

static inline int st_dry_run(void)
{
	return st_on(&st_policy, ST_V_DRY_RUN);
}

static inline int st_app_wins(void)
{
	return st_has(&st_policy, ST_V_PRECEDENCE) &&
	       st_policy.num[ST_V_PRECEDENCE] == ST_PRECEDENCE_APP;
}

/* ---- the apply step as the library runs it (tune.c) ---- */

/* Apply every option the policy sets that suits this kind of socket (need: flags an option
 * must have, 0 any; skip: flags it must not), explain every refusal and clamp in the log,
 * and add the options' keys to line.  app: fd's entry, whose app bits say what the app set
 * itself (precedence=app keeps those).  eff[ST_O_COUNT]: what the kernel reports. */
void st_tune(int fd, int family, unsigned kind, unsigned need, unsigned skip, uint64_t app,
             struct st_line *line, int *eff);

/* Whether the policy sets any option with one of these flags. */
int st_policy_sets(unsigned flags);

/* Before bind(): the options that only count when set before it, each set unless it has the
 * policy's value already; undo says what was there, to put back when bind() fails. */
struct st_bind_undo {
	uint64_t changed; /* (bit 1 << option) */
	int old[ST_O_COUNT];
	char old_name[ST_NAME_MAX]; /* the one name option among them (SO_BINDTODEVICE) */
};
void st_tune_bind(int fd, int family, uint64_t app, struct st_bind_undo *undo);
void st_untune_bind(int fd, int family, const struct st_bind_undo *undo);
/* The keys of a listen line for what bind() set ("reuseport=1"), read back. */
void st_line_before_bind(int fd, int family, struct st_line *line);

/* ---- precedence (precedence.c) ---- */

/* Before the policy overwrites what the app set on a socket not yet tuned: say what. */
void st_note_override_before(int fd, int family, unsigned kind, int i);

/* ---- listeners (listen.c) ---- */

enum { TUNED, SKIPPED, FAILED };
/* tune_listener's adopting: 0 listen(), 1 first accept, 2 start, 3 the app's listen() on a
 * socket that listens already but has no record (inherited with no scan at start) */
enum { ADOPT_AT_FIRST_ACCEPT = 1, ADOPT_AT_START = 2, RELISTEN_UNTRACKED = 3 };
int st_tune_listener(int fd, int app_backlog, int adopting, int *result);

#endif
