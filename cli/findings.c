/* What doctor saw, as findings: each names its evidence (the numbers that show it), the
 * settings that cure it (the wrapper's flags, the attach command for the running process, or
 * the sysctl / ip route when no socket option can), and how sure it is.  No finding without
 * evidence: each rule needs a counter that moved or a connection that showed it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "socktune_kernel.h"
#include "doctor.h"

#define NO_RTT UINT32_MAX /* tcpi_min_rtt before the first rtt sample */

#define BACKLOG_CURE 4096
#define STALL_RTT_US 15000    /* a request/response connection's smoothed rtt this high ... */
                              /* ... above the path's fastest round trip */
#define CADENCE_MIN 12.0      /* responses a second on a connection held by one delayed ACK */
#define CADENCE_MAX 30.0      /* ... per response: 1 / (40 ms + rtt), ~23 */
#define RETRANS_MIN 3         /* segments sent again (and 1% of those sent), or an RTO */
#define DELACK_ATO_US 30000   /* the server's own delayed-ACK timeout grown to the 40 ms cap */
#define LIMITED_SHARE 20.0    /* % of busy time limited by the window or the send buffer */
#define LIMITED_MIN_US 100000 /* ... over at least this much busy time */

const char *doc_severity_name(enum doc_severity s)
{
	return s == SEV_CRITICAL ? "critical" : s == SEV_WARNING ? "warning" : "info";
}

double doc_share(uint64_t part, uint64_t busy)
{
	return busy ? 100.0 * (double)part / (double)busy : -1;
}

static struct doc_finding *add(struct doc_findings *fs, const char *kind, enum doc_severity sev,
                               const char *certainty, const struct doctor *d, int l)
{
	if (fs->n == DOC_MAX_FINDINGS) {
		fs->dropped++;
		return NULL;
	}
	struct doc_finding *f = &fs->f[fs->n++];
	memset(f, 0, sizeof *f);
	f->kind = kind;
	f->severity = sev;
	f->certainty = certainty;
	f->listener = l;
	if (l >= 0) {
		f->port = d->l[l].port;
		f->pid = d->l[l].nowners ? d->l[l].owners[0].pid : 0;
	}
	return f;
}

