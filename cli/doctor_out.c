/* What socktune doctor prints: the listeners, their connections worst first, the findings;
 * as text, or as one JSON object (socktune(1) documents its keys). */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "socktune_json.h"
#include "doctor.h"

#define TEXT_WORST 10 /* connections listed in the text report */
#define JSON_WORST 50 /* ... and in JSON */

static double score(const struct doc_conn *c)
{
	double s = (double)c->max_rtt + (double)c->last.ti.rcv_rtt + 1e5 * DOC_DELTA(c, total_retrans);
	double rw = doc_share(DOC_DELTA(c, rwnd_limited), DOC_DELTA(c, busy_time));
	double sb = doc_share(DOC_DELTA(c, sndbuf_limited), DOC_DELTA(c, busy_time));
	return s + 1e3 * ((rw > 0 ? rw : 0) + (sb > 0 ? sb : 0));
}

static const struct doctor *sorting;
static int by_score(const void *a, const void *b)
{
	double x = score(&sorting->c[*(const size_t *)a]), y = score(&sorting->c[*(const size_t *)b]);
	return x < y ? 1 : x > y ? -1 : 0;
}

size_t doctor_worst(const struct doctor *d, int l, size_t *idx, size_t max)
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

void doctor_print_text(FILE *f, const struct doctor *d, const struct doc_findings *fs)
{
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
			fprintf(f, "%s%d (%s)", o ? ", " : " pid ", l->owners[o].pid, l->owners[o].comm);
		if (!l->nowners)
			fprintf(f, " (holder not found: another pid namespace, or not visible to this user)");
		if (!l->seen_last)
			fprintf(f, " (closed during the window)");
		fprintf(f, "\n    backlog %u, accept queue now %u, peak %u, dropped %u; rb %u, tb %u; "
		        "nodelay %s; %lld connections seen\n", l->backlog, l->queue_now, l->queue_peak,
		        l->drops_last - l->drops_first, l->rb, l->tb, nodelay_text(l->nodelay), l->conns);
		if (l->nodelay < -1)
			fprintf(f, "    (nodelay: %s)\n", l->nodelay_why);
	}
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
		        "rwnd-limited %s, sndbuf-limited %s, unsent %u, rb %u, tb %u, nodelay %s\n",
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
		fprintf(f, "\n    %s\n    evidence: %s\n", x->summary, x->evidence);
		for (int j = 0; j < x->nfix; j++)
			fprintf(f, "    %s %s\n", j ? "   " : "fix:", x->fix[j]);
	}
}

/* ---- JSON ---- */

/* s is a number as JSON writes one: -?(0|[1-9][0-9]*)(.[0-9]+)?, no exponent here (not inf,
 * nan, hex or ".5", which strtod would take) */
