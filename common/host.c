/* This host's limits, read from /proc/sys.  Raw syscalls, not libc's open/read/close:
 * inside the library those names are our own hooks, and the limits are read from inside
 * them.  The command links this file too (socktune check). */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "socktune_host.h"

int st_sysctl_str(const char *name, char *buf, size_t n)
{
	char path[128] = "/proc/sys/";
	size_t o = strlen(path);
	for (const char *c = name; *c && o + 1 < sizeof path; c++)
		path[o++] = *c == '.' ? '/' : *c;
	path[o] = '\0';

	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || n == 0)
		return -1;
	long r = syscall(SYS_read, fd, buf, n - 1);
	syscall(SYS_close, fd);
	if (r < 0)
		return -1;
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' '))
		r--;
	buf[r] = '\0';
	for (char *c = buf; *c; c++)
		if (*c == '\t')
			*c = ' ';
	return 0;
}

long long st_sysctl_num(const char *name, long long dflt)
{
	char buf[64];
	if (st_sysctl_str(name, buf, sizeof buf) != 0)
		return dflt;
	char *end;
	long long v = strtoll(buf, &end, 10);
	return end == buf ? dflt : v;
}

/* Whether port lies in a "8080,9000-9010" list (ip_local_reserved_ports' format). */
static int in_list(const char *s, unsigned port)
{
	while (*s) {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;
		if (end == s)
			return 0;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		if (port >= a && port <= b)
			return 1;
		s = end + strspn(end, ", ");
	}
	return 0;
}

/* The range the kernel picks from for bind(port 0), connect() and listen() on an unbound
 * socket.  A server's own port is outside it (or reserved from it): a port in it is
 * taken by outgoing connections at random.  The range is read once per process (listen()
 * may run 10,000 times in a server that reloads); a reserved list too long for the buffer
 * counts as holding the port (the conservative answer: not ephemeral). */
int st_port_ephemeral(unsigned port)
{
	static _Atomic long range = -1; /* lo << 16 | hi, 0 when unreadable */
	long r = atomic_load_explicit(&range, memory_order_relaxed);
	if (r < 0) {
		char buf[64], *end;
		r = 0;
		if (st_sysctl_str("net.ipv4.ip_local_port_range", buf, sizeof buf) == 0) {
			unsigned long lo = strtoul(buf, &end, 10), hi = strtoul(end, NULL, 10);
			if (end != buf && lo <= hi && hi < 65536)
				r = (long)(lo << 16 | hi);
		}
		atomic_store_explicit(&range, r, memory_order_relaxed);
	}
	if (!r || port < (unsigned long)r >> 16 || port > ((unsigned long)r & 0xffff))
		return 0;
	char reserved[512];
	if (st_sysctl_str("net.ipv4.ip_local_reserved_ports", reserved, sizeof reserved) != 0)
		return 1;
	return strlen(reserved) < sizeof reserved - 1 && !in_list(reserved, port);
}

/* A counter from a netstat or snmp file: a line of names after a prefix ("TcpExt:
 * SyncookiesSent ... ListenOverflows ...") followed by a line of values.  Parsed as a stream
 * through a small buffer, a token at a time: the file is ~5 KiB and grows with each kernel,
 * and this runs on whatever stack the app's thread has.  -2 when the file cannot be opened. */
long long st_proc_counter(const char *path, const char *prefix, const char *name)
{
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -2;
	char buf[256], tok[64];
	size_t tl = 0, want = strlen(name);
	int overlong = 0, col = 0, want_col = -1;
	enum { OTHER, NAMES, VALUES } line = OTHER;
	int names_seen = 0, done = 0;
	long long found = -1;
	long r;
	while (!done && (r = syscall(SYS_read, fd, buf, sizeof buf)) > 0) {
		for (long i = 0; i < r && !done; i++) {
			char c = buf[i];
			if (c != ' ' && c != '\n') {
				if (tl < sizeof tok - 1)
					tok[tl++] = c;
				else
					overlong = 1;
				continue;
			}
			if (tl > 0) { /* a whole token */
				tok[tl] = '\0';
				if (col == 0) {
					line = strcmp(tok, prefix) != 0 ? OTHER : names_seen ? VALUES : NAMES;
				} else if (line == NAMES && !overlong && tl == want &&
				           memcmp(tok, name, want) == 0) {
					want_col = col;
				} else if (line == VALUES && col == want_col) {
					char *end;
					long long v = strtoll(tok, &end, 10);
					found = end != tok && *end == '\0' ? v : -1;
					done = 1;
				}
				col++;
				tl = 0;
				overlong = 0;
			}
			if (c == '\n') {
				if (line == NAMES) {
					names_seen = 1;
					done = want_col < 0; /* no such counter */
				} else if (line == VALUES) {
					done = 1;
				}
				line = OTHER;
				col = 0;
			}
		}
	}
	syscall(SYS_close, fd);
	return found;
}

/* A TcpExt counter of the calling thread's network namespace.  /proc/thread-self first:
 * once the main thread has exited (pthread_exit from main while others run on),
 * /proc/self/net, which /proc/net points to, is gone. */
long long st_netstat(const char *name)
{
	long long v = st_proc_counter("/proc/thread-self/net/netstat", "TcpExt:", name);
	return v != -2 ? v
	       : (v = st_proc_counter("/proc/net/netstat", "TcpExt:", name)) == -2 ? -1 : v;
}

/* A congestion control algorithm not in net.ipv4.tcp_available_congestion_control may be a
 * module the kernel loads on first use (request_module("tcp_NAME"), for a caller with
 * CAP_NET_ADMIN): 1 when its file is where modprobe finds the kernel's own, 0 when not (or
 * there is no module tree at all: then nothing can be loaded). */
int st_congestion_module(const char *name)
{
	static const char *const ext[] = {"", ".xz", ".zst", ".gz"};
	struct utsname u;
	if (syscall(SYS_uname, &u) != 0)
		return 0;
	for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
		char path[sizeof u.release + 96];
		int w = snprintf(path, sizeof path, "/lib/modules/%s/kernel/net/ipv4/tcp_%s.ko%s",
		                 u.release, name, ext[i]);
		if (w > 0 && (size_t)w < sizeof path &&
		    syscall(SYS_faccessat, AT_FDCWD, path, F_OK, 0) == 0)
			return 1;
	}
	return 0;
}

/* capget(2)'s ABI (linux/capability.h), written out: musl's include path has no linux/
 * headers.  Version 3 (Linux 2.6.26): two 32-bit words of each set. */
struct cap_header {
	uint32_t version;
	int pid;
};
struct cap_data {
	uint32_t effective, permitted, inheritable;
};
#define CAP_VERSION_3 0x20080522

int st_cap_effective(int cap)
{
	struct cap_header hdr = {.version = CAP_VERSION_3, .pid = 0};
	struct cap_data data[2];
	if (cap < 0 || cap >= 64 || syscall(SYS_capget, &hdr, data) != 0)
		return -1;
	return (int)(data[cap / 32].effective >> (cap % 32) & 1);
}
