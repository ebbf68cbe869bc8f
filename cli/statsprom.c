/* `socktune stats --format prometheus FILE...`: the counters of stats files in the Prometheus
 * text exposition format (version 0.0.4), for node_exporter's textfile collector or any
 * scraper.  Each family once, its HELP and TYPE lines, then its samples from every file:
 * the format wants a family's samples together, so all files are read first (stats.c).
 * Counters end in _total; a process's samples carry pid, a listener's pid, address, port
 * and slot (two listeners may share an address and port: SO_REUSEPORT, or a reload whose
 * closed listener is still shown).  No timestamps: the textfile collector refuses them. */
#include <stdio.h>
#include <string.h>

#include "socktune_json.h"
#include "cli.h"

enum scope { S_FILE, S_PROCESS, S_LISTENER };

enum key {
	K_READABLE, K_RUNNING, K_LIVE, K_STARTED, K_SNAPSHOT_TIME, K_QUICKACK, K_SETSOCKOPT,
	K_OVERRIDES, K_RETIRED, K_RETIRED_ACCEPTED, K_OVERFLOWS, K_DROPS,
	K_ACCEPTED, K_BACKLOG, K_QUEUE_PEAK, K_QUEUE, K_SAMPLES, K_RCVBUF, K_SNDBUF, K_ADOPTED,
	K_CLOSED,
};

static const struct family {
	enum key key;
	enum scope scope;
	const char *name, *type, *help;
} families[] = {
	{K_READABLE, S_FILE, "socktune_stats_file_readable", "gauge",
	 "1 when the stats file could be read, 0 when not (missing, not a stats file, another version)"},
	{K_RUNNING, S_PROCESS, "socktune_process_running", "gauge",
	 "1 while the process that made the counters runs"},
	{K_LIVE, S_PROCESS, "socktune_values_live", "gauge",
	 "1: values read from the running process now; 0: from the file's last snapshot"},
	{K_STARTED, S_PROCESS, "socktune_process_start_time_seconds", "gauge",
	 "When the counters were made (Unix time)"},
	{K_SNAPSHOT_TIME, S_PROCESS, "socktune_snapshot_time_seconds", "gauge",
	 "When the file's last snapshot was written (Unix time)"},
	{K_QUICKACK, S_PROCESS, "socktune_quickack_rearms_total", "counter",
	 "TCP_QUICKACK re-arms after receives"},
	{K_SETSOCKOPT, S_PROCESS, "socktune_setsockopt_failures_total", "counter",
	 "setsockopt calls of the policy the kernel refused"},
	{K_OVERRIDES, S_PROCESS, "socktune_app_overrides_refused_total", "counter",
	 "the program's own setsockopt of a governed option, undone by the policy"},
	{K_RETIRED, S_PROCESS, "socktune_retired_listeners_total", "counter",
	 "closed listeners whose slot a new listener took"},
	{K_RETIRED_ACCEPTED, S_PROCESS, "socktune_retired_accepted_total", "counter",
	 "connections those retired listeners had accepted"},
	{K_OVERFLOWS, S_PROCESS, "socktune_listen_overflows_total", "counter",
	 "TcpExt ListenOverflows of the process's network namespace since it started (every "
	 "listener in the namespace counts)"},
	{K_DROPS, S_PROCESS, "socktune_listen_drops_total", "counter",
	 "TcpExt ListenDrops of the process's network namespace since it started"},
	{K_ACCEPTED, S_LISTENER, "socktune_listener_accepted_total", "counter",
	 "connections accepted on the listener"},
	{K_BACKLOG, S_LISTENER, "socktune_listener_backlog", "gauge",
	 "the listen backlog in effect, read back from the kernel"},
	{K_QUEUE_PEAK, S_LISTENER, "socktune_listener_accept_queue_peak", "gauge",
	 "the deepest accept queue sampled (connections waiting for accept)"},
	{K_QUEUE, S_LISTENER, "socktune_listener_accept_queue", "gauge",
	 "the accept queue at the latest sample"},
	{K_SAMPLES, S_LISTENER, "socktune_listener_accept_queue_samples_total", "counter",
	 "accept queue samples taken (at most one per 100 ms)"},
	{K_RCVBUF, S_LISTENER, "socktune_listener_rcvbuf_bytes", "gauge",
	 "SO_RCVBUF in effect, as the kernel reports it (twice the request); absent when not set"},
	{K_SNDBUF, S_LISTENER, "socktune_listener_sndbuf_bytes", "gauge",
	 "SO_SNDBUF in effect, as the kernel reports it; absent when not set"},
	{K_ADOPTED, S_LISTENER, "socktune_listener_adopted", "gauge",
	 "1: an inherited listener, tuned at its first accept"},
	{K_CLOSED, S_LISTENER, "socktune_listener_closed", "gauge",
	 "1: the program has closed the listener (shown until its slot is reused)"},
};

