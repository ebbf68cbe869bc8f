/* `socktune stats FILE...`: read SOCKTUNE_STATS files and print one as a table, or all as
 * one JSON document (record.h's keys).
 * The file is a snapshot; while its process runs, and when we may read its memory
 * (process_vm_readv: same uid and dumpable, or CAP_SYS_PTRACE), the live counters are read
 * from where the header says they are, and the output says which of the two it shows.
 * Part of the command, not of the library. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "socktune.h"
#include "socktune_host.h"
#include "socktune_stats.h"
#include "stats/stats.h"
#include "host/diag.h"
#include "record.h"

/* A damaged file (or a copy read while a slot was being filled) must not make us read past
 * a string. */
static void terminate(struct st_stats_file *f)
{
	f->netns[sizeof f->netns - 1] = '\0';
	for (int i = 0; i < ST_STATS_LISTENERS; i++)
		f->listener[i].addr[sizeof f->listener[i].addr - 1] = '\0';
}

const char *stats_not_regular(mode_t mode)
{
	return S_ISREG(mode)    ? NULL
	       : S_ISFIFO(mode) ? "a FIFO"
	       : S_ISCHR(mode)  ? "a character device"
	       : S_ISBLK(mode)  ? "a block device"
	       : S_ISDIR(mode)  ? "a directory"
	       : S_ISSOCK(mode) ? "a socket"
	                        : "not a regular file";
}

/* 0, or the status with the message in err (also on stderr).  A stats file is a regular
 * file: anything else is refused before a byte is read, and before it is opened where stat()
 * tells (the open of a device can act: a watchdog's arms it); then opened without waiting
 * (O_NONBLOCK: a FIFO put in its place since would wait for a writer for ever; a regular
 * file's reads are the same either way) and checked again on the descriptor. */
static int load(const char *path, struct st_stats_file *f, char *err, size_t en)
{
	struct stat st;
	const char *kind = NULL;
	if (stat(path, &st) == 0 && (kind = stats_not_regular(st.st_mode))) {
		snprintf(err, en, "%s: %s: not read (a stats file is a regular file)", path, kind);
		fprintf(stderr, "socktune stats: %s\n", err);
		return 1;
	}
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) != 0) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0 && (kind = stats_not_regular(st.st_mode))) {
		close(fd);
		snprintf(err, en, "%s: %s: not read (a stats file is a regular file)", path, kind);
		fprintf(stderr, "socktune stats: %s\n", err);
		return 1;
	}
	if (fd < 0) {
		int e = errno;
		snprintf(err, en, "%s: %s", path, strerror(e));
		fprintf(stderr, "socktune stats: %s\n", err);
		return e == ENOENT ? EXIT_NOT_FOUND : 1;
	}
	ssize_t n = read(fd, f, sizeof *f);
	close(fd);
	if (n < (ssize_t)(sizeof f->magic + 2 * sizeof(uint32_t)) ||
	    memcmp(f->magic, ST_STATS_MAGIC, sizeof f->magic) != 0) {
		snprintf(err, en, "%s: not a socktune stats file (or not written yet)", path);
		fprintf(stderr, "socktune stats: %s\n", err);
		return 1;
	}
	terminate(f);
	if (f->version != ST_STATS_VERSION || f->size != sizeof *f || n != (ssize_t)sizeof *f) {
		snprintf(err, en,
		         "%s: stats file version %u (%u bytes); this socktune reads version %u (%zu "
		         "bytes): read it with the socktune that wrote it",
		         path, f->version, f->size, ST_STATS_VERSION, sizeof *f);
		fprintf(stderr, "socktune stats: %s\n", err);
		return 1;
	}
	return 0;
}

long long stats_netns_inode(const char *netns)
{
	unsigned long long ino;
	int end = 0;
	if (sscanf(netns, "net:[%llu]%n", &ino, &end) == 1 && end > 0 && netns[end] == '\0')
		return (long long)ino;
	return -1;
}

static void netns_now(const struct st_stats_file *f, struct stats_netns *o)
{
	char ns[sizeof f->netns] = "";
	ssize_t n = readlink("/proc/self/ns/net", ns, sizeof ns - 1);
	ns[n > 0 ? n : 0] = '\0';
	o->same = strcmp(ns, f->netns) == 0;
	o->overflows = o->same ? st_netstat("ListenOverflows") : -1;
	o->drops = o->same ? st_netstat("ListenDrops") : -1;
}

