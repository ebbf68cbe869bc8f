/* socktune watch's connection sample: the established connections of each listener, counted.
 * The listener sample asks the kernel for listeners only (the state filter, TCPF_LISTEN: it
 * never walks the established table, ~0.1 ms whatever the node holds); this one asks for the
 * established connections whose local port is one of the listeners' (the inet_diag bytecode
 * filter: the kernel walks the table but answers for those only, so a node's outgoing
 * connections and the clients' ends on loopback cost no message), with tcp_info: doctor's
 * Nagle rule reads each connection's counters at this sample and the one before (their
 * difference over the spacing, up to WATCH_MAX_CONNS connections: the rest counted only),
 * so memory is bounded whatever the connections.  The same answer gives each listener's
 * path, every connection's counted: their RTTs ranked, their retransmitted share and what
 * their queues hold (path_add).
 *
 * Its cost grows with the connections, so a round answers at most WATCH_CONN_BUDGET of
 * them: the listeners are taken in turn, namespace by namespace, one dump per
 * DIAG_MAX_PORTS ports, and a round that has its budget stops after its dump; the next
 * round goes on from there (a listener is counted whole, so one with more connections than
 * the budget is a round of its own).  The connections a round did not reach keep their
 * latest sample, so the Nagle rule pairs each listener's two latest.  Rounds are spaced by
 * what they cost: at most every CONN_EVERY_S, and a round that took T s of CPU waits
 * T / CONN_SHARE before the next, but never more than WATCH_CONN_MAX_EVERY_S: what is left
 * of a round's cost past the budget is the kernel's walk of the established table, which a
 * budget does not shorten, and a watch blind for 10 minutes is worse than one at 2% of a
 * core (measured, make bench case 9 without tcp_info: 25-45 ms at 10,000 connections;
 * with tcp_info, by hand on a loaded machine: 68 ms at 10,000).  The spacing, its ceiling
 * and the age of the oldest listener's count are metrics, and a line on stderr says, once,
 * that rounds are spaced. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/clock.h"
#include "host/diag.h"
#include "watch/watch.h"

#define CONN_EVERY_S 10.0      /* connection samples, at most this often */
#define CONN_SHARE 0.002       /* of one core the connection samples may take */
#define CONN_MAX_EVERY_S WATCH_CONN_MAX_EVERY_S
#define CONN_BUDGET WATCH_CONN_BUDGET

/* The connections of the latest sample and of the one before, by cookie */
static struct watch_conn tab[2][WATCH_MAX_CONNS];
static int ntab[2], cur;

const struct watch_quantile watch_rtt_quantiles[WATCH_RTT_QS] = {
	{0, 1, "0"}, {1, 2, "0.5"}, {99, 100, "0.99"}, {1, 1, "1"}};

/* The round's smoothed RTTs, each with its listener's index, ranked once the round is done.
 * One entry per connection the round answered: about its budget, but a listener is counted
 * whole, so one of a million connections makes a round of a million (8 MiB, given back
 * after).  Past RTT_RANKED the RTTs are left out of the ranks between the least and the
 * most (those two are kept per listener whatever the count; a listener none of whose RTTs
 * was ranked says neither rank between). */
#define RTT_RANKED (1u << 20)
#define RTT_KEPT 65536 /* an array this large is kept from round to round */
struct rtt_of {
	uint32_t l, us;
};
static struct rtt_of *rtts;
static size_t nrtts, caprtts;
/* Each listener's path while a round runs, by its index (apart from the listeners: the
 * table's untouched pages stay unmapped) */
static struct watch_path p_now[WATCH_MAX_LISTENERS];

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

/* Connection s's view of the path into its listener's sums (the sample's tcp_info and
 * memory: nothing more is asked of the kernel).  tcpi_rtt is the smoothed RTT in us, 0 until
 * a first measurement (a handshake whose SYN-ACK was retransmitted gives none: Karn); the
 * lifetime tcpi_total_retrans and tcpi_segs_out (Linux 4.2) add up as whole connections,
 * so the share they give is over what the open connections have sent so far. */
