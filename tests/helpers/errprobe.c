/* errprobe: makes a fixed list of socket calls, most of them failing, and prints each
 * one's result and errno, one line each ("listen_udp rc=-1 errno=EOPNOTSUPP").  Run with
 * and without the preloaded library, the outputs must be identical.  Successful calls
 * print the errno they leave behind: a wrapper must not clobber it either.  Knows nothing
 * of socktune. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "common.h"

static const char *errname(int e)
{
	switch (e) {
	case 0: return "0";
	case EBADF: return "EBADF";
	case ENOTSOCK: return "ENOTSOCK";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EINVAL: return "EINVAL";
	case EADDRINUSE: return "EADDRINUSE";
	case EAGAIN: return "EAGAIN";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case EPROTOTYPE: return "EPROTOTYPE";
	case ENOTCONN: return "ENOTCONN";
	case EFAULT: return "EFAULT";
	case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
	case EISDIR: return "EISDIR";
	case EDOM: return "EDOM (untouched)";
	default: return "other";
	}
}

/* errno is set to EDOM before each call, so a successful call that leaves it alone prints
 * "EDOM (untouched)". */
#define PROBE(name, call)                                                                    \
	do {                                                                                 \
		errno = EDOM;                                                                \
		long rc_ = (long)(call);                                                     \
		int e_ = errno;                                                              \
		printf("%-24s rc=%ld errno=%s\n", name, rc_ < 0 ? rc_ : (rc_ > 0 ? 1L : 0L), \
		       errname(e_));                                                         \
	} while (0)

static int tcp_listener(int family, struct sockaddr_storage *ss, socklen_t *len)
{
	int fd = socket(family, SOCK_STREAM, 0);
	memset(ss, 0, sizeof *ss);
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof *a;
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		*len = sizeof *a;
	}
	bind(fd, (struct sockaddr *)ss, *len);
	getsockname(fd, (struct sockaddr *)ss, len);
	return fd;
}

int main(void)
{
	prog_name = "errprobe";
	char buf[64];
	int pipefd[2];
	if (pipe(pipefd) != 0)
		die("pipe: %s", strerror(errno));
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	/* socket() */
	PROBE("socket_bad_family", socket(12345, SOCK_STREAM, 0));
	PROBE("socket_bad_type", socket(AF_INET, 999, 0));
	PROBE("socket_bad_proto", socket(AF_INET, SOCK_STREAM, IPPROTO_UDP));

	/* listen() */
	int udp = socket(AF_INET, SOCK_DGRAM, 0);
	PROBE("listen_udp", listen(udp, 5));
	PROBE("listen_pipe", listen(pipefd[0], 5));
	PROBE("listen_badfd", listen(-1, 5));
	PROBE("listen_closed", listen(1000, 5));
	int unix_stream = socket(AF_UNIX, SOCK_STREAM, 0);
	PROBE("listen_unix_unbound", listen(unix_stream, 5)); /* autobinds: succeeds */

	for (int fam = 4; fam <= 6; fam += 2) {
		int family = fam == 4 ? AF_INET : AF_INET6;
		char name[64];
		struct sockaddr_storage ss;
		socklen_t len;
		int l = tcp_listener(family, &ss, &len);
		snprintf(name, sizeof name, "v%d_listen_ok", fam);
		PROBE(name, listen(l, 5));
		snprintf(name, sizeof name, "v%d_listen_again", fam);
		PROBE(name, listen(l, 7));
		/* a second socket on the same address */
		int l2 = socket(family, SOCK_STREAM, 0);
		snprintf(name, sizeof name, "v%d_bind_in_use", fam);
		PROBE(name, bind(l2, (struct sockaddr *)&ss, len));
		/* a TCP socket never bound or listening */
		int t = socket(family, SOCK_STREAM, 0);
		snprintf(name, sizeof name, "v%d_accept_not_listening", fam);
		PROBE(name, accept(t, NULL, NULL));
		snprintf(name, sizeof name, "v%d_accept4_bad_flags", fam);
		PROBE(name, accept4(l, NULL, NULL, 0x7fff0000));
		/* nothing pending on a non-blocking listener */
		fcntl(l, F_SETFL, O_NONBLOCK);
		snprintf(name, sizeof name, "v%d_accept_eagain", fam);
		PROBE(name, accept(l, NULL, NULL));
		snprintf(name, sizeof name, "v%d_accept4_eagain", fam);
		PROBE(name, accept4(l, NULL, NULL, SOCK_CLOEXEC));
		/* a real connection, accepted: success must leave errno alone */
		int c = socket(family, SOCK_STREAM, 0);
		snprintf(name, sizeof name, "v%d_connect_ok", fam);
		PROBE(name, connect(c, (struct sockaddr *)&ss, len));
		snprintf(name, sizeof name, "v%d_listen_connected", fam);
		PROBE(name, listen(c, 5));
		fcntl(l, F_SETFL, 0);
		int a = -1;
		snprintf(name, sizeof name, "v%d_accept_ok", fam);
		PROBE(name, (a = accept(l, NULL, NULL)));
		snprintf(name, sizeof name, "v%d_recv_eagain", fam);
		PROBE(name, recv(a, buf, sizeof buf, MSG_DONTWAIT));
		snprintf(name, sizeof name, "v%d_write_ok", fam);
		PROBE(name, write(c, "x", 1));
		snprintf(name, sizeof name, "v%d_read_ok", fam);
		PROBE(name, read(a, buf, sizeof buf));
		snprintf(name, sizeof name, "v%d_recv_bad_buf", fam);
		if (write(c, "y", 1) != 1)
			die("write: %s", strerror(errno));
		PROBE(name, recv(a, (void *)1, sizeof buf, 0));
		snprintf(name, sizeof name, "v%d_close_ok", fam);
		PROBE(name, close(a));
		snprintf(name, sizeof name, "v%d_close_again", fam);
		PROBE(name, close(a));
		close(c);
		close(t);
		close(l2);
		close(l);
	}

	/* accept() and the receive calls on things that are not sockets */
	PROBE("accept_pipe", accept(pipefd[0], NULL, NULL));
	PROBE("accept4_pipe", accept4(pipefd[0], NULL, NULL, 0));
	PROBE("accept_badfd", accept(-1, NULL, NULL));
	PROBE("accept_udp", accept(udp, NULL, NULL));
	PROBE("recv_pipe", recv(pipefd[0], buf, sizeof buf, MSG_DONTWAIT));
	PROBE("recvfrom_badfd", recvfrom(-1, buf, sizeof buf, 0, NULL, NULL));
	PROBE("recvmsg_badfd", recvmsg(-1, &msg, 0));
	PROBE("readv_badfd", readv(-1, &iov, 1));
	PROBE("read_badfd", read(-1, buf, sizeof buf));
	PROBE("read_dir", read(open("/", O_RDONLY | O_DIRECTORY), buf, sizeof buf));
	PROBE("write_pipe_ok", write(pipefd[1], "z", 1));
	PROBE("read_pipe_ok", read(pipefd[0], buf, sizeof buf));
	PROBE("close_badfd", close(-1));
	PROBE("close_unknown", close(999));
#if defined(SYS_close_range) && defined(__GLIBC__) /* musl 1.2.3 has no close_range() */
	PROBE("close_range_inverted", close_range(10, 5, 0));
	PROBE("close_range_bad_flags", close_range(900, 901, 0x7fff));
	PROBE("close_range_ok", close_range(900, 901, 0));
#endif
	PROBE("close_pipe_ok", close(pipefd[0]));
	fflush(stdout);
	return 0;
}
