/* socktune watch's Prometheus text (exposition format 0.0.4): each family once, its HELP
 * and TYPE, then its samples; base units, counters ending in _total; labels named as
 * record.h's key table names them (netns: the namespace's inode; addr without the port;
 * port; comm, unit, container, pod: the service), never a pid, so a restarted server
 * continues its series.  A listener gone since the consumer's last read is written once as
 * socktune_listener_up 0, alone, and then let go.  No timestamps (the textfile collector
 * refuses them). */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <arpa/inet.h>

#include "host/clock.h"
#include "findings/findings.h"
#include "promtext.h"
#include "record.h"
#include "watch/watch.h"

enum scope { S_LISTENER, S_NETNS, S_FINDING, S_WATCH };
enum metric {
	M_UP, M_QUEUE, M_PEAK, M_BACKLOG, M_DROPS, M_RCVBUF, M_SNDBUF, M_SOCKETS, M_CONNS,
	M_RTT, M_RETRANS, M_RMEM, M_WMEM,
	M_NS_OVERFLOWS, M_NS_DROPS, M_NS_PASSIVE, M_NS_LISTENERS, M_FINDING,
	M_SAMPLES, M_SAMPLE_SECONDS, M_CPU, M_NAMESPACES, M_NS_NOT_FOLLOWED, M_L_NOT_FOLLOWED,
	M_DUMP_ERRORS, M_HOLDER_SCANS, M_F_NOT_FOLLOWED, M_L_SOCKETS, M_C_SAMPLES, M_C_SECONDS,
	M_C_EVERY, M_C_SOCKETS, M_H_EVERY, M_APPLIED, M_BACKOFFS, M_C_EVERY_MAX, M_C_AGE,
	M_C_BUDGET, M_C_PARTIAL, M_CLOSED, M_NS_CLOSE_OVERRUNS, M_CLOSE_NOTIFICATIONS,
};

