/* The two ends of pathemu's path (tests/helpers/pathemu.c): a named network namespace per
 * end, a TUN device in each with its addresses and routes, and the cleaner that removes both
 * namespaces whatever way the emulator ends.  Written with ioctls and libc alone (no
 * linux/ headers), so that it builds with musl too.
 *
 * A named namespace is what `ip netns add` makes: a file /run/netns/NAME on which the
 * namespace (/proc/self/ns/net) is bind-mounted, /run/netns itself a shared mount so that
 * the name is seen from other mount namespaces (ip netns exec makes one per command).  The
 * namespace lives while that mount or any process or socket in it does; removing the name
 * (unmount, unlink) is what `ip netns del` does, and what makes `ip netns list` forget it. */
#ifndef PATHEMU_NS_H
#define PATHEMU_NS_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The TUN ABI (linux/if_tun.h, absent under musl). */
#define PE_TUNSETIFF _IOW('T', 202, int)
#define PE_TUNSETOFFLOAD _IOW('T', 208, unsigned int)
#define PE_IFF_TUN 0x0001
#define PE_IFF_NO_PI 0x1000
/* SIOCSIFADDR on an AF_INET6 socket takes this (linux/ipv6.h's struct in6_ifreq). */
struct pe_in6_ifreq {
	struct in6_addr addr;
	uint32_t prefixlen;
	int ifindex;
};

#define PE_NETNS_DIR "/run/netns"

/* One end: its namespace's name, its TUN device and addresses, the other end's prefixes. */
struct pe_end {
	char ns[96];
	const char *dev;   /* the TUN device's name inside the namespace */
	const char *addr4; /* this end's address, a /24 */
	const char *peer4; /* the other end's /24, routed through the TUN device */
	const char *addr6; /* this end's address, a /64 */
	const char *peer6; /* the other end's /64 */
	int fd;            /* the TUN device: reading it takes what this end sends */
};

static char pe_err[256]; /* what went wrong last, for the caller's message */

__attribute__((format(printf, 1, 2))) static int pe_fail(const char *fmt, ...)
{
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(pe_err, sizeof pe_err, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof pe_err)
		snprintf(pe_err + n, sizeof pe_err - (size_t)n, ": %s", strerror(e));
	errno = e;
	return -1;
}

/* /run/netns, made a shared mount (bind-mounted on itself first where it is not a mount
 * point: shared propagation needs one), as iproute2 does. */
static int pe_netns_dir(void)
{
	if (mkdir(PE_NETNS_DIR, 0755) != 0 && errno != EEXIST)
		return pe_fail("mkdir %s", PE_NETNS_DIR);
	int bound = 0;
	while (mount("", PE_NETNS_DIR, "none", MS_SHARED | MS_REC, NULL) != 0) {
		if (errno != EINVAL || bound)
			return pe_fail("make %s a shared mount", PE_NETNS_DIR);
		if (mount(PE_NETNS_DIR, PE_NETNS_DIR, "none", MS_BIND | MS_REC, NULL) != 0)
			return pe_fail("bind-mount %s on itself", PE_NETNS_DIR);
		bound = 1;
	}
	return 0;
}

