/* doctor's rules (cli/findings.c) on windows made up here: each finding needs its evidence,
 * and what the cures leave (NODELAY on, a capped delayed ACK, quick-ack's request rate, a
 * single retransmit, drops counted nowhere) gives none. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../../cli/findings.c"
#include "../../cli/diag.c"
#include "../../cli/holders.c"
#include "unit.h"

static struct doctor d;
static struct doc_conn conns[4];

/* One listener on 127.0.0.1:8000 (backlog 5, somaxconn 4096), no process visible */
static void reset(void)
{
	memset(&d, 0, sizeof d);
	memset(conns, 0, sizeof conns);
	d.nns = 1;
	d.ns[0].ours = 1;
	d.ns[0].somaxconn = 4096;
	d.ns[0].rmem_max = d.ns[0].wmem_max = 4194304;
	d.ns[0].tcp_mem[2] = 1 << 20;
	d.elapsed_s = 3;
	d.nl = 1;
	d.l[0].family = AF_INET;
	d.l[0].port = 8000;
	d.l[0].backlog = 5;
	d.l[0].nodelay = 0;
	d.l[0].addr[0] = 127, d.l[0].addr[3] = 1;
	d.c = conns;
}

static struct doc_conn *conn(void)
{
	struct doc_conn *c = &conns[d.nc++];
	c->listener = 0;
	c->nodelay = -2;
	c->samples = 10;
	c->first_t = 0;
	c->last_t = 3;
	c->last.state = TS_ESTABLISHED;
	c->last.ti.min_rtt = 10;
	return c;
}

static int has(const char *kind, const char **certainty)
{
	static struct doc_findings fs;
	doctor_findings(&d, &fs);
	for (int k = 0; k < fs.n; k++)
		if (strcmp(fs.f[k].kind, kind) == 0) {
			if (certainty)
				*certainty = fs.f[k].certainty;
			return 1;
		}
	return 0;
}

/* the evidence of the first finding of that kind, or "" */
static const char *evidence_of(const char *kind)
{
	static struct doc_findings fs;
	doctor_findings(&d, &fs);
	for (int k = 0; k < fs.n; k++)
		if (strcmp(fs.f[k].kind, kind) == 0)
			return fs.f[k].evidence;
	return "";
}

static int count(void)
{
	static struct doc_findings fs;
	doctor_findings(&d, &fs);
	return fs.n;
}

static void nagle_cases(void)
{
	const char *sure = "";
	reset();
	struct doc_conn *c = conn(); /* 50 requests, 100 response segments, rtt 20 ms */
	c->last.ti.data_segs_in = 50, c->last.ti.data_segs_out = 100, c->max_rtt = 20300;
	c->nodelay = 0;
	if (!has("nagle-delayed-ack", &sure) || strcmp(sure, "high") != 0)
		CASE_FAIL("the Nagle stall, NODELAY read 0 on the connection: high (%s)", sure);
	c->nodelay = -2;
	if (!has("nagle-delayed-ack", &sure) || strcmp(sure, "medium") != 0)
		CASE_FAIL("the connection not read, the listener's 0 (a server may set it per "
		          "connection): medium (%s)", sure);
	c->nodelay = 1;
	if (has("nagle-delayed-ack", NULL))
		CASE_FAIL("NODELAY on the connection: no Nagle finding");
	c->nodelay = -2;
	d.l[0].nodelay = -2;
	if (!has("nagle-delayed-ack", &sure) || strcmp(sure, "medium") != 0)
		CASE_FAIL("NODELAY not readable: medium (%s)", sure);
	c->max_rtt = 9000;
	if (has("nagle-delayed-ack", NULL))
		CASE_FAIL("rtt 9 ms over a 0.01 ms path: under the 15 ms signature");
	c->max_rtt = 20300, c->last.ti.data_segs_out = 50;
	if (has("nagle-delayed-ack", NULL))
		CASE_FAIL("one segment per response: nothing for Nagle to hold, no finding");
	c->last.ti.data_segs_out = 100, c->last.ti.min_rtt = UINT32_MAX;
	if (has("nagle-delayed-ack", NULL))
		CASE_FAIL("no rtt sample yet (min_rtt ~0U): no finding");
	end_group("findings_nagle");
}

static void two_write_cases(void)
{
	const char *sure = "";
	reset();
	struct doc_conn *c = conn(); /* 68 requests in 136 pieces over 3 s, ato 40 ms */
	c->last.ti.data_segs_in = 136, c->last.ti.data_segs_out = 68, c->max_ato = 40000;
	c->max_rtt = 170;
	if (!has("delayed-ack-two-write", &sure) || strcmp(sure, "medium") != 0)
		CASE_FAIL("22.7 requests a second, ato 40 ms: medium (%s)", sure);
	if (has("nagle-delayed-ack", NULL))
		CASE_FAIL("the two-write stall is not the Nagle one");
	c->max_ato = 8000;
	if (has("delayed-ack-two-write", NULL))
		CASE_FAIL("--delack-max 5ms: ato 8 ms, no finding");
	c->max_ato = 40000;
	c->last.ti.data_segs_in = 174000, c->last.ti.data_segs_out = 87000;
	if (has("delayed-ack-two-write", NULL))
		CASE_FAIL("--quickack: 29000 requests a second, no finding");
	c->last.ti.data_segs_in = 20, c->last.ti.data_segs_out = 10;
	if (has("delayed-ack-two-write", NULL))
		CASE_FAIL("3 requests a second: slower than one delayed ACK each, no finding");
	c->last.ti.data_segs_in = 136, c->last.ti.data_segs_out = 68;
	c->samples = 1;
	if (has("delayed-ack-two-write", NULL))
		CASE_FAIL("seen once: no rate, no finding");
	end_group("findings_two_write");
}

