/* Listeners: the listen() hook's body (options set before the real listen(), so that
 * SO_RCVBUF decides the window scale of the SYN-ACK; the backlog policy; what is in force,
 * read back and logged), a second listen(), listeners inherited at exec, and bind() for
 * SO_REUSEPORT. */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tune.h"

static _Atomic int fastopen_warned; /* said once per process */

static int want_backlog(int app)
{
	return st_backlog_want(&st_policy, app);
}

static int backlog_governed(void)
{
	return st_backlog_governed(&st_policy);
}

/* Whether the policy sets anything on listeners: with nothing set (only logging, say) a
 * listener is not tuned, and its line is debug, not info. */
static int tunes_listeners(void)
{
	return st_policy_tunes_listeners(&st_policy);
}


/* net.ipv4.tcp_fastopen lacks the server bit (its own frame: the listen hook's stays small). */
__attribute__((noinline, cold)) static void warn_fastopen(long long tfo)
{
	char fix[96], keys[2 * 96 + 24], value[40] = "";
	st_fix_fastopen(tfo, fix, sizeof fix);
	st_fix_keys(fix, keys, sizeof keys);
	if (tfo >= 0)
		snprintf(value, sizeof value, " limit_value=%lld", tfo);
	st_log(ST_LOG_WARN, "event=fastopen-disabled limit=net.ipv4.tcp_fastopen%s%s", value, keys);
}

/* net.core.somaxconn cut the backlog the policy wants. */
__attribute__((noinline, cold)) static void warn_backlog_clamp(int fd, int want, long long effective,
                                                             long long somaxconn, const char *dry,
                                                             int warn)
{
	char fix[96], keys[2 * 96 + 24], value[40] = "";
	st_fix_somaxconn(want, fix, sizeof fix);
	st_fix_keys(fix, keys, sizeof keys);
	if (somaxconn >= 0)
		snprintf(value, sizeof value, " limit_value=%lld", somaxconn);
	st_log(warn ? ST_LOG_WARN : ST_LOG_DEBUG,
	       "event=clamp option=backlog fd=%d want=%d effective=%lld limit=net.core.somaxconn%s%s%s",
	       fd, want, effective, value, keys, dry);
}

/* SOCKTUNE_BACKLOG gave less than the program asked for (listen(fd, -1): somaxconn, said as
 * somaxconn=N beside backlog.app=-1). */
__attribute__((noinline, cold)) static void warn_backlog_lowered(int fd, const char *addr,
                                                               int app_backlog, int want,
                                                               long long somaxconn,
                                                               const char *dry, int warn)
{
	char means[32] = "", lowered[64], keys[2 * 64 + 24];
	if (app_backlog < 0 && somaxconn >= 0)
		snprintf(means, sizeof means, " somaxconn=%lld", somaxconn);
	st_fix_backlog_lowered(want, lowered, sizeof lowered);
	st_fix_keys(lowered, keys, sizeof keys);
	st_log(warn ? ST_LOG_WARN : ST_LOG_DEBUG,
	       "event=backlog-lowered fd=%d addr=%s backlog.app=%d%s backlog.want=%d%s%s", fd, addr,
	       app_backlog, means, want, keys, dry);
}

/* " backlog.app=-2147483648 backlog.want=... backlog.effective=... backlog.now=...": 4 keys
 * of at most 30 bytes */
#define BACKLOG_KEYS_MAX 128

/* The backlog keys of a listen line into keys (a small buffer: they are a few numbers), and
 * the clamp warning when somaxconn cut the number. */
static void add_backlog(char *keys, size_t n, int fd, const char *addr, int app_backlog, int want,
                        int effective, const char *dry, int warn)
{
	long long somaxconn = st_sysctl_num("net.core.somaxconn", -1);
	/* a dry run passed the app's backlog on: effective is what the policy's would give (the
	 * clamp line's number), now what the socket has */
	if (*dry)
		snprintf(keys, n, " backlog.app=%d backlog.want=%d backlog.effective=%lld backlog.now=%d",
		         app_backlog, want, st_dry_backlog(want, somaxconn), effective);
	else
		snprintf(keys, n, " backlog.app=%d backlog.want=%d backlog.effective=%d", app_backlog,
		         want, effective);
	int clamped = want >= 0 && (*dry ? st_dry_backlog(want, somaxconn) < want
	                                 : (effective >= 0 && effective < want));
	if (clamped)
		warn_backlog_clamp(fd, want, *dry ? somaxconn : effective, somaxconn, dry, warn);
	/* SOCKTUNE_BACKLOG replaces: a server that asked for more (squid 5000, h2o 65535,
	 * -1 = somaxconn) gets less, which the operator rarely meant. */
	long long asked = app_backlog < 0 ? somaxconn : app_backlog;
	if (st_has(&st_policy, ST_V_BACKLOG) && want >= 0 && asked > want)
		warn_backlog_lowered(fd, addr, app_backlog, want, somaxconn, dry, warn);
}


