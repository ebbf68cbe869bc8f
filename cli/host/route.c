/* socktune check --route ADDR: the route the kernel would use to send to ADDR, asked over
 * NETLINK_ROUTE as `ip route get fibmatch ADDR` asks (RTM_GETROUTE with RTA_DST), and whether
 * it carries quickack 1.  The netlink socket is AF_NETLINK: a libsocktune this command may run
 * under leaves it alone, so plain libc calls do. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "socktune_kernel.h"
#include "host/diag.h"
#include "host/netlink.h"
#include "host/route.h"

/* rtnetlink's own (linux/rtnetlink.h), written out as netlink.h is */
struct rt_hdr {
	uint8_t family, dst_len, src_len, tos, table, protocol, scope, type;
	uint32_t flags;
};
enum { NETLINK_ROUTE_ = 0, RTM_NEWROUTE_ = 24, RTM_GETROUTE_ = 26, SOL_NETLINK_ = 270,
       NETLINK_GET_STRICT_CHK_ = 12 /* the kernel filters a dump as asked (Linux 4.20) */ };
#define RTM_F_LOOKUP_TABLE_ 0x1000 /* the table the route was found in */
#define RTM_F_FIB_MATCH_ 0x2000    /* the route itself, not the destination's cache (4.13) */
enum { RTA_DST_ = 1, RTA_OIF_ = 4, RTA_GATEWAY_ = 5, RTA_PRIORITY_ = 6, RTA_PREFSRC_ = 7,
       RTA_METRICS_ = 8, RTA_MULTIPATH_ = 9, RTA_FLOW_ = 11, RTA_TABLE_ = 15, RTA_VIA_ = 18,
       RTA_PREF_ = 20, RTA_ENCAP_ = 22, RTA_EXPIRES_ = 23, RTA_NH_ID_ = 30 };

#define ROUTE_TIMEOUT_S 2  /* for the kernel's answer: it comes at once, or not at all */
#define ROUTE_MAX_READS 8  /* datagrams read before giving up on the answer to a lookup */
#define ROUTE_MAX_DUMP_READS 64 /* ... to a dump of the local table */

static int addr_parse(const char *text, int *family, unsigned char *bytes)
{
	if (inet_pton(AF_INET, text, bytes) == 1) {
		*family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, text, bytes) != 1)
		return -1;
	*family = AF_INET6;
	/* ::ffff:a.b.c.d: a dual-stack server answers an IPv4 client by the IPv4 route */
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (memcmp(bytes, mapped, sizeof mapped) == 0) {
		memmove(bytes, bytes + 12, 4);
		*family = AF_INET;
	}
	return 0;
}

/* An attribute's payload as a number or an address (too short: 0, or ""). */
static uint32_t get_u32(const unsigned char *v, size_t len)
{
	uint32_t x = 0;
	if (len >= sizeof x)
		memcpy(&x, v, sizeof x);
	return x;
}

static void get_addr(const unsigned char *v, size_t len, int family, char *out)
{
	unsigned char b[16];
	size_t want = family == AF_INET6 ? 16 : 4;
	out[0] = '\0';
	if (len >= want && (family == AF_INET || family == AF_INET6))
		inet_ntop(family, memcpy(b, v, want), out, ST_ADDR_TEXT);
}

/* A route being decoded: the route, and its device's index until it is named. */
struct decoding {
	struct st_route *r;
	unsigned oif;
};

/* Walks the attributes of p (len bytes), at most 64: each one's type and payload to fn. */
static void each_attr(const unsigned char *p, size_t len, struct decoding *d,
                      void (*fn)(unsigned type, const unsigned char *v, size_t n, struct decoding *d))
{
	for (int k = 0; k < 64 && len >= sizeof(struct nl_attr); k++) {
		struct nl_attr a;
		memcpy(&a, p, sizeof a);
		if (a.len < sizeof a || a.len > len)
			return;
		fn(a.type, p + sizeof a, a.len - sizeof a, d);
		size_t step = NL_ALIGN(a.len);
		if (step >= len)
			return;
		p += step;
		len -= step;
	}
}

/* RTA_METRICS: one attribute per RTAX_ number. */
static void on_metric(unsigned type, const unsigned char *v, size_t n, struct decoding *d)
{
	struct st_route *r = d->r;
	if (type == 0 || type >= ST_RTAX_COUNT) {
		r->unrepeated |= ST_R_METRIC;
		return;
	}
	if (type == ST_RTAX_CC_ALGO) {
		size_t k = n < sizeof r->congctl - 1 ? n : sizeof r->congctl - 1;
		memcpy(r->congctl, v, k);
		r->congctl[k] = '\0';
	} else if (n >= 4) {
		r->metric[type] = get_u32(v, n);
	} else {
		return;
	}
	r->has_metric |= 1ul << type;
}

