/* socktune check's output: the host, a line per configured value, the memory a full set of
 * connections may hold against net.ipv4.tcp_mem, and the routes of --route (their path
 * metrics: routepath.c); text and JSON from one walk (checksay.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "socktune.h"
#include "socktune_kernel.h"
#include "check/checksay.h"
#include "check/check.h"

/* JSON's "verdict" of each verdict, in the order of enum verdict_status. */
static const char *const status_names[] = {"ok", "note", "unchecked", "clamped",
                                           "fallback", "ignored", "failed"};
_Static_assert(sizeof status_names / sizeof status_names[0] == V_FAILED + 1,
               "a name for every verdict_status");

static long long rlimit_known(rlim_t v)
{
	return v == RLIM_INFINITY ? -1 : (long long)v;
}

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
	m->nofile = rlimit_known(h->nofile.rlim_cur);
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

/* TCP_DELACK_MAX_US / TCP_RTO_MIN_US: whether the kernel has it, and what it rounds to. */
static void say_us_option(struct say *s, int k, const char *name, int has, const struct host *h)
{
	char range[200], yes[240], unknown[96];
	if (h->hz > 0)
		st_us_range_text(h->jiffy_us, h->hz, range, sizeof range);
	else
		snprintf(range, sizeof range, "its jiffy unknown (no probe value was 2 jiffies)");
	snprintf(yes, sizeof yes, "yes   # Linux >= 6.15; %s", range);
	snprintf(unknown, sizeof unknown, "unknown (%s)",
	         h->us_probe_err[0] ? h->us_probe_err : "probe failed");
	say_text(s, "  %s = ", name);
	say_bool3(s, k, "%s\n", yes, "no (Linux 6.15 has it)", unknown, has);
}

static void say_host(struct say *s, const struct host *h)
{
	say_text(s, "host (this process's network namespace, read from /proc/sys)\n");
	say_obj(s, K_CHK_HOST);
	for (size_t i = 0; i < N_SYSCTL; i++) {
		const char *name = host_sysctls[i].name;
		say_text(s, "  %s = ", name);
		say_read(s, sysctl_key(name), "%s", h->val[i], host_sysctls[i].words);
		if (strcmp(name, "net.ipv4.tcp_mem") == 0)
			say_text(s, "   # pages of %ld bytes: min pressure max", h->page);
		else if (host_sysctls[i].words == 3)
			say_text(s, "   # bytes: min default max");
		say_text(s, "\n");
	}
	say_bool3(s, K_CHK_CAP_NET_ADMIN, "  CAP_NET_ADMIN = %s\n", "yes", "no", "unknown",
	          h->cap_net_admin);
	say_group(s, K_CHK_RLIMIT_NOFILE);
	say_known(s, K_CHK_SOFT, "  RLIMIT_NOFILE = %s   # soft limit: descriptors, so connections, "
	          "per process\n", "unlimited", rlimit_known(h->nofile.rlim_cur));
	say_known(s, K_CHK_HARD, NULL, NULL, rlimit_known(h->nofile.rlim_max));
	say_close(s);
	say_us_option(s, K_CHK_DELACK_SUPPORTED, "TCP_DELACK_MAX_US", h->delack_max_us, h);
	say_us_option(s, K_CHK_RTO_MIN_SUPPORTED, "TCP_RTO_MIN_US", h->rto_min_us, h);
	say_known(s, K_CHK_JIFFY_US, NULL, NULL, h->hz > 0 ? h->jiffy_us : -1);
	say_known(s, K_CHK_HZ, NULL, NULL, h->hz > 0 ? h->hz : -1);
	say_int(s, K_CHK_PAGE_SIZE_BYTES, NULL, h->page);
	say_close(s);
}

/* A configured value: as given (a number in its unit), after -> what the kernel makes of it
 * when that is not simply the value, the verdict's reason and its fix */
