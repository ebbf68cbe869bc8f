/* What is applied, separate from where it is hooked: set the policy's options on a
 * listener, read back what the kernel made of them, explain every clamp, and do the little
 * that must be done per accepted connection. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

/* Options set on the listener.  "inherited": the kernel copies the listener's value into
 * every accepted socket (sk_clone), so nothing is done per connection unless the first
 * accepted connection shows otherwise. */
enum { OPT_RCVBUF, OPT_SNDBUF, OPT_NODELAY, OPT_COUNT };

struct st_opt {
	const char *name;
	enum st_var_id var;
	int level, optname;
	const char *optlabel;
	int is_buffer; /* the kernel reports twice the request and clamps it to a sysctl */
	const char *limit; /* that sysctl */
};

static const struct st_opt opts[OPT_COUNT] = {
	[OPT_RCVBUF] = {"rcvbuf", ST_V_RCVBUF, SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF", 1,
	                "net.core.rmem_max"},
	[OPT_SNDBUF] = {"sndbuf", ST_V_SNDBUF, SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF", 1,
	                "net.core.wmem_max"},
	[OPT_NODELAY] = {"nodelay", ST_V_NODELAY, IPPROTO_TCP, TCP_NODELAY, "TCP_NODELAY", 0, NULL},
};

struct st_listener {
	_Atomic int used;
	_Atomic int checked; /* 0: no connection accepted yet, 1: being checked, 2: checked */
	_Atomic uint32_t percon; /* OPT_* bits that did not reach accepted sockets */
	int eff[OPT_COUNT];      /* what the kernel reports on the listener */
};

static struct st_listener listeners[ST_MAX_LISTENERS];

/* ---- small helpers, each a syscall and a message ---- */

struct st_err {
	char msg[160];
};

static int set_int(struct st_err *e, int fd, int level, int opt, const char *label, int val)
{
	if (st_real.setsockopt(fd, level, opt, &val, sizeof val) == 0)
		return 0;
	snprintf(e->msg, sizeof e->msg, "setsockopt %s: %s", label, strerror(errno));
	return -1;
}