static void fix(struct doc_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fix(struct doc_finding *f, const char *fmt, ...)
{
	if (f->nfix == DOC_MAX_FIXES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->fix[f->nfix++], sizeof f->fix[0], fmt, ap);
	va_end(ap);
}

/* The prefix that runs a command in the listener's network namespace, when it is not ours */
static void in_ns(const struct doctor *d, int l, char *out, size_t n)
{
	const struct doc_ns *ns = &d->ns[d->l[l].ns];
	out[0] = '\0';
	if (!ns->ours)
		snprintf(out, n, "nsenter --net=/proc/%d/ns/net ", ns->pid);
}

/* The two ways to apply flags: to the running process now, and at its next start */
static void fix_flags(struct doc_finding *f, const struct doctor *d, int l, const char *flags,
                      int connections)
{
	const struct doc_listener *L = &d->l[l];
	if (!L->nowners) {
		fix(f, "socktune %s -- PROGRAM (the process holding this listener was not found: "
		    "another pid namespace, or not visible to this user)", flags);
		return;
	}
	if (L->seen_last) /* (a listener closed during the window: nothing to attach to) */
		fix(f, "socktune attach %s%s %d", flags, connections ? " --connections" : "",
		    L->owners[0].pid);
	fix(f, "socktune %s -- %s", flags, L->cmd);
}

/* A counter's change for the evidence: "+N", or "unknown" (a string in the JSON) */
struct plus {
	char s[24];
};
static struct plus plus(const struct doc_ns *ns, int k)
{
	struct plus p;
	long long v = doc_ns_delta(ns, k);
	if (v < 0)
		snprintf(p.s, sizeof p.s, "unknown");
	else
		snprintf(p.s, sizeof p.s, "+%lld", v);
	return p;
}

/* ... or 0 when unknown, for a sum of pressures */
static long long known(const struct doc_ns *ns, int k)
{
	long long v = doc_ns_delta(ns, k);
	return v > 0 ? v : 0;
}

static void listener_evidence(struct doc_finding *f, const struct doctor *d, int l)
{
	const struct doc_listener *L = &d->l[l];
	char addr[64];
	diag_addr(L->family, L->addr, L->port, addr, sizeof addr);
	doc_say(f->evidence, sizeof f->evidence, "listener=%s backlog=%u", addr, L->backlog);
}

/* The accept queue: the listener dropped connection attempts while the namespace counted
 * overflows, or it was seen full while it did. */
static void accept_queue(const struct doctor *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		const struct doc_listener *L = &d->l[l];
		const struct doc_ns *ns = &d->ns[L->ns];
		long long ov = doc_ns_delta(ns, C_LISTEN_OVERFLOWS);
		long long mine = (long long)L->drops_last - L->drops_first;
		int full = L->queue_peak >= L->backlog, half = 2 * L->queue_peak >= L->backlog;
		int others = 0; /* other listeners of the namespace seen near full */
		for (int k = 0; k < d->nl; k++)
			others += k != l && d->l[k].ns == L->ns && 2 * d->l[k].queue_peak >= d->l[k].backlog;
		/* the listener's own drop count is exact when read at both ends: then it alone
		 * decides; without it, a queue seen full or half full is the evidence */
		const char *sure = L->mem_samples >= 2 ? (mine > 0 ? "high" : NULL)
		                   : full ? "medium" : half && !others ? "low" : NULL;
		if (ov <= 0 || !sure || !L->backlog)
			continue;
		struct doc_finding *f = add(fs, "accept-queue-overflow", SEV_CRITICAL, sure, d, l);
		if (!f)
			return;
		snprintf(f->summary, sizeof f->summary, "the accept queue (backlog %u) filled and the "
		         "kernel dropped connection attempts: clients wait 1 s, 3 s, 7 s to retry",
		         L->backlog);
		listener_evidence(f, d, l);
		doc_say(f->evidence, sizeof f->evidence, " queue_peak=%u dropped=+%lld ListenOverflows=+%lld "
		    "ListenDrops=%s TCPSynRetrans=%s window_s=%.1f somaxconn=%lld", L->queue_peak,
		    mine, ov, plus(ns, C_LISTEN_DROPS).s, plus(ns, C_SYN_RETRANS).s, d->elapsed_s,
		    ns->somaxconn);
		char pre[64], flags[32], sysctl[96];
		in_ns(d, l, pre, sizeof pre);
		st_fix_somaxconn(BACKLOG_CURE, sysctl, sizeof sysctl);
		if (ns->somaxconn >= 0 && ns->somaxconn < BACKLOG_CURE)
			fix(f, "%s%s (caps every backlog: now %lld)", pre, sysctl, ns->somaxconn);
		snprintf(flags, sizeof flags, "--backlog %d", BACKLOG_CURE);
		fix_flags(f, d, l, flags, 0);
	}
}

/* The backlog in force equal to the namespace's somaxconn while the queue came near it: the
 * application's own backlog may be larger, and no socket option raises the cap. */
static void backlog_clamped(const struct doctor *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		const struct doc_listener *L = &d->l[l];
		const struct doc_ns *ns = &d->ns[L->ns];
		if (ns->somaxconn <= 0 || L->backlog != (unsigned)ns->somaxconn ||
		    ns->somaxconn >= BACKLOG_CURE || 2 * L->queue_peak < L->backlog)
			continue;
		struct doc_finding *f = add(fs, "backlog-clamped", SEV_WARNING, "medium", d, l);
		if (!f)
			return;
		snprintf(f->summary, sizeof f->summary, "the backlog in force is net.core.somaxconn "
		         "(%lld), and the queue came near it: what the server asked is cut to it",
		         ns->somaxconn);
		listener_evidence(f, d, l);
		doc_say(f->evidence, sizeof f->evidence, " somaxconn=%lld queue_peak=%u asked=unknown",
		    ns->somaxconn, L->queue_peak);
		char pre[64], sysctl[96];
		in_ns(d, l, pre, sizeof pre);
		st_fix_somaxconn(BACKLOG_CURE, sysctl, sizeof sysctl);
		fix(f, "%s%s", pre, sysctl);
	}
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

/* A connection's own TCP_NODELAY; when it was not read, the listener's, which the kernel
 * copies at accept (a server may still set it on each connection: *from_listener says) */
static int nodelay(const struct doctor *d, const struct doc_conn *c, int *from_listener)
{
	*from_listener = c->nodelay < 0;
	return c->nodelay >= 0 ? c->nodelay : d->l[c->listener].nodelay;
}