static void say_option(struct say *s, const struct verdict *x)
{
	say_obj(s, 0);
	say_str(s, K_CHK_OPTION, "  %-13s", st_vars[x->id].option);
	say_str(s, K_CHK_VARIABLE, NULL, st_vars[x->id].env);
	say_str(s, K_CHK_VALUE, x->numeric ? NULL : " %s", x->value);
	say_str(s, K_CHK_VERDICT, NULL, status_names[x->status]);
	say_bool(s, K_CHK_IN_FULL, NULL, NULL, NULL, V_IN_FULL(x->status));
	if (x->numeric) {
		int shown = x->measured || x->status == V_CLAMPED || x->doubled;
		say_int(s, K_CHK_WANT_VALUE, " %s", x->want);
		say_int(s, K_CHK_EFFECTIVE_VALUE, shown ? " -> %s" : NULL, x->effective);
		say_bool(s, K_CHK_DOUBLED, shown ? "%s" : NULL, " (kernel reports 2x)", "", x->doubled);
		say_bool(s, K_CHK_MEASURED, shown ? "%s" : NULL, "", " (predicted)", x->measured);
	} else {
		if (st_is_sockopt(x->id) && (st_sockopts[x->id].flags & ST_O_NAME)) {
			say_str(s, K_CHK_WANT_NAME, NULL, x->value);
			say_name(s, K_CHK_EFFECTIVE_NAME, NULL, NULL, x->measured ? x->got_name : NULL);
		}
		say_bool(s, K_CHK_MEASURED, NULL, NULL, NULL, x->measured);
	}
	say_str(s, K_CHK_REASON, "  %s", x->why);
	say_fix(s, ": %s", x->fix);
	say_text(s, "\n");
	say_close(s);
}

/* What a full set of connections may hold: in the text when a buffer size is configured
 * (with autotuning alone, the per-connection maximum is the host's business, not the
 * policy's). */
static void say_memory(struct say *s, const struct memory *m)
{
	long long per = m->rcv + m->snd;
	long long limit = m->tcp_mem_pages < 0 ? -1 : m->tcp_mem_pages * m->page;
	int against = m->tcp_mem_pages > 0 && per > 0;
	say_hush(s, !m->rcv_set && !m->snd_set);
	say_text(s, "\nmemory (per connection at full buffers, times RLIMIT_NOFILE, against "
	         "net.ipv4.tcp_mem)\n");
	say_obj(s, K_CHK_MEMORY);
	say_bytes(s, SAY_TEXT, "  per connection = %s   # receive ", per);
	say_bytes(s, K_CHK_RCV_PER_CONN, "%s", m->rcv);
	say_bool(s, K_CHK_RCV_SET, " (%s)", "rcvbuf", "autotuning max, net.ipv4.tcp_rmem", m->rcv_set);
	say_bytes(s, K_CHK_SND_PER_CONN, " + send %s", m->snd);
	say_bool(s, K_CHK_SND_SET, " (%s)\n", "sndbuf", "autotuning max, net.ipv4.tcp_wmem",
	         m->snd_set);
	say_bytes(s, K_CHK_WORST_CASE, m->nofile >= 0 ? "  worst case = %s" : NULL,
	          m->nofile < 0 || m->rcv < 0 || m->snd < 0 ? -1 : per * m->nofile);
	if (m->nofile >= 0)
		say_text(s, "   # x %lld descriptors (RLIMIT_NOFILE)\n", m->nofile);
	say_bytes(s, K_CHK_TCP_MEM_BYTES, against ? "  net.ipv4.tcp_mem max = %s" : NULL, limit);
	say_known(s, K_CHK_TCP_MEM_PAGES, against ? "   # %s pages x " : NULL, NULL,
	          m->tcp_mem_pages);
	if (against) {
		say_text(s, "%lld: for all TCP sockets of the host\n", m->page);
		say_text(s, "  connections at full buffers before tcp_mem's max = %lld%s\n", limit / per,
		         m->nofile >= 0 && per * m->nofile > limit
		                 ? "   # beyond it the kernel drops and throttles TCP memory host-wide"
		                 : "");
	}
	say_close(s);
	say_hush(s, 0);
}

