/* What the kernel takes of an app's value from any process, for the hook (hook.c): it may
 * replace only such a value, and only with such a value. */
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_opts.h"
#include "socktune_kernel.h"
#include "cgroup/cgroup.h"

/* ---- what the kernel takes of an app's value, from any process ----
 * The hook writes our value before the kernel checks the app's: an app's value the kernel
 * would refuse must go through untouched (its EINVAL or EPERM is the app's), and ours must be
 * one the kernel takes from this app too (bpf_setsockopt checks no capability; the app's own
 * call does).  Options not listed, whose row does not state the kernel's range either
 * (ST_O_KERNEL_RANGE), take any int (the flags, SO_RCVBUF, SO_SNDBUF, IP_TOS,
 * TCP_NOTSENT_LOWAT, SO_MAX_PACING_RATE; SO_MARK needs a capability whatever the value). */
static const struct {
	int level, optname;
	struct int_range r;
} int_ranges[] = {
	/* net/ipv4/tcp.c: MAX_TCP_KEEPIDLE, MAX_TCP_KEEPINTVL, MAX_TCP_KEEPCNT */
	{IPPROTO_TCP, TCP_KEEPIDLE, {1, 32767, 0, NULL}},
	{IPPROTO_TCP, TCP_KEEPINTVL, {1, 32767, 0, NULL}},
	{IPPROTO_TCP, TCP_KEEPCNT, {1, 127, 0, NULL}},
	{IPPROTO_TCP, TCP_USER_TIMEOUT, {0, INT_MAX, 0, NULL}},
	/* TCP_MIN_MSS .. MAX_TCP_WINDOW, or 0: the route's again */
	{IPPROTO_TCP, TCP_MAXSEG, {88, 32767, 1, NULL}},
	/* 0 is refused on a connection (taken once closed); below 0 the kernel keeps it as a
	 * huge u32: left alone */
	{IPPROTO_TCP, TCP_WINDOW_CLAMP, {1, INT_MAX, 0, NULL}},
	{IPPROTO_IPV6, IPV6_TCLASS, {-1, 255, 0, NULL}},
	/* TC_PRIO_BESTEFFORT .. TC_PRIO_INTERACTIVE (sk_set_prio_allowed) */
	{SOL_SOCKET, SO_PRIORITY, {0, 6, 0, "CAP_NET_ADMIN or CAP_NET_RAW"}},
};

/* The range of (level, optname) at hz; 1 when it has one.  TCP_DELACK_MAX_US, TCP_RTO_MIN_US:
 * 2 jiffies .. 200 ms, rounded up to jiffies (hz unknown: 10001 us, 2 jiffies at HZ=100). */
int cg_int_range(int level, int optname, long long hz, struct int_range *r)
{
	if (level == IPPROTO_TCP && (optname == TCP_DELACK_MAX_US || optname == TCP_RTO_MIN_US)) {
		*r = (struct int_range){hz > 0 ? 1000000 / hz + 1 : 10001, hz > 0 ? st_us_max(hz) : 200000,
		                        0, NULL};
		return 1;
	}
	/* an option whose row states the kernel's own range (TCP_RTO_MAX_MS: 1000..120000) */
	int i = st_opt_lookup(level, optname);
	if (i >= 0 && i < ST_V_COUNT && (st_sockopts[i].flags & ST_O_KERNEL_RANGE)) {
		*r = (struct int_range){st_vars[i].min, st_vars[i].max, 0, NULL};
		return 1;
	}
	for (size_t k = 0; k < sizeof int_ranges / sizeof int_ranges[0]; k++)
		if (int_ranges[k].level == level && int_ranges[k].optname == optname) {
			*r = int_ranges[k].r;
			return 1;
		}
	return 0;
}

int cg_in_range(const struct int_range *r, long long v)
{
	return (v >= r->lo && v <= r->hi) || (r->zero && v == 0);
}

/* The congestion controls any process may choose (net.ipv4.tcp_allowed_congestion_control;
 * the others, loaded or not, need CAP_NET_ADMIN), read when the hook is made. */

void cg_cc_allowed_read(struct cg_cc_allowed *a)
{
	memset(a, 0, sizeof *a);
	int fd = open("/proc/sys/net/ipv4/tcp_allowed_congestion_control", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t m = read(fd, a->text, sizeof a->text - 1);
	close(fd);
	a->text[m > 0 ? m : 0] = '\0';
	a->text[strcspn(a->text, "\n")] = '\0';
	char buf[sizeof a->text], *save = NULL;
	memcpy(buf, a->text, sizeof buf);
	for (char *w = strtok_r(buf, " \t", &save); w && a->n < CC_MAX; w = strtok_r(NULL, " \t", &save))
		if (strlen(w) < sizeof a->name[0]) /* (TCP_CA_NAME_MAX: never longer) */
			memcpy(a->name[a->n++], w, strlen(w) + 1);
}

static int cc_is_allowed(const struct cg_cc_allowed *a, const char *name)
{
	for (int k = 0; k < a->n; k++)
		if (!strcmp(a->name[k], name))
			return 1;
	return 0;
}

/* Whether the hook may hold option i at policy value want (a name option: name): 1, or 0
 * with why: the policy's value needs a capability the app may lack ("" when the kernel
 * refuses it to anyone: the sock_ops program's setsockopt fails too, and the probe
 * connection of readback.c says so). */
int cg_holdable(int i, long long want, const char *name, long long hz,
                    const struct cg_cc_allowed *cc, char *why, size_t n)
{
	const struct st_sockopt *o = &st_sockopts[i];
	if (o->flags & ST_O_NAME) {
		if (cc_is_allowed(cc, name))
			return 1;
		snprintf(why, n, "%s is not in net.ipv4.tcp_allowed_congestion_control (%s): the "
		         "kernel refuses it to a process without CAP_NET_ADMIN (EPERM)", name,
		         cc->text[0] ? cc->text : "unread");
		return 0;
	}
	for (int v6 = 0; v6 <= (o->label6 != NULL); v6++) {
		struct int_range r;
		if (!cg_int_range(v6 ? o->level6 : o->level, v6 ? o->optname6 : o->optname, hz, &r) ||
		    cg_in_range(&r, want))
			continue;
		why[0] = '\0';
		if (r.who)
			snprintf(why, n, "the kernel takes %lld..%lld%s from a process without %s, and "
			         "refuses more (EPERM)", r.lo, r.hi, r.zero ? " or 0" : "", r.who);
		return 0;
	}
	return 1;
}
