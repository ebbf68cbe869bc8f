/* The findings' table (cli/findings/findings.h's DOC_RULES, cli/findings/rules.c): each kind
 * once; each row with a window of its own below, which its judge finds it on where its row
 * says it runs (doctor, watch) and nowhere else, the finding naming its row; every cure an
 * option sockcopy sets on a live socket (cli/host/sockcopy.h), with a value the option
 * takes; and the names revert takes back from a journal: the cures' keys ("backlog",
 * "nodelay"), no other (a label, another option of the table, a near miss).  A new finding
 * is a row of the table and a row of cases[] here. */
#include "findings_harness.h"
#include "host/sockcopy.h"

/* ---- a window for each finding (the numbers of test_findings' cases) ---- */

static void w_overflow(void) /* the listener's own drops, its queue seen full */
{
	d.ns[0].start[C_LISTEN_OVERFLOWS] = 100, d.ns[0].end[C_LISTEN_OVERFLOWS] = 1700;
	d.l[0].drops_first = 10, d.l[0].drops_last = 1610, d.l[0].mem_samples = 2;
	d.l[0].queue_peak = 6, d.l[0].queued_samples = 40;
}

static void w_earlier_overflow(void) /* drops, no queue seen, no SYN sent again */
{
	d.ns[0].start[C_LISTEN_OVERFLOWS] = 759, d.ns[0].end[C_LISTEN_OVERFLOWS] = 1840;
	d.ns[0].start[C_SYN_RETRANS] = d.ns[0].end[C_SYN_RETRANS] = 40;
	d.l[0].drops_first = 759, d.l[0].drops_last = 1840, d.l[0].mem_samples = 2;
}

static void w_backlog_clamped(void) /* somaxconn 128 in force, the queue near it */
{
	d.ns[0].somaxconn = 128;
	d.l[0].backlog = 128, d.l[0].queue_peak = 100;
}

static void w_nagle(void) /* 50 requests, 100 response segments, rtt 20 ms, NODELAY 0 */
{
	struct doc_conn *c = conn();
	c->last.ti.data_segs_in = 50, c->last.ti.data_segs_out = 100, c->max_rtt = 20300;
	c->nodelay = 0;
}

static void w_two_write(void) /* 68 requests in 136 pieces over 3 s, ato 40 ms */
{
	struct doc_conn *c = conn();
	c->last.ti.data_segs_in = 136, c->last.ti.data_segs_out = 68, c->max_ato = 40000;
	c->max_rtt = 170;
}

static void w_client_nagle(void) /* MQTT at QoS 1 against NODELAY on the server */
{
	client_nagle_conn();
}

static void w_rwnd(void) /* 75% of busy time waiting for the client's window */
{
	struct doc_conn *c = conn();
	c->last.ti.busy_time = 2000000, c->last.ti.rwnd_limited = 1500000;
}

static void w_sndbuf(void) /* 60% of busy time waiting for room in the send buffer */
{
	struct doc_conn *c = conn();
	c->last.ti.busy_time = 1000000, c->last.ti.sndbuf_limited = 600000;
}

static void w_retransmits(void) /* 5 of 200 segments sent again */
{
	struct doc_conn *c = conn();
	c->last.info_len = sizeof c->last.ti;
	c->last.ti.total_retrans = 5, c->last.ti.segs_out = 200, c->last.ti.bytes_retrans = 100;
}

static void w_buffer_clamped(void) /* rb at twice rmem_max while received data was dropped */
{
	d.l[0].rb = 2 * 4194304;
	d.ns[0].start[C_RCVQ_DROP] = 0, d.ns[0].end[C_RCVQ_DROP] = 40;
}

static void w_memory(void) /* 16 MiB of buffers open against ~4 MB of tcp_mem, 1 MiB held */
{
	struct doc_conn *c = conn();
	c->last.has_mem = 1;
	c->last.mem[MEM_RCVBUF] = 8 << 20, c->last.mem[MEM_SNDBUF] = 8 << 20;
	c->last.mem[MEM_RMEM] = 1 << 20;
	d.final_t = c->last_t;
	d.ns[0].tcp_mem[2] = 1000;
}