/* What the listen (or adopt) line says beside the tuning's own keys */
struct listen_said {
	int fd, adopting, app_backlog, want, unchanged, ephemeral;
};

/* The listen or adopt line: its head (the event, the address, the backlog's stages), then
 * what the tuning said (line).  A function of its own, with the backlog's keys in a small
 * buffer, so that little is on the stack beside line and the log's own (t_smallstack: the
 * deepest paths are a line said from inside st_tune, and this one). */
__attribute__((noinline)) static void say_listener(const struct listen_said *s, const char *addr,
                                                   const char *dry, const struct st_line *line)
{
	int app_call = s->adopting == 0 || s->adopting == RELISTEN_UNTRACKED;
	char backlog[BACKLOG_KEYS_MAX] = "";
	if (backlog_governed())
		add_backlog(backlog, sizeof backlog, s->fd, addr, s->app_backlog, s->want,
		            st_listen_backlog(&st_ops, s->fd), dry, !s->unchanged);
	st_log(tunes_listeners() && !s->unchanged ? ST_LOG_INFO : ST_LOG_DEBUG,
	       "event=%s fd=%d addr=%s%s%s%s%s%s%s", app_call ? "listen" : "adopt", s->fd, addr,
	       s->adopting == RELISTEN_UNTRACKED ? " relisten=1" : "", backlog, line->b,
	       s->unchanged ? " unchanged=1" : "", s->ephemeral ? " ephemeral=1" : "", dry);
}

/* Apply the policy to a listener: from the listen() hook (adopting = 0: set the options,
 * then call the real listen() with the policy's backlog; RELISTEN_UNTRACKED the same on a
 * socket listening already) or to a socket already listening (adopting = 1 or
 * ADOPT_AT_START: listen() again only when the backlog policy changes the number). */