static void path_add(struct watch *w, struct watch_listener *l, const struct diag_sock *s)
{
	uint32_t k = (uint32_t)(l - w->l);
	struct watch_path *p = &p_now[k];
	if (s->has_mem) {
		p->rmem += s->mem[MEM_RMEM];
		p->wmem += s->mem[MEM_QUEUED];
	}
	if (s->info_len >= offsetof(struct diag_tcp_info, segs_out) + sizeof s->ti.segs_out) {
		p->segs_out += s->ti.segs_out;
		p->retrans += s->ti.total_retrans;
	}
	if (s->info_len < offsetof(struct diag_tcp_info, rtt) + sizeof s->ti.rtt || !s->ti.rtt)
		return;
	uint32_t us = s->ti.rtt;
	if (!p->rtt_n || us < p->rtt_us[0])
		p->rtt_us[0] = us;
	if (!p->rtt_n || us > p->rtt_us[WATCH_RTT_QS - 1])
		p->rtt_us[WATCH_RTT_QS - 1] = us;
	p->rtt_n++;
	if (nrtts == caprtts && caprtts < RTT_RANKED) {
		size_t cap = caprtts ? caprtts * 2 : 4096;
		struct rtt_of *more = realloc(rtts, cap * sizeof *rtts);
		if (more)
			rtts = more, caprtts = cap;
	}
	if (nrtts < caprtts) {
		rtts[nrtts++] = (struct rtt_of){k, us};
		p->rtt_ranked++;
	}
}

static int by_listener_rtt(const void *a, const void *b)
{
	const struct rtt_of *x = a, *y = b;
	if (x->l != y->l)
		return x->l < y->l ? -1 : 1;
	return x->us < y->us ? -1 : x->us > y->us;
}

/* The round's RTTs ranked into each listener's quantiles between its least and its most:
 * by nearest rank (the ceil(q n)-th smallest), each one connection's RTT */
