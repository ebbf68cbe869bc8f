/* `socktune stats --format prometheus FILE...`: the counters of stats files in the Prometheus
 * text exposition format (version 0.0.4), for node_exporter's textfile collector or any
 * scraper.  Each family once, its HELP and TYPE lines, then its samples from every file:
 * the format wants a family's samples together, so all files are read first (stats.c).
 * Counters end in _total; the labels are record.h's names: a process's samples carry pid and
 * netns (the inode), a listener's also addr (without the port), port and slot (two listeners
 * may share an address and port: SO_REUSEPORT, or a reload whose closed listener is still
 * shown).  No timestamps: the textfile collector refuses them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/stats.h"
#include "promtext.h"
#include "record.h"

enum scope { S_FILE, S_PROCESS, S_LISTENER };

enum metric {
	M_READABLE, M_RUNNING, M_LIVE, M_STARTED, M_SNAPSHOT_TIME, M_QUICKACK, M_SETSOCKOPT,
	M_OVERRIDES, M_RETIRED, M_RETIRED_ACCEPTED, M_OVERFLOWS, M_DROPS,
	M_ACCEPTED, M_BACKLOG, M_QUEUE_NOW, M_QUEUE_KERNEL, M_QUEUE_PEAK, M_QUEUE, M_SAMPLES, M_RCVBUF, M_SNDBUF, M_ADOPTED,
	M_CLOSED,
};

static const struct prom_family families[] = {
	{M_READABLE, S_FILE, "socktune_stats_file_readable", "gauge",
	 "1 when the stats file could be read, 0 when not (missing, not a stats file, another version)"},
	{M_RUNNING, S_PROCESS, "socktune_process_running", "gauge",
	 "1 while the process that made the counters runs"},
	{M_LIVE, S_PROCESS, "socktune_values_live", "gauge",
	 "1: values read from the running process now; 0: from the file's last snapshot"},
	{M_STARTED, S_PROCESS, "socktune_process_start_time_seconds", "gauge",
	 "When the counters were made (Unix time)"},
	{M_SNAPSHOT_TIME, S_PROCESS, "socktune_snapshot_time_seconds", "gauge",
	 "When the file's last snapshot was written (Unix time)"},
	{M_QUICKACK, S_PROCESS, "socktune_quickack_rearms_total", "counter",
	 "TCP_QUICKACK re-arms after receives"},
	{M_SETSOCKOPT, S_PROCESS, "socktune_setsockopt_failures_total", "counter",
	 "setsockopt calls of the policy the kernel refused"},
	{M_OVERRIDES, S_PROCESS, "socktune_app_overrides_refused_total", "counter",
	 "the program's own setsockopt of a governed option, undone by the policy"},
	{M_RETIRED, S_PROCESS, "socktune_retired_listeners_total", "counter",
	 "closed listeners whose slot a new listener took"},
	{M_RETIRED_ACCEPTED, S_PROCESS, "socktune_retired_accepted_total", "counter",
	 "connections those retired listeners had accepted"},
	{M_OVERFLOWS, S_PROCESS, "socktune_listen_overflows_total", "counter",
	 "TcpExt ListenOverflows of the process's network namespace since it started (every "
	 "listener in the namespace counts)"},
	{M_DROPS, S_PROCESS, "socktune_listen_drops_total", "counter",
	 "TcpExt ListenDrops of the process's network namespace since it started"},
	{M_ACCEPTED, S_LISTENER, "socktune_listener_accepted_total", "counter",
	 "connections accepted on the listener"},
	{M_BACKLOG, S_LISTENER, PROM_LISTENER_BACKLOG},
	{M_QUEUE_NOW, S_LISTENER, PROM_LISTENER_QUEUE_LENGTH},
	{M_QUEUE_KERNEL, S_LISTENER, "socktune_listener_queue_length_from_kernel", "gauge",
	 "1: socktune_listener_queue_length was read from the kernel when the exporter ran; 0: "
	 "it is the file's latest sample (the kernel could not be read)"},
	{M_QUEUE_PEAK, S_LISTENER, "socktune_listener_accept_queue_peak", "gauge",
	 "the deepest accept queue sampled (connections waiting for accept)"},
	{M_QUEUE, S_LISTENER, "socktune_listener_accept_queue", "gauge",
	 "the accept queue at the latest sample"},
	{M_SAMPLES, S_LISTENER, "socktune_listener_accept_queue_samples_total", "counter",
	 "accept queue samples taken (at most one per 100 ms)"},
	{M_RCVBUF, S_LISTENER, PROM_LISTENER_RCVBUF},
	{M_SNDBUF, S_LISTENER, PROM_LISTENER_SNDBUF},
	{M_ADOPTED, S_LISTENER, "socktune_listener_adopted", "gauge",
	 "1: an inherited listener, tuned at its first accept"},
	{M_CLOSED, S_LISTENER, "socktune_listener_closed", "gauge",
	 "1: the program has closed the listener (shown until its slot is reused)"},
};

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
static int value(enum metric k, const struct stats_view *v, const struct st_stats_listener *l,
                 char *buf, size_t n)
{
	const struct st_stats_file *f = v->f;
	unsigned long long u = 0;
	long long s;
	switch (k) {
	case M_READABLE:
		u = 1;
		break;
	case M_RUNNING:
		u = (unsigned long long)stats_running(f);
		break;
	case M_LIVE:
		u = (unsigned long long)v->src.live;
		break;
	case M_STARTED:
		snprintf(buf, n, "%lld", (long long)f->started);
		return 1;
	case M_SNAPSHOT_TIME:
		if (f->snapshot_ns <= 0)
			return 0;
		snprintf(buf, n, "%lld.%09lld", (long long)(f->snapshot_ns / 1000000000),
		         (long long)(f->snapshot_ns % 1000000000));
		return 1;
	case M_QUICKACK:
		u = f->quickack_rearms;
		break;
	case M_SETSOCKOPT:
		u = f->setsockopt_failures;
		break;
	case M_OVERRIDES:
		u = f->app_overrides_refused;
		break;
	case M_RETIRED:
		u = f->retired_listeners;
		break;
	case M_RETIRED_ACCEPTED:
		u = f->retired_accepted;
		break;
	case M_OVERFLOWS:
	case M_DROPS:
		s = k == M_OVERFLOWS ? stats_delta(v->ns.overflows, f->listen_overflows_start)
		                     : stats_delta(v->ns.drops, f->listen_drops_start);
		if (s < 0)
			return 0;
		u = (unsigned long long)s;
		break;
	case M_ACCEPTED:
		u = l->accepted;
		break;
	case M_BACKLOG:
		snprintf(buf, n, "%d", (int)l->backlog);
		return 1;
	case M_QUEUE_NOW:
	case M_QUEUE_KERNEL: {
		int kq, q = stats_queue_now(v, (int)(l - f->listener), &kq);
		u = k == M_QUEUE_NOW ? (unsigned long long)q : (unsigned long long)kq;
		break;
	}
	case M_QUEUE_PEAK:
		u = l->queue_peak;
		break;
	case M_QUEUE:
		u = l->queue_last;
		break;
	case M_SAMPLES:
		u = l->samples;
		break;
	case M_RCVBUF:
	case M_SNDBUF:
		s = k == M_RCVBUF ? l->rcvbuf : l->sndbuf;
		if (s < 0)
			return 0;
		u = (unsigned long long)s;
		break;
	case M_ADOPTED:
		u = l->adopted != 0;
		break;
	case M_CLOSED:
		u = l->state == ST_SLOT_CLOSED;
		break;
	}
	snprintf(buf, n, "%llu", u);
	return 1;
}

static void samples(FILE *out, const struct prom_family *fam, const char *path,
                    const struct stats_view *v)
{
	char val[48];
	if (fam->scope == S_FILE) {
		fputs(fam->name, out);
		fputc('{', out);
		prom_label(out, 1, rec_keys[K_STS_FILE].name, path);
		fprintf(out, "} %s\n",
		        v ? (value((enum metric)fam->key, v, NULL, val, sizeof val), val) : "0");
		return;
	}
	if (!v)
		return;
	/* a process's labels: pid, and its network namespace where the file names it */
	char who[80];
	long long netns = stats_netns_inode(v->f->netns);
	int w = snprintf(who, sizeof who, "%s=\"%lld\"", rec_keys[K_PID].name, (long long)v->f->pid);
	if (netns >= 0 && w > 0 && (size_t)w < sizeof who)
		snprintf(who + w, sizeof who - (size_t)w, ",%s=\"%lld\"", rec_keys[K_NETNS].name, netns);
	if (fam->scope == S_PROCESS) {
		if (value((enum metric)fam->key, v, NULL, val, sizeof val))
			fprintf(out, "%s{%s} %s\n", fam->name, who, val);
		return;
	}
	uint32_t n = v->f->listeners_used < ST_STATS_LISTENERS ? v->f->listeners_used
	                                                        : ST_STATS_LISTENERS;
	for (uint32_t i = 0; i < n; i++) {
		const struct st_stats_listener *l = &v->f->listener[i];
		char addr[sizeof l->addr];
		if ((l->state != ST_SLOT_LIVE && l->state != ST_SLOT_CLOSED) ||
		    !value((enum metric)fam->key, v, l, val, sizeof val))
			continue;
		address_of(l->addr, addr, sizeof addr);
		fprintf(out, "%s{%s", fam->name, who);
		prom_label(out, 0, rec_keys[K_ADDR].name, addr);
		fprintf(out, ",%s=\"%u\",%s=\"%u\"} %s\n", rec_keys[K_PORT].name, l->port,
		        rec_keys[K_STS_SLOT].name, i, val);
	}
}

void stats_prometheus(FILE *out, const char *const *paths, struct stats_view *const *views,
                      int n)
{
	/* Two files of one process (the same path given twice, a stale file whose pid came
	 * back) would give the same series twice, which a scraper refuses whole: the first
	 * is shown.  A path given twice is one file series too. */
	struct stats_view **shown = calloc((size_t)n + 1, sizeof *shown);
	int *again = calloc((size_t)n + 1, sizeof *again);
	if (!shown || !again) {
		perror("socktune stats");
		free(shown);
		free(again);
		return;
	}
	for (int i = 0; i < n; i++) {
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
		const struct prom_family *fam = &families[k];
		prom_head(out, fam);
		for (int i = 0; i < n; i++) {
			if (fam->scope != S_FILE)
				samples(out, fam, paths[i], shown[i]);
			else if (!again[i])
				samples(out, fam, paths[i], views[i]);
		}
	}
	free(shown);
	free(again);
}
