/* passthru: calls every function libsocktune hooks with bad arguments, and reads every
 * option of sockets the library must leave alone, printing one line per call.  It knows
 * nothing of socktune: a test runs it with and without the preloaded library and compares
 * the two outputs, which must be identical.
 *
 *   passthru calls   return value and errno of each hooked call on bad arguments
 *   passthru opts    AF_UNIX stream/dgram/seqpacket, UDP v4/v6, raw: getsockopt of every
 *                    option the policy governs, after socket(), bind(), listen()/connect(),
 *                    accept() and the app's own setsockopt()
 *
 * Descriptor numbers are printed as "fd" (the library may hold a log file), except where the
 * call names the number (dup2, dup3).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/ip.h>
#include <signal.h>
#include <sys/uio.h>
#include <sys/un.h>

#include "common.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC 4
#endif

static int close_range_(unsigned a, unsigned b, int f)
{
	extern int close_range(unsigned, unsigned, int) __attribute__((weak));
	if (!close_range) {
		errno = ENOSYS;
		return -1;
	}
	return close_range(a, b, f);
}

/* Bad pointers and counts the compiler cannot see through (it would refuse them). */
static void *volatile bad_ptr = (void *)1;
static volatile int minus_one = -1;

/* AddressSanitizer's own interceptors read some pointers before the real call (accept4's
 * length), so under ASan (and valgrind) the bad-pointer calls are left out, the same way in
 * both runs. */
#if defined(__SANITIZE_ADDRESS__)
#define BAD_POINTERS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BAD_POINTERS 0
#endif
#endif
#ifndef BAD_POINTERS
#define BAD_POINTERS 1
#endif

static const char *ename(int e)
{
	switch (e) {
	case 0: return "0";
	case EBADF: return "EBADF";
	case ENOTSOCK: return "ENOTSOCK";
	case EINVAL: return "EINVAL";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EAGAIN: return "EAGAIN";
	case EFAULT: return "EFAULT";
	case ENOTCONN: return "ENOTCONN";
	case ECONNREFUSED: return "ECONNREFUSED";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case ENOPROTOOPT: return "ENOPROTOOPT";
	case ENOENT: return "ENOENT";
	case EISCONN: return "EISCONN";
	case EADDRINUSE: return "EADDRINUSE";
	case EPERM: return "EPERM";
	case ENOSYS: return "ENOSYS";
	case EMFILE: return "EMFILE";
	case EDESTADDRREQ: return "EDESTADDRREQ";
	case EALREADY: return "EALREADY";
	case EINPROGRESS: return "EINPROGRESS";
	default: {
		static char b[16];
		snprintf(b, sizeof b, "errno%d", e);
		return b;
	}
	}
}

/* One line: NAME ret=R errno=E.  Returned descriptors print as "fd". */
static void show(const char *name, long r, int is_fd)
{
	int e = errno;
	if (is_fd && r >= 0)
		printf("%-40s ret=fd errno=-\n", name);
	else
		printf("%-40s ret=%ld errno=%s\n", name, r, r < 0 ? ename(e) : "-");
}

/* Each call runs in a child of its own, so a crash (a hook reading a bad pointer that the
 * kernel would have refused with EFAULT) shows as one "crash" line and the rest still run.
 * CALL_HERE runs in this process, for the calls whose effect the next ones depend on. */
#include <sys/wait.h>
static pid_t call_fork(void)
{
	fflush(stdout);
	pid_t p = fork();
	if (p < 0)
		die("fork: %s", strerror(errno));
	return p;
}

static void call_wait(const char *name, pid_t p)
{
	int st;
	if (waitpid(p, &st, 0) == p && WIFSIGNALED(st))
		printf("%-40s crash signal=%d\n", name, WTERMSIG(st));
}

#define CALL_HERE(name, expr, is_fd) \
	do { \
		errno = 0; \
		long r_ = (long)(expr); \
		show(name, r_, is_fd); \
		if (is_fd && r_ >= 0) \
			close((int)r_); \
	} while (0)
#define CALL_(name, expr, is_fd) \
	do { \
		pid_t p_ = call_fork(); \
		if (p_ == 0) { \
			CALL_HERE(name, expr, is_fd); \
			fflush(stdout); \
			_exit(0); \
		} \
		call_wait(name, p_); \
	} while (0)
