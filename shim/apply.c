/* What is applied, separate from where it is hooked: set the policy's options on a
 * listener (or an outgoing connection), read back what the kernel made of them, explain
 * every clamp, and do the little that must be done per accepted connection. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim.h"
#include "socktune_stats.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

/* ---- the options the policy governs ---- */

enum opt_id {
	O_RCVBUF, O_SNDBUF, O_NODELAY, O_KEEPALIVE, O_KEEPIDLE, O_KEEPINTVL, O_KEEPCNT,
	O_USER_TIMEOUT, O_CONGESTION, O_NOTSENT_LOWAT, O_TOS, O_PRIORITY, O_MARK,
	O_DEFER_ACCEPT, O_FASTOPEN, O_REUSEPORT, O_COUNT
};

enum opt_flags {
	F_BUFFER = 1,        /* the kernel reports twice the request, clamped by a sysctl */
	F_LISTENER_ONLY = 2, /* meaningful on listeners only: not checked on accepted sockets */
	F_NOT_INHERITED = 4, /* not copied to accepted sockets: set on each one */
	F_BEFORE_BIND = 8,   /* set in bind(), before the real one */
	F_STRING = 16,       /* TCP_CONGESTION takes a name */
	F_CLIENT = 32,       /* applied to outgoing connections too (SOCKTUNE_CLIENT) */
};

struct st_opt {
	const char *name;  /* log key */
	const char *label; /* for messages */
	int level, optname;
	unsigned flags;
	const char *limit; /* the sysctl that clamps a buffer */
};

/* Copied from the listener by the kernel (sk_clone, Linux 6.x): everything here but
 * SO_PRIORITY and the listener-only ones; the first accepted connection proves it. */
static const struct st_opt opts[O_COUNT] = {
	[O_RCVBUF] = {"rcvbuf", "SO_RCVBUF", SOL_SOCKET, SO_RCVBUF, F_BUFFER | F_CLIENT,
	              "net.core.rmem_max"},
	[O_SNDBUF] = {"sndbuf", "SO_SNDBUF", SOL_SOCKET, SO_SNDBUF, F_BUFFER | F_CLIENT,
	              "net.core.wmem_max"},
	[O_NODELAY] = {"nodelay", "TCP_NODELAY", IPPROTO_TCP, TCP_NODELAY, F_CLIENT, NULL},
	[O_KEEPALIVE] = {"keepalive", "SO_KEEPALIVE", SOL_SOCKET, SO_KEEPALIVE, F_CLIENT, NULL},
	[O_KEEPIDLE] = {"keepalive.idle", "TCP_KEEPIDLE", IPPROTO_TCP, TCP_KEEPIDLE, F_CLIENT, NULL},
	[O_KEEPINTVL] = {"keepalive.intvl", "TCP_KEEPINTVL", IPPROTO_TCP, TCP_KEEPINTVL, F_CLIENT,
	                 NULL},
	[O_KEEPCNT] = {"keepalive.cnt", "TCP_KEEPCNT", IPPROTO_TCP, TCP_KEEPCNT, F_CLIENT, NULL},
	[O_USER_TIMEOUT] = {"user_timeout", "TCP_USER_TIMEOUT", IPPROTO_TCP, TCP_USER_TIMEOUT,
	                    F_CLIENT, NULL},
	[O_CONGESTION] = {"congestion", "TCP_CONGESTION", IPPROTO_TCP, TCP_CONGESTION,
	                  F_STRING | F_CLIENT, NULL},
	[O_NOTSENT_LOWAT] = {"notsent_lowat", "TCP_NOTSENT_LOWAT", IPPROTO_TCP, TCP_NOTSENT_LOWAT,
	                     F_CLIENT, NULL},
	[O_TOS] = {"tos", "IP_TOS", IPPROTO_IP, IP_TOS, F_CLIENT, NULL},
	[O_PRIORITY] = {"priority", "SO_PRIORITY", SOL_SOCKET, SO_PRIORITY,
	                F_NOT_INHERITED | F_CLIENT, NULL},
	[O_MARK] = {"mark", "SO_MARK", SOL_SOCKET, SO_MARK, F_CLIENT, NULL},
	[O_DEFER_ACCEPT] = {"defer_accept", "TCP_DEFER_ACCEPT", IPPROTO_TCP, TCP_DEFER_ACCEPT,
	                    F_LISTENER_ONLY, NULL},
	[O_FASTOPEN] = {"fastopen", "TCP_FASTOPEN", IPPROTO_TCP, TCP_FASTOPEN, F_LISTENER_ONLY, NULL},
	[O_REUSEPORT] = {"reuseport", "SO_REUSEPORT", SOL_SOCKET, SO_REUSEPORT,
	                 F_LISTENER_ONLY | F_BEFORE_BIND, NULL},
};

/* IPv6 sockets take their traffic class through IPV6_TCLASS. */
static void opt_sockopt(int i, int family, int *level, int *optname, const char **label)
{
	*level = opts[i].level;
	*optname = opts[i].optname;
	*label = opts[i].label;
	if (i == O_TOS && family == AF_INET6) {
		*level = IPPROTO_IPV6;
		*optname = IPV6_TCLASS;
		*label = "IPV6_TCLASS";
	}
}

/* Whether the policy sets option i, and to what. */
static int opt_want(int i, int *want)
{
	const struct st_policy *p = &st_policy;
	int on = st_on(p, ST_V_KEEPALIVE);
	switch (i) {
	case O_RCVBUF: *want = (int)p->num[ST_V_RCVBUF]; return st_has(p, ST_V_RCVBUF);
	case O_SNDBUF: *want = (int)p->num[ST_V_SNDBUF]; return st_has(p, ST_V_SNDBUF);
	case O_NODELAY: *want = (int)p->num[ST_V_NODELAY]; return st_has(p, ST_V_NODELAY);
	case O_KEEPALIVE: *want = (int)p->num[ST_V_KEEPALIVE]; return st_has(p, ST_V_KEEPALIVE);
	case O_KEEPIDLE: *want = p->ka_idle; return on && p->ka_idle > 0;
	case O_KEEPINTVL: *want = p->ka_intvl; return on && p->ka_intvl > 0;
	case O_KEEPCNT: *want = p->ka_cnt; return on && p->ka_cnt > 0;
	case O_USER_TIMEOUT: *want = (int)p->num[ST_V_USER_TIMEOUT]; return st_has(p, ST_V_USER_TIMEOUT);
	case O_CONGESTION: *want = 1; return st_has(p, ST_V_CONGESTION);
	case O_NOTSENT_LOWAT:
		*want = (int)p->num[ST_V_NOTSENT_LOWAT];
		return st_has(p, ST_V_NOTSENT_LOWAT);
	case O_TOS: *want = (int)p->num[ST_V_TOS]; return st_has(p, ST_V_TOS);
	case O_PRIORITY: *want = (int)p->num[ST_V_PRIORITY]; return st_has(p, ST_V_PRIORITY);
	case O_MARK: *want = (int)(uint32_t)p->num[ST_V_MARK]; return st_has(p, ST_V_MARK);
	case O_DEFER_ACCEPT:
		*want = (int)p->num[ST_V_DEFER_ACCEPT];
		return st_has(p, ST_V_DEFER_ACCEPT);
	case O_FASTOPEN: *want = (int)p->num[ST_V_FASTOPEN]; return st_has(p, ST_V_FASTOPEN);
	case O_REUSEPORT: *want = (int)p->num[ST_V_REUSEPORT]; return st_has(p, ST_V_REUSEPORT);
	}
	return 0;
}

/* The option an app's setsockopt(level, optname) touches, or -1. */
static int opt_lookup(int level, int optname)
{
	if (level == SOL_SOCKET && optname == SO_RCVBUFFORCE)
		return O_RCVBUF;
	if (level == SOL_SOCKET && optname == SO_SNDBUFFORCE)
		return O_SNDBUF;
	if (level == IPPROTO_IPV6 && optname == IPV6_TCLASS)
		return O_TOS;
	for (int i = 0; i < O_COUNT; i++)
		if (opts[i].level == level && opts[i].optname == optname)
			return i;
	return -1;
}

#define NOT_SET INT_MIN

struct st_listener {
	_Atomic int used;
	_Atomic int refs;        /* entries that name it: a listener and its copies (dup()) */
	_Atomic int checked;     /* 0: no connection accepted yet, 1: being checked, 2: checked */
	_Atomic uint32_t percon; /* options applied per accepted connection */
	_Atomic int queued;      /* adopted: connections that were queued before the tuning */
	int family;
	int fd;             /* the number it was tuned under, and the socket's inode: a record */
	_Atomic unsigned long ino; /* whose number now names something else is reclaimed when
	                            * full; a copy of the listener finds its record by it (0
	                            * until the record is complete, and once it is free) */
	_Atomic int stats_slot; /* SOCKTUNE_STATS slot, or -1; STATS_LATER, STATS_CLAIMING */
	int eff[O_COUNT]; /* what the kernel reports on the listener, NOT_SET if not applied */
};

