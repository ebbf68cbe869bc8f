/* Reading TCP sockets without a descriptor: NETLINK_SOCK_DIAG dumps (inet_diag_req_v2), the
 * way ss(8) does.  For a listener the kernel reports its accept queue now (idiag_rqueue) and
 * the backlog in force (idiag_wqueue); for a connection its tcp_info and memory.  A dump sees
 * the sockets of the netlink socket's own network namespace: diag_open makes one inside the
 * target's. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "host/diag.h"
#include "host/netlink.h"
#include "host/pidinfo.h"

/* sock_diag's ABI (linux/inet_diag.h, linux/sock_diag.h), written out as netlink.h is */
struct diag_id {
	uint16_t sport, dport; /* network order */
	uint32_t src[4], dst[4];
	uint32_t ifindex;
	uint32_t cookie[2];
};
struct diag_req {
	uint8_t family, protocol, ext, pad;
	uint32_t states;
	struct diag_id id;
};
struct diag_msg {
	uint8_t family, state, timer, retrans;
	struct diag_id id;
	uint32_t expires, rqueue, wqueue, uid, inode;
};
enum { INET_DIAG_INFO_ = 2, INET_DIAG_CONG_ = 4, INET_DIAG_SKMEMINFO_ = 7,
       INET_DIAG_CGROUP_ID_ = 21, INET_DIAG_REQ_BYTECODE_ = 1,
       INET_DIAG_BC_JMP_ = 1, INET_DIAG_BC_S_EQ_ = 11, INET_DIAG_BC_CGROUP_COND_ = 13 };
/* One instruction of the kernel's filter (inet_diag_bc_op): on a match go yes bytes on, else
 * no bytes (JMP: always no); a socket is reported when the run ends exactly at the program's
 * end, dropped when it jumps 4 bytes past it.  S_EQ takes two: the second's `no` is the
 * local port.  The kernel checks that every `no` lands on an instruction reached by `yes`
 * steps, so an "or" is each test falling into a jump to the end, its `no` the next test. */
struct diag_bc_op {
	uint8_t code, yes;
	uint16_t no;
};

/* The layout above is the kernel's: a few offsets checked against linux/tcp.h's */
_Static_assert(offsetof(struct diag_tcp_info, rto) == 8, "tcp_info layout");
_Static_assert(offsetof(struct diag_tcp_info, total_retrans) == 100, "tcp_info layout");
_Static_assert(offsetof(struct diag_tcp_info, pacing_rate) == 104, "tcp_info layout");
_Static_assert(offsetof(struct diag_tcp_info, busy_time) == 168, "tcp_info layout");
_Static_assert(offsetof(struct diag_tcp_info, snd_wnd) == 228, "tcp_info layout");
_Static_assert(offsetof(struct diag_tcp_info, total_rto_time) == 244, "tcp_info layout");
_Static_assert(sizeof(struct diag_msg) == 72, "inet_diag_msg layout");
_Static_assert(sizeof(struct diag_req) == 56, "inet_diag_req_v2 layout");

#define DIAG_TIMEOUT_S 2          /* for each datagram of the kernel's answer */

long diag_interrupted;
#define DIAG_MAX_READS (1 << 20)  /* datagrams of one dump (each holds dozens of sockets) */

int diag_enter(int pid)
{
	int same = pid_same_ns(pid, "net");
	if (same < 0)
		return -errno;
	if (same)
		return DIAG_SAME_NS;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/ns/net", pid);
	int ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		return -errno;
	int self = diag_enter_fd(ns);
	close(ns);
	return self;
}

void diag_leave(int self)
{
	if (self == DIAG_SAME_NS)
		return;
	/* It is where this thread was, held open: only ENOMEM could refuse it.  A thread left in
	 * the target's namespace would read, set and report there as if it were ours: end. */
	if (setns(self, CLONE_NEWNET) != 0) {
		fprintf(stderr, "socktune: returning to its own network namespace: %s: stopped\n",
		        strerror(errno));
		_exit(70); /* (EX_SOFTWARE) */
	}
	close(self);
}

int diag_enter_fd(int netns_fd)
{
	if (netns_fd < 0)
		return DIAG_SAME_NS;
	int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	if (setns(netns_fd, CLONE_NEWNET) != 0) {
		int e = errno;
		close(self);
		return -e;
	}
	return self;
}

/* A sock_diag socket of type made where self (diag_enter's, diag_enter_fd's) says this
 * thread is now, then back: its descriptor, or -errno */
static int socket_here(int self, int type)
{
	if (self < 0 && self != DIAG_SAME_NS)
		return self;
	int fd = socket(AF_NETLINK, type | SOCK_CLOEXEC, NETLINK_SOCK_DIAG_);
	int err = fd < 0 ? errno : 0;
	diag_leave(self);
	return fd >= 0 ? fd : -err;
}

int diag_socket_in(int pid, int type)
{
	return socket_here(pid > 0 ? diag_enter(pid) : DIAG_SAME_NS, type); /* (made in the caller's) */
}

