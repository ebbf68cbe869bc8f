/* check --route ADDR: what decides how a connection with ADDR starts and recovers, per
 * destination: the route's initcwnd, initrwnd, congctl and rto_min (RTA_METRICS of the
 * lookup route.c does, with their lock bits), the kernel's value without them, and under
 * check --cgroup what the cgroup mode's sock_ops program sets instead and whether that is
 * what the connection really gets.
 *
 * Who wins, measured on Linux 6.18 (a server in a network namespace behind veth, TCP_INFO
 * of the accepted connection before it sent anything):
 *   initcwnd  the kernel takes the route's when the handshake ends (tcp_init_cwnd), then the
 *             program's TCP_BPF_IW replaces it: route 20, program 32: cwnd 32; a lock
 *             changes nothing.
 *   initrwnd  the kernel asks the program (RWND_INIT) first and reads the route's only
 *             without an answer: route 30, program 40: 57920 bytes (40 x 1448); a lock
 *             changes nothing.  The route's only lowers the kernel's window (at most the
 *             SYN-ACK's 65535 bytes): route 60 and 200 gave 65160, as none.
 *   congctl   the route's is taken for the new connection, the program's TCP_CONGESTION
 *             replaces it (cubic -> bbr), unless the route locks it: then the kernel refuses
 *             TCP_CONGESTION on the connection (EPERM), the program's and the app's alike.
 *   rto_min   only a locked one counts (ip always locks it; an unlocked one set over netlink
 *             is ignored: RTO 204 ms), and then it replaces every socket's own: route 50 ms,
 *             program 100 ms: RTO 56 ms; 150 ms and 20 ms: 156 ms, after 30 round trips
 *             too, while TCP_RTO_MIN_US reads back the program's value all the same. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "socktune.h"
#include "socktune_host.h"
#include "socktune_kernel.h"
#include "socktune_opts.h"
#include "check/checksay.h"
#include "check/check.h"

#if defined(__has_include)
#if __has_include(<linux/rtnetlink.h>)
#include <linux/rtnetlink.h>
_Static_assert((int)ST_RTAX_INITCWND == (int)RTAX_INITCWND &&
               (int)ST_RTAX_INITRWND == (int)RTAX_INITRWND &&
               (int)ST_RTAX_RTO_MIN == (int)RTAX_RTO_MIN &&
               (int)ST_RTAX_CC_ALGO == (int)RTAX_CC_ALGO && (int)ST_RTAX_LOCK == (int)RTAX_LOCK,
               "the RTAX_ numbers are linux/rtnetlink.h's");
#endif
#endif

#define INIT_CWND 10            /* TCP_INIT_CWND: the initial window without a route's */
#define SYNACK_WINDOW_MAX 65535 /* the SYN-ACK's window field is not scaled */
#define RTO_MIN_US 200000       /* TCP_RTO_MIN, before net.ipv4.tcp_rto_min_us */

enum { P_NAME = 1, P_MS = 2, P_LOCK_WINS = 4, P_LOCKED_ONLY = 8 };

/* One metric: ip's word for it, the option the cgroup program sets it with, the keys of its
 * JSON, and why the program's value wins when it does. */
