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
#include "record.h"

/* JSON's "verdict" of each verdict, in the order of enum verdict_status. */
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

/* The key of a sysctl check shows (its own name: record.h lists every one). */
static int sysctl_key(const char *name)
{
	for (int k = 0; k < K_COUNT; k++)
		if (strcmp(rec_keys[k].name, name) == 0)
			return k;
	return -1;
}

static void json_sysctl(struct rec *host, size_t i, const char *val)
{
	int k = sysctl_key(host_sysctls[i].name);
	if (!*val) {
		rec_null(host, k);
		return;
	}
	if (host_sysctls[i].words == 0) {
		char *end;
		long long num = strtoll(val, &end, 10);
		if (*end == '\0' && end != val)
			rec_int(host, k, num);
		else
			rec_null(host, k); /* not the number it should be */
		return;
	}
	/* lists: numbers or names, each word an item */
	struct rec *list = rec_arr(host, k);
	const char *s = val;
	for (int n = 0; *s && n < 64; n++) {
		s += strspn(s, " ");
		size_t len = strcspn(s, " ");
		if (!len)
			break;
		char word[128], *end;
		snprintf(word, sizeof word, "%.*s", (int)len, s);
		long long num = strtoll(word, &end, 10);
		if (host_sysctls[i].words > 0 && *end == '\0')
			rec_int(list, 0, num);
		else
			rec_str(list, 0, word);
		s += len;
	}
}

static void rec_tristate(struct rec *parent, int k, int v)
{
	if (v < 0)
		rec_null(parent, k);
	else
		rec_bool(parent, k, v);
}

static void rec_nonempty(struct rec *parent, int k, const char *s)
{
	rec_str(parent, k, s && *s ? s : NULL);
}

/* A fix as the library logs it: its command in "fix" (an array: none, or one), its prose in
 * "note" (null when none). */
static void rec_fix(struct rec *parent, const char *fix)
{
	char cmd[sizeof ((struct verdict *)0)->fix];
	const char *note = st_fix_split(fix, cmd, sizeof cmd);
	struct rec *list = rec_arr(parent, K_FIX);
	if (cmd[0])
		rec_str(list, 0, cmd);
	rec_nonempty(parent, K_NOTE, note);
}

static void json_routes(struct rec *doc, const struct route_result *rr, int n)
{
	struct rec *routes = rec_arr(doc, K_CHK_ROUTES);
	for (int i = 0; i < n; i++) {
		const struct route_result *x = &rr[i];
		const struct st_route *r = &x->route;
		struct rec *o = rec_obj(routes, 0);
		rec_str(o, K_ADDR, x->addr);
		rec_bool(o, K_CHK_FOUND, x->found);
		if (!x->found) {
			rec_str(o, K_ERROR, x->error);
			continue;
		}
		char dst[ST_ADDR_TEXT + 8];
		snprintf(dst, sizeof dst, "%s/%u", r->dst, r->dst_len);
		char table[16];
		st_route_table_name(r->table, table, sizeof table);
		rec_int(o, K_FAMILY, r->family == AF_INET6 ? 6 : 4);
		rec_str(o, K_CHK_TABLE, table);
		rec_int(o, K_CHK_TABLE_ID, r->table);
		rec_str(o, K_CHK_ROUTE_TYPE, st_route_type_name(r->type));
		rec_str(o, K_CHK_DESTINATION, dst);
		rec_nonempty(o, K_CHK_GATEWAY, r->gateway);
		rec_nonempty(o, K_CHK_DEVICE, r->dev);
		rec_str(o, K_CHK_ROUTE, x->spec);
		rec_bool(o, K_CHK_QUICKACK, x->quickack);
		/* the fix is an ip route change, its note what it needs; without one, why not */
		struct rec *fix = rec_arr(o, K_FIX);
		if (!x->quickack && x->fixable)
			rec_str(fix, 0, x->fix);
		rec_str(o, K_NOTE, x->quickack ? NULL : x->fixable ? ST_NOTE_ROUTE_QUICKACK : x->fix);
	}
}

static void rec_rlimit(struct rec *g, int k, rlim_t v)
{
	if (v == RLIM_INFINITY)
		rec_null(g, k);
	else
		rec_int(g, k, (long long)v);
}

