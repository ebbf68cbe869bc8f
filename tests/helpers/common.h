/* Shared by the test helpers (tserver, kaclient): plain programs that know nothing of
 * socktune.  Small, header-only: clocks, bounded I/O with deadlines, address parsing. */
#ifndef ST_TEST_COMMON_H
#define ST_TEST_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *prog_name = "helper";

__attribute__((format(printf, 1, 2), noreturn, unused)) static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* close_range() through libc, where the library's hook sees it (glibc 2.34 and later); musl
 * has no such function, only the system call (the tests that need the hook run on glibc). */
#ifdef __GLIBC__
#define libc_close_range close_range
#else
#include <sys/syscall.h>
static inline int libc_close_range(unsigned first, unsigned last, int flags)
{
	return (int)syscall(SYS_close_range, first, last, flags);
}
#endif

static inline long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A whole number argument in [lo, hi], or die naming the option. */
static inline long long num_arg(const char *opt, const char *s, long long lo, long long hi)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		die("%s: \"%s\" is not a number in %lld..%lld", opt, s, lo, hi);
	return v;
}

/* Milliseconds left until deadline (us), at least 0; for poll(). */
static inline int ms_left(long long deadline)
{
	long long left = deadline - now_us();
	if (left <= 0)
		return 0;
	return (int)((left + 999) / 1000);
}

/* Wait until fd is ready for events or the deadline passes.  1 ready, 0 timeout, -1 error. */
static inline int wait_fd(int fd, short events, long long deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, ms_left(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r;
		return 1;
	}
}

/* Read exactly n bytes (blocking fd, deadline-bounded).  Returns n, 0 on EOF before any
 * byte, -1 on error, timeout or EOF in the middle. */
static inline ssize_t read_full(int fd, void *buf, size_t n, long long deadline)
{
	size_t got = 0;
	while (got < n) {
		if (wait_fd(fd, POLLIN, deadline) != 1)
			return -1;
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return got == 0 ? 0 : -1;
		got += (size_t)r;
	}
	return (ssize_t)n;
}

static inline int write_full(int fd, const void *buf, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(fd, (const char *)buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

/* A numeric host (127.0.0.1, ::1) and port into ss. */
static inline socklen_t parse_addr(const char *host, const char *port, struct sockaddr_storage *ss)
{
	struct addrinfo hints, *res;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	int r = getaddrinfo(host, port, &hints, &res);
	if (r != 0)
		die("address %s port %s: %s", host, port, gai_strerror(r));
	socklen_t len = res->ai_addrlen;
	memcpy(ss, res->ai_addr, len);
	freeaddrinfo(res);
	return len;
}

static inline void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* An int socket option as the kernel reports it, or -1. */
static inline int sockopt_int(int fd, int level, int opt)
{
	int v = -1;
	socklen_t len = sizeof v;
	if (getsockopt(fd, level, opt, &v, &len) != 0)
		return -1;
	return v;
}

/* The loopback address of family (AF_INET: 127.0.0.1, AF_INET6: ::1) and port into ss. */
static inline socklen_t loopback_addr(int family, unsigned port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof *ss);
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		a->sin6_port = htons((uint16_t)port);
		return sizeof *a;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a->sin_port = htons((uint16_t)port);
	return sizeof *a;
}

/* One byte over the UNIX socket sock, carrying fd (SCM_RIGHTS). */
static inline void send_fd(int sock, int fd)
{
	char byte = 'f';
	struct iovec iov = {&byte, 1};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	memset(&ctl, 0, sizeof ctl);
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
	                   .msg_controllen = sizeof ctl.b};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(sock, &m, 0) != 1)
		die("sendmsg: %s", strerror(errno));
}

/* One message: the descriptor it carried (SCM_RIGHTS), or -1 for a plain one; -2 at EOF. */
static inline int recv_fd(int sock)
{
	char byte;
	struct iovec iov = {&byte, 1};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
	                   .msg_controllen = sizeof ctl.b};
	ssize_t r;
	do
		r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return -2;
	int fd = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

/* The local port fd is bound to. */
static inline unsigned local_port(int fd)
{
	struct sockaddr_storage me;
	socklen_t len = sizeof me;
	memset(&me, 0, sizeof me);
	if (getsockname(fd, (struct sockaddr *)&me, &len) != 0)
		return 0;
	return ntohs(me.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&me)->sin6_port
	                                      : ((struct sockaddr_in *)&me)->sin_port);
}

/* tcpi_sacked on a listening socket is the backlog in force (after the somaxconn cut). */
static inline long listen_backlog(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	memset(&ti, 0, sizeof ti);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
		return -1;
	return (long)ti.tcpi_sacked;
}

static inline int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

/* The p-th percentile (0..100) of n sorted values, nearest rank; 0 for none. */
static inline long long percentile(const long long *sorted, size_t n, int p)
{
	if (n == 0)
		return 0;
	size_t rank = (size_t)((p * n + 99) / 100);
	if (rank == 0)
		rank = 1;
	return sorted[rank - 1];
}

#endif