/* A label value: backslash, double quote and newline escaped as the format says; a byte
 * that does not start a valid UTF-8 character becomes U+FFFD (the format is UTF-8). */
static void label(FILE *out, const char *name, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	fprintf(out, "%s=\"", name);
	while (*u) {
		if (*u == '\\' || *u == '"') {
			fprintf(out, "\\%c", *u++);
		} else if (*u == '\n') {
			fputs("\\n", out);
			u++;
		} else if (*u < 0x80) {
			fputc(*u++, out);
		} else {
			int len = st_utf8_len(u);
			if (len) {
				fwrite(u, 1, (size_t)len, out);
				u += len;
			} else {
				fputs("\xef\xbf\xbd", out);
				u++;
			}
		}
	}
	fputc('"', out);
}

/* The address of "127.0.0.1:80" or "[::1]:80", without the port (a label of its own). */
static void address_of(const char *addr, char *out, size_t n)
{
	const char *colon = strrchr(addr, ':');
	size_t len = colon ? (size_t)(colon - addr) : strlen(addr);
	if (len >= 2 && addr[0] == '[' && addr[len - 1] == ']') {
		addr++;
		len -= 2;
	}
	snprintf(out, n, "%.*s", (int)len, addr);
}

/* The value of key for a process (l NULL) or one of its listeners, into buf; 0 when it has
 * none (a buffer not set, netns counters read from another namespace). */
static int value(enum key k, const struct stats_view *v, const struct st_stats_listener *l,
                 char *buf, size_t n)
{
	const struct st_stats_file *f = v->f;
	unsigned long long u = 0;
	long long s;
	switch (k) {
	case K_READABLE:
		u = 1;
		break;
	case K_RUNNING:
		u = (unsigned long long)stats_running(f);
		break;
	case K_LIVE:
		u = (unsigned long long)v->src.live;
		break;
	case K_STARTED:
		snprintf(buf, n, "%lld", (long long)f->started);
		return 1;
	case K_SNAPSHOT_TIME:
		if (f->snapshot_ns <= 0)
			return 0;
		snprintf(buf, n, "%lld.%09lld", (long long)(f->snapshot_ns / 1000000000),
		         (long long)(f->snapshot_ns % 1000000000));
		return 1;
	case K_QUICKACK:
		u = f->quickack_rearms;
		break;
	case K_SETSOCKOPT:
		u = f->setsockopt_failures;
		break;
	case K_OVERRIDES:
		u = f->app_overrides_refused;
		break;
	case K_RETIRED:
		u = f->retired_listeners;
		break;
	case K_RETIRED_ACCEPTED:
		u = f->retired_accepted;
		break;
	case K_OVERFLOWS:
	case K_DROPS:
		s = k == K_OVERFLOWS ? stats_delta(v->ns.overflows, f->listen_overflows_start)
		                     : stats_delta(v->ns.drops, f->listen_drops_start);
		if (s < 0)
			return 0;
		u = (unsigned long long)s;
		break;
	case K_ACCEPTED:
		u = l->accepted;
		break;
	case K_BACKLOG:
		snprintf(buf, n, "%d", (int)l->backlog);
		return 1;
	case K_QUEUE_PEAK:
		u = l->queue_peak;
		break;
	case K_QUEUE:
		u = l->queue_last;
		break;
	case K_SAMPLES:
		u = l->samples;
		break;
	case K_RCVBUF:
	case K_SNDBUF:
		s = k == K_RCVBUF ? l->rcvbuf : l->sndbuf;
		if (s < 0)
			return 0;
		u = (unsigned long long)s;
		break;
	case K_ADOPTED:
		u = l->adopted != 0;
		break;
	case K_CLOSED:
		u = l->state == ST_SLOT_CLOSED;
		break;
	}
	snprintf(buf, n, "%llu", u);
	return 1;
}