static void on_attr(unsigned type, const unsigned char *v, size_t n, struct decoding *d)
{
	struct st_route *r = d->r;
	switch (type) {
	case RTA_DST_: get_addr(v, n, r->family, r->dst); break;
	case RTA_GATEWAY_: get_addr(v, n, r->family, r->gateway); break;
	case RTA_PREFSRC_: get_addr(v, n, r->family, r->prefsrc); break;
	case RTA_OIF_: d->oif = get_u32(v, n); break;
	case RTA_PRIORITY_: r->priority = get_u32(v, n); break;
	case RTA_TABLE_: r->table = get_u32(v, n); break;
	case RTA_NH_ID_: r->nhid = get_u32(v, n); break;
	case RTA_FLOW_: r->realms = get_u32(v, n); break;
	case RTA_PREF_: r->pref = n ? v[0] : -1; break;
	case RTA_METRICS_: each_attr(v, n, d, on_metric); break;
	case RTA_MULTIPATH_: r->unrepeated |= ST_R_MULTIPATH; break;
	case RTA_ENCAP_: r->unrepeated |= ST_R_ENCAP; break;
	case RTA_VIA_: r->unrepeated |= ST_R_VIA; break;
	case RTA_EXPIRES_: r->unrepeated |= ST_R_EXPIRES; break;
	default: break; /* cache info, uid, mark, the table in rtm_table: not the route's to repeat */
	}
}

/* An RTM_NEWROUTE message's body (after its nl_hdr) into r; -1 when it is too short. */
static int decode_route(const unsigned char *p, size_t len, struct st_route *r)
{
	struct rt_hdr h;
	if (len < sizeof h)
		return -1;
	memcpy(&h, p, sizeof h);
	memset(r, 0, sizeof *r);
	r->family = h.family;
	r->dst_len = h.dst_len;
	r->tos = h.tos;
	r->table = h.table;
	r->protocol = h.protocol;
	r->scope = h.scope;
	r->type = h.type;
	r->flags = h.flags & 0xff; /* the nexthop's flags (onlink); above them, the lookup's */
	r->priority = r->nhid = r->pref = r->realms = -1;
	struct decoding d = {r, 0};
	if (len > NL_ALIGN(sizeof h))
		each_attr(p + NL_ALIGN(sizeof h), len - NL_ALIGN(sizeof h), &d, on_attr);
	if (!r->dst[0]) {
		r->dst_len = 0;
		snprintf(r->dst, sizeof r->dst, "%s", r->family == AF_INET6 ? "::" : "0.0.0.0");
	}
	if (d.oif && !if_indextoname(d.oif, r->dev))
		r->dev[0] = '\0';
	if (d.oif && !r->dev[0] && r->nhid < 0)
		r->unrepeated |= ST_R_NODEV;
	return 0;
}

/* What went wrong, and the errno's text when err is one; -1. */
static int route_fail(struct route_result *out, int err, const char *what)
{
	snprintf(out->error, sizeof out->error, "%s%s%s", what, err ? ": " : "", err ? strerror(err) : "");
	return -1;
}

/* One request and its answers: each RTM_NEWROUTE body sent to us for it (our sequence number
 * and port id, from the kernel) goes to fn, which returns 1 to stop.  1 when fn stopped, 0
 * when a dump ended (NLMSG_DONE), -1 with out->error otherwise; at most max_reads datagrams,
 * each within ROUTE_TIMEOUT_S. */