#define CALL(name, expr) CALL_(name, expr, 0)
/* memcheck reports them as errors (make valgrind sets ST_SANITIZER=valgrind) */
static int bad_pointers(void)
{
	const char *s = getenv("ST_SANITIZER");
	return BAD_POINTERS && !(s && strcmp(s, "valgrind") == 0);
}
#define CALL_BAD(name, expr) \
	do { \
		if (bad_pointers()) \
			CALL_(name, expr, 0); \
		else \
			printf("%-40s skipped (sanitizer)\n", name); \
	} while (0)
#define CALLFD(name, expr) CALL_(name, expr, 1)

static struct sockaddr_in lo4(unsigned port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static int tcp_listener(struct sockaddr_in *a, int flags)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	*a = lo4(0);
	socklen_t len = sizeof *a;
	if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof *a) != 0 || listen(fd, 8) != 0 ||
	    getsockname(fd, (struct sockaddr *)a, &len) != 0)
		die("listener: %s", strerror(errno));
	return fd;
}

static void calls(void)
{
	char buf[64];
	int one = 1, zero = 0, big = 1 << 20;
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	int file = open("/dev/null", O_RDWR | O_CLOEXEC);
	int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in la;
	int lst = tcp_listener(&la, 0);
	int nbl = tcp_listener(&la, SOCK_NONBLOCK);
	struct sockaddr_in a = lo4(0);
	socklen_t alen = sizeof a;

	/* socket */
	CALLFD("socket bad-type", socket(AF_INET, 999, 0));
	CALLFD("socket bad-family", socket(9999, SOCK_STREAM, 0));
	CALLFD("socket bad-protocol", socket(AF_INET, SOCK_STREAM, 12345));
	CALLFD("socket stream-udp-protocol", socket(AF_INET, SOCK_STREAM, IPPROTO_UDP));
	CALLFD("socket bad-flags", socket(AF_INET, SOCK_STREAM | 0x40000000, 0));
	/* bind */
	CALL("bind ebadf", bind(-1, (struct sockaddr *)&a, sizeof a));
	CALL("bind notsock", bind(file, (struct sockaddr *)&a, sizeof a));
	CALL("bind short-len", bind(tcp, (struct sockaddr *)&a, 1));
	CALL("bind null", bind(tcp, NULL, sizeof a));
	CALL_BAD("bind efault", bind(tcp, (struct sockaddr *)bad_ptr, sizeof a));
	CALL("bind family-mismatch", bind(tcp, (struct sockaddr *)&(struct sockaddr_in6){.sin6_family = AF_INET6}, sizeof(struct sockaddr_in6)));
	CALL("bind in-use", bind(tcp, (struct sockaddr *)&la, sizeof la));
	CALL("bind twice", bind(lst, (struct sockaddr *)&a, sizeof a));
	/* listen */
	CALL("listen ebadf", listen(-1, 5));
	CALL("listen notsock", listen(file, 5));
	CALL("listen udp", listen(udp, 5));
	CALL("listen huge-fd", listen(1 << 20, 5));
	/* connect */
	CALL("connect ebadf", connect(-1, (struct sockaddr *)&la, sizeof la));
	CALL("connect notsock", connect(file, (struct sockaddr *)&la, sizeof la));
	CALL("connect short-len", connect(tcp, (struct sockaddr *)&la, 1));
	CALL_BAD("connect efault", connect(tcp, (struct sockaddr *)bad_ptr, sizeof la));
	CALL("connect listener", connect(lst, (struct sockaddr *)&la, sizeof la));
	{
		/* a bound, not listening port: refused */
		int b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in ba = lo4(0);
		socklen_t bl = sizeof ba;
		bind(b, (struct sockaddr *)&ba, sizeof ba);
		getsockname(b, (struct sockaddr *)&ba, &bl);
		int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CALL("connect refused", connect(c, (struct sockaddr *)&ba, sizeof ba));
		close(c);
		close(b);
	}
	/* setsockopt: plain errors, then governed options on a tuned listener */
	CALL("setsockopt ebadf", setsockopt(-1, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
	CALL("setsockopt notsock", setsockopt(file, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
	CALL_BAD("setsockopt efault", setsockopt(tcp, SOL_SOCKET, SO_RCVBUF, bad_ptr, sizeof one));
	CALL("setsockopt null", setsockopt(tcp, SOL_SOCKET, SO_RCVBUF, NULL, sizeof one));
	CALL("setsockopt short", setsockopt(tcp, SOL_SOCKET, SO_RCVBUF, &one, 1));
	CALL("setsockopt noprotoopt", setsockopt(tcp, IPPROTO_TCP, 9999, &one, sizeof one));
	CALL("setsockopt bad-level", setsockopt(tcp, 9999, 1, &one, sizeof one));
	CALL("setsockopt udp-nodelay", setsockopt(udp, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
	CALL_BAD("setsockopt listener nodelay-efault",
	     setsockopt(lst, IPPROTO_TCP, TCP_NODELAY, bad_ptr, sizeof one));
	CALL("setsockopt listener nodelay-short", setsockopt(lst, IPPROTO_TCP, TCP_NODELAY, &one, 2));
	CALL("setsockopt listener rcvbuf-null", setsockopt(lst, SOL_SOCKET, SO_RCVBUF, NULL, 4));
	CALL("setsockopt listener congestion-len0",
	     setsockopt(lst, IPPROTO_TCP, TCP_CONGESTION, "", 0));
	CALL("setsockopt listener rcvbuf-ok", setsockopt(lst, SOL_SOCKET, SO_RCVBUF, &big, sizeof big));
	/* values the kernel refuses on a governed option: the app must see the refusal */
	CALL("setsockopt listener keepidle-0", setsockopt(lst, IPPROTO_TCP, TCP_KEEPIDLE, &zero, sizeof zero));
	CALL("setsockopt listener keepcnt-200",
	     setsockopt(lst, IPPROTO_TCP, TCP_KEEPCNT, &(int){200}, sizeof(int)));
	CALL_BAD("setsockopt listener tos-efault", setsockopt(lst, IPPROTO_IP, IP_TOS, bad_ptr, 4));
	CALL("setsockopt listener congestion-nope",
	     setsockopt(lst, IPPROTO_TCP, TCP_CONGESTION, "nope-cc", 7));
	CALL("setsockopt listener user-timeout-neg",
	     setsockopt(lst, IPPROTO_TCP, TCP_USER_TIMEOUT, &(int){-1}, sizeof(int)));
	CALL("setsockopt listener rto-max-999", /* TCP_RTO_MAX_MS (44, Linux 6.15): 1000..120000 */
	     setsockopt(lst, IPPROTO_TCP, 44, &(int){999}, sizeof(int)));
	/* accept, accept4 */
	CALLFD("accept ebadf", accept(-1, NULL, NULL));
	CALLFD("accept notsock", accept(file, NULL, NULL));
	CALLFD("accept not-listening", accept(tcp, NULL, NULL));
	CALLFD("accept udp", accept(udp, NULL, NULL));
	CALLFD("accept4 bad-flags", accept4(lst, NULL, NULL, 0x12345));
	CALLFD("accept nonblock-empty", accept(nbl, NULL, NULL));
	CALLFD("accept4 nonblock-empty", accept4(nbl, NULL, NULL, SOCK_CLOEXEC));
	CALLFD("accept4 nonblock-empty-len", accept4(nbl, (struct sockaddr *)&a, &alen, 0));
	CALL_BAD("accept4 efault-len", accept4(nbl, (struct sockaddr *)&a, (socklen_t *)bad_ptr, 0));
	{
		/* a pending connection, accepted into a bad address buffer */
		int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		connect(c, (struct sockaddr *)&la, sizeof la);
		ssize_t w = write(c, "x", 1);
		(void)w;
		wait_fd(nbl, POLLIN, now_us() + 2000000);
		CALL_BAD("accept4 efault-addr", accept4(nbl, (struct sockaddr *)bad_ptr, &alen, 0));
		close(c);
	}
	/* receive calls, on a tuned connection too */
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in lla;
	int l2 = tcp_listener(&lla, 0);
	connect(c, (struct sockaddr *)&lla, sizeof lla);
	ssize_t w = write(c, "hello", 5);
	(void)w;
	int conn = accept4(l2, NULL, NULL, SOCK_CLOEXEC);
	fcntl(conn, F_SETFL, O_NONBLOCK);
	wait_fd(conn, POLLIN, now_us() + 2000000);
	CALL("read ebadf", read(-1, buf, sizeof buf));
	CALL("read listener", read(lst, buf, sizeof buf));
	CALL_BAD("read efault", read(conn, bad_ptr, sizeof buf));
	CALL("readv ebadf", readv(-1, &iov, 1));
	CALL_BAD("readv efault-iov", readv(conn, bad_ptr, 1));
	CALL_BAD("readv bad-count", readv(conn, &iov, minus_one));
	CALL("recv ebadf", recv(-1, buf, sizeof buf, 0));
	CALL("recv notsock", recv(file, buf, sizeof buf, 0));
	CALL("recv oob-none", recv(conn, buf, sizeof buf, MSG_OOB));
	CALL("recvfrom ebadf", recvfrom(-1, buf, sizeof buf, 0, NULL, NULL));
	CALL_BAD("recvfrom efault", recvfrom(conn, bad_ptr, sizeof buf, 0, NULL, NULL));
	CALL("recvmsg ebadf", recvmsg(-1, &msg, 0));
	CALL_BAD("recvmsg efault", recvmsg(conn, bad_ptr, 0));
	CALL_HERE("recv data", recv(conn, buf, 5, 0), 0);
	CALL("read nonblock-empty", read(conn, buf, sizeof buf));
	CALL("recv nonblock-empty", recv(conn, buf, sizeof buf, 0));
	CALL("recvmsg nonblock-empty", recvmsg(conn, &msg, 0));
	CALL("recvfrom udp-empty", recvfrom(udp, buf, sizeof buf, MSG_DONTWAIT, NULL, NULL));
	/* the app's setsockopt on a tuned connection, with bad arguments */
	CALL_BAD("setsockopt conn nodelay-efault", setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, bad_ptr, 4));
	CALL("setsockopt conn keepidle-0", setsockopt(conn, IPPROTO_TCP, TCP_KEEPIDLE, &zero, 4));
	/* dup2, dup3, close, close_range */
	CALL("dup2 ebadf", dup2(-1, 200));
	CALL("dup2 negative-new", dup2(file, -1));
	CALL("dup2 same", dup2(file, file) == file);
	CALL("dup2 beyond-limit", dup2(file, 1 << 30));
	CALL("dup3 same", dup3(file, file, 0));
	CALL("dup3 bad-flags", dup3(file, 200, 0x1234));
	CALL_HERE("dup2 onto-listener", dup2(udp, 201) == 201 ? dup2(201, lst) == lst : -1, 0);
	CALL_HERE("listen replaced-by-udp", listen(lst, 5), 0);
	CALL("close ebadf", close(-1));
	CALL("close huge", close(1 << 20));
	CALL_HERE("close 201", close(201), 0);
	CALL_HERE("close 201-again", close(201), 0);
	CALL("close_range reversed", close_range_(10, 5, 0));
	CALL("close_range bad-flags", close_range_(300, 400, 0x80));
	CALL("close_range cloexec", close_range_(300, 400, CLOSE_RANGE_CLOEXEC));
	CALL("close_range empty", close_range_(900, 1000, 0));
	/* connect with the client policy on a non-blocking socket */
	{
		int nb = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		CALL("connect nonblock", connect(nb, (struct sockaddr *)&lla, sizeof lla) == 0 ? 0 : (errno == EINPROGRESS ? 0 : -1));
		wait_fd(nb, POLLOUT, now_us() + 2000000);
		CALL("connect again", connect(nb, (struct sockaddr *)&lla, sizeof lla));
		close(nb);
	}
	close(conn);
	close(c);
	close(l2);
	close(lst);
	close(nbl);
	close(tcp);
	close(udp);
	close(file);
}

/* ---- sockets outside the policy: every governed option read back ---- */

struct o {
	const char *name;
	int level, opt;
};
static const struct o opts[] = {
	{"rcvbuf", SOL_SOCKET, SO_RCVBUF},
	{"sndbuf", SOL_SOCKET, SO_SNDBUF},
	{"keepalive", SOL_SOCKET, SO_KEEPALIVE},
	{"priority", SOL_SOCKET, SO_PRIORITY},
	{"mark", SOL_SOCKET, SO_MARK},
	{"reuseport", SOL_SOCKET, SO_REUSEPORT},
	{"rcvlowat", SOL_SOCKET, SO_RCVLOWAT},
	{"tos", IPPROTO_IP, IP_TOS},
	{"tclass", IPPROTO_IPV6, IPV6_TCLASS},
	{"nodelay", IPPROTO_TCP, TCP_NODELAY},
	{"keepidle", IPPROTO_TCP, TCP_KEEPIDLE},
	{"user_timeout", IPPROTO_TCP, TCP_USER_TIMEOUT},
	{"notsent_lowat", IPPROTO_TCP, TCP_NOTSENT_LOWAT},
	{"defer_accept", IPPROTO_TCP, TCP_DEFER_ACCEPT},
	{"quickack", IPPROTO_TCP, TCP_QUICKACK},
};

static void dump(const char *kind, const char *step, int fd)
{
	printf("%s %s", kind, step);
	for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
		int v = -1;
		socklen_t len = sizeof v;
		errno = 0;
		if (getsockopt(fd, opts[i].level, opts[i].opt, &v, &len) != 0)
			printf(" %s=%s", opts[i].name, ename(errno));
		else
			printf(" %s=%d", opts[i].name, v);
	}
	printf("\n");
}

/* The app's own settings on an untouched socket must land as they do without the library. */
static void app_sets(const char *kind, int fd)
{
	int small = 4096, on = 1, tos = 0x10;
	errno = 0;
	printf("%s app-set rcvbuf=%d", kind, setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small));
	printf(" sndbuf=%d", setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small));
	printf(" keepalive=%d", setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on));
	printf(" priority=%d", setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &on, sizeof on));
	printf(" tos=%d", setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos));
	printf(" errno=%s\n", ename(errno));
	dump(kind, "after-app", fd);
}