static struct st_listener listeners[ST_MAX_LISTENERS];
static _Atomic unsigned listeners_high; /* one past the highest record ever taken */

/* The scan of inherited descriptors at start ran (st_adopt_inherited).  Then, while there is
 * no descriptor table, the process has made no TCP socket through socket() and inherited no
 * TCP listener: a descriptor of unknown kind is none of ours, and a server of UNIX sockets
 * pays nothing for it (no getsockopt, no table). */
static int inherited_scanned;
_Atomic int st_fds_received; /* (or received: then any descriptor may be a TCP listener) */

static int none_of_ours(uint64_t e)
{
	return ST_FD_KIND(e) == ST_FD_UNKNOWN &&
	       !atomic_load_explicit(&st_fdmap, memory_order_acquire) && inherited_scanned &&
	       !atomic_load_explicit(&st_fds_received, memory_order_relaxed);
}

static struct st_listener *record_of(uint64_t e)
{
	return ST_FD_KIND(e) == ST_FD_LISTENER && (e >> ST_FD_REC_SHIFT)
	               ? &listeners[(e >> ST_FD_REC_SHIFT) - 1] : NULL;
}

/* Each entry that names a record holds one reference; the last one released closes the
 * listener's stats slot and frees the record (a copy closed alone leaves both). */
static void release_record(uint64_t e)
{
	struct st_listener *L = record_of(e);
	if (L && atomic_fetch_sub(&L->refs, 1) == 1) {
		atomic_store(&L->ino, 0);
		st_stats_listener_closed(L->stats_slot);
		atomic_store(&L->used, 0);
	}
}

/* ---- small helpers, each a syscall and a message ---- */

struct st_err {
	char msg[160];
};

static void count(_Atomic uint64_t *counter)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

static int set_int(struct st_err *e, int fd, int level, int opt, const char *label, int val)
{
	if (st_real.setsockopt(fd, level, opt, &val, sizeof val) == 0)
		return 0;
	if (st_stats)
		count(&st_stats->setsockopt_failures);
	snprintf(e->msg, sizeof e->msg, "setsockopt %s: %s", label, strerror(errno));
	return -1;
}

static int get_int(int fd, int level, int opt, int *val)
{
	socklen_t len = sizeof *val;
	*val = 0;
	return st_real.getsockopt(fd, level, opt, val, &len);
}

static int get_name(int fd, char *buf, socklen_t n)
{
	memset(buf, 0, n);
	return st_real.getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, buf, &n);
}

/* The backlog in force on a listening socket: tcpi_sacked holds sk_max_ack_backlog there,
 * after the kernel's cut to net.core.somaxconn. */
static int listen_backlog(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	memset(&ti, 0, sizeof ti);
	if (st_real.getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
		return -1;
	return (int)ti.tcpi_sacked;
}

static int format_addr(const struct sockaddr *sa, char *out, size_t n, unsigned *port)
{
	char host[INET6_ADDRSTRLEN] = "?";
	*port = 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
		*port = ntohs(a->sin_port);
		snprintf(out, n, "%s:%u", host, *port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
		*port = ntohs(a->sin6_port);
		snprintf(out, n, "[%s]:%u", host, *port);
	} else {
		snprintf(out, n, "?");
		return -1;
	}
	return 0;
}

/* Copy the caller's address without trusting the pointer: process_vm_readv() reports a
 * bad one as EFAULT where a plain read would crash the server (bind(fd, (void *)1, 16)
 * must fail with EFAULT, as it does without the library).  Returns 0 when *out holds an
 * AF_INET or AF_INET6 address of the right length. */
static int copy_addr(const struct sockaddr *sa, socklen_t len, struct sockaddr_storage *out)
{
	if (!sa || len < sizeof(struct sockaddr_in) || len > sizeof *out)
		return -1;
	memset(out, 0, sizeof *out);
	struct iovec local = {out, len}, remote = {(void *)sa, len};
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)len) {
		static _Atomic int warned;
		if (errno != EFAULT && !atomic_exchange(&warned, 1)) /* a seccomp filter, say */
			st_log(ST_LOG_WARN,
			       "event=address-unreadable error=\"process_vm_readv: %s\" "
			       "action=bind/connect passed through untuned",
			       strerror(errno));
		return -1;
	}
	return (out->ss_family == AF_INET ||
	        (out->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))) ? 0 : -1;
}

static int local_addr(int fd, char *out, size_t n, unsigned *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	memset(&ss, 0, sizeof ss);
	getsockname(fd, (struct sockaddr *)&ss, &len);
	format_addr((struct sockaddr *)&ss, out, n, port);
	return ss.ss_family;
}

static int in_scope(int domain, int type, int protocol)
{
	return (domain == AF_INET || domain == AF_INET6) && (type & 0xff) == SOCK_STREAM &&
	       (protocol == 0 || protocol == IPPROTO_TCP || protocol == IPPROTO_MPTCP);
}

/* A socket the hooks did not see being made: ask the kernel what it is. */
static int is_tcp_socket(int fd)
{
	int domain, type, protocol;
	return get_int(fd, SOL_SOCKET, SO_DOMAIN, &domain) == 0 &&
	       get_int(fd, SOL_SOCKET, SO_TYPE, &type) == 0 &&
	       get_int(fd, SOL_SOCKET, SO_PROTOCOL, &protocol) == 0 && in_scope(domain, type, protocol);
}

static int dry_run(void)
{
	return st_on(&st_policy, ST_V_DRY_RUN);
}

static int app_wins(void)
{
	return st_has(&st_policy, ST_V_PRECEDENCE) &&
	       st_policy.num[ST_V_PRECEDENCE] == ST_PRECEDENCE_APP;
}

#define APP_BITS (((1ull << O_COUNT) - 1) << ST_FD_APP_SHIFT)

static uint64_t app_bit(int i)
{
	return 1ull << (ST_FD_APP_SHIFT + i);
}

static struct st_listener *record_of(uint64_t e);
static void release_record(uint64_t e);

/* A new socket under a number whose old entry was never cleared (closed by a path the
 * hooks do not see: fclose(), closefrom() inside libc, a raw syscall): the new entry first,
 * then the old listener's record back to the pool. */
static void replace_entry(int fd, uint64_t v)
{
	uint64_t old = st_fd_get(fd);
	if (old == v)
		return;
	if (!record_of(old))
		st_fd_set(fd, v); /* (makes the table when there is none: then nothing was there) */
	else
		release_record(st_fd_xchg(fd, v)); /* exactly one caller frees a record */
}

/* An entry can outlive its socket: closed where no hook sees it (fclose(fdopen(fd)), a raw
 * syscall, a child made by _Fork()) and the number reused by something made without
 * socket() or accept().  Before the policy touches a socket on one of the app's own rare
 * calls (setsockopt, a second listen(), listen()), one getsockopt proves it is TCP still:
 * SO_PROTOCOL is IPPROTO_TCP (or MPTCP) on TCP sockets only (a UNIX socket says 0).  A stale
 * entry is dropped (with its record). */
static int is_tcp_proto(int fd)
{
	int proto;
	return get_int(fd, SOL_SOCKET, SO_PROTOCOL, &proto) == 0 &&
	       (proto == IPPROTO_TCP || proto == IPPROTO_MPTCP);
}

static int still_tcp(int fd, uint64_t e)
{
	if (is_tcp_proto(fd))
		return 1;
	if (st_fd_cas(fd, &e, ST_FD_UNKNOWN))
		release_record(e);
	return 0;
}


void st_socket_made(int fd, int domain, int type, int protocol)
{
	if (in_scope(domain, type, protocol))
		replace_entry(fd, ST_FD_TCP);
	else if (atomic_load_explicit(&st_fdmap, memory_order_relaxed))
		replace_entry(fd, ST_FD_IGNORED); /* only once a table exists: UDP alone makes none */
}

/* The backlog the policy wants for the app's.  listen(fd, -1) (any negative) asks for the
 * kernel's maximum, net.core.somaxconn: the policy clamps that number, and when the result
 * is the maximum again the app's own value is passed on unchanged. */
static int want_backlog(int app)
{
	const struct st_policy *p = &st_policy;
	if (st_has(p, ST_V_BACKLOG))
		return (int)p->num[ST_V_BACKLOG];
	long long asked = app;
	if (app < 0) {
		asked = st_sysctl_num("net.core.somaxconn", INT_MAX);
		if (asked < 0)
			asked = INT_MAX;
	}
	long long want = asked;
	if (st_has(p, ST_V_BACKLOG_MIN) && want < p->num[ST_V_BACKLOG_MIN])
		want = p->num[ST_V_BACKLOG_MIN];
	if (st_has(p, ST_V_BACKLOG_MAX) && want > p->num[ST_V_BACKLOG_MAX])
		want = p->num[ST_V_BACKLOG_MAX];
	return want == asked ? app : (int)want;
}