static int json_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return 0;
	if (*s == '.') {
		if (!(*++s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

/* An evidence string, key=value pairs, as a JSON object: numbers as numbers. */
static void evidence_json(FILE *f, const char *ev)
{
	char buf[sizeof((struct doc_finding *)0)->evidence];
	snprintf(buf, sizeof buf, "%s", ev);
	fprintf(f, "{");
	int first = 1;
	for (char *p = buf; *p;) {
		while (*p == ' ')
			p++;
		char *eq = strchr(p, '=');
		if (!*p || !eq)
			break;
		*eq = '\0';
		char *v = eq + 1, *end;
		if (*v == '"') {
			end = strchr(++v, '"');
			if (!end)
				end = v + strlen(v);
		} else {
			end = v + strcspn(v, " ");
		}
		char keep = *end;
		*end = '\0';
		fprintf(f, "%s", first ? "" : ", ");
		st_json_str(f, p);
		fprintf(f, ": ");
		const char *num = *v == '+' ? v + 1 : v; /* a delta: +N */
		if (json_number(num))
			fprintf(f, "%s", num);
		else
			st_json_str(f, v);
		first = 0;
		p = end + (keep ? 1 : 0);
		if (keep == '"' && *p == ' ')
			p++;
	}
	fprintf(f, "}");
}

static void nodelay_json(FILE *f, int v)
{
	fprintf(f, "%s", v == 1 ? "true" : v == 0 ? "false" : "null");
}

static void counters_json(FILE *f, const struct doc_ns *ns)
{
	fprintf(f, "{");
	for (int c = 0; c < C_COUNT; c++) {
		long long v = doc_ns_delta(ns, c);
		fprintf(f, "%s\"%s\": ", c ? ", " : "", doc_counter_names[c]);
		if (v < 0)
			fprintf(f, "null");
		else
			fprintf(f, "%lld", v);
	}
	fprintf(f, "}");
}

static void listener_json(FILE *f, const struct doctor *d, const struct doc_listener *l)
{
	const struct doc_ns *ns = &d->ns[l->ns];
	char addr[64];
	diag_addr(l->family, l->addr, l->port, addr, sizeof addr);
	fprintf(f, "{\"pid\": %d, \"owners\": [", l->nowners ? l->owners[0].pid : 0);
	for (int o = 0; o < l->nowners; o++) {
		fprintf(f, "%s{\"pid\": %d, \"fd\": %d, \"comm\": ", o ? ", " : "", l->owners[o].pid,
		        l->owners[o].fd);
		st_json_str(f, l->owners[o].comm);
		fprintf(f, "}");
	}
	fprintf(f, "], \"address\": ");
	st_json_str(f, addr);
	fprintf(f, ", \"port\": %u, \"backlog\": %u, \"asked\": null, \"somaxconn\": %lld, "
	        "\"queue_now\": %u, \"queue_peak\": %u, \"dropped\": %u, \"rb\": %u, \"tb\": %u, "
	        "\"nodelay\": ", l->port, l->backlog, ns->somaxconn, l->queue_now, l->queue_peak,
	        l->drops_last - l->drops_first, l->rb, l->tb);
	nodelay_json(f, l->nodelay);
	if (l->nodelay < -1) {
		fprintf(f, ", \"nodelay_why\": ");
		st_json_str(f, l->nodelay_why);
	}
	fprintf(f, ", \"closed\": %s, \"connections\": %lld, \"netns\": %llu, \"counters\": ",
	        l->seen_last ? "false" : "true", l->conns, ns->ino);
	counters_json(f, ns);
	fprintf(f, "}");
}

static void conn_json(FILE *f, const struct doctor *d, const struct doc_conn *c)
{
	char rw[16], sb[16];
	const struct diag_tcp_info *t = &c->last.ti;
	char local[64], peer[64];
	diag_addr(c->last.family, c->last.src, c->last.sport, local, sizeof local);
	diag_addr(c->last.family, c->last.dst, c->last.dport, peer, sizeof peer);
	fprintf(f, "{\"port\": %u, \"local\": ", d->l[c->listener].port);
	st_json_str(f, local);
	fprintf(f, ", \"peer\": ");
	st_json_str(f, peer);
	char pid[16] = "null", fd[16] = "null", minrtt[24] = "null";
	if (c->pid >= 0)
		snprintf(pid, sizeof pid, "%d", c->pid), snprintf(fd, sizeof fd, "%d", c->fd);
	if (t->min_rtt != UINT32_MAX)
		snprintf(minrtt, sizeof minrtt, "%.3f", t->min_rtt / 1000.0);
	fprintf(f, ", \"state\": \"%s\", \"pid\": %s, \"fd\": %s, \"samples\": %d, \"rtt_ms\": %.3f, "
	        "\"max_rtt_ms\": %.3f, \"min_rtt_ms\": %s, \"ato_ms\": %.1f, \"rcv_rtt_ms\": %.3f, "
	        "\"retrans\": %u, \"busy_ms\": %.1f, \"rwnd_limited_pct\": %s, "
	        "\"sndbuf_limited_pct\": %s, \"delivery_rate\": %llu, \"unsent\": %u, "
	        "\"segs_in\": %u, \"segs_out\": %u, \"rb\": %u, \"tb\": %u, \"nodelay\": ",
	        state_name(c->last.state), pid, fd, c->samples, t->rtt / 1000.0,
	        c->max_rtt / 1000.0, minrtt, c->max_ato / 1000.0, t->rcv_rtt / 1000.0,
	        DOC_DELTA(c, total_retrans), DOC_DELTA(c, busy_time) / 1000.0,
	        pct(DOC_DELTA(c, rwnd_limited), DOC_DELTA(c, busy_time), "%.1f", "null", rw, sizeof rw),
	        pct(DOC_DELTA(c, sndbuf_limited), DOC_DELTA(c, busy_time), "%.1f", "null", sb, sizeof sb),
	        (unsigned long long)t->delivery_rate, t->notsent_bytes, DOC_DELTA(c, data_segs_in),
	        DOC_DELTA(c, data_segs_out), c->last.mem[MEM_RCVBUF], c->last.mem[MEM_SNDBUF]);
	nodelay_json(f, c->nodelay);
	fprintf(f, "}");
}

void doctor_print_json(FILE *f, const struct doctor *d, const struct doc_findings *fs)
{
	fprintf(f, "{\"window_s\": %.3f, \"sampling\": {\"listener_samples\": %lld, "
	        "\"listener_sample_us\": %.1f, \"connection_samples\": %lld, "
	        "\"connection_sample_us\": %.1f, \"max_connections_in_sample\": %lld, "
	        "\"cpu_ms\": %.1f, \"incomplete_samples\": %lld, \"dumps_cut_short\": %ld, "
	        "\"interrupted\": %s},\n", d->elapsed_s, d->listener_samples, d->listener_sample_us,
	        d->conn_samples, d->conn_sample_us, d->max_conns_in_sample, d->cpu_ms, d->dump_errors,
	        diag_interrupted, d->interrupted ? "true" : "false");
	fprintf(f, " \"namespaces\": [");
	for (int k = 0; k < d->nns; k++) {
		const struct doc_ns *ns = &d->ns[k];
		fprintf(f, "%s{\"netns\": %llu, \"ours\": %s, \"somaxconn\": %lld, \"rmem_max\": %lld, "
		        "\"wmem_max\": %lld, \"error\": ", k ? ", " : "", ns->ino,
		        ns->ours ? "true" : "false", ns->somaxconn, ns->rmem_max, ns->wmem_max);
		if (ns->nl < 0)
			st_json_str(f, ns->error);
		else
			fprintf(f, "null");
		fprintf(f, ", \"counters\": ");
		counters_json(f, ns);
		fprintf(f, "}");
	}
	fprintf(f, "],\n \"listeners_not_followed\": %d, \"listeners\": [", d->listeners_dropped);
	for (int k = 0; k < d->nl; k++) {
		fprintf(f, "%s\n  ", k ? "," : "");
		listener_json(f, d, &d->l[k]);
	}
	size_t idx[JSON_WORST], n = doctor_worst(d, -1, idx, JSON_WORST);
	fprintf(f, "],\n \"connections\": {\"count\": %zu, \"not_followed\": %d, \"worst\": [",
	        d->nc, d->conns_dropped);
	for (size_t k = 0; k < n; k++) {
		fprintf(f, "%s\n  ", k ? "," : "");
		conn_json(f, d, &d->c[idx[k]]);
	}
	fprintf(f, "]},\n \"findings_not_shown\": %d, \"findings\": [", fs->dropped);
	for (int k = 0; k < fs->n; k++) {
		const struct doc_finding *x = &fs->f[k];
		fprintf(f, "%s\n  {\"kind\": \"%s\", \"severity\": \"%s\", \"certainty\": \"%s\", "
		        "\"pid\": %d, \"port\": %u, \"summary\": ", k ? "," : "", x->kind,
		        doc_severity_name(x->severity), x->certainty, x->pid, x->port);
		st_json_str(f, x->summary);
		fprintf(f, ", \"evidence\": ");
		evidence_json(f, x->evidence);
		fprintf(f, ", \"fix\": [");
		for (int j = 0; j < x->nfix; j++) {
			fprintf(f, "%s", j ? ", " : "");
			st_json_str(f, x->fix[j]);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
}
