/* sock_diag's destroy notifications: a NETLINK_SOCK_DIAG socket bound to the multicast groups
 * SKNLGRP_INET_TCP_DESTROY and SKNLGRP_INET6_TCP_DESTROY receives, for each full TCP socket
 * the kernel frees in its network namespace, one SOCK_DIAG_BY_FAMILY message: the socket's
 * addresses and ports, its cookie, and INET_DIAG_INFO, its tcp_info at that moment (bytes
 * sent and acked, segments, retransmits, min_rtt, busy time: the connection's whole life).
 * An accepted connection carries its listener's local address and port, so a listener's
 * connections are counted at close however short they were, with nothing per connection
 * in user space but the read, and nothing at all in the server.
 *
 * The kernel sends only while someone listens (an skb and a work item per socket freed),
 * per namespace: the socket is made inside the target's, as diag_open does.  When the
 * socket's buffer is full the kernel drops notifications and the next read fails with
 * ENOBUFS: counted (the readers say it, as a metric and a line), and reading goes on. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host/diagclose.h"
#include "host/netlink.h"

enum { SKNLGRP_INET_TCP_DESTROY_ = 1, SKNLGRP_INET6_TCP_DESTROY_ = 3 };
/* The buffer asked for: at ~1.3 KB of buffer per notification (its skb's true size), 8 MB
 * holds ~6,500 of them, a read every 50 ms keeps up with ~100,000 closes a second. */
#define DIAGCLOSE_RCVBUF (8 << 20)
#ifndef SO_RCVBUFFORCE
#define SO_RCVBUFFORCE 33
#endif

int diagclose_open(int pid, int *rcvbuf)
{
	int self = pid > 0 ? diag_enter(pid) : DIAG_SAME_NS;
	if (self < 0 && self != DIAG_SAME_NS)
		return self;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_SOCK_DIAG_);
	int err = fd < 0 ? errno : 0;
	if (diag_leave(self) != 0) {
		err = errno;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	if (fd < 0)
		return -err;
	/* past net.core.rmem_max where this process may (CAP_NET_ADMIN), else up to it */
	int want = DIAGCLOSE_RCVBUF, got = 0;
	socklen_t gl = sizeof got;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof want) != 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
	if (rcvbuf)
		*rcvbuf = getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &gl) == 0 ? got : 0;
	struct nl_addr a = {.family = AF_NETLINK,
	                    .groups = 1u << (SKNLGRP_INET_TCP_DESTROY_ - 1) |
	                              1u << (SKNLGRP_INET6_TCP_DESTROY_ - 1)};
	if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

long diagclose_parse(const void *buf, size_t len, diag_cb cb, void *ctx,
                     struct diagclose_count *n)
{
	static struct diag_sock s; /* (large: tcp_info) */
	long given = 0;
	const unsigned char *p = buf;
	for (size_t off = 0; len - off >= sizeof(struct nl_hdr);) {
		struct nl_hdr h;
		memcpy(&h, p + off, sizeof h);
		if (h.len < sizeof h || h.len > len - off) {
			n->malformed++; /* (a length that lies: the rest of the datagram is not read) */
			break;
		}
		n->messages++;
		if (h.type == SOCK_DIAG_BY_FAMILY_ && diag_parse(p + off, h.len, &s)) {
			n->sockets++;
			given++;
			cb(&s, ctx);
		} else {
			n->malformed++;
		}
		size_t step = NL_ALIGN(h.len);
		if (step >= len - off)
			break;
		off += step;
	}
	return given;
}

long diagclose_read(int fd, int max_reads, diag_cb cb, void *ctx, struct diagclose_count *n)
{
	/* a notification is ~400 bytes; the kernel sends one per datagram */
	static _Alignas(8) unsigned char buf[16384];
	long given = 0;
	for (int k = 0; k < max_reads; k++) {
		ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) { /* dropped while the buffer was full: said, then on */
				n->overruns++;
				continue;
			}
			return errno == EAGAIN || errno == EWOULDBLOCK ? given : -errno;
		}
		given += diagclose_parse(buf, (size_t)r, cb, ctx, n);
	}
	return given;
}