static int backlog_governed(void)
{
	return st_has(&st_policy, ST_V_BACKLOG) || st_has(&st_policy, ST_V_BACKLOG_MIN) ||
	       st_has(&st_policy, ST_V_BACKLOG_MAX);
}

/* A record whose listener was closed where no hook saw it (a raw syscall, a close inside
 * libc) while its number now names something else (a file, a pipe, another socket made
 * without socket()): its entry still points at it, so it was never freed.  Checked only
 * when every record is taken. */
static void reclaim_records(void)
{
	for (unsigned i = 0; i < ST_MAX_LISTENERS; i++) {
		struct st_listener *L = &listeners[i];
		if (!atomic_load(&L->used))
			continue;
		uint64_t e = st_fd_get(L->fd);
		struct stat st;
		if (record_of(e) != L || (fstat(L->fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
		                          (unsigned long)st.st_ino == atomic_load(&L->ino)))
			continue;
		if (st_fd_cas(L->fd, &e, ST_FD_UNKNOWN))
			release_record(e); /* the one who took the entry frees the record */
	}
}

static struct st_listener *take_record(unsigned *index)
{
	for (unsigned i = 0; i < ST_MAX_LISTENERS; i++) {
		int expect = 0;
		if (atomic_compare_exchange_strong(&listeners[i].used, &expect, 1)) {
			atomic_store(&listeners[i].refs, 1);
			atomic_store(&listeners[i].checked, 0);
			atomic_store(&listeners[i].percon, 0);
			atomic_store(&listeners[i].queued, 0);
			*index = i;
			unsigned high = atomic_load(&listeners_high);
			while (high <= i && !atomic_compare_exchange_weak(&listeners_high, &high, i + 1))
				;
			return &listeners[i];
		}
	}
	return NULL;
}

static uint64_t listener_entry(unsigned index)
{
	return ST_FD_LISTENER | ((uint64_t)(index + 1) << ST_FD_REC_SHIFT);
}

/* A copy of a listener already tuned (dup(), fcntl(F_DUPFD), dup2(), one inherited twice,
 * a fork child's dup of its parent's): the same socket, so the same record, found by the
 * socket's inode.  Gives fd (whose entry is still *expect) an entry of its own on that
 * record, holding a reference; no option is set again, no listen(), no line at info.
 * Returns the new entry, 0 when no tuned listener has that inode, or SHARE_LOST when fd's
 * entry changed meanwhile (closed, reused): then nothing is to be done for fd at all. */
#define SHARE_LOST (~0ull)
static uint64_t share_listener(int fd, uint64_t expect, unsigned long ino)
{
	unsigned high = atomic_load(&listeners_high);
	for (unsigned i = 0; ino && i < high && i < ST_MAX_LISTENERS; i++) {
		struct st_listener *L = &listeners[i];
		if (atomic_load_explicit(&L->ino, memory_order_acquire) != ino)
			continue;
		int r = atomic_load(&L->refs);
		while (r > 0 && !atomic_compare_exchange_weak(&L->refs, &r, r + 1))
			;
		if (r <= 0)
			continue; /* released meanwhile */
		uint64_t v = listener_entry(i);
		if (atomic_load_explicit(&L->ino, memory_order_acquire) != ino) {
			release_record(v); /* freed and taken by another listener meanwhile */
			continue;
		}
		if (app_wins()) { /* what the app set on the listener stays the app's on the copy */
			uint64_t orig = st_fd_get(L->fd);
			if (record_of(orig) == L)
				v |= orig & APP_BITS;
		}
		if (!st_fd_cas(fd, &expect, v)) {
			release_record(v); /* closed while we looked: the caller gives up too */
			return SHARE_LOST;
		}
		st_log(ST_LOG_DEBUG, "event=listener-copy fd=%d listener=%d", fd, L->fd);
		return v;
	}
	return 0;
}

static unsigned long socket_ino(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? (unsigned long)st.st_ino : 0;
}

static struct st_listener *listener_alloc(unsigned *index)
{
	struct st_listener *L = take_record(index);
	if (!L) {
		reclaim_records();
		L = take_record(index);
	}
	return L;
}

/* Messages that would repeat for every socket are said once per process. */
static _Atomic int mark_denied, fastopen_warned, congestion_warned;

static void warn_congestion(int fd, const char *msg)
{
	if (atomic_exchange(&congestion_warned, 1))
		return;
	char avail[256] = "?", allowed[256] = "?";
	st_sysctl_str("net.ipv4.tcp_available_congestion_control", avail, sizeof avail);
	st_sysctl_str("net.ipv4.tcp_allowed_congestion_control", allowed, sizeof allowed);
	st_log(ST_LOG_WARN,
	       "event=setsockopt option=congestion fd=%d want=%s error=\"%s\" available=\"%s\" "
	       "allowed=\"%s\" fix=\"modprobe tcp_%s, or add it to "
	       "net.ipv4.tcp_allowed_congestion_control\"",
	       fd, st_policy.congestion, msg, avail, allowed, st_policy.congestion);
}

static void warn_clamp(int fd, int i, int want, int eff, const char *dry)
{
	const struct st_opt *o = &opts[i];
	long long max = st_sysctl_num(o->limit, -1);
	char fix[160];
	if (i == O_RCVBUF)
		snprintf(fix, sizeof fix, "sysctl -w %s=%d, or CAP_NET_ADMIN with SOCKTUNE_RCVBUF_FORCE=1",
		         o->limit, want);
	else
		snprintf(fix, sizeof fix, "sysctl -w %s=%d", o->limit, want);
	st_log(ST_LOG_WARN, "event=clamp option=%s fd=%d want=%d effective=%d limit=%s:%lld fix=\"%s\"%s",
	       o->name, fd, want, eff, o->limit, max, fix, dry);
}

/* Set option i on fd and read it back into *eff.  In a dry run, only read what is there
 * and predict the clamps.  Adds the option's keys to line.  Returns 0, or -1 when the
 * option could not be set (logged). */
static int apply_opt(int fd, int family, int i, struct st_line *line, int *eff)
{
	const struct st_opt *o = &opts[i];
	int level, optname, want;
	const char *label;
	struct st_err e;
	const char *dry = dry_run() ? " dry_run=1" : "";

	opt_sockopt(i, family, &level, &optname, &label);
	opt_want(i, &want);
	*eff = NOT_SET;

	if (o->flags & F_STRING) {
		char got[16];
		if (!*dry && st_real.setsockopt(fd, level, optname, st_policy.congestion,
		                                (socklen_t)strlen(st_policy.congestion)) != 0) {
			snprintf(e.msg, sizeof e.msg, "setsockopt %s: %s", label, strerror(errno));
			warn_congestion(fd, e.msg);
			if (st_stats)
				count(&st_stats->setsockopt_failures);
			return -1;
		}
		if (get_name(fd, got, sizeof got) != 0)
			return -1;
		st_line_add(line, " %s=%s", o->name, *dry ? st_policy.congestion : got);
		*eff = 1;
		return 0;
	}

	if (!*dry) {
		int done = 0;
		if (i == O_MARK && atomic_load(&mark_denied))
			return -1;
		if (i == O_RCVBUF && st_on(&st_policy, ST_V_RCVBUF_FORCE)) {
			done = set_int(&e, fd, SOL_SOCKET, SO_RCVBUFFORCE, "SO_RCVBUFFORCE", want) == 0;
			if (!done)
				st_log(ST_LOG_WARN,
				       "event=force-fallback option=rcvbuf fd=%d error=\"%s\" action=SO_RCVBUF "
				       "fix=\"grant CAP_NET_ADMIN to use SO_RCVBUFFORCE\"",
				       fd, e.msg);
		}
		if (!done && set_int(&e, fd, level, optname, label, want) != 0) {
			if (i == O_MARK && errno == EPERM) {
				if (!atomic_exchange(&mark_denied, 1))
					st_log(ST_LOG_WARN,
					       "event=setsockopt option=mark want=%u error=\"%s\" "
					       "fix=\"grant CAP_NET_ADMIN or CAP_NET_RAW\" action=disabled",
					       (unsigned)want, e.msg);
				return -1;
			}
			st_log(ST_LOG_WARN,
			       "event=setsockopt option=%s fd=%d want=%d error=\"%s\" action=skipped", o->name,
			       fd, want, e.msg);
			return -1;
		}
	}
	int got;
	if (get_int(fd, level, optname, &got) != 0)
		return -1;
	*eff = got;
	/* A dual-stack IPv6 socket carries IPv4 traffic too, whose TOS comes from IP_TOS. */
	int v6only = 1;
	if (i == O_TOS && family == AF_INET6 && !*dry &&
	    get_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only) == 0 && !v6only)
		set_int(&e, fd, IPPROTO_IP, IP_TOS, "IP_TOS", want);

	if (!(o->flags & F_BUFFER)) {
		if (i == O_MARK)
			st_line_add(line, " %s=%u", o->name, (unsigned)(*dry ? want : got));
		else
			st_line_add(line, " %s=%d", o->name, *dry ? want : got);
		return 0;
	}
	st_line_add(line, " %s.want=%d %s.effective=%d", o->name, want, o->name, got);
	if (*dry) {
		/* predict: the kernel grants min(want, limit) and reports it doubled */
		long long max = st_sysctl_num(o->limit, -1);
		if (max > 0 && want > max && !(i == O_RCVBUF && st_on(&st_policy, ST_V_RCVBUF_FORCE)))
			warn_clamp(fd, i, want, (int)(2 * max), dry);
	} else if ((long long)got < 2LL * (want < INT_MAX / 2 ? want : INT_MAX / 2)) {
		/* The kernel doubles the request (bookkeeping overhead); less than double is a clamp. */
		warn_clamp(fd, i, want, got, dry);
	}
	return 0;
}

