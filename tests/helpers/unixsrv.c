/* unixsrv PATH [N [raw]]: a server of UNIX sockets only, as a program that never touches TCP (a
 * local daemon, a control socket): socket(AF_UNIX), bind, listen, then N times it connects
 * to itself, sends a line, accepts and reads it; a socketpair carries one byte too.  Prints
 * "UNIX ok N" when every exchange went through.
 *
 * raw: then, every UNIX socket closed, a TCP socket made by a raw system call (as io_uring's
 * IORING_OP_SOCKET makes one: no socket() call) takes the number the UNIX listener had; it
 * is bound to 127.0.0.1 port 0 and listened through libc:  TCP fd=N nodelay=N backlog=N
 * (TCP_NODELAY and the backlog in force, TCP_INFO's tcpi_sacked, read back).  It makes no getsockopt or setsockopt of
 * its own, so that a trace of it shows only what something else (a preloaded library) adds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
	prog_name = "unixsrv";
	if (argc < 2 || argc > 4 || (argc == 4 && strcmp(argv[3], "raw") != 0))
		die("usage: unixsrv PATH [N [raw]]");
	int n = argc >= 3 ? (int)num_arg("N", argv[2], 1, 1000) : 3;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(argv[1]) >= sizeof sa.sun_path)
		die("%s: path too long", argv[1]);
	strcpy(sa.sun_path, argv[1]);
	unlink(argv[1]);

	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(l, 16) != 0)
		die("listen on %s: %s", argv[1], strerror(errno));
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair: %s", strerror(errno));
	char b = 'p';
	if (write(sv[0], &b, 1) != 1 || read(sv[1], &b, 1) != 1)
		die("socketpair: no byte");

	/* the client is this process too (a UNIX connect() completes into the backlog), so
	 * that the whole run is one process's calls, in an order a trace can compare */
	for (int i = 0; i < n; i++) {
		int c = socket(AF_UNIX, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof sa) != 0 || write(c, "hi\n", 3) != 3)
			die("client %d: %s", i, strerror(errno));
		int a = accept(l, NULL, NULL);
		char buf[8];
		if (a < 0 || read(a, buf, sizeof buf) != 3)
			die("exchange %d: %s", i, strerror(errno));
		close(a);
		close(c);
	}
	close(sv[0]);
	close(sv[1]);
	close(l);
	unlink(argv[1]);
	printf("UNIX ok %d\n", n);
	if (argc == 4) {
		int t = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		if (t < 0 || bind(t, (struct sockaddr *)&in, sizeof in) != 0 || listen(t, 16) != 0)
			die("tcp listener: %s", strerror(errno));
		int nd = -1;
		socklen_t len = sizeof nd;
		struct tcp_info ti;
		socklen_t tlen = sizeof ti;
		memset(&ti, 0, sizeof ti);
		if (getsockopt(t, IPPROTO_TCP, TCP_NODELAY, &nd, &len) != 0 ||
		    getsockopt(t, IPPROTO_TCP, TCP_INFO, &ti, &tlen) != 0)
			die("getsockopt: %s", strerror(errno));
		printf("TCP fd=%d nodelay=%d backlog=%u\n", t, nd, ti.tcpi_sacked);
		close(t);
	}
	return 0;
}