long long stats_delta(long long now, long long start)
{
	return now >= 0 && start >= 0 ? now - start : -1;
}

static int alive(int64_t pid)
{
	return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

int stats_running(const struct st_stats_file *f)
{
	return alive(f->pid);
}

/* The live counters of the process that holds them (the maker, else the worker that wrote
 * the snapshot, which shares them), checked to be the same counters as the file's. */
static int read_live(const struct st_stats_file *snap, int64_t pid, struct st_stats_file *out)
{
	if (!alive(pid) || snap->live_addr == 0)
		return -1;
	struct iovec local = {.iov_base = out, .iov_len = sizeof *out};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)snap->live_addr,
	                       .iov_len = sizeof *out};
	if (process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof *out)
		return -1;
	if (memcmp(out->magic, ST_STATS_MAGIC, sizeof out->magic) != 0 ||
	    out->version != snap->version || out->size != snap->size || out->pid != snap->pid ||
	    out->started != snap->started || out->live_addr != snap->live_addr) {
		errno = ESRCH; /* the pid is another process now */
		return -1;
	}
	terminate(out);
	return 0;
}

static const struct st_stats_file *choose(const struct st_stats_file *snap,
                                          struct st_stats_file *live, struct stats_source *src)
{
	memset(src, 0, sizeof *src);
	int64_t pids[2] = {snap->pid, snap->snapshot_pid};
	int err = ESRCH;
	for (int i = 0; i < 2; i++) {
		if (i == 1 && pids[1] == pids[0])
			break;
		if (read_live(snap, pids[i], live) == 0) {
			src->live = 1;
			src->from = pids[i];
			return live;
		}
		if (i == 0 || alive(pids[i]))
			err = alive(pids[i]) ? errno : ESRCH;
	}
	src->from = snap->snapshot_pid;
	src->age = -1;
	struct timespec now;
	if (snap->snapshot_ns > 0 && clock_gettime(CLOCK_REALTIME, &now) == 0)
		src->age = ((double)now.tv_sec * 1e9 + now.tv_nsec - (double)snap->snapshot_ns) / 1e9;
	if (err == ESRCH)
		snprintf(src->why, sizeof src->why, "the process is not running");
	else
		snprintf(src->why, sizeof src->why,
		         "live values need ptrace access (same uid, or root): %s", strerror(err));
	return snap;
}

/* A buffer as the file has it: its group {"effective": N}, or null when not set. */
static void buffer(struct rec *l, int opt, int32_t effective)
{
	if (effective < 0) {
		rec_null(l, K_OPTION + opt);
		return;
	}
	rec_int(rec_group(l, K_OPTION + opt), K_EFFECTIVE, effective);
}