static void rank_rtts(void)
{
	qsort(rtts, nrtts, sizeof *rtts, by_listener_rtt);
	for (size_t a = 0, b; a < nrtts; a = b) {
		for (b = a; b < nrtts && rtts[b].l == rtts[a].l; b++)
			;
		struct watch_path *p = &p_now[rtts[a].l];
		size_t n = b - a;
		for (int q = 1; q < WATCH_RTT_QS - 1; q++) {
			const struct watch_quantile *k = &watch_rtt_quantiles[q];
			size_t rank = (k->num * n + k->den - 1) / k->den;
			p->rtt_us[q] = rtts[a + (rank ? rank - 1 : 0)].us;
		}
	}
	nrtts = 0;
	if (caprtts > RTT_KEPT) {
		free(rtts);
		rtts = NULL;
		caprtts = 0;
	}
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
	path_add(x->w, best, s);
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

/* Namespace ns's listeners' connections from listener index from on, in dumps of at most
 * DIAG_MAX_PORTS ports and, by their latest counts, WATCH_CONN_BUDGET connections, until
 * the round has its budget: the index to go on from next round, or -1 when the namespace
 * is done; *failed when a dump failed */
static int sample_ns(struct watch *w, struct watch_ns *ns, struct conn_ctx *x, int from,
                     int *failed)
{
	unsigned ports[DIAG_MAX_PORTS];
	int np = 0;
	unsigned long long expect = 0;
	struct watch_listener **batch = x->ls;
	x->n = 0;
	for (int k = from; k <= w->nl; k++) {
		struct watch_listener *l = k < w->nl ? &w->l[k] : NULL;
		if (l && (!l->used || !l->up || l->ns_ino != ns->ino))
			continue;
		int have = 0;
		for (int j = 0; l && j < np; j++)
			have |= ports[j] == l->port;
		unsigned long long more = l && l->conns_known ? l->conns : 0;
		int full = !have && (np == DIAG_MAX_PORTS || (np && expect + more > CONN_BUDGET));
		if (!l || full) {
			/* one dump, its listeners counted this round */
			if (np && diag_dump_ports(ns->nl, 1u << TS_ESTABLISHED, 1, ports, np, on_conn,
			                          x) < 0)
				*failed = 1;
			for (int j = 0; np && j < x->n; j++)
				batch[j]->conn_round = 1;
			np = x->n = 0;
			expect = 0;
			have = 0;
			if (!l)
				break;
			if (x->sockets >= CONN_BUDGET)
				return k; /* (the rest of the namespace next round) */
		}
		if (!have)
			ports[np++] = l->port;
		batch[x->n++] = l;
		expect += more;
	}
	return -1;
}

/* The connections the round did not count (their listeners are another round's) carried
 * from the table before, so that it holds every listener's latest sample */
static void carry(void)
{
	int prev = !cur;
	for (int k = 0; k < ntab[prev] && ntab[cur] < WATCH_MAX_CONNS; k++) {
		const struct watch_conn *p = &tab[prev][k];
		if (p->l->used && p->l->up && !p->l->conn_round)
			tab[cur][ntab[cur]++] = *p;
	}
	/* (by cookie again: the next round's pairing searches this table) */
	qsort(tab[cur], (size_t)ntab[cur], sizeof tab[cur][0], by_cookie);
}

void watch_conn_sample(struct watch *w, double now)
{
	static struct conn_ctx x; /* (large) */
	if (w->conn_every == 0)
		w->conn_every = CONN_EVERY_S;
	if (now < w->next_conn)
		return;
	double t = clock_mono_s(), cpu = clock_cpu_s();
	memset(&x, 0, sizeof x);
	x.w = w;
	x.now = now;
	cur = !cur;
	ntab[cur] = 0;
	for (int k = 0; k < w->nl; k++) {
		w->l[k].s_conns = 0, w->l[k].conn_round = 0;
		memset(&p_now[k], 0, sizeof p_now[k]);
	}
	nrtts = 0;
	/* from where the round before stopped: its namespace (by inode: the table moves), and
	 * the listener in it */
	int start = 0;
	for (int k = 0; k < w->nns; k++)
		if (w->ns[k].ino == w->conn_ns_ino)
			start = k;
	int from = w->conn_from, failed[WATCH_MAX_NS] = {0}, whole = 1;
	w->conn_ns_ino = 0;
	w->conn_from = 0;
	for (int i = 0; i < w->nns; i++) {
		int k = (start + i) % w->nns;
		struct watch_ns *ns = &w->ns[k];
		int next = ns->nl >= 0 ? sample_ns(w, ns, &x, i == 0 ? from : 0, &failed[k]) : -1;
		if (failed[k]) {
			/* (the answer left half read: a new socket, as the listener sample does) */
			w->dump_errors++;
			close(ns->nl);
			ns->nl = watch_ns_diag(ns);
			if (ns->nl < 0)
				ns->nl = -1;
		}
		if (next >= 0 || (x.sockets >= CONN_BUDGET && i + 1 < w->nns)) {
			w->conn_ns_ino = next >= 0 ? ns->ino : w->ns[(k + 1) % w->nns].ino;
			w->conn_from = next >= 0 ? next : 0;
			whole = 0;
			break;
		}
	}
	rank_rtts();
	for (int k = 0; k < w->nl; k++) {
		struct watch_listener *l = &w->l[k];
		int bad = 0;
		for (int j = 0; j < w->nns; j++)
			bad |= failed[j] && w->ns[j].ino == l->ns_ino;
		if (l->used && l->up && l->conn_round && !bad) {
			l->conns = l->s_conns;
			l->path = p_now[k];
			l->conns_known = 1;
			l->conns_at = now;
		} else if (!l->up) {
			l->conns_known = 0;
		}
	}
	pair();
	carry();
	cpu = clock_cpu_s() - cpu;
	w->conn_samples++;
	w->conn_rounds_partial += !whole;
	w->conn_sample_seconds += clock_mono_s() - t;
	w->conn_sample_sockets = x.sockets;
	w->conn_sampled_at = now;
	/* the next one: as often as CONN_SHARE of a core allows, and never later than
	 * CONN_MAX_EVERY_S (a round's answer is bounded by the budget; what is left, the
	 * kernel's walk of the table, may then take more than the share) */
	double every = cpu / CONN_SHARE;
	every = every < CONN_EVERY_S ? CONN_EVERY_S : every > CONN_MAX_EVERY_S ? CONN_MAX_EVERY_S
	                                                                       : every;
	if (every > CONN_EVERY_S && !w->conn_spacing_said++)
		fprintf(stderr, "socktune: watch: a connection sample took %.1f ms of CPU for %llu "
		        "connections: they are counted every %.0f s, at most %.0f s apart, %d "
		        "connections a round (socktune_watch_connection_sample_interval_seconds, "
		        "socktune_watch_connection_sample_age_seconds); said once\n", cpu * 1000,
		        x.sockets, every, CONN_MAX_EVERY_S, CONN_BUDGET);
	w->conn_every = every;
	w->next_conn = now + w->conn_every;
}

double watch_conn_age(const struct watch *w, double now)
{
	double oldest = 0;
	for (int k = 0; k < w->nl; k++) {
		const struct watch_listener *l = &w->l[k];
		if (l->used && l->up && l->known && !l->excluded) {
			double age = l->conns_known ? now - l->conns_at : now - w->started;
			oldest = age > oldest ? age : oldest;
		}
	}
	return oldest;
}
