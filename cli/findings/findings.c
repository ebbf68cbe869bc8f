/* What doctor saw on the listeners' connections, as findings: each names its evidence (the
 * numbers that show it), the settings that cure it (fixes.c writes them), and how sure it
 * is.  No finding without evidence: each rule needs a counter that moved or a connection
 * that showed it.  The accept queue's rules are in findings_queue.c, the buffers' and the
 * kernel's TCP memory's in findings_memory.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "socktune_kernel.h"
#include "findings/window.h"
#include "findings/findings.h"

#define NO_RTT UINT32_MAX /* tcpi_min_rtt before the first rtt sample */

#define STALL_RTT_US 15000    /* a request/response connection's smoothed rtt this high ... */
                              /* ... above the path's fastest round trip */
#define CADENCE_MIN 12.0      /* responses a second on a connection held by one delayed ACK */
#define CADENCE_MAX 30.0      /* ... per response: 1 / (40 ms + rtt), ~23 */
#define RETRANS_MIN 3         /* segments sent again (and 1% of those sent), or an RTO */
#define DELACK_ATO_US 30000   /* the server's own delayed-ACK timeout grown to the 40 ms cap */
#define SMALL_SEGMENT 1024    /* bytes a segment, on average: what Nagle holds is small */
#define RTO_MIN_US 200000     /* the kernel's minimum retransmit timeout (TCP_RTO_MIN) */

int doctor_status(const struct doc_findings *fs)
{
	for (int k = 0; k < fs->n; k++)
		if (fs->f[k].severity != SEV_INFO)
			return 1;
	return fs->dropped ? 1 : 0; /* (findings past the cap: of any severity) */
}

const char *doc_severity_name(enum doc_severity s)
{
	return s == SEV_CRITICAL ? "critical" : s == SEV_WARNING ? "warning" : "info";
}

/* A TCP_NODELAY as doctor has it (1, 0; below 0 unknown): a boolean, or null */
static void nodelay_ev(struct rec *r, int k, int v)
{
	if (v < 0)
		rec_null(r, k);
	else
		rec_bool(r, k, v);
}

/* A number unknown when negative (a rate of one sample) */
static void num_ev(struct rec *r, int k, double v, int decimals)
{
	if (v < 0)
		rec_null(r, k);
	else
		rec_num(r, k, v, decimals);
}

/* The count of connections of the listener and of those that show the finding */
static void shown_ev(struct doc_finding *f, long long conns, long long hit)
{
	rec_int(f->evidence, K_CONNECTIONS_SEEN, conns);
	rec_int(f->evidence, K_SHOWING, hit);
}

void doctor_findings_free(struct doc_findings *fs)
{
	for (int k = 0; k < fs->n; k++) {
		rec_free(fs->f[k].evidence);
		fs->f[k].evidence = NULL;
	}
	fs->n = 0;
}

/* Per listener, its connections that show a signature; the worst one's numbers. */
struct tally {
	long long conns, hit, nodelay_off, listener_off;
	const struct doc_conn *worst;
};

static int request_response(const struct doc_conn *c)
{
	return DOC_DELTA(c, data_segs_in) >= 2 && DOC_DELTA(c, data_segs_out) >= 2;
}

/* Responses a second between the first and the last sample of c; -1 when seen once */
static double rate_of(const struct doc_conn *c)
{
	double dt = c->last_t - c->first_t;
	if (c->samples < 2 || dt <= 0)
		return -1;
	return (double)(c->last.ti.data_segs_out - c->first.ti.data_segs_out) / dt;
}

/* A connection's TCP_NODELAY as the rules take it: 0 when it was read 0 once (a program may
 * set it on each connection after accept); else its own read (data held with it on is
 * TCP_CORK's, not Nagle's); else 0 when Nagle was seen holding its data; else the
 * listener's, which the kernel copies at accept (*from_listener says) */
static int nodelay(const struct shared_window *d, const struct doc_conn *c, int *from_listener)
{
	*from_listener = 0;
	if (c->nodelay_off)
		return 0;
	if (c->nodelay >= 0)
		return c->nodelay;
	if (c->held_samples)
		return 0;
	*from_listener = 1;
	return d->l[c->listener].nodelay;
}

static void exchanges_of(const struct doc_conn *c, struct doc_exchanges *x);