static void json_host(struct rec *doc, const struct host *h)
{
	struct rec *host = rec_obj(doc, K_CHK_HOST);
	for (size_t i = 0; i < N_SYSCTL; i++)
		json_sysctl(host, i, h->val[i]);
	rec_tristate(host, K_CHK_CAP_NET_ADMIN, h->cap_net_admin);
	rec_tristate(host, K_CHK_DELACK_SUPPORTED, h->delack_max_us);
	rec_tristate(host, K_CHK_RTO_MIN_SUPPORTED, h->rto_min_us);
	rec_known(host, K_CHK_JIFFY_US, h->hz > 0 ? h->jiffy_us : -1);
	rec_known(host, K_CHK_HZ, h->hz > 0 ? h->hz : -1);
	struct rec *nofile = rec_group(host, K_CHK_RLIMIT_NOFILE);
	rec_rlimit(nofile, K_CHK_SOFT, h->nofile.rlim_cur);
	rec_rlimit(nofile, K_CHK_HARD, h->nofile.rlim_max);
	rec_int(host, K_CHK_PAGE_SIZE_BYTES, h->page);
}

static void json_option(struct rec *options, const struct verdict *x)
{
	struct rec *o = rec_obj(options, 0);
	rec_str(o, K_CHK_OPTION, st_vars[x->id].option);
	rec_str(o, K_CHK_VARIABLE, st_vars[x->id].env);
	rec_str(o, K_CHK_VALUE, x->value);
	rec_str(o, K_CHK_VERDICT, status_names[x->status]);
	rec_bool(o, K_CHK_IN_FULL, V_IN_FULL(x->status));
	if (x->numeric) {
		rec_int(o, K_CHK_WANT_VALUE, x->want);
		rec_int(o, K_CHK_EFFECTIVE_VALUE, x->effective);
	} else if (st_is_sockopt(x->id) && (st_sockopts[x->id].flags & ST_O_NAME)) {
		rec_str(o, K_CHK_WANT_NAME, x->value);
		rec_nonempty(o, K_CHK_EFFECTIVE_NAME, x->measured ? x->got_name : NULL);
	}
	rec_bool(o, K_CHK_MEASURED, x->measured);
	if (x->numeric)
		rec_bool(o, K_CHK_DOUBLED, x->doubled);
	rec_str(o, K_CHK_REASON, x->why);
	rec_fix(o, x->fix);
}

/* check --json: one document (record.h's keys), on stdout. */
void report_json(const struct report *rp)
{
	const struct memory *m = rp->m;
	struct rec *doc = rec_new();
	rec_int(doc, K_SCHEMA, REC_SCHEMA_VERSION);
	rec_str(doc, K_COMMAND, "check");
	rec_str(doc, K_VERSION, ST_VERSION);
	json_host(doc, rp->h);
	struct rec *options = rec_arr(doc, K_CHK_OPTIONS);
	for (int i = 0; i < rp->n; i++)
		json_option(options, &rp->v[i]);
	struct rec *mem = rec_obj(doc, K_CHK_MEMORY);
	rec_known(mem, K_CHK_RCV_PER_CONN, m->rcv);
	rec_bool(mem, K_CHK_RCV_SET, m->rcv_set);
	rec_known(mem, K_CHK_SND_PER_CONN, m->snd);
	rec_bool(mem, K_CHK_SND_SET, m->snd_set);
	rec_known(mem, K_CHK_WORST_CASE, m->nofile < 0 || m->rcv < 0 || m->snd < 0 ? -1
	                                 : (m->rcv + m->snd) * m->nofile);
	rec_known(mem, K_CHK_TCP_MEM_PAGES, m->tcp_mem_pages);
	rec_known(mem, K_CHK_TCP_MEM_BYTES, m->tcp_mem_pages < 0 ? -1 : m->tcp_mem_pages * m->page);
	json_routes(doc, rp->routes, rp->nroutes);
	cgmode_json(doc, rp->cg);
	rec_int(doc, K_CHK_CONFIGURED, rp->n);
	rec_int(doc, K_CHK_NOT_IN_FULL, rp->not_full);
	rec_write_json(stdout, doc);
	rec_free(doc);
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
	char range[200];
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
	cgmode_text(rp->cg);
	printf("\n");
	if (n == 0)
		printf("result: nothing configured\n");
	else if (not_full)
		printf("result: %d of %d configured values would not take effect in full\n", not_full, n);
	else
		printf("result: all %d configured values take effect in full\n", n);
}
