/* What socktune doctor prints: the listeners, their connections worst first, the findings;
 * as text, or as one JSON object (socktune(1) documents its keys). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "socktune_json.h"
#include "doctor/doctor.h"

#define TEXT_WORST 10 /* connections listed in the text report */
#define JSON_WORST 50 /* ... and in JSON */

static double score(const struct doc_conn *c)
{
	double s = (double)c->max_rtt + (double)c->last.ti.rcv_rtt + 1e5 * DOC_DELTA(c, total_retrans);
	double rw = doc_share(DOC_DELTA(c, rwnd_limited), DOC_DELTA(c, busy_time));
	double sb = doc_share(DOC_DELTA(c, sndbuf_limited), DOC_DELTA(c, busy_time));
	return s + 1e3 * ((rw > 0 ? rw : 0) + (sb > 0 ? sb : 0));
}

static const struct shared_window *sorting;
static int by_score(const void *a, const void *b)
{
	double x = score(&sorting->c[*(const size_t *)a]), y = score(&sorting->c[*(const size_t *)b]);
	return x < y ? 1 : x > y ? -1 : 0;
}

size_t doctor_worst(const struct shared_window *d, int l, size_t *idx, size_t max)
{
	size_t n = 0, *all = malloc((d->nc ? d->nc : 1) * sizeof *all);
	if (!all)
		return 0;
	for (size_t k = 0; k < d->nc; k++)
		if (l < 0 || d->c[k].listener == l)
			all[n++] = k;
	sorting = d;
	qsort(all, n, sizeof *all, by_score);
	if (n > max)
		n = max;
	memcpy(idx, all, n * sizeof *idx);
	free(all);
	return n;
}

static const char *nodelay_text(int v)
{
	return v == 1 ? "1" : v == 0 ? "0" : v == -1 ? "not looked at" : "unknown";
}

static const char *state_name(unsigned s)
{
	static const char *const names[] = {"?", "established", "syn-sent", "syn-recv",
	                                    "fin-wait-1", "fin-wait-2", "time-wait", "closed",
	                                    "close-wait", "last-ack", "listen", "closing"};
	return s < sizeof names / sizeof *names ? names[s] : "?";
}

/* ---- text ---- */

/* s for a terminal: a process's name, command line and directory are anyone's to choose, and
 * an escape sequence in them would drive the operator's screen: every control character
 * (C0, DEL, C1) and every byte that is not UTF-8 becomes '?' */
static const char *clean(const char *s, char *buf, size_t n)
{
	size_t o = 0;
	for (const unsigned char *u = (const unsigned char *)s; *u && o + 5 < n;) {
		int len = doc_printable_len(u);
		if (!len) { /* (one '?' for a whole C1 character) */
			int skip = *u >= 0x80 ? st_utf8_len(u) : 1;
			buf[o++] = '?';
			u += skip ? skip : 1;
			continue;
		}
		memcpy(buf + o, u, (size_t)len);
		o += (size_t)len;
		u += len;
	}
	buf[o] = '\0';
	return buf;
}
#define CLEAN(s) clean((s), shown, sizeof shown)

/* A listener's drops over the window: known only when counted at its end too (a listener
 * that closed meanwhile dropped what it did after its last sample unseen) */
static void drops_text(const struct doc_listener *l, char *out, size_t n)
{
	if (doc_drops_known(l))
		snprintf(out, n, "%u", l->drops_last - l->drops_first);
	else if (l->mem_samples >= 2)
		snprintf(out, n, "unknown (%u while it was seen)", l->drops_last - l->drops_first);
	else
		snprintf(out, n, "unknown");
}

/* A share of busy time in fmt, or none with no busy time to share: text "-", JSON null */
static const char *pct(uint64_t part, uint64_t busy, const char *fmt, const char *none,
                       char *buf, size_t n)
{
	double v = doc_share(part, busy);
	if (v < 0)
		snprintf(buf, n, "%s", none);
	else
		snprintf(buf, n, fmt, v);
	return buf;
}

/* A finding's evidence as the text report shows it: its record in logfmt (the same keys) */
static const char *evidence_text(const struct doc_finding *x, char *buf, size_t n)
{
	FILE *m = fmemopen(buf, n, "w");
	buf[0] = '\0';
	if (m) {
		rec_write_logfmt(m, x->evidence);
		fclose(m); /* (cut at n - 1 bytes, NUL-terminated) */
	}
	return buf;
}