static void nagle(const struct doctor *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		struct tally t = {0};
		for (size_t k = 0; k < d->nc; k++) {
			const struct doc_conn *c = &d->c[k];
			if (c->listener != l)
				continue;
			t.conns++;
			int inherited, nd = nodelay(d, c, &inherited);
			/* responses in more pieces than requests (a single write has nothing for
			 * Nagle to hold), the ACK of one held ~40 ms: the smoothed rtt far above the
			 * path's fastest round trip */
			uint32_t in = DOC_DELTA(c, data_segs_in), out = DOC_DELTA(c, data_segs_out);
			if (!request_response(c) || nd == 1 || 2 * (uint64_t)out < 3 * (uint64_t)in ||
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
		struct doc_finding *f = add(fs, "nagle-delayed-ack", SEV_CRITICAL,
		                            t.nodelay_off ? "high" : "medium", d, l);
		if (!f)
			return;
		snprintf(f->summary, sizeof f->summary, "the server's small writes wait for the "
		         "client's delayed ACK (Nagle on): ~40 ms added to responses");
		listener_evidence(f, d, l);
		doc_say(f->evidence, sizeof f->evidence, " connections=%lld showing=%lld rtt_ms=%.1f "
		    "min_rtt_ms=%.2f segs_in=%u segs_out=%u segs_out_per_s=%.1f nodelay=%s",
		    t.conns, t.hit, w->max_rtt / 1000.0, w->last.ti.min_rtt / 1000.0,
		    DOC_DELTA(w, data_segs_in), DOC_DELTA(w, data_segs_out), rate_of(w),
		    t.nodelay_off ? "0" : t.listener_off ? "\"listener 0, connection not read\""
		                                         : "unknown");
		if (!t.nodelay_off && !t.listener_off)
			doc_say(f->evidence, sizeof f->evidence, " nodelay_why=\"%s\"",
			    d->l[l].nodelay_why[0] ? d->l[l].nodelay_why : "not readable");
		fix_flags(f, d, l, "--nodelay", 1);
	}
}

/* The server's delayed ACK holding a client that writes a request in two pieces (with Nagle
 * on, its second piece waits for the ACK of the first): the server's ato grown to the cap
 * while its own sends are answered at once. */
static void delack_two_write(const struct doctor *d, struct doc_findings *fs)
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
		struct doc_finding *f = add(fs, "delayed-ack-two-write", SEV_CRITICAL, "medium", d, l);
		if (!f)
			return;
		snprintf(f->summary, sizeof f->summary, "the server delays its ACK of a request's "
		         "first piece, and the client (Nagle on) holds the rest until then: ~40 ms "
		         "per request");
		listener_evidence(f, d, l);
		doc_say(f->evidence, sizeof f->evidence, " connections=%lld showing=%lld ato_ms=%.1f "
		    "segs_out_per_s=%.1f segs_in=%u segs_out=%u rtt_ms=%.2f", t.conns, t.hit,
		    w->max_ato / 1000.0, worst_rate, DOC_DELTA(w, data_segs_in),
		    DOC_DELTA(w, data_segs_out), w->max_rtt / 1000.0);
		const struct doc_listener *L = &d->l[l];
		if (d->delack_max_us)
			fix_flags(f, d, l, "--delack-max 5ms", 1);
		if (L->nowners)
			fix(f, "socktune --quickack -- %s (no delay at all, one setsockopt per receive)",
			    L->cmd);
		if (L->route_fix[0]) /* (the route back to a client of it, looked up) */
			fix(f, "%s", L->route_fix);
		else
			fix(f, "ip route change ROUTE-TO-THE-CLIENTS quickack 1 (socktune check --route "
			    "CLIENT-ADDRESS prints the exact command)");
	}
}