static int get_int(int fd, int level, int opt, int *val)
{
	socklen_t len = sizeof *val;
	*val = 0;
	return st_real.getsockopt(fd, level, opt, val, &len);
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

static void format_addr(const struct sockaddr_storage *ss, char *out, size_t n, unsigned *port)
{
	char host[INET6_ADDRSTRLEN] = "?";
	*port = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
		*port = ntohs(a->sin_port);
		snprintf(out, n, "%s:%u", host, *port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
		*port = ntohs(a->sin6_port);
		snprintf(out, n, "[%s]:%u", host, *port);
	} else {
		snprintf(out, n, "?");
	}
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

void st_socket_made(int fd, int domain, int type, int protocol)
{
	if (in_scope(domain, type, protocol))
		st_fd_set(fd, ST_FD_TCP);
	else if (st_fd_get(fd) != ST_FD_IGNORED)
		st_fd_set(fd, ST_FD_IGNORED); /* a no-op until a table exists */
}

static int want_backlog(int app)
{
	const struct st_policy *p = &st_policy;
	if (st_has(p, ST_V_BACKLOG))
		return (int)p->num[ST_V_BACKLOG];
	/* listen(fd, -1) asks for the kernel's maximum */
	long long want = app < 0 ? INT_MAX : app;
	if (st_has(p, ST_V_BACKLOG_MIN) && want < p->num[ST_V_BACKLOG_MIN])
		want = p->num[ST_V_BACKLOG_MIN];
	if (st_has(p, ST_V_BACKLOG_MAX) && want > p->num[ST_V_BACKLOG_MAX])
		want = p->num[ST_V_BACKLOG_MAX];
	return (int)want;
}

static int backlog_governed(void)
{
	return st_has(&st_policy, ST_V_BACKLOG) || st_has(&st_policy, ST_V_BACKLOG_MIN) ||
	       st_has(&st_policy, ST_V_BACKLOG_MAX);
}

static struct st_listener *listener_alloc(unsigned *index)
{
	for (unsigned i = 0; i < ST_MAX_LISTENERS; i++) {
		int expect = 0;
		if (atomic_compare_exchange_strong(&listeners[i].used, &expect, 1)) {
			atomic_store(&listeners[i].checked, 0);
			atomic_store(&listeners[i].percon, 0);
			*index = i;
			return &listeners[i];
		}
	}
	return NULL;
}

/* Set one listener option and read it back.  Returns the effective value, or -1. */
static int apply_opt(int fd, int i, struct st_line *line)
{
	const struct st_opt *o = &opts[i];
	const struct st_policy *p = &st_policy;
	int want = (int)p->num[o->var];
	struct st_err e;
	int forced = 0;

	if (i == OPT_RCVBUF && st_on(p, ST_V_RCVBUF_FORCE)) {
		if (set_int(&e, fd, SOL_SOCKET, SO_RCVBUFFORCE, "SO_RCVBUFFORCE", want) == 0)
			forced = 1;
		else
			st_log(ST_LOG_WARN,
			       "event=force-fallback option=rcvbuf fd=%d error=\"%s\" action=SO_RCVBUF "
			       "fix=\"grant CAP_NET_ADMIN to use SO_RCVBUFFORCE\"",
			       fd, e.msg);
	}
	if (!forced && set_int(&e, fd, o->level, o->optname, o->optlabel, want) != 0) {
		st_log(ST_LOG_WARN, "event=setsockopt option=%s fd=%d want=%d error=\"%s\" action=skipped",
		       o->name, fd, want, e.msg);
		return -1;
	}
	int eff;
	if (get_int(fd, o->level, o->optname, &eff) != 0)
		return -1;

	if (!o->is_buffer) {
		st_line_add(line, " %s=%d", o->name, eff);
		return eff;
	}
	st_line_add(line, " %s.want=%d %s.effective=%d", o->name, want, o->name, eff);
	/* The kernel doubles the request (bookkeeping overhead); less than double is a clamp. */
	if ((long long)eff < 2LL * want) {
		long long max = st_sysctl_num(o->limit, -1);
		char fix[160];
		if (i == OPT_RCVBUF)
			snprintf(fix, sizeof fix,
			         "sysctl -w %s=%d, or CAP_NET_ADMIN with SOCKTUNE_RCVBUF_FORCE=1", o->limit,
			         want);
		else
			snprintf(fix, sizeof fix, "sysctl -w %s=%d", o->limit, want);
		st_log(ST_LOG_WARN, "event=clamp option=%s fd=%d want=%d effective=%d limit=%s:%lld fix=\"%s\"",
		       o->name, fd, want, eff, o->limit, max, fix);
	}
	return eff;
}

enum { TUNED, SKIPPED, FAILED };

/* Apply the policy to a listener: from the listen() hook (adopting = 0: set the options,
 * then call the real listen() with the policy's backlog) or to a socket already listening
 * (adopting = 1: listen() again only when the backlog policy changes the number). */
static int tune_listener(int fd, int app_backlog, int adopting, int *result)
{
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof ss;
	memset(&ss, 0, sizeof ss);
	char addr[INET6_ADDRSTRLEN + 10];
	unsigned port;
	getsockname(fd, (struct sockaddr *)&ss, &sslen);
	format_addr(&ss, addr, sizeof addr, &port);

	if (st_has(&st_policy, ST_V_PORTS) && !st_port_in(&st_policy, port)) {
		st_fd_set(fd, ST_FD_IGNORED);
		st_log(ST_LOG_DEBUG, "event=skip fd=%d addr=%s reason=ports", fd, addr);
		return SKIPPED;
	}
	st_log_flush_deferred();

	struct st_line line = {.n = 0};
	int eff[OPT_COUNT];
	for (int i = 0; i < OPT_COUNT; i++)
		eff[i] = st_has(&st_policy, opts[i].var) ? apply_opt(fd, i, &line) : -1;

	int want = -1;
	if (adopting) {
		app_backlog = listen_backlog(fd);
		if (backlog_governed() && want_backlog(app_backlog) != app_backlog)
			want = want_backlog(app_backlog);
	} else {
		want = want_backlog(app_backlog);
	}
	*result = 0;
	if (want >= 0 && (*result = st_real.listen(fd, want)) != 0) {
		int saved = errno;
		st_log(ST_LOG_DEBUG, "event=listen-failed fd=%d addr=%s error=\"%s\"", fd, addr,
		       strerror(saved));
		errno = saved;
		return FAILED;
	}

	struct st_line head = {.n = 0};
	st_line_add(&head, "event=%s fd=%d addr=%s", adopting ? "adopt" : "listen", fd, addr);
	if (backlog_governed()) {
		int effective = listen_backlog(fd);
		int w = want >= 0 ? want : app_backlog;
		st_line_add(&head, " backlog.app=%d backlog.want=%d backlog.effective=%d", app_backlog, w,
		            effective);
		if (effective >= 0 && effective < w)
			st_log(ST_LOG_WARN,
			       "event=clamp option=backlog fd=%d want=%d effective=%d "
			       "limit=net.core.somaxconn:%lld fix=\"sysctl -w net.core.somaxconn=%d\"",
			       fd, w, effective, st_sysctl_num("net.core.somaxconn", -1), w);
	}
	if (st_has(&st_policy, ST_V_QUICKACK))
		st_line_add(&line, " quickack=%d", (int)st_policy.num[ST_V_QUICKACK]);
	st_log(ST_LOG_INFO, "%s%s", head.b, line.b);

	unsigned index;
	struct st_listener *L = listener_alloc(&index);
	if (!L) {
		/* Tuned all the same; only the inheritance check and quick-ack are lost. */
		st_log(ST_LOG_WARN, "event=listener-table-full fd=%d max=%d", fd, ST_MAX_LISTENERS);
		st_fd_set(fd, ST_FD_IGNORED);
		return TUNED;
	}
	memcpy(L->eff, eff, sizeof eff);
	st_fd_set(fd, ST_FD_LISTENER | ((index + 1) << ST_FD_REC_SHIFT));
	return TUNED;
}

int st_listen(int fd, int backlog)
{
	uint32_t e = st_fd_get(fd);
	unsigned kind = e & ST_FD_KIND_MASK;

	if (kind == ST_FD_LISTENER) /* listen() again: only the backlog changes */
		return st_real.listen(fd, backlog_governed() ? want_backlog(backlog) : backlog);
	int saved = errno;
	if (kind == ST_FD_IGNORED || (kind != ST_FD_TCP && !is_tcp_socket(fd))) {
		st_fd_set(fd, ST_FD_IGNORED);
		errno = saved;
		return st_real.listen(fd, backlog);
	}
	int result;
	switch (tune_listener(fd, backlog, 0, &result)) {
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
static uint32_t adopt(int lfd)
{
	int listening;
	if (!is_tcp_socket(lfd) || get_int(lfd, SOL_SOCKET, SO_ACCEPTCONN, &listening) != 0 ||
	    !listening) {
		st_fd_set(lfd, ST_FD_IGNORED);
		return ST_FD_IGNORED;
	}
	int result;
	tune_listener(lfd, -1, 1, &result);
	return st_fd_get(lfd);
}

/* On the first connection accepted from a listener, check that the kernel copied each
 * option; where it did not, apply that option per connection from then on. */
static void check_inherit(struct st_listener *L, int lfd, int cfd)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong(&L->checked, &expect, 1))
		return;
	uint32_t percon = 0;
	for (int i = 0; i < OPT_COUNT; i++) {
		int got;
		if (L->eff[i] < 0 || get_int(cfd, opts[i].level, opts[i].optname, &got) != 0)
			continue;
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

void st_accepted(int lfd, int cfd)
{
	uint32_t e = st_fd_get(lfd);
	unsigned kind = e & ST_FD_KIND_MASK;
	uint32_t ce = 0;

	if (kind == ST_FD_UNKNOWN || kind == ST_FD_TCP)
		kind = (e = adopt(lfd)) & ST_FD_KIND_MASK;
	if (kind == ST_FD_LISTENER && (e >> ST_FD_REC_SHIFT) != 0) {
		struct st_listener *L = &listeners[(e >> ST_FD_REC_SHIFT) - 1];
		if (atomic_load_explicit(&L->checked, memory_order_acquire) != 2)
			check_inherit(L, lfd, cfd);
		uint32_t percon = atomic_load_explicit(&L->percon, memory_order_relaxed);
		struct st_err err;
		for (int i = 0; percon && i < OPT_COUNT; i++)
			if (percon & (1u << i))
				set_int(&err, cfd, opts[i].level, opts[i].optname, opts[i].optlabel,
				        (int)st_policy.num[opts[i].var]);
		if (st_on(&st_policy, ST_V_QUICKACK)) {
			/* Quick-ack is not sticky: the kernel drops back to delayed ACKs after a few
			 * segments, so it is armed here and re-armed after every receive. */
			set_int(&err, cfd, IPPROTO_TCP, TCP_QUICKACK, "TCP_QUICKACK", 1);
			ce = ST_FD_CONN | ST_FD_QUICKACK;
		}
		st_log(ST_LOG_DEBUG, "event=accept listener=%d fd=%d quickack=%d", lfd, cfd,
		       ce ? 1 : 0);
	}
	if (st_fd_get(cfd) != ce)
		st_fd_set(cfd, ce);
}

void st_rearm_quickack(int fd)
{
	int saved = errno;
	int one = 1;
	if (st_real.setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one) != 0 &&
	    (errno == EBADF || errno == ENOTSOCK))
		st_fd_set(fd, 0); /* closed behind our back; the number now names something else */
	errno = saved;
}

void st_closing(unsigned first, unsigned last)
{
	struct st_fdmap *m = atomic_load_explicit(&st_fdmap, memory_order_acquire);
	unsigned high = m ? atomic_load_explicit(&m->high, memory_order_relaxed) : 0;
	for (unsigned fd = first; fd < high && fd <= last; fd++) {
		uint32_t e = atomic_load_explicit(&m->ent[fd], memory_order_relaxed);
		if ((e & ST_FD_KIND_MASK) == ST_FD_LISTENER && (e >> ST_FD_REC_SHIFT))
			atomic_store(&listeners[(e >> ST_FD_REC_SHIFT) - 1].used, 0);
	}
	st_fd_forget(first, last);
	st_log_fd_closed(first, last);
}