static void json_file(struct rec *files, const char *path, const struct stats_view *v)
{
	const struct st_stats_file *f = v->f;
	const struct stats_source *src = &v->src;
	const struct stats_netns *ns = &v->ns;
	struct rec *o = rec_obj(files, 0);
	rec_str(o, K_STS_FILE, path);
	rec_int(o, K_STS_FILE_VERSION, f->version);
	rec_int(o, K_PID, f->pid);
	rec_bool(o, K_STS_RUNNING, stats_running(f));
	rec_int(o, K_STS_STARTED_S, f->started);
	rec_str(o, K_STS_SOURCE, src->live ? "live" : "snapshot");
	if (src->live)
		rec_int(o, K_STS_READ_FROM_PID, src->from);
	else
		rec_null(o, K_STS_READ_FROM_PID);
	rec_known(o, K_STS_SNAPSHOT_PID, v->snap.snapshot_pid > 0 ? v->snap.snapshot_pid : -1);
	if (v->snap.snapshot_ns > 0)
		rec_num(o, K_STS_SNAPSHOT_S, (double)v->snap.snapshot_ns / 1e9, 3);
	else
		rec_null(o, K_STS_SNAPSHOT_S);
	if (!src->live && src->age >= 0)
		rec_num(o, K_STS_SNAPSHOT_AGE_S, src->age, 3);
	else
		rec_null(o, K_STS_SNAPSHOT_AGE_S);
	rec_str(o, K_NOTE, src->live ? NULL : src->why);
	rec_known(o, K_NETNS, stats_netns_inode(f->netns));
	rec_str(o, K_STS_KERNEL_NOTE, v->kernel ? NULL : v->kernel_why);
	struct rec *p = rec_obj(o, K_STS_PROCESS);
	rec_int(p, K_STS_QUICKACK_REARMS, (long long)f->quickack_rearms);
	rec_int(p, K_STS_SETSOCKOPT_FAILURES, (long long)f->setsockopt_failures);
	rec_int(p, K_STS_OVERRIDES_REFUSED, (long long)f->app_overrides_refused);
	rec_int(p, K_STS_RETIRED_LISTENERS, (long long)f->retired_listeners);
	rec_int(p, K_STS_RETIRED_ACCEPTED, (long long)f->retired_accepted);
	rec_known(p, K_STS_OVERFLOWS_START, f->listen_overflows_start);
	rec_known(p, K_STS_OVERFLOWS_NOW, ns->overflows);
	rec_known(p, K_STS_OVERFLOWS_DELTA, stats_delta(ns->overflows, f->listen_overflows_start));
	rec_known(p, K_STS_DROPS_START, f->listen_drops_start);
	rec_known(p, K_STS_DROPS_NOW, ns->drops);
	rec_known(p, K_STS_DROPS_DELTA, stats_delta(ns->drops, f->listen_drops_start));
	struct rec *ls = rec_arr(o, K_LISTENERS);
	uint32_t n = f->listeners_used < ST_STATS_LISTENERS ? f->listeners_used : ST_STATS_LISTENERS;
	for (uint32_t i = 0; i < n; i++) {
		const struct st_stats_listener *l = &f->listener[i];
		if (l->state != ST_SLOT_LIVE && l->state != ST_SLOT_CLOSED)
			continue;
		struct rec *x = rec_obj(ls, 0);
		rec_str(x, K_ADDR, l->addr);
		rec_int(x, K_PORT, l->port);
		rec_int(x, K_FAMILY, l->family == 10 ? 6 : 4);
		rec_int(x, K_STS_SLOT, i);
		rec_known(rec_group(x, K_BACKLOG), K_EFFECTIVE, l->backlog);
		rec_int(x, K_STS_ACCEPTED, (long long)l->accepted);
		rec_int(x, K_QUEUE_PEAK, l->queue_peak);
		rec_int(x, K_STS_QUEUE_LAST, l->queue_last);
		int kq;
		rec_int(x, K_QUEUE_NOW, stats_queue_now(v, (int)i, &kq));
		rec_str(x, K_STS_QUEUE_NOW_SOURCE, kq ? "kernel" : "last-sample");
		buffer(x, ST_V_RCVBUF, l->rcvbuf);
		buffer(x, ST_V_SNDBUF, l->sndbuf);
		rec_bool(x, K_STS_ADOPTED, l->adopted);
		rec_int(x, K_SAMPLES, (long long)l->samples);
		rec_bool(x, K_CLOSED, l->state == ST_SLOT_CLOSED);
	}
}

int stats_json(FILE *out, const char *const *paths, struct stats_view *const *views,
               const int *status, int n, int one_line)
{
	int failed = 0, missing = 0, first = -1;
	for (int i = 0; i < n; i++) {
		failed += status[i] != 0;
		missing += status[i] == EXIT_NOT_FOUND;
		if (status[i] != 0 && first < 0)
			first = i;
	}
	if (failed == n) { /* nothing to show: the error alone */
		int r = missing == n ? EXIT_NOT_FOUND : 1;
		char msg[sizeof views[0]->error + 64];
		if (n == 1)
			snprintf(msg, sizeof msg, "%s", views[0]->error);
		else
			snprintf(msg, sizeof msg, "none of the %d files could be read (%s)", n,
			         views[first]->error);
		rec_error_json(out, "stats", msg, r);
		return r;
	}
	struct rec *doc = rec_new();
	rec_int(doc, K_SCHEMA, REC_SCHEMA_VERSION);
	rec_str(doc, K_COMMAND, "stats");
	rec_str(doc, K_VERSION, ST_VERSION);
	if (failed) { /* some shown, some not: the document says so, each failed file why */
		char msg[80];
		snprintf(msg, sizeof msg, "%d of %d files could not be read", failed, n);
		rec_str(doc, K_ERROR, msg);
		rec_int(doc, K_STATUS, 1);
	}
	struct rec *files = rec_arr(doc, K_STS_FILES);
	for (int i = 0; i < n; i++) {
		if (status[i] == 0) {
			json_file(files, paths[i], views[i]);
			continue;
		}
		struct rec *o = rec_obj(files, 0);
		rec_str(o, K_STS_FILE, paths[i]);
		rec_str(o, K_ERROR, views[i]->error);
		rec_int(o, K_STATUS, status[i]);
	}
	if (one_line)
		rec_write_json_line(out, doc);
	else
		rec_write_json(out, doc);
	rec_free(doc);
	return failed ? 1 : 0;
}

