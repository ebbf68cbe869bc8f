/* The path's findings (cli/findings/findings_path.c) on windows made up here, from freed
 * connections as the kernel reports them (cli/findings/closed.c adds each): slow start named
 * where a far connection's one response needed a second flight at the initial window in
 * force and took the round trips measured, with the window that holds it (bounded) as the
 * fix, --peer when near peers connect too, the route as the host-wide alternative, and not
 * where the window is large enough (a cgroup program's, a route's), the response small,
 * the path short, the round trips measured one, the peer's window the cause; loss named
 * where a far connection of a loss-based congestion control sent again (by name, or by its
 * cut threshold), with bbr as the fix (modprobe first when it is not loaded), and not for
 * bbr, near peers or a loss too rare; the receive buffer named where a far upload was
 * sampled held by it (half of it unread, the window closed) and went on after, with
 * --rcvbuf sized from the bodies and net.core.rmem_max's cap said (its sysctl here, the
 * caller's CAP_NET_ADMIN in another namespace), and not for a near peer, a small body, or
 * a peer that had sent all it had. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "findings/findings.c"
#include "findings/findings_queue.c"
#include "findings/findings_memory.c"
#include "findings/findings_path.c"
#include "findings/closed.c"
#include "findings/fixes.c"
#include "findings/rules.c"
#include "host/diag.c"
#include "host/holders.c"
#include "host/grow.c"
#include "host/pidinfo.c"
#include "record.c"
#include "unit.h"

static struct shared_window d;
static struct doc_conn conns[8];
static struct doc_closed closed;
static struct doc_findings found;

/* One listener on 0.0.0.0:8000 held by pid 4242, in a cgroup of its own, its freed
 * connections followed; the namespace's default reno, bbr loaded */
static void reset(void)
{
	memset(&d, 0, sizeof d);
	memset(conns, 0, sizeof conns);
	memset(&closed, 0, sizeof closed);
	d.nns = 1;
	d.ns[0].ours = 1;
	d.ns[0].closes = 1;
	strcpy(d.ns[0].cong, "reno");
	strcpy(d.ns[0].cong_available, "reno bbr cubic");
	d.nl = 1;
	d.l[0].family = AF_INET;
	d.l[0].port = 8000;
	d.l[0].seen_last = 1;
	d.l[0].nowners = 1;
	d.l[0].owners[0].pid = 4242;
	d.l[0].service = 0;
	d.l[0].cgroup_id = 5000;
	d.l[0].closed = &closed;
	d.c = conns;
}

/* n connections freed, each from peer 198.18.0.P (or 10.0.0.P when near), with this tcp_info */
static void gone(int n, int near, uint32_t min_rtt, uint32_t segs, uint64_t busy_us,
                 uint32_t retrans, uint32_t ssthresh)
{
	for (int k = 0; k < n; k++) {
		struct diag_sock s;
		memset(&s, 0, sizeof s);
		s.family = AF_INET, s.sport = 8000, s.dport = 40000 + k, s.info_len = sizeof s.ti;
		if (near)
			s.dst[0] = 10, s.dst[3] = (unsigned char)(k + 1);
		else
			s.dst[0] = 198, s.dst[1] = 18, s.dst[3] = (unsigned char)(k + 1);
		s.ti.min_rtt = min_rtt, s.ti.data_segs_out = segs, s.ti.snd_mss = 1448;
		s.ti.bytes_sent = (uint64_t)segs * 1448 - 100, s.ti.busy_time = busy_us;
		s.ti.total_retrans = retrans, s.ti.snd_ssthresh = ssthresh;
		doc_closed_add(&closed, &s);
	}
}

/* The finding of kind, or NULL */
static const struct doc_finding *judged(const char *kind)
{
	doc_judge_all(&d, DOC_IN_DOCTOR, &found);
	for (int k = 0; k < found.n; k++)
		if (strcmp(found.f[k].kind, kind) == 0)
			return &found.f[k];
	return NULL;
}

/* Evidence key k's value as written in logfmt ("" when absent) */
static const char *ev(const struct doc_finding *f, const char *key, char *out, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	out[0] = '\0';
	if (!m)
		return out;
	rec_write_logfmt(m, f->evidence);
	fclose(m);
	char want[80];
	snprintf(want, sizeof want, "%s=", key);
	for (char *p = text; p && (p = strstr(p, want)); p++)
		if (p == text || p[-1] == ' ') {
			sscanf(p + strlen(want), "%79s", out);
			break;
		}
	free(text);
	(void)n;
	return out;
}