/* fd (or -errno) with the receive timeout every dump is read with */
static int with_timeout(int fd)
{
	if (fd >= 0) {
		struct timeval tv = {.tv_sec = DIAG_TIMEOUT_S};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	}
	return fd;
}

int diag_open(int pid)
{
	return with_timeout(diag_socket_in(pid, SOCK_DGRAM));
}

int diag_open_netns(int netns_fd)
{
	return with_timeout(socket_here(diag_enter_fd(netns_fd), SOCK_DGRAM));
}

void diag_addr(int family, const unsigned char *a, unsigned port, char *out, size_t n)
{
	char host[INET6_ADDRSTRLEN] = "?";
	inet_ntop(family, a, host, sizeof host);
	snprintf(out, n, family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, port);
}

int diag_listener_takes(int lfamily, const unsigned char *laddr, unsigned lport, int family,
                        const unsigned char *addr, unsigned port)
{
	static const unsigned char zero[16];
	size_t alen = lfamily == AF_INET6 ? 16 : 4;
	if (lport != port)
		return 0;
	if (lfamily == family && memcmp(laddr, addr, alen) == 0)
		return 2;
	return memcmp(laddr, zero, alen) == 0 && (lfamily == AF_INET6 || family == AF_INET);
}

int diag_parse(const void *msg, size_t len, struct diag_sock *s)
{
	const struct nl_hdr *h = msg;
	if (len < sizeof *h || h->len < sizeof *h + sizeof(struct diag_msg) || h->len > len)
		return 0;
	const struct diag_msg *m = (const void *)(h + 1);
	memset(s, 0, offsetof(struct diag_sock, ti));
	s->cong[0] = '\0';
	s->family = m->family;
	s->state = m->state;
	s->sport = ntohs(m->id.sport);
	s->dport = ntohs(m->id.dport);
	memcpy(s->src, m->id.src, 16);
	memcpy(s->dst, m->id.dst, 16);
	s->cookie = (unsigned long long)m->id.cookie[1] << 32 | m->id.cookie[0];
	s->rqueue = m->rqueue;
	s->wqueue = m->wqueue;
	s->uid = m->uid;
	s->inode = m->inode;
	s->has_mem = 0;
	memset(s->mem, 0, sizeof s->mem);
	int info = 0;
	size_t off = NL_ALIGN(sizeof *h) + NL_ALIGN(sizeof *m);
	while (off + sizeof(struct nl_attr) <= h->len) {
		const struct nl_attr *a = (const void *)((const char *)h + off);
		if (a->len < sizeof *a || off + a->len > h->len)
			break;
		const void *data = a + 1;
		size_t alen = a->len - sizeof *a;
		if (a->type == INET_DIAG_INFO_) { /* decode by length: newer kernels add fields */
			size_t take = alen < sizeof s->ti ? alen : sizeof s->ti;
			memset(&s->ti, 0, sizeof s->ti);
			memcpy(&s->ti, data, take);
			s->info_len = take;
			info = 1;
		} else if (a->type == INET_DIAG_SKMEMINFO_) {
			size_t take = alen < sizeof s->mem ? alen : sizeof s->mem;
			memset(s->mem, 0, sizeof s->mem);
			memcpy(s->mem, data, take);
			s->has_mem = 1;
		} else if (a->type == INET_DIAG_CONG_) { /* a name, NUL-terminated or not */
			size_t take = strnlen(data, alen < sizeof s->cong ? alen : sizeof s->cong - 1);
			memcpy(s->cong, data, take);
			s->cong[take] = '\0';
		} else if (a->type == INET_DIAG_CGROUP_ID_ && alen >= sizeof s->cgroup_id) {
			memcpy(&s->cgroup_id, data, sizeof s->cgroup_id); /* (sent without being asked) */
		}
		off += NL_ALIGN(a->len);
	}
	if (!info) {
		memset(&s->ti, 0, sizeof s->ti);
		s->info_len = 0;
	}
	return 1;
}

/* The kernel's filter (inet_diag bytecode) as an "or" of n tests, each [test yes, no: the
 * next test][its operand][JMP to the end]; the last one's no goes 4 past the end (dropped),
 * its yes to the end (reported).  A port test (S_EQ) takes its operand in the op's no, a
 * cgroup test (CGROUP_COND, Linux 5.10) a u64 after it.  Its length in bytes. */
#define DIAG_BC_MAX (16 * DIAG_MAX_CGROUPS)
static int or_of(unsigned char *bc, int n, const unsigned *ports, const unsigned long long *ids)
{
	int step = ports ? 12 : 16, len = step * n - 4;
	for (int k = 0, at = 0; k < n; k++, at += step) {
		struct diag_bc_op test = {ports ? INET_DIAG_BC_S_EQ_ : INET_DIAG_BC_CGROUP_COND_,
		                          (uint8_t)(step - 4), (uint16_t)step};
		memcpy(bc + at, &test, sizeof test);
		if (ports) {
			struct diag_bc_op port = {0, 0, (uint16_t)ports[k]};
			memcpy(bc + at + 4, &port, sizeof port);
		} else {
			memcpy(bc + at + 4, &ids[k], sizeof ids[k]);
		}
		if (k < n - 1) {
			struct diag_bc_op jmp = {INET_DIAG_BC_JMP_, 4, (uint16_t)(len - (at + step - 4))};
			memcpy(bc + at + step - 4, &jmp, sizeof jmp);
		}
	}
	return n > 0 ? len : 0;
}