static void print_table(FILE *out, const char *path, const struct stats_view *v)
{
	const struct st_stats_file *f = v->f;
	const struct stats_netns *ns = &v->ns;
	const struct stats_source *src = &v->src;
	char when[32] = "?";
	time_t t = (time_t)f->started;
	struct tm tm;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%SZ", &tm);
	fprintf(out, "%s: pid %lld (%s), started %s, netns %s\n", path, (long long)f->pid,
	        stats_running(f) ? "running" : "not running", when, f->netns);
	if (src->live) {
		fprintf(out, "values: live, read from pid %lld\n", (long long)src->from);
	} else {
		char at[32] = "?";
		time_t st = (time_t)(f->snapshot_ns / 1000000000);
		if (f->snapshot_ns > 0 && gmtime_r(&st, &tm))
			strftime(at, sizeof at, "%Y-%m-%d %H:%M:%SZ", &tm);
		fprintf(out, "values: SNAPSHOT written by pid %lld at %s, %.1f s ago (%s)\n",
		        (long long)src->from, at, src->age, src->why);
	}
	if (ns->same)
		fprintf(out, "ListenOverflows since start: %lld   ListenDrops since start: %lld   "
		        "(netns-wide: every listener in it counts)\n",
		        stats_delta(ns->overflows, f->listen_overflows_start),
		        stats_delta(ns->drops, f->listen_drops_start));
	else
		fprintf(out, "ListenOverflows since start: n/a (read from another network namespace)\n");
	fprintf(out, "quick-ack re-arms %llu   setsockopt failures %llu   app overrides refused %llu\n",
	        (unsigned long long)f->quickack_rearms, (unsigned long long)f->setsockopt_failures,
	        (unsigned long long)f->app_overrides_refused);
	fprintf(out, "retired listeners %llu (closed, slot reused; they accepted %llu)\n\n",
	        (unsigned long long)f->retired_listeners, (unsigned long long)f->retired_accepted);
	if (v->kernel)
		fprintf(out, "QUEUE_NOW: the accept queue now, read from the kernel\n");
	else
		fprintf(out, "QUEUE_NOW: the kernel could not be read (%s): the value at the last "
		        "sample, marked *\n", v->kernel_why);
	fprintf(out, "%-28s %6s %8s %10s %10s %10s %10s %9s %9s %7s %s\n", "ADDR", "PORT", "BACKLOG",
	        "ACCEPTED", "QUEUE_NOW", "QUEUE_PEAK", "QUEUE_LAST", "RCVBUF", "SNDBUF", "ADOPTED",
	        "STATE");
	uint32_t n = f->listeners_used < ST_STATS_LISTENERS ? f->listeners_used : ST_STATS_LISTENERS;
	for (uint32_t i = 0; i < n; i++) {
		const struct st_stats_listener *l = &f->listener[i];
		if (l->state != ST_SLOT_LIVE && l->state != ST_SLOT_CLOSED)
			continue;
		char rb[16] = "-", sb[16] = "-";
		if (l->rcvbuf >= 0)
			snprintf(rb, sizeof rb, "%d", l->rcvbuf);
		if (l->sndbuf >= 0)
			snprintf(sb, sizeof sb, "%d", l->sndbuf);
		int kq, q = stats_queue_now(v, (int)i, &kq);
		char qn[16];
		snprintf(qn, sizeof qn, kq ? "%d" : "%d*", q);
		fprintf(out, "%-28s %6u %8d %10llu %10s %10u %10u %9s %9s %7s %s\n", l->addr, l->port,
		        (int)l->backlog, (unsigned long long)l->accepted, qn, l->queue_peak,
		        l->queue_last, rb, sb, l->adopted ? "yes" : "no",
		        l->state == ST_SLOT_CLOSED ? "closed" : "live");
	}
}