static int has_fix(const struct doc_finding *f, const char *want)
{
	for (int k = 0; k < f->nfix; k++)
		if (strcmp(f->fix[k], want) == 0)
			return 1;
	return 0;
}

static void flights_cases(void)
{
	static const struct {
		uint32_t segs, iw;
		int want;
	} t[] = {{1, 10, 1}, {10, 10, 1}, {11, 10, 2}, {30, 10, 2}, {31, 10, 3}, {32, 10, 3},
	         {70, 10, 3}, {71, 10, 4}, {32, 33, 1}, {32, 32, 1}, {0, 10, 1}, {5, 0, 3},
	         {4000000, 10, 19}};
	for (size_t k = 0; k < sizeof t / sizeof *t; k++)
		if (doc_flights(t[k].segs, t[k].iw) != t[k].want)
			CASE_FAIL("%u segments at %u: %d flights, want %d", t[k].segs, t[k].iw,
			          doc_flights(t[k].segs, t[k].iw), t[k].want);
	end_group("path_flights");
}

/* What closed.c keeps: no peer, no round trip: not a connection of it; far and near apart;
 * the latest DOC_GONE_KEEP one-response ones */
static void closed_cases(void)
{
	reset();
	struct diag_sock s;
	memset(&s, 0, sizeof s);
	s.sport = 8000, s.info_len = sizeof s.ti, s.family = AF_INET;
	doc_closed_add(&closed, &s); /* (the listener itself: no peer port) */
	s.dport = 5;
	s.info_len = 0;
	doc_closed_add(&closed, &s); /* (no tcp_info) */
	s.info_len = sizeof s.ti, s.ti.min_rtt = DOC_NO_RTT;
	doc_closed_add(&closed, &s); /* (no round trip measured) */
	if (closed.n != 1 || closed.far || closed.near)
		CASE_FAIL("n %llu far %llu near %llu, want 1 0 0", closed.n, closed.far, closed.near);
	gone(40, 0, 80000, 32, 240000, 0, 0x7fffffff);
	gone(3, 1, 300, 2, 600, 0, 0x7fffffff);
	gone(2, 0, 80000, 900, 4000000, 12, 9);  /* sent again, threshold cut */
	gone(1, 0, 80000, 900, 1000000, 12, 0x7fffffff); /* sent again, threshold left */
	if (closed.n != 47 || closed.far != 43 || closed.near != 3 || closed.none != DOC_GONE_KEEP ||
	    closed.one_seen != 40 || closed.far_lossy != 3 || closed.far_cut != 2 ||
	    closed.far_retrans != 36 || closed.far_segs != 40 * 32 + 3 * 900 ||
	    closed.nfar_nets != 1 || closed.nnear_nets != 1 || closed.far_min_rtt != 80000)
		CASE_FAIL("n %llu far %llu near %llu kept %d seen %llu lossy %llu cut %llu retrans "
		          "%llu segs %llu nets %d/%d", closed.n, closed.far, closed.near, closed.none,
		          closed.one_seen, closed.far_lossy, closed.far_cut, closed.far_retrans,
		          closed.far_segs, closed.nfar_nets, closed.nnear_nets);
	end_group("path_closed");
}