static const struct prom_family families[] = {
	{M_UP, S_LISTENER, "socktune_listener_up", "gauge",
	 "1 while the listener is there; 0 at the one read after it went"},
	{M_QUEUE, S_LISTENER, PROM_LISTENER_QUEUE_LENGTH},
	{M_PEAK, S_LISTENER, "socktune_listener_queue_peak", "gauge",
	 "the deepest accept queue sampled since the last read (scrape or textfile)"},
	{M_BACKLOG, S_LISTENER, PROM_LISTENER_BACKLOG},
	{M_DROPS, S_LISTENER, "socktune_listener_drops_total", "counter",
	 "connection attempts the listener's sockets dropped (sk_drops: ListenDrops on this listener)"},
	{M_RCVBUF, S_LISTENER, PROM_LISTENER_RCVBUF},
	{M_SNDBUF, S_LISTENER, PROM_LISTENER_SNDBUF},
	{M_SOCKETS, S_LISTENER, "socktune_listener_sockets", "gauge",
	 "sockets listening on the address and port (more than 1: SO_REUSEPORT)"},
	{M_CONNS, S_LISTENER, "socktune_listener_connections", "gauge",
	 "established connections on it at the latest connection sample (see its interval)"},
	/* the path, from the same sample's tcp_info and skmem (no more asked of the kernel) */
	{M_RTT, S_LISTENER, "socktune_listener_rtt_seconds", "gauge",
	 "smoothed round-trip times (tcpi_rtt) of its established connections at the latest "
	 "connection sample, ranked over them by nearest rank: connection_quantile 0 the least, "
	 "1 the most, 0.5 and 0.99 between, each one connection's (those not measured yet left "
	 "out)"},
	{M_RETRANS, S_LISTENER, "socktune_listener_retransmitted_ratio", "gauge",
	 "segments its established connections retransmitted over segments they sent, over "
	 "their lives so far, at the latest connection sample (tcpi_total_retrans over "
	 "tcpi_segs_out, each summed): the path's losses as the server saw them (a peer that "
	 "stopped reading adds some)"},
	{M_RMEM, S_LISTENER, "socktune_listener_connections_receive_memory_bytes", "gauge",
	 "memory its established connections' receive queues held at the latest connection "
	 "sample, summed (skmem rmem_alloc: data the server has not read yet, with its buffers' "
	 "overhead); per connection: over socktune_listener_connections"},
	{M_WMEM, S_LISTENER, "socktune_listener_connections_send_memory_bytes", "gauge",
	 "memory its established connections' send queues held at the latest connection sample, "
	 "summed (skmem wmem_queued: data written and not acknowledged yet, with its buffers' "
	 "overhead); per connection: over socktune_listener_connections"},
	{M_NS_OVERFLOWS, S_NETNS, "socktune_netns_listen_overflows_total", "counter",
	 "TcpExt ListenOverflows: connections an accept queue of the namespace had no room for"},
	{M_NS_DROPS, S_NETNS, "socktune_netns_listen_drops_total", "counter",
	 "TcpExt ListenDrops: connection attempts the namespace's listeners dropped"},
	{M_NS_PASSIVE, S_NETNS, "socktune_netns_passive_opens_total", "counter",
	 "Tcp PassiveOpens: connections the namespace's listeners completed the handshake for, "
	 "counted by the kernel as it makes each, however short its life (a sample of the open "
	 "ones misses those): its rate is the connections opened per second"},
	{M_NS_LISTENERS, S_NETNS, "socktune_netns_listeners", "gauge",
	 "listeners watched in the namespace"},
	{M_FINDING, S_FINDING, "socktune_finding", "gauge",
	 "1 while one of doctor's findings holds: raised by a window, held while it recurs in "
	 "any of the last 6 windows, cleared after 6 quiet ones in a row (its fixes: the line on "
	 "stderr when it appeared)"},
	{M_SAMPLES, S_WATCH, "socktune_watch_samples_total", "counter",
	 "listener samples taken (every namespace each)"},
	{M_SAMPLE_SECONDS, S_WATCH, "socktune_watch_sample_seconds_total", "counter",
	 "wall time the listener samples took"},
	{M_CPU, S_WATCH, "socktune_watch_cpu_seconds_total", "counter",
	 "CPU time socktune watch used (user and system)"},
	{M_NAMESPACES, S_WATCH, "socktune_watch_namespaces", "gauge",
	 "network namespaces watched"},
	{M_NS_NOT_FOLLOWED, S_WATCH, "socktune_watch_namespaces_not_followed", "gauge",
	 "network namespaces past the cap, not watched"},
	{M_L_NOT_FOLLOWED, S_WATCH, "socktune_watch_listeners_not_followed", "gauge",
	 "listeners past the cap, not watched"},
	{M_DUMP_ERRORS, S_WATCH, "socktune_watch_dump_errors_total", "counter",
	 "listener dumps the kernel refused or cut short"},
	{M_HOLDER_SCANS, S_WATCH, "socktune_watch_holder_scans_total", "counter",
	 "walks of /proc/PID/fd to name a new listener's service"},
	{M_F_NOT_FOLLOWED, S_WATCH, "socktune_watch_findings_not_followed_total", "counter",
	 "findings past the cap of those followed, not shown"},
	{M_L_SOCKETS, S_WATCH, "socktune_watch_listener_sample_sockets", "gauge",
	 "sockets the latest listener sample returned (the kernel's state filter: listeners only)"},
	{M_C_SAMPLES, S_WATCH, "socktune_watch_connection_samples_total", "counter",
	 "connection samples taken (each listener's established connections counted)"},
	{M_C_SECONDS, S_WATCH, "socktune_watch_connection_sample_seconds_total", "counter",
	 "wall time the connection samples took"},
	{M_C_EVERY, S_WATCH, "socktune_watch_connection_sample_interval_seconds", "gauge",
	 "seconds between connection samples now: 10, more when one costs over 0.2% of a core, "
	 "at most socktune_watch_connection_sample_interval_max_seconds"},
	{M_C_EVERY_MAX, S_WATCH, "socktune_watch_connection_sample_interval_max_seconds", "gauge",
	 "the ceiling of the spacing of connection samples, whatever one costs"},
	{M_C_AGE, S_WATCH, "socktune_watch_connection_sample_age_seconds", "gauge",
	 "seconds since the listener counted longest ago had its connections counted (the "
	 "Nagle rule is blind to a listener for as long)"},
	{M_C_BUDGET, S_WATCH, "socktune_watch_connection_sample_budget", "gauge",
	 "connections a connection sample answers at most: past it, the next listeners are "
	 "the next sample's"},
	{M_C_PARTIAL, S_WATCH, "socktune_watch_connection_samples_partial_total", "counter",
	 "connection samples that stopped at their budget (the rest of the listeners next)"},
	{M_C_SOCKETS, S_WATCH, "socktune_watch_connection_sample_sockets", "gauge",
	 "connections the latest connection sample returned (the kernel's port filter: the "
	 "listeners' own)"},
	{M_H_EVERY, S_WATCH, "socktune_watch_holder_scan_interval_seconds", "gauge",
	 "seconds between walks of /proc/PID/fd now: 1, more when one costs over 0.2% of a core"},
	{M_APPLIED, S_WATCH, "socktune_watch_applied_changes_total", "counter",
	 "socket options --apply changed (each in the journal; 0 without --apply)"},
	{M_BACKOFFS, S_WATCH, "socktune_watch_apply_backoffs_total", "counter",
	 "values --apply set that someone set otherwise after: watch backed off from them"},
	{M_CLOSED, S_LISTENER, "socktune_listener_connections_closed_total", "counter",
	 "connections of the listener the kernel freed since watch followed it, counted from the "
	 "kernel's destroy notifications (sock_diag), so a connection of 50 ms counts as any "
	 "other; its rate is the connections closed a second; notifications the kernel dropped "
	 "are counted in socktune_netns_close_overruns_total (absent: not read in that namespace)"},
	{M_NS_CLOSE_OVERRUNS, S_NETNS, "socktune_netns_close_overruns_total", "counter",
	 "times the kernel dropped destroy notifications of the namespace, watch's buffer full "
	 "(ENOBUFS; one or more each time): socktune_listener_connections_closed_total "
	 "undercounts by those"},
	{M_CLOSE_NOTIFICATIONS, S_WATCH, "socktune_watch_close_notifications_total", "counter",
	 "destroy notifications read: every TCP socket freed in the namespaces watched, the "
	 "listeners' connections among them (what counting them costs)"},
};