/* The app set a governed option itself and the policy's value was kept.  The same value
 * as the policy's (most servers set TCP_NODELAY=1 themselves) is no news: debug.  A value
 * the policy replaced is counted and said once per kind of socket and option, with the
 * socket it was seen on.  app is the app's request (buffers: not the doubled read-back);
 * app_name is set for TCP_CONGESTION. */
static const char *const kind_names[] = {[ST_FD_LISTENER] = "listener",
                                         [ST_FD_CONN] = "accepted", [ST_FD_CLIENT] = "client"};
static _Atomic uint32_t override_logged[ST_FD_CLIENT + 1];

static void note_override(int fd, unsigned kind, int i, long long app, const char *app_name)
{
	int want;
	opt_want(i, &want);
	int agree = app_name ? strcmp(app_name, st_policy.congestion) == 0
	            : (i == O_NODELAY || i == O_KEEPALIVE || i == O_REUSEPORT) ? !app == !want
	                                                                       : app == want;
	if (agree) {
		if (app_name)
			st_log(ST_LOG_DEBUG, "event=app-override fd=%d socket=%s option=%s app=%s same=1",
			       fd, kind_names[kind], opts[i].name, app_name);
		else
			st_log(ST_LOG_DEBUG, "event=app-override fd=%d socket=%s option=%s app=%lld same=1",
			       fd, kind_names[kind], opts[i].name, app);
		return;
	}
	struct st_stats_file *sf = st_stats_file();
	if (sf)
		count(&sf->app_overrides_refused);
	uint32_t bit = 1u << i;
	if (st_log_level < ST_LOG_INFO || (atomic_fetch_or(&override_logged[kind], bit) & bit))
		return;
	char addr[INET6_ADDRSTRLEN + 10];
	unsigned port;
	local_addr(fd, addr, sizeof addr, &port); /* once per kind and option: not per call */
	if (app_name)
		st_log(ST_LOG_INFO,
		       "event=app-override fd=%d addr=%s socket=%s option=%s app=%s kept=%s", fd, addr,
		       kind_names[kind], opts[i].name, app_name, st_policy.congestion);
	else
		st_log(ST_LOG_INFO,
		       "event=app-override fd=%d addr=%s socket=%s option=%s app=%lld kept=%d", fd, addr,
		       kind_names[kind], opts[i].name, app, want);
}

/* Before the policy overwrites what the app set on a socket not yet tuned: what was it?
 * (Buffers read back doubled: halved here, the app's request when nothing clamped it.) */
static void note_override_before(int fd, int family, unsigned kind, int i)
{
	int level, optname, v;
	const char *label;
	opt_sockopt(i, family, &level, &optname, &label);
	if (opts[i].flags & F_STRING) {
		char name[16];
		if (get_name(fd, name, sizeof name) == 0)
			note_override(fd, kind, i, 0, name);
	} else if (get_int(fd, level, optname, &v) == 0) {
		note_override(fd, kind, i, (opts[i].flags & F_BUFFER) ? v / 2 : v, NULL);
	}
}

/* Apply every option the policy sets and that suits this kind of socket.  app: the
 * options the app set itself before (their bits); precedence=app leaves them alone. */
static void apply_all(int fd, int family, unsigned kind, unsigned need, unsigned skip,
                      uint64_t app, struct st_line *line, int *eff)
{
	for (int i = 0; i < O_COUNT; i++) {
		int want;
		eff[i] = NOT_SET;
		if (!opt_want(i, &want) || (need && !(opts[i].flags & need)) || (opts[i].flags & skip))
			continue;
		if (app & app_bit(i)) {
			if (app_wins()) {
				st_line_add(line, " %s=app", opts[i].name);
				continue;
			}
			if (!dry_run())
				note_override_before(fd, family, kind, i);
		}
		apply_opt(fd, family, i, line, &eff[i]);
	}
}

/* Whether the policy sets anything on listeners: with nothing set (only logging, say) a
 * listener is not tuned, and its line is debug, not info. */
static int tunes_listeners(void)
{
	return st_policy_tunes_listeners(&st_policy);
}

enum { TUNED, SKIPPED, FAILED };
/* tune_listener's adopting: 0 listen(), 1 first accept, 2 start, 3 the app's listen() on a
 * socket that listens already but has no record (inherited with no scan at start) */
enum { ADOPT_AT_START = 2, RELISTEN_UNTRACKED = 3 };
#define STATS_LATER (-2)
#define STATS_CLAIMING (-3)

/* The backlog keys of a listen line, and the clamp warning when somaxconn cut the number. */
static void add_backlog(struct st_line *head, int fd, const char *addr, int app_backlog, int want,
                        int effective, const char *dry, int warn)
{
	st_line_add(head, " backlog.app=%d backlog.want=%d backlog.effective=%d", app_backlog, want,
	            effective);
	long long somaxconn = st_sysctl_num("net.core.somaxconn", -1);
	int clamped = want >= 0 && (*dry ? (somaxconn >= 0 && want > somaxconn)
	                                 : (effective >= 0 && effective < want));
	if (clamped)
		st_log(warn ? ST_LOG_WARN : ST_LOG_DEBUG,
		       "event=clamp option=backlog fd=%d want=%d effective=%lld "
		       "limit=net.core.somaxconn:%lld fix=\"sysctl -w net.core.somaxconn=%d\"%s",
		       fd, want, *dry ? somaxconn : effective, somaxconn, want, dry);
	/* SOCKTUNE_BACKLOG replaces: a server that asked for more (squid 5000, h2o 65535,
	 * -1 = somaxconn) gets less, which the operator rarely meant. */
	long long asked = app_backlog < 0 ? somaxconn : app_backlog;
	if (st_has(&st_policy, ST_V_BACKLOG) && want >= 0 && asked > want) {
		char means[48] = "";
		if (app_backlog < 0)
			snprintf(means, sizeof means, " backlog.app.means=net.core.somaxconn:%lld",
			         somaxconn);
		st_log(warn ? ST_LOG_WARN : ST_LOG_DEBUG,
		       "event=backlog-lowered fd=%d addr=%s backlog.app=%d%s backlog.want=%d "
		       "fix=\"use --backlog-min %d to only raise\"%s",
		       fd, addr, app_backlog, means, want, want, dry);
	}
}

/* What a listener found listening carries now, for each option the policy sets (TCP_CONGESTION:
 * 1 when it is the policy's), so that one tuned already (by the parent that exec'd us) is
 * told apart from one the tuning changed. */
static void read_current(int fd, int family, int *cur)
{
	for (int i = 0; i < O_COUNT; i++) {
		int level, optname, want;
		const char *label;
		cur[i] = NOT_SET;
		if (!opt_want(i, &want) || (opts[i].flags & F_BEFORE_BIND))
			continue;
		opt_sockopt(i, family, &level, &optname, &label);
		if (opts[i].flags & F_STRING) {
			char name[16];
			if (get_name(fd, name, sizeof name) == 0)
				cur[i] = strcmp(name, st_policy.congestion) == 0;
		} else if (get_int(fd, level, optname, &cur[i]) != 0) {
			cur[i] = NOT_SET;
		}
	}
}

/* Whether cur (read_current) is what applying the policy would leave: buffers read back
 * doubled, after the cut to their sysctl. */
static int already_tuned(const int *cur)
{
	for (int i = 0; i < O_COUNT; i++) {
		int want;
		if (!opt_want(i, &want) || (opts[i].flags & F_BEFORE_BIND))
			continue;
		long long expect = (opts[i].flags & F_STRING) ? 1 : want;
		if (opts[i].flags & F_BUFFER) {
			long long max = i == O_RCVBUF && st_on(&st_policy, ST_V_RCVBUF_FORCE)
			                        ? -1 : st_sysctl_num(opts[i].limit, -1);
			expect = 2LL * (max > 0 && want > max ? max : want);
		}
		if (cur[i] == NOT_SET || cur[i] != expect)
			return 0;
	}
	return 1;
}