static void say_routes(struct say *s, const struct route_result *rr, int n)
{
	if (n)
		say_text(s, "\nroutes (what this host sends to each --route address by: ip route get "
		         "fibmatch ADDR)\n");
	say_arr(s, K_CHK_ROUTES);
	for (int i = 0; i < n; i++) {
		const struct route_result *x = &rr[i];
		const struct st_route *r = &x->route;
		say_obj(s, 0);
		say_str(s, K_ADDR, "  %s", x->addr);
		say_bool(s, K_CHK_FOUND, NULL, NULL, NULL, x->found);
		if (!x->found) {
			say_str(s, K_ERROR, ": %s\n", x->error);
			say_close(s);
			continue;
		}
		char dst[ST_ADDR_TEXT + 8], table[16];
		snprintf(dst, sizeof dst, "%s/%u", r->dst, r->dst_len);
		st_route_table_name(r->table, table, sizeof table);
		say_int(s, K_FAMILY, NULL, r->family == AF_INET6 ? 6 : 4);
		say_str(s, K_CHK_TABLE, ": table %s", table);
		say_int(s, K_CHK_TABLE_ID, NULL, r->table);
		say_str(s, K_CHK_ROUTE_TYPE, ", type %s", st_route_type_name(r->type));
		say_str(s, K_CHK_DESTINATION, ", %s", dst);
		say_name(s, K_CHK_GATEWAY, ", via %s", NULL, r->gateway);
		say_name(s, K_CHK_DEVICE, ", dev %s", "none", r->dev);
		say_bool(s, K_CHK_QUICKACK, ": quickack %s\n", "yes", "no", x->quickack);
		say_str(s, K_CHK_ROUTE, "    route: %s\n", x->spec);
		/* the fix is an ip route change, its note what it needs; without one, why not */
		say_arr(s, K_FIX);
		if (!x->quickack && x->fixable)
			say_str(s, 0, "    fix: %s\n", x->fix);
		say_close(s);
		say_str(s, K_NOTE, x->fixable ? "    # %s\n" : "    fix: %s\n",
		        x->quickack ? NULL : x->fixable ? ST_NOTE_ROUTE_QUICKACK : x->fix);
		route_path_say(s, &x->path, x->addr);
		say_close(s);
	}
	say_close(s);
}

/* check's report, as text or as one JSON document (record.h's keys), on stdout: each value
 * said once, for both. */
void say_report(const struct report *rp, int json)
{
	struct say s;
	say_begin(&s, json, stdout);
	say_int(&s, K_SCHEMA, NULL, REC_SCHEMA_VERSION);
	say_str(&s, K_COMMAND, NULL, "check");
	say_str(&s, K_VERSION, NULL, ST_VERSION);
	say_host(&s, rp->h);
	say_text(&s, "\nconfigured (environment and options; values after -> are read back from "
	         "a probe socket)\n");
	if (rp->n == 0)
		say_text(&s, "  nothing: the library would change nothing (give options or SOCKTUNE_* "
		         "variables)\n");
	say_arr(&s, K_CHK_OPTIONS);
	for (int i = 0; i < rp->n; i++)
		say_option(&s, &rp->v[i]);
	say_close(&s);
	say_memory(&s, rp->m);
	say_routes(&s, rp->routes, rp->nroutes);
	cgmode_say(&s, rp->cg);
	say_int(&s, K_CHK_CONFIGURED, NULL, rp->n);
	say_int(&s, K_CHK_NOT_IN_FULL, NULL, rp->not_full);
	say_text(&s, "\n");
	if (rp->n == 0)
		say_text(&s, "result: nothing configured\n");
	else if (rp->not_full)
		say_text(&s, "result: %d of %d configured values would not take effect in full\n",
		         rp->not_full, rp->n);
	else
		say_text(&s, "result: all %d configured values take effect in full\n", rp->n);
	say_end(&s);
}
