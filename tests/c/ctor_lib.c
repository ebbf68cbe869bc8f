/* A library whose constructor makes and listens on a TCP socket: run before libsocktune's own
 * constructor (t_constructor.sh), its calls reach the hooks before the library's init. */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
int ctor_fd = -1;
__attribute__((constructor)) static void early(void)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ctor_fd = socket(AF_INET, SOCK_STREAM, 0);
	bind(ctor_fd, (struct sockaddr *)&a, sizeof a);
	listen(ctor_fd, 5);
}
