/* Accepted connections: a listener not seen before is adopted at its first accept; the
 * first connection proves which options the kernel copied from the listener (the others
 * are set on each connection from then on); quick-ack is armed, and re-armed after every
 * receive.  This is the per-connection path: nothing here may cost a syscall that is not
 * needed. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

#include "socktune_stats.h"
#include "tune.h"

/* A listening socket the process did not make through the hooks (inherited across exec,
 * systemd socket activation): tune it at its first accept. */
static uint64_t adopt(int lfd, uint64_t e, int *copy)
{
	/* One thread adopts; the others accepting on it meanwhile wait for that (a few
	 * syscalls), a bounded number of times. */
	*copy = 0;
	uint64_t claimed = ST_FD_ADOPTING | (e & APP_BITS); /* (what the app set stays its own) */
	if (ST_FD_KIND(e) == ST_FD_ADOPTING)
		return st_fd_settled(lfd, st_fd_get(lfd));
	atomic_fetch_add(&st_fd_held, 1); /* (before the claim: a fork meanwhile sees it) */
	if (st_fd_cas(lfd, &e, claimed)) {
		errno = 0;
		int listening = 0, tcp = st_is_tcp_socket(lfd), result;
		int gone = !tcp && errno == EBADF; /* (this very look: a second one would race) */
		if (tcp && st_get_int(lfd, SOL_SOCKET, SO_ACCEPTCONN, &listening) == 0 && listening) {
			/* a copy of a tuned listener (dup(), fcntl(F_DUPFD)) is that listener */
			if (st_share_listener(lfd, claimed, st_socket_ino(lfd)))
				*copy = 1;
			else
				st_tune_listener(lfd, -1, ADOPT_AT_FIRST_ACCEPT, &result);
		}
		/* Still ours: not a TCP listener, or its tuning failed.  A TCP socket that is not
		 * listening keeps its entry: an accept() that was blocked on a listener when it was
		 * closed returns after its number went to a new socket(), which is tuned at its
		 * own listen().  A number that names nothing now (that listener closed, the
		 * number free) is unknown still: what takes it next may be a socket made where no
		 * hook sees it (fcntl(F_DUPFD), a raw syscall), classified at its listen(). */
		st_fd_cas(lfd, &claimed, (tcp && !listening) || gone ? e : ST_FD_IGNORED);
		atomic_fetch_sub(&st_fd_held, 1);
		return st_fd_get(lfd);
	}
	atomic_fetch_sub(&st_fd_held, 1);
	return st_fd_settled(lfd, st_fd_get(lfd));
}

/* (Its own frame: the line is only on the stack at debug.) */
__attribute__((noinline)) static void log_inherit_check(int lfd, uint64_t percon)
{
	struct st_line keys = {.n = 0};
	int k = 0;
	for (uint64_t m = percon; m; m &= m - 1) /* a list: none is no item */
		st_line_add(&keys, " per_connection.%d=%s", k++, ST_KEY(__builtin_ctzll(m)));
	st_log(ST_LOG_DEBUG, "event=inherit-check listener_fd=%d%s", lfd, keys.b);
}

/* On the first connection accepted from a listener, check that the kernel copied each
 * option; where it did not, apply that option per connection from then on. */
static void check_inherit(struct st_listener *L, uint64_t lentry, int lfd, int cfd)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong(&L->checked, &expect, 1))
		return;
	uint64_t percon = 0;
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		int level, optname, got = 0;
		const char *label;
		if (L->eff[i] == ST_UNREAD || (lentry & st_app_bit(i)) ||
		    (st_sockopts[i].flags & (ST_O_LISTENER_ONLY | ST_O_NOT_COMPARED)))
			continue;
		if (st_sockopts[i].flags & ST_O_EACH_CONN) {
			percon |= 1ull << i;
			continue;
		}
		st_sockopt_for(i, L->family, &level, &optname, &label);
		if (st_sockopts[i].flags & ST_O_NAME) {
			char name[ST_NAME_MAX];
			if (st_get_name(cfd, level, optname, name, sizeof name) == 0 &&
			    strcmp(name, st_opt_name(&st_policy, i)) != 0)
				got = -1;
			else
				got = L->eff[i];
		} else if (st_get_int(cfd, level, optname, &got) != 0) {
			continue;
		}
		if (got != L->eff[i]) {
			percon |= 1ull << i;
			st_log(ST_LOG_WARN,
			       "event=inherit option=%s listener_fd=%d listener_value=%d accepted_value=%d "
			       "action=per-connection",
			       ST_KEY(i), lfd, L->eff[i], got);
		}
	}
	atomic_store(&L->percon, percon);
	atomic_store(&L->checked, 2);
	if (st_log_level >= ST_LOG_DEBUG)
		log_inherit_check(lfd, percon);
}

