/* doctor's rules (cli/findings/findings.c, findings_queue.c, findings_memory.c) on windows
 * made up here: each finding needs its evidence, and what the cures leave (NODELAY on, a capped
 * delayed ACK, quick-ack's request rate, a single retransmit, drops counted nowhere) gives none;
 * every fix is a command that runs as printed (cli/findings/fixes.c), naming the pids that hold
 * what it tunes. */
#include "findings_harness.h"

/* The listener held by pid 4242, started as "cd /srv && ./srv -p 8000" */
static void owned(void)
{
	held();
	d.l[0].start.known = 1;
	d.l[0].start.uid = (long)geteuid();
	snprintf(d.l[0].start.dir, sizeof d.l[0].start.dir, "/srv");
	snprintf(d.l[0].start.argv, sizeof d.l[0].start.argv, "./srv -p 8000");
}

/* A fix runs as printed: a command word first (cd ... && one), no placeholder, and no
 * parenthesis outside quotes (prose in parentheses is a syntax error in sh). */
static void check_fix(const char *kind, const char *fix)
{
	static const char *const words[] = {"socktune ", "cd ", "sysctl ", "nsenter ", "ip route "};
	int ok = 0;
	for (size_t k = 0; k < sizeof words / sizeof *words; k++)
		ok |= strncmp(fix, words[k], strlen(words[k])) == 0;
	int quoted = 0;
	for (const char *c = fix; *c; c++) {
		if (*c == '\'')
			quoted = !quoted;
		else if (!quoted && (*c == '(' || *c == ')'))
			ok = 0;
	}
	if (!ok || strstr(fix, "PROGRAM") || strstr(fix, "ROUTE-TO") || strstr(fix, "ADDRESS"))
		CASE_FAIL("%s: the fix '%s' does not run as printed", kind, fix);
}

/* The first finding of that kind (every finding's fixes checked on the way), or NULL */
static const struct doc_finding *find(const char *kind)
{
	doc_judge_all(&d, DOC_IN_DOCTOR, &found);
	const struct doc_finding *hit = NULL;
	for (int k = 0; k < found.n; k++) {
		for (int j = 0; j < found.f[k].nfix; j++)
			check_fix(found.f[k].kind, found.f[k].fix[j]);
		if (!hit && strcmp(found.f[k].kind, kind) == 0)
			hit = &found.f[k];
	}
	return hit;
}

static int has(const char *kind, const char **certainty)
{
	const struct doc_finding *f = find(kind);
	if (f && certainty)
		*certainty = f->certainty;
	return f != NULL;
}

/* the evidence of the first finding of that kind as doctor --json writes it, or "" */
static const char *evidence_of(const char *kind)
{
	static char json[8192];
	const struct doc_finding *f = find(kind);
	FILE *m = fmemopen(json, sizeof json, "w");
	json[0] = '\0';
	if (f && m)
		rec_write_json(m, f->evidence);
	if (m)
		fclose(m);
	return json;
}

/* 1 when a fix of the first finding of that kind is exactly cmd */
static int fixed_by(const char *kind, const char *cmd)
{
	const struct doc_finding *f = find(kind);
	for (int j = 0; f && j < f->nfix; j++)
		if (strcmp(f->fix[j], cmd) == 0)
			return 1;
	return 0;
}

static const char *fixes_of(const char *kind)
{
	static char all[DOC_MAX_FIXES * 4100];
	const struct doc_finding *f = find(kind);
	all[0] = '\0';
	for (int j = 0; f && j < f->nfix; j++)
		doc_say(all, sizeof all, "%s[%s]", j ? " " : "", f->fix[j]);
	return all;
}

static void f_severity_is(const char *kind, enum doc_severity sev)
{
	const struct doc_finding *f = find(kind);
	if (!f || f->severity != sev)
		CASE_FAIL("%s: severity %s, not %s", kind, f ? doc_severity_name(f->severity) : "none",
		          doc_severity_name(sev));
}