/* The client's requests in pieces too, each held by the server's delayed ACK: the server's
 * ACKs go out alone (a third of the segments it received or more), at least at the pace of
 * a stalled exchange.  0 no; 1 yes, its timer capped already (--delack-max); 2 yes, at the
 * 40 ms cap. */
static int server_delack_too(const struct doc_conn *c)
{
	struct doc_exchanges x;
	exchanges_of(c, &x);
	if (x.seconds <= 0 || x.segs_in < 4 || 3 * x.acks_out < x.segs_in ||
	    (double)x.acks_out / x.seconds < CADENCE_MIN)
		return 0;
	return c->max_ato >= DELACK_ATO_US ? 2 : 1;
}

/* The server's Nagle held by the client's delayed ACK: its smoothed rtt far above the path's
 * fastest round trip (the client's ACK of a response's first piece comes ~40 ms late), on a
 * connection whose Nagle is on, with the response in more pieces than the request (a
 * single write has nothing for Nagle to hold), or a small piece seen held unsent: a client
 * that writes its request in pieces too (a POST's header and body) hides the first from the
 * counts, and a stall near twice the delayed-ACK timer is then both timers. */
void doc_judge_nagle(const struct shared_window *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		struct tally t = {0};
		for (size_t k = 0; k < d->nc; k++) {
			const struct doc_conn *c = &d->c[k];
			if (c->listener != l)
				continue;
			t.conns++;
			int inherited, nd = nodelay(d, c, &inherited);
			uint32_t in = DOC_DELTA(c, data_segs_in), out = DOC_DELTA(c, data_segs_out);
			if (!request_response(c) || nd == 1 ||
			    (2 * (uint64_t)out < 3 * (uint64_t)in && !c->held_samples) ||
			    c->last.ti.min_rtt == NO_RTT ||
			    c->max_rtt < (uint64_t)c->last.ti.min_rtt + STALL_RTT_US)
				continue;
			t.hit++;
			t.nodelay_off += nd == 0 && !inherited;
			t.listener_off += nd == 0 && inherited;
			if (!t.worst || c->max_rtt > t.worst->max_rtt)
				t.worst = c;
		}
		if (!t.hit)
			continue;
		const struct doc_conn *w = t.worst;
		/* the listener holds 1 and its connections 0: the program sets it on each */
		int overridden = d->l[l].nodelay == 1 && t.nodelay_off;
		int delack = server_delack_too(w);
		struct doc_finding *f = doc_add(fs, DOC_R_NAGLE_DELAYED_ACK, SEV_CRITICAL,
		                                t.nodelay_off ? "high" : "medium", d, l);
		if (!f)
			return;
		if (overridden)
			snprintf(f->summary, sizeof f->summary, "the server's small writes wait for the "
			         "client's delayed ACK: the program turns Nagle back on on each "
			         "connection it accepts (listener 1, connections 0): ~40 ms added to "
			         "responses");
		else
			snprintf(f->summary, sizeof f->summary, "the server's small writes wait for the "
			         "client's delayed ACK (Nagle on): ~40 ms added to responses%s",
			         delack ? ", ~40 more (or the delayed ACK's cap) to requests sent in "
			         "pieces" : "");
		doc_listener_evidence(f, d, l);
		struct rec *ev = f->evidence;
		shown_ev(f, t.conns, t.hit);
		rec_num(ev, K_RTT_MS, w->max_rtt / 1000.0, 1);
		rec_num(ev, K_MIN_RTT_MS, w->last.ti.min_rtt / 1000.0, 2);
		rec_int(ev, K_SEGS_IN, DOC_DELTA(w, data_segs_in));
		rec_int(ev, K_SEGS_OUT, DOC_DELTA(w, data_segs_out));
		num_ev(ev, K_SEGS_OUT_PER_S, rate_of(w), 1);
		if (w->held_samples)
			rec_int(ev, K_UNSENT_BYTES, w->held_bytes);
		if (delack) {
			struct doc_exchanges x;
			exchanges_of(w, &x);
			rec_num(ev, K_ATO_MS, w->max_ato / 1000.0, 1);
			rec_num(ev, K_ACKS_ALONE_PER_S, (double)x.acks_out / x.seconds, 1);
		}
		/* off on a connection read, or on the listener its connections inherit from */
		nodelay_ev(ev, K_LISTENER_NODELAY, d->l[l].nodelay);
		nodelay_ev(ev, K_CONNECTION_NODELAY, t.nodelay_off ? 0 : -1);
		if (!t.nodelay_off && !t.listener_off)
			rec_str(ev, K_NODELAY_WHY,
			        d->l[l].nodelay_why[0] ? d->l[l].nodelay_why : "not readable");
		if (delack == 1)
			doc_note(f, "the client's requests come in pieces too, and the server's delayed "
			         "ACK (capped at %.0f ms) holds each next piece: quick-ack ends that part",
			         w->max_ato / 1000.0);
		else if (delack == 2)
			doc_note(f, "the client's requests come in pieces too, and the server's delayed "
			         "ACK (40 ms) holds each next piece: --delack-max shortens it, quick-ack "
			         "ends it");
		doc_fix_nagle(f, d, l, overridden, delack);
	}
}

