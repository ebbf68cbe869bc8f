/* TCP sockets as the kernel frees them: sock_diag's destroy notifications (diagclose.c).
 * What doctor and watch read to see every connection of a listener, however short its life
 * (a periodic dump misses one that lives 50 ms).  Internal to cli/. */
#ifndef SOCKTUNE_DIAGCLOSE_H
#define SOCKTUNE_DIAGCLOSE_H

#include <stddef.h>

#include "host/diag.h"

/* What the reads saw, summed over them */
struct diagclose_count {
	unsigned long long messages;  /* messages read (sockets freed, and any other) */
	unsigned long long sockets;   /* TCP sockets freed, given to the callback */
	unsigned long long overruns;  /* times the kernel found the buffer full (ENOBUFS) and
	                               * dropped notifications: one or more lost each time */
	unsigned long long malformed; /* messages cut short or of another type, skipped */
};

/* A NETLINK_SOCK_DIAG socket in pid's network namespace (0: ours) that receives one
 * notification per TCP socket freed there (IPv4 and IPv6), non-blocking, its receive
 * buffer made as large as this process may (*rcvbuf: what the kernel gave); the fd, or
 * -errno. */
int diagclose_open(int pid, int *rcvbuf);

/* Every notification queued on fd now, at most max_reads datagrams: each TCP socket freed
 * to cb (tcp_info as the kernel had it at the end: decode by length), counted in n.  The
 * number of sockets given, or -errno when the socket failed (not EAGAIN: nothing queued,
 * nor ENOBUFS: counted, and the reads go on). */
long diagclose_read(int fd, int max_reads, diag_cb cb, void *ctx, struct diagclose_count *n);

/* One datagram's messages (len bytes at buf, 4-byte aligned), each socket freed to cb, counted
 * in n: what diagclose_read does with each, pure.  Hostile input (lengths that lie, cut
 * messages, attributes past their message) is counted malformed, never read past len. */
long diagclose_parse(const void *buf, size_t len, diag_cb cb, void *ctx,
                     struct diagclose_count *n);

#endif