static void slow_start_cases(void)
{
	char v[80];
	/* 46 KB on an 80 ms path: 3 round trips at 10 */
	reset();
	gone(8, 0, 80000, 32, 240000, 0, 0x7fffffff);
	const struct doc_finding *f = judged("slow-start-limited");
	if (!f)
		CASE_FAIL("46 KB at 80 ms, 3 round trips: not found");
	else {
		if (strcmp(ev(f, "flights", v, sizeof v), "3") || strcmp(ev(f, "initial_window", v,
		    sizeof v), "10") || strcmp(ev(f, "response_segs", v, sizeof v), "32") ||
		    strcmp(ev(f, "round_trips", v, sizeof v), "3.0") ||
		    strcmp(ev(f, "cost_ms", v, sizeof v), "160") ||
		    strcmp(ev(f, "connections_closed", v, sizeof v), "8"))
			CASE_FAIL("evidence: flights %s ...", ev(f, "flights", v, sizeof v));
		if (f->nfix < 1 || strcmp(f->fix[0], "socktune attach --cgroup --initcwnd 33 4242"))
			CASE_FAIL("fix '%s'", f->nfix ? f->fix[0] : "");
		if (!strstr(f->note, "new connections only"))
			CASE_FAIL("note says not that it applies to new connections only: %s", f->note);
	}
	/* near peers too: --peer the far peers' network */
	gone(2, 1, 400, 32, 800, 0, 0x7fffffff);
	f = judged("slow-start-limited");
	if (!f || !has_fix(f, "socktune attach --cgroup --initcwnd 33 --peer 198.18.0.0/24 4242"))
		CASE_FAIL("near peers too: fix '%s'", f && f->nfix ? f->fix[0] : "(none)");
	/* the route to them, as the host-wide alternative (its initcwnd replaced) */
	reset();
	gone(8, 0, 80000, 32, 240000, 0, 0x7fffffff);
	d.l[0].far_route_found = 1;
	struct st_route *r = &d.l[0].far_route;
	r->family = AF_INET, r->table = 254, r->type = 1, r->dst_len = 24, r->scope = 253;
	strcpy(r->dst, "198.18.0.0");
	strcpy(r->dev, "pe-b");
	r->priority = r->nhid = r->pref = r->realms = -1;
	f = judged("slow-start-limited");
	if (!f || !has_fix(f, "ip route change 198.18.0.0/24 dev pe-b table main scope link "
	                      "initcwnd 33") || !strstr(f->note, "host-wide"))
		CASE_FAIL("the route's fix: %s / %s", f && f->nfix > 1 ? f->fix[1] : "(none)",
		          f ? f->note : "");
	/* made in the root cgroup: no attach there (the whole host), said */
	reset();
	gone(8, 0, 80000, 32, 240000, 0, 0x7fffffff);
	d.l[0].cgroup_id = 1;
	f = judged("slow-start-limited");
	if (!f || f->nfix || !strstr(f->note, "root cgroup"))
		CASE_FAIL("root cgroup: %d fixes (%s), note %s", f ? f->nfix : -1,
		          f && f->nfix ? f->fix[0] : "", f ? f->note : "");
	/* bounded: a 200-segment response takes 64; at a route's window of 5, an 8-segment one
	 * takes 11 */
	reset();
	gone(8, 0, 80000, 200, 400000, 0, 0x7fffffff);
	f = judged("slow-start-limited");
	if (!f || f->nfix < 1 || strcmp(f->fix[0], "socktune attach --cgroup --initcwnd 64 4242"))
		CASE_FAIL("200 segments: '%s'", f && f->nfix ? f->fix[0] : "(none)");
	reset();
	gone(8, 0, 80000, 8, 160000, 0, 0x7fffffff);
	d.l[0].iw = 5, d.l[0].iw_from = "route";
	f = judged("slow-start-limited");
	if (!f || f->nfix < 1 || strcmp(f->fix[0], "socktune attach --cgroup --initcwnd 11 4242") ||
	    strcmp(ev(f, "initial_window_from", v, sizeof v), "route"))
		CASE_FAIL("8 segments at 5: '%s'", f && f->nfix ? f->fix[0] : "(none)");
	/* none: the window in force holds it (a cgroup program's 40) */
	reset();
	gone(8, 0, 80000, 32, 240000, 0, 0x7fffffff);
	d.l[0].iw = 40, d.l[0].iw_from = "cgroup";
	if (judged("slow-start-limited"))
		CASE_FAIL("a window of 40 holds 32 segments: found");
	/* none: one round trip measured (a window that holds it, whatever was read of it) */
	reset();
	gone(8, 0, 80000, 32, 80000, 0, 0x7fffffff);
	if (judged("slow-start-limited"))
		CASE_FAIL("1 round trip measured: found");
	/* none: small responses, a short path, the peer's window, too few */
	reset();
	gone(8, 0, 80000, 6, 80000, 0, 0x7fffffff);
	if (judged("slow-start-limited"))
		CASE_FAIL("6 segments: found");
	reset();
	gone(8, 1, 500, 32, 1500, 0, 0x7fffffff);
	if (judged("slow-start-limited"))
		CASE_FAIL("0.5 ms: found");
	reset();
	for (int k = 0; k < 8; k++) {
		struct diag_sock s;
		memset(&s, 0, sizeof s);
		s.family = AF_INET, s.sport = 8000, s.dport = 100 + k, s.info_len = sizeof s.ti;
		s.ti.min_rtt = 80000, s.ti.data_segs_out = 32, s.ti.busy_time = 400000;
		s.ti.rwnd_limited = 300000;
		doc_closed_add(&closed, &s);
	}
	if (judged("slow-start-limited"))
		CASE_FAIL("held by the peer's window: found");
	reset();
	gone(1, 0, 80000, 32, 240000, 0, 0x7fffffff);
	gone(9, 0, 80000, 4, 80000, 0, 0x7fffffff);
	if (judged("slow-start-limited"))
		CASE_FAIL("1 of 10: found");
	reset();
	d.l[0].closed = NULL;
	if (judged("slow-start-limited"))
		CASE_FAIL("not followed: found");
	doctor_findings_free(&found);
	end_group("path_slow_start");
}

