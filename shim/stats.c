/* SOCKTUNE_STATS: live counters, and a snapshot of them in a file.
 *
 * The counters live in an anonymous MAP_SHARED mapping: fork()ed workers share it (a
 * prefork server's workers count into their parent's slots), and no other process can
 * truncate it, so no action on the file can raise SIGBUS in the server.  Counters are
 * relaxed atomic adds there: no syscall per event.  The accept queue is sampled with
 * TCP_INFO on the listener (tcpi_unacked) at most once per 100 ms per listener, on the
 * accept path, for its peak and to write a burst into the file; what it is now, `socktune
 * stats` asks the kernel (sock_diag) when it is read.  A common accept costs a count, a
 * clock read (vDSO) and two compares: ~60 instructions (callgrind), no syscall.
 *
 * The file at the path is a copy of the mapping, written with pwrite (raw syscalls: the
 * library hooks read/close and friends): when it is made, when a listener slot is taken or
 * given back, with each accept-queue sample, once more when the backlog that sample saw has
 * been accepted (so a burst is in the file even when the server is killed right after it),
 * and at normal exit.  Its header says which pid holds the live counters and where, so
 * `socktune stats` reads them live when it may, and the file's copy otherwise.
 * A closed listener's slot is reused by the next listener (see st_stats_listener_closed),
 * so a server that reloads its listener forever keeps every new one counted.
 *
 * Every path here runs on the app's thread inside listen(), accept() or close(): the
 * buffers are static (made once, under the open-once guard), the stack use stays small. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "shim.h"
#include "socktune_stats.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

struct st_stats_file *st_stats;
static _Atomic int stats_state; /* 0: not tried, 1: opening, 2: done (st_stats or failed) */

/* The file, by absolute path (the app may chdir; %p was expanded with the maker's pid), and
 * its identity.  The snapshot reopens it by path each time rather than keeping a
 * descriptor: a descriptor would sit in the app's table, where daemons close "all" fds or
 * dup2 onto any number, and a kept one would go on writing into an inode another instance
 * has since renamed away.  Reopening costs an lstat, open, fstat and close per snapshot,
 * and snapshots are bounded by the 100 ms sampling.  Before anything is opened, lstat must
 * show our regular file (same device and inode), so a FIFO, a device or a symlink put at
 * the path is never opened, let alone written. */
static char snap_path[4096 + sizeof st_policy.stats_file + 24];
static char tmp_path[sizeof snap_path + 32];
static dev_t snap_dev;
static ino_t snap_ino;
static _Atomic int snap_on;
/* The slot generation this process's listener holds (copied into fork()ed children):
 * a worker whose slot was given back and handed to another listener counts nowhere. */
static _Atomic uint32_t held_gen[ST_STATS_LISTENERS];

static void shown_path(const char *path, char *out, size_t n)
{
	st_sanitize(path, out, n);
}

static void stats_failed(const char *path, int err)
{
	char shown[256];
	shown_path(path, shown, sizeof shown);
	st_log(ST_LOG_WARN, "event=stats variable=SOCKTUNE_STATS path=\"%s\" error=\"%s\" action=off",
	       shown, strerror(err));
}

static void stats_refused(const char *path, const char *why)
{
	char shown[256];
	shown_path(path, shown, sizeof shown);
	st_log(ST_LOG_WARN,
	       "event=stats-refused variable=SOCKTUNE_STATS path=\"%s\" reason=\"%s\" action=off",
	       shown, why);
}

static long raw_open(const char *path, int flags, int mode)
{
	return syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC | O_NOCTTY, mode);
}

static const char *kind_of(mode_t m)
{
	return S_ISLNK(m) ? "a symbolic link" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
	       : S_ISBLK(m) ? "a block device" : S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket"
	       : "not a regular file";
}

/* What is at the path now: 0 nothing, 1 a socktune stats file (any version: ours to
 * replace), -1 something else (refused, *why says what). */
