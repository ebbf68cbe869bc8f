/* socktune check's output: the host, a line per configured value, the memory a full set of
 * connections may hold against net.ipv4.tcp_mem, and the routes of --route; as text or as
 * JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "socktune.h"
#include "socktune_kernel.h"
#include "socktune_json.h"
#include "cli.h"

/* JSON's "status" of each verdict, in the order of enum verdict_status. */
static const char *const status_names[] = {"ok", "note", "unchecked", "clamped",
                                           "fallback", "ignored", "failed"};
_Static_assert(sizeof status_names / sizeof status_names[0] == V_FAILED + 1,
               "a name for every verdict_status");

void memory_exposure(const struct host *h, const struct verdict *v, int n, struct memory *m)
{
	memset(m, 0, sizeof *m);
	m->rcv = host_num(h, "net.ipv4.tcp_rmem", 2);
	m->snd = host_num(h, "net.ipv4.tcp_wmem", 2);
	for (int i = 0; i < n; i++) {
		if (v[i].id == ST_V_RCVBUF)
			m->rcv = v[i].effective, m->rcv_set = 1;
		if (v[i].id == ST_V_SNDBUF)
			m->snd = v[i].effective, m->snd_set = 1;
	}
	m->nofile = h->nofile.rlim_cur == RLIM_INFINITY ? -1 : (long long)h->nofile.rlim_cur;
	m->tcp_mem_pages = host_num(h, "net.ipv4.tcp_mem", 2);
	m->page = h->page;
}

static void json_sysctl(size_t i, const char *val)
{
	if (!*val) {
		fputs("null", stdout);
		return;
	}
	if (host_sysctls[i].words == 0) {
		char *end;
		long long num = strtoll(val, &end, 10);
		if (*end == '\0' && end != val)
			printf("%lld", num);
		else
			st_json_str(stdout, val);
		return;
	}
	/* lists: numbers or names, each word an element */
	putchar('[');
	const char *s = val;
	for (int k = 0; *s && k < 64; k++) {
		s += strspn(s, " ");
		size_t len = strcspn(s, " ");
		if (!len)
			break;
		char word[128];
		snprintf(word, sizeof word, "%.*s", (int)len, s);
		if (k)
			putchar(',');
		if (host_sysctls[i].words > 0)
			fputs(word, stdout);
		else
			st_json_str(stdout, word);
		s += len;
	}
	putchar(']');
}

static const char *json_bool(int v)
{
	return v < 0 ? "null" : v ? "true" : "false";
}

static void json_str_or_null(const char *s)
{
	if (s && *s)
		st_json_str(stdout, s);
	else
		fputs("null", stdout);
}

static void json_routes(const struct route_result *rr, int n)
{
	printf("  \"routes\": [");
	for (int i = 0; i < n; i++) {
		const struct route_result *x = &rr[i];
		const struct st_route *r = &x->route;
		printf("%s\n    {\"address\": ", i ? "," : "");
		st_json_str(stdout, x->addr);
		printf(", \"found\": %s", json_bool(x->found));
		if (!x->found) {
			printf(", \"error\": ");
			st_json_str(stdout, x->error);
			printf("}");
			continue;
		}
		char dst[ST_ADDR_TEXT + 8];
		snprintf(dst, sizeof dst, "%s/%u", r->dst, r->dst_len);
		char table[16];
		st_route_table_name(r->table, table, sizeof table);
		printf(", \"family\": \"%s\", \"table\": \"%s\", \"table_id\": %u, \"type\": \"%s\", "
		       "\"destination\": ", r->family == AF_INET6 ? "inet6" : "inet", table, r->table,
		       st_route_type_name(r->type));
		st_json_str(stdout, dst);
		printf(", \"gateway\": ");
		json_str_or_null(r->gateway);
		printf(", \"device\": ");
		json_str_or_null(r->dev);
		printf(", \"route\": ");
		st_json_str(stdout, x->spec);
		printf(", \"quickack\": %s, \"fix\": ", json_bool(x->quickack));
		json_str_or_null(x->quickack || !x->fixable ? NULL : x->fix);
		printf(", \"why_no_fix\": ");
		json_str_or_null(x->quickack || x->fixable ? NULL : x->fix);
		printf(", \"note\": ");
		json_str_or_null(!x->quickack && x->fixable ? ST_NOTE_ROUTE_QUICKACK : NULL);
		printf("}");
	}
	printf("%s],\n", n ? "\n  " : "");
}