/* The server's delayed ACK holding a client that writes a request in two pieces (with Nagle
 * on, its second piece waits for the ACK of the first): the server's ato grown to the cap
 * while its own sends are answered at once. */
void doc_judge_two_write(const struct shared_window *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		struct tally t = {0};
		double worst_rate = 0;
		for (size_t k = 0; k < d->nc; k++) {
			const struct doc_conn *c = &d->c[k];
			if (c->listener != l)
				continue;
			t.conns++;
			/* each request in two pieces or more, the server's ACK timeout at its cap,
			 * and no more requests a second than one delayed ACK each allows */
			uint32_t in = DOC_DELTA(c, data_segs_in), out = DOC_DELTA(c, data_segs_out);
			double rate = rate_of(c);
			if (!request_response(c) || 2 * (uint64_t)in < 3 * (uint64_t)out ||
			    c->max_ato < DELACK_ATO_US || rate < CADENCE_MIN || rate > CADENCE_MAX)
				continue;
			t.hit++;
			if (!t.worst || rate < worst_rate) {
				t.worst = c;
				worst_rate = rate;
			}
		}
		if (!t.hit)
			continue;
		const struct doc_conn *w = t.worst;
		/* ~23 a second is the cadence of a 40 ms delayed ACK per request; a client that
		 * waits of its own accord near it is possible, and the ato is 40 ms on most
		 * connections: "medium" */
		struct doc_finding *f = doc_add(fs, DOC_R_DELAYED_ACK_TWO_WRITE, SEV_CRITICAL,
		                                "medium", d, l);
		if (!f)
			return;
		snprintf(f->summary, sizeof f->summary, "the server delays its ACK of a request's "
		         "first piece, and the client (Nagle on) holds the rest until then: ~40 ms "
		         "per request");
		doc_listener_evidence(f, d, l);
		struct rec *ev = f->evidence;
		shown_ev(f, t.conns, t.hit);
		rec_num(ev, K_ATO_MS, w->max_ato / 1000.0, 1);
		rec_num(ev, K_SEGS_OUT_PER_S, worst_rate, 1);
		rec_int(ev, K_SEGS_IN, DOC_DELTA(w, data_segs_in));
		rec_int(ev, K_SEGS_OUT, DOC_DELTA(w, data_segs_out));
		rec_num(ev, K_RTT_MS, w->max_rtt / 1000.0, 2);
		doc_fix_delack(f, d, l);
	}
}

/* A connection's exchanges between its first and its last sample */
static void exchanges_of(const struct doc_conn *c, struct doc_exchanges *x)
{
	const struct diag_tcp_info *a = &c->first.ti, *b = &c->last.ti;
	x->segs_in = b->data_segs_in - a->data_segs_in;
	x->segs_out = b->data_segs_out - a->data_segs_out;
	x->acks_out = (b->segs_out - a->segs_out) - x->segs_out;
	x->bytes_in = b->bytes_received - a->bytes_received;
	x->bytes_out = b->bytes_sent - a->bytes_sent;
	x->ato_us = c->max_ato;
	x->seconds = c->samples >= 2 ? c->last_t - c->first_t : 0;
}

