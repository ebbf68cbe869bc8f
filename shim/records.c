/* Listener records: what the library remembers of each tuned listener (the values the
 * kernel reported, the inheritance check, the stats slot), shared by its copies (dup(),
 * inherited twice) and handed back when the last of them is closed. */
#include <stdatomic.h>
#include <sys/stat.h>

#include "tune.h"

struct st_listener st_listeners[ST_MAX_LISTENERS];
static _Atomic unsigned listeners_high; /* one past the highest record ever taken */

int st_inherited_scanned; /* tune.h */
_Atomic int st_fds_received; /* (or received: then any descriptor may be a TCP listener) */

void st_release_record(uint64_t e)
{
	struct st_listener *L = st_record_of(e);
	if (L && atomic_fetch_sub(&L->refs, 1) == 1) {
		atomic_store(&L->ino, 0);
		st_stats_listener_closed(L->stats_slot);
		atomic_store(&L->used, 0);
	}
}

int st_still_tcp(int fd, uint64_t e)
{
	if (st_is_tcp_proto(fd))
		return 1;
	if (st_fd_cas(fd, &e, ST_FD_UNKNOWN))
		st_release_record(e);
	return 0;
}


void st_socket_made(int fd, int domain, int type, int protocol)
{
	int ours = st_in_scope(domain, type, protocol);
	st_fd_set_other(fd, !ours); /* (a UNIX socket's listen() and accept() then ask nothing) */
	if (ours)
		st_replace_entry(fd, ST_FD_TCP);
	else if (atomic_load_explicit(&st_fdmap, memory_order_relaxed))
		st_replace_entry(fd, ST_FD_IGNORED); /* only once a table exists: UDP alone makes none */
}

/* A record whose listener was closed where no hook saw it (a raw syscall, a close inside
 * libc) while its number now names something else (a file, a pipe, another socket made
 * without socket()): its entry still points at it, so it was never freed.  Checked only
 * when every record is taken. */
static void reclaim_records(void)
{
	for (unsigned i = 0; i < ST_MAX_LISTENERS; i++) {
		struct st_listener *L = &st_listeners[i];
		if (!atomic_load(&L->used))
			continue;
		uint64_t e = st_fd_get(L->fd);
		struct stat st;
		if (st_record_of(e) != L || (fstat(L->fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
		                          (unsigned long)st.st_ino == atomic_load(&L->ino)))
			continue;
		if (st_fd_cas(L->fd, &e, ST_FD_UNKNOWN))
			st_release_record(e); /* the one who took the entry frees the record */
	}
}

/* The records are taken in turn, not the lowest free one first: an accept() on another
 * thread may still hold the entry of a listener closed just now, and its record, reused at
 * once by the next listen() (a listener swapped under threads accepting), would be read by
 * it while it is filled in (ThreadSanitizer in t_listener_swap) and judged by a connection
 * of the old listener.  In turn, a record comes back only after every other one was taken. */
static _Atomic unsigned record_turn;

static struct st_listener *take_record(unsigned *index)
{
	unsigned first = atomic_fetch_add(&record_turn, 1);
	for (unsigned k = 0; k < ST_MAX_LISTENERS; k++) {
		unsigned i = (first + k) % ST_MAX_LISTENERS;
		int expect = 0;
		if (atomic_compare_exchange_strong(&st_listeners[i].used, &expect, 1)) {
			atomic_store(&st_listeners[i].refs, 1);
			atomic_store(&st_listeners[i].checked, 0);
			atomic_store(&st_listeners[i].percon, 0);
			atomic_store(&st_listeners[i].queued, 0);
			*index = i;
			unsigned high = atomic_load(&listeners_high);
			while (high <= i && !atomic_compare_exchange_weak(&listeners_high, &high, i + 1))
				;
			return &st_listeners[i];
		}
	}
	return NULL;
}

/* A copy of a listener already tuned (dup(), fcntl(F_DUPFD), dup2(), one inherited twice,
 * a fork child's dup of its parent's): the same socket, so the same record, found by the
 * socket's inode.  Gives fd (whose entry is still *expect) an entry of its own on that
 * record, holding a reference; no option is set again, no listen(), no line at info.
 * Returns the new entry, 0 when no tuned listener has that inode, or SHARE_LOST when fd's
 * entry changed meanwhile (closed, reused): then nothing is to be done for fd at all. */
uint64_t st_share_listener(int fd, uint64_t expect, unsigned long ino)
{
	unsigned high = atomic_load(&listeners_high);
	for (unsigned i = 0; ino && i < high && i < ST_MAX_LISTENERS; i++) {
		struct st_listener *L = &st_listeners[i];
		if (atomic_load_explicit(&L->ino, memory_order_acquire) != ino)
			continue;
		int r = atomic_load(&L->refs);
		while (r > 0 && !atomic_compare_exchange_weak(&L->refs, &r, r + 1))
			;
		if (r <= 0)
			continue; /* released meanwhile */
		uint64_t v = st_listener_entry(i);
		if (atomic_load_explicit(&L->ino, memory_order_acquire) != ino) {
			st_release_record(v); /* freed and taken by another listener meanwhile */
			continue;
		}
		if (st_app_wins()) { /* what the app set on the listener stays the app's on the copy */
			uint64_t orig = st_fd_get(L->fd);
			if (st_record_of(orig) == L)
				v |= orig & APP_BITS;
		}
		if (!st_fd_cas(fd, &expect, v)) {
			st_release_record(v); /* closed while we looked: the caller gives up too */
			return SHARE_LOST;
		}
		st_log(ST_LOG_DEBUG, "event=listener-copy fd=%d listener_fd=%d", fd, L->fd);
		return v;
	}
	return 0;
}

struct st_listener *st_listener_alloc(unsigned *index)
{
	struct st_listener *L = take_record(index);
	if (!L) {
		reclaim_records();
		L = take_record(index);
	}
	return L;
}