/* The stats count of an accepted connection; a listener adopted at start claims its slot
 * at its first accept (once, on one thread; others skip counting meanwhile). */
static void count_accepted(struct st_listener *L, int lfd)
{
	int slot = atomic_load_explicit(&L->stats_slot, memory_order_relaxed);
	if (slot == STATS_LATER && atomic_compare_exchange_strong(&L->stats_slot, &slot, STATS_CLAIMING)) {
		char addr[ST_ADDR_MAX];
		unsigned port;
		int family = st_local_addr(lfd, addr, sizeof addr, &port);
		slot = st_stats_listener(lfd, family, port, addr, 1,
		                         L->eff[ST_V_RCVBUF] == ST_UNREAD ? -1 : L->eff[ST_V_RCVBUF],
		                         L->eff[ST_V_SNDBUF] == ST_UNREAD ? -1 : L->eff[ST_V_SNDBUF]);
		atomic_store(&L->stats_slot, slot);
	}
	if (slot >= 0)
		st_stats_accepted(slot, lfd);
}

/* The options the listener carries for its connections (the app's own excepted). */
static uint64_t applied_mask(const struct st_listener *L, uint64_t lentry)
{
	uint64_t mask = 0;
	for (int i = 0; i < ST_O_COUNT; i++)
		if (L->eff[i] != ST_UNREAD && !(st_sockopts[i].flags & ST_O_LISTENER_ONLY) && !(lentry & st_app_bit(i)))
			mask |= 1ull << i;
	return mask;
}

static void apply_percon(int fd, int family, uint64_t mask)
{
	struct st_err err;
	for (; mask; mask &= mask - 1) { /* the set bits only */
		int i = __builtin_ctzll(mask), level, optname, want = 0;
		const char *label;
		st_sockopt_for(i, family, &level, &optname, &label);
		st_opt_want(&st_policy, i, &want);
		if (st_sockopts[i].flags & ST_O_NAME)
			st_real.setsockopt(fd, level, optname, st_opt_name(&st_policy, i),
			                   (socklen_t)strlen(st_opt_name(&st_policy, i)));
		else
			st_set_int(&err, fd, level, optname, label, want);
	}
}

void st_accepted(int lfd, int cfd)
{
	uint64_t e = st_fd_get(lfd);
	unsigned kind = ST_FD_KIND(e);
	uint64_t ce = 0;

	/* A TCP socket made through socket() (or inherited before it listened) whose number
	 * accept() works on listens already: by a raw listen() or io_uring's IORING_OP_LISTEN,
	 * where no hook saw it, or its listen() is being tuned on another thread right now (its
	 * number swapped under a connection of the listener it named before: the entry is
	 * claimed then, and adopt() waits for that), or not at all (the same swap, before its
	 * listen(): adopt() leaves the entry as it is). */
	int adopted_now = kind == ST_FD_UNKNOWN || kind == ST_FD_TCP || kind == ST_FD_ADOPTING;
	if (adopted_now) {
		/* a UNIX listener's connection is a UNIX socket: the same bit (no syscall) */
		if (kind == ST_FD_UNKNOWN && st_fd_other(lfd)) {
			st_fd_set_other(cfd, 1);
			return;
		}
		st_fd_set_other(cfd, 0); /* (a stale bit of a number closed where no hook saw) */
		if (st_none_of_ours(e))
			return;
		if (!st_fd_fits(lfd))
			return; /* beyond the table: nothing can be remembered, so nothing is adopted */
		int copy;
		kind = ST_FD_KIND(e = adopt(lfd, e, &copy)); /* cfd itself was made before the tuning */
		adopted_now = !copy; /* ...unless lfd is a copy of a listener tuned already */
	}
	struct st_listener *L = st_record_of(e);
	if (L) {
		uint64_t percon;
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
			if (st_set_int(&err, cfd, IPPROTO_TCP, TCP_QUICKACK, "TCP_QUICKACK", 1) == 0)
				ce |= ST_FD_QUICKACK; /* refused (MPTCP says ENOPROTOOPT): no re-arm */
		}
		st_log(ST_LOG_DEBUG, "event=accept listener_fd=%d fd=%d quickack=%d", lfd, cfd,
		       (ce & ST_FD_QUICKACK) ? 1 : 0);
	}
	st_replace_entry(cfd, ce);
}

void st_rearm_quickack(int fd)
{
	int saved = errno;
	int one = 1;
	uint64_t e = st_fd_get(fd);
	if (st_real.setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one) == 0) {
		if (st_stats)
			st_count(&st_stats->quickack_rearms);
	} else if (errno == EBADF || errno == ENOTSOCK) {
		st_fd_cas(fd, &e, 0); /* closed behind our back; the number now names something else */
	} else {
		st_fd_cas(fd, &e, e & ~ST_FD_QUICKACK); /* refused (not TCP any more): stop trying */
	}
	errno = saved;
}