void report_json(const struct report *rp)
{
	const struct host *h = rp->h;
	const struct verdict *v = rp->v;
	const struct memory *m = rp->m;
	int n = rp->n;
	printf("{\n  \"version\": ");
	st_json_str(stdout, ST_VERSION);
	printf(",\n  \"host\": {\n");
	for (size_t i = 0; i < N_SYSCTL; i++) {
		printf("    ");
		st_json_str(stdout, host_sysctls[i].name);
		printf(": ");
		json_sysctl(i, h->val[i]);
		printf(",\n");
	}
	printf("    \"cap_net_admin\": %s,\n", json_bool(h->cap_net_admin));
	printf("    \"tcp_delack_max_us\": %s,\n    \"tcp_rto_min_us\": %s,\n",
	       json_bool(h->delack_max_us), json_bool(h->rto_min_us));
	if (h->hz > 0)
		printf("    \"jiffy_us\": %lld,\n    \"hz\": %lld,\n", h->jiffy_us, h->hz);
	else
		printf("    \"jiffy_us\": null,\n    \"hz\": null,\n");
	printf("    \"rlimit_nofile\": {\"soft\": ");
	if (h->nofile.rlim_cur == RLIM_INFINITY)
		printf("null");
	else
		printf("%llu", (unsigned long long)h->nofile.rlim_cur);
	printf(", \"hard\": ");
	if (h->nofile.rlim_max == RLIM_INFINITY)
		printf("null");
	else
		printf("%llu", (unsigned long long)h->nofile.rlim_max);
	printf("},\n    \"page_size\": %ld\n  },\n  \"options\": [", h->page);
	for (int i = 0; i < n; i++) {
		printf("%s\n    {\"option\": ", i ? "," : "");
		st_json_str(stdout, st_vars[v[i].id].option);
		printf(", \"variable\": ");
		st_json_str(stdout, st_vars[v[i].id].env);
		printf(", \"value\": ");
		st_json_str(stdout, v[i].value);
		printf(", \"status\": \"%s\", \"in_full\": %s", status_names[v[i].status],
		       V_IN_FULL(v[i].status) ? "true" : "false");
		if (v[i].numeric)
			printf(", \"want\": %lld, \"effective\": %lld, \"measured\": %s, "
			       "\"kernel_reports_double\": %s",
			       v[i].want, v[i].effective, v[i].measured ? "true" : "false",
			       v[i].doubled ? "true" : "false");
		printf(", \"reason\": ");
		st_json_str(stdout, v[i].why);
		printf(", \"fix\": ");
		if (v[i].fix[0])
			st_json_str(stdout, v[i].fix);
		else
			printf("null");
		printf("}");
	}
	printf("%s],\n  \"memory\": {\"rcvbuf_per_connection\": %lld, \"rcvbuf_configured\": %s, "
	       "\"sndbuf_per_connection\": %lld, \"sndbuf_configured\": %s, ",
	       n ? "\n  " : "", m->rcv, m->rcv_set ? "true" : "false", m->snd,
	       m->snd_set ? "true" : "false");
	if (m->nofile < 0)
		printf("\"rlimit_nofile\": null, \"worst_case_bytes\": null, ");
	else
		printf("\"rlimit_nofile\": %lld, \"worst_case_bytes\": %lld, ", m->nofile,
		       (m->rcv + m->snd) * m->nofile);
	printf("\"tcp_mem_max_pages\": %lld, \"tcp_mem_max_bytes\": %lld},\n", m->tcp_mem_pages,
	       m->tcp_mem_pages * m->page);
	json_routes(rp->routes, rp->nroutes);
	printf("  \"configured\": %d,\n  \"not_in_full\": %d\n}\n", n, rp->not_full);
}

/* TCP_DELACK_MAX_US / TCP_RTO_MIN_US: whether the kernel has it, and what it rounds to. */
static void text_us_option(const char *name, int has, const struct host *h)
{
	printf("  %s = ", name);
	if (has < 0) {
		printf("unknown (%s)\n", h->us_probe_err[0] ? h->us_probe_err : "probe failed");
		return;
	}
	if (!has) {
		printf("no (Linux 6.15 has it)\n");
		return;
	}
	char range[120];
	if (h->hz > 0)
		st_us_range_text(h->jiffy_us, h->hz, range, sizeof range);
	else
		snprintf(range, sizeof range, "its jiffy unknown (no probe value was 2 jiffies)");
	printf("yes   # Linux >= 6.15; %s\n", range);
}

static void text_routes(const struct route_result *rr, int n)
{
	printf("\nroutes (what this host sends to each --route address by: ip route get fibmatch "
	       "ADDR)\n");
	for (int i = 0; i < n; i++) {
		const struct route_result *x = &rr[i];
		const struct st_route *r = &x->route;
		if (!x->found) {
			printf("  %s: %s\n", x->addr, x->error);
			continue;
		}
		char table[16];
		st_route_table_name(r->table, table, sizeof table);
		printf("  %s: table %s, type %s, %s/%u", x->addr, table, st_route_type_name(r->type),
		       r->dst, r->dst_len);
		if (r->gateway[0])
			printf(", via %s", r->gateway);
		printf(", dev %s: quickack %s\n", r->dev[0] ? r->dev : "none", x->quickack ? "yes" : "no");
		printf("    route: %s\n", x->spec);
		if (x->quickack)
			continue;
		printf("    fix: %s\n", x->fix);
		if (x->fixable)
			printf("    # %s\n", ST_NOTE_ROUTE_QUICKACK);
	}
}