static int talk(int fd, const struct nl_hdr *req, int max_reads,
                int (*fn)(const unsigned char *p, size_t n, void *ctx), void *ctx,
                struct route_result *out)
{
	struct nl_addr kernel = {.family = AF_NETLINK};
	struct nl_addr self;
	socklen_t slen = sizeof self;
	if (getsockname(fd, (struct sockaddr *)&self, &slen) != 0)
		return route_fail(out, errno, "netlink getsockname");
	if (sendto(fd, req, req->len, 0, (struct sockaddr *)&kernel, sizeof kernel) != (ssize_t)req->len)
		return route_fail(out, errno ? errno : EIO, "netlink send");
	static unsigned char buf[32768]; /* a dump's datagram: up to a page or two of routes */
	for (int reads = 0; reads < max_reads; reads++) {
		struct nl_addr from;
		socklen_t flen = sizeof from;
		ssize_t n = recvfrom(fd, buf, sizeof buf, MSG_TRUNC, (struct sockaddr *)&from, &flen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? route_fail(out, 0, "netlink: no answer within 2 s")
			                       : route_fail(out, errno, "netlink recv");
		if ((size_t)n > sizeof buf)
			return route_fail(out, EMSGSIZE, "netlink answer");
		if (flen < sizeof from || from.pid != 0)
			continue; /* not from the kernel */
		size_t left = (size_t)n;
		for (const unsigned char *p = buf; left >= sizeof(struct nl_hdr);) {
			struct nl_hdr h;
			memcpy(&h, p, sizeof h);
			if (h.len < sizeof h || h.len > left)
				break;
			if (h.seq == req->seq && h.pid == self.pid) {
				if (h.type == NLMSG_ERROR_) {
					int32_t err = 0;
					if (h.len >= sizeof h + sizeof err)
						memcpy(&err, p + sizeof h, sizeof err);
					/* ENETUNREACH, EHOSTUNREACH...; 0 would be an ACK, never asked for */
					return route_fail(out, err < 0 ? -err : ENOENT, "no route");
				}
				if (h.type == NLMSG_DONE_)
					return 0;
				if (h.type == RTM_NEWROUTE_ && fn(p + sizeof h, h.len - sizeof h, ctx))
					return 1;
			}
			size_t step = NL_ALIGN(h.len);
			if (step >= left)
				break;
			p += step;
			left -= step;
		}
	}
	return route_fail(out, 0, "netlink: no end to the answer");
}

static int take_route(const unsigned char *p, size_t n, void *ctx)
{
	return decode_route(p, n, ctx) == 0;
}

/* A route of the local table that is the one found (the same key: destination, tos,
 * priority; and type). */
static int same_local(const unsigned char *p, size_t n, void *ctx)
{
	const struct st_route *found = ctx;
	struct st_route r;
	return decode_route(p, n, &r) == 0 && r.table == 255 && r.family == found->family &&
	       r.type == found->type && r.dst_len == found->dst_len && r.tos == found->tos &&
	       r.priority == found->priority && strcmp(r.dst, found->dst) == 0;
}

/* While no ip rule was added, the kernel keeps IPv4's local and main tables in one trie and
 * a lookup reports every route as main's (127.0.0.1's /32 too), though a change must name
 * the route's own table.  The local table, dumped (filtered by the kernel to that table and
 * type since Linux 4.20; it holds the host's own addresses: a few routes), says. */
static void own_table(int fd, struct route_result *out)
{
	struct {
		struct nl_hdr h;
		struct rt_hdr r;
	} req;
	memset(&req, 0, sizeof req);
	req.h.len = sizeof req;
	req.h.type = RTM_GETROUTE_;
	req.h.flags = NLM_F_REQUEST_ | NLM_F_DUMP_;
	req.h.seq = (uint32_t)getpid() ^ 0x5ec8;
	req.r.family = AF_INET;
	req.r.table = 255;
	req.r.type = out->route.type;
	int one = 1;
	setsockopt(fd, SOL_NETLINK_, NETLINK_GET_STRICT_CHK_, &one, sizeof one);
	struct route_result scratch; /* a failed dump leaves the lookup's answer as it is */
	if (talk(fd, &req.h, ROUTE_MAX_DUMP_READS, same_local, &out->route, &scratch) == 1)
		out->route.table = 255;
}

int route_lookup(const char *addr, struct route_result *out)
{
	memset(out, 0, sizeof *out);
	out->addr = addr;
	int family;
	unsigned char bytes[16];
	if (addr_parse(addr, &family, bytes) != 0)
		return route_fail(out, 0, "not an IPv4 or IPv6 address");
	struct {
		struct nl_hdr h;
		struct rt_hdr r;
		struct nl_attr a;
		unsigned char dst[16];
	} req;
	size_t alen = family == AF_INET6 ? 16 : 4;
	memset(&req, 0, sizeof req);
	req.h.len = (uint32_t)(sizeof req.h + sizeof req.r + sizeof req.a + alen);
	req.h.type = RTM_GETROUTE_;
	req.h.flags = NLM_F_REQUEST_;
	req.h.seq = (uint32_t)getpid() ^ 0x5ec7;
	req.r.family = (uint8_t)family;
	req.r.dst_len = (uint8_t)(alen * 8);
	req.r.flags = RTM_F_FIB_MATCH_ | RTM_F_LOOKUP_TABLE_;
	req.a.len = (uint16_t)(sizeof req.a + alen);
	req.a.type = RTA_DST_;
	memcpy(req.dst, bytes, alen);

	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE_);
	if (fd < 0)
		return route_fail(out, errno, "netlink socket");
	struct timeval tv = {ROUTE_TIMEOUT_S, 0};
	struct nl_addr self = {.family = AF_NETLINK};
	int r = -1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
		route_fail(out, errno, "netlink timeout");
	} else if (bind(fd, (struct sockaddr *)&self, sizeof self) != 0) {
		route_fail(out, errno, "netlink bind");
	} else {
		r = talk(fd, &req.h, ROUTE_MAX_READS, take_route, &out->route, out);
		if (r == 0)
			r = route_fail(out, ENOENT, "no route");
		if (r == 1 && out->route.family == AF_INET && out->route.table == 254)
			own_table(fd, out);
	}
	close(fd);
	if (r != 1)
		return -1;
	out->found = 1;
	out->quickack = st_route_quickack(&out->route);
	st_route_spec(&out->route, 0, out->spec, sizeof out->spec);
	if (!out->quickack)
		out->fixable = st_fix_route_quickack(&out->route, out->fix, sizeof out->fix) == 0;
	return 0;
}

int route_lookup_in(int pid, const char *addr, struct route_result *out)
{
	int self = pid > 0 ? diag_enter(pid) : DIAG_SAME_NS;
	if (self < 0 && self != DIAG_SAME_NS)
		return -1;
	int found = route_lookup(addr, out) == 0 && out->found;
	diag_leave(self);
	return found ? 0 : -1;
}