static int existing(const char *path, struct stat *st, const char **why)
{
	if (fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno == ENOENT)
			return 0;
		*why = strerror(errno);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		*why = kind_of(st->st_mode);
		return -1;
	}
	long fd = raw_open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW, 0);
	if (fd < 0) {
		*why = strerror(errno);
		return -1;
	}
	*why = "a file that is not a socktune stats file";
	char magic[16];
	struct stat now;
	int ok = fstat((int)fd, &now) == 0 && S_ISREG(now.st_mode) && now.st_dev == st->st_dev &&
	         now.st_ino == st->st_ino &&
	         syscall(SYS_pread64, fd, magic, sizeof magic, 0) == (long)sizeof magic &&
	         memcmp(magic, ST_STATS_MAGIC, sizeof magic) == 0;
	syscall(SYS_close, fd);
	return ok ? 1 : -1;
}

/* The whole mapping at offset 0; 0 or an errno. */
static int write_all(long fd, const struct st_stats_file *f)
{
	long n = syscall(SYS_pwrite64, fd, f, sizeof *f, 0);
	return n == (long)sizeof *f ? 0 : n < 0 ? errno : ENOSPC;
}

/* Write the live counters to the file.  Never blocks (O_NONBLOCK; a regular file only),
 * never writes anything but the inode we made; an error leaves the live counters going. */
static void snapshot(void)
{
	struct st_stats_file *f = st_stats;
	if (!f || !atomic_load_explicit(&snap_on, memory_order_acquire))
		return;
	int saved = errno;
	struct stat st;
	if (fstatat(AT_FDCWD, snap_path, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		errno = saved; /* removed (or unreachable now): nothing of anyone's at risk */
		return;
	}
	if (st.st_dev != snap_dev || st.st_ino != snap_ino) {
		/* Another file stands at the path (a second instance renamed its own there, or
		 * someone put something else): not ours to write.  The live counters go on. */
		int on = 1;
		if (atomic_compare_exchange_strong(&snap_on, &on, 0)) {
			char shown[256];
			shown_path(snap_path, shown, sizeof shown);
			st_log(ST_LOG_WARN,
			       "event=stats path=\"%s\" error=\"replaced by another file\" "
			       "action=snapshots-off", shown);
		}
		errno = saved;
		return;
	}
	long fd = raw_open(snap_path, O_WRONLY | O_NONBLOCK | O_NOFOLLOW, 0);
	if (fd >= 0) {
		if (fstat((int)fd, &st) == 0 && st.st_dev == snap_dev && st.st_ino == snap_ino) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME_COARSE, &ts); /* vDSO */
			atomic_store_explicit(&f->snapshot_ns, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec,
			                      memory_order_relaxed);
			atomic_store_explicit(&f->snapshot_pid, getpid(), memory_order_relaxed);
			atomic_fetch_add_explicit(&f->snapshots, 1, memory_order_relaxed);
			write_all(fd, f); /* a full disk after a truncation: this copy is lost */
		}
		syscall(SYS_close, fd);
	}
	errno = saved;
}

/* The resolved path, absolute when the app's cwd lets us (it may chdir("/") later). */
static int resolve_path(void)
{
	char *p = snap_path;
	size_t n = sizeof snap_path;
	if (st_policy.stats_file[0] != '/') {
		long r = syscall(SYS_getcwd, snap_path, sizeof snap_path - sizeof st_policy.stats_file - 24);
		if (r > 0 && snap_path[0] == '/') {
			size_t o = strlen(snap_path);
			if (o > 1)
				snap_path[o++] = '/';
			p = snap_path + o;
			n = sizeof snap_path - o;
		}
	}
	return st_expand_path(st_policy.stats_file, getpid(), p, n);
}

/* Put the new file at the path: over a stats file we looked at (still the same inode), or
 * where nothing is (never over something that appeared meanwhile). */