/* A byte count as people read one: 24 MiB, 703.1 GiB (powers of 1024, as the sizes the
 * options take); under 1 KiB in bytes. */
static const char *human(long long b, char *out, size_t n)
{
	static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB"};
	if (b < 1024) {
		snprintf(out, n, "%lld bytes", b);
		return out;
	}
	int u = 0;
	long long whole = 1024;
	while (u < 3 && b >= whole * 1024) {
		whole *= 1024;
		u++;
	}
	if (b % whole == 0)
		snprintf(out, n, "%lld %s", b / whole, unit[u]);
	else
		snprintf(out, n, "%.1f %s", (double)b / (double)whole, unit[u]);
	return out;
}

/* What a full set of connections may hold: said when a buffer size is configured (with
 * autotuning alone, the per-connection maximum is the host's business, not the policy's). */
static void text_memory(const struct memory *m)
{
	char a[32], b[32], c[32];
	printf("\nmemory (per connection at full buffers, times RLIMIT_NOFILE, against "
	       "net.ipv4.tcp_mem)\n");
	long long per = m->rcv + m->snd;
	printf("  per connection = %s   # receive %s (%s) + send %s (%s)\n", human(per, a, sizeof a),
	       human(m->rcv, b, sizeof b), m->rcv_set ? "rcvbuf" : "autotuning max, net.ipv4.tcp_rmem",
	       human(m->snd, c, sizeof c), m->snd_set ? "sndbuf" : "autotuning max, net.ipv4.tcp_wmem");
	if (m->nofile >= 0)
		printf("  worst case = %s   # x %lld descriptors (RLIMIT_NOFILE)\n",
		       human(per * m->nofile, a, sizeof a), m->nofile);
	long long limit = m->tcp_mem_pages * m->page;
	if (m->tcp_mem_pages > 0 && per > 0) {
		printf("  net.ipv4.tcp_mem max = %s   # %lld pages x %lld: for all TCP sockets of the "
		       "host\n", human(limit, a, sizeof a), m->tcp_mem_pages, m->page);
		printf("  connections at full buffers before tcp_mem's max = %lld%s\n", limit / per,
		       m->nofile >= 0 && per * m->nofile > limit
		           ? "   # beyond it the kernel drops and throttles TCP memory host-wide"
		           : "");
	}
}

void report_text(const struct report *rp)
{
	const struct host *h = rp->h;
	const struct verdict *v = rp->v;
	const struct memory *m = rp->m;
	int n = rp->n, not_full = rp->not_full;
	printf("host (this process's network namespace, read from /proc/sys)\n");
	for (size_t i = 0; i < N_SYSCTL; i++) {
		printf("  %s = %s", host_sysctls[i].name, h->val[i][0] ? h->val[i] : "unavailable");
		if (strcmp(host_sysctls[i].name, "net.ipv4.tcp_mem") == 0)
			printf("   # pages of %ld bytes: min pressure max", h->page);
		else if (host_sysctls[i].words == 3)
			printf("   # bytes: min default max");
		printf("\n");
	}
	printf("  CAP_NET_ADMIN = %s\n", h->cap_net_admin < 0 ? "unknown" :
	       h->cap_net_admin ? "yes" : "no");
	if (h->nofile.rlim_cur == RLIM_INFINITY)
		printf("  RLIMIT_NOFILE = unlimited");
	else
		printf("  RLIMIT_NOFILE = %llu", (unsigned long long)h->nofile.rlim_cur);
	printf("   # soft limit: descriptors, so connections, per process\n");
	text_us_option("TCP_DELACK_MAX_US", h->delack_max_us, h);
	text_us_option("TCP_RTO_MIN_US", h->rto_min_us, h);

	printf("\nconfigured (environment and options; values after -> are read back from a "
	       "probe socket)\n");
	if (n == 0)
		printf("  nothing: the library would change nothing (give options or SOCKTUNE_* "
		       "variables)\n");
	for (int i = 0; i < n; i++) {
		const struct verdict *x = &v[i];
		if (x->numeric)
			printf("  %-13s %lld", st_vars[x->id].option, x->want);
		else
			printf("  %-13s %s", st_vars[x->id].option, x->value);
		if (x->numeric && (x->measured || x->status == V_CLAMPED || x->doubled))
			printf(" -> %lld%s%s", x->effective, x->doubled ? " (kernel reports 2x)" : "",
			       x->measured ? "" : " (predicted)");
		printf("  %s%s%s\n", x->why, x->fix[0] ? ": " : "", x->fix);
	}

	if (m->rcv_set || m->snd_set)
		text_memory(m);
	if (rp->nroutes)
		text_routes(rp->routes, rp->nroutes);
	printf("\n");
	if (n == 0)
		printf("result: nothing configured\n");
	else if (not_full)
		printf("result: %d of %d configured values would not take effect in full\n", not_full, n);
	else
		printf("result: all %d configured values take effect in full\n", n);
}
