/* socktune watch's connection sample: the established connections of each listener, counted.
 * The listener sample asks the kernel for listeners only (the state filter, TCPF_LISTEN: it
 * never walks the established table, ~0.1 ms whatever the node holds); this one asks for the
 * established connections whose local port is one of the listeners' (the inet_diag bytecode
 * filter: the kernel walks the table but answers for those only, so a node's outgoing
 * connections and the clients' ends on loopback cost no message), with tcp_info: doctor's
 * Nagle rule reads each connection's counters at this sample and the one before (their
 * difference over the spacing, up to WATCH_MAX_CONNS connections: the rest counted only),
 * so memory is bounded whatever the connections.
 *
 * Its cost grows with the connections, so it is spaced by what it costs: at most every
 * CONN_EVERY_S, and a sample that took T s of CPU waits T / CONN_SHARE before the next, so
 * connection samples take at most CONN_SHARE of one core however many there are (measured,
 * make bench case 9 without tcp_info: 25-45 ms at 10,000 connections, every 10-26 s;
 * 200-470 ms at 100,000, every 100-175 s.  With tcp_info, by hand on a loaded machine: 68 ms
 * at 10,000, every 34 s, watch at 0.4% of a core and 9.4 MiB RSS overall).  So at 10,000
 * connections the Nagle rule sees a stall after up to two such spacings.
 * The spacing is a metric (socktune_watch_connection_sample_interval_seconds) and a line on
 * stderr says when it changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diag.h"
#include "watch.h"

#define CONN_EVERY_S 10.0      /* connection samples, at most this often */
#define CONN_SHARE 0.002       /* of one core the connection samples may take */
#define CONN_MAX_EVERY_S 600.0 /* however costly, counted at least this often */

/* The connections of the latest sample and of the one before, by cookie */
static struct watch_conn tab[2][WATCH_MAX_CONNS];
static int ntab[2], cur;

const struct watch_conn *watch_conns(int *n)
{
	*n = ntab[cur];
	return tab[cur];
}

static int by_cookie(const void *a, const void *b)
{
	unsigned long long x = ((const struct watch_conn *)a)->last.cookie,
	                   y = ((const struct watch_conn *)b)->last.cookie;
	return x < y ? -1 : x > y;
}

struct conn_ctx {
	struct watch *w;
	double now;
	struct watch_listener *ls[WATCH_MAX_LISTENERS]; /* those of the ports asked */
	int n;
	unsigned long long sockets;
};

static double clock_s(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A connection to the listener that takes it: the one on its own address before a wildcard */
static void on_conn(const struct diag_sock *s, void *ctx)
{
	struct conn_ctx *x = ctx;
	struct watch_listener *best = NULL;
	int score = 0;
	x->sockets++;
	for (int k = 0; k < x->n; k++) {
		struct watch_listener *l = x->ls[k];
		if (l->port != s->sport)
			continue;
		int t = diag_listener_takes(l->family, l->addr, l->port, s->family, s->src, s->sport);
		if (t > score) {
			score = t;
			best = l;
		}
	}
	if (!best)
		return;
	best->s_conns++;
	if (ntab[cur] < WATCH_MAX_CONNS) {
		struct watch_conn *c = &tab[cur][ntab[cur]++];
		c->l = best;
		c->first = c->last = *s;
		c->first_t = c->last_t = x->now;
		c->samples = 1;
	}
}

/* Each connection of this sample paired with itself in the one before */
static void pair(void)
{
	int prev = !cur;
	qsort(tab[cur], (size_t)ntab[cur], sizeof tab[cur][0], by_cookie);
	for (int k = 0; k < ntab[cur]; k++) {
		struct watch_conn *c = &tab[cur][k];
		const struct watch_conn *p = bsearch(c, tab[prev], (size_t)ntab[prev],
		                                     sizeof tab[prev][0], by_cookie);
		if (p && p->l == c->l && p->last.inode == c->last.inode) {
			c->first = p->last;
			c->first_t = p->last_t;
			c->samples = 2;
		}
	}
}

/* Namespace ns's listeners' connections, DIAG_MAX_PORTS ports a dump; -1 when a dump failed */
static int sample_ns(struct watch *w, struct watch_ns *ns, struct conn_ctx *x)
{
	unsigned ports[DIAG_MAX_PORTS];
	int np = 0, rc = 0;
	x->n = 0;
	for (int k = 0; k <= w->nl; k++) {
		struct watch_listener *l = k < w->nl ? &w->l[k] : NULL;
		if (l && (!l->used || !l->up || l->ns_ino != ns->ino))
			continue;
		int have = 0;
		for (int j = 0; l && j < np; j++)
			have |= ports[j] == l->port;
		if (l && (have || np < DIAG_MAX_PORTS)) {
			if (!have)
				ports[np++] = l->port;
			x->ls[x->n++] = l;
			continue;
		}
		/* the end, or the ports full: one dump, and the next begun */
		if (np && diag_dump_ports(ns->nl, 1u << TS_ESTABLISHED, 1, ports, np, on_conn, x) < 0)
			rc = -1;
		np = x->n = 0;
		if (!l)
			break;
		ports[np++] = l->port;
		x->ls[x->n++] = l;
	}
	return rc;
}

void watch_conn_sample(struct watch *w, double now)
{
	static struct conn_ctx x; /* (large) */
	if (w->conn_every == 0)
		w->conn_every = CONN_EVERY_S;
	if (now < w->next_conn)
		return;
	double t = clock_s(CLOCK_MONOTONIC), cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	memset(&x, 0, sizeof x);
	x.w = w;
	x.now = now;
	cur = !cur;
	ntab[cur] = 0;
	for (int k = 0; k < w->nl; k++)
		w->l[k].s_conns = 0;
	int failed[WATCH_MAX_NS] = {0};
	for (int k = 0; k < w->nns; k++) {
		struct watch_ns *ns = &w->ns[k];
		if (ns->nl >= 0 && sample_ns(w, ns, &x) < 0) {
			/* (the answer left half read: a new socket, as the listener sample does) */
			failed[k] = 1;
			w->dump_errors++;
			close(ns->nl);
			ns->nl = diag_open(ns->pid);
			if (ns->nl < 0)
				ns->nl = -1;
		}
	}
	for (int k = 0; k < w->nl; k++) {
		struct watch_listener *l = &w->l[k];
		int bad = 0;
		for (int j = 0; j < w->nns; j++)
			bad |= failed[j] && w->ns[j].ino == l->ns_ino;
		if (l->used && l->up && !bad) {
			l->conns = l->s_conns;
			l->conns_known = 1;
		} else if (!l->up) {
			l->conns_known = 0;
		}
	}
	pair();
	cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu;
	w->conn_samples++;
	w->conn_sample_seconds += clock_s(CLOCK_MONOTONIC) - t;
	w->conn_sample_sockets = x.sockets;
	/* the next one: as often as CONN_SHARE of a core allows */
	double every = cpu / CONN_SHARE;
	every = every < CONN_EVERY_S ? CONN_EVERY_S : every > CONN_MAX_EVERY_S ? CONN_MAX_EVERY_S
	                                                                       : every;
	if (every > w->conn_every * 1.5 || every < w->conn_every / 1.5) {
		fprintf(stderr, "socktune: watch: a connection sample took %.1f ms of CPU for %llu "
		        "connections: they are counted every %.0f s%s "
		        "(socktune_watch_connection_sample_interval_seconds)\n", cpu * 1000, x.sockets,
		        every, every > CONN_EVERY_S ? ", less often, to stay within 0.2% of a core" : "");
		w->conn_every = every;
	}
	w->next_conn = now + w->conn_every;
}