int st_tune_listener(int fd, int app_backlog, int adopting, int *result)
{
	char addr[ST_ADDR_MAX];
	unsigned port;
	int family = st_local_addr(fd, addr, sizeof addr, &port);
	uint64_t entry = st_fd_get(fd);
	uint64_t app = entry;
	const char *dry = st_dry_run() ? " dry_run=1" : "";

	if (st_has(&st_policy, ST_V_PORTS) && !st_port_in(st_policy.ports, port)) {
		st_fd_cas(fd, &entry, ST_FD_IGNORED); /* unless closed and reused meanwhile */
		st_log(ST_LOG_DEBUG, "event=skip fd=%d addr=%s reason=ports", fd, addr);
		return SKIPPED;
	}
	st_log_flush_deferred();

	struct st_line line = {.n = 0};
	int eff[ST_O_COUNT], before[ST_O_COUNT];
	int app_call = adopting == 0 || adopting == RELISTEN_UNTRACKED, tuned_before = 0;
	if (!app_call) {
		st_read_current(&st_ops, fd, family, &st_policy, before);
		tuned_before = !*dry && st_is_applied(&st_policy, before);
	}
	if (tuned_before) {
		/* the parent that exec'd us tuned it (and said so, clamps included): nothing to set */
		for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
			eff[i] = before[i];
			if (before[i] != ST_UNREAD && (st_sockopts[i].flags & ST_O_NAME))
				st_line_add(&line, " %s=%s", ST_KEY(i), st_opt_name(&st_policy, i));
			else if (before[i] != ST_UNREAD && (st_sockopts[i].flags & ST_O_BUFFER))
				st_line_add(&line, " %s.effective=%d", ST_KEY(i), before[i]);
			else if (before[i] != ST_UNREAD && st_opt_unit(i))
				st_line_add(&line, " %s_%s.effective=%d", ST_KEY(i), st_opt_unit(i), before[i]);
			else if (before[i] != ST_UNREAD && i < ST_V_COUNT && st_vars[i].type == ST_T_BOOL)
				st_line_add(&line, " %s=%d", ST_KEY(i), before[i] != 0);
			else if (before[i] != ST_UNREAD)
				st_line_add(&line, " %s=%d", ST_KEY(i), before[i]);
		}
	} else {
		/* Before listen(): SO_RCVBUF decides the window scale offered in the SYN-ACK. */
		st_tune(fd, family, ST_FD_LISTENER, 0, ST_O_BEFORE_BIND | ST_O_CLIENT_ONLY, app, &line,
		        eff);
	}
	st_line_before_bind(fd, family, &line); /* what bind() set: reuseport=1 */
	/* (an unreadable sysctl counts as off: said, without limit_value) */
	long long tfo = st_has(&st_policy, ST_V_FASTOPEN) && !tuned_before
	                        ? st_sysctl_num("net.ipv4.tcp_fastopen", -1) : 2;
	if (!st_fastopen_server_on(tfo) && !atomic_exchange(&fastopen_warned, 1))
		warn_fastopen(tfo);

	/* An adopted socket listens already: listen() again only to change its backlog. */
	if (!app_call)
		app_backlog = st_listen_backlog(&st_ops, fd);
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
	for (int i = 0; unchanged && i < ST_O_COUNT; i++)
		if (eff[i] != ST_UNREAD && eff[i] != before[i])
			unchanged = 0;

	/* A port the kernel picked (a startup probe, an admin or RPC socket on port 0) is marked
	 * ephemeral=1: listen() on an unbound socket (st_local_addr() saw port 0 before it), or,
	 * when SOCKTUNE_PORTS names none, a port in ip_local_port_range.  Still logged at info:
	 * a server told to use port 0 (a test harness, a dynamic-port platform) looks like a probe
	 * at listen(), and bind() is not asked (that would cost it a syscall). */
	int ephemeral = 0;
	if (adopting == 0 && port == 0) {
		st_local_addr(fd, addr, sizeof addr, &port); /* the port listen() picked */
		ephemeral = 1;
	} else if (!st_has(&st_policy, ST_V_PORTS)) {
		ephemeral = st_port_ephemeral(port);
	}
	if (st_has(&st_policy, ST_V_QUICKACK))
		st_line_add(&line, " quickack=%d", (int)st_policy.num[ST_V_QUICKACK]);
	struct listen_said said = {fd, adopting, app_backlog, want, unchanged, ephemeral};
	say_listener(&said, addr, dry, &line);

	unsigned index;
	struct st_listener *L = *dry || !st_fd_fits(fd) ? NULL : st_listener_alloc(&index);
	if (!L) {
		/* A dry run, a descriptor beyond the table, or the table is full: only the
		 * per-connection work is skipped. */
		if (!*dry && st_fd_fits(fd))
			st_log(ST_LOG_WARN, "event=listener-table-full fd=%d slots=%d", fd, ST_MAX_LISTENERS);
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
	int queued = adopting ? st_accept_queue(&st_ops, fd) : 0;
	if (queued > 0)
		atomic_store(&L->queued, queued);
	/* A listener found at start may only be inherited by a process that never serves it (a
	 * child the server runs without closing its listeners first): its stats slot, and the
	 * stats file, are claimed by the process that accepts on it (count_accepted). */
	L->stats_slot = adopting == ADOPT_AT_START
	                        ? STATS_LATER
	                        : st_stats_listener(fd, family, port, addr, adopting != 0,
	                                  eff[ST_V_RCVBUF] == ST_UNREAD ? -1 : eff[ST_V_RCVBUF],
	                                  eff[ST_V_SNDBUF] == ST_UNREAD ? -1 : eff[ST_V_SNDBUF]);
	/* complete: from now on a copy of the listener finds the record (share_listener) */
	atomic_store_explicit(&L->ino, st_socket_ino(fd), memory_order_release);
	/* precedence=app: the options the app set stay the app's on this listener's
	 * connections too (not checked, not set per connection); with policy they were
	 * overwritten above and are the policy's like any other */
	uint64_t v = ST_FD_LISTENER | (st_app_wins() ? entry & APP_BITS : 0) |
	             ((uint64_t)(index + 1) << ST_FD_REC_SHIFT);
	if (!st_fd_cas(fd, &entry, v))
		st_release_record(v); /* closed (and maybe reused) while we tuned it */
	return TUNED;
}

