/* The path's findings: what a long round trip makes of the kernel's defaults, judged on the
 * listeners' connections as the kernel freed them (window.h's struct doc_closed: every one,
 * however short) and on those open in the window.
 *
 * slow-start-limited: a new connection sends its first flight at the initial window (10
 * segments, ~14 KB), then doubles each round trip: a response of 46 KB takes 3 round trips
 * after the handshake where one would do.  Judged on far connections (min_rtt 10 ms or more)
 * that carried one response and sent nothing again: the flights that response needs at the
 * initial window in force (the cgroup program's, the route's, 10), and the round trips it
 * took, measured (tcpi_busy_time, the time data was in flight, over tcpi_min_rtt), which a
 * window large enough brings to one.
 *
 * loss-limited: a loss-based congestion control (cubic, reno) halves its window at each
 * loss and grows it back by one segment a round trip: at 1% loss and 80 ms, a few hundred
 * KB a second whatever the link.  Judged on far connections that sent segments again, whose
 * congestion control is loss-based: by name where the kernel says it (an open connection's
 * INET_DIAG_CONG), else by what it did (its slow-start threshold cut by the loss: bbr leaves
 * it).
 *
 * receive-buffer-limited: the receive buffer starts small (net.ipv4.tcp_rmem's second
 * number) and autotuning grows it only as the program reads; a program that reads a large
 * request body late (after a lookup, a check) lets the buffer fill, the window it advertises
 * closes, and the peer waits a round trip or more each time it opens again.  Judged on far
 * connections sampled with the buffer half full or more of unread data and the window under
 * 4 segments, whose peer had more to send (it received more after). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "socktune_kernel.h"
#include "findings/window.h"
#include "findings/findings.h"

#define SS_ROUNDS_MIN 1.5   /* measured round trips a response took past which it paid */
#define SS_SHOWING_PCT 20   /* connections that show it: this share of those judged, one at
                             * least (watch's window of a second may hold one) */
#define IW_DEFAULT 10       /* the kernel's initial window (TCP_INIT_CWND) */
#define IW_CURE_MIN 11      /* the window proposed: the 90th percentile response, within */
#define IW_CURE_MAX 64
#define LOSS_PCT_MIN 0.2    /* segments sent again, percent of those sent on far connections
                             * (0.2% at 80 ms: ~500 KB/s for a loss-based control,
                             * the Mathis bound: MSS / RTT x 1.22 / sqrt(p)) */
#define LOSS_RETRANS_MIN 3  /* ... and at least this many */
#define BODY_MIN (64 << 10) /* a request body this large at least: an upload */
#define RCVBUF_CURE_MIN (256 << 10) /* the buffer proposed: twice the largest body (or the */
#define RCVBUF_CURE_MAX (64 << 20)  /* peer's pace times the round trip), a power of two, within */

/* Congestion controls that take loss as their signal to slow down: a window cut at each
 * loss, grown back a segment or so a round trip (linux/net/ipv4/tcp_*.c) */
static const char *const loss_based[] = {"cubic", "reno", "bic", "highspeed", "htcp",
                                         "hybla", "scalable", "westwood", "veno", "yeah",
                                         "illinois", "lp", "cdg", "nv"};

static int is_loss_based(const char *name)
{
	for (size_t k = 0; k < sizeof loss_based / sizeof *loss_based; k++)
		if (strcmp(name, loss_based[k]) == 0)
			return 1;
	return 0;
}

static int by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* "198.18.0.0/24", "fd00:5e:0:a::/64" */
static void net_text(const struct doc_net *n, char *out, size_t len)
{
	char a[64] = "?";
	inet_ntop(n->family, n->addr, a, sizeof a);
	snprintf(out, len, "%s/%d", a, n->family == AF_INET6 ? 64 : 24);
}

/* " --peer NET" for each network of the far peers, when near peers connect too and the two
 * sets are apart (none of the near ones in a far network); "" when every peer is far, and
 * *apart 0 when they cannot be told apart by network (more far networks than kept) */
static void peer_flags(const struct doc_closed *a, char *out, size_t len, int *apart)
{
	out[0] = '\0';
	*apart = 1;
	if (!a->near || !a->nfar_nets)
		return;
	if (a->far_nets_more) {
		*apart = 0;
		return;
	}
	for (int k = 0; k < a->nfar_nets; k++)
		for (int j = 0; j < a->nnear_nets; j++)
			if (memcmp(&a->far_nets[k], &a->near_nets[j], sizeof a->far_nets[k]) == 0)
				*apart = 0;
	if (!*apart)
		return;
	size_t w = 0;
	for (int k = 0; k < a->nfar_nets && w < len; k++) {
		char net[80];
		net_text(&a->far_nets[k], net, sizeof net);
		int c = snprintf(out + w, len - w, " --peer %s", net);
		w += c > 0 ? (size_t)c : 0;
	}
}

/* The counts of the freed connections every path finding names */
static void closed_ev(struct doc_finding *f, const struct shared_window *d, int l)
{
	const struct doc_closed *a = d->l[l].closed;
	const struct doc_ns *ns = &d->ns[d->l[l].ns];
	rec_int(f->evidence, K_CONNECTIONS_CLOSED, (long long)a->n);
	rec_int(f->evidence, K_FAR_CONNECTIONS, (long long)a->far);
	rec_int(f->evidence, K_NEAR_CONNECTIONS, (long long)a->near);
	if (ns->close_overruns)
		rec_int(f->evidence, K_CLOSE_OVERRUNS, (long long)ns->close_overruns);
}

void doc_judge_slow_start(const struct shared_window *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		const struct doc_listener *L = &d->l[l];
		const struct doc_closed *a = L->closed;
		if (!a || !a->none)
			continue;
		uint32_t iw = L->iw > 0 ? (uint32_t)L->iw : IW_DEFAULT;
		uint32_t segs[DOC_GONE_KEEP], min_rtt = DOC_NO_RTT;
		uint64_t bytes[DOC_GONE_KEEP];
		double rounds[DOC_GONE_KEEP];
		int hit = 0;
		for (int k = 0; k < a->none; k++) {
			const struct doc_gone *g = &a->one[k];
			double r = (double)g->busy_us / g->min_rtt;
			/* needed a second flight at the window in force, and took more than one round
			 * trip to send it, most of it not held by the peer's window */
			if (doc_flights(g->segs_out, iw) < 2 || r < SS_ROUNDS_MIN ||
			    5 * g->rwnd_us > g->busy_us)
				continue;
			segs[hit] = g->segs_out;
			bytes[hit] = g->bytes_sent;
			rounds[hit++] = r;
			min_rtt = g->min_rtt < min_rtt ? g->min_rtt : min_rtt;
		}
		if (!hit || 100 * hit < SS_SHOWING_PCT * a->none)
			continue;
		qsort(segs, (size_t)hit, sizeof *segs, by_u32);
		qsort(rounds, (size_t)hit, sizeof *rounds, by_double);
		/* the 90th percentile response, and its bytes (the same rank among the bytes) */
		int p90 = (9 * hit + 9) / 10 - 1;
		uint32_t want = segs[p90];
		uint64_t sorted_bytes[DOC_GONE_KEEP];
		memcpy(sorted_bytes, bytes, (size_t)hit * sizeof *bytes);
		for (int i = 1; i < hit; i++) /* (a handful: insertion) */
			for (int j = i; j > 0 && sorted_bytes[j - 1] > sorted_bytes[j]; j--) {
				uint64_t t = sorted_bytes[j];
				sorted_bytes[j] = sorted_bytes[j - 1];
				sorted_bytes[j - 1] = t;
			}
		/* one segment more than the response: the FIN that ends a connection after it
		 * takes a place in the window too (measured: 46,001 bytes in 32 segments and its
		 * FIN, across 80 ms: 3 round trips at an initial window of 32, 2 at 33) */
		unsigned cure = want + 1 < IW_CURE_MIN   ? IW_CURE_MIN
		                : want + 1 > IW_CURE_MAX ? IW_CURE_MAX
		                                         : want + 1;
		double median = rounds[hit / 2];
		struct doc_finding *f = doc_add(fs, DOC_R_SLOW_START_LIMITED, SEV_WARNING, "high", d, l);
		if (!f)
			return;
		snprintf(f->summary, sizeof f->summary, "new connections' first response needs %d "
		         "round trips of slow start at an initial window of %u segments on a %.0f ms "
		         "path: ~%.0f ms more than one", doc_flights(want, iw), iw, min_rtt / 1000.0,
		         (median - 1) * min_rtt / 1000.0);
		doc_listener_evidence(f, d, l);
		struct rec *ev = f->evidence;
		closed_ev(f, d, l);
		rec_int(ev, K_CONNECTIONS_SEEN, a->none);
		rec_int(ev, K_SHOWING, hit);
		rec_int(ev, K_RESPONSE_BYTES, (long long)sorted_bytes[p90]);
		rec_int(ev, K_RESPONSE_SEGS, want);
		rec_int(ev, K_INITIAL_WINDOW, iw);
		rec_str(ev, K_INITIAL_WINDOW_FROM, L->iw_from ? L->iw_from : "default");
		rec_int(ev, K_FLIGHTS, doc_flights(want, iw));
		rec_num(ev, K_ROUND_TRIPS, median, 1);
		rec_num(ev, K_MIN_RTT_MS, min_rtt / 1000.0, 1);
		rec_num(ev, K_COST_MS, (median - 1) * min_rtt / 1000.0, 0);
		doc_note(f, "an initial window of %u segments holds the 90th percentile response "
		         "(%u segments of up to %u bytes) and its FIN%s; it applies to new connections "
		         "only, each from its first flight; the client's receive window bounds that "
		         "flight too", cure, want, a->one[0].mss, want + 1 > IW_CURE_MAX ? ", not "
		         "larger ones: they still take more than one round trip" : "");
		char peers[300], flags[360];
		int apart;
		peer_flags(a, peers, sizeof peers, &apart);
		snprintf(flags, sizeof flags, "--initcwnd %u%s", cure, peers);
		doc_fix_cgroup(f, d, l, flags, DOC_CG_NOW | DOC_CG_NEXT);
		if (L->far_route_found) {
			char route[700], pre[64];
			doc_in_ns(d, l, pre, sizeof pre);
			if (st_fix_route_initcwnd(&L->far_route, cure, route, sizeof route) == 0)
				doc_fix(f, "%s%s", pre, route);
			else
				doc_note(f, "the route: %s", route);
			doc_note(f, "the route's initcwnd is host-wide: every connection of the network "
			         "namespace over that route, of any program, starts with it");
		}
		if (a->near && !peers[0])
			doc_note(f, "near peers (under %d ms) connect too%s: --peer PREFIX keeps the "
			         "larger window to the far ones", DOC_FAR_RTT_US / 1000,
			         apart ? "" : ", in networks the far ones share or past those kept");
	}
}