static struct doc_closed closed;

static void w_slow_start(void) /* 4 responses of 32 segments, each 3 round trips at 80 ms */
{
	memset(&closed, 0, sizeof closed);
	for (int k = 0; k < 4; k++) {
		struct diag_sock s = {.family = AF_INET, .sport = 8000, .dport = 40000 + k,
		                      .info_len = sizeof s.ti};
		s.dst[0] = 198, s.dst[1] = 18;
		s.ti.min_rtt = 80000, s.ti.data_segs_out = 32, s.ti.snd_mss = 1448;
		s.ti.bytes_sent = 46001, s.ti.busy_time = 240000, s.ti.snd_ssthresh = 0x7fffffff;
		doc_closed_add(&closed, &s);
	}
	d.l[0].closed = &closed;
}

static void w_loss(void) /* cubic at 80 ms, 20 of 2000 segments sent again */
{
	struct doc_conn *c = conn();
	c->last.ti.min_rtt = 80000, c->last.ti.total_retrans = 20, c->last.ti.data_segs_out = 2000;
	c->last.ti.snd_ssthresh = 9;
	strcpy(c->last.cong, "cubic");
}

static void w_rcvbuf(void) /* an 80 ms upload held at a full 87,380-byte buffer */
{
	struct doc_conn *c = conn();
	c->last.ti.min_rtt = 80000, c->last.ti.bytes_received = 400000;
	c->rcv_held_samples = 1, c->rcv_held_rcvbuf = 87380, c->rcv_held_rmem = 87552;
	c->rcv_held_received = 55024;
}

/* Each finding, the window that shows it, and where it is looked for (watch has no start
 * commands, buffers' caps or retransmit counters of its own) */