void doctor_print_text(FILE *f, const struct shared_window *d, const struct doc_findings *fs)
{
	static char shown[8192];
	if (d->interrupted)
		fprintf(f, "socktune doctor: INTERRUPTED: the window is %.1f s of %.1f\n",
		        d->elapsed_s, d->seconds);
	if (d->dump_errors)
		fprintf(f, "socktune doctor: %lld samples incomplete (%s)\n", d->dump_errors,
		        d->dump_error);
	fprintf(f, "socktune doctor: %.1f s watched; %lld listener samples (%.2f ms each), %lld "
	        "connection samples (%.2f ms each, up to %lld connections)\n", d->elapsed_s,
	        d->listener_samples, d->listener_sample_us / 1000, d->conn_samples,
	        d->conn_sample_us / 1000, d->max_conns_in_sample);
	for (int k = 0; k < d->nns; k++) {
		const struct doc_ns *ns = &d->ns[k];
		fprintf(f, "\nnetwork namespace %llu%s: somaxconn %lld, rmem_max %lld, wmem_max %lld\n",
		        ns->ino, ns->ours ? " (this one)" : "", ns->somaxconn, ns->rmem_max,
		        ns->wmem_max);
		if (ns->nl < 0)
			fprintf(f, "  not looked at: %s\n", ns->error);
		if (ns->closes < 0)
			fprintf(f, "  connections closed: not seen (destroy notifications: %s)\n",
			        strerror(-ns->closes));
		else if (ns->close_overruns)
			fprintf(f, "  connections closed: the kernel dropped notifications %llu times (a "
			        "full buffer): those are not counted\n", ns->close_overruns);
		fprintf(f, "  counters over the window:");
		for (int c = 0; c < C_COUNT; c++) {
			long long v = doc_ns_delta(ns, c);
			if (v < 0)
				fprintf(f, " %s unreadable", doc_counter_names[c]);
			else
				fprintf(f, " %s +%lld", doc_counter_names[c], v);
		}
		fprintf(f, "\n");
	}
	fprintf(f, "\nlisteners: %d", d->nl);
	if (d->listeners_dropped)
		fprintf(f, " (and %d more not followed: at most %d)", d->listeners_dropped,
		        DOC_MAX_LISTENERS);
	fprintf(f, "\n");
	for (int k = 0; k < d->nl; k++) {
		const struct doc_listener *l = &d->l[k];
		char addr[64];
		diag_addr(l->family, l->addr, l->port, addr, sizeof addr);
		fprintf(f, "  %s", addr);
		for (int o = 0; o < l->nowners; o++)
			fprintf(f, "%s%d (%s)", o ? ", " : " pid ", l->owners[o].pid,
			        CLEAN(l->owners[o].comm));
		if (l->owners_more)
			fprintf(f, " and %d more processes", l->owners_more);
		if (!l->nowners)
			fprintf(f, " (holder not found: another pid namespace, or not visible to this user)");
		if (!l->seen_last)
			fprintf(f, " (closed during the window)");
		char dropped[48];
		drops_text(l, dropped, sizeof dropped);
		fprintf(f, "\n    backlog %u, accept queue now %u, peak %u, dropped %s; rcvbuf %u, sndbuf %u; "
		        "nodelay %s; %lld connections seen\n", l->backlog, l->queue_now, l->queue_peak,
		        dropped, l->rb, l->tb, nodelay_text(l->nodelay), l->conns);
		if (l->nodelay < -1)
			fprintf(f, "    (nodelay: %s)\n", CLEAN(l->nodelay_why));
		if (l->closed)
			fprintf(f, "    %llu connections closed: %llu far (min_rtt %d ms or more), %llu "
			        "near\n", l->closed->n, l->closed->far, DOC_FAR_RTT_US / 1000,
			        l->closed->near);
	}
	doc_cgroups_text(f, d);
	size_t idx[TEXT_WORST], n = doctor_worst(d, -1, idx, TEXT_WORST);
	fprintf(f, "\nconnections: %zu seen", d->nc);
	if (d->conns_dropped)
		fprintf(f, " (%d more not followed: at most %zu)", d->conns_dropped, d->nc);
	fprintf(f, "%s\n", n ? ", worst first:" : "");
	for (size_t k = 0; k < n; k++) {
		const struct doc_conn *c = &d->c[idx[k]];
		const struct diag_tcp_info *t = &c->last.ti;
		char local[64], peer[64];
		diag_addr(c->last.family, c->last.src, c->last.sport, local, sizeof local);
		diag_addr(c->last.family, c->last.dst, c->last.dport, peer, sizeof peer);
		char rw[16], sb[16];
		fprintf(f, "  %s <- %s %s: rtt %.2f ms (max %.2f, min %.2f), ato %.1f ms, retrans %u, "
		        "rwnd-limited %s, sndbuf-limited %s, unsent %u bytes, rcvbuf %u, sndbuf %u, "
		        "nodelay %s\n",
		        local, peer, state_name(c->last.state), t->rtt / 1000.0, c->max_rtt / 1000.0,
		        t->min_rtt == UINT32_MAX ? 0 : t->min_rtt / 1000.0, c->max_ato / 1000.0,
		        DOC_DELTA(c, total_retrans),
		        pct(DOC_DELTA(c, rwnd_limited), DOC_DELTA(c, busy_time), "%.0f%%", "-", rw,
		            sizeof rw),
		        pct(DOC_DELTA(c, sndbuf_limited), DOC_DELTA(c, busy_time), "%.0f%%", "-", sb,
		            sizeof sb),
		        t->notsent_bytes, c->last.mem[MEM_RCVBUF], c->last.mem[MEM_SNDBUF],
		        nodelay_text(c->nodelay));
	}
	if (!fs->n) {
		fprintf(f, "\nno findings: nothing seen in the window that a setting would cure\n");
		return;
	}
	fprintf(f, "\nfindings: %d", fs->n);
	if (fs->dropped)
		fprintf(f, " (and %d more not shown)", fs->dropped);
	fprintf(f, "\n");
	for (int k = 0; k < fs->n; k++) {
		const struct doc_finding *x = &fs->f[k];
		fprintf(f, "  [%s] %s (certainty %s)", doc_severity_name(x->severity), x->kind,
		        x->certainty);
		if (x->pid)
			fprintf(f, " pid %d", x->pid);
		if (x->port)
			fprintf(f, " port %u", x->port);
		fprintf(f, "\n    %s\n", CLEAN(x->summary));
		char ev[2048];
		fprintf(f, "    evidence: %s\n", CLEAN(evidence_text(x, ev, sizeof ev)));
		for (int j = 0; j < x->nfix; j++)
			fprintf(f, "    %s %s\n", j ? "   " : "fix:", CLEAN(x->fix[j]));
		if (x->note[0])
			fprintf(f, "    note: %s\n", CLEAN(x->note));
	}
}