/* The name gone (ip netns del): 0, or -1 when a mount or the file is still there. */
static int pe_ns_remove(const char *ns)
{
	char path[160];
	snprintf(path, sizeof path, PE_NETNS_DIR "/%.95s", ns);
	if (umount2(path, MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
		return -1;
	if (unlink(path) != 0 && errno != ENOENT)
		return -1;
	return 0;
}

/* The calling process moved into a new network namespace, named ns. */
static int pe_ns_enter_new(const char *ns)
{
	char path[160];
	snprintf(path, sizeof path, PE_NETNS_DIR "/%.95s", ns);
	int fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
	if (fd < 0)
		return pe_fail("create %s", path);
	close(fd);
	if (unshare(CLONE_NEWNET) != 0)
		return pe_fail("unshare(CLONE_NEWNET)");
	if (mount("/proc/self/ns/net", path, "none", MS_BIND, NULL) != 0)
		return pe_fail("bind-mount the namespace on %s", path);
	return 0;
}

static int pe_ifreq(int s, unsigned long req, struct ifreq *ifr, const char *dev, const char *what)
{
	snprintf(ifr->ifr_name, IFNAMSIZ, "%s", dev);
	if (ioctl(s, req, ifr) != 0)
		return pe_fail("%s %s", what, dev);
	return 0;
}

static int pe_link_up(int s, const char *dev)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	if (pe_ifreq(s, SIOCGIFFLAGS, &ifr, dev, "read the flags of") != 0)
		return -1;
	ifr.ifr_flags |= IFF_UP;
	return pe_ifreq(s, SIOCSIFFLAGS, &ifr, dev, "bring up");
}

static int pe_addr4(int s, const char *dev, const char *addr, const char *peer)
{
	struct ifreq ifr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	memset(&ifr, 0, sizeof ifr);
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, addr, &sin->sin_addr);
	if (pe_ifreq(s, SIOCSIFADDR, &ifr, dev, "set the IPv4 address of") != 0)
		return -1;
	sin->sin_addr.s_addr = htonl(0xffffff00);
	if (pe_ifreq(s, SIOCSIFNETMASK, &ifr, dev, "set the netmask of") != 0)
		return -1;
	/* the other end's /24 through the TUN device (no gateway: a point-to-point link) */
	struct rtentry rt;
	memset(&rt, 0, sizeof rt);
	struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst;
	struct sockaddr_in *mask = (struct sockaddr_in *)&rt.rt_genmask;
	dst->sin_family = mask->sin_family = AF_INET;
	inet_pton(AF_INET, peer, &dst->sin_addr);
	mask->sin_addr.s_addr = htonl(0xffffff00);
	rt.rt_flags = RTF_UP;
	rt.rt_dev = (char *)dev;
	if (ioctl(s, SIOCADDRT, &rt) != 0)
		return pe_fail("route %s/24 dev %s", peer, dev);
	return 0;
}

static int pe_addr6(int s, const char *dev, const char *addr, const char *peer)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	if (pe_ifreq(s, SIOCGIFINDEX, &ifr, dev, "find the index of") != 0)
		return -1;
	struct pe_in6_ifreq a = {.prefixlen = 64, .ifindex = ifr.ifr_ifindex};
	inet_pton(AF_INET6, addr, &a.addr);
	if (ioctl(s, SIOCSIFADDR, &a) != 0)
		return pe_fail("add %s/64 to %s", addr, dev);
	struct in6_rtmsg rt;
	memset(&rt, 0, sizeof rt);
	inet_pton(AF_INET6, peer, &rt.rtmsg_dst);
	rt.rtmsg_dst_len = 64;
	rt.rtmsg_metric = 1;
	rt.rtmsg_flags = RTF_UP;
	rt.rtmsg_ifindex = ifr.ifr_ifindex;
	if (ioctl(s, SIOCADDRT, &rt) != 0)
		return pe_fail("route %s/64 dev %s", peer, dev);
	return 0;
}

/* A file under /proc/sys/net written; it is the namespace of the writer that it sets. */
static int pe_sysctl(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return pe_fail("open %s", path);
	ssize_t n = write(fd, value, strlen(value));
	close(fd);
	if (n != (ssize_t)strlen(value))
		return pe_fail("write %s", path);
	return 0;
}

/* In the (new) namespace the process is in: lo up, the TUN device with its MTU, no
 * offload, its addresses and routes.  Its fd, non-blocking, in e->fd. */