static const struct {
	const char *kind;
	void (*window)(void);
	unsigned where;
} cases[] = {
	{"accept-queue-overflow", w_overflow, DOC_IN_BOTH},
	{"earlier-overflow", w_earlier_overflow, DOC_IN_BOTH},
	{"backlog-clamped", w_backlog_clamped, DOC_IN_BOTH},
	{"nagle-delayed-ack", w_nagle, DOC_IN_BOTH},
	{"delayed-ack-two-write", w_two_write, DOC_IN_BOTH},
	{"delayed-ack-client-nagle", w_client_nagle, DOC_IN_BOTH},
	{"slow-start-limited", w_slow_start, DOC_IN_BOTH},
	{"loss-limited", w_loss, DOC_IN_BOTH},
	{"receive-buffer-limited", w_rcvbuf, DOC_IN_BOTH},
	{"receive-window-limited", w_rwnd, DOC_IN_DOCTOR},
	{"send-buffer-limited", w_sndbuf, DOC_IN_DOCTOR},
	{"retransmits", w_retransmits, DOC_IN_DOCTOR},
	{"buffer-clamped", w_buffer_clamped, DOC_IN_DOCTOR},
	{"memory-exposure", w_memory, DOC_IN_DOCTOR},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static int rule_of(const char *kind)
{
	for (int r = 0; r < DOC_R_COUNT; r++)
		if (strcmp(doc_rules[r].kind, kind) == 0)
			return r;
	return -1;
}

/* Each kind once; rows that share a judge together, run in the same places; each row a
 * case here, each case a row */
static void table_cases(void)
{
	for (int r = 0; r < DOC_R_COUNT; r++) {
		const struct doc_rule *x = &doc_rules[r];
		if (!x->kind || !x->kind[0] || !x->judge || !x->where || (x->where & ~DOC_IN_BOTH))
			CASE_FAIL("row %d: a kind, a judge and where it runs (%s)", r,
			          x->kind ? x->kind : "no kind");
		for (int k = 0; k < r; k++) {
			if (x->kind && doc_rules[k].kind && strcmp(x->kind, doc_rules[k].kind) == 0)
				CASE_FAIL("%s: in rows %d and %d", x->kind, k, r);
			if (k < r - 1 && doc_rules[k].judge == x->judge && doc_rules[r - 1].judge != x->judge)
				CASE_FAIL("%s: its judge runs row %d too, not next to it (it runs once "
				          "for rows together)", x->kind, k);
		}
		if (r && doc_rules[r - 1].judge == x->judge && doc_rules[r - 1].where != x->where)
			CASE_FAIL("%s: one judge, run in other places than for %s", x->kind,
			          doc_rules[r - 1].kind);
		int cased = 0;
		for (int k = 0; k < NCASES; k++)
			cased += strcmp(cases[k].kind, x->kind) == 0;
		if (cased != 1)
			CASE_FAIL("%s: %d windows here (one: a row of cases[])", x->kind, cased);
	}
	for (int k = 0; k < NCASES; k++)
		if (rule_of(cases[k].kind) < 0)
			CASE_FAIL("case %s: no row of the table", cases[k].kind);
	end_group("rules_table");
}

/* The findings of where on the window: whether kind is among them; each names its row */
static int found_in(unsigned where, const char *kind)
{
	int hit = 0;
	doc_judge_all(&d, where, &found);
	for (int k = 0; k < found.n; k++) {
		const struct doc_finding *f = &found.f[k];
		if (f->rule < 0 || f->rule >= DOC_R_COUNT || f->kind != doc_rules[f->rule].kind)
			CASE_FAIL("a finding %s of row %d: not its row's kind", f->kind, f->rule);
		hit |= f->kind && strcmp(f->kind, kind) == 0;
	}
	return hit;
}

/* Each row's window: found by doctor and by watch as the case says, and the row says */
static void where_cases(void)
{
	for (int k = 0; k < NCASES; k++) {
		int r = rule_of(cases[k].kind);
		if (r < 0)
			continue;
		reset();
		held();
		cases[k].window();
		int in_doctor = found_in(DOC_IN_DOCTOR, cases[k].kind);
		int in_watch = found_in(DOC_IN_WATCH, cases[k].kind);
		if (in_doctor != !!(cases[k].where & DOC_IN_DOCTOR) ||
		    in_watch != !!(cases[k].where & DOC_IN_WATCH) || doc_rules[r].where != cases[k].where)
			CASE_FAIL("%s on its window: doctor %d, watch %d (want where %u; its row %u)",
			          cases[k].kind, in_doctor, in_watch, cases[k].where, doc_rules[r].where);
	}
	reset();
	held();
	if (found_in(DOC_IN_BOTH, "") || found.n)
		CASE_FAIL("a quiet window: no finding (%d, the first %s)", found.n,
		          found.n ? found.f[0].kind : "");
	doctor_findings_free(&found);
	end_group("rules_where");
}

/* Every cure an option sockcopy sets and reads back, with a value it takes; the two known
 * ones as they were before the table */
static void cure_cases(void)
{
	int cures = 0;
	for (int r = 0; r < DOC_R_COUNT; r++) {
		const struct doc_rule *x = &doc_rules[r];
		if (x->option == DOC_NO_CURE) {
			if (x->value || x->flags)
				CASE_FAIL("%s: no cure, and a value %d or flags %u", x->kind, x->value, x->flags);
			continue;
		}
		cures++;
		if (!sockcopy_takes(x->option))
			CASE_FAIL("%s: its cure, option %d, is not one sockcopy sets", x->kind, x->option);
		else if (x->value < st_vars[x->option].min || x->value > st_vars[x->option].max)
			CASE_FAIL("%s: %s %d, outside [%lld, %lld]", x->kind, st_vars[x->option].option,
			          x->value, st_vars[x->option].min, st_vars[x->option].max);
		if (x->flags & ~DOC_AT_LEAST)
			CASE_FAIL("%s: flags %u", x->kind, x->flags);
	}
	const struct doc_rule *q = &doc_rules[DOC_R_ACCEPT_QUEUE_OVERFLOW];
	const struct doc_rule *n = &doc_rules[DOC_R_NAGLE_DELAYED_ACK];
	if (q->option != ST_V_BACKLOG || q->value != 4096 || q->flags != DOC_AT_LEAST ||
	    n->option != ST_V_NODELAY || n->value != 1 || n->flags != 0 || cures < 2)
		CASE_FAIL("accept-queue-overflow: a backlog of at least 4096; nagle-delayed-ack: "
		          "TCP_NODELAY 1");
	/* what sockcopy takes: the backlog and int options set on a bound socket, read back as
	 * set; and which of them accepted connections copy from their listener */
	static const struct {
		int opt, takes, inherited;
	} opts[] = {
		{ST_V_BACKLOG, 1, 0},       {ST_V_NODELAY, 1, 1},      {ST_V_USER_TIMEOUT, 1, 1},
		{ST_V_TOS, 1, 1},           {ST_V_PRIORITY, 1, 0},     {ST_V_DEFER_ACCEPT, 1, 0},
		{ST_V_RCVBUF, 0, 0},        {ST_V_CONGESTION, 0, 0},   {ST_V_REUSEPORT, 0, 0},
		{ST_V_SYNCNT, 0, 0},        {ST_V_INITCWND, 0, 0},     {ST_V_QUICKACK, 0, 0},
		{ST_V_LOG, 0, 0},           {ST_V_BACKLOG_MIN, 0, 0},  {-1, 0, 0},
		{ST_V_COUNT, 0, 0},
	};
	for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++)
		if (sockcopy_takes(opts[k].opt) != opts[k].takes ||
		    sockcopy_inherited(opts[k].opt) != opts[k].inherited)
			CASE_FAIL("option %d (%s): takes %d inherited %d, want %d %d", opts[k].opt,
			          opts[k].opt >= 0 && opts[k].opt < ST_V_COUNT ? st_vars[opts[k].opt].option
			                                                       : "none",
			          sockcopy_takes(opts[k].opt), sockcopy_inherited(opts[k].opt),
			          opts[k].takes, opts[k].inherited);
	end_group("rules_cures");
}

