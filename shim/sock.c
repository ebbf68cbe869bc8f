/* The library's socket helpers (tune.h): each a syscall through the real functions, and a
 * message where it can fail. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "socktune_stats.h"
#include "tune.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

/* The apply step's access to a socket: the real functions, a refusal counted. */
static int ops_set(int fd, int level, int optname, const void *val, socklen_t len)
{
	int r = st_real.setsockopt(fd, level, optname, val, len);
	if (r != 0 && st_stats)
		st_count(&st_stats->setsockopt_failures);
	return r;
}

static int ops_get(int fd, int level, int optname, void *val, socklen_t *len)
{
	return st_real.getsockopt(fd, level, optname, val, len);
}

const struct st_sockops st_ops = {ops_set, ops_get};

int st_set_int(struct st_err *e, int fd, int level, int opt, const char *label, int val)
{
	if (st_real.setsockopt(fd, level, opt, &val, sizeof val) == 0)
		return 0;
	if (st_stats)
		st_count(&st_stats->setsockopt_failures);
	snprintf(e->msg, sizeof e->msg, "setsockopt %s: %s", label, strerror(errno));
	return -1;
}

int st_get_int(int fd, int level, int opt, int *val)
{
	socklen_t len = sizeof *val;
	*val = 0;
	return st_real.getsockopt(fd, level, opt, val, &len);
}

int st_get_name(int fd, int level, int optname, char *buf, socklen_t n)
{
	memset(buf, 0, n);
	return st_real.getsockopt(fd, level, optname, buf, &n);
}

int st_format_addr(const struct sockaddr *sa, char *out, size_t n, unsigned *port)
{
	char host[INET6_ADDRSTRLEN] = "?";
	*port = 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
		*port = ntohs(a->sin_port);
		snprintf(out, n, "%s:%u", host, *port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
		*port = ntohs(a->sin6_port);
		snprintf(out, n, "[%s]:%u", host, *port);
	} else {
		snprintf(out, n, "?");
		return -1;
	}
	return 0;
}

/* Copy the caller's address without trusting the pointer: process_vm_readv() reports a
 * bad one as EFAULT where a plain read would crash the server (bind(fd, (void *)1, 16)
 * must fail with EFAULT, as it does without the library).  Returns 0 when *out holds an
 * AF_INET or AF_INET6 address of the right length. */
int st_copy_addr(const struct sockaddr *sa, socklen_t len, struct sockaddr_storage *out)
{
	if (!sa || len < sizeof(struct sockaddr_in) || len > sizeof *out)
		return -1;
	memset(out, 0, sizeof *out);
	struct iovec local = {out, len}, remote = {(void *)sa, len};
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)len) {
		static _Atomic int warned;
		if (errno != EFAULT && !atomic_exchange(&warned, 1)) /* a seccomp filter, say */
			st_log(ST_LOG_WARN,
			       "event=address-unreadable error=\"process_vm_readv: %s\" "
			       "action=passed-through note=\"bind() and connect() go on untuned\"",
			       strerror(errno));
		return -1;
	}
	return (out->ss_family == AF_INET ||
	        (out->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))) ? 0 : -1;
}

int st_local_addr(int fd, char *out, size_t n, unsigned *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	memset(&ss, 0, sizeof ss);
	getsockname(fd, (struct sockaddr *)&ss, &len);
	st_format_addr((struct sockaddr *)&ss, out, n, port);
	return ss.ss_family;
}

int st_in_scope(int domain, int type, int protocol)
{
	return (domain == AF_INET || domain == AF_INET6) && (type & 0xff) == SOCK_STREAM &&
	       (protocol == 0 || protocol == IPPROTO_TCP || protocol == IPPROTO_MPTCP);
}

/* A socket the hooks did not see being made: ask the kernel what it is. */
int st_is_tcp_socket(int fd)
{
	int domain, type, protocol;
	return st_get_int(fd, SOL_SOCKET, SO_DOMAIN, &domain) == 0 &&
	       st_get_int(fd, SOL_SOCKET, SO_TYPE, &type) == 0 &&
	       st_get_int(fd, SOL_SOCKET, SO_PROTOCOL, &protocol) == 0 && st_in_scope(domain, type, protocol);
}

/* An entry can outlive its socket: closed where no hook sees it (fclose(fdopen(fd)), a raw
 * syscall, a child made by _Fork()) and the number reused by something made without
 * socket() or accept().  Before the policy touches a socket on one of the app's own rare
 * calls (setsockopt, a second listen(), listen()), one getsockopt proves it is TCP still:
 * SO_PROTOCOL is IPPROTO_TCP (or MPTCP) on TCP sockets only (a UNIX socket says 0).  A stale
 * entry is dropped (with its record). */
int st_is_tcp_proto(int fd)
{
	int proto;
	return st_get_int(fd, SOL_SOCKET, SO_PROTOCOL, &proto) == 0 &&
	       (proto == IPPROTO_TCP || proto == IPPROTO_MPTCP);
}

int st_tcp_state(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	memset(&ti, 0, sizeof ti);
	return st_real.getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 ? ti.tcpi_state : -1;
}

unsigned long st_socket_ino(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? (unsigned long)st.st_ino : 0;
}