/* ---- JSON: one record (record.h), written by rec_write_json ---- */

/* A TCP_NODELAY as doctor has it (1, 0; below 0 unknown): the option's key, a boolean or null */
static void nodelay_rec(struct rec *r, int v)
{
	if (v < 0)
		rec_null(r, K_OPTION + ST_V_NODELAY);
	else
		rec_bool(r, K_OPTION + ST_V_NODELAY, v);
}

/* A buffer's size as the kernel reports it (sk_rcvbuf, sk_sndbuf: what getsockopt gives) */
static void buffer_rec(struct rec *r, int opt, int known, uint32_t v)
{
	struct rec *g = rec_group(r, K_OPTION + opt);
	if (known)
		rec_int(g, K_EFFECTIVE, v);
	else
		rec_null(g, K_EFFECTIVE);
}

static void counters_rec(struct rec *r, const struct doc_ns *ns)
{
	struct rec *o = rec_obj(r, K_COUNTERS);
	for (int c = 0; c < C_COUNT; c++)
		rec_known(o, DOC_COUNTER_KEY(c), doc_ns_delta(ns, c));
}

static void listener_rec(struct rec *r, const struct shared_window *d, const struct doc_listener *l)
{
	const struct doc_ns *ns = &d->ns[l->ns];
	char addr[64];
	diag_addr(l->family, l->addr, l->port, addr, sizeof addr);
	if (l->service >= 0)
		rec_int(r, K_PID, l->owners[l->service].pid);
	else
		rec_null(r, K_PID);
	struct rec *owners = rec_arr(r, K_OWNERS);
	for (int o = 0; o < l->nowners; o++) {
		struct rec *w = rec_obj(owners, 0);
		rec_int(w, K_PID, l->owners[o].pid);
		rec_int(w, K_FD, l->owners[o].fd);
		rec_str(w, K_COMM, l->owners[o].comm);
	}
	rec_int(r, K_OWNERS_NOT_SHOWN, l->owners_more);
	rec_str(r, K_ADDR, addr);
	rec_int(r, K_PORT, l->port);
	rec_int(r, K_FAMILY, l->family == AF_INET6 ? 6 : 4);
	doc_backlog(r, l);
	rec_int(r, K_SOMAXCONN, ns->somaxconn);
	rec_int(r, K_QUEUE_NOW, l->queue_now);
	rec_int(r, K_QUEUE_PEAK, l->queue_peak);
	rec_int(r, K_QUEUED_SAMPLES, l->queued_samples);
	if (doc_drops_known(l))
		rec_int(r, K_DROPPED, (long long)l->drops_last - l->drops_first);
	else
		rec_null(r, K_DROPPED);
	if (!doc_drops_known(l) && l->mem_samples >= 2)
		rec_int(r, K_DROPPED_WHILE_SEEN, (long long)l->drops_last - l->drops_first);
	buffer_rec(r, ST_V_RCVBUF, l->mem_samples > 0, l->rb);
	buffer_rec(r, ST_V_SNDBUF, l->mem_samples > 0, l->tb);
	nodelay_rec(r, l->nodelay);
	if (l->nodelay < -1)
		rec_str(r, K_NODELAY_WHY, l->nodelay_why);
	rec_bool(r, K_CLOSED, !l->seen_last);
	rec_int(r, K_CONNECTIONS_SEEN, l->conns);
	if (l->closed) {
		rec_int(r, K_CONNECTIONS_CLOSED, (long long)l->closed->n);
		rec_int(r, K_FAR_CONNECTIONS, (long long)l->closed->far);
		rec_int(r, K_NEAR_CONNECTIONS, (long long)l->closed->near);
	} else {
		rec_null(r, K_CONNECTIONS_CLOSED);
	}
	rec_int(r, K_NETNS, (long long)ns->ino);
	counters_rec(r, ns);
}