static int pe_end_setup(struct pe_end *e, int mtu)
{
	/* No link-local address on the TUN device: no router solicitations nor MLD reports
	 * cross the path, only what the tests send (set before the device exists). */
	if (mtu >= 1280 &&
	    pe_sysctl("/proc/sys/net/ipv6/conf/default/addr_gen_mode", "1\n") != 0)
		return -1;
	e->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (e->fd < 0)
		return pe_fail("open /dev/net/tun (no TUN here?)");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	ifr.ifr_flags = PE_IFF_TUN | PE_IFF_NO_PI;
	if (pe_ifreq(e->fd, PE_TUNSETIFF, &ifr, e->dev, "TUNSETIFF") != 0)
		return -1;
	/* No TSO/GSO/checksum offload on the device: the stack segments before handing a
	 * packet over, so every packet read here is at most the MTU, as on a real link, and
	 * the kernel's MSS follows from that MTU. */
	if (ioctl(e->fd, PE_TUNSETOFFLOAD, 0u) != 0)
		return pe_fail("TUNSETOFFLOAD 0 on %s", e->dev);

	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return pe_fail("socket");
	memset(&ifr, 0, sizeof ifr);
	ifr.ifr_mtu = mtu;
	struct ifreq qlen;
	memset(&qlen, 0, sizeof qlen);
	/* The device's queue of packets for the emulator to read: a tail drop there, were the
	 * emulator late on a loaded machine, would be a loss nobody asked for.  Ten thousand
	 * make a stall a delay instead (the path's own queue is --queue). */
	qlen.ifr_qlen = 10000;
	int rc = -1;
	if (pe_link_up(s, "lo") == 0 &&
	    pe_ifreq(s, SIOCSIFMTU, &ifr, e->dev, "set the MTU of") == 0 &&
	    pe_ifreq(s, SIOCSIFTXQLEN, &qlen, e->dev, "set the queue length of") == 0 &&
	    pe_link_up(s, e->dev) == 0 && pe_addr4(s, e->dev, e->addr4, e->peer4) == 0)
		rc = 0;
	close(s);
	if (rc != 0 || mtu < 1280) /* (IPv6 needs 1280) */
		return rc;
	s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return pe_fail("socket(AF_INET6)");
	rc = pe_addr6(s, e->dev, e->addr6, e->peer6);
	close(s);
	return rc;
}

/* The cleaner: a child in a session of its own (a signal to the emulator's process group
 * or terminal does not reach it), holding the read end of a pipe whose write end only the
 * emulator holds.  The kernel closes that end when the emulator ends, however it ends
 * (SIGKILL included); the cleaner then removes both names and exits.  Its pid, or -1. */
static pid_t pe_cleaner(const char *ns_a, const char *ns_b, int *hold)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		pe_fail("pipe");
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		pe_fail("fork");
		return -1;
	}
	if (pid > 0) {
		close(p[0]);
		*hold = p[1];
		return pid;
	}
	setsid();
	prctl(PR_SET_NAME, "pathemu-clean", 0, 0, 0);
	/* (the emulator's signals, a terminal's, a test's cleanup: none ends it early) */
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	close(p[1]);
	/* (nothing of its starter's held open: a reader of the emulator's stdout sees its
	 * end when the emulator ends, not when the cleaner does) */
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
	}
	/* stderr kept for its one line of trouble, unless it is a pipe that someone reads to its
	 * end (a test's $(...)): then that reader would wait for the cleaner too */
	struct stat st;
	if (null >= 0 && fstat(2, &st) == 0 && S_ISFIFO(st.st_mode))
		dup2(null, 2);
	for (int fd = 3; fd < 1024; fd++)
		if (fd != p[0])
			close(fd);
	for (;;) {
		char c;
		ssize_t r = read(p[0], &c, 1);
		if (r == 0 || (r < 0 && errno != EINTR))
			break;
	}
	int rc = 0;
	if (pe_ns_remove(ns_a) != 0 || pe_ns_remove(ns_b) != 0) {
		fprintf(stderr, "pathemu-clean: cannot remove %s or %s: %s\n", ns_a, ns_b,
		        strerror(errno));
		rc = 1;
	}
	_exit(rc);
}

/* The emulator's own ending: both names removed now, then the cleaner let go and waited
 * for (a second at most), so that nothing of it is left when the emulator has exited. */
static int pe_finish(const char *ns_a, const char *ns_b, pid_t cleaner, int hold)
{
	int rc = 0;
	if (pe_ns_remove(ns_a) != 0 || pe_ns_remove(ns_b) != 0)
		rc = pe_fail("remove %s or %s", ns_a, ns_b);
	if (hold >= 0)
		close(hold);
	for (int i = 0; cleaner > 0 && i < 1000; i++) {
		if (waitpid(cleaner, NULL, WNOHANG) != 0)
			break;
		usleep(1000);
	}
	return rc;
}

#endif
