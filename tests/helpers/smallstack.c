/* smallstack: every hooked call, made from a thread whose whole stack is 16 KiB (glibc
 * keeps the thread's descriptor and TLS in it too), so a preloaded library that puts big
 * buffers on the stack crashes it.  The stack is painted first; the line at the end says how
 * much of it the thread's calls touched.
 *
 *   smallstack 4|6     prints: STACK size=16384 used=N ok=1
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "common.h"

#define STACK 16384
static int fam = AF_INET;
static int ok;

static void *calls(void *arg)
{
	(void)arg;
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(fam, 0, &ss);
	int one = 1, l = socket(fam, SOCK_STREAM, 0);
	setsockopt(l, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (l < 0 || bind(l, (struct sockaddr *)&ss, len) || listen(l, 5))
		return NULL;
	listen(l, 6); /* again: the backlog path */
	socklen_t sl = sizeof ss;
	getsockname(l, (struct sockaddr *)&ss, &sl);
	int c1 = socket(fam, SOCK_STREAM, 0), c2 = socket(fam, SOCK_STREAM, 0);
	if (connect(c1, (struct sockaddr *)&ss, sl) || connect(c2, (struct sockaddr *)&ss, sl))
		return NULL;
	/* data first: with TCP_DEFER_ACCEPT, accept() waits for it */
	if (write(c1, "abcdef", 6) != 6 || write(c2, "ab", 2) != 2)
		return NULL;
	int a1 = accept(l, NULL, NULL), a2 = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	setsockopt(a1, SOL_SOCKET, SO_RCVBUF, &one, sizeof one); /* app-override path */
	char b[8];
	struct iovec iov = {b, 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	int got = (int)read(a1, b, 1) + (int)readv(a1, &iov, 1) + (int)recv(a1, b, 1, 0) +
	          (int)recvfrom(a1, b, 1, 0, NULL, NULL) + (int)recvmsg(a1, &mh, 0) +
	          (int)read(a2, b, 2);
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	int d = dup(a1);
	dup2(a2, d);
	dup3(a1, d, O_CLOEXEC);
	close(d);
	close(sv[0]);
	close(sv[1]);
	close(c1);
	close(c2);
#ifdef __GLIBC__ /* musl 1.2.3 has no close_range() */
	close_range((unsigned)a1, (unsigned)a1, 0);
#else
	close(a1);
#endif
	close(a2);
	close(l);
	ok = got == 7;
	return NULL;
}

int main(int argc, char **argv)
{
	prog_name = "smallstack";
	fam = argc > 1 && strcmp(argv[1], "6") == 0 ? AF_INET6 : AF_INET;
	alarm(20);
	unsigned char *stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	memset(stack, 0xa5, STACK);
	pthread_attr_t at;
	pthread_t t;
	pthread_attr_init(&at);
	if (pthread_attr_setstack(&at, stack, STACK) || pthread_create(&t, &at, calls, NULL))
		die("pthread_create with a %d-byte stack", STACK);
	pthread_join(t, NULL);
	size_t untouched = 0; /* stacks grow down: the painted bytes left at the bottom */
	while (untouched < STACK && stack[untouched] == 0xa5)
		untouched++;
	printf("STACK size=%d used=%zu ok=%d\n", STACK, STACK - untouched, ok);
	return 0;
}
