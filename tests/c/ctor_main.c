/* Prints what the kernel reports on the listener ctor_lib.c made in its constructor. */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
extern int ctor_fd;
int main(void)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	memset(&ti, 0, sizeof ti);
	getsockopt(ctor_fd, IPPROTO_TCP, TCP_INFO, &ti, &len);
	int nd = -1;
	len = sizeof nd;
	getsockopt(ctor_fd, IPPROTO_TCP, TCP_NODELAY, &nd, &len);
	printf("backlog=%u nodelay=%d\n", ti.tcpi_sacked, nd);
	return 0;
}
