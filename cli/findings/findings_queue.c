/* doctor's rules on the listeners' accept queues: an overflow clients wait on now, the tail
 * of an earlier one, and a backlog cut to the namespace's somaxconn. */
#include <stdio.h>

#include "socktune_kernel.h"
#include "findings/window.h"
#include "findings/findings.h"

#define BACKLOG_CURE DOC_BACKLOG_CURE

/* The sysctl that raises the cap every backlog of the namespace is cut to, when it is below
 * the cure: first, since a backlog asked for later is cut to it */
static void somaxconn_fix(struct doc_finding *f, const struct shared_window *d, int l)
{
	const struct doc_ns *ns = &d->ns[d->l[l].ns];
	if (ns->somaxconn < 0 || ns->somaxconn >= BACKLOG_CURE)
		return;
	char pre[64], sysctl[96];
	doc_in_ns(d, l, pre, sizeof pre);
	st_fix_somaxconn(BACKLOG_CURE, sysctl, sizeof sysctl);
	doc_fix(f, "%s%s", pre, sysctl);
	doc_note(f, "net.core.somaxconn caps every backlog in the network namespace (now %lld); "
	         "sysctl -w lasts until reboot: /etc/sysctl.d keeps it", ns->somaxconn);
}

/* The listener dropped connection attempts while the namespace counted overflows, or it was
 * seen full while it did.  Drops no client waited on during the window (no connection seen
 * waiting in the queue, no SYN sent again here) are an earlier burst's tail: the kernel still
 * answers, for seconds, handshakes that clients gone away (FIN-WAIT-1 on their side) had
 * completed while the queue was full, in waves that overflow it for an instant; a sample may
 * catch one wave's connections (accepted at once), not two. */
void doc_judge_accept_queue(const struct shared_window *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		const struct doc_listener *L = &d->l[l];
		const struct doc_ns *ns = &d->ns[L->ns];
		long long ov = doc_ns_delta(ns, C_LISTEN_OVERFLOWS);
		long long mine = (long long)L->drops_last - L->drops_first;
		long long syn = doc_ns_delta(ns, C_SYN_RETRANS);
		int full = L->queue_peak >= L->backlog, half = 2 * L->queue_peak >= L->backlog;
		int others = 0; /* other listeners of the namespace seen near full */
		for (int k = 0; k < d->nl; k++)
			others += k != l && d->l[k].ns == L->ns && 2 * d->l[k].queue_peak >= d->l[k].backlog;
		/* the listener's own drop count is exact when read at both ends: then it alone
		 * decides; read while it lived (it closed meanwhile), drops seen count, none seen
		 * say nothing; without it, a queue seen full or half full is the evidence */
		const char *sure = L->mem_samples >= 2 && mine > 0 ? "high"
		                   : doc_drops_known(L) ? NULL
		                   : full ? "medium" : half && !others ? "low" : NULL;
		if (ov <= 0 || !sure || !L->backlog)
			continue;
		/* (an unreadable SYN counter may hide clients that waited: counted as waiting) */
		int now = L->queued_samples > 1 || syn != 0;
		struct doc_finding *f = doc_add(fs, now ? DOC_R_ACCEPT_QUEUE_OVERFLOW
		                                        : DOC_R_EARLIER_OVERFLOW,
		                                now ? SEV_CRITICAL : SEV_WARNING,
		                                now ? sure : "medium", d, l);
		if (!f)
			return;
		if (now)
			snprintf(f->summary, sizeof f->summary, "the accept queue (backlog %u) filled and "
			         "the kernel dropped connection attempts: clients wait 1 s, 3 s, 7 s to "
			         "retry", L->backlog);
		else
			snprintf(f->summary, sizeof f->summary, "drops counted while no connection waited "
			         "in the queue and no client here sent a SYN again: an earlier burst's "
			         "tail; the backlog (%u) that overflowed then is still in force", L->backlog);
		doc_listener_evidence(f, d, l);
		struct rec *ev = f->evidence;
		rec_int(ev, K_QUEUE_PEAK, L->queue_peak);
		rec_int(ev, K_QUEUED_SAMPLES, L->queued_samples);
		if (L->mem_samples >= 2)
			rec_int(ev, K_DROPPED, mine);
		else
			rec_null(ev, K_DROPPED);
		doc_counter(f, ns, C_LISTEN_OVERFLOWS);
		doc_counter(f, ns, C_LISTEN_DROPS);
		doc_counter(f, ns, C_SYN_RETRANS);
		rec_num(ev, K_WINDOW_S, d->elapsed_s, 1);
		rec_int(ev, K_SOMAXCONN, ns->somaxconn);
		if (!L->seen_last)
			doc_note(f, "the listener closed during the window: its drops are counted up to "
			         "its last sample");
		somaxconn_fix(f, d, l);
		char flags[32];
		snprintf(flags, sizeof flags, "--backlog %d", BACKLOG_CURE);
		doc_fix_flags(f, d, l, flags, 0);
	}
}

/* The backlog in force equal to the namespace's somaxconn while the queue came near it: the
 * application's own backlog may be larger, and no socket option raises the cap.  The sysctl
 * changes no listener that listens already: a listen() again does (attach's). */
void doc_judge_backlog_clamped(const struct shared_window *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		const struct doc_listener *L = &d->l[l];
		const struct doc_ns *ns = &d->ns[L->ns];
		if (ns->somaxconn <= 0 || L->backlog != (unsigned)ns->somaxconn ||
		    ns->somaxconn >= BACKLOG_CURE || 2 * L->queue_peak < L->backlog)
			continue;
		struct doc_finding *f = doc_add(fs, DOC_R_BACKLOG_CLAMPED, SEV_WARNING, "medium",
		                                d, l);
		if (!f)
			return;
		snprintf(f->summary, sizeof f->summary, "the backlog in force is net.core.somaxconn "
		         "(%lld), and the queue came near it: what the server asked is cut to it",
		         ns->somaxconn);
		doc_listener_evidence(f, d, l);
		rec_int(f->evidence, K_SOMAXCONN, ns->somaxconn);
		rec_int(f->evidence, K_QUEUE_PEAK, L->queue_peak);
		somaxconn_fix(f, d, l);
		char flags[32];
		snprintf(flags, sizeof flags, "--backlog %d", BACKLOG_CURE);
		doc_fix_live(f, d, l, flags, 0);
		doc_note(f, "a listening socket keeps its backlog until it listens again: socktune "
		         "attach does that, after the sysctl");
	}
}
