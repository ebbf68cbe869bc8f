/* `socktune stats FILE`: read a SOCKTUNE_STATS file and print it as a table or as JSON.
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
#include <sys/uio.h>

#include "socktune_host.h"
#include "socktune_json.h"
#include "socktune_stats.h"
#include "cli.h"

/* A damaged file (or a copy read while a slot was being filled) must not make us read past
 * a string. */
static void terminate(struct st_stats_file *f)
{
	f->netns[sizeof f->netns - 1] = '\0';
	for (int i = 0; i < ST_STATS_LISTENERS; i++)
		f->listener[i].addr[sizeof f->listener[i].addr - 1] = '\0';
}

static int load(const char *path, struct st_stats_file *f)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "socktune stats: %s: %s\n", path, strerror(errno));
		return -1;
	}
	ssize_t n = read(fd, f, sizeof *f);
	close(fd);
	if (n < (ssize_t)(sizeof f->magic + 2 * sizeof(uint32_t)) ||
	    memcmp(f->magic, ST_STATS_MAGIC, sizeof f->magic) != 0) {
		fprintf(stderr, "socktune stats: %s: not a socktune stats file (or not written yet)\n",
		        path);
		return -1;
	}
	terminate(f);
	if (f->version != ST_STATS_VERSION || f->size != sizeof *f || n != (ssize_t)sizeof *f) {
		fprintf(stderr,
		        "socktune stats: %s: stats file version %u (%u bytes); this socktune reads "
		        "version %u (%zu bytes): read it with the socktune that wrote it\n",
		        path, f->version, f->size, ST_STATS_VERSION, sizeof *f);
		return -1;
	}
	return 0;
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

static void print_json(const struct st_stats_file *f, const struct stats_netns *ns,
                       const struct stats_source *src)
{
	printf("{\"version\":%u,\"pid\":%lld,\"running\":%s,\"started\":%lld,",
	       f->version, (long long)f->pid, stats_running(f) ? "true" : "false",
	       (long long)f->started);
	if (src->live)
		printf("\"source\":\"live\",\"read_from\":%lld,", (long long)src->from);
	else
		printf("\"source\":\"snapshot\",\"snapshot_pid\":%lld,\"snapshot_time\":%.3f,"
		       "\"snapshot_age\":%.3f,", (long long)src->from, (double)f->snapshot_ns / 1e9,
		       src->age);
	printf("\"netns\":");
	st_json_str(stdout, f->netns);
	printf(",\"process\":{\"quickack_rearms\":%llu,\"setsockopt_failures\":%llu,"
	       "\"app_overrides_refused\":%llu,\"retired_listeners\":%llu,\"retired_accepted\":%llu,"
	       "\"listen_overflows_start\":%lld,"
	       "\"listen_overflows_now\":%lld,\"listen_overflows_delta\":%lld,"
	       "\"listen_drops_start\":%lld,\"listen_drops_now\":%lld,\"listen_drops_delta\":%lld},"
	       "\"listeners\":[",
	       (unsigned long long)f->quickack_rearms, (unsigned long long)f->setsockopt_failures,
	       (unsigned long long)f->app_overrides_refused, (unsigned long long)f->retired_listeners,
	       (unsigned long long)f->retired_accepted, (long long)f->listen_overflows_start,
	       ns->overflows, stats_delta(ns->overflows, f->listen_overflows_start),
	       (long long)f->listen_drops_start, ns->drops, stats_delta(ns->drops, f->listen_drops_start));
	uint32_t n = f->listeners_used < ST_STATS_LISTENERS ? f->listeners_used : ST_STATS_LISTENERS;
	int first = 1;
	for (uint32_t i = 0; i < n; i++) {
		const struct st_stats_listener *l = &f->listener[i];
		if (l->state != ST_SLOT_LIVE && l->state != ST_SLOT_CLOSED)
			continue;
		printf("%s{\"addr\":", first ? "" : ",");
		st_json_str(stdout, l->addr);
		printf(",\"port\":%u,\"family\":%d,\"backlog\":%d,\"accepted\":%llu,"
		       "\"queue_peak\":%u,\"queue_last\":%u,\"rcvbuf\":%d,\"sndbuf\":%d,\"adopted\":%s,"
		       "\"samples\":%llu,\"closed\":%s}",
		       l->port, l->family == 10 ? 6 : 4, (int)l->backlog, (unsigned long long)l->accepted,
		       l->queue_peak, l->queue_last, l->rcvbuf, l->sndbuf, l->adopted ? "true" : "false",
		       (unsigned long long)l->samples, l->state == ST_SLOT_CLOSED ? "true" : "false");
		first = 0;
	}
	printf("]}\n");
}