static int count(void)
{
	find("");
	return found.n;
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
	/* two booleans, not a sentence: the listener's 0, the connection's unread */
	const char *ev = evidence_of("nagle-delayed-ack");
	if (!strstr(ev, "\"listener_nodelay\": false,") ||
	    !strstr(ev, "\"connection_nodelay\": null") || strstr(ev, "\"nodelay\""))
		CASE_FAIL("the listener's 0, the connection not read: listener_nodelay false, "
		          "connection_nodelay null (evidence: '%s')", ev);
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
	owned();
	d.ns[0].start[C_LISTEN_OVERFLOWS] = 100, d.ns[0].end[C_LISTEN_OVERFLOWS] = 1700;
	d.l[0].drops_first = 10, d.l[0].drops_last = 1610, d.l[0].mem_samples = 2;
	d.l[0].queue_peak = 6, d.l[0].queued_samples = 40;
	if (!has("accept-queue-overflow", &sure) || strcmp(sure, "high") != 0)
		CASE_FAIL("the listener's own drops and the overflows, its queue seen full: high (%s)",
		          sure);
	if (!fixed_by("accept-queue-overflow", "socktune attach --backlog 4096 --ports 8000 4242") ||
	    !fixed_by("accept-queue-overflow", "cd /srv && socktune --backlog 4096 --ports 8000 -- "
	              "./srv -p 8000"))
		CASE_FAIL("the fixes: attach --ports to the pid, and the next start from its "
		          "directory (%s)", fixes_of("accept-queue-overflow"));
	d.l[0].drops_last = 10;
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
	/* the listener closed during the window: its drops up to its last sample count; none
	 * seen is no proof of none, and its queue seen full says it */
	d.ns[0].end[C_LISTEN_OVERFLOWS] = 1700;
	d.l[0].seen_last = 0, d.l[0].mem_samples = 5, d.l[0].drops_last = 10, d.l[0].queue_peak = 6;
	if (!has("accept-queue-overflow", &sure) || strcmp(sure, "medium") != 0)
		CASE_FAIL("closed mid-window, no drop seen, its queue full: medium (%s)", sure);
	if (fixes_of("accept-queue-overflow")[0] == '\0' ||
	    strstr(fixes_of("accept-queue-overflow"), "attach"))
		CASE_FAIL("closed: the next start only, no attach (%s)", fixes_of("accept-queue-overflow"));
	d.l[0].drops_last = 200;
	if (!has("accept-queue-overflow", &sure) || strcmp(sure, "high") != 0)
		CASE_FAIL("closed mid-window, drops seen before: high (%s)", sure);
	/* somaxconn under the cure: the sysctl first, then the relisten */
	d.l[0].seen_last = 1, d.ns[0].somaxconn = 128;
	const struct doc_finding *f = find("accept-queue-overflow");
	if (!f || f->nfix < 2 || strcmp(f->fix[0], "sysctl -w net.core.somaxconn=4096") != 0 ||
	    !strstr(f->fix[1], "socktune attach --backlog 4096"))
		CASE_FAIL("somaxconn 128: the sysctl, then attach (%s)", fixes_of("accept-queue-overflow"));
	end_group("findings_overflow");
}

/* Drops that no client waited on during the window: an earlier burst's tail (the JDK's
 * counter rose for 15 s after its burst with an empty queue and no SYN sent again) */