/* Apply the policy to a listener: from the listen() hook (adopting = 0: set the options,
 * then call the real listen() with the policy's backlog; RELISTEN_UNTRACKED the same on a
 * socket listening already) or to a socket already listening (adopting = 1 or
 * ADOPT_AT_START: listen() again only when the backlog policy changes the number). */
static int tune_listener(int fd, int app_backlog, int adopting, int *result)
{
	char addr[INET6_ADDRSTRLEN + 10];
	unsigned port;
	int family = local_addr(fd, addr, sizeof addr, &port);
	uint64_t entry = st_fd_get(fd);
	uint64_t app = entry;
	const char *dry = dry_run() ? " dry_run=1" : "";

	if (st_has(&st_policy, ST_V_PORTS) && !st_port_in(st_policy.ports, port)) {
		st_fd_cas(fd, &entry, ST_FD_IGNORED); /* unless closed and reused meanwhile */
		st_log(ST_LOG_DEBUG, "event=skip fd=%d addr=%s reason=ports", fd, addr);
		return SKIPPED;
	}
	st_log_flush_deferred();

	struct st_line line = {.n = 0};
	int eff[O_COUNT], before[O_COUNT];
	int app_call = adopting == 0 || adopting == RELISTEN_UNTRACKED, tuned_before = 0;
	if (!app_call) {
		read_current(fd, family, before);
		tuned_before = !*dry && already_tuned(before);
	}
	if (tuned_before) {
		/* the parent that exec'd us tuned it (and said so, clamps included): nothing to set */
		for (int i = 0; i < O_COUNT; i++) {
			eff[i] = before[i];
			if (before[i] != NOT_SET && (opts[i].flags & F_STRING))
				st_line_add(&line, " %s=%s", opts[i].name, st_policy.congestion);
			else if (before[i] != NOT_SET)
				st_line_add(&line, " %s=%d", opts[i].name, before[i]);
		}
	} else {
		/* Before listen(): SO_RCVBUF decides the window scale offered in the SYN-ACK. */
		apply_all(fd, family, ST_FD_LISTENER, 0, F_BEFORE_BIND, app, &line, eff);
	}
	if (st_has(&st_policy, ST_V_REUSEPORT)) {
		int v;
		get_int(fd, SOL_SOCKET, SO_REUSEPORT, &v);
		st_line_add(&line, " reuseport=%d", v);
	}
	if (st_has(&st_policy, ST_V_FASTOPEN) && !tuned_before &&
	    !(st_sysctl_num("net.ipv4.tcp_fastopen", 0) & 2) && !atomic_exchange(&fastopen_warned, 1))
		st_log(ST_LOG_WARN,
		       "event=fastopen-disabled limit=net.ipv4.tcp_fastopen:%lld "
		       "fix=\"sysctl -w net.ipv4.tcp_fastopen=3\"",
		       st_sysctl_num("net.ipv4.tcp_fastopen", -1));

	/* An adopted socket listens already: listen() again only to change its backlog. */
	if (!app_call)
		app_backlog = listen_backlog(fd);
	int want = backlog_governed() ? want_backlog(app_backlog) : app_backlog;
	int pass = *dry ? app_backlog : want;
	if (!app_call && pass > app_backlog && app_backlog >= 0 &&
	    app_backlog == st_sysctl_num("net.core.somaxconn", -1))
		pass = app_backlog; /* cut to somaxconn, as it is already: listen() would change nothing */
	*result = 0;
	if ((app_call || pass != app_backlog) && (*result = st_real.listen(fd, pass)) != 0) {
		int saved = errno;
		st_log(ST_LOG_DEBUG, "event=listen-failed fd=%d addr=%s error=\"%s\"", fd, addr,
		       strerror(saved));
		errno = saved;
		return FAILED;
	}

	/* Found listening with every value the policy wants in place already (a worker exec'd
	 * by a parent that tuned the listener): said at debug, so workers add no noise. */
	int unchanged = !app_call && !*dry && pass == app_backlog;
	for (int i = 0; unchanged && i < O_COUNT; i++)
		if (eff[i] != NOT_SET && eff[i] != before[i])
			unchanged = 0;

	/* A port the kernel picked (a startup probe, an admin or RPC socket on port 0) is marked
	 * port=ephemeral: listen() on an unbound socket (local_addr() saw port 0 before it), or,
	 * when SOCKTUNE_PORTS names none, a port in ip_local_port_range.  Still logged at info:
	 * a server told to use port 0 (a test harness, a dynamic-port platform) looks like a probe
	 * at listen(), and bind() is not asked (that would cost it a syscall). */
	int ephemeral = 0;
	if (adopting == 0 && port == 0) {
		local_addr(fd, addr, sizeof addr, &port); /* the port listen() picked */
		ephemeral = 1;
	} else if (!st_has(&st_policy, ST_V_PORTS)) {
		ephemeral = st_port_ephemeral(port);
	}
	struct st_line head = {.n = 0};
	st_line_add(&head, "event=%s fd=%d addr=%s%s", app_call ? "listen" : "adopt", fd, addr,
	            adopting == RELISTEN_UNTRACKED ? " relisten=1" : "");
	if (backlog_governed())
		add_backlog(&head, fd, addr, app_backlog, want, listen_backlog(fd), dry, !unchanged);
	if (st_has(&st_policy, ST_V_QUICKACK))
		st_line_add(&line, " quickack=%d", (int)st_policy.num[ST_V_QUICKACK]);
	st_log(tunes_listeners() && !unchanged ? ST_LOG_INFO : ST_LOG_DEBUG, "%s%s%s%s%s", head.b,
	       line.b, unchanged ? " unchanged=1" : "", ephemeral ? " port=ephemeral" : "", dry);

	unsigned index;
	struct st_listener *L = *dry || !st_fd_fits(fd) ? NULL : listener_alloc(&index);
	if (!L) {
		/* A dry run, a descriptor beyond the table, or the table is full: only the
		 * per-connection work is skipped. */
		if (!*dry && st_fd_fits(fd))
			st_log(ST_LOG_WARN, "event=listener-table-full fd=%d max=%d", fd, ST_MAX_LISTENERS);
		st_fd_cas(fd, &entry, ST_FD_IGNORED);
		return TUNED;
	}
	memcpy(L->eff, eff, sizeof eff);
	L->family = family;
	L->fd = fd;
	/* An adopted listener may hold connections that completed their handshake before its
	 * options were set: they inherited the old values.  Count them (after the options were
	 * set, so the count errs on the safe side); accept() gives them the options itself and
	 * the inheritance check waits for the first connection made after the tuning. */
	if (adopting) {
		struct tcp_info ti;
		socklen_t tlen = sizeof ti;
		memset(&ti, 0, sizeof ti);
		if (st_real.getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tlen) == 0)
			atomic_store(&L->queued, (int)ti.tcpi_unacked);
	}
	/* A listener found at start may only be inherited by a process that never serves it (a
	 * child the server runs without closing its listeners first): its stats slot, and the
	 * stats file, are claimed by the process that accepts on it (count_accepted). */
	L->stats_slot = adopting == ADOPT_AT_START ? STATS_LATER : st_stats_listener(fd, family, port, addr, adopting != 0,
	                                  eff[O_RCVBUF] == NOT_SET ? -1 : eff[O_RCVBUF],
	                                  eff[O_SNDBUF] == NOT_SET ? -1 : eff[O_SNDBUF]);
	/* complete: from now on a copy of the listener finds the record (share_listener) */
	atomic_store_explicit(&L->ino, socket_ino(fd), memory_order_release);
	/* precedence=app: the options the app set stay the app's on this listener's
	 * connections too (not checked, not set per connection); with policy they were
	 * overwritten above and are the policy's like any other */
	uint64_t v = ST_FD_LISTENER | (app_wins() ? entry & APP_BITS : 0) |
	             ((uint64_t)(index + 1) << ST_FD_REC_SHIFT);
	if (!st_fd_cas(fd, &entry, v))
		release_record(v); /* closed (and maybe reused) while we tuned it */
	return TUNED;
}

/* listen() again on a tuned listener: only the backlog changes.  When the number in force
 * changes, the log says so, read back with TCP_INFO like the first time (relisten=1). */
static int relisten(int fd, int backlog, int saved)
{
	int before = listen_backlog(fd), want = want_backlog(backlog);
	errno = saved;
	int r = st_real.listen(fd, want);
	if (r != 0)
		return r;
	int after = listen_backlog(fd);
	char addr[INET6_ADDRSTRLEN + 10];
	unsigned port;
	struct st_line head = {.n = 0};
	local_addr(fd, addr, sizeof addr, &port);
	st_line_add(&head, "event=listen fd=%d addr=%s relisten=1", fd, addr);
	add_backlog(&head, fd, addr, backlog, want, after, "", 1);
	st_log(after != before ? ST_LOG_INFO : ST_LOG_DEBUG, "%s", head.b);
	errno = saved;
	return 0;
}

