/* Descriptor lifecycle: copies (dup2, dup3), closes (close, close_range, closefrom), and
 * the vfork() child that runs in our memory and must leave the parent's entries alone. */
#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tune.h"

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
	else if (!st_share_listener(newfd, ST_FD_UNKNOWN, st_socket_ino(newfd)))
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
		if (st_record_of(e))
			st_release_record(atomic_exchange_explicit(&m->ent[first], 0, memory_order_acq_rel));
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
		if (st_record_of(e))
			st_release_record(atomic_exchange_explicit(&m->ent[fd], 0, memory_order_acq_rel));
		else if (e)
			atomic_store_explicit(&m->ent[fd], 0, memory_order_release);
	}
}