static void unix_kind(const char *kind, int type, const char *dir)
{
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof a.sun_path, "%s/%s.sock", dir, kind);
	unlink(a.sun_path);
	int s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	dump(kind, "socket", s);
	bind(s, (struct sockaddr *)&a, sizeof a);
	dump(kind, "bind", s);
	if (type != SOCK_DGRAM) {
		printf("%s listen=%d\n", kind, listen(s, 5));
		dump(kind, "listen", s);
		int c = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
		printf("%s connect=%d\n", kind, connect(c, (struct sockaddr *)&a, sizeof a));
		dump(kind, "client", c);
		int acc = accept4(s, NULL, NULL, SOCK_CLOEXEC);
		printf("%s accept=%s\n", kind, acc >= 0 ? "fd" : ename(errno));
		if (acc >= 0) {
			dump(kind, "accepted", acc);
			ssize_t w = write(c, "ab", 2);
			char b[4];
			printf("%s wrote=%zd read=%zd\n", kind, w, read(acc, b, sizeof b));
			app_sets(kind, acc);
			close(acc);
		}
		close(c);
	} else {
		app_sets(kind, s);
	}
	close(s);
	unlink(a.sun_path);
}

static void inet_kind(const char *kind, int family, int type, int proto)
{
	int s = socket(family, type | SOCK_CLOEXEC, proto);
	if (s < 0) {
		printf("%s socket=%s\n", kind, ename(errno));
		return;
	}
	dump(kind, "socket", s);
	struct sockaddr_storage ss;
	socklen_t len = parse_addr(family == AF_INET ? "127.0.0.1" : "::1", "0", &ss);
	printf("%s bind=%d\n", kind, bind(s, (struct sockaddr *)&ss, len));
	dump(kind, "bind", s);
	printf("%s listen=%s\n", kind, listen(s, 5) == 0 ? "0" : ename(errno));
	len = sizeof ss;
	getsockname(s, (struct sockaddr *)&ss, &len);
	int c = socket(family, type | SOCK_CLOEXEC, proto);
	printf("%s connect=%d\n", kind, connect(c, (struct sockaddr *)&ss, len));
	dump(kind, "connected", c);
	ssize_t w = send(c, "ping", 4, 0);
	char b[64];
	ssize_t r = recv(s, b, sizeof b, MSG_DONTWAIT);
	printf("%s sent=%zd received=%s\n", kind, w, r > 0 ? "yes" : "no");
	app_sets(kind, s);
	close(c);
	close(s);
}

static void opts_mode(const char *dir)
{
	unix_kind("unix-stream", SOCK_STREAM, dir);
	unix_kind("unix-seqpacket", SOCK_SEQPACKET, dir);
	unix_kind("unix-dgram", SOCK_DGRAM, dir);
	inet_kind("udp4", AF_INET, SOCK_DGRAM, 0);
	inet_kind("udp6", AF_INET6, SOCK_DGRAM, 0);
	inet_kind("udplite4", AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE);
	inet_kind("raw4", AF_INET, SOCK_RAW, IPPROTO_ICMP);
	inet_kind("raw6", AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
	inet_kind("icmp4-dgram", AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
	inet_kind("sctp4", AF_INET, SOCK_STREAM, IPPROTO_SCTP);
}

int main(int argc, char **argv)
{
	prog_name = "passthru";
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 2 && strcmp(argv[1], "calls") == 0)
		calls();
	else if (argc >= 3 && strcmp(argv[1], "opts") == 0)
		opts_mode(argv[2]);
	else
		die("usage: passthru calls | passthru opts DIR");
	return 0;
}
