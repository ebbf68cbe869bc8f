/* SOCKTUNE_STATS: live counters in a file mapped MAP_SHARED, so `socktune stats` can read
 * them while the server runs and after it died.  Counters are relaxed atomic adds on the
 * mapping: no syscall per event.  The accept queue is sampled with TCP_INFO on the listener
 * (tcpi_unacked) at most once per 100 ms per listener, on the accept path. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "shim.h"
#include "socktune_stats.h"

struct st_stats_file *st_stats;
static _Atomic int stats_state; /* 0: not tried, 1: opening, 2: done (st_stats or failed) */

static void stats_failed(const char *path, int err)
{
	char shown[256];
	st_sanitize(path, shown, sizeof shown);
	st_log(ST_LOG_WARN, "event=stats var=SOCKTUNE_STATS path=\"%s\" error=\"%s\" action=off",
	       shown, strerror(err));
}

/* The file is made whole under a temporary name, then renamed over the path: never
 * truncated in place, since another process (a second instance, an exec'd upgrade) may
 * still have the old one mapped and would die of SIGBUS touching a counter. */
static void stats_open(void)
{
	char path[sizeof st_policy.stats_file + 24], tmp[sizeof path + 32];
	if (st_expand_path(st_policy.stats_file, getpid(), path, sizeof path) != 0)
		return;
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	int fd = (int)syscall(SYS_openat, AT_FDCWD, tmp,
	                      O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		stats_failed(tmp, errno);
		return;
	}
	struct st_stats_file *f = MAP_FAILED;
	if (ftruncate(fd, sizeof *f) == 0)
		f = mmap(NULL, sizeof *f, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int saved = errno;
	syscall(SYS_close, fd);
	if (f == MAP_FAILED) {
		unlink(tmp);
		stats_failed(path, saved);
		return;
	}
	f->version = ST_STATS_VERSION;
	f->size = sizeof *f;
	f->pid = getpid();
	f->started = time(NULL);
	f->listen_overflows_start = st_netstat("ListenOverflows");
	f->listen_drops_start = st_netstat("ListenDrops");
	long n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/ns/net", f->netns, sizeof f->netns - 1);
	f->netns[n > 0 ? n : 0] = '\0';
	memcpy(f->magic, ST_STATS_MAGIC, sizeof f->magic);
	if (rename(tmp, path) != 0) {
		saved = errno;
		unlink(tmp);
		munmap(f, sizeof *f);
		stats_failed(path, saved);
		return;
	}
	st_stats = f;
	char shown[256];
	st_sanitize(path, shown, sizeof shown);
	st_log(ST_LOG_INFO, "event=stats path=\"%s\"", shown);
}

/* The file, made with the first governed socket that has something to count.  Another
 * thread making it right now is waited for (a few syscalls; this is the listen() or
 * override path, never the accept path). */
struct st_stats_file *st_stats_file(void)
{
	if (!st_has(&st_policy, ST_V_STATS))
		return NULL;
	int expect = 0;
	if (atomic_compare_exchange_strong(&stats_state, &expect, 1)) {
		stats_open();
		atomic_store(&stats_state, 2);
	}
	for (int i = 0; i < 100000 && atomic_load(&stats_state) == 1; i++)
		sched_yield();
	return atomic_load(&stats_state) == 2 ? st_stats : NULL;
}

int st_stats_listener(int fd, int family, unsigned port, const char *addr, int adopted,
                      int rcvbuf, int sndbuf)
{
	struct st_stats_file *f = st_stats_file();
	if (!f)
		return -1;
	uint32_t slot = atomic_fetch_add(&f->listeners_used, 1);
	if (slot >= ST_STATS_LISTENERS) {
		atomic_store(&f->listeners_used, ST_STATS_LISTENERS);
		return -1;
	}
	struct st_stats_listener *l = &f->listener[slot];
	l->family = family;
	l->port = port;
	snprintf(l->addr, sizeof l->addr, "%s", addr);
	l->adopted = (uint32_t)adopted;
	l->rcvbuf = rcvbuf;
	l->sndbuf = sndbuf;
	st_stats_sample((int)slot, fd, 1);
	atomic_store(&l->used, 1);
	return (int)slot;
}

void st_stats_sample(int slot, int lfd, int force)
{
	struct st_stats_listener *l = &st_stats->listener[slot];
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* vDSO: no syscall */
	int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	int64_t last = atomic_load_explicit(&l->sampled_ns, memory_order_relaxed);
	if (!force && (now - last < ST_STATS_SAMPLE_NS ||
	               !atomic_compare_exchange_strong(&l->sampled_ns, &last, now)))
		return;
	if (force)
		atomic_store(&l->sampled_ns, now);
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	memset(&ti, 0, sizeof ti);
	int saved = errno;
	if (st_real.getsockopt(lfd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0) {
		/* On a listener, tcpi_unacked is the accept queue's length and tcpi_sacked the
		 * backlog in force. */
		uint32_t q = ti.tcpi_unacked;
		l->backlog = (int32_t)ti.tcpi_sacked;
		atomic_store_explicit(&l->queue_last, q, memory_order_relaxed);
		uint32_t peak = atomic_load_explicit(&l->queue_peak, memory_order_relaxed);
		while (q > peak && !atomic_compare_exchange_weak(&l->queue_peak, &peak, q))
			;
		atomic_fetch_add_explicit(&l->samples, 1, memory_order_relaxed);
	}
	errno = saved;
}

/* One line per listener when the process exits normally. */
__attribute__((destructor)) static void stats_summary(void)
{
	struct st_stats_file *f = st_stats;
	if (!f || f->pid != getpid())
		return; /* forked workers share the parent's file: the parent sums it up */
	uint32_t n = atomic_load(&f->listeners_used);
	long long overflows = st_netstat("ListenOverflows");
	for (uint32_t i = 0; i < n && i < ST_STATS_LISTENERS; i++) {
		struct st_stats_listener *l = &f->listener[i];
		if (!atomic_load(&l->used))
			continue;
		st_log(ST_LOG_INFO,
		       "event=summary addr=%s backlog=%d accepted=%llu queue_peak=%u queue_last=%u "
		       "adopted=%u quickack_rearms=%llu listen_overflows=%lld",
		       l->addr, l->backlog, (unsigned long long)atomic_load(&l->accepted),
		       atomic_load(&l->queue_peak), atomic_load(&l->queue_last), l->adopted,
		       (unsigned long long)atomic_load(&f->quickack_rearms),
		       overflows >= 0 && f->listen_overflows_start >= 0
		               ? overflows - f->listen_overflows_start : -1);
	}
}
