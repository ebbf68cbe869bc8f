/* `socktune stats FILE`: read a SOCKTUNE_STATS file (from a live or a dead process) and
 * print it as a table or as JSON.  Part of the command, not of the library. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "socktune_stats.h"

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
	f->netns[sizeof f->netns - 1] = '\0'; /* a damaged file must not make us read past */
	for (int i = 0; i < ST_STATS_LISTENERS; i++)
		f->listener[i].addr[sizeof f->listener[i].addr - 1] = '\0';
	if (f->version != ST_STATS_VERSION || f->size != sizeof *f || n != (ssize_t)sizeof *f) {
		fprintf(stderr,
		        "socktune stats: %s: stats file version %u (%u bytes); this socktune reads "
		        "version %u (%zu bytes): read it with the socktune that wrote it\n",
		        path, f->version, f->size, ST_STATS_VERSION, sizeof *f);
		return -1;
	}
	return 0;
}

struct netns_now {
	int same; /* the reader is in the writer's network namespace */
	long long overflows, drops;
};

static void netns_now(const struct st_stats_file *f, struct netns_now *o)
{
	char ns[sizeof f->netns] = "";
	ssize_t n = readlink("/proc/self/ns/net", ns, sizeof ns - 1);
	ns[n > 0 ? n : 0] = '\0';
	o->same = strcmp(ns, f->netns) == 0;
	o->overflows = o->same ? st_netstat("ListenOverflows") : -1;
	o->drops = o->same ? st_netstat("ListenDrops") : -1;
}

static long long delta(long long now, long long start)
{
	return now >= 0 && start >= 0 ? now - start : -1;
}

static int running(const struct st_stats_file *f)
{
	return f->pid > 0 && (kill((pid_t)f->pid, 0) == 0 || errno == EPERM);
}

static void print_json(const struct st_stats_file *f, const struct netns_now *ns)
{
	printf("{\"version\":%u,\"pid\":%lld,\"running\":%s,\"started\":%lld,\"netns\":\"",
	       f->version, (long long)f->pid, running(f) ? "true" : "false", (long long)f->started);
	for (const char *c = f->netns; *c; c++)
		printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
	printf("\",\"process\":{\"quickack_rearms\":%llu,\"setsockopt_failures\":%llu,"
	       "\"app_overrides_refused\":%llu,\"listen_overflows_start\":%lld,"
	       "\"listen_overflows_now\":%lld,\"listen_overflows_delta\":%lld,"
	       "\"listen_drops_start\":%lld,\"listen_drops_now\":%lld,\"listen_drops_delta\":%lld},"
	       "\"listeners\":[",
	       (unsigned long long)f->quickack_rearms, (unsigned long long)f->setsockopt_failures,
	       (unsigned long long)f->app_overrides_refused, (long long)f->listen_overflows_start,
	       ns->overflows, delta(ns->overflows, f->listen_overflows_start),
	       (long long)f->listen_drops_start, ns->drops, delta(ns->drops, f->listen_drops_start));
	uint32_t n = f->listeners_used < ST_STATS_LISTENERS ? f->listeners_used : ST_STATS_LISTENERS;
	int first = 1;
	for (uint32_t i = 0; i < n; i++) {
		const struct st_stats_listener *l = &f->listener[i];
		if (!l->used)
			continue;
		printf("%s{\"addr\":\"%s\",\"port\":%u,\"family\":%d,\"backlog\":%d,\"accepted\":%llu,"
		       "\"queue_peak\":%u,\"queue_last\":%u,\"rcvbuf\":%d,\"sndbuf\":%d,\"adopted\":%s,"
		       "\"samples\":%llu}",
		       first ? "" : ",", l->addr, l->port, l->family == 10 ? 6 : 4, l->backlog,
		       (unsigned long long)l->accepted, l->queue_peak, l->queue_last, l->rcvbuf,
		       l->sndbuf, l->adopted ? "true" : "false", (unsigned long long)l->samples);
		first = 0;
	}
	printf("]}\n");
}

static void print_table(const char *path, const struct st_stats_file *f,
                        const struct netns_now *ns)
{
	char when[32] = "?";
	time_t t = (time_t)f->started;
	struct tm tm;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%SZ", &tm);
	printf("%s: pid %lld (%s), started %s, netns %s\n", path, (long long)f->pid,
	       running(f) ? "running" : "not running", when, f->netns);
	if (ns->same)
		printf("ListenOverflows since start: %lld   ListenDrops since start: %lld   "
		       "(netns-wide: every listener in it counts)\n",
		       delta(ns->overflows, f->listen_overflows_start),
		       delta(ns->drops, f->listen_drops_start));
	else
		printf("ListenOverflows since start: n/a (read from another network namespace)\n");
	printf("quick-ack re-arms %llu   setsockopt failures %llu   app overrides refused %llu\n\n",
	       (unsigned long long)f->quickack_rearms, (unsigned long long)f->setsockopt_failures,
	       (unsigned long long)f->app_overrides_refused);
	printf("%-28s %6s %8s %10s %10s %10s %9s %9s %s\n", "ADDR", "PORT", "BACKLOG", "ACCEPTED",
	       "QUEUE_PEAK", "QUEUE_LAST", "RCVBUF", "SNDBUF", "ADOPTED");
	uint32_t n = f->listeners_used < ST_STATS_LISTENERS ? f->listeners_used : ST_STATS_LISTENERS;
	for (uint32_t i = 0; i < n; i++) {
		const struct st_stats_listener *l = &f->listener[i];
		if (!l->used)
			continue;
		char rb[16] = "-", sb[16] = "-";
		if (l->rcvbuf >= 0)
			snprintf(rb, sizeof rb, "%d", l->rcvbuf);
		if (l->sndbuf >= 0)
			snprintf(sb, sizeof sb, "%d", l->sndbuf);
		printf("%-28s %6u %8d %10llu %10u %10u %9s %9s %s\n", l->addr, l->port, l->backlog,
		       (unsigned long long)l->accepted, l->queue_peak, l->queue_last, rb, sb,
		       l->adopted ? "yes" : "no");
	}
}

int st_stats_print(const char *path, int json)
{
	static struct st_stats_file f; /* ~20 KiB: not on the stack */
	if (load(path, &f) != 0)
		return 1;
	struct netns_now ns;
	netns_now(&f, &ns);
	if (json)
		print_json(&f, &ns);
	else
		print_table(path, &f, &ns);
	fflush(stdout);
	return 0;
}