static void earlier_overflow_cases(void)
{
	const char *sure = "";
	reset();
	owned();
	d.ns[0].start[C_LISTEN_OVERFLOWS] = 759, d.ns[0].end[C_LISTEN_OVERFLOWS] = 1840;
	d.ns[0].start[C_SYN_RETRANS] = d.ns[0].end[C_SYN_RETRANS] = 40;
	d.l[0].drops_first = 759, d.l[0].drops_last = 1840, d.l[0].mem_samples = 2;
	d.l[0].queue_peak = 0;
	if (has("accept-queue-overflow", NULL) || !has("earlier-overflow", &sure) ||
	    strcmp(sure, "medium") != 0)
		CASE_FAIL("no queue seen, no SYN sent again: earlier-overflow (medium: %s), not "
		          "accept-queue-overflow", sure);
	f_severity_is("earlier-overflow", SEV_WARNING);
	if (!fixed_by("earlier-overflow", "socktune attach --backlog 4096 --ports 8000 4242"))
		CASE_FAIL("the backlog that overflowed is still the cure (%s)", fixes_of("earlier-overflow"));
	d.ns[0].end[C_SYN_RETRANS] = 45;
	if (!has("accept-queue-overflow", NULL) || has("earlier-overflow", NULL))
		CASE_FAIL("clients sent SYNs again: a present overflow");
	d.ns[0].end[C_SYN_RETRANS] = -1;
	if (!has("accept-queue-overflow", NULL))
		CASE_FAIL("the SYN counter unreadable: counted as clients waiting, critical");
	d.ns[0].end[C_SYN_RETRANS] = 40, d.l[0].queue_peak = 1, d.l[0].queued_samples = 1;
	if (has("accept-queue-overflow", NULL) || !has("earlier-overflow", NULL))
		CASE_FAIL("one sample caught one wave's connection: still an earlier overflow");
	d.l[0].queued_samples = 2;
	if (!has("accept-queue-overflow", NULL))
		CASE_FAIL("connections seen waiting in two samples: a present overflow");
	end_group("findings_earlier_overflow");
}

static void backlog_clamped_cases(void)
{
	reset();
	owned();
	d.ns[0].somaxconn = 128;
	d.l[0].backlog = 128, d.l[0].queue_peak = 100;
	const struct doc_finding *f = find("backlog-clamped");
	/* the sysctl changes no running listener: the relisten after it */
	if (!f || f->nfix != 2 || strcmp(f->fix[0], "sysctl -w net.core.somaxconn=4096") != 0 ||
	    strcmp(f->fix[1], "socktune attach --backlog 4096 --ports 8000 4242") != 0)
		CASE_FAIL("backlog at somaxconn 128, the queue near it: the sysctl, then attach "
		          "(%s)", fixes_of("backlog-clamped"));
	d.ns[0].ours = 0, d.ns[0].pid = 777;
	f = find("backlog-clamped");
	if (!f || strcmp(f->fix[0], "nsenter --net=/proc/777/ns/net sysctl -w "
	                 "net.core.somaxconn=4096") != 0)
		CASE_FAIL("another namespace: the sysctl in it (%s)", fixes_of("backlog-clamped"));
	end_group("findings_backlog_clamped");
}