static struct doc_conn *open_conn(const char *cong, uint32_t min_rtt, uint32_t segs,
                                  uint32_t retrans, uint32_t ssthresh)
{
	struct doc_conn *c = &conns[d.nc++];
	c->samples = 10, c->last_t = 3, c->last.state = TS_ESTABLISHED, c->pid = c->fd = -1;
	c->last.family = AF_INET, c->last.dst[0] = 198, c->last.dst[1] = 18;
	c->last.ti.min_rtt = min_rtt, c->last.ti.data_segs_out = segs;
	c->last.ti.total_retrans = retrans, c->last.ti.snd_ssthresh = ssthresh;
	snprintf(c->last.cong, sizeof c->last.cong, "%s", cong);
	return c;
}

static void loss_cases(void)
{
	char v[80];
	reset();
	open_conn("cubic", 80000, 2800, 25, 9);
	const struct doc_finding *f = judged("loss-limited");
	if (!f || f->nfix < 1 || strcmp(f->fix[0], "socktune attach --congestion bbr --ports 8000 4242") ||
	    strcmp(ev(f, "congestion", v, sizeof v), "cubic") ||
	    strcmp(ev(f, "congestion_from", v, sizeof v), "connection") ||
	    strcmp(ev(f, "retrans_pct", v, sizeof v), "0.89") || strcmp(f->certainty, "high"))
		CASE_FAIL("cubic, 25 of 2800 sent again at 80 ms: %s", f && f->nfix ? f->fix[0] : "(none)");
	/* bbr not loaded: modprobe first */
	strcpy(d.ns[0].cong_available, "reno cubic");
	f = judged("loss-limited");
	if (!f || f->nfix < 2 || strcmp(f->fix[0], "modprobe tcp_bbr") ||
	    strcmp(ev(f, "bbr_available", v, sizeof v), "0"))
		CASE_FAIL("bbr not loaded: %s", f && f->nfix ? f->fix[0] : "(none)");
	/* freed only: the threshold cut tells, the name is the namespace's */
	reset();
	gone(3, 0, 80000, 2800, 8000000, 25, 9);
	f = judged("loss-limited");
	if (!f || strcmp(ev(f, "congestion", v, sizeof v), "reno") ||
	    strcmp(ev(f, "congestion_from", v, sizeof v), "namespace") || strcmp(f->certainty, "medium"))
		CASE_FAIL("freed reno connections: %s", f ? f->summary : "(none)");
	/* near peers too: bbr through the cgroup program, to the far networks only */
	gone(2, 1, 300, 10, 600, 0, 0x7fffffff);
	f = judged("loss-limited");
	if (!f || !has_fix(f, "socktune attach --cgroup --congestion bbr --peer 198.18.0.0/24 4242"))
		CASE_FAIL("near peers too: %s", f && f->nfix ? f->fix[0] : "(none)");
	/* none: bbr (by name; freed: the threshold left), a short path, a rare loss */
	reset();
	open_conn("bbr", 80000, 2800, 30, 0x7fffffff);
	if (judged("loss-limited"))
		CASE_FAIL("bbr open: found");
	reset();
	gone(3, 0, 80000, 2800, 1000000, 30, 0x7fffffff);
	if (judged("loss-limited"))
		CASE_FAIL("bbr freed (threshold left): found");
	reset();
	open_conn("cubic", 800, 2800, 30, 9);
	if (judged("loss-limited"))
		CASE_FAIL("0.8 ms: found");
	reset();
	open_conn("cubic", 80000, 20000, 30, 9);
	if (judged("loss-limited"))
		CASE_FAIL("0.15%%: found");
	/* an open connection freed in the window: counted once, from its end */
	reset();
	open_conn("cubic", 80000, 2800, 25, 9)->freed = 1;
	if (judged("loss-limited"))
		CASE_FAIL("a freed one counted open: found");
	doctor_findings_free(&found);
	end_group("path_loss");
}