int st_listen(int fd, int backlog)
{
	uint64_t e = st_fd_get(fd);
	unsigned kind = ST_FD_KIND(e);

	int saved = errno;
	if (kind == ST_FD_LISTENER && backlog_governed() && !dry_run() && still_tcp(fd, e))
		return relisten(fd, backlog, saved);
	if (kind == ST_FD_LISTENER) {
		errno = saved;
		return st_real.listen(fd, backlog);
	}
	if (kind == ST_FD_IGNORED || kind == ST_FD_CONN || kind == ST_FD_CLIENT ||
	    kind == ST_FD_ADOPTING || none_of_ours(e) ||
	    (kind != ST_FD_TCP && !is_tcp_socket(fd))) {
		if (kind == ST_FD_UNKNOWN && !none_of_ours(e))
			st_fd_set(fd, ST_FD_IGNORED);
		errno = saved;
		return st_real.listen(fd, backlog);
	}
	/* listen() only succeeds on a socket that is closed (or listening already): leave a
	 * connected or connecting one untouched, and its listen() fails as it would. */
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	memset(&ti, 0, sizeof ti);
	int have_info = st_real.getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0;
	if (!have_info && !still_tcp(fd, e)) {
		errno = saved; /* no TCP socket any more: the entry outlived its socket */
		return st_real.listen(fd, backlog);
	}
	if (have_info && ti.tcpi_state != TCP_CLOSE && ti.tcpi_state != TCP_LISTEN) {
		errno = saved;
		return st_real.listen(fd, backlog);
	}
	/* Listening already, with no record: a copy of a tuned listener (dup()) is that
	 * listener; any other (inherited, with no scan at start) may hold connections made
	 * before its tuning, which tune_listener counts as it does for an adopted one. */
	int listening = have_info && ti.tcpi_state == TCP_LISTEN;
	if (listening && share_listener(fd, e, socket_ino(fd))) {
		if (backlog_governed() && !dry_run())
			return relisten(fd, backlog, saved);
		errno = saved;
		return st_real.listen(fd, backlog);
	}
	int result;
	switch (tune_listener(fd, backlog, listening ? RELISTEN_UNTRACKED : 0, &result)) {
	case SKIPPED:
		errno = saved;
		return st_real.listen(fd, backlog);
	case FAILED:
		return result; /* with the real listen()'s errno */
	default:
		errno = saved;
		return result;
	}
}

/* A listening socket the process did not make through the hooks (inherited across exec,
 * systemd socket activation): tune it at its first accept. */
static uint64_t adopt(int lfd, uint64_t e, int *copy)
{
	/* One thread adopts; the others accepting on it meanwhile wait for that (a few
	 * syscalls), a bounded number of times. */
	*copy = 0;
	if (ST_FD_KIND(e) != ST_FD_ADOPTING && st_fd_cas(lfd, &e, ST_FD_ADOPTING)) {
		int listening = 0, tcp = is_tcp_socket(lfd), result;
		if (tcp && get_int(lfd, SOL_SOCKET, SO_ACCEPTCONN, &listening) == 0 && listening) {
			/* a copy of a tuned listener (dup(), fcntl(F_DUPFD)) is that listener */
			if (share_listener(lfd, ST_FD_ADOPTING, socket_ino(lfd)))
				*copy = 1;
			else
				tune_listener(lfd, -1, 1, &result);
		}
		/* Still ours: not a TCP listener, or its tuning failed.  A TCP socket that is not
		 * listening keeps its entry: an accept() that was blocked on a listener when it was
		 * closed returns after its number went to a new socket(), which is tuned at its
		 * own listen(). */
		uint64_t adopting = ST_FD_ADOPTING;
		st_fd_cas(lfd, &adopting, tcp && !listening ? e : ST_FD_IGNORED);
		return st_fd_get(lfd);
	}
	for (int i = 0; i < 100000 && ST_FD_KIND(e = st_fd_get(lfd)) == ST_FD_ADOPTING; i++)
		sched_yield();
	return e;
}

/* Listeners inherited at exec (socket activation, a supervisor, an upgrade handing its
 * sockets on) are found at start, so that a server which accepts them only through
 * io_uring (no accept() hook ever runs) still gets the listener options.  One bounded pass
 * over /proc/self/fd: an fstat per descriptor, getsockopt only for sockets. */

static void adopt_found(int fd, const struct stat *st, void *ctx)
{
	(void)ctx;
	uint64_t e = ST_FD_UNKNOWN;
	int result;
	if (st_fd_get(fd) || !is_tcp_socket(fd) || !st_fd_fits(fd) ||
	    !st_fd_cas(fd, &e, ST_FD_ADOPTING) ||
	    share_listener(fd, ST_FD_ADOPTING, (unsigned long)st->st_ino))
		return;
	tune_listener(fd, -1, ADOPT_AT_START, &result);
	e = ST_FD_ADOPTING; /* not tuned (outside SOCKTUNE_PORTS, or it failed) */
	st_fd_cas(fd, &e, ST_FD_IGNORED);
}

void st_adopt_inherited(void)
{
	if (!tunes_listeners()) {
		inherited_scanned = 1; /* nothing to tune, nothing to adopt */
		return;
	}
	/* With precedence=app, what the app set on its listener stays: a child that merely
	 * inherits its parent's listener (run without closing it first) must not overwrite the
	 * parent app's values.  Such listeners are adopted at their first accept instead. */
	if (app_wins())
		return;
	if (st_each_listener_fd(adopt_found, NULL) != 0)
		return; /* no /proc: listeners are adopted at their first accept instead */
	inherited_scanned = 1;
}

/* On the first connection accepted from a listener, check that the kernel copied each
 * option; where it did not, apply that option per connection from then on. */
static void check_inherit(struct st_listener *L, uint64_t lentry, int lfd, int cfd)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong(&L->checked, &expect, 1))
		return;
	uint32_t percon = 0;
	for (int i = 0; i < O_COUNT; i++) {
		int level, optname, got = 0;
		const char *label;
		if (L->eff[i] == NOT_SET || (opts[i].flags & F_LISTENER_ONLY) || (lentry & app_bit(i)))
			continue;
		if (opts[i].flags & F_NOT_INHERITED) {
			percon |= 1u << i;
			continue;
		}
		opt_sockopt(i, L->family, &level, &optname, &label);
		if (opts[i].flags & F_STRING) {
			char name[16];
			if (get_name(cfd, name, sizeof name) == 0 && strcmp(name, st_policy.congestion) != 0)
				got = -1;
			else
				got = L->eff[i];
		} else if (get_int(cfd, level, optname, &got) != 0) {
			continue;
		}
		if (got != L->eff[i]) {
			percon |= 1u << i;
			st_log(ST_LOG_WARN,
			       "event=inherit option=%s listener=%d listener.value=%d accepted.value=%d "
			       "action=per-connection",
			       opts[i].name, lfd, L->eff[i], got);
		}
	}
	atomic_store(&L->percon, percon);
	atomic_store(&L->checked, 2);
	st_log(ST_LOG_DEBUG, "event=inherit-check listener=%d per_connection=0x%x", lfd, percon);
}

/* The stats count of an accepted connection; a listener adopted at start claims its slot
 * at its first accept (once, on one thread; others skip counting meanwhile). */
static void count_accepted(struct st_listener *L, int lfd)
{
	int slot = atomic_load_explicit(&L->stats_slot, memory_order_relaxed);
	if (slot == STATS_LATER && atomic_compare_exchange_strong(&L->stats_slot, &slot, STATS_CLAIMING)) {
		char addr[INET6_ADDRSTRLEN + 10];
		unsigned port;
		int family = local_addr(lfd, addr, sizeof addr, &port);
		slot = st_stats_listener(lfd, family, port, addr, 1,
		                         L->eff[O_RCVBUF] == NOT_SET ? -1 : L->eff[O_RCVBUF],
		                         L->eff[O_SNDBUF] == NOT_SET ? -1 : L->eff[O_SNDBUF]);
		atomic_store(&L->stats_slot, slot);
	}
	if (slot >= 0)
		st_stats_accepted(slot, lfd);
}

/* The options the listener carries for its connections (the app's own excepted). */
static uint32_t applied_mask(const struct st_listener *L, uint64_t lentry)
{
	uint32_t mask = 0;
	for (int i = 0; i < O_COUNT; i++)
		if (L->eff[i] != NOT_SET && !(opts[i].flags & F_LISTENER_ONLY) && !(lentry & app_bit(i)))
			mask |= 1u << i;
	return mask;
}

static void apply_percon(int fd, int family, uint32_t mask)
{
	struct st_err err;
	for (int i = 0; mask && i < O_COUNT; i++) {
		int level, optname, want;
		const char *label;
		if (!(mask & (1u << i)))
			continue;
		opt_sockopt(i, family, &level, &optname, &label);
		opt_want(i, &want);
		if (opts[i].flags & F_STRING)
			st_real.setsockopt(fd, level, optname, st_policy.congestion,
			                   (socklen_t)strlen(st_policy.congestion));
		else
			set_int(&err, fd, level, optname, label, want);
	}
}