static void overflow_cases(void)
{
	const char *sure = "";
	reset();
	d.ns[0].start[C_LISTEN_OVERFLOWS] = 100, d.ns[0].end[C_LISTEN_OVERFLOWS] = 1700;
	d.l[0].drops_first = 10, d.l[0].drops_last = 1610, d.l[0].mem_samples = 2;
	if (!has("accept-queue-overflow", &sure) || strcmp(sure, "high") != 0)
		CASE_FAIL("the listener's own drops and the overflows: high (%s)", sure);
	d.l[0].drops_last = 10;
	d.l[0].queue_peak = 6;
	if (has("accept-queue-overflow", NULL))
		CASE_FAIL("overflows in the namespace, its own drops read and none: another "
		          "listener's, no finding even with its queue seen full");
	d.l[0].mem_samples = 0, d.l[0].queue_peak = 3;
	if (!has("accept-queue-overflow", &sure) || strcmp(sure, "low") != 0)
		CASE_FAIL("drops not read, its queue seen half full, the only one: low (%s)", sure);
	d.ns[0].end[C_LISTEN_OVERFLOWS] = 100;
	d.l[0].drops_last = 1610;
	if (has("accept-queue-overflow", NULL))
		CASE_FAIL("drops without overflows (another cause): none");
	d.ns[0].end[C_LISTEN_OVERFLOWS] = -1;
	if (has("accept-queue-overflow", NULL))
		CASE_FAIL("the counters unreadable: no finding on drops alone");
	end_group("findings_overflow");
}

static void retransmit_cases(void)
{
	reset();
	struct doc_conn *c = conn();
	c->last.ti.total_retrans = 1, c->last.ti.segs_out = 172;
	if (has("retransmits", NULL))
		CASE_FAIL("1 of 172 (a window probe's worth): none");
	c->last.ti.total_retrans = 5, c->last.ti.segs_out = 200;
	if (!has("retransmits", NULL))
		CASE_FAIL("5 of 200: a finding");
	c->last.ti.total_retrans = 1, c->last.ti.total_rto = 1;
	c->last.info_len = sizeof c->last.ti;
	if (!has("retransmits", NULL))
		CASE_FAIL("one retransmit timeout: a finding");
	c->last.state = TS_LAST_ACK;
	if (has("retransmits", NULL))
		CASE_FAIL("a FIN sent again to a client gone: no finding");
	end_group("findings_retransmits");
}

static void healthy_cases(void)
{
	reset();
	struct doc_conn *c = conn(); /* a busy tuned keep-alive connection */
	c->last.ti.data_segs_in = 30000, c->last.ti.data_segs_out = 30000, c->max_rtt = 60;
	c->max_ato = 40000, c->nodelay = 1;
	c->last.ti.busy_time = 2000000, c->last.ti.rwnd_limited = 1000;
	c->last.has_mem = 1, c->last.mem[MEM_RCVBUF] = 131072, c->last.mem[MEM_SNDBUF] = 87040;
	d.l[0].rb = 131072, d.l[0].tb = 16384;
	if (count() != 0)
		CASE_FAIL("a healthy window: no finding (%d)", count());
	c->last.ti.rwnd_limited = 1500000;
	if (!has("receive-window-limited", NULL))
		CASE_FAIL("75%% of busy time waiting for the window: a finding");
	c->last.ti.rwnd_limited = 0;
	d.l[0].rb = 2 * 4194304;
	if (has("buffer-clamped", NULL))
		CASE_FAIL("rb at twice rmem_max (--rcvbuf 4M), no receive drops: no finding");
	d.ns[0].start[C_RCVQ_DROP] = 0, d.ns[0].end[C_RCVQ_DROP] = 40;
	if (!has("buffer-clamped", NULL))
		CASE_FAIL("rb at its cap while received data was dropped: buffer-clamped");
	/* one drop, and PruneCalled unreadable at the end: the drop still counts, and the
	 * evidence says unknown, not a number */
	d.ns[0].end[C_RCVQ_DROP] = 1, d.ns[0].end[C_PRUNE] = -1;
	const char *ev = evidence_of("buffer-clamped");
	if (!strstr(ev, "TCPRcvQDrop=+1") || !strstr(ev, "PruneCalled=unknown") || strstr(ev, "+-"))
		CASE_FAIL("one drop, PruneCalled unreadable: buffer-clamped with PruneCalled=unknown "
		          "(evidence: '%s')", ev);
	d.ns[0].end[C_RCVQ_DROP] = 0, d.ns[0].end[C_PRUNE] = 0;
	/* an open connection with 16 MiB of buffers against a ~4 MB tcp_mem, holding nothing,
	 * then a quarter of the limit */
	d.final_t = c->last_t;
	c->last.mem[MEM_RCVBUF] = 8 << 20, c->last.mem[MEM_SNDBUF] = 8 << 20;
	d.ns[0].tcp_mem[2] = 1000; /* pages: ~4 MB */
	if (has("memory-exposure", NULL))
		CASE_FAIL("buffers over the limit, nothing in use: no finding");
	c->last.mem[MEM_RMEM] = 1 << 20;
	if (!has("memory-exposure", NULL))
		CASE_FAIL("a quarter of the limit in use: memory-exposure");
	c->last_t = 1;
	if (has("memory-exposure", NULL))
		CASE_FAIL("a connection closed before the end holds nothing: no finding");
	end_group("findings_healthy");
}

int main(void)
{
	nagle_cases();
	two_write_cases();
	overflow_cases();
	retransmit_cases();
	healthy_cases();
	return failures != 0;
}