static struct doc_conn *upload(uint32_t min_rtt, uint64_t received, uint64_t held_at)
{
	struct doc_conn *c = &conns[d.nc++];
	c->samples = 10, c->last_t = 3, c->last.state = TS_ESTABLISHED, c->pid = c->fd = -1;
	c->last.ti.min_rtt = min_rtt, c->last.ti.bytes_received = received;
	c->rcv_held_samples = 2, c->rcv_held_rcvbuf = 87380, c->rcv_held_rmem = 87552;
	c->rcv_held_wnd = 384, c->rcv_held_received = held_at;
	return c;
}

static void rcvbuf_cases(void)
{
	char v[80];
	reset();
	d.ns[0].rmem_max = 4194304;
	upload(80000, 400000, 55024);
	const struct doc_finding *f = judged("receive-buffer-limited");
	if (!f || f->nfix < 1 || strcmp(f->fix[0], "socktune attach --rcvbuf 1M --ports 8000 4242") ||
	    strcmp(ev(f, "body_bytes", v, sizeof v), "400000") ||
	    strcmp(ev(f, "rcvbuf.effective", v, sizeof v), "87380") ||
	    strcmp(ev(f, "rcv_wnd_bytes", v, sizeof v), "384") || !strstr(f->note, "autotuning"))
		CASE_FAIL("an upload held at 80 ms: %s", f && f->nfix ? f->fix[0] : "(none)");
	/* the end's bytes from the kernel's notification count too; the pace sizes it (1 MB
	 * a second over 80 ms: 80 KB, under twice the body) */
	reset();
	d.ns[0].rmem_max = 16 << 20;
	struct doc_conn *c = upload(80000, 60000, 55024);
	c->end_received = 3000000, c->max_rcv_pace = 1e6;
	f = judged("receive-buffer-limited");
	if (!f || f->nfix < 1 || strcmp(f->fix[0], "socktune attach --rcvbuf 8M --ports 8000 4242"))
		CASE_FAIL("3 MB at its end: %s", f && f->nfix ? f->fix[0] : "(none)");
	/* net.core.rmem_max under it: its sysctl here, past it by CAP_NET_ADMIN elsewhere */
	reset();
	d.ns[0].rmem_max = 524288;
	upload(80000, 400000, 55024);
	f = judged("receive-buffer-limited");
	if (!f || f->nfix < 2 || strcmp(f->fix[0], "sysctl -w net.core.rmem_max=1048576") ||
	    strcmp(f->fix[1], "socktune attach --rcvbuf 1M --ports 8000 4242") ||
	    !strstr(f->note, "SOCKTUNE_RCVBUF_FORCE"))
		CASE_FAIL("rmem_max 512K here: %s / %s", f && f->nfix ? f->fix[0] : "(none)",
		          f ? f->note : "");
	d.ns[0].ours = 0, d.ns[0].pid = 777;
	f = judged("receive-buffer-limited");
	if (!f || f->nfix < 1 ||
	    strcmp(f->fix[0], "socktune attach --rcvbuf 1M --rcvbuf-force --ports 8000 4242"))
		CASE_FAIL("rmem_max 512K in another namespace: %s", f && f->nfix ? f->fix[0] : "(none)");
	/* none: a near peer, a small body, a peer that had sent all it had when it was held */
	reset();
	upload(900, 400000, 55024);
	if (judged("receive-buffer-limited"))
		CASE_FAIL("0.9 ms: found");
	reset();
	upload(80000, 40000, 20000);
	if (judged("receive-buffer-limited"))
		CASE_FAIL("a 40 KB body: found");
	reset();
	upload(80000, 400000, 400000);
	if (judged("receive-buffer-limited"))
		CASE_FAIL("all sent when held: found");
	doctor_findings_free(&found);
	end_group("path_rcvbuf");
}

int main(void)
{
	flights_cases();
	closed_cases();
	slow_start_cases();
	loss_cases();
	rcvbuf_cases();
	return failures != 0;
}