void st_accepted(int lfd, int cfd)
{
	uint64_t e = st_fd_get(lfd);
	unsigned kind = ST_FD_KIND(e);
	uint64_t ce = 0;

	int adopted_now = kind == ST_FD_UNKNOWN || kind == ST_FD_TCP || kind == ST_FD_ADOPTING;
	if (adopted_now) {
		if (none_of_ours(e))
			return;
		if (!st_fd_fits(lfd))
			return; /* beyond the table: nothing can be remembered, so nothing is adopted */
		int copy;
		kind = ST_FD_KIND(e = adopt(lfd, e, &copy)); /* cfd itself was made before the tuning */
		adopted_now = !copy; /* ...unless lfd is a copy of a listener tuned already */
	}
	struct st_listener *L = record_of(e);
	if (L) {
		uint32_t percon;
		if (adopted_now || (atomic_load_explicit(&L->queued, memory_order_relaxed) > 0 &&
		                    atomic_fetch_sub(&L->queued, 1) > 0)) {
			percon = applied_mask(L, e); /* made before the tuning: set everything */
		} else {
			if (atomic_load_explicit(&L->checked, memory_order_acquire) != 2)
				check_inherit(L, e, lfd, cfd);
			/* while another thread checks the first connection, set everything */
			percon = atomic_load_explicit(&L->checked, memory_order_acquire) == 2
			                 ? atomic_load_explicit(&L->percon, memory_order_relaxed)
			                 : applied_mask(L, e);
		}
		if (percon)
			apply_percon(cfd, L->family, percon);
		if (atomic_load_explicit(&L->stats_slot, memory_order_relaxed) != -1)
			count_accepted(L, lfd);
		ce = ST_FD_CONN;
		if (st_on(&st_policy, ST_V_QUICKACK)) {
			/* Quick-ack is not sticky: the kernel drops back to delayed ACKs after a few
			 * segments, so it is armed here and re-armed after every receive. */
			struct st_err err;
			if (set_int(&err, cfd, IPPROTO_TCP, TCP_QUICKACK, "TCP_QUICKACK", 1) == 0)
				ce |= ST_FD_QUICKACK; /* refused (MPTCP says ENOPROTOOPT): no re-arm */
		}
		st_log(ST_LOG_DEBUG, "event=accept listener=%d fd=%d quickack=%d", lfd, cfd,
		       (ce & ST_FD_QUICKACK) ? 1 : 0);
	}
	replace_entry(cfd, ce);
}

/* A TCP connection received over a UNIX socket (SCM_RIGHTS: node's cluster module, any
 * primary that accepts for its workers) is governed like one accepted here: it came from a
 * listener, so it carries the listener's options already, but what accepted sockets do not
 * inherit (SO_PRIORITY) and quick-ack, which must be re-armed by the process that reads,
 * are this process's to do.  One TCP_INFO classifies the descriptor (only TCP answers it). */
static _Atomic int received_logged;

static void received_fd(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	memset(&ti, 0, sizeof ti);
	if (st_real.getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) {
		/* not TCP, or an MPTCP socket without TCP_INFO: left for listen() and accept() */
		if (errno != ENOTSOCK && errno != EBADF && is_tcp_proto(fd) && is_tcp_socket(fd))
			atomic_store_explicit(&st_fds_received, 1, memory_order_relaxed);
		replace_entry(fd, ST_FD_UNKNOWN); /* a stale entry under its number goes */
		return;
	}
	if (ti.tcpi_state == TCP_LISTEN || ti.tcpi_state == TCP_CLOSE) {
		/* a listener (a seamless reload hands them over) is adopted at its first accept,
		 * or is a copy of one tuned here; a socket not listening yet, at its listen() */
		atomic_store_explicit(&st_fds_received, 1, memory_order_relaxed);
		replace_entry(fd, ST_FD_UNKNOWN);
		return;
	}
	char addr[INET6_ADDRSTRLEN + 10] = "?";
	unsigned port = 0;
	int family = AF_INET, first = !atomic_load_explicit(&received_logged, memory_order_relaxed);
	if (st_has(&st_policy, ST_V_PORTS) || first || st_log_level >= ST_LOG_DEBUG)
		family = local_addr(fd, addr, sizeof addr, &port);
	if (dry_run() || (st_has(&st_policy, ST_V_PORTS) && !st_port_in(st_policy.ports, port))) {
		replace_entry(fd, ST_FD_UNKNOWN);
		return;
	}
	struct st_line line = {.n = 0};
	struct st_err err;
	uint64_t ce = ST_FD_CONN;
	for (int i = 0; i < O_COUNT; i++) {
		int level, optname, want;
		const char *label;
		if (!(opts[i].flags & F_NOT_INHERITED) || !opt_want(i, &want))
			continue;
		opt_sockopt(i, family, &level, &optname, &label);
		if (set_int(&err, fd, level, optname, label, want) == 0)
			st_line_add(&line, " %s=%d", opts[i].name, want);
	}
	if (st_on(&st_policy, ST_V_QUICKACK)) {
		/* armed now, re-armed after every receive, as on an accepted connection */
		int ok = set_int(&err, fd, IPPROTO_TCP, TCP_QUICKACK, "TCP_QUICKACK", 1) == 0;
		if (ok)
			ce |= ST_FD_QUICKACK;
		st_line_add(&line, " quickack=%d", ok);
	}
	replace_entry(fd, ce);
	first = first && !atomic_exchange(&received_logged, 1);
	st_log(first && line.n ? ST_LOG_INFO : ST_LOG_DEBUG, "event=receive fd=%d addr=%s%s%s", fd,
	       addr, line.b, first ? " first=1" : "");
}

void st_received(struct msghdr *msg)
{
	int saved = errno;
	unsigned headers = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c && headers < 64;
	     c = CMSG_NXTHDR(msg, c), headers++) {
		/* the kernel writes sane headers; a recvmsg() that is not the kernel's (another
		 * preload, a kernel-bypass stack) may not: never past msg_controllen */
		size_t room = (size_t)((char *)msg->msg_control + msg->msg_controllen - (char *)c);
		if (c->cmsg_len > room)
			break;
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t k = 0; k < n && k < 253; k++) { /* SCM_MAX_FD */
			int fd;
			memcpy(&fd, CMSG_DATA(c) + k * sizeof fd, sizeof fd);
			if (fd >= 0)
				received_fd(fd);
		}
	}
	errno = saved;
}

void st_rearm_quickack(int fd)
{
	int saved = errno;
	int one = 1;
	uint64_t e = st_fd_get(fd);
	if (st_real.setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one) == 0) {
		if (st_stats)
			count(&st_stats->quickack_rearms);
	} else if (errno == EBADF || errno == ENOTSOCK) {
		st_fd_cas(fd, &e, 0); /* closed behind our back; the number now names something else */
	} else {
		st_fd_cas(fd, &e, e & ~ST_FD_QUICKACK); /* refused (not TCP any more): stop trying */
	}
	errno = saved;
}

/* SO_REUSEPORT only counts when set before bind(). */
int st_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	int want;
	uint64_t e = st_fd_get(fd);
	struct sockaddr_storage ss;
	int saved = errno;
	if (!opt_want(O_REUSEPORT, &want) || dry_run() || ST_FD_KIND(e) != ST_FD_TCP ||
	    (app_wins() && (e & app_bit(O_REUSEPORT))))
		return st_real.bind(fd, addr, len);
	/* an inet address, or the entry outlived its socket (see still_tcp) */
	if (copy_addr(addr, len, &ss) != 0) {
		errno = saved;
		return st_real.bind(fd, addr, len);
	}
	if (st_has(&st_policy, ST_V_PORTS)) {
		char text[INET6_ADDRSTRLEN + 10];
		unsigned port;
		format_addr((struct sockaddr *)&ss, text, sizeof text, &port);
		if (!st_port_in(st_policy.ports, port))
			return st_real.bind(fd, addr, len);
	}
	int before;
	struct st_err err;
	int changed = get_int(fd, SOL_SOCKET, SO_REUSEPORT, &before) == 0 && before != want;
	if (changed && set_int(&err, fd, SOL_SOCKET, SO_REUSEPORT, "SO_REUSEPORT", want) != 0) {
		st_log(ST_LOG_WARN, "event=setsockopt option=reuseport fd=%d error=\"%s\"", fd, err.msg);
		changed = 0;
	}
	errno = saved;
	int r = st_real.bind(fd, addr, len);
	if (r != 0 && changed) { /* a failed bind() leaves the socket as it was */
		saved = errno;
		set_int(&err, fd, SOL_SOCKET, SO_REUSEPORT, "SO_REUSEPORT", before);
		errno = saved;
	}
	return r;
}

/* ---- outgoing connections (SOCKTUNE_CLIENT) ---- */

static _Atomic uint64_t client_ports_seen[ST_PORTS_WORDS];