static void listener_labels(FILE *out, const struct watch_listener *l)
{
	char ns[24], addr[64] = "?", port[8];
	snprintf(ns, sizeof ns, "%llu", l->ns_ino);
	inet_ntop(l->family, l->addr, addr, sizeof addr);
	snprintf(port, sizeof port, "%u", l->port);
	prom_label(out, 1, rec_keys[K_NETNS].name, ns);
	prom_label(out, 0, rec_keys[K_ADDR].name, addr);
	prom_label(out, 0, rec_keys[K_PORT].name, port);
	prom_label(out, 0, rec_keys[K_COMM].name, l->id.comm);
	prom_label(out, 0, rec_keys[K_WCH_UNIT].name, l->id.unit);
	prom_label(out, 0, rec_keys[K_WCH_CONTAINER].name, l->id.container);
	prom_label(out, 0, rec_keys[K_WCH_POD].name, l->id.pod);
	prom_label(out, 0, rec_keys[K_WCH_POD_NAME].name, l->id.pod_name);
}

static int is_path(int key)
{
	return key == M_RTT || key == M_RETRANS || key == M_RMEM || key == M_WMEM;
}

static int shown(const struct watch_listener *l)
{
	return l->used && l->known && !l->excluded;
}

/* The path families of listener l: from its latest connection sample (none before one) */
static void path_samples(FILE *out, const struct prom_family *f, const struct watch_listener *l)
{
	const struct watch_path *p = &l->path;
	if (f->key == M_RTT) {
		for (int q = 0; q < WATCH_RTT_QS; q++) {
			int between = q > 0 && q < WATCH_RTT_QS - 1;
			/* a middle rank over some of the connections only (past the round's cap of
			 * ranked RTTs) would be a guess: left out, the least and the most stay exact */
			if (!p->rtt_n || (between && p->rtt_ranked < p->rtt_n))
				continue;
			fprintf(out, "%s{", f->name);
			listener_labels(out, l);
			prom_label(out, 0, rec_keys[K_WCH_RTT_QUANTILE].name, watch_rtt_quantiles[q].label);
			fprintf(out, "} %.6f\n", (double)p->rtt_us[q] / 1e6);
		}
		return;
	}
	if (f->key == M_RETRANS && !p->segs_out)
		return; /* (no connection: no share, rather than 0) */
	fprintf(out, "%s{", f->name);
	listener_labels(out, l);
	if (f->key == M_RETRANS)
		fprintf(out, "} %.9g\n", (double)p->retrans / (double)p->segs_out);
	else
		fprintf(out, "} %llu\n", f->key == M_RMEM ? p->rmem : p->wmem);
}

