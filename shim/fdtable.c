/* The per-descriptor table: one word per fd, sized from RLIMIT_NOFILE, made once with
 * mmap (no malloc: hooks may run inside another library's constructor or a signal
 * handler), read and written with relaxed atomics, never locked.  Pages are touched only
 * for descriptors actually used. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/resource.h>

#include "shim.h"

_Atomic(struct st_fdmap *) st_fdmap;

#define ST_FDTAB_MIN 65536u
#define ST_FDTAB_MAX (1u << 22) /* 4M descriptors, 32 MiB of address space at most */

static struct st_fdmap *fdmap_make(void)
{
	struct st_fdmap *m = atomic_load_explicit(&st_fdmap, memory_order_acquire);
	if (m)
		return m;

	struct rlimit rl;
	rlim_t n = ST_FDTAB_MIN;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		n = rl.rlim_max > n ? rl.rlim_max : n; /* the app may raise its soft limit later */
	if (n > ST_FDTAB_MAX)
		n = ST_FDTAB_MAX;

	size_t bytes = sizeof *m + n * sizeof m->ent[0];
	struct st_fdmap *made = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
	                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (made == MAP_FAILED)
		return NULL;
	made->size = (unsigned)n;
	struct st_fdmap *expect = NULL;
	if (!atomic_compare_exchange_strong_explicit(&st_fdmap, &expect, made, memory_order_acq_rel,
	                                             memory_order_acquire)) {
		munmap(made, bytes); /* another thread made it first */
		return expect;
	}
	return made;
}

/* close_range(3, ~0U) walks no further than the highest descriptor ever marked. */
static void raise_high(struct st_fdmap *m, int fd)
{
	unsigned high = atomic_load_explicit(&m->high, memory_order_relaxed);
	while ((unsigned)fd >= high &&
	       !atomic_compare_exchange_weak_explicit(&m->high, &high, (unsigned)fd + 1,
	                                              memory_order_relaxed, memory_order_relaxed))
		;
}

void st_fd_set(int fd, uint64_t v)
{
	struct st_fdmap *m = atomic_load_explicit(&st_fdmap, memory_order_acquire);
	if (!m) {
		if (v == 0)
			return;
		m = fdmap_make();
		if (!m)
			return;
	}
	if (fd < 0 || (unsigned)fd >= m->size)
		return;
	atomic_store_explicit(&m->ent[fd], v, memory_order_release);
	raise_high(m, fd);
}

int st_fd_cas(int fd, uint64_t *expect, uint64_t v)
{
	struct st_fdmap *m = fdmap_make();
	if (!m || fd < 0 || (unsigned)fd >= m->size)
		return 0;
	if (!atomic_compare_exchange_strong_explicit(&m->ent[fd], expect, v, memory_order_acq_rel,
	                                             memory_order_acquire))
		return 0;
	raise_high(m, fd);
	return 1;
}

_Atomic uint64_t st_other_bits[ST_OTHER_MAX / 64];
static _Atomic unsigned others_high; /* one past the highest number ever marked */

void st_fd_set_other(int fd, int other)
{
	if (fd < 0 || fd >= ST_OTHER_MAX)
		return;
	uint64_t bit = 1ull << (fd % 64);
	_Atomic uint64_t *w = &st_other_bits[fd / 64];
	if (!other) {
		if (atomic_load_explicit(w, memory_order_relaxed) & bit) /* (most never were) */
			atomic_fetch_and_explicit(w, ~bit, memory_order_relaxed);
		return;
	}
	atomic_fetch_or_explicit(w, bit, memory_order_relaxed);
	unsigned high = atomic_load_explicit(&others_high, memory_order_relaxed);
	while ((unsigned)fd >= high &&
	       !atomic_compare_exchange_weak_explicit(&others_high, &high, (unsigned)fd + 1,
	                                              memory_order_relaxed, memory_order_relaxed))
		;
}

void st_fd_forget_others(unsigned first, unsigned last)
{
	unsigned high = atomic_load_explicit(&others_high, memory_order_relaxed);
	for (unsigned fd = first; fd < high && fd <= last; fd++)
		st_fd_set_other((int)fd, 0);
}

int st_fd_fits(int fd)
{
	struct st_fdmap *m = fdmap_make();
	return m && fd >= 0 && (unsigned)fd < m->size;
}

_Atomic int st_fd_held;

void st_fd_forked(void)
{
	struct st_fdmap *m = atomic_load_explicit(&st_fdmap, memory_order_acquire);
	if (!m || !atomic_load(&st_fd_held))
		return; /* (the common case: no walk) */
	unsigned high = atomic_load_explicit(&m->high, memory_order_relaxed);
	for (unsigned fd = 0; fd < high; fd++) {
		uint64_t e = atomic_load_explicit(&m->ent[fd], memory_order_relaxed);
		if (ST_FD_KIND(e) == ST_FD_CLOSING || ST_FD_KIND(e) == ST_FD_ADOPTING)
			atomic_store_explicit(&m->ent[fd], ST_FD_UNKNOWN, memory_order_relaxed);
	}
	atomic_store(&st_fd_held, 0);
}

uint64_t st_fd_settled(int fd, uint64_t e)
{
	/* the other thread's part is a few syscalls: a bounded number of yields */
	for (int i = 0; i < 100000 && (ST_FD_KIND(e) == ST_FD_ADOPTING || ST_FD_KIND(e) == ST_FD_CLOSING); i++) {
		sched_yield();
		e = st_fd_get(fd);
	}
	return e;
}

uint64_t st_fd_xchg(int fd, uint64_t v)
{
	struct st_fdmap *m = atomic_load_explicit(&st_fdmap, memory_order_acquire);
	if (!m || fd < 0 || (unsigned)fd >= m->size)
		return 0;
	uint64_t old = atomic_exchange_explicit(&m->ent[fd], v, memory_order_acq_rel);
	if (v)
		raise_high(m, fd);
	return old;
}

int st_each_socket_fd(void (*fn)(int fd, const struct stat *st, int listening, void *ctx),
                      void *ctx)
{
	long dir = syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -1;
	char buf[512] __attribute__((aligned(8))); /* read as struct dirent64 */
	long n;
	int seen = 0;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
		if (seen >= ST_SCAN_MAX) {
			syscall(SYS_close, dir);
			return 1; /* cut short: some descriptors were not looked at */
		}
		for (long o = 0; o < n; seen++) {
			struct dirent64 *d = (struct dirent64 *)(buf + o);
			o += d->d_reclen;
			long fd = 0;
			const char *c = d->d_name;
			for (; *c >= '0' && *c <= '9' && fd < INT_MAX / 10; c++)
				fd = fd * 10 + (*c - '0');
			struct stat st;
			int on = 0;
			socklen_t len = sizeof on;
			if (*c || c == d->d_name || fd == dir || fstat((int)fd, &st) != 0 ||
			    !S_ISSOCK(st.st_mode) ||
			    st_real.getsockopt((int)fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) != 0)
				continue;
			fn((int)fd, &st, on, ctx);
		}
	}
	syscall(SYS_close, dir);
	return n < 0 ? -1 : 0;
}