int st_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	uint64_t e = st_fd_get(fd);
	struct sockaddr_storage ss;
	int saved = errno;
	if (!st_on(&st_policy, ST_V_CLIENT) || ST_FD_KIND(e) != ST_FD_TCP ||
	    copy_addr(addr, len, &ss) != 0) {
		errno = saved;
		return st_real.connect(fd, addr, len);
	}
	char text[INET6_ADDRSTRLEN + 10];
	unsigned port;
	if (format_addr((struct sockaddr *)&ss, text, sizeof text, &port) != 0 ||
	    (st_has(&st_policy, ST_V_CLIENT_PORTS) && !st_port_in(st_policy.client_ports, port))) {
		st_fd_cas(fd, &e, ST_FD_IGNORED);
		errno = saved;
		return st_real.connect(fd, addr, len);
	}
	st_log_flush_deferred();

	/* Before connect(): the buffers decide the window scale offered in the SYN. */
	struct st_line line = {.n = 0};
	int eff[O_COUNT];
	apply_all(fd, ss.ss_family, ST_FD_CLIENT, F_CLIENT, 0, e, &line, eff);
	int quickack = st_on(&st_policy, ST_V_QUICKACK) && !dry_run();
	if (quickack) {
		struct st_err err;
		set_int(&err, fd, IPPROTO_TCP, TCP_QUICKACK, "TCP_QUICKACK", 1);
		st_line_add(&line, " quickack=1");
	}
	st_fd_cas(fd, &e, ST_FD_CLIENT | (quickack ? ST_FD_QUICKACK : 0) |
	                      (app_wins() ? e & APP_BITS : 0));

	uint64_t bit = 1ull << (port % 64);
	int first = !(atomic_fetch_or(&client_ports_seen[port / 64], bit) & bit);
	st_log(first ? ST_LOG_INFO : ST_LOG_DEBUG, "event=client fd=%d peer=%s%s%s%s", fd, text,
	       line.b, first ? " first_for_port=1" : "", dry_run() ? " dry_run=1" : "");
	errno = saved;
	return st_real.connect(fd, addr, len);
}

/* ---- the app's own setsockopt() on a governed socket ---- */

int st_setsockopt(int fd, int level, int optname, const void *val, socklen_t len)
{
	uint64_t e = st_fd_get(fd);
	unsigned kind = ST_FD_KIND(e);
	int i = opt_lookup(level, optname);
	int want;

	if (kind < ST_FD_TCP || kind == ST_FD_ADOPTING || i < 0 || !opt_want(i, &want) ||
	    dry_run())
		return st_real.setsockopt(fd, level, optname, val, len);
	if ((kind == ST_FD_CONN || kind == ST_FD_CLIENT) && (opts[i].flags & F_LISTENER_ONLY))
		return st_real.setsockopt(fd, level, optname, val, len);
	if (kind == ST_FD_CLIENT && !(opts[i].flags & F_CLIENT))
		return st_real.setsockopt(fd, level, optname, val, len);

	/* The app's call goes to the kernel in every case, so that its result and errno are the
	 * kernel's own (a bad pointer, a value out of range). */
	int r = st_real.setsockopt(fd, level, optname, val, len);
	if (r != 0)
		return r;
	int saved = errno;
	if (!still_tcp(fd, e)) {
		errno = saved;
		return r;
	}
	if (kind == ST_FD_TCP || (app_wins() && kind == ST_FD_LISTENER)) {
		/* Not tuned yet (listen() or connect() will see the bit: precedence=app leaves the
		 * option alone, policy overwrites it and says so), or the app's own value wins. */
		st_fd_cas(fd, &e, e | app_bit(i)); /* unless closed and reused meanwhile */
	} else if (!app_wins()) {
		/* A tuned socket and the policy wins: its value goes back at once.  The kernel took
		 * the app's value, so that value was readable. */
		struct st_err err;
		if (opts[i].flags & F_STRING)
			st_real.setsockopt(fd, level, optname, st_policy.congestion,
			                   (socklen_t)strlen(st_policy.congestion));
		else if (!(i == O_RCVBUF && st_on(&st_policy, ST_V_RCVBUF_FORCE) &&
		           set_int(&err, fd, SOL_SOCKET, SO_RCVBUFFORCE, "SO_RCVBUFFORCE", want) == 0))
			set_int(&err, fd, level, /* the app's *FORCE variants map to the plain ones */
			        optname == SO_RCVBUFFORCE ? SO_RCVBUF
			        : optname == SO_SNDBUFFORCE ? SO_SNDBUF : optname,
			        opts[i].label, want);
		if (opts[i].flags & F_STRING) {
			char name[16];
			size_t n = strnlen(val, len < sizeof name - 1 ? len : sizeof name - 1);
			memcpy(name, val, n);
			name[n] = '\0';
			st_sanitize(name, name, sizeof name);
			note_override(fd, kind, i, 0, name);
		} else if (len >= sizeof(int)) {
			note_override(fd, kind, i, *(const int *)val, NULL);
		}
	}
	errno = saved;
	return r;
}

/* A vfork() child shares our memory until it execs: its close() of an inherited listener
 * or quick-ack connection must not clear the parent's entries.  Only entries whose loss
 * would matter pay the getpid() that tells. */
static pid_t st_pid;

static void forked_child(void)
{
	st_pid = getpid();
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
static int shares_our_memory(void)
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

int st_in_vfork_child(void)
{
	return shares_our_memory();
}

/* Whether [first, last] holds an entry a vfork child must not clear. */
static int in_vfork_child(unsigned first, unsigned last)
{
	struct st_fdmap *m = atomic_load_explicit(&st_fdmap, memory_order_acquire);
	unsigned high = m ? atomic_load_explicit(&m->high, memory_order_relaxed) : 0;
	for (unsigned fd = first; fd < high && fd <= last; fd++) {
		uint64_t e = atomic_load_explicit(&m->ent[fd], memory_order_relaxed);
		if (ST_FD_KIND(e) == ST_FD_LISTENER || (e & ST_FD_QUICKACK))
			return shares_our_memory();
	}
	return 0;
}

void st_duped(int oldfd, int newfd)
{
	int saved = errno;
	if (newfd < 0 || in_vfork_child((unsigned)newfd, (unsigned)newfd)) {
		errno = saved;
		return;
	}
	uint64_t e = st_fd_get(oldfd);
	/* a vfork child must not take a reference to its parent's record */
	if (ST_FD_KIND(e) == ST_FD_LISTENER && shares_our_memory()) {
		errno = saved;
		return;
	}
	st_closing((unsigned)newfd, (unsigned)newfd);
	/* newfd now names oldfd's socket: a listener's copy shares its record (found by the
	 * socket's inode, so an entry that outlived its socket is not copied) */
	if (ST_FD_KIND(e) != ST_FD_LISTENER)
		st_fd_set(newfd, e);
	else if (!share_listener(newfd, ST_FD_UNKNOWN, socket_ino(newfd)))
		st_fd_set(newfd, ST_FD_UNKNOWN); /* adopted at its first accept */
	errno = saved;
}

void st_closing(unsigned first, unsigned last)
{
	struct st_fdmap *m = atomic_load_explicit(&st_fdmap, memory_order_acquire);
	unsigned high = m ? atomic_load_explicit(&m->high, memory_order_relaxed) : 0;
	/* (the log's own number is often past the table's high mark: checked first) */
	int lfd = atomic_load_explicit(&st_log_fd, memory_order_relaxed);
	if (lfd >= 0 && (unsigned)lfd >= first && (unsigned)lfd <= last)
		st_log_fd_closed(first, last);
	if (first >= high)
		return;
	if (first == last) { /* close(): the common case, one entry */
		uint64_t e = atomic_load_explicit(&m->ent[first], memory_order_relaxed);
		if (!e || ((ST_FD_KIND(e) == ST_FD_LISTENER || (e & ST_FD_QUICKACK)) && shares_our_memory()))
			return;
		if (record_of(e))
			release_record(atomic_exchange_explicit(&m->ent[first], 0, memory_order_acq_rel));
		else
			atomic_store_explicit(&m->ent[first], 0, memory_order_release);
		return;
	}
	if (in_vfork_child(first, last))
		return;
	/* the entry first, then its record back to the pool: an accept() in flight on another
	 * thread never reads a record already handed to a new listener.  An entry with a record
	 * is taken by exchange, so that exactly one caller frees it; others (a connection, a
	 * socket not listening) are simply cleared: their number is not free before the real
	 * close, so nobody else writes them meanwhile. */
	for (unsigned fd = first; fd < high && fd <= last; fd++) {
		uint64_t e = atomic_load_explicit(&m->ent[fd], memory_order_relaxed);
		if (record_of(e))
			release_record(atomic_exchange_explicit(&m->ent[fd], 0, memory_order_acq_rel));
		else if (e)
			atomic_store_explicit(&m->ent[fd], 0, memory_order_release);
	}
}