static unsigned long long listener_value(enum metric k, const struct watch_listener *l, int c)
{
	switch (k) {
	case M_UP:
		return (unsigned long long)l->up;
	case M_QUEUE:
		return l->queue;
	case M_PEAK:
		return l->peak[c];
	case M_BACKLOG:
		return l->backlog;
	case M_DROPS:
		return l->drops;
	case M_RCVBUF:
		return l->rb;
	case M_SNDBUF:
		return l->tb;
	case M_SOCKETS:
		return l->sockets;
	case M_CONNS:
		return l->conns;
	default:
		return 0;
	}
}

static double cpu_seconds(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void watch_samples(FILE *out, enum metric k, const struct watch *w)
{
	switch (k) {
	case M_SAMPLES:
		fprintf(out, "%llu", w->samples);
		break;
	case M_SAMPLE_SECONDS:
		fprintf(out, "%.6f", w->sample_seconds);
		break;
	case M_CPU:
		fprintf(out, "%.3f", cpu_seconds());
		break;
	case M_NAMESPACES:
		fprintf(out, "%d", w->nns);
		break;
	case M_NS_NOT_FOLLOWED:
		fprintf(out, "%llu", w->ns_not_followed);
		break;
	case M_L_NOT_FOLLOWED:
		fprintf(out, "%llu", w->listeners_not_followed);
		break;
	case M_DUMP_ERRORS:
		fprintf(out, "%llu", w->dump_errors);
		break;
	case M_HOLDER_SCANS:
		fprintf(out, "%llu", w->ident_scans);
		break;
	case M_F_NOT_FOLLOWED:
		fprintf(out, "%llu", w->findings_not_followed);
		break;
	case M_L_SOCKETS:
		fprintf(out, "%llu", w->l_sample_sockets);
		break;
	case M_C_SAMPLES:
		fprintf(out, "%llu", w->conn_samples);
		break;
	case M_C_SECONDS:
		fprintf(out, "%.6f", w->conn_sample_seconds);
		break;
	case M_C_EVERY:
		fprintf(out, "%.0f", w->conn_every);
		break;
	case M_C_SOCKETS:
		fprintf(out, "%llu", w->conn_sample_sockets);
		break;
	case M_C_EVERY_MAX:
		fprintf(out, "%.0f", WATCH_CONN_MAX_EVERY_S);
		break;
	case M_C_AGE:
		fprintf(out, "%.1f", watch_conn_age(w, clock_mono_s()));
		break;
	case M_C_BUDGET:
		fprintf(out, "%d", WATCH_CONN_BUDGET);
		break;
	case M_C_PARTIAL:
		fprintf(out, "%llu", w->conn_rounds_partial);
		break;
	case M_H_EVERY:
		fprintf(out, "%.0f", w->ident_every > 0 ? w->ident_every : 1.0);
		break;
	case M_APPLIED:
		fprintf(out, "%llu", w->applied_changes);
		break;
	case M_BACKOFFS:
		fprintf(out, "%llu", w->backoffs);
		break;
	case M_CLOSE_NOTIFICATIONS:
		fprintf(out, "%llu", watch_close_notifications());
		break;
	default:
		break;
	}
}

static void family_samples(FILE *out, const struct prom_family *f, const struct watch *w, int c)
{
	if (f->scope == S_WATCH) {
		fprintf(out, "%s ", f->name);
		watch_samples(out, (enum metric)f->key, w);
		fputc('\n', out);
		return;
	}
	if (f->scope == S_FINDING) {
		for (int k = 0; k < WATCH_MAX_FINDINGS; k++) {
			const struct watch_finding *x = &w->find[k];
			char ns[24], addr[64] = "?", port[8];
			if (!x->used || !x->holds)
				continue;
			snprintf(ns, sizeof ns, "%llu", x->ns_ino);
			inet_ntop(x->family, x->addr, addr, sizeof addr);
			snprintf(port, sizeof port, "%u", x->port);
			fprintf(out, "%s{", f->name);
			prom_label(out, 1, rec_keys[K_WCH_ID].name, x->id);
			prom_label(out, 0, rec_keys[K_KIND].name, x->kind);
			prom_label(out, 0, rec_keys[K_SEVERITY].name, doc_severity_name((enum doc_severity)x->severity));
			prom_label(out, 0, rec_keys[K_NETNS].name, ns);
			prom_label(out, 0, rec_keys[K_ADDR].name, addr);
			prom_label(out, 0, rec_keys[K_PORT].name, port);
			fputs("} 1\n", out);
		}
		return;
	}
	if (f->scope == S_NETNS) {
		for (int k = 0; k < w->nns; k++) {
			const struct watch_ns *ns = &w->ns[k];
			long long v = 0;
			if (f->key == M_NS_CLOSE_OVERRUNS) {
				unsigned long long o;
				if (watch_close_overruns(ns->ino, &o) == 0)
					fprintf(out, "%s{%s=\"%llu\"} %llu\n", f->name, rec_keys[K_NETNS].name,
					        ns->ino, o);
				continue;
			}
			if (f->key == M_NS_LISTENERS) {
				for (int j = 0; j < w->nl; j++)
					v += shown(&w->l[j]) && w->l[j].up && w->l[j].ns_ino == ns->ino;
			} else {
				v = f->key == M_NS_OVERFLOWS ? ns->overflows
				    : f->key == M_NS_DROPS   ? ns->drops
				                             : ns->passive_opens;
			}
			if (v < 0)
				continue; /* (unreadable: no sample rather than a wrong one) */
			fprintf(out, "%s{%s=\"%llu\"} %lld\n", f->name, rec_keys[K_NETNS].name, ns->ino, v);
		}
		return;
	}
	for (int k = 0; k < w->nl; k++) {
		const struct watch_listener *l = &w->l[k];
		/* a gone listener: up 0 alone, once for this consumer */
		if (!shown(l) || (!l->up && (f->key != M_UP || l->gone_said[c])))
			continue;
		if ((f->key == M_CONNS || is_path(f->key)) && !l->conns_known)
			continue; /* (not counted yet) */
		if (is_path(f->key)) {
			path_samples(out, f, l);
			continue;
		}
		unsigned long long closed = 0;
		if (f->key == M_CLOSED && (!l->up || watch_close_total(w, l, &closed) != 0))
			continue; /* (its namespace's notifications not read: no sample) */
		fprintf(out, "%s{", f->name);
		listener_labels(out, l);
			fprintf(out, "} %llu\n", f->key == M_CLOSED ? closed
		                                            : listener_value((enum metric)f->key, l, c));
	}
}

char *watch_prometheus(struct watch *w, int c, size_t *len)
{
	char *text = NULL;
	*len = 0;
	FILE *out = open_memstream(&text, len);
	if (!out)
		return NULL;
	watch_ns_counters(w);
	for (size_t k = 0; k < sizeof families / sizeof *families; k++) {
		const struct prom_family *f = &families[k];
		prom_head(out, f);
		family_samples(out, f, w, c);
	}
	int bad = ferror(out);
	if (fclose(out) != 0 || bad) {
		free(text);
		return NULL;
	}
	/* this consumer's peaks start again; a gone listener it has now said is done with it,
	 * and let go once every consumer has */
	for (int k = 0; k < w->nl; k++) {
		struct watch_listener *l = &w->l[k];
		if (!l->used)
			continue;
		l->peak[c] = l->queue;
		if (l->up)
			continue;
		l->gone_said[c] = 1;
		int all = 1;
		for (int j = 0; j < 2; j++)
			if (w->consumers & (1 << j))
				all &= l->gone_said[j];
		if (all || !shown(l))
			l->used = 0;
	}
	while (w->nl > 0 && !w->l[w->nl - 1].used)
		w->nl--;
	return text;
}