static const struct path_row {
	int rtax;
	enum st_var_id id;
	const char *word;
	unsigned flags;   /* P_NAME: a name; P_MS: in ms on the route (us here); P_LOCK_WINS: a
	                   * locked route value stays; P_LOCKED_ONLY: unlocked, the kernel ignores it */
	int k_route, k_locked, k_kernel, k_cgroup, k_wins;
	const char *program_wins; /* why the program's is what the connection gets */
	const char *lock_wins;    /* why the route's stays when locked (P_LOCK_WINS) */
} rows[PATH_COUNT] = {
	[PATH_INITCWND] = {ST_RTAX_INITCWND, ST_V_INITCWND, "initcwnd", 0, K_CHK_ROUTE_INITCWND,
	                   K_CHK_ROUTE_INITCWND_LOCKED, K_CHK_KERNEL_INITCWND, K_CHK_CGROUP_INITCWND,
	                   K_CHK_CGROUP_INITCWND_WINS,
	                   "the program sets TCP_BPF_IW once the handshake is done, after the kernel "
	                   "took its own", NULL},
	[PATH_INITRWND] = {ST_RTAX_INITRWND, ST_V_INITRWND, "initrwnd", 0, K_CHK_ROUTE_INITRWND,
	                   K_CHK_ROUTE_INITRWND_LOCKED, K_CHK_KERNEL_INITRWND_BYTES,
	                   K_CHK_CGROUP_INITRWND, K_CHK_CGROUP_INITRWND_WINS,
	                   "the kernel asks the program (RWND_INIT) before it reads the route's", NULL},
	[PATH_CONGCTL] = {ST_RTAX_CC_ALGO, ST_V_CONGESTION, "congctl", P_NAME | P_LOCK_WINS,
	                  K_CHK_ROUTE_CONGCTL, K_CHK_ROUTE_CONGCTL_LOCKED, K_CHK_KERNEL_CONGCTL,
	                  K_CHK_CGROUP_CONGCTL, K_CHK_CGROUP_CONGCTL_WINS,
	                  "the program sets TCP_CONGESTION once the handshake is done, replacing the "
	                  "kernel's choice",
	                  "the kernel refuses TCP_CONGESTION on its connections with EPERM, the "
	                  "program's and the app's alike"},
	[PATH_RTO_MIN] = {ST_RTAX_RTO_MIN, ST_V_RTO_MIN, "rto_min", P_MS | P_LOCK_WINS | P_LOCKED_ONLY,
	                  K_CHK_ROUTE_RTO_MIN_US, K_CHK_ROUTE_RTO_MIN_LOCKED, K_CHK_KERNEL_RTO_MIN_US,
	                  K_CHK_CGROUP_RTO_MIN_US, K_CHK_CGROUP_RTO_MIN_WINS,
	                  "from the connection's next RTT samples on (its first RTO, from the "
	                  "handshake, is the kernel's)",
	                  "a locked rto_min replaces every socket's own; TCP_RTO_MIN_US still reads "
	                  "back the program's"},
};

/* The route's value counts for the connection (rto_min: only a locked one). */
static int route_counts(const struct path_row *row, const struct path_value *v)
{
	return v->set && (!(row->flags & P_LOCKED_ONLY) || v->locked);
}

/* addr as the program compares it: 16 bytes of AF_INET6 (an IPv4 one v4-mapped), or 4 */
static int addr_bytes(const char *addr, int *family, unsigned char *b)
{
	if (inet_pton(AF_INET, addr, b) == 1) {
		*family = AF_INET;
		return 0;
	}
	*family = AF_INET6;
	return inet_pton(AF_INET6, addr, b) == 1 ? 0 : -1;
}

/* A policy variable as given (the environment the policy was read from) */
static const char *given(enum st_var_id id)
{
	const char *v = getenv(st_vars[id].env);
	return v ? v : "";
}

/* Which connections the program tunes: its ends, their ports, the peers. */
static void scope_words(const struct cli *c, const struct st_policy *p, struct route_path *rp)
{
	char ports[160] = "any port", out[160] = "";
	if (st_has(p, ST_V_PORTS))
		snprintf(ports, sizeof ports, "ports %.100s (--ports)", given(ST_V_PORTS));
	if (st_on(p, ST_V_CLIENT) && st_has(p, ST_V_CLIENT_PORTS))
		snprintf(out, sizeof out, " and made to ports %.100s (--client)",
		         given(ST_V_CLIENT_PORTS));
	else if (st_on(p, ST_V_CLIENT))
		snprintf(out, sizeof out, " and made to any port (--client)");
	size_t len = 0;
	for (int k = 0; k < c->npeers && len < sizeof rp->peers; k++) {
		char a[INET6_ADDRSTRLEN];
		inet_ntop(c->peer[k].family, c->peer[k].addr, a, sizeof a);
		int w = snprintf(rp->peers + len, sizeof rp->peers - len, "%s%s/%d", k ? ", " : "", a,
		                 c->peer[k].len);
		len += w > 0 ? (size_t)w : 0;
	}
	snprintf(rp->scope, sizeof rp->scope, "connections accepted on %s%s, %s%s%s", ports, out,
	         c->npeers ? "peers in " : "any peer", rp->peers, c->npeers ? " (--peer)" : "");
}

