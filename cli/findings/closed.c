/* A listener's connections as the kernel freed them (window.h's struct doc_closed): each
 * destroy notification's tcp_info, read at the end of the connection's life, summed into
 * what the path rules judge.  Doctor and watch fill it the same way, from the same
 * notifications (host/diagclose.c); the rules read only this.  Pure: no syscall. */
#include <string.h>
#include <sys/socket.h>

#include "findings/window.h"

#define SSTHRESH_INITIAL 0x7fffffffu /* TCP_INFINITE_SSTHRESH: no loss has cut it yet */

int doc_flights(uint32_t segs, uint32_t iw)
{
	if (!iw)
		iw = 1;
	int k = 1;
	/* sent by the end of flight k: iw (2^k - 1), each flight twice the one before */
	for (uint64_t sent = iw, cwnd = iw; sent < segs && k < 64; k++) {
		cwnd *= 2;
		sent += cwnd;
	}
	return k;
}

/* a's network: the /24 of an IPv4 address, the /64 of an IPv6 one (a v4-mapped one: its
 * IPv4 /24, the way the route and --peer take it) */
static void net_of(int family, const unsigned char *a, struct doc_net *n)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	memset(n, 0, sizeof *n);
	if (family == AF_INET6 && memcmp(a, mapped, sizeof mapped) == 0) {
		n->family = AF_INET;
		memcpy(n->addr, a + 12, 3);
	} else if (family == AF_INET6) {
		n->family = AF_INET6;
		memcpy(n->addr, a, 8);
	} else {
		n->family = AF_INET;
		memcpy(n->addr, a, 3);
	}
}

int doc_net_has(const struct doc_net *n, int family, const unsigned char *a)
{
	struct doc_net x;
	net_of(family, a, &x);
	return x.family == n->family && memcmp(x.addr, n->addr, sizeof x.addr) == 0;
}

static void add_net(struct doc_net *nets, int *nn, int *more, int family, const unsigned char *a)
{
	for (int k = 0; k < *nn; k++)
		if (doc_net_has(&nets[k], family, a))
			return;
	if (*nn == DOC_NETS_KEEP) {
		if (more)
			(*more)++;
		return;
	}
	net_of(family, a, &nets[(*nn)++]);
}

void doc_closed_add(struct doc_closed *a, const struct diag_sock *s)
{
	const struct diag_tcp_info *t = &s->ti;
	/* a listener freed, or a socket that never had a peer: no connection */
	if (!s->dport || !s->info_len)
		return;
	a->n++;
	if (t->min_rtt == DOC_NO_RTT || t->min_rtt == 0)
		return; /* (no round trip measured: neither far nor near) */
	if (t->min_rtt < DOC_FAR_RTT_US) {
		a->near++;
		add_net(a->near_nets, &a->nnear_nets, NULL, s->family, s->dst);
		return;
	}
	a->far++;
	a->far_family = s->family;
	memcpy(a->far_peer, s->dst, sizeof a->far_peer);
	add_net(a->far_nets, &a->nfar_nets, &a->far_nets_more, s->family, s->dst);
	if (!a->far_min_rtt || t->min_rtt < a->far_min_rtt)
		a->far_min_rtt = t->min_rtt;
	a->far_segs += t->data_segs_out;
	a->far_retrans += t->total_retrans;
	if (t->total_retrans) {
		a->far_lossy++;
		a->far_cut += t->snd_ssthresh < SSTHRESH_INITIAL;
		return;
	}
	if (t->data_segs_in > DOC_ONE_REQUEST_SEGS || !t->data_segs_out)
		return;
	struct doc_gone *g = &a->one[a->next];
	a->next = (a->next + 1) % DOC_GONE_KEEP;
	a->none += a->none < DOC_GONE_KEEP;
	a->one_seen++;
	g->family = s->family;
	memcpy(g->peer, s->dst, sizeof g->peer);
	g->min_rtt = t->min_rtt;
	g->segs_out = t->data_segs_out;
	g->segs_in = t->data_segs_in;
	g->retrans = t->total_retrans;
	g->mss = t->snd_mss;
	g->bytes_sent = t->bytes_sent - t->bytes_retrans;
	g->busy_us = t->busy_time;
	g->rwnd_us = t->rwnd_limited;
}