/* listen() again on a tuned listener: only the backlog changes.  When the number in force
 * changes, the log says so, read back with TCP_INFO like the first time (relisten=1). */
static int relisten(int fd, int backlog, int saved)
{
	int before = st_listen_backlog(&st_ops, fd), want = want_backlog(backlog);
	errno = saved;
	int r = st_real.listen(fd, want);
	if (r != 0)
		return r;
	int after = st_listen_backlog(&st_ops, fd);
	char addr[ST_ADDR_MAX];
	unsigned port;
	char keys[BACKLOG_KEYS_MAX];
	st_local_addr(fd, addr, sizeof addr, &port);
	add_backlog(keys, sizeof keys, fd, addr, backlog, want, after, "", 1);
	st_log(after != before ? ST_LOG_INFO : ST_LOG_DEBUG, "event=listen fd=%d addr=%s relisten=1%s",
	       fd, addr, keys);
	errno = saved;
	return 0;
}

int st_listen(int fd, int backlog)
{
	/* Another thread may hold the number's entry for a moment: adopting at its accept() a
	 * connection of the listener the number named before (it finds this socket not
	 * listening and leaves the entry as it was), or closing that listener.  Waited for, so
	 * that this listen() is not taken for a socket someone else tunes. */
	uint64_t e;
	int claims = 0;
again:
	e = st_fd_settled(fd, st_fd_get(fd));
	unsigned kind = ST_FD_KIND(e);

	int saved = errno;
	if (kind == ST_FD_LISTENER && backlog_governed() && !st_dry_run() && st_still_tcp(fd, e))
		return relisten(fd, backlog, saved);
	if (kind == ST_FD_LISTENER) {
		errno = saved;
		return st_real.listen(fd, backlog);
	}
	/* A socket of unknown kind is looked at here (one getsockopt: only TCP sockets say
	 * IPPROTO_TCP), never assumed not ours: it may have come by a way no hook saw (made by a
	 * signal handler while init ran, by io_uring, inherited while the scan was cut short).
	 * Unless a hook saw it made as a socket the policy never governs (a UNIX or UDP one:
	 * st_fd_other): then the kernel is not asked what the library knows, and a server of
	 * UNIX sockets pays no syscall at all, and gets no table (st_none_of_ours). */
	if (kind == ST_FD_IGNORED || kind == ST_FD_CONN || kind == ST_FD_CLIENT ||
	    kind == ST_FD_ADOPTING || kind == ST_FD_CLOSING ||
	    (kind == ST_FD_UNKNOWN && st_fd_other(fd))) {
		errno = saved;
		return st_real.listen(fd, backlog);
	}
	if (kind != ST_FD_TCP && !st_is_tcp_proto(fd)) {
		st_fd_set_other(fd, 1); /* (its second listen() asks nothing) */
		if (!st_none_of_ours(e))
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
	if (!have_info && !st_still_tcp(fd, e)) {
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
	if (listening && st_share_listener(fd, e, st_socket_ino(fd))) {
		if (backlog_governed() && !st_dry_run())
			return relisten(fd, backlog, saved);
		errno = saved;
		return st_real.listen(fd, backlog);
	}
	/* Claimed while it is tuned (adopting, the app's own bits kept): an accept() on this
	 * number meanwhile, which returns a connection of the listener the number named before,
	 * waits for the tuning instead of adopting the socket halfway through it.  The entry
	 * changed since it was read (closed, reused, another thread's): read again. */
	uint64_t claimed = ST_FD_ADOPTING | (e & APP_BITS), expect = e;
	atomic_fetch_add(&st_fd_held, 1); /* (before the claim: a fork meanwhile sees it) */
	if (!st_fd_fits(fd)) {
		claimed = e; /* (a number beyond the table: no entry to claim, none an accept reads) */
	} else if (!st_fd_cas(fd, &expect, claimed)) {
		if (++claims < 4) {
			atomic_fetch_sub(&st_fd_held, 1);
			errno = saved;
			goto again;
		}
		/* still changing under us: tuned unclaimed rather than left untuned */
		claimed = e = st_fd_get(fd);
	}
	int result, r;
	switch (st_tune_listener(fd, backlog, listening ? RELISTEN_UNTRACKED : 0, &result)) {
	case SKIPPED:
		atomic_fetch_sub(&st_fd_held, 1);
		errno = saved;
		return st_real.listen(fd, backlog);
	case FAILED:
		saved = errno; /* the real listen()'s: the entry is as it was, the call's result too */
		st_fd_cas(fd, &claimed, e);
		r = result;
		break;
	default:
		r = result;
		break;
	}
	atomic_fetch_sub(&st_fd_held, 1);
	errno = saved;
	return r;
}

/* Listeners inherited at exec (socket activation, a supervisor, an upgrade handing its
 * sockets on) are found at start, so that a server which accepts them only through
 * io_uring (no accept() hook ever runs) still gets the listener options.  One bounded pass
 * over /proc/self/fd: an fstat per descriptor, getsockopt only for sockets.
 *
 * A TCP socket inherited before it listens (a supervisor binds, the program it execs or
 * spawns calls listen(): Python prefork servers start their workers so) gets an entry of a
 * TCP socket, like one made through socket(): its listen() is tuned, and the table it
 * makes tells listen() and accept() that this process has sockets of ours. */

static void adopt_found(int fd, const struct stat *st, int listening, void *ctx)
{
	(void)ctx;
	uint64_t e = ST_FD_UNKNOWN;
	int result;
	if (st_fd_get(fd))
		return;
	if (!listening) {
		if (!st_is_tcp_proto(fd))
			st_fd_set_other(fd, 1); /* (an inherited UNIX socket: asked once, here) */
		else if (st_tcp_state(fd) == TCP_CLOSE)
			st_fd_cas(fd, &e, ST_FD_TCP);
		return;
	}
	if (!st_is_tcp_socket(fd)) {
		st_fd_set_other(fd, 1);
		return;
	}
	if (!st_fd_fits(fd) || !st_fd_cas(fd, &e, ST_FD_ADOPTING) ||
	    st_share_listener(fd, ST_FD_ADOPTING, (unsigned long)st->st_ino))
		return;
	st_tune_listener(fd, -1, ADOPT_AT_START, &result);
	e = ST_FD_ADOPTING; /* not tuned (outside SOCKTUNE_PORTS, or it failed) */
	st_fd_cas(fd, &e, ST_FD_IGNORED);
}

void st_adopt_inherited(void)
{
	if (!tunes_listeners()) {
		st_inherited_scanned = 1; /* nothing to tune, nothing to adopt */
		return;
	}
	/* With precedence=app, what the app set on its listener stays: a child that merely
	 * inherits its parent's listener (run without closing it first) must not overwrite the
	 * parent app's values.  Such listeners are adopted at their first accept instead. */
	if (st_app_wins())
		return;
	/* Without /proc, or past the pass's bound, some descriptors were not looked at: no fast
	 * path then, listeners are adopted at their first accept and sockets classified at
	 * their listen(). */
	if (st_each_socket_fd(adopt_found, NULL) != 0)
		return;
	st_inherited_scanned = 1;
}

/* Options that only count when set before bind() (SO_REUSEPORT, IP_FREEBIND, ...): set
 * here, before the real bind(); a bind() that fails leaves the socket as it was. */
int st_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	uint64_t e = st_fd_get(fd);
	struct sockaddr_storage ss;
	int saved = errno;
	if (ST_FD_KIND(e) != ST_FD_TCP || st_dry_run() || !st_policy_sets(ST_O_BEFORE_BIND))
		return st_real.bind(fd, addr, len);
	/* an inet address, or the entry outlived its socket (see still_tcp) */
	if (st_copy_addr(addr, len, &ss) != 0) {
		errno = saved;
		return st_real.bind(fd, addr, len);
	}
	if (st_has(&st_policy, ST_V_PORTS)) {
		char text[ST_ADDR_MAX];
		unsigned port;
		st_format_addr((struct sockaddr *)&ss, text, sizeof text, &port);
		if (!st_port_in(st_policy.ports, port)) {
			errno = saved;
			return st_real.bind(fd, addr, len);
		}
	}
	struct st_bind_undo undo;
	st_tune_bind(fd, ss.ss_family, e, &undo);
	errno = saved;
	int r = st_real.bind(fd, addr, len);
	if (r != 0 && undo.changed) {
		saved = errno;
		st_untune_bind(fd, ss.ss_family, &undo);
		errno = saved;
	}
	return r;
}