static void retransmit_cases(void)
{
	reset();
	owned();
	d.rto_min_us = 1;
	struct doc_conn *c = conn();
	c->last.info_len = sizeof c->last.ti;
	c->last.ti.total_retrans = 1, c->last.ti.segs_out = 172, c->last.ti.bytes_retrans = 100;
	if (has("retransmits", NULL))
		CASE_FAIL("1 of 172 (a window probe's worth): none");
	c->last.ti.total_retrans = 5, c->last.ti.segs_out = 200;
	if (!has("retransmits", NULL))
		CASE_FAIL("5 of 200: a finding");
	c->last.ti.total_retrans = 1, c->last.ti.total_rto = 1, c->last.ti.rto = 204000;
	const struct doc_finding *f = find("retransmits");
	if (!f || !strstr(f->summary, "at least 204 ms"))
		CASE_FAIL("one retransmit timeout: a finding, the stall its rto (%s)", f ? f->summary : "none");
	if (!fixed_by("retransmits", "socktune attach --rto-min 5ms --connections --ports 8000 4242"))
		CASE_FAIL("the default minimum in force on a short path: --rto-min (%s)",
		          fixes_of("retransmits"));
	/* after --rto-min 5ms: the connection's rto is 12 ms; the stall says so, and the fix
	 * in force is not prescribed again */
	c->last.ti.rto = 12000;
	f = find("retransmits");
	if (!f || !strstr(f->summary, "at least 12 ms") || strstr(f->summary, "200 ms") ||
	    strstr(fixes_of("retransmits"), "--rto-min"))
		CASE_FAIL("rto 12 ms: 'at least 12 ms', no --rto-min again (%s; %s)",
		          f ? f->summary : "none", fixes_of("retransmits"));
	c->last.state = TS_LAST_ACK;
	if (has("retransmits", NULL))
		CASE_FAIL("a FIN sent again to a client gone: no finding");
	/* a plain overflow: connections accepted after their SYN-ACK was sent again carry the
	 * request's counts (16 retransmits, 0 segments sent, no byte sent again) */
	reset();
	for (int k = 0; k < 4; k++) {
		c = conn();
		c->last.info_len = sizeof c->last.ti;
		c->first.ti.total_retrans = c->last.ti.total_retrans = 4;
		c->first.ti.total_rto = c->last.ti.total_rto = 4;
		c->last.ti.segs_out = 1;
	}
	if (has("retransmits", NULL))
		CASE_FAIL("SYN-ACKs sent again (16, no byte): not data retransmits, no finding");
	conns[0].last.ti.total_retrans = 10, conns[0].last.ti.bytes_retrans = 6000;
	conns[0].last.ti.segs_out = 100;
	if (!has("retransmits", NULL) || !strstr(evidence_of("retransmits"), "\"retrans\": 6,"))
		CASE_FAIL("6 data segments sent again after the handshake's 4: retrans=6 (%s)",
		          evidence_of("retransmits"));
	end_group("findings_retransmits");
}

/* The client's Nagle against the server's delayed ACK (MQTT at QoS 1 with NODELAY on the
 * broker): the numbers measured on bench/bsrv pub and bcli pubsub over 2 s */
static void client_nagle_cases(void)
{
	struct doc_exchanges x = {.segs_in = 94, .segs_out = 94, .acks_out = 91, .bytes_in = 940,
	                          .bytes_out = 940, .ato_us = 40000, .seconds = 2};
	if (!doc_client_nagle_stall(&x))
		CASE_FAIL("94 segments each way, 91 ACKs alone over 2 s, ato 40 ms: the stall");
	struct doc_exchanges y = x;
	y.ato_us = 8000;
	if (doc_client_nagle_stall(&y))
		CASE_FAIL("--delack-max 5ms: ato 8 ms, no stall");
	y = x, y.segs_in = y.segs_out = 17000, y.acks_out = 16000;
	if (doc_client_nagle_stall(&y))
		CASE_FAIL("quick-ack: 8000 ACKs a second, no stall");
	y = x, y.acks_out = 2;
	if (doc_client_nagle_stall(&y))
		CASE_FAIL("the server's data carries its ACKs: no stall");
	y = x, y.segs_in = 188;
	if (doc_client_nagle_stall(&y))
		CASE_FAIL("twice as many in as out: the two-write rule's, not this one");
	y = x, y.segs_out = 188;
	if (doc_client_nagle_stall(&y))
		CASE_FAIL("twice as many out as in: the server's Nagle, not this one");
	y = x, y.bytes_in = 94 * 4000;
	if (doc_client_nagle_stall(&y))
		CASE_FAIL("4000-byte segments in: not small, no stall");
	y = x, y.acks_out = 15;
	if (doc_client_nagle_stall(&y))
		CASE_FAIL("7.5 ACKs a second: slower than one delayed ACK each, no stall");
	y = x, y.seconds = 0;
	if (doc_client_nagle_stall(&y))
		CASE_FAIL("seen once: no interval, no stall");

	reset();
	owned();
	d.delack_max_us = 1;
	struct doc_conn *c = client_nagle_conn();
	c->pid = 5001;
	const char *sure = "";
	if (!has("delayed-ack-client-nagle", &sure) || strcmp(sure, "medium") != 0 ||
	    has("delayed-ack-two-write", NULL) || has("nagle-delayed-ack", NULL))
		CASE_FAIL("the connection's window: delayed-ack-client-nagle alone (medium: %s)", sure);
	if (!fixed_by("delayed-ack-client-nagle", "socktune attach --delack-max 5ms --connections "
	              "--ports 8000 4242") ||
	    !fixed_by("delayed-ack-client-nagle", "cd /srv && socktune --quickack --ports 8000 -- "
	              "./srv -p 8000"))
		CASE_FAIL("--delack-max on the service (its pid reaches the connection's holder), "
		          "quick-ack at the next start "
		          "(%s)", fixes_of("delayed-ack-client-nagle"));
	c->max_ato = 8000;
	if (has("delayed-ack-client-nagle", NULL))
		CASE_FAIL("ato 8 ms after --delack-max: no finding");
	end_group("findings_client_nagle");
}