/* The journal's option names revert takes: a cure's key, and nothing else */
static void journal_name_cases(void)
{
	if (doc_cure_option("backlog") != ST_V_BACKLOG || doc_cure_option("nodelay") != ST_V_NODELAY)
		CASE_FAIL("backlog, nodelay (the journals written so far): %d, %d",
		          doc_cure_option("backlog"), doc_cure_option("nodelay"));
	char keys[200];
	doc_cure_keys(keys, sizeof keys);
	for (int r = 0; r < DOC_R_COUNT; r++) {
		int o = doc_rules[r].option;
		if (o == DOC_NO_CURE)
			continue;
		const char *key = ST_KEY(o);
		if (doc_cure_option(key) != o)
			CASE_FAIL("%s's cure: its key %s maps to %d, not %d", doc_rules[r].kind, key,
			          doc_cure_option(key), o);
		const char *at = strstr(keys, key);
		if (!at || strstr(at + 1, key) || strncmp(keys, "backlog, nodelay", 16) != 0)
			CASE_FAIL("the keys said: '%s' (each cure's once, backlog and nodelay first)", keys);
	}
	static const char *const others[] = {
		"TCP_NODELAY", "NODELAY", "Nodelay", "nodelay ", " backlog", "backlog\n", "nodela",
		"nodelayx", "", "rcvbuf", "priority", "backlog_min", "backlog-min", "quickack", "tos",
	};
	for (size_t k = 0; k < sizeof others / sizeof others[0]; k++)
		if (doc_cure_option(others[k]) != -1)
			CASE_FAIL("'%s': taken as option %d, not refused", others[k],
			          doc_cure_option(others[k]));
	end_group("rules_journal_names");
}

int main(void)
{
	table_cases();
	where_cases();
	cure_cases();
	journal_name_cases();
	return failures != 0;
}