/* A share of busy time in percent, null with no busy time */
static void pct_rec(struct rec *r, int k, uint64_t part, uint64_t busy)
{
	double v = doc_share(part, busy);
	if (v < 0)
		rec_null(r, k);
	else
		rec_num(r, k, v, 1);
}

static void conn_rec(struct rec *r, const struct shared_window *d, const struct doc_conn *c)
{
	const struct diag_tcp_info *t = &c->last.ti;
	char local[64], peer[64];
	diag_addr(c->last.family, c->last.src, c->last.sport, local, sizeof local);
	diag_addr(c->last.family, c->last.dst, c->last.dport, peer, sizeof peer);
	rec_int(r, K_PORT, d->l[c->listener].port);
	rec_str(r, K_ADDR, local);
	rec_str(r, K_PEER, peer);
	rec_str(r, K_STATE, state_name(c->last.state));
	rec_known(r, K_PID, c->pid);
	if (c->pid >= 0)
		rec_int(r, K_FD, c->fd);
	else
		rec_null(r, K_FD);
	rec_int(r, K_SAMPLES, c->samples);
	rec_num(r, K_RTT_MS, t->rtt / 1000.0, 3);
	rec_num(r, K_MAX_RTT_MS, c->max_rtt / 1000.0, 3);
	if (t->min_rtt != UINT32_MAX)
		rec_num(r, K_MIN_RTT_MS, t->min_rtt / 1000.0, 3);
	else
		rec_null(r, K_MIN_RTT_MS);
	rec_num(r, K_ATO_MS, c->max_ato / 1000.0, 1);
	rec_num(r, K_RCV_RTT_MS, t->rcv_rtt / 1000.0, 3);
	rec_int(r, K_RETRANS, DOC_DELTA(c, total_retrans));
	rec_num(r, K_BUSY_MS, DOC_DELTA(c, busy_time) / 1000.0, 1);
	pct_rec(r, K_RWND_LIMITED_PCT, DOC_DELTA(c, rwnd_limited), DOC_DELTA(c, busy_time));
	pct_rec(r, K_SNDBUF_LIMITED_PCT, DOC_DELTA(c, sndbuf_limited), DOC_DELTA(c, busy_time));
	rec_int(r, K_DELIVERY_RATE, (long long)t->delivery_rate); /* (bytes a second) */
	rec_int(r, K_UNSENT_BYTES, t->notsent_bytes);
	rec_int(r, K_SEGS_IN, DOC_DELTA(c, data_segs_in));
	rec_int(r, K_SEGS_OUT, DOC_DELTA(c, data_segs_out));
	buffer_rec(r, ST_V_RCVBUF, c->last.has_mem, c->last.mem[MEM_RCVBUF]);
	buffer_rec(r, ST_V_SNDBUF, c->last.has_mem, c->last.mem[MEM_SNDBUF]);
	nodelay_rec(r, c->nodelay);
}