int doc_client_nagle_stall(const struct doc_exchanges *x)
{
	if (x->seconds <= 0 || x->segs_in < 4 || x->segs_out < 4)
		return 0;
	/* as many each way, within 3 to 2 (more in: the two-write client; more out: the
	 * server's own Nagle), small segments each way */
	if (2 * x->segs_in >= 3 * x->segs_out || 2 * x->segs_out >= 3 * x->segs_in ||
	    x->bytes_in > x->segs_in * SMALL_SEGMENT || x->bytes_out > x->segs_out * SMALL_SEGMENT)
		return 0;
	/* the server's ACKs go out alone (its data does not carry them: a third of the
	 * segments it received or more), at the pace of its delayed-ACK timer at the cap:
	 * one or two per exchange, one exchange per 40 ms and a round trip */
	double acks = (double)x->acks_out / x->seconds;
	return x->ato_us >= DELACK_ATO_US && 3 * x->acks_out >= x->segs_in &&
	       acks >= CADENCE_MIN && acks <= 2 * CADENCE_MAX;
}

/* The client's Nagle held by the server's delayed ACK: small messages each way, the client
 * writing twice per exchange (MQTT at QoS 1: its PUBACK of a message, then its next
 * PUBLISH).  Set on the server, TCP_NODELAY brings it on (the server's answer no longer
 * waits to carry the ACK the client's second write waits for). */
void doc_judge_client_nagle(const struct shared_window *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		struct tally t = {0};
		struct doc_exchanges worst = {0};
		for (size_t k = 0; k < d->nc; k++) {
			const struct doc_conn *c = &d->c[k];
			if (c->listener != l)
				continue;
			t.conns++;
			struct doc_exchanges x;
			exchanges_of(c, &x);
			if (!doc_client_nagle_stall(&x))
				continue;
			t.hit++;
			if (!t.worst || x.acks_out * worst.seconds < worst.acks_out * x.seconds) {
				t.worst = c;
				worst = x;
			}
		}
		if (!t.hit)
			continue;
		const struct doc_conn *w = t.worst;
		/* (a client that pauses of its own accord near 40 ms looks the same: "medium") */
		struct doc_finding *f = doc_add(fs, DOC_R_DELAYED_ACK_CLIENT_NAGLE, SEV_CRITICAL,
		                                "medium", d, l);
		if (!f)
			return;
		snprintf(f->summary, sizeof f->summary, "the client's small writes (Nagle on) wait "
		         "for the server's delayed ACK of its previous one: ~40 ms per exchange");
		doc_listener_evidence(f, d, l);
		struct rec *ev = f->evidence;
		shown_ev(f, t.conns, t.hit);
		rec_num(ev, K_ATO_MS, w->max_ato / 1000.0, 1);
		rec_num(ev, K_ACKS_ALONE_PER_S, (double)worst.acks_out / worst.seconds, 1);
		rec_int(ev, K_SEGS_IN, (long long)worst.segs_in);
		rec_int(ev, K_SEGS_OUT, (long long)worst.segs_out);
		rec_num(ev, K_BYTES_PER_SEG_IN, (double)worst.bytes_in / (double)worst.segs_in, 0);
		rec_num(ev, K_BYTES_PER_SEG_OUT, (double)worst.bytes_out / (double)worst.segs_out, 0);
		nodelay_ev(ev, K_CONNECTION_NODELAY, w->nodelay);
		if (w->nodelay == 1)
			doc_note(f, "TCP_NODELAY is on: the server's answers leave at once, and the "
			         "client's next write waits for the ACK they no longer carry");
		doc_fix_delack(f, d, l);
	}
}

