/* After attach set TCP_NODELAY on live connections: did the stall move to the peers?
 * A client that writes each message in two pieces with Nagle on (an MQTT client at QoS 1)
 * waited, before, for the server's Nagle; with NODELAY on the server it waits instead for the
 * server's delayed ACK of its first piece (~40 ms), which no option of attach's removes from
 * outside but --delack-max (Linux 6.15) or the route's quickack.  So the connections tuned are
 * sampled twice through sock_diag, a second apart, and doctor's rule for that stall
 * (doc_client_nagle_stall) judges each; a listener whose peers show it is said once, with the
 * fix.  Only with --connections and --nodelay, and not when the policy caps the delay
 * already: it costs attach that second. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/attach.h"
#include "host/clock.h"
#include "findings/findings.h"

int attach_watch_wanted(const struct attach_state *t)
{
	const struct st_policy *p = t->p;
	return t->connections && !t->wrapper && st_on(p, ST_V_NODELAY) && !st_on(p, ST_V_DRY_RUN) &&
	       !st_has(p, ST_V_DELACK_MAX) && !st_has(p, ST_V_RTO_MIN);
}

void attach_watch_add(struct attach_state *t, const struct service *svc, const struct svc_sock *s,
                      int pid, int fd)
{
	if (t->nwatch == t->capwatch) {
		size_t cap = t->capwatch ? 2 * t->capwatch : 16;
		if (cap > 4096)
			return; /* enough to judge by */
		struct attach_watched *v = realloc(t->watch, cap * sizeof *v);
		if (!v)
			return;
		t->watch = v;
		t->capwatch = cap;
	}
	struct attach_watched *w = &t->watch[t->nwatch++];
	*w = (struct attach_watched){.svc = svc, .ino = s->ino, .pid = pid, .fd = fd,
	                             .family = s->family, .sport = s->sport};
	memcpy(w->src, s->src, sizeof w->src);
	memcpy(w->dst, s->dst, sizeof w->dst);
}

struct sample {
	struct attach_state *t;
	const struct service *svc;
	int second; /* 0: the first sample, 1: the second */
};

static void sampled(const struct diag_sock *s, void *ctx)
{
	struct sample *x = ctx;
	for (size_t k = 0; k < x->t->nwatch; k++) {
		struct attach_watched *w = &x->t->watch[k];
		if (w->svc != x->svc || w->ino != s->inode || !s->info_len)
			continue;
		w->ti[x->second] = s->ti;
		w->have |= 1 << x->second;
		return;
	}
}

/* Each service's watched connections in one dump (/proc/PID/net has no tcp_info: a service
 * read from there is not judged) */
static void sample_all(struct attach_state *t, int second)
{
	for (size_t k = 0; k < t->nwatch; k++) {
		const struct service *svc = t->watch[k].svc;
		int first_of_svc = 1;
		for (size_t j = 0; j < k && first_of_svc; j++)
			first_of_svc = t->watch[j].svc != svc;
		if (!first_of_svc || svc->nl < 0)
			continue;
		struct sample x = {t, svc, second};
		diag_dump(svc->nl, 1u << TS_ESTABLISHED, 1, sampled, &x);
	}
}

static void exchanges(const struct attach_watched *w, double seconds, struct doc_exchanges *x)
{
	const struct diag_tcp_info *a = &w->ti[0], *b = &w->ti[1];
	*x = (struct doc_exchanges){
		.segs_in = b->data_segs_in - a->data_segs_in,
		.segs_out = b->data_segs_out - a->data_segs_out,
		.acks_out = (b->segs_out - a->segs_out) - (b->data_segs_out - a->data_segs_out),
		.bytes_in = b->bytes_received - a->bytes_received,
		.bytes_out = b->bytes_sent - a->bytes_sent,
		.ato_us = a->ato > b->ato ? a->ato : b->ato,
		.rcv_mss = b->rcv_mss,
		.seconds = seconds,
	};
}

static void say(struct attach_state *t, const struct attach_watched *w,
                const struct doc_exchanges *x)
{
	char addr[64], peer[INET6_ADDRSTRLEN] = "?", target[48];
	diag_addr(w->family, w->src, w->sport, addr, sizeof addr);
	inet_ntop(w->family, w->dst, peer, sizeof peer);
	if (w->svc->scope == SVC_PORT)
		snprintf(target, sizeof target, ":%u", w->sport);
	else
		snprintf(target, sizeof target, "--ports %u %d", w->sport, w->svc->pid);
	char delack[96], route[96];
	snprintf(delack, sizeof delack, "socktune attach --delack-max 5ms --connections %s", target);
	snprintf(route, sizeof route, "socktune check --route %s", peer);
	struct rec *r = attach_warning(t, "client-nagle-stall", w->pid, w->fd, addr);
	struct rec *fix = rec_arr(r, K_FIX);
	rec_str(fix, 0, delack);
	rec_str(fix, 0, route);
	char note[300];
	snprintf(note, sizeof note, "its peers now wait for this server's delayed ACK instead (their "
	         "own Nagle: %.0f small segments a second each way, this server's ACKs sent alone at "
	         "its %u ms timer); --delack-max needs Linux 6.15", (double)x->segs_in / x->seconds,
	         x->ato_us / 1000);
	rec_str(r, K_NOTE, note);
	attach_warning_end(t, r, "client-nagle-stall", 1);
}

void attach_watch_check(struct attach_state *t)
{
	if (!t->nwatch)
		return;
	sample_all(t, 0);
	double t0 = clock_mono_s();
	attach_reset_wait(t, 1); /* (the second between the samples: attachreset.c's look too) */
	sample_all(t, 1);
	double seconds = clock_mono_s() - t0;
	for (size_t k = 0; k < t->nwatch; k++) {
		struct attach_watched *w = &t->watch[k];
		struct doc_exchanges x;
		if (w->have != 3)
			continue; /* closed meanwhile */
		exchanges(w, seconds, &x);
		if (!doc_client_nagle_stall(&x))
			continue;
		int said = 0; /* one line per listener */
		for (size_t j = 0; j < k && !said; j++)
			said = t->watch[j].svc == w->svc && t->watch[j].sport == w->sport &&
			       t->watch[j].stalled;
		w->stalled = 1;
		if (!said)
			say(t, w, &x);
	}
}