static void samples(FILE *out, const struct family *fam, const char *path,
                    const struct stats_view *v)
{
	char val[48], pid[24];
	if (fam->scope == S_FILE) {
		fputs(fam->name, out);
		fputc('{', out);
		label(out, "file", path);
		fprintf(out, "} %s\n", v ? (value(fam->key, v, NULL, val, sizeof val), val) : "0");
		return;
	}
	if (!v)
		return;
	snprintf(pid, sizeof pid, "%lld", (long long)v->f->pid);
	if (fam->scope == S_PROCESS) {
		if (value(fam->key, v, NULL, val, sizeof val))
			fprintf(out, "%s{pid=\"%s\"} %s\n", fam->name, pid, val);
		return;
	}
	uint32_t n = v->f->listeners_used < ST_STATS_LISTENERS ? v->f->listeners_used
	                                                        : ST_STATS_LISTENERS;
	for (uint32_t i = 0; i < n; i++) {
		const struct st_stats_listener *l = &v->f->listener[i];
		char addr[sizeof l->addr];
		if ((l->state != ST_SLOT_LIVE && l->state != ST_SLOT_CLOSED) ||
		    !value(fam->key, v, l, val, sizeof val))
			continue;
		address_of(l->addr, addr, sizeof addr);
		fprintf(out, "%s{pid=\"%s\",", fam->name, pid);
		label(out, "address", addr);
		fprintf(out, ",port=\"%u\",slot=\"%u\"} %s\n", l->port, i, val);
	}
}

void stats_prometheus(FILE *out, const char *const *paths, struct stats_view *const *views,
                      int n)
{
	/* Two files of one process (the same path given twice, a stale file whose pid came
	 * back) would give the same series twice, which a scraper refuses whole: the first
	 * is shown.  A path given twice is one file series too. */
	struct stats_view *shown[STATS_MAX_FILES];
	int again[STATS_MAX_FILES];
	for (int i = 0; i < n && i < STATS_MAX_FILES; i++) {
		again[i] = 0;
		for (int j = 0; j < i && !again[i]; j++)
			again[i] = strcmp(paths[j], paths[i]) == 0;
		shown[i] = views[i];
		for (int j = 0; shown[i] && j < i; j++)
			if (shown[j] && shown[j]->f->pid == views[i]->f->pid) {
				fprintf(stderr, "socktune stats: %s: pid %lld is shown from %s already: "
				        "left out\n", paths[i], (long long)views[i]->f->pid, paths[j]);
				shown[i] = NULL;
			}
	}
	for (size_t k = 0; k < sizeof families / sizeof families[0]; k++) {
		const struct family *fam = &families[k];
		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name,
		        fam->type);
		for (int i = 0; i < n && i < STATS_MAX_FILES; i++) {
			if (fam->scope != S_FILE)
				samples(out, fam, paths[i], shown[i]);
			else if (!again[i])
				samples(out, fam, paths[i], views[i]);
		}
	}
}