/* Sending held back by the peer's receive window or by the server's own send buffer */
static void limited(const struct doctor *d, struct doc_findings *fs, int rwnd)
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
		struct doc_finding *f = add(fs, rwnd ? "receive-window-limited" : "send-buffer-limited",
		                            SEV_WARNING, "high", d, l);
		if (!f)
			return;
		listener_evidence(f, d, l);
		doc_say(f->evidence, sizeof f->evidence, " connections=%lld showing=%lld share_pct=%.0f "
		    "busy_ms=%.0f limited_ms=%.0f snd_wnd=%u unsent=%u delivery_rate=%llu tb=%u",
		    t.conns, t.hit, worst_share, DOC_DELTA(w, busy_time) / 1000.0,
		    (rwnd ? DOC_DELTA(w, rwnd_limited) : DOC_DELTA(w, sndbuf_limited)) / 1000.0,
		    w->last.ti.snd_wnd, w->last.ti.notsent_bytes,
		    (unsigned long long)w->last.ti.delivery_rate, w->last.mem[MEM_SNDBUF]);
		const struct doc_ns *ns = &d->ns[d->l[l].ns];
		if (rwnd) {
			snprintf(f->summary, sizeof f->summary, "the server's sends wait for the "
			         "client's receive window: the reader is slow or its buffer small; no "
			         "setting of this server changes it");
			char now[48] = "";
			if (ns->rmem[2] > 0)
				snprintf(now, sizeof now, "%lld in this namespace; ", ns->rmem[2]);
			fix(f, "on the reading side: read sooner; a larger receive window there comes "
			    "from net.ipv4.tcp_rmem's maximum on the reader's host (%sa fixed SO_RCVBUF "
			    "would turn its autotuning off)", now);
			continue;
		}
		snprintf(f->summary, sizeof f->summary, "the server's sends wait for room in its own "
		         "send buffer (%u bytes)", w->last.mem[MEM_SNDBUF]);
		fix_flags(f, d, l, "--sndbuf 4M", 1);
		if (ns->wmem_max >= 0 && ns->wmem_max < 4 << 20)
			fix(f, "sysctl -w net.core.wmem_max=%d (caps --sndbuf: now %lld)", 4 << 20,
			    ns->wmem_max);
	}
}

/* Segments sent again on the listeners' connections, and retransmit timeouts among them */
static void retransmits(const struct doctor *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		long long conns = 0, hit = 0, retrans = 0, segs = 0, rtos = 0;
		uint32_t max_rto = 0, min_rtt = NO_RTT;
		int rto_known = 1;
		for (size_t k = 0; k < d->nc; k++) {
			const struct doc_conn *c = &d->c[k];
			/* (a FIN sent again to a client gone away is no stall of anyone's) */
			if (c->listener != l ||
			    (c->last.state != TS_ESTABLISHED && c->last.state != TS_CLOSE_WAIT))
				continue;
			conns++;
			long long r = DOC_DELTA(c, total_retrans);
			segs += DOC_DELTA(c, segs_out);
			if (r <= 0)
				continue;
			hit++;
			retrans += r;
			/* tcpi_total_rto: Linux 6.7 */
			if (c->last.info_len >= offsetof(struct diag_tcp_info, total_rto_recoveries))
				rtos += DOC_DELTA(c, total_rto);
			else
				rto_known = 0;
			if (c->last.ti.rto > max_rto)
				max_rto = c->last.ti.rto;
			if (c->last.ti.min_rtt < min_rtt)
				min_rtt = c->last.ti.min_rtt;
		}
		if (!hit || (!rtos && (retrans < RETRANS_MIN || 100 * retrans < segs)))
			continue;
		struct doc_finding *f = add(fs, "retransmits", rtos ? SEV_WARNING : SEV_INFO,
		                            "high", d, l);
		if (!f)
			return;
		snprintf(f->summary, sizeof f->summary, "segments were lost and sent again%s",
		         rtos ? ", some only after a retransmit timeout (a stall of at least 200 ms)"
		              : "");
		listener_evidence(f, d, l);
		const struct doc_ns *ns = &d->ns[d->l[l].ns];
		doc_say(f->evidence, sizeof f->evidence, " connections=%lld showing=%lld retrans=%lld "
		    "segs_out=%lld rto_ms=%.0f TCPRcvQDrop=%s PruneCalled=%s TCPTimeouts=%s",
		    conns, hit, retrans, segs, max_rto / 1000.0, plus(ns, C_RCVQ_DROP).s,
		    plus(ns, C_PRUNE).s, plus(ns, C_TIMEOUTS).s);
		if (rto_known)
			doc_say(f->evidence, sizeof f->evidence, " rto_events=%lld", rtos);
		else
			doc_say(f->evidence, sizeof f->evidence, " rto_events=\"unknown (before Linux 6.7)\"");
		fix(f, "loss is on the path or at a receiver: see which side drops (nstat -az "
		    "TcpExtTCPRcvQDrop TcpExtPruneCalled on each host)");
		/* a smaller timeout only where round trips are short (a LAN) */
		if (rtos && d->rto_min_us && min_rtt < 1000)
			fix_flags(f, d, l, "--rto-min 5ms", 1);
	}
}

/* A listener's buffer at exactly twice the namespace's cap (asked for more, or for just
 * that), and the pressure that makes it matter: the namespace dropped or pruned received
 * data, or the listener's connections waited for room to send. */