/* Sending held back by the peer's receive window or by the server's own send buffer */
static void limited(const struct shared_window *d, struct doc_findings *fs, int rwnd)
{
	for (int l = 0; l < d->nl; l++) {
		struct tally t = {0};
		double worst_share = 0;
		for (size_t k = 0; k < d->nc; k++) {
			const struct doc_conn *c = &d->c[k];
			if (c->listener != l)
				continue;
			t.conns++;
			uint64_t busy = DOC_DELTA(c, busy_time);
			uint64_t part = rwnd ? DOC_DELTA(c, rwnd_limited) : DOC_DELTA(c, sndbuf_limited);
			double share = doc_share(part, busy);
			if (part < LIMITED_MIN_US || share < LIMITED_SHARE)
				continue;
			t.hit++;
			if (share > worst_share) {
				worst_share = share;
				t.worst = c;
			}
		}
		if (!t.hit)
			continue;
		const struct doc_conn *w = t.worst;
		struct doc_finding *f = doc_add(fs, rwnd ? DOC_R_RECEIVE_WINDOW_LIMITED
		                                         : DOC_R_SEND_BUFFER_LIMITED,
		                                SEV_WARNING, "high", d, l);
		if (!f)
			return;
		doc_listener_evidence(f, d, l);
		struct rec *ev = f->evidence;
		shown_ev(f, t.conns, t.hit);
		rec_num(ev, K_SHARE_PCT, worst_share, 0);
		rec_num(ev, K_BUSY_MS, DOC_DELTA(w, busy_time) / 1000.0, 0);
		rec_num(ev, K_LIMITED_MS,
		        (rwnd ? DOC_DELTA(w, rwnd_limited) : DOC_DELTA(w, sndbuf_limited)) / 1000.0, 0);
		rec_int(ev, K_SND_WND_BYTES, w->last.ti.snd_wnd);
		rec_int(ev, K_UNSENT_BYTES, w->last.ti.notsent_bytes);
		rec_int(ev, K_DELIVERY_RATE, (long long)w->last.ti.delivery_rate);
		rec_int(rec_group(ev, K_OPTION + ST_V_SNDBUF), K_EFFECTIVE, w->last.mem[MEM_SNDBUF]);
		const struct doc_ns *ns = &d->ns[d->l[l].ns];
		if (rwnd) {
			snprintf(f->summary, sizeof f->summary, "the server's sends wait for the "
			         "client's receive window: the reader is slow or its buffer small; no "
			         "setting of this server changes it");
			char now[48] = "";
			if (ns->rmem[2] > 0)
				snprintf(now, sizeof now, "%lld in this namespace; ", ns->rmem[2]);
			doc_note(f, "on the reading side: read sooner; a larger receive window there "
			         "comes from net.ipv4.tcp_rmem's maximum on the reader's host (%sa fixed "
			         "SO_RCVBUF would turn its autotuning off)", now);
			continue;
		}
		snprintf(f->summary, sizeof f->summary, "the server's sends wait for room in its own "
		         "send buffer (%u bytes)", w->last.mem[MEM_SNDBUF]);
		if (ns->wmem_max >= 0 && ns->wmem_max < 4 << 20) {
			char pre[64];
			doc_in_ns(d, l, pre, sizeof pre);
			doc_fix(f, "%ssysctl -w net.core.wmem_max=%d", pre, 4 << 20);
			doc_note(f, "net.core.wmem_max caps --sndbuf (now %lld)", ns->wmem_max);
		}
		doc_fix_flags(f, d, l, "--sndbuf 4M", 1);
	}
}

void doc_judge_rwnd_limited(const struct shared_window *d, struct doc_findings *fs)
{
	limited(d, fs, 1);
}

void doc_judge_sndbuf_limited(const struct shared_window *d, struct doc_findings *fs)
{
	limited(d, fs, 0);
}

/* A connection's retransmits and retransmit timeouts over the window, its handshake's left
 * out: an accepted socket starts with its request's counts (SYN-ACKs sent again while the
 * accept queue was full, or under TCP_DEFER_ACCEPT), which carried no data.  Seen first
 * with no byte sent again, all it had sent again by then was the handshake. */
static long long data_retrans(const struct doc_conn *c, long long *rtos, int *rto_known)
{
	*rtos = 0;
	/* tcpi_bytes_retrans (Linux 4.19): no byte sent again, nothing but a handshake */
	if (c->last.info_len >= offsetof(struct diag_tcp_info, dsack_dups) &&
	    DOC_DELTA(c, bytes_retrans) == 0)
		return 0;
	int handshake = !c->from_start && c->first.ti.bytes_retrans == 0;
	/* tcpi_total_rto: Linux 6.7 */
	if (c->last.info_len >= offsetof(struct diag_tcp_info, total_rto_recoveries))
		*rtos = DOC_DELTA(c, total_rto) - (handshake ? c->first.ti.total_rto : 0);
	else
		*rto_known = 0;
	return DOC_DELTA(c, total_retrans) - (handshake ? c->first.ti.total_retrans : 0);
}