/* The kernel's listeners matched to the file's slots: same family, address and port; where
 * several sockets listen there (SO_REUSEPORT, another process), one the process holds. */
struct kq_match {
	const struct st_stats_file *f;
	const struct holders *held;
	int32_t *queue_now;
	unsigned char mine[ST_STATS_LISTENERS]; /* the match found is held by the process */
};

static void kq_each(const struct diag_sock *s, void *ctx)
{
	struct kq_match *m = ctx;
	char addr[sizeof m->f->listener[0].addr];
	diag_addr(s->family, s->src, s->sport, addr, sizeof addr);
	int held = m->held->n == 0 || holders_find(m->held, s->inode) != NULL;
	uint32_t n = m->f->listeners_used < ST_STATS_LISTENERS ? m->f->listeners_used
	                                                        : ST_STATS_LISTENERS;
	for (uint32_t i = 0; i < n; i++) {
		const struct st_stats_listener *l = &m->f->listener[i];
		if (l->state != ST_SLOT_LIVE || l->family != s->family || l->port != s->sport ||
		    strcmp(l->addr, addr) != 0 || (m->queue_now[i] >= 0 && (m->mine[i] || !held)))
			continue;
		m->queue_now[i] = (int32_t)s->rqueue;
		m->mine[i] = (unsigned char)held;
	}
}

/* Each live slot's accept queue now, read from the kernel (sock_diag in the network
 * namespace of the process: the queue of a server that stopped accepting keeps growing
 * there, while the file's value is the one of its last accept). */
static void kernel_queues(struct stats_view *v)
{
	for (int i = 0; i < ST_STATS_LISTENERS; i++)
		v->queue_now[i] = -1;
	v->kernel = 0;
	int64_t pid = v->src.live ? v->src.from : v->f->pid;
	if (!stats_running(v->f)) {
		snprintf(v->kernel_why, sizeof v->kernel_why, "the process is not running");
		return;
	}
	int nl = diag_open((int)pid);
	if (nl < 0) {
		snprintf(v->kernel_why, sizeof v->kernel_why,
		         "sock_diag in the network namespace of pid %lld: %s", (long long)pid,
		         strerror(-nl));
		return;
	}
	static struct holders held; /* the process's sockets, by inode (none seen: any match) */
	held.n = 0;
	int pids[2] = {(int)v->f->pid, (int)v->snap.snapshot_pid};
	holders_scan(&held, pids, pids[1] > 0 && pids[1] != pids[0] ? 2 : 1);
	struct kq_match m = {.f = v->f, .held = &held, .queue_now = v->queue_now};
	int got = diag_dump(nl, 1u << TS_LISTEN, 0, kq_each, &m);
	close(nl);
	if (got < 0) {
		for (int i = 0; i < ST_STATS_LISTENERS; i++)
			v->queue_now[i] = -1;
		snprintf(v->kernel_why, sizeof v->kernel_why, "sock_diag dump: %s", strerror(-got));
		return;
	}
	v->kernel = 1;
	v->kernel_why[0] = '\0';
}

int stats_view_load(const char *path, struct stats_view *v)
{
	v->error[0] = '\0';
	int r = load(path, &v->snap, v->error, sizeof v->error);
	if (r != 0)
		return r;
	v->f = choose(&v->snap, &v->live, &v->src);
	netns_now(v->f, &v->ns);
	kernel_queues(v);
	return 0;
}

int stats_queue_now(const struct stats_view *v, int slot, int *from_kernel)
{
	int32_t q = v->queue_now[slot];
	*from_kernel = q >= 0;
	return q >= 0 ? q : (int)v->f->listener[slot].queue_last;
}

int stats_table(FILE *out, const char *path)
{
	static struct stats_view v; /* ~50 KiB: not on the stack */
	int r = stats_view_load(path, &v);
	if (r != 0)
		return r;
	print_table(out, path, &v);
	return 0;
}

int st_stats_print(const char *path)
{
	int r = stats_table(stdout, path);
	fflush(stdout);
	return r;
}