void route_path_judge(struct route_result *r, const struct cli *c, const struct st_policy *p,
                      const struct host *h, int cg_usable)
{
	struct route_path *rp = &r->path;
	const struct st_route *rt = &r->route;
	memset(rp, 0, sizeof *rp);
	unsigned lock = rt->has_metric >> ST_RTAX_LOCK & 1 ? rt->metric[ST_RTAX_LOCK] : 0;
	rp->cgroup = c->check_cgroup;
	rp->unusable = rp->cgroup && !cg_usable;
	rp->peer_match = 1;
	if (rp->cgroup) {
		int family;
		unsigned char b[16];
		scope_words(c, p, rp);
		if (c->npeers && addr_bytes(r->addr, &family, b) == 0)
			rp->peer_match = peer_in(c->peer, c->npeers, family, b);
	}
	for (int m = 0; m < PATH_COUNT; m++) {
		const struct path_row *row = &rows[m];
		struct path_value *v = &rp->v[m];
		v->set = rt->has_metric >> row->rtax & 1;
		v->locked = v->set && (lock >> row->rtax & 1);
		v->num = -1;
		if (v->set && (row->flags & P_NAME))
			snprintf(v->name, sizeof v->name, "%s", rt->congctl);
		else if (v->set)
			v->num = rt->metric[row->rtax] * ((row->flags & P_MS) ? 1000LL : 1);
		switch (m) {
		case PATH_INITCWND: v->kernel_num = INIT_CWND; break;
		case PATH_INITRWND: v->kernel_num = SYNACK_WINDOW_MAX; break;
		case PATH_CONGCTL:
			snprintf(v->kernel_name, sizeof v->kernel_name, "%.15s",
			         host_get(h, "net.ipv4.tcp_congestion_control"));
			break;
		case PATH_RTO_MIN:
			v->kernel_num = st_sysctl_num("net.ipv4.tcp_rto_min_us", RTO_MIN_US);
			break;
		}
		/* the program's: on either end it tunes (its own options, or socket options it
		 * sets on accepted connections and, with --client, outgoing ones) */
		long long want = 0;
		v->cg = rp->cgroup && st_has(p, row->id) &&
		        (st_sockops_sets(p, row->id, 0, &want) ||
		         (st_on(p, ST_V_CLIENT) && st_sockops_sets(p, row->id, 1, &want)));
		if (!v->cg)
			continue;
		if (row->flags & P_NAME)
			snprintf(v->cg_name, sizeof v->cg_name, "%s", st_opt_name(p, row->id));
		else
			v->cg_num = p->num[row->id];
		v->wins = rp->peer_match && !rp->unusable &&
		          !((row->flags & P_LOCK_WINS) && v->locked && route_counts(row, v));
	}
}

/* A metric's value as the text says it: "20", "cubic", "50 ms". */
static void value_text(int m, long long num, const char *name, char *out, size_t n)
{
	if (rows[m].flags & P_NAME)
		snprintf(out, n, "%s", name);
	else if (m == PATH_RTO_MIN)
		snprintf(out, n, num % 1000 ? "%.1f ms" : "%.0f ms", (double)num / 1000);
	else
		snprintf(out, n, "%lld", num);
}

/* What a connection with addr gets without the program: the route's when it counts, else the
 * kernel's. */
