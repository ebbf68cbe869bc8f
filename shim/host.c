/* This host's limits, read from /proc/sys.  Raw syscalls, not libc's open/read/close:
 * inside the library those names are our own hooks, and the limits are read from inside
 * them.  The command links this file too (socktune check). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"
#include "socktune_stats.h"

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

/* A TcpExt counter of this network namespace, from /proc/net/netstat: a line of names
 * ("TcpExt: SyncookiesSent ... ListenOverflows ...") followed by a line of values. */
long long st_netstat(const char *name)
{
	char buf[16384];
	long fd = syscall(SYS_openat, AT_FDCWD, "/proc/net/netstat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	long n = 0, r;
	while (n < (long)sizeof buf - 1 && (r = syscall(SYS_read, fd, buf + n, sizeof buf - 1 - n)) > 0)
		n += r;
	syscall(SYS_close, fd);
	buf[n] = '\0';

	char *names = strstr(buf, "TcpExt:");
	char *values = names ? strstr(names + 1, "TcpExt:") : NULL;
	if (!values)
		return -1;
	size_t want = strlen(name);
	char *np = names + 7, *vp = values + 7;
	while (np < values) {
		while (*np == ' ')
			np++;
		while (*vp == ' ')
			vp++;
		size_t len = strcspn(np, " \n");
		if (len == 0 || *vp == '\n' || *vp == '\0')
			return -1;
		if (len == want && strncmp(np, name, len) == 0)
			return strtoll(vp, NULL, 10);
		np += len;
		vp += strcspn(vp, " \n");
	}
	return -1;
}