/* One family's dump: request (with bc[bclen], the kernel's filter: it still walks the table,
 * but builds no answer for the others), then the datagrams of the answer until DONE. */
static int dump_family(int nl, int family, unsigned states, int with_info,
                       const unsigned char *bc, int bclen, diag_cb cb, void *ctx)
{
	static unsigned seq;
	struct {
		struct nl_hdr h;
		struct diag_req r;
		struct nl_attr a;
		unsigned char bc[DIAG_BC_MAX];
	} req;
	memset(&req, 0, sizeof req);
	req.h.len = offsetof(__typeof__(req), a);
	if (bclen > 0) {
		memcpy(req.bc, bc, (size_t)bclen);
		req.a.len = (uint16_t)(sizeof req.a + (size_t)bclen);
		req.a.type = INET_DIAG_REQ_BYTECODE_;
		req.h.len += req.a.len;
	}
	req.h.type = SOCK_DIAG_BY_FAMILY_;
	req.h.flags = NLM_F_REQUEST_ | NLM_F_DUMP_;
	req.h.seq = ++seq;
	req.r.family = (uint8_t)family;
	req.r.protocol = IPPROTO_TCP;
	req.r.states = states;
	if (with_info)
		req.r.ext = 1u << (INET_DIAG_SKMEMINFO_ - 1);
	if (with_info == 1)
		req.r.ext |= 1u << (INET_DIAG_INFO_ - 1) | 1u << (INET_DIAG_CONG_ - 1);
	struct nl_addr kernel = {.family = AF_NETLINK};
	if (sendto(nl, &req, req.h.len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0)
		return -errno;
	static _Alignas(8) char buf[64 * 1024];
	static struct diag_sock s; /* large (tcp_info): not on the stack */
	int count = 0;
	for (long reads = 0; reads < DIAG_MAX_READS; reads++) {
		ssize_t n = recv(nl, buf, sizeof buf, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (size_t off = 0; off + sizeof(struct nl_hdr) <= (size_t)n;) {
			const struct nl_hdr *h = (const void *)(buf + off);
			if (h->len < sizeof *h || off + h->len > (size_t)n)
				break;
			if (h->seq != req.h.seq) {
				off += NL_ALIGN(h->len);
				continue; /* an answer to an earlier request, left unread */
			}
			if (h->flags & NLM_F_DUMP_INTR_)
				diag_interrupted++; /* the table changed during the dump: not all seen */
			if (h->type == NLMSG_DONE_) {
				int err = 0; /* the dump's own status, after the last socket */
				if (h->len >= sizeof *h + sizeof err)
					memcpy(&err, h + 1, sizeof err);
				return err < 0 ? err : count;
			}
			if (h->type == NLMSG_ERROR_) {
				int err = 0;
				if (h->len >= sizeof *h + sizeof err)
					memcpy(&err, h + 1, sizeof err);
				return err ? err : -EPROTO;
			}
			if (h->type == SOCK_DIAG_BY_FAMILY_ && diag_parse(h, (size_t)n - off, &s)) {
				cb(&s, ctx);
				count++;
			}
			off += NL_ALIGN(h->len);
		}
	}
	return -EOVERFLOW;
}

static int dump_both(int nl, unsigned states, int with_info, const unsigned char *bc, int bclen,
                     diag_cb cb, void *ctx)
{
	int a = dump_family(nl, AF_INET, states, with_info, bc, bclen, cb, ctx);
	if (a < 0)
		return a;
	int b = dump_family(nl, AF_INET6, states, with_info, bc, bclen, cb, ctx);
	return b < 0 ? b : a + b;
}

int diag_dump_ports(int nl, unsigned states, int with_info, const unsigned *ports, int nports,
                    diag_cb cb, void *ctx)
{
	unsigned char bc[DIAG_BC_MAX];
	if (nports > DIAG_MAX_PORTS)
		return -EINVAL;
	return dump_both(nl, states, with_info, bc, or_of(bc, nports, ports, NULL), cb, ctx);
}

int diag_dump_cgroups(int nl, unsigned states, int with_info, const unsigned long long *ids,
                      int nids, diag_cb cb, void *ctx)
{
	unsigned char bc[DIAG_BC_MAX];
	if (nids < 1 || nids > DIAG_MAX_CGROUPS)
		return -EINVAL;
	return dump_both(nl, states, with_info, bc, or_of(bc, nids, NULL, ids), cb, ctx);
}

int diag_dump(int nl, unsigned states, int with_info, diag_cb cb, void *ctx)
{
	return diag_dump_ports(nl, states, with_info, NULL, 0, cb, ctx);
}
