/* doctor's rules that run in watch too (DOC_IN_WATCH in cli/findings/findings.h's table:
 * the accept queue's, the Nagle rule and the two delayed-ACK rules, those on the latest two
 * connection samples: watchconn.c; the path rules on the connections the kernel freed in the
 * window: watchclose.c), one implementation for both, applied to watch's samples
 * over each --window: the window is written into the record both fill (struct
 * shared_window, findings/window.h: the namespaces' counters at both ends, each listener's
 * backlog, deepest queue, samples that saw one waiting, drops at the first and the last
 * sample), DOC_MAX_LISTENERS listeners and DOC_MAX_NS namespaces at a time, and
 * doc_judge_all judges it.  What it finds holds as a series
 * (socktune_finding{id,kind,severity,netns,addr,port} 1) until it clears (below), and
 * one logfmt line on stderr says when it appears (with its fixes) and one when it clears.
 * Hysteresis: a finding raised holds while its fault recurs in any of the last
 * CLEAR_WINDOWS windows, and clears after CLEAR_WINDOWS quiet windows in a row (a steady
 * fault that a window misses now and then holds, so an alert's `for:` is not reset); one
 * that comes back within FLAP_MEMORY_S of clearing is flapping: each time, the quiet windows
 * it takes to clear double (up to MAX_NEEDED), and its lines say so.
 *
 * An earlier overflow (doctor's rule: drops while no client was seen waiting and no SYN was
 * sent again here) is a tail: the kernel answering, after a burst, handshakes of clients
 * gone.  It needs that burst: watch, which remembers, calls it so only within TAIL_S of an
 * overflow it saw clients wait on, and while that finding no longer holds; otherwise the
 * drops are an overflow of now (clients elsewhere retransmit their SYNs in their own
 * namespace, where this one's counter cannot see them) and are said as one. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "socktune_host.h"
#include "findings/window.h"
#include "findings/findings.h"
#include "record.h"
#include "watch/watch.h"
#include "host/nssysctl.h"

#define FLAP_MEMORY_S 600.0
#define MAX_NEEDED 64
/* (CLEAR_WINDOWS: watch.h, for the help) */
#define TAIL_S 63.0 /* the longest a burst's tail lasts: the kernel retries a SYN-ACK 5 times
                     * (net.ipv4.tcp_synack_retries), after 1, 2, 4, 8, 16 s, and drops the
                     * request 32 s after the last */

static const char *const counter_names[3] = {"ListenOverflows", "ListenDrops", "TCPSynRetrans"};
static const int counter_index[3] = {C_LISTEN_OVERFLOWS, C_LISTEN_DROPS, C_SYN_RETRANS};

static void ns_counters(const struct watch_ns *ns, long long *out)
{
	for (int k = 0; k < 3; k++)
		out[k] = watch_ns_counter(ns, counter_names[k]);
}

void watch_window_start(struct watch *w)
{
	for (int k = 0; k < w->nns; k++)
		ns_counters(&w->ns[k], w->ns[k].w_start);
	for (int k = 0; k < w->nl; k++)
		w->l[k].w_samples = w->l[k].w_peak = w->l[k].w_queued = 0;
}