static void print_table(const char *path, const struct st_stats_file *f,
                        const struct stats_netns *ns, const struct stats_source *src)
{
	char when[32] = "?";
	time_t t = (time_t)f->started;
	struct tm tm;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%SZ", &tm);
	printf("%s: pid %lld (%s), started %s, netns %s\n", path, (long long)f->pid,
	       stats_running(f) ? "running" : "not running", when, f->netns);
	if (src->live) {
		printf("values: live, read from pid %lld\n", (long long)src->from);
	} else {
		char at[32] = "?";
		time_t st = (time_t)(f->snapshot_ns / 1000000000);
		if (f->snapshot_ns > 0 && gmtime_r(&st, &tm))
			strftime(at, sizeof at, "%Y-%m-%d %H:%M:%SZ", &tm);
		printf("values: SNAPSHOT written by pid %lld at %s, %.1f s ago (%s)\n",
		       (long long)src->from, at, src->age, src->why);
	}
	if (ns->same)
		printf("ListenOverflows since start: %lld   ListenDrops since start: %lld   "
		       "(netns-wide: every listener in it counts)\n",
		       stats_delta(ns->overflows, f->listen_overflows_start),
		       stats_delta(ns->drops, f->listen_drops_start));
	else
		printf("ListenOverflows since start: n/a (read from another network namespace)\n");
	printf("quick-ack re-arms %llu   setsockopt failures %llu   app overrides refused %llu\n",
	       (unsigned long long)f->quickack_rearms, (unsigned long long)f->setsockopt_failures,
	       (unsigned long long)f->app_overrides_refused);
	printf("retired listeners %llu (closed, slot reused; they accepted %llu)\n\n",
	       (unsigned long long)f->retired_listeners, (unsigned long long)f->retired_accepted);
	printf("%-28s %6s %8s %10s %10s %10s %9s %9s %7s %s\n", "ADDR", "PORT", "BACKLOG",
	       "ACCEPTED", "QUEUE_PEAK", "QUEUE_LAST", "RCVBUF", "SNDBUF", "ADOPTED", "STATE");
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
		printf("%-28s %6u %8d %10llu %10u %10u %9s %9s %7s %s\n", l->addr, l->port,
		       (int)l->backlog, (unsigned long long)l->accepted, l->queue_peak, l->queue_last,
		       rb, sb, l->adopted ? "yes" : "no", l->state == ST_SLOT_CLOSED ? "closed" : "live");
	}
}

int stats_view_load(const char *path, struct stats_view *v)
{
	if (load(path, &v->snap) != 0)
		return 1;
	v->f = choose(&v->snap, &v->live, &v->src);
	netns_now(v->f, &v->ns);
	return 0;
}

int st_stats_print(const char *path, int json)
{
	static struct stats_view v; /* ~50 KiB: not on the stack */
	if (stats_view_load(path, &v) != 0)
		return 1;
	if (json)
		print_json(v.f, &v.ns, &v.src);
	else
		print_table(path, v.f, &v.ns, &v.src);
	fflush(stdout);
	return 0;
}