static void without_program(int m, const struct path_value *v, char *out, size_t n)
{
	if (route_counts(&rows[m], v))
		value_text(m, v->num, v->name, out, n);
	else if (m == PATH_INITRWND)
		snprintf(out, n, "the kernel's window");
	else
		value_text(m, v->kernel_num, v->kernel_name, out, n);
}

/* One line: "initcwnd = 20, locked (kernel default 10)"; under check --cgroup, when the
 * program sets it, a second: what it sets and whether the connection gets it. */
static void say_metric(struct say *s, int m, const struct route_path *rp, const char *addr)
{
	const struct path_row *row = &rows[m];
	const struct path_value *v = &rp->v[m];
	char val[64], dflt[96], cg[64], stays[64];
	value_text(m, v->num, v->name, val, sizeof val);
	if (m == PATH_INITRWND)
		snprintf(dflt, sizeof dflt, "at most %lld bytes, the SYN-ACK's window; a route's only "
		         "lowers it", v->kernel_num);
	else
		value_text(m, v->kernel_num, v->kernel_name, dflt, sizeof dflt);
	say_text(s, "    %s = %s", row->word, v->set ? val : "unset");
	if (row->flags & P_NAME) {
		say_name(s, row->k_route, NULL, NULL, v->name);
		say_bool3(s, row->k_locked, "%s", ", locked", "", NULL, v->set ? v->locked : -1);
		say_name(s, row->k_kernel, NULL, NULL, v->kernel_name);
	} else {
		say_known(s, row->k_route, NULL, NULL, v->num);
		say_bool3(s, row->k_locked, "%s", ", locked", "", NULL, v->set ? v->locked : -1);
		say_int(s, row->k_kernel, NULL, v->kernel_num);
	}
	if (v->set && (row->flags & P_LOCKED_ONLY) && !v->locked)
		say_text(s, " (not locked: the kernel ignores it; ip always locks it)");
	say_text(s, " (kernel default %s)\n", dflt[0] ? dflt : "unknown");

	/* under check --cgroup: what the program sets, and whether the connection gets it */
	if (!v->cg) {
		say_bool3(s, row->k_cgroup, NULL, NULL, NULL, NULL, -1);
		say_bool3(s, row->k_wins, NULL, NULL, NULL, NULL, -1);
		return;
	}
	value_text(m, v->cg_num, v->cg_name, cg, sizeof cg);
	without_program(m, v, stays, sizeof stays);
	if (row->flags & P_NAME)
		say_str(s, row->k_cgroup, NULL, v->cg_name);
	else
		say_int(s, row->k_cgroup, NULL, v->cg_num);
	say_bool(s, row->k_wins, NULL, NULL, NULL, v->wins);
	if (v->wins)
		say_text(s, "      --cgroup sets %s instead: %s\n", cg, row->program_wins);
	else if (rp->unusable)
		say_text(s, "      --cgroup would set %s, but the cgroup mode cannot run here (below): "
		         "%s stays\n", cg, stays);
	else if (!rp->peer_match)
		say_text(s, "      --cgroup would set %s, but not for %s (not in --peer %s): %s stays\n",
		         cg, addr, rp->peers, stays);
	else
		say_text(s, "      --cgroup would set %s, but the route's lock wins: %s stays (%s)\n", cg,
		         stays, row->lock_wins);
}

void route_path_say(struct say *s, const struct route_path *rp, const char *addr)
{
	int any = 0;
	for (int m = 0; m < PATH_COUNT; m++) {
		say_metric(s, m, rp, addr);
		any |= rp->v[m].cg;
	}
	say_bool3(s, K_CHK_CGROUP_PEER_MATCH, NULL, NULL, NULL, NULL, rp->cgroup ? rp->peer_match : -1);
	say_name(s, K_CHK_CGROUP_SCOPE, any ? "    (the --cgroup program tunes %s)\n" : NULL, NULL,
	         rp->cgroup ? rp->scope : NULL);
}