static void buffer_clamped(const struct doctor *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		const struct doc_listener *L = &d->l[l];
		const struct doc_ns *ns = &d->ns[L->ns];
		long long rcv_pressure = known(ns, C_RCVQ_DROP) + known(ns, C_PRUNE), snd_pressure = 0;
		for (size_t k = 0; k < d->nc; k++) {
			const struct doc_conn *c = &d->c[k];
			uint64_t part = DOC_DELTA(c, sndbuf_limited);
			if (c->listener == l && part >= LIMITED_MIN_US &&
			    doc_share(part, DOC_DELTA(c, busy_time)) >= LIMITED_SHARE)
				snd_pressure++;
		}
		for (int snd = 0; snd < 2; snd++) {
			long long cap = snd ? ns->wmem_max : ns->rmem_max;
			uint32_t have = snd ? L->tb : L->rb;
			if (cap <= 0 || have != 2 * cap || (snd ? snd_pressure : rcv_pressure) <= 0)
				continue;
			struct doc_finding *f = add(fs, "buffer-clamped", SEV_WARNING, "medium", d, l);
			if (!f)
				return;
			const char *sys = snd ? "net.core.wmem_max" : "net.core.rmem_max";
			snprintf(f->summary, sizeof f->summary, "%s is at its cap, twice %s, while %s",
			         snd ? "SO_SNDBUF" : "SO_RCVBUF", sys,
			         snd ? "connections waited for room to send" : "received data was dropped");
			listener_evidence(f, d, l);
			doc_say(f->evidence, sizeof f->evidence, " %s=%u %s=%lld", snd ? "tb" : "rb", have, sys,
			    cap);
			if (snd)
				doc_say(f->evidence, sizeof f->evidence, " sndbuf_limited_connections=%lld",
				    snd_pressure);
			else
				doc_say(f->evidence, sizeof f->evidence, " TCPRcvQDrop=%s PruneCalled=%s",
				    plus(ns, C_RCVQ_DROP).s, plus(ns, C_PRUNE).s);
			char pre[64];
			in_ns(d, l, pre, sizeof pre);
			fix(f, "%ssysctl -w %s=%lld, then a larger %s", pre, sys, 4 * cap,
			    snd ? "--sndbuf" : "--rcvbuf");
		}
	}
}

/* The memory the listeners' connections may hold against the kernel's TCP memory limit: each
 * buffer's size as the kernel has it now (autotuning grows them), and what they hold now */
static void memory_exposure_of(const struct doctor *d, struct doc_findings *fs)
{
	long long bytes = 0, used = 0, open = 0;
	for (size_t k = 0; k < d->nc; k++) {
		const struct doc_conn *c = &d->c[k];
		/* (open at the end of the window: a closed one holds nothing) */
		if (c->last.has_mem && c->last.state == TS_ESTABLISHED && c->last_t == d->final_t) {
			bytes += (long long)c->last.mem[MEM_RCVBUF] + c->last.mem[MEM_SNDBUF];
			used += (long long)c->last.mem[MEM_RMEM] + c->last.mem[MEM_QUEUED];
			open++;
		}
	}
	const struct doc_ns *ns = &d->ns[0];
	long long page = sysconf(_SC_PAGESIZE), high = ns->tcp_mem[2] * page;
	/* only a possibility while they hold little (the kernel's usual overcommit): a finding
	 * once a tenth of the limit is in use */
	if (!open || ns->tcp_mem[2] <= 0 || bytes <= high || 10 * used < high)
		return;
	struct doc_finding *f = add(fs, "memory-exposure", SEV_WARNING, "medium", d, -1);
	if (!f)
		return;
	snprintf(f->summary, sizeof f->summary, "the connections' buffers, if filled, exceed the "
	         "kernel's TCP memory limit: past it, TCP drops and shrinks on every socket");
	doc_say(f->evidence, sizeof f->evidence, "connections=%lld buffers_mib=%.0f in_use_mib=%.1f "
	    "tcp_mem_high_mib=%.0f", open, bytes / 1048576.0, used / 1048576.0, high / 1048576.0);
	fix(f, "smaller --rcvbuf/--sndbuf for this many connections, or a larger "
	    "net.ipv4.tcp_mem (its third number, in pages)");
}

void doctor_findings(const struct doctor *d, struct doc_findings *out)
{
	out->n = out->dropped = 0;
	accept_queue(d, out);
	backlog_clamped(d, out);
	nagle(d, out);
	delack_two_write(d, out);
	limited(d, out, 1);
	limited(d, out, 0);
	retransmits(d, out);
	buffer_clamped(d, out);
	memory_exposure_of(d, out);
}
