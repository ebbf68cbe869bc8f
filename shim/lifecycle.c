/* Descriptor lifecycle: copies (dup2, dup3), closes (close, close_range, closefrom), and
 * in a vfork() child (vfork.c), which runs in our memory, the parent's entries left alone. */
#include <errno.h>

#include "tune.h"

/* Whether [first, last] holds an entry a vfork child must not clear. */
static int in_vfork_child(unsigned first, unsigned last)
{
	struct st_fdmap *m = atomic_load_explicit(&st_fdmap, memory_order_acquire);
	unsigned high = m ? atomic_load_explicit(&m->high, memory_order_relaxed) : 0;
	for (unsigned fd = first; fd < high && fd <= last; fd++) {
		uint64_t e = atomic_load_explicit(&m->ent[fd], memory_order_relaxed);
		if (ST_FD_KIND(e) == ST_FD_LISTENER || (e & ST_FD_QUICKACK))
			return st_in_vfork_child();
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
	if (ST_FD_KIND(e) == ST_FD_LISTENER && st_in_vfork_child()) {
		errno = saved;
		return;
	}
	/* (the real dup2() has replaced what newfd named already: nothing to wait for) */
	if (st_closing((unsigned)newfd, (unsigned)newfd))
		st_closed((unsigned)newfd, (unsigned)newfd);
	/* newfd now names oldfd's socket: a listener's copy shares its record (found by the
	 * socket's inode, so an entry that outlived its socket is not copied) */
	st_fd_set_other(newfd, st_fd_other(oldfd));
	if (ST_FD_KIND(e) != ST_FD_LISTENER)
		st_fd_set(newfd, e);
	else if (!st_share_listener(newfd, ST_FD_UNKNOWN, st_socket_ino(newfd)))
		st_fd_set(newfd, ST_FD_UNKNOWN); /* adopted at its first accept */
	errno = saved;
}

/* A listener's entry: until the real call closes it, its number still names the listener,
 * and a connection another thread accepted from it just now must not find an unknown entry
 * there (it would adopt the listener being closed, and say so, or tune it as it goes):
 * closing, its record released, until st_closed. */
static int mark_closing(_Atomic uint64_t *ent)
{
	st_release_record(atomic_exchange_explicit(ent, ST_FD_CLOSING, memory_order_acq_rel));
	return 1;
}

int st_closing(unsigned first, unsigned last)
{
	struct st_fdmap *m = atomic_load_explicit(&st_fdmap, memory_order_acquire);
	unsigned high = m ? atomic_load_explicit(&m->high, memory_order_relaxed) : 0;
	st_fd_forget_others(first, last); /* (in a vfork child too: its parent then asks again) */
	/* (the log's own number is often past the table's high mark: checked first) */
	int lfd = atomic_load_explicit(&st_log_fd, memory_order_relaxed);
	if (lfd >= 0 && (unsigned)lfd >= first && (unsigned)lfd <= last)
		st_log_fd_closed(first, last);
	if (first >= high)
		return 0;
	int marked = 0;
	if (first == last) { /* close(): the common case, one entry */
		uint64_t e = atomic_load_explicit(&m->ent[first], memory_order_relaxed);
		if (!e || ((ST_FD_KIND(e) == ST_FD_LISTENER || (e & ST_FD_QUICKACK)) && st_in_vfork_child()))
			return 0;
		if (st_record_of(e)) {
			atomic_fetch_add(&st_fd_held, 1); /* (before: a fork meanwhile sees it) */
			marked = mark_closing(&m->ent[first]);
		} else {
			atomic_store_explicit(&m->ent[first], 0, memory_order_release);
		}
	} else if (!in_vfork_child(first, last)) {
		atomic_fetch_add(&st_fd_held, 1);
		/* The entry first, then its record back to the pool: an accept() in flight on
		 * another thread never reads a record already handed to a new listener.  An entry
		 * with a record is taken by exchange, so that exactly one caller frees it; others
		 * (a connection, a socket not listening) are simply cleared: their number is not
		 * free before the real close, so nobody else writes them meanwhile. */
		for (unsigned fd = first; fd < high && fd <= last; fd++) {
			uint64_t e = atomic_load_explicit(&m->ent[fd], memory_order_relaxed);
			if (st_record_of(e))
				marked = mark_closing(&m->ent[fd]);
			else if (e)
				atomic_store_explicit(&m->ent[fd], 0, memory_order_release);
		}
		if (!marked)
			atomic_fetch_sub(&st_fd_held, 1);
	}
	return marked;
}

/* After the real call: a number still closing is free now (one that a new socket took
 * meanwhile has that socket's entry, and keeps it). */
void st_closed(unsigned first, unsigned last)
{
	int saved = errno;
	struct st_fdmap *m = atomic_load_explicit(&st_fdmap, memory_order_acquire);
	unsigned high = m ? atomic_load_explicit(&m->high, memory_order_relaxed) : 0;
	for (unsigned fd = first; fd < high && fd <= last; fd++) {
		uint64_t e = ST_FD_CLOSING;
		atomic_compare_exchange_strong(&m->ent[fd], &e, ST_FD_UNKNOWN);
	}
	atomic_fetch_sub(&st_fd_held, 1);
	errno = saved;
}