/* An open connection's congestion control, as the kernel names it, and where that comes
 * from: the connection itself (dumped with INET_DIAG_CONG), a socktune program on its
 * cgroup, its listener's (copied at accept), the namespace's default; "" unknown */
static const char *cong_of(const struct shared_window *d, int l, const struct doc_conn *c,
                           const char **from)
{
	const struct doc_listener *L = &d->l[l];
	if (c && c->last.cong[0])
		return *from = "connection", c->last.cong;
	if (L->cg_cong_set && L->cg_cong[0])
		return *from = "cgroup", L->cg_cong;
	if (L->cong[0])
		return *from = "listener", L->cong;
	if (d->ns[L->ns].cong[0])
		return *from = "namespace", d->ns[L->ns].cong;
	return *from = "unknown", "";
}

void doc_judge_loss(const struct shared_window *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		const struct doc_listener *L = &d->l[l];
		const struct doc_closed *a = L->closed;
		unsigned long long segs = 0, retrans = 0, lossy = 0, cut = 0, far = 0;
		uint32_t min_rtt = DOC_NO_RTT;
		const char *name = NULL, *from = NULL;
		int by_name = 0;
		/* the open ones (freed in the window: counted below, from their end) */
		for (size_t k = 0; k < d->nc; k++) {
			const struct doc_conn *c = &d->c[k];
			uint32_t rtt = c->last.ti.min_rtt;
			if (c->listener != l || c->freed || rtt == DOC_NO_RTT || rtt < DOC_FAR_RTT_US)
				continue;
			const char *cf, *cc = cong_of(d, l, c, &cf);
			long long r = DOC_DELTA(c, total_retrans);
			far++;
			/* a connection whose congestion control is named and not loss-based (bbr)
			 * is no case of this, whatever it sent again */
			if (cc[0] && !is_loss_based(cc))
				continue;
			segs += DOC_DELTA(c, data_segs_out);
			if (r <= 0)
				continue;
			retrans += (unsigned long long)r;
			lossy++;
			cut += c->last.ti.snd_ssthresh < 0x7fffffffu;
			min_rtt = rtt < min_rtt ? rtt : min_rtt;
			if (cc[0] && !by_name) {
				name = cc, from = cf;
				by_name = 1;
			}
		}
		/* the freed ones: no name, their reaction tells (a cut threshold) */
		if (a && a->far_cut) {
			segs += a->far_segs;
			retrans += a->far_retrans;
			lossy += a->far_lossy;
			cut += a->far_cut;
			far += a->far;
			if (a->far_min_rtt && a->far_min_rtt < min_rtt)
				min_rtt = a->far_min_rtt;
		}
		if (!lossy || retrans < LOSS_RETRANS_MIN || 100.0 * retrans < LOSS_PCT_MIN * segs)
			continue;
		/* freed ones only: the name from the cgroup, the listener or the namespace, unless
		 * that one is not loss-based: then the cut threshold alone says it */
		if (!by_name) {
			name = cong_of(d, l, NULL, &from);
			if (name[0] && !is_loss_based(name))
				name = "", from = "unknown";
		}
		const struct doc_ns *ns = &d->ns[L->ns];
		int bbr = st_has_word(ns->cong_available, "bbr");
		struct doc_finding *f = doc_add(fs, DOC_R_LOSS_LIMITED, SEV_WARNING,
		                                by_name ? "high" : "medium", d, l);
		if (!f)
			return;
		snprintf(f->summary, sizeof f->summary, "segments are lost on a %.0f ms path and the "
		         "congestion control (%s) halves its window at each loss: far connections "
		         "send at a fraction of the path", min_rtt / 1000.0,
		         name && name[0] ? name : "loss-based");
		doc_listener_evidence(f, d, l);
		struct rec *ev = f->evidence;
		if (a)
			closed_ev(f, d, l);
		rec_int(ev, K_SHOWING, (long long)lossy);
		rec_int(ev, K_RETRANS, (long long)retrans);
		rec_int(ev, K_SEGS_OUT, (long long)segs);
		rec_num(ev, K_RETRANS_PCT, segs ? 100.0 * retrans / segs : 0, 2);
		rec_num(ev, K_MIN_RTT_MS, min_rtt / 1000.0, 1);
		rec_str(ev, K_OPTION + ST_V_CONGESTION, name && name[0] ? name : NULL);
		rec_str(ev, K_CONGESTION_FROM, from);
		rec_int(ev, K_SSTHRESH_CUT, (long long)cut);
		if (ns->cong_available[0])
			rec_bool(ev, K_BBR_AVAILABLE, bbr);
		else
			rec_null(ev, K_BBR_AVAILABLE);
		if (!bbr && ns->cong_available[0]) {
			doc_fix(f, "modprobe tcp_bbr");
			doc_note(f, "bbr is not loaded (available: %s): modprobe tcp_bbr on the host "
			         "first (or CAP_SYS_MODULE's autoload: a program's own TCP_CONGESTION "
			         "bbr with CAP_NET_ADMIN)", ns->cong_available);
		}
		char peers[300], flags[360];
		int apart = 1;
		if (a)
			peer_flags(a, peers, sizeof peers, &apart);
		else
			peers[0] = '\0';
		snprintf(flags, sizeof flags, "--congestion bbr%s", peers);
		if (peers[0]) /* (only the cgroup program tells peers apart) */
			doc_fix_cgroup(f, d, l, flags, DOC_CG_NOW | DOC_CG_NEXT);
		else
			doc_fix_flags(f, d, l, flags, 0);
		doc_note(f, "bbr paces to the bandwidth and round trip it measures and does not take "
		         "a loss for congestion; it applies to connections made from now on (attach "
		         "--connections sets it on open ones too)%s",
		         peers[0] ? "; near peers keep the namespace's default" : "");
		if (a && a->near && !peers[0])
			doc_note(f, "near peers (under %d ms) connect too%s: --peer PREFIX with the cgroup "
			         "mode keeps bbr to the far ones", DOC_FAR_RTT_US / 1000,
			         apart ? "" : ", in networks the far ones share or past those kept");
	}
}

