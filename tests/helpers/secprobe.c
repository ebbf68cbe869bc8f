/* secprobe: reports whether it runs in secure-execution mode (AT_SECURE), which object
 * answers for listen() (libc, or a preloaded library), and the TCP_NODELAY of a listener it
 * makes.  It knows nothing of socktune.  Output: one line
 *   SECURE secure=0|1 listen_from=/path/of/object nodelay=0|1 uid=N euid=N */
#include <dlfcn.h>
#include <sys/auxv.h>

#include "common.h"

int main(void)
{
	prog_name = "secprobe";
	Dl_info info;
	void *f = dlsym(RTLD_DEFAULT, "listen");
	const char *from = f && dladdr(f, &info) && info.dli_fname ? info.dli_fname : "?";
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage ss;
	socklen_t len = parse_addr("127.0.0.1", "0", &ss);
	int nodelay = -1;
	socklen_t l = sizeof nodelay;
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 5) != 0 ||
	    getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &l) != 0)
		die("listener: %s", strerror(errno));
	printf("SECURE secure=%lu listen_from=%s nodelay=%d uid=%ld euid=%ld\n", getauxval(AT_SECURE),
	       from, nodelay, (long)getuid(), (long)geteuid());
	return 0;
}
