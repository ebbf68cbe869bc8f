/* Descriptors received over a UNIX socket (SCM_RIGHTS): a TCP connection is governed like
 * one accepted here; a listener or a socket not listening yet is left for accept() and
 * listen(). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

#include "tune.h"

/* A TCP connection received over a UNIX socket (SCM_RIGHTS: node's cluster module, any
 * primary that accepts for its workers) is governed like one accepted here: it came from a
 * listener, so it carries the listener's options already, but what accepted sockets do not
 * inherit (SO_PRIORITY) and quick-ack, which must be re-armed by the process that reads,
 * are this process's to do.  One TCP_INFO classifies the descriptor (only TCP answers it). */
static _Atomic int received_logged;

static void received_fd(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	memset(&ti, 0, sizeof ti);
	if (st_real.getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) {
		/* not TCP, or an MPTCP socket without TCP_INFO: left for listen() and accept() */
		int tcp = errno != ENOTSOCK && errno != EBADF && st_is_tcp_proto(fd) && st_is_tcp_socket(fd);
		if (tcp)
			atomic_store_explicit(&st_fds_received, 1, memory_order_relaxed);
		st_fd_set_other(fd, !tcp); /* (what was asked here is not asked again) */
		st_replace_entry(fd, ST_FD_UNKNOWN); /* a stale entry under its number goes */
		return;
	}
	st_fd_set_other(fd, 0);
	if (ti.tcpi_state == TCP_LISTEN || ti.tcpi_state == TCP_CLOSE) {
		/* a listener (a seamless reload hands them over) is adopted at its first accept,
		 * or is a copy of one tuned here; a socket not listening yet, at its listen() */
		atomic_store_explicit(&st_fds_received, 1, memory_order_relaxed);
		st_replace_entry(fd, ST_FD_UNKNOWN);
		return;
	}
	char addr[ST_ADDR_MAX] = "?";
	unsigned port = 0;
	int family = AF_INET, first = !atomic_load_explicit(&received_logged, memory_order_relaxed);
	if (st_has(&st_policy, ST_V_PORTS) || first || st_log_level >= ST_LOG_DEBUG)
		family = st_local_addr(fd, addr, sizeof addr, &port);
	if (st_dry_run() || (st_has(&st_policy, ST_V_PORTS) && !st_port_in(st_policy.ports, port))) {
		st_replace_entry(fd, ST_FD_UNKNOWN);
		return;
	}
	struct st_line line = {.n = 0};
	struct st_err err;
	uint64_t ce = ST_FD_CONN;
	for (int i = 0; i < ST_O_COUNT; i++) {
		int level, optname, want;
		const char *label;
		if (!(st_sockopts[i].flags & ST_O_EACH_CONN) || !st_opt_want(&st_policy, i, &want))
			continue;
		st_sockopt_for(i, family, &level, &optname, &label);
		if (st_set_int(&err, fd, level, optname, label, want) == 0)
			st_line_add(&line, " %s=%d", ST_KEY(i), want);
	}
	if (st_on(&st_policy, ST_V_QUICKACK)) {
		/* armed now, re-armed after every receive, as on an accepted connection */
		int ok = st_set_int(&err, fd, IPPROTO_TCP, TCP_QUICKACK, "TCP_QUICKACK", 1) == 0;
		if (ok)
			ce |= ST_FD_QUICKACK;
		st_line_add(&line, " quickack=%d", ok);
	}
	st_replace_entry(fd, ce);
	first = first && !atomic_exchange(&received_logged, 1);
	st_log(first && line.n ? ST_LOG_INFO : ST_LOG_DEBUG, "event=receive fd=%d addr=%s%s%s", fd,
	       addr, line.b, first ? " first=1" : "");
}

void st_received(struct msghdr *msg)
{
	int saved = errno;
	unsigned headers = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c && headers < 64;
	     c = CMSG_NXTHDR(msg, c), headers++) {
		/* the kernel writes sane headers; a recvmsg() that is not the kernel's (another
		 * preload, a kernel-bypass stack) may not: never past msg_controllen */
		size_t room = (size_t)((char *)msg->msg_control + msg->msg_controllen - (char *)c);
		if (c->cmsg_len > room)
			break;
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t k = 0; k < n && k < 253; k++) { /* SCM_MAX_FD */
			int fd;
			memcpy(&fd, CMSG_DATA(c) + k * sizeof fd, sizeof fd);
			if (fd >= 0)
				received_fd(fd);
		}
	}
	errno = saved;
}