static int install(const struct stat *old, int had)
{
	struct stat now;
	if (had) {
		if (fstatat(AT_FDCWD, snap_path, &now, AT_SYMLINK_NOFOLLOW) != 0 ||
		    now.st_dev != old->st_dev || now.st_ino != old->st_ino)
			return EEXIST;
		return rename(tmp_path, snap_path) == 0 ? 0 : errno;
	}
	if (syscall(SYS_renameat2, AT_FDCWD, tmp_path, AT_FDCWD, snap_path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return errno;
	/* a filesystem without RENAME_NOREPLACE: a hard link never replaces either */
	if (link(tmp_path, snap_path) != 0)
		return errno;
	unlink(tmp_path);
	return 0;
}

/* The counters, and the file made whole under a temporary name then renamed to the path.
 * The file's space is allocated before anything relies on it: on a full disk, one warning
 * and no stats, and no temporary file left behind. */
static void stats_open(void)
{
	if (resolve_path() != 0)
		return;
	struct stat old;
	const char *why = NULL;
	int had = existing(snap_path, &old, &why);
	if (had < 0) {
		stats_refused(snap_path, why);
		return;
	}
	struct rlimit fsz;
	if (getrlimit(RLIMIT_FSIZE, &fsz) == 0 && fsz.rlim_cur != RLIM_INFINITY &&
	    fsz.rlim_cur < sizeof *st_stats) {
		stats_failed(snap_path, EFBIG); /* writing past it would raise SIGXFSZ */
		return;
	}
	struct st_stats_file *f = mmap(NULL, sizeof *f, PROT_READ | PROT_WRITE,
	                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (f == MAP_FAILED) {
		stats_failed(snap_path, errno);
		return;
	}
	f->version = ST_STATS_VERSION;
	f->size = sizeof *f;
	f->pid = getpid();
	f->started = time(NULL);
	f->live_addr = (uint64_t)(uintptr_t)f;
	f->listen_overflows_start = st_netstat("ListenOverflows");
	f->listen_drops_start = st_netstat("ListenDrops");
	long n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/ns/net", f->netns, sizeof f->netns - 1);
	f->netns[n > 0 ? n : 0] = '\0';
	memcpy(f->magic, ST_STATS_MAGIC, sizeof f->magic);

	snprintf(tmp_path, sizeof tmp_path, "%s.tmp.%ld", snap_path, (long)getpid());
	long fd = raw_open(tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0644);
	if (fd < 0) {
		stats_failed(tmp_path, errno);
		munmap(f, sizeof *f);
		return;
	}
	int err = 0;
	struct stat st;
	if (syscall(SYS_fallocate, fd, 0, 0L, (long)sizeof *f) != 0 && errno != EOPNOTSUPP)
		err = errno;
	if (!err)
		err = write_all(fd, f); /* also where fallocate is not supported */
	if (!err && fstat((int)fd, &st) != 0)
		err = errno;
	syscall(SYS_close, fd);
	if (!err)
		err = install(&old, had);
	if (err) {
		unlink(tmp_path);
		munmap(f, sizeof *f);
		stats_failed(snap_path, err);
		return;
	}
	snap_dev = st.st_dev;
	snap_ino = st.st_ino;
	st_stats = f;
	atomic_store_explicit(&snap_on, 1, memory_order_release);
	char shown[256];
	shown_path(snap_path, shown, sizeof shown);
	st_log(ST_LOG_INFO, "event=stats path=\"%s\"", shown);
}

/* The counters, made with the first governed socket that has something to count.  Another
 * thread making them right now is waited for (a few syscalls; this is the listen() or
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

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* vDSO: no syscall */
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sample slot's accept queue (at most every 100 ms unless forced); 1 when it did. */
static int sample(struct st_stats_listener *l, int lfd, int force)
{
	int64_t now = mono_ns();
	int64_t last = atomic_load_explicit(&l->sampled_ns, memory_order_relaxed);
	if (!force && (now - last < ST_STATS_SAMPLE_NS ||
	               !atomic_compare_exchange_strong(&l->sampled_ns, &last, now)))
		return 0;
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
		atomic_store_explicit(&l->backlog, (int32_t)ti.tcpi_sacked, memory_order_relaxed);
		atomic_store_explicit(&l->queue_last, q, memory_order_relaxed);
		uint32_t peak = atomic_load_explicit(&l->queue_peak, memory_order_relaxed);
		while (q > peak && !atomic_compare_exchange_weak(&l->queue_peak, &peak, q))
			;
		atomic_fetch_add_explicit(&l->samples, 1, memory_order_relaxed);
		/* The q connections waiting now will be accepted next: when they have been, write
		 * the file once more, so a burst is there whatever happens to the server after. */
		uint64_t acc = atomic_load_explicit(&l->accepted, memory_order_relaxed);
		atomic_store_explicit(&l->drain_at, q ? acc + q : 0, memory_order_relaxed);
	}
	errno = saved;
	return 1;
}

void st_stats_sample(int slot, int lfd, int force)
{
	if (!st_stats || slot < 0 || slot >= ST_STATS_LISTENERS)
		return;
	if (sample(&st_stats->listener[slot], lfd, force) && !force)
		snapshot();
}

static int slot_ours(int slot)
{
	return atomic_load_explicit(&st_stats->listener[slot].generation, memory_order_relaxed) ==
	       atomic_load_explicit(&held_gen[slot], memory_order_relaxed);
}

/* The rare part of an accept: a sample is due (the listener's last is 100 ms old), or the
 * burst the last sample saw has been accepted.  Out of line: the common accept is a count,
 * a clock read (vDSO) and two compares. */
__attribute__((noinline)) static void accepted_rare(struct st_stats_listener *l, int lfd,
                                                    uint64_t n, uint64_t drain)
{
	if (sample(l, lfd, 0)) {
		snapshot();
		return;
	}
	if (drain && n >= drain && atomic_compare_exchange_strong(&l->drain_at, &drain, 0))
		snapshot();
}

void st_stats_accepted(int slot, int lfd)
{
	struct st_stats_file *f = st_stats;
	if (!f || (unsigned)slot >= ST_STATS_LISTENERS || !slot_ours(slot))
		return; /* a worker's copy of a listener its maker closed: the slot is someone else's */
	struct st_stats_listener *l = &f->listener[slot];
	uint64_t n = atomic_fetch_add_explicit(&l->accepted, 1, memory_order_relaxed) + 1;
	uint64_t drain = atomic_load_explicit(&l->drain_at, memory_order_relaxed);
	if (mono_ns() - atomic_load_explicit(&l->sampled_ns, memory_order_relaxed) >=
	            ST_STATS_SAMPLE_NS ||
	    (drain && n >= drain))
		accepted_rare(l, lfd, n, drain);
}

/* A slot for a new listener: a closed listener's first (its counts retired to the
 * process totals), else one never used. */
static int take_slot(struct st_stats_file *f)
{
	for (int i = 0; i < ST_STATS_LISTENERS; i++) {
		struct st_stats_listener *l = &f->listener[i];
		uint32_t closed = ST_SLOT_CLOSED;
		if (atomic_load_explicit(&l->state, memory_order_relaxed) == ST_SLOT_CLOSED &&
		    atomic_compare_exchange_strong(&l->state, &closed, ST_SLOT_BUSY)) {
			/* first: copies still held by workers stop counting here */
			atomic_fetch_add(&l->generation, 1);
			atomic_fetch_add_explicit(&f->retired_accepted, atomic_exchange(&l->accepted, 0),
			                          memory_order_relaxed);
			atomic_fetch_add_explicit(&f->retired_listeners, 1, memory_order_relaxed);
			return i;
		}
	}
	for (int i = 0; i < ST_STATS_LISTENERS; i++) {
		uint32_t free_ = ST_SLOT_FREE;
		if (atomic_load_explicit(&f->listener[i].state, memory_order_relaxed) == ST_SLOT_FREE &&
		    atomic_compare_exchange_strong(&f->listener[i].state, &free_, ST_SLOT_BUSY))
			return i;
	}
	return -1;
}

int st_stats_listener(int fd, int family, unsigned port, const char *addr, int adopted,
                      int rcvbuf, int sndbuf)
{
	struct st_stats_file *f = st_stats_file();
	if (!f)
		return -1;
	int slot = take_slot(f);
	if (slot < 0) {
		static _Atomic int said;
		if (!atomic_exchange(&said, 1))
			st_log(ST_LOG_WARN, "event=stats-full slots=%d addr=%s action=uncounted",
			       ST_STATS_LISTENERS, addr);
		return -1;
	}
	uint32_t used = atomic_load(&f->listeners_used);
	while (used < (uint32_t)slot + 1 &&
	       !atomic_compare_exchange_weak(&f->listeners_used, &used, (uint32_t)slot + 1))
		;
	struct st_stats_listener *l = &f->listener[slot];
	l->owner = getpid();
	l->family = family;
	l->port = port;
	snprintf(l->addr, sizeof l->addr, "%s", addr);
	l->adopted = (uint32_t)adopted;
	l->rcvbuf = rcvbuf;
	l->sndbuf = sndbuf;
	atomic_store_explicit(&l->accepted, 0, memory_order_relaxed);
	atomic_store_explicit(&l->queue_peak, 0, memory_order_relaxed);
	atomic_store_explicit(&l->queue_last, 0, memory_order_relaxed);
	atomic_store_explicit(&l->samples, 0, memory_order_relaxed);
	atomic_store_explicit(&l->drain_at, 0, memory_order_relaxed);
	uint32_t gen = atomic_fetch_add(&l->generation, 1) + 1;
	atomic_store_explicit(&held_gen[slot], gen, memory_order_relaxed);
	sample(l, fd, 1);
	atomic_store(&l->state, ST_SLOT_LIVE);
	snapshot();
	return slot;
}

/* The listener of slot was closed: the slot is marked closed, its counts stay shown until
 * a new listener takes it (closed slots go first), then they move to the process totals
 * (retired_listeners, retired_accepted).  Only the process that made the listener closes
 * its slot (a fork()ed child closing its copy, as a fork-per-connection server's children
 * do, leaves the parent's listener live), or anyone once that process is gone (a daemon
 * that listened, forked and let the parent exit).  Workers still accepting on their copies
 * of a closed listener go on counting into its slot until it is reused. */
void st_stats_listener_closed(int slot)
{
	struct st_stats_file *f = st_stats;
	if (!f || slot < 0 || slot >= ST_STATS_LISTENERS || !slot_ours(slot))
		return;
	struct st_stats_listener *l = &f->listener[slot];
	int saved = errno;
	int owner_alive = l->owner != getpid() && (kill((pid_t)l->owner, 0) == 0 || errno == EPERM);
	errno = saved;
	uint32_t live = ST_SLOT_LIVE;
	if (owner_alive || !atomic_compare_exchange_strong(&l->state, &live, ST_SLOT_CLOSED))
		return;
	snapshot();
}

/* At normal exit: the file brought up to date, and one line per listener. */
__attribute__((destructor)) static void stats_summary(void)
{
	struct st_stats_file *f = st_stats;
	if (!f)
		return;
	snapshot(); /* forked workers too: their last counts belong in the file */
	if (f->pid != getpid())
		return; /* forked workers share the parent's counters: the parent sums them up */
	uint32_t n = atomic_load(&f->listeners_used);
	long long overflows = st_netstat("ListenOverflows");
	for (uint32_t i = 0; i < n && i < ST_STATS_LISTENERS; i++) {
		struct st_stats_listener *l = &f->listener[i];
		uint32_t state = atomic_load(&l->state);
		if (state != ST_SLOT_LIVE && state != ST_SLOT_CLOSED)
			continue;
		/* the names and types of `socktune stats --json`'s (the overflows: unknown, left out) */
		char delta[48] = "";
		if (overflows >= 0 && f->listen_overflows_start >= 0)
			snprintf(delta, sizeof delta, " listen_overflows_delta=%lld",
			         overflows - f->listen_overflows_start);
		st_log(ST_LOG_INFO,
		       "event=summary addr=%s backlog.effective=%d accepted=%llu queue_peak=%u "
		       "queue_last=%u adopted=%d quickack_rearms=%llu%s closed=%d",
		       l->addr, atomic_load(&l->backlog), (unsigned long long)atomic_load(&l->accepted),
		       atomic_load(&l->queue_peak), atomic_load(&l->queue_last), l->adopted != 0,
		       (unsigned long long)atomic_load(&f->quickack_rearms), delta,
		       state == ST_SLOT_CLOSED);
	}
}