static void report_rec(struct rec *root, const struct shared_window *d,
                       const struct doc_findings *fs)
{
	rec_int(root, K_SCHEMA, REC_SCHEMA_VERSION);
	rec_str(root, K_COMMAND, "doctor");
	rec_str(root, K_VERSION, ST_VERSION);
	rec_num(root, K_WINDOW_S, d->elapsed_s, 3);
	struct rec *s = rec_obj(root, K_SAMPLING);
	rec_int(s, K_LISTENER_SAMPLES, d->listener_samples);
	rec_num(s, K_LISTENER_SAMPLE_US, d->listener_sample_us, 1);
	rec_int(s, K_CONNECTION_SAMPLES, d->conn_samples);
	rec_num(s, K_CONNECTION_SAMPLE_US, d->conn_sample_us, 1);
	rec_int(s, K_MAX_CONNECTIONS_IN_SAMPLE, d->max_conns_in_sample);
	rec_num(s, K_CPU_MS, d->cpu_ms, 1);
	rec_int(s, K_INCOMPLETE_SAMPLES, d->dump_errors);
	rec_int(s, K_DUMPS_CUT_SHORT, diag_interrupted);
	rec_bool(s, K_INTERRUPTED, d->interrupted);
	struct rec *nss = rec_arr(root, K_NAMESPACES);
	for (int k = 0; k < d->nns; k++) {
		const struct doc_ns *ns = &d->ns[k];
		struct rec *o = rec_obj(nss, 0);
		rec_int(o, K_NETNS, (long long)ns->ino);
		rec_bool(o, K_OURS, ns->ours);
		rec_known(o, K_SOMAXCONN, ns->somaxconn);
		rec_known(o, K_RMEM_MAX_BYTES, ns->rmem_max);
		rec_known(o, K_WMEM_MAX_BYTES, ns->wmem_max);
		rec_str(o, K_ERROR, ns->nl < 0 ? ns->error : NULL);
		if (ns->closes == 1)
			rec_int(o, K_CLOSE_OVERRUNS, (long long)ns->close_overruns);
		else
			rec_null(o, K_CLOSE_OVERRUNS);
		rec_str(o, K_OPTION + ST_V_CONGESTION, ns->cong[0] ? ns->cong : NULL);
		counters_rec(o, ns);
	}
	rec_int(root, K_LISTENERS_NOT_FOLLOWED, d->listeners_dropped);
	struct rec *ls = rec_arr(root, K_LISTENERS);
	for (int k = 0; k < d->nl; k++)
		listener_rec(rec_obj(ls, 0), d, &d->l[k]);
	doc_cgroups_rec(root, d);
	size_t idx[JSON_WORST], n = doctor_worst(d, -1, idx, JSON_WORST);
	struct rec *cs = rec_obj(root, K_CONNECTIONS);
	rec_int(cs, K_CONN_COUNT, (long long)d->nc);
	rec_int(cs, K_NOT_FOLLOWED, d->conns_dropped);
	struct rec *worst = rec_arr(cs, K_WORST);
	for (size_t k = 0; k < n; k++)
		conn_rec(rec_obj(worst, 0), d, &d->c[idx[k]]);
	rec_int(root, K_FINDINGS_NOT_SHOWN, fs->dropped);
	struct rec *fa = rec_arr(root, K_FINDINGS);
	for (int k = 0; k < fs->n; k++) {
		const struct doc_finding *x = &fs->f[k];
		struct rec *o = rec_obj(fa, 0);
		rec_str(o, K_KIND, x->kind);
		rec_str(o, K_SEVERITY, doc_severity_name(x->severity));
		rec_str(o, K_CERTAINTY, x->certainty);
		if (x->pid > 0)
			rec_int(o, K_PID, x->pid);
		else
			rec_null(o, K_PID);
		if (x->port)
			rec_int(o, K_PORT, x->port);
		else
			rec_null(o, K_PORT);
		rec_str(o, K_SUMMARY, x->summary);
		rec_copy(o, K_EVIDENCE, x->evidence);
		struct rec *fix = rec_arr(o, K_FIX);
		for (int j = 0; j < x->nfix; j++)
			rec_str(fix, 0, x->fix[j]);
		rec_str(o, K_NOTE, x->note[0] ? x->note : NULL);
	}
}

void doctor_print_json(FILE *f, const struct shared_window *d, const struct doc_findings *fs)
{
	struct rec *root = rec_new();
	report_rec(root, d, fs);
	rec_write_json(f, root);
	rec_free(root);
}

int doctor_fail(const struct shared_window *d, int status, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "socktune: %s\n", msg);
	if (d->json)
		rec_error_json(stdout, "doctor", msg, status);
	return status;
}