/* Segments sent again on the listeners' connections, and retransmit timeouts among them */
void doc_judge_retransmits(const struct shared_window *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		long long conns = 0, hit = 0, retrans = 0, segs = 0, rtos = 0;
		uint32_t max_rto = 0, min_rto = UINT32_MAX, min_rtt = NO_RTT;
		int rto_known = 1;
		for (size_t k = 0; k < d->nc; k++) {
			const struct doc_conn *c = &d->c[k];
			/* (a FIN sent again to a client gone away is no stall of anyone's) */
			if (c->listener != l ||
			    (c->last.state != TS_ESTABLISHED && c->last.state != TS_CLOSE_WAIT))
				continue;
			conns++;
			long long t, r = data_retrans(c, &t, &rto_known);
			segs += DOC_DELTA(c, segs_out);
			if (r <= 0)
				continue;
			hit++;
			retrans += r;
			rtos += t > 0 ? t : 0;
			if (c->last.ti.rto > max_rto)
				max_rto = c->last.ti.rto;
			if ((t > 0 || !rto_known) && c->last.ti.rto < min_rto)
				min_rto = c->last.ti.rto;
			if (c->last.ti.min_rtt < min_rtt)
				min_rtt = c->last.ti.min_rtt;
		}
		if (!hit || (!rtos && (retrans < RETRANS_MIN || 100 * retrans < segs)))
			continue;
		struct doc_finding *f = doc_add(fs, DOC_R_RETRANSMITS, rtos ? SEV_WARNING : SEV_INFO,
		                                "high", d, l);
		if (!f)
			return;
		/* the stall a timeout makes is the connection's own rto (at least the minimum in
		 * force on it: 200 ms by default, less under --rto-min or a route's rto_min) */
		if (rtos)
			snprintf(f->summary, sizeof f->summary, "segments were lost and sent again, some "
			         "only after a retransmit timeout (a stall of at least %u ms each)",
			         min_rto / 1000);
		else
			snprintf(f->summary, sizeof f->summary, "segments were lost and sent again");
		doc_listener_evidence(f, d, l);
		const struct doc_ns *ns = &d->ns[d->l[l].ns];
		struct rec *ev = f->evidence;
		shown_ev(f, conns, hit);
		rec_int(ev, K_RETRANS, retrans);
		rec_int(ev, K_SEGS_OUT, segs);
		rec_num(ev, K_RTO_MS, max_rto / 1000.0, 0);
		doc_counter(f, ns, C_RCVQ_DROP);
		doc_counter(f, ns, C_PRUNE);
		doc_counter(f, ns, C_TIMEOUTS);
		if (rto_known) {
			rec_int(ev, K_RTO_EVENTS, rtos);
			rec_num(ev, K_MIN_RTO_MS, rtos ? min_rto / 1000.0 : 0, 0);
		} else {
			rec_null(ev, K_RTO_EVENTS);
			doc_note(f, "rto_events: tcpi_total_rto is unknown before Linux 6.7");
		}
		doc_note(f, "loss is on the path or at a receiver: nstat -az TcpExtTCPRcvQDrop "
		         "TcpExtPruneCalled on each host shows which side drops");
		/* a smaller timeout only where round trips are short (a LAN), and only where the
		 * default is in force: a connection's rto under 200 ms has a smaller minimum */
		if (rtos && d->rto_min_us && min_rtt < 1000 && min_rto >= RTO_MIN_US)
			doc_fix_flags(f, d, l, "--rto-min 5ms", 1);
		else if (rtos && min_rto < RTO_MIN_US)
			doc_note(f, "a retransmit timeout under the default 200 ms is in force already "
			         "(%u ms: --rto-min, or the route's rto_min)", min_rto / 1000);
		/* past a LAN's round trip a shorter timeout cures nothing: the time goes in the
		 * window a loss-based congestion control cuts (loss-limited, findings_path.c) */
		if (min_rtt != NO_RTT && min_rtt >= DOC_FAR_RTT_US)
			doc_note(f, "on a %.0f ms round trip --rto-min is no cure (a LAN's): what a loss "
			         "costs there is the window the congestion control cuts, see "
			         "loss-limited", min_rtt / 1000.0);
	}
}