/* The least power of two that is v or more */
static uint64_t pow2_at_least(uint64_t v)
{
	uint64_t p = 1;
	while (p < v && p < (1ull << 40))
		p <<= 1;
	return p;
}

void doc_judge_rcvbuf(const struct shared_window *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		long long conns = 0, hit = 0;
		uint64_t body = 0, bdp = 0;
		const struct doc_conn *w = NULL;
		uint32_t min_rtt = DOC_NO_RTT;
		for (size_t k = 0; k < d->nc; k++) {
			const struct doc_conn *c = &d->c[k];
			if (c->listener != l)
				continue;
			conns++;
			uint32_t rtt = c->last.ti.min_rtt != DOC_NO_RTT && c->last.ti.min_rtt
			                   ? c->last.ti.min_rtt : c->last.ti.rcv_rtt;
			uint64_t end = c->end_received > c->last.ti.bytes_received
			                   ? c->end_received : c->last.ti.bytes_received;
			/* held while the peer had more to send: it sent more after */
			if (!c->rcv_held_samples || rtt < DOC_FAR_RTT_US || end < BODY_MIN ||
			    end <= c->rcv_held_received)
				continue;
			hit++;
			body = end > body ? end : body;
			uint64_t b = (uint64_t)(c->max_rcv_pace * rtt / 1e6);
			bdp = b > bdp ? b : bdp;
			min_rtt = rtt < min_rtt ? rtt : min_rtt;
			if (!w || c->rcv_held_rmem > w->rcv_held_rmem)
				w = c;
		}
		if (!hit)
			continue;
		uint64_t want = pow2_at_least(2 * (body > bdp ? body : bdp));
		want = want < RCVBUF_CURE_MIN ? RCVBUF_CURE_MIN : want > RCVBUF_CURE_MAX ? RCVBUF_CURE_MAX : want;
		struct doc_finding *f = doc_add(fs, DOC_R_RECEIVE_BUFFER_LIMITED, SEV_WARNING, "high", d, l);
		if (!f)
			return;
		snprintf(f->summary, sizeof f->summary, "clients' uploads wait for room in the "
		         "server's receive buffer (%u bytes, full of data the program had not read "
		         "yet): their sending stops a round trip or more each time, on a %.0f ms path",
		         w->rcv_held_rcvbuf, min_rtt / 1000.0);
		doc_listener_evidence(f, d, l);
		struct rec *ev = f->evidence;
		rec_int(ev, K_CONNECTIONS_SEEN, conns);
		rec_int(ev, K_SHOWING, hit);
		rec_int(ev, K_BODY_BYTES, (long long)body);
		rec_int(rec_group(ev, K_OPTION + ST_V_RCVBUF), K_EFFECTIVE, w->rcv_held_rcvbuf);
		rec_int(ev, K_UNREAD_BYTES, w->rcv_held_rmem);
		rec_int(ev, K_RCV_WND_BYTES, w->rcv_held_wnd);
		rec_int(ev, K_BDP_BYTES, (long long)bdp);
		rec_num(ev, K_MIN_RTT_MS, min_rtt / 1000.0, 1);
		const struct doc_ns *ns = &d->ns[d->l[l].ns];
		char size[24], flags[64];
		if (want % (1 << 20) == 0)
			snprintf(size, sizeof size, "%lluM", (unsigned long long)want >> 20);
		else
			snprintf(size, sizeof size, "%lluK", (unsigned long long)want >> 10);
		snprintf(flags, sizeof flags, "--rcvbuf %s", size);
		if (ns->rmem_max >= 0 && (long long)want > ns->rmem_max) {
			/* the cap, in the words every clamp of the library and check says: its sysctl
			 * where doctor runs; in another namespace the caller's CAP_NET_ADMIN past it
			 * (SO_RCVBUFFORCE: attach sets with the caller's credentials), for a
			 * namespace's own net.core.rmem_max is not written from inside it (EINVAL,
			 * measured on Linux 6.18) */
			char fix[300], cmd[200];
			st_fix_limit(ST_V_RCVBUF, (long long)want, -1, 0, fix, sizeof fix);
			const char *prose = st_fix_split(fix, cmd, sizeof cmd);
			if (ns->ours && cmd[0])
				doc_fix(f, "%s", cmd);
			else
				snprintf(flags, sizeof flags, "--rcvbuf %s --rcvbuf-force", size);
			doc_note(f, "net.core.rmem_max (%lld there) caps --rcvbuf: %s%s%s", ns->rmem_max,
			         cmd, prose && prose[0] ? ", or " : "", prose ? prose : "");
		}
		doc_fix_flags(f, d, l, flags, 0);
		char rmem[48] = "";
		if (ns->rmem[1] > 0)
			snprintf(rmem, sizeof rmem, " (now %lld)", ns->rmem[1]);
		doc_note(f, "--rcvbuf %s holds twice the largest body (%llu bytes) unread; it applies "
		         "to connections accepted from now on, and a fixed SO_RCVBUF turns the "
		         "kernel's autotuning off for them; for every connection of the namespace, "
		         "autotuning kept: a larger second number of net.ipv4.tcp_rmem%s", size,
		         (unsigned long long)body, rmem);
	}
}
