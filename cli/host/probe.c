/* socktune check's probe socket: a loopback TCP socket made, tuned and read back with raw
 * system calls, past any libsocktune this command itself runs under. */
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host/probe.h"

/* Raw system calls for the probe socket: when this command itself runs under a preloaded
 * libsocktune (a wrapper nested in a wrapped script), socket, bind, listen, setsockopt and
 * close are its hooks, and would tune the probe with the outer policy. */
int probe_socket(void)
{
	int fd = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fd = (int)syscall(SYS_socket, AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	return fd;
}

void probe_close(int fd)
{
	if (fd >= 0)
		syscall(SYS_close, fd);
}

int probe_set(int fd, int level, int opt, const void *val, socklen_t len)
{
	return (int)syscall(SYS_setsockopt, fd, level, opt, val, len);
}

int probe_get(int fd, int level, int opt, void *val, socklen_t *len)
{
	return (int)syscall(SYS_getsockopt, fd, level, opt, val, len);
}

const struct st_sockops cli_raw_ops = {probe_set, probe_get};

int probe_set_int(int fd, int level, int opt, int v)
{
	return probe_set(fd, level, opt, &v, sizeof v);
}

int probe_get_int(int fd, int level, int opt, long long *out)
{
	int v = 0;
	socklen_t len = sizeof v;
	if (probe_get(fd, level, opt, &v, &len) != 0)
		return -1;
	*out = v;
	return 0;
}

/* listen(want) on a loopback socket, and the backlog the kernel keeps (TCP_INFO's
 * tcpi_sacked on a listener is sk_max_ack_backlog, after the somaxconn cut). */
int probe_backlog(long long want, long long *out)
{
	int fd = probe_socket();
	if (fd < 0)
		return -1;
	struct sockaddr_storage ss;
	socklen_t len;
	memset(&ss, 0, sizeof ss);
	long long domain = AF_INET;
	probe_get_int(fd, SOL_SOCKET, SO_DOMAIN, &domain);
	if (domain == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof *a;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof *a;
	}
	struct tcp_info ti;
	socklen_t tlen = sizeof ti;
	memset(&ti, 0, sizeof ti);
	int r = -1;
	if (syscall(SYS_bind, fd, &ss, len) == 0 &&
	    syscall(SYS_listen, fd, want > INT_MAX ? INT_MAX : (int)want) == 0 &&
	    probe_get(fd, IPPROTO_TCP, TCP_INFO, &ti, &tlen) == 0) {
		*out = ti.tcpi_sacked;
		r = 0;
	}
	probe_close(fd);
	return r;
}