/* FNV-1a of what names the finding: the same finding has the same id after a restart */
static void make_id(char *out, const char *kind, unsigned long long ns, int family,
                    const unsigned char *addr, unsigned port)
{
	char key[160], a[64] = "?";
	inet_ntop(family, addr, a, sizeof a);
	snprintf(key, sizeof key, "%s|%llu|%s|%u", kind, ns, a, port);
	unsigned long long h = 0xcbf29ce484222325ull;
	for (const char *c = key; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	snprintf(out, 17, "%016llx", h);
}

/* One line: "socktune pid=N " and the record, written at once */
static void say(const struct watch_finding *f, const struct watch_listener *l,
                const struct doc_finding *df, int appeared)
{
	struct rec *r = rec_new();
	char addr[64] = "?";
	inet_ntop(f->family, f->addr, addr, sizeof addr);
	rec_str(r, K_LEVEL, !appeared ? "info" : f->severity >= SEV_CRITICAL ? "error" : "warn");
	rec_str(r, K_EVENT, appeared ? "finding" : "finding-cleared");
	rec_str(r, K_WCH_ID, f->id);
	rec_str(r, K_KIND, f->kind);
	rec_str(r, K_SEVERITY, doc_severity_name((enum doc_severity)f->severity));
	rec_int(r, K_NETNS, (long long)f->ns_ino);
	rec_str(r, K_ADDR, addr);
	rec_int(r, K_PORT, f->port);
	if (l && l->id.comm[0])
		rec_str(r, K_COMM, l->id.comm);
	if (l && l->id.unit[0])
		rec_str(r, K_WCH_UNIT, l->id.unit);
	if (f->flaps) {
		rec_int(r, K_WCH_FLAPS, f->flaps);
		rec_int(r, K_WCH_CLEARS_AFTER, f->needed);
	}
	if (df) {
		rec_str(r, K_SUMMARY, df->summary);
		if (df->nfix) {
			struct rec *a = rec_arr(r, K_FIX);
			for (int k = 0; k < df->nfix; k++)
				rec_str(a, 0, df->fix[k]);
		}
		if (df->note[0])
			rec_str(r, K_NOTE, df->note);
	}
	char prefix[40];
	snprintf(prefix, sizeof prefix, "socktune pid=%d ", (int)getpid());
	rec_say(stderr, prefix, r);
	rec_free(r);
}

static struct watch_finding *lookup(struct watch *w, const char *id, int add)
{
	struct watch_finding *free_slot = NULL;
	for (int k = 0; k < WATCH_MAX_FINDINGS; k++) {
		if (w->find[k].used && strcmp(w->find[k].id, id) == 0)
			return &w->find[k];
		if (!w->find[k].used && !free_slot)
			free_slot = &w->find[k];
	}
	if (add && !free_slot)
		w->findings_not_followed++;
	return add ? free_slot : NULL;
}

/* A finding of this window: a new one, one coming back (a flap when it cleared lately), or
 * one that holds still */
static struct watch_finding *found(struct watch *w, const struct doc_finding *df,
                                   const struct watch_listener *l, double now)
{
	char id[17];
	make_id(id, df->kind, l->ns_ino, l->family, l->addr, l->port);
	struct watch_finding *f = lookup(w, id, 1);
	if (!f)
		return NULL;
	if (f->used && f->holds) {
		f->absent = 0;
		f->severity = (int)df->severity;
		return f;
	}
	if (f->used && now - f->cleared_at < FLAP_MEMORY_S) {
		f->flaps++;
		f->needed = f->needed * 2 < MAX_NEEDED ? f->needed * 2 : MAX_NEEDED;
	} else {
		memset(f, 0, sizeof *f);
		memcpy(f->id, id, sizeof id);
		f->needed = WATCH_CLEAR_WINDOWS;
	}
	f->used = f->holds = 1;
	f->absent = 0;
	f->rule = df->rule;
	f->kind = df->kind;
	f->severity = (int)df->severity;
	f->ns_ino = l->ns_ino;
	f->family = l->family;
	memcpy(f->addr, l->addr, sizeof f->addr);
	f->port = l->port;
	say(f, l, df, 1);
	return f;
}

/* The latest connection samples of the chunk's listeners into the record: each connection
 * seen by the sample before and the latest, its counters' change between them */
static void conns_in(struct shared_window *d, struct watch_listener **map)
{
	static struct doc_conn c[WATCH_MAX_CONNS];
	int n;
	const struct watch_conn *wc = watch_conns(&n);
	d->c = c;
	d->nc = 0;
	d->cap = WATCH_MAX_CONNS;
	for (int k = 0; k < n; k++) {
		const struct watch_conn *x = &wc[k];
		int i = x->l->doc_index;
		if (x->samples < 2 || i < 0 || i >= d->nl || map[i] != x->l)
			continue;
		struct doc_conn *dc = &c[d->nc++];
		memset(dc, 0, sizeof *dc);
		dc->listener = i;
		/* a client's address, for the delayed-ACK fix's `check --route` (the route back
		 * to it is not looked up here: that is a netlink round trip per listener) */
		if (!d->l[i].route_peer[0])
			inet_ntop(x->last.family, x->last.dst, d->l[i].route_peer,
			          sizeof d->l[i].route_peer);
		dc->inode = x->last.inode;
		dc->cookie = x->last.cookie;
		dc->first = x->first;
		dc->last = x->last;
		dc->samples = 2;
		dc->from_start = 1;
		dc->first_t = x->first_t;
		dc->last_t = x->last_t;
		dc->max_rtt = x->first.ti.rtt > x->last.ti.rtt ? x->first.ti.rtt : x->last.ti.rtt;
		dc->max_ato = x->first.ti.ato > x->last.ti.ato ? x->first.ti.ato : x->last.ti.ato;
		dc->nodelay = -1;
		dc->pid = dc->fd = -1;
		doc_rcv_held_add(dc, &x->first);
		doc_rcv_held_add(dc, &x->last);
		if (x->last_t > x->first_t && x->last.ti.bytes_received > x->first.ti.bytes_received)
			dc->max_rcv_pace = (double)(x->last.ti.bytes_received -
			                            x->first.ti.bytes_received) / (x->last_t - x->first_t);
		d->l[i].conns++;
	}
}

/* Whether a finding of rule holds on listener l */
static int holds_on(const struct watch *w, int rule, const struct watch_listener *l)
{
	char id[17];
	make_id(id, doc_rules[rule].kind, l->ns_ino, l->family, l->addr, l->port);
	for (int k = 0; k < WATCH_MAX_FINDINGS; k++)
		if (w->find[k].used && w->find[k].holds && strcmp(w->find[k].id, id) == 0)
			return 1;
	return 0;
}

/* An earlier overflow on l without the burst it would be the tail of (none seen within
 * TAIL_S, or that one holds still): the overflow of now */
static void live_overflow(const struct watch *w, struct doc_finding *df,
                          struct watch_listener *l, double now)
{
	if (df->rule != DOC_R_EARLIER_OVERFLOW)
		return;
	int tail = l->overflow_seen > 0 && now - l->overflow_seen <= TAIL_S &&
	           !holds_on(w, DOC_R_ACCEPT_QUEUE_OVERFLOW, l);
	if (tail)
		return;
	df->rule = DOC_R_ACCEPT_QUEUE_OVERFLOW;
	df->kind = doc_rules[df->rule].kind;
	df->severity = SEV_CRITICAL;
	snprintf(df->summary, sizeof df->summary, "the accept queue filled and the kernel dropped "
	         "connection attempts in this window: clients wait 1 s, 3 s, 7 s to retry");
	doc_note(df, "no connection was seen waiting and no SYN was sent again in this namespace "
	         "(clients elsewhere retransmit in theirs), but no overflow in the last %.0f s left "
	         "a tail these drops could be (or that one holds still): they are of now", TAIL_S);
}

/* One chunk of the window in the record, judged by the rules that run in watch */
static void judge(struct watch *w, struct shared_window *d, struct watch_listener **map, double now,
                  int *seen)
{
	static struct doc_findings fs;
	conns_in(d, map);
	doc_judge_all(d, DOC_IN_WATCH, &fs);
	for (int k = 0; k < fs.n; k++) {
		struct doc_finding *df = &fs.f[k];
		if (df->listener < 0 || df->listener >= d->nl)
			continue;
		live_overflow(w, df, map[df->listener], now);
		if (df->rule == DOC_R_ACCEPT_QUEUE_OVERFLOW)
			map[df->listener]->overflow_seen = now;
		struct watch_finding *f = found(w, df, map[df->listener], now);
		if (f) {
			seen[f - w->find] = 1;
			watch_apply(w, f, map[df->listener]);
		}
	}
	for (int k = 0; k < d->nl; k++)
		map[k]->doc_index = -1;
	doctor_findings_free(&fs);
	d->c = NULL;
	d->nc = d->cap = 0;
}

/* The namespace of l in d (added with its counters when new); -1 when d has no room */
static int ns_in(struct shared_window *d, struct watch *w, const struct watch_listener *l,
                 const long long (*end)[3])
{
	for (int k = 0; k < d->nns; k++)
		if (d->ns[k].ino == l->ns_ino)
			return k;
	if (d->nns == DOC_MAX_NS)
		return -1;
	for (int j = 0; j < w->nns; j++) {
		struct watch_ns *wn = &w->ns[j];
		if (wn->ino != l->ns_ino)
			continue;
		struct doc_ns *ns = &d->ns[d->nns];
		memset(ns, 0, sizeof *ns);
		ns->ino = wn->ino;
		ns->pid = wn->pid;
		ns->nl = -1;
		ns->ours = wn->pid == 0 && !wn->file[0];
		for (int c = 0; c < C_COUNT; c++)
			ns->start[c] = ns->end[c] = -1;
		for (int c = 0; c < 3; c++) {
			ns->start[counter_index[c]] = wn->w_start[c];
			ns->end[counter_index[c]] = end[j][c];
		}
		/* (the cap every backlog of the namespace is cut to: its fix, read once) */
		if (wn->somaxconn == -2)
			wn->somaxconn = ns->ours ? st_sysctl_num("net.core.somaxconn", -1)
			                         : target_sysctl(wn->pid, "net.core.somaxconn");
		ns->somaxconn = wn->somaxconn;
		ns->rmem_max = ns->wmem_max = -1;
		return d->nns++;
	}
	return -1;
}

void watch_findings(struct watch *w, double now)
{
	static struct shared_window d;       /* (large: doctor's own tables) */
	static struct watch_listener *map[DOC_MAX_LISTENERS];
	static long long end[WATCH_MAX_NS][3];
	static int seen[WATCH_MAX_FINDINGS];
	memset(seen, 0, sizeof seen);
	watch_apply_check(w);
	for (int k = 0; k < w->nl; k++)
		w->l[k].doc_index = -1;
	for (int k = 0; k < w->nns; k++)
		ns_counters(&w->ns[k], end[k]);
	memset(&d, 0, sizeof d);
	for (int k = 0; k <= w->nl; k++) {
		struct watch_listener *l = k < w->nl ? &w->l[k] : NULL;
		int ns = -1;
		if (l && (!l->used || !l->known || l->excluded || !l->w_samples))
			continue;
		if (l && d.nl < DOC_MAX_LISTENERS)
			ns = ns_in(&d, w, l, (const long long (*)[3])end);
		if (!l || ns < 0) { /* the end, or a full record: judged, and the next begun */
			d.elapsed_s = d.seconds = w->a->window;
			if (d.nl)
				judge(w, &d, map, now, seen);
			memset(&d, 0, sizeof d);
			if (!l)
				break;
			if ((ns = ns_in(&d, w, l, (const long long (*)[3])end)) < 0)
				continue;
		}
		struct doc_listener *L = &d.l[d.nl];
		l->doc_index = d.nl;
		map[d.nl++] = l;
		L->ns = ns;
		L->family = l->family;
		L->port = l->port;
		memcpy(L->addr, l->addr, sizeof L->addr);
		L->inode = l->ninodes ? l->inodes[0] : 0;
		L->backlog = l->backlog;
		L->queue_now = l->queue;
		L->queue_peak = l->w_peak;
		L->queued_samples = (int)l->w_queued;
		L->asked = -1;
		L->rb = l->rb;
		L->tb = l->tb;
		L->drops_first = (uint32_t)l->w_drops0;
		L->drops_last = (uint32_t)l->drops;
		L->mem_samples = (int)l->w_samples;
		L->nodelay = -1;
		L->seen_last = l->up;
		L->service = -1;
		if (l->service_pid > 0) {
			L->owners[0].pid = l->service_pid;
			snprintf(L->owners[0].comm, sizeof L->owners[0].comm, "%s", l->id.comm);
			L->nowners = 1;
			L->service = 0;
		}
		snprintf(L->start.why, sizeof L->start.why, "watch does not read start commands "
		         "(socktune doctor %d shows one)", l->service_pid);
		L->cgroup_id = l->cgroup_id;
		watch_close_fill(w, l, L, &d.ns[ns]);
	}
	/* what this window did not find: a quiet window more, cleared after enough of them */
	for (int k = 0; k < WATCH_MAX_FINDINGS; k++) {
		struct watch_finding *f = &w->find[k];
		if (!f->used || seen[k])
			continue;
		if (!f->holds) {
			if (now - f->cleared_at >= FLAP_MEMORY_S)
				f->used = 0;
			continue;
		}
		if (++f->absent < f->needed)
			continue;
		f->holds = 0;
		f->cleared_at = now;
		const struct watch_listener *l = NULL;
		for (int j = 0; j < w->nl && !l; j++)
			if (w->l[j].used && w->l[j].ns_ino == f->ns_ino && w->l[j].port == f->port &&
			    w->l[j].family == f->family && memcmp(w->l[j].addr, f->addr, 16) == 0)
				l = &w->l[j];
		say(f, l, NULL, 0);
	}
	/* the next window starts here: the namespaces' counters as read now, each listener's
	 * drops as its latest sample has them (the boundary is both windows' sample, as doctor's
	 * first sample is; else drops between it and the next sample would count in the
	 * namespace and not in the listener) */
	for (int k = 0; k < w->nns; k++)
		memcpy(w->ns[k].w_start, end[k], sizeof end[k]);
	watch_close_window_end(w);
	for (int k = 0; k < w->nl; k++) {
		struct watch_listener *l = &w->l[k];
		l->w_samples = l->up;
		l->w_drops0 = l->drops;
		l->w_peak = l->queue;
		l->w_queued = 0;
	}
}