/* A prefork server: the master (4242) holds the listener, the workers its connections */
static void service_cases(void)
{
	reset();
	owned();
	d.l[0].nowners = 3;
	d.l[0].owners[1].pid = 5001, d.l[0].owners[2].pid = 5002;
	for (int k = 0; k < 3; k++) {
		struct doc_conn *c = conn(); /* 50 requests, 100 response segments, rtt 20 ms */
		c->last.ti.data_segs_in = 50, c->last.ti.data_segs_out = 100, c->max_rtt = 20300;
		c->nodelay = 0;
		c->pid = k == 2 ? 5001 : 5002;
	}
	const struct doc_finding *f = find("nagle-delayed-ack");
	if (!f || f->pid != 4242 ||
	    !fixed_by("nagle-delayed-ack", "socktune attach --nodelay --connections --ports 8000 "
	              "4242"))
		CASE_FAIL("the master's pid alone: attach's PID is the service, its workers' "
		          "connections included (%s)",
		          fixes_of("nagle-delayed-ack"));
	if (!strstr(evidence_of("nagle-delayed-ack"), "\"listener_pids\": [4242, 5001, 5002]") ||
	    !strstr(evidence_of("nagle-delayed-ack"), "\"connection_pids\": [5002, 5001]"))
		CASE_FAIL("the evidence names who holds the listener and who the connections (%s)",
		          evidence_of("nagle-delayed-ack"));
	/* the next start unknown (a title over argv): no command, the note says why */
	d.l[0].start.known = 0;
	snprintf(d.l[0].start.why, sizeof d.l[0].start.why, "it rewrote its command line");
	f = find("nagle-delayed-ack");
	if (!f || strstr(fixes_of("nagle-delayed-ack"), " -- ") ||
	    !strstr(f->note, "it rewrote its command line"))
		CASE_FAIL("no start command known: none printed, the note says why (%s; %s)",
		          fixes_of("nagle-delayed-ack"), f ? f->note : "");
	/* another user's server: the command, and whose it is */
	d.l[0].start.known = 1, d.l[0].start.uid = (long)geteuid() + 1;
	f = find("nagle-delayed-ack");
	if (!f || !strstr(f->note, "runs as uid"))
		CASE_FAIL("another user's: the note says whose (%s)", f ? f->note : "");
	d.l[0].start.uid = (long)geteuid();
	/* static or Go: the preload cannot reach it, the wrapper's attach mode can */
	d.l[0].start.known = 1, d.l[0].start.reach = P_GO;
	if (!fixed_by("nagle-delayed-ack", "cd /srv && socktune --attach --nodelay --ports 8000 -- "
	              "./srv -p 8000"))
		CASE_FAIL("a Go program: --attach at the next start (%s)", fixes_of("nagle-delayed-ack"));
	if (!fixed_by("nagle-delayed-ack", "socktune attach --cgroup --nodelay 4242") ||
	    !fixed_by("nagle-delayed-ack", "cd /srv && socktune --cgroup --nodelay --ports 8000 -- "
	              "./srv -p 8000"))
		CASE_FAIL("a Go program: the cgroup mode, now and at the next start (%s)",
		          fixes_of("nagle-delayed-ack"));
	d.l[0].start.reach = 0;
	if (strstr(fixes_of("nagle-delayed-ack"), "--cgroup"))
		CASE_FAIL("a program the preload reaches: no cgroup mode offered (%s)",
		          fixes_of("nagle-delayed-ack"));
	d.l[0].start.reach = P_STATIC;
	if (strstr(fixes_of("accept-queue-overflow"), "--cgroup"))
		CASE_FAIL("--backlog, which no sock_ops program sets: no cgroup mode (%s)",
		          fixes_of("accept-queue-overflow"));
	/* no process visible: no pid in any fix, the note says why */
	d.l[0].nowners = 0, d.l[0].service = -1;
	f = find("nagle-delayed-ack");
	if (!f || f->nfix != 0 || !strstr(f->note, "no process holding the listener was found"))
		CASE_FAIL("no holder seen: no fix, a note (%s; %s)", fixes_of("nagle-delayed-ack"),
		          f ? f->note : "");
	end_group("findings_service");
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
	c->last.ti.busy_time = 164000, c->last.ti.rwnd_limited = 120000;
	if (has("receive-window-limited", NULL))
		CASE_FAIL("120 ms of a 164 ms transfer waiting (a reader off the CPU): no finding");
	c->last.ti.busy_time = 2000000;
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
	if (!strstr(ev, "\"TCPRcvQDrop\": 1,") || !strstr(ev, "\"PruneCalled\": null") ||
	    !strstr(ev, "\"rcvbuf\": {\"effective\": 8388608}"))
		CASE_FAIL("one drop, PruneCalled unreadable: buffer-clamped with PruneCalled null "
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

/* doctor's status: 1 for a warning or a critical finding, 0 for information alone (a few
 * retransmits with no timeout: before, any finding made it 1, which an alert took for a
 * fault) or for none */
static void status_cases(void)
{
	reset();
	owned();
	d.rto_min_us = 1;
	struct doc_conn *c = conn();
	c->last.info_len = sizeof c->last.ti;
	c->last.ti.total_retrans = 5, c->last.ti.segs_out = 200, c->last.ti.bytes_retrans = 500;
	doc_judge_all(&d, DOC_IN_DOCTOR, &found);
	int info_only = found.n > 0;
	for (int k = 0; k < found.n; k++)
		info_only &= found.f[k].severity == SEV_INFO;
	if (!info_only || doctor_status(&found) != 0)
		CASE_FAIL("retransmits without a timeout, information only (%d findings, the first %s): "
		          "status %d, want 0", found.n, found.n ? found.f[0].kind : "none",
		          doctor_status(&found));
	c->last.ti.total_rto = 1, c->last.ti.rto = 204000;
	doc_judge_all(&d, DOC_IN_DOCTOR, &found);
	if (doctor_status(&found) != 1)
		CASE_FAIL("a retransmit timeout (a warning): status %d, want 1", doctor_status(&found));
	reset();
	doc_judge_all(&d, DOC_IN_DOCTOR, &found);
	if (found.n != 0 || doctor_status(&found) != 0)
		CASE_FAIL("a quiet listener: %d findings, status %d, want none and 0", found.n,
		          doctor_status(&found));
	static struct doc_findings fs;
	memset(&fs, 0, sizeof fs);
	fs.n = 2, fs.f[0].severity = SEV_INFO, fs.f[1].severity = SEV_CRITICAL;
	if (doctor_status(&fs) != 1)
		CASE_FAIL("information and a critical finding: status %d, want 1", doctor_status(&fs));
	fs.n = 1, fs.dropped = 3;
	if (doctor_status(&fs) != 1)
		CASE_FAIL("findings past the cap (their severity unknown): status %d, want 1",
		          doctor_status(&fs));
	end_group("findings_status");
}

int main(void)
{
	nagle_cases();
	two_write_cases();
	overflow_cases();
	earlier_overflow_cases();
	backlog_clamped_cases();
	retransmit_cases();
	client_nagle_cases();
	service_cases();
	healthy_cases();
	status_cases();
	return failures != 0;
}
