/* Outgoing connections (SOCKTUNE_CLIENT): the options that suit a client set before the
 * real connect(), so that the buffers decide the window scale offered in the SYN. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "tune.h"

static _Atomic uint64_t client_ports_seen[ST_PORTS_WORDS];

int st_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	uint64_t e = st_fd_get(fd);
	struct sockaddr_storage ss;
	int saved = errno;
	if (!st_on(&st_policy, ST_V_CLIENT) || ST_FD_KIND(e) != ST_FD_TCP ||
	    st_copy_addr(addr, len, &ss) != 0) {
		errno = saved;
		return st_real.connect(fd, addr, len);
	}
	char text[ST_ADDR_MAX];
	unsigned port;
	if (st_format_addr((struct sockaddr *)&ss, text, sizeof text, &port) != 0 ||
	    (st_has(&st_policy, ST_V_CLIENT_PORTS) && !st_port_in(st_policy.client_ports, port))) {
		st_fd_cas(fd, &e, ST_FD_IGNORED);
		errno = saved;
		return st_real.connect(fd, addr, len);
	}
	st_log_flush_deferred();

	/* Before connect(): the buffers decide the window scale offered in the SYN. */
	struct st_line line = {.n = 0};
	int eff[ST_O_COUNT];
	st_tune(fd, ss.ss_family, ST_FD_CLIENT, ST_O_CLIENT, 0, e, &line, eff);
	int quickack = st_on(&st_policy, ST_V_QUICKACK) && !st_dry_run();
	if (quickack) {
		struct st_err err;
		st_set_int(&err, fd, IPPROTO_TCP, TCP_QUICKACK, "TCP_QUICKACK", 1);
		st_line_add(&line, " quickack=1");
	}
	st_fd_cas(fd, &e, ST_FD_CLIENT | (quickack ? ST_FD_QUICKACK : 0) |
	                      (st_app_wins() ? e & APP_BITS : 0));

	uint64_t bit = 1ull << (port % 64);
	int first = !(atomic_fetch_or(&client_ports_seen[port / 64], bit) & bit);
	st_log(first ? ST_LOG_INFO : ST_LOG_DEBUG, "event=client fd=%d peer=%s%s%s%s", fd, text,
	       line.b, first ? " first_for_port=1" : "", st_dry_run() ? " dry_run=1" : "");
	errno = saved;
	return st_real.connect(fd, addr, len);
}
