/* Who a listener serves, in names that outlive a restart: the holder's comm, and from its
 * cgroup the systemd unit (…/nginx.service), the container (docker-<64hex>.scope under
 * systemd, /docker/<64hex> under cgroupfs; containerd's cri-containerd-, cri-o's crio-,
 * podman's libpod-) and the Kubernetes pod (kubepods…pod<uid>, its dashes written as
 * underscores in a systemd slice name).  A pid changes at every restart; these do not. */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host/diag.h"
#include "host/pidinfo.h"
#include "watch/watch.h"

static int all_hex(const char *s, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (!isxdigit((unsigned char)s[k]))
			return 0;
	return n > 0;
}

/* The container id in one path segment (seg, n bytes), copied to out; 0 when there is none */
static int container_of(const char *seg, size_t n, char *out, size_t outn)
{
	static const char *const prefixes[] = {"docker-", "cri-containerd-", "crio-", "libpod-"};
	for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++) {
		size_t p = strlen(prefixes[k]);
		if (n == p + 64 + 6 && strncmp(seg, prefixes[k], p) == 0 &&
		    strncmp(seg + p + 64, ".scope", 6) == 0 && all_hex(seg + p, 64)) {
			snprintf(out, outn, "%.64s", seg + p);
			return 1;
		}
	}
	if (n == 64 && all_hex(seg, 64)) { /* cgroupfs: /docker/<id>, /kubepods/.../<id> */
		snprintf(out, outn, "%.64s", seg);
		return 1;
	}
	return 0;
}

/* A pod's uid in one segment: "pod<uid>" or "kubepods-burstable-pod<uid_>.slice" */
static int pod_of(const char *seg, size_t n, char *out, size_t outn)
{
	const char *p = NULL;
	for (size_t k = 0; k + 3 < n; k++)
		if (strncmp(seg + k, "pod", 3) == 0 && (k == 0 || seg[k - 1] == '-'))
			p = seg + k + 3;
	if (!p)
		return 0;
	size_t len = (size_t)(seg + n - p);
	if (len > 6 && strncmp(p + len - 6, ".slice", 6) == 0)
		len -= 6;
	if (len < 32 || len >= outn)
		return 0;
	for (size_t k = 0; k < len; k++) {
		char c = p[k] == '_' ? '-' : p[k];
		if (!isxdigit((unsigned char)c) && c != '-')
			return 0;
		out[k] = c;
	}
	out[len] = '\0';
	return 1;
}

void watch_ident_from_cgroup(const char *path, struct watch_ident *id)
{
	id->unit[0] = id->container[0] = id->pod[0] = '\0';
	for (const char *s = path; *s;) {
		s += strspn(s, "/");
		size_t n = strcspn(s, "/");
		if (!n)
			break;
		/* the deepest service names the unit (a service's own sub-cgroups come below it) */
		if (n > 8 && strncmp(s + n - 8, ".service", 8) == 0 && n < sizeof id->unit)
			snprintf(id->unit, sizeof id->unit, "%.*s", (int)n, s);
		if (!id->container[0])
			container_of(s, n, id->container, sizeof id->container);
		if (!id->pod[0] && memmem(s, n, "pod", 3))
			pod_of(s, n, id->pod, sizeof id->pod);
		s += n;
	}
}

/* etc/hostname inside pid's root, never outside it: the container owns every component, so
 * an absolute symlink there must resolve in its root, not in ours (openat2 RESOLVE_IN_ROOT,
 * Linux 5.6), and a FIFO or a device must neither block the watch nor be read (O_NONBLOCK,
 * a regular file only).  The first line of it, or "". */
static void hostname_in_root(int pid, char *line, size_t n)
{
	struct {
		uint64_t flags, mode, resolve;
	} how = {O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0, 0x10 | 0x02};
	/* RESOLVE_IN_ROOT 0x10, RESOLVE_NO_MAGICLINKS 0x02 (linux/openat2.h, absent from musl) */
	char path[64];
	struct stat st;
	line[0] = '\0';
	snprintf(path, sizeof path, "/proc/%d/root", pid);
	int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return;
	int fd = (int)syscall(437 /* __NR_openat2 */, root, "etc/hostname", &how, sizeof how);
	close(root);
	if (fd < 0)
		return;
	ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, line, n - 1) : -1;
	close(fd);
	line[got > 0 ? got : 0] = '\0';
	line[strcspn(line, "\n")] = '\0';
}

/* The pod's name: the first line of the /etc/hostname its container sees, when it is a
 * DNS label (RFC 1123: what a pod name is made of); "" otherwise, and "" for a process in the
 * host's UTS namespace (a hostNetwork pod: its hostname is the node's) or in one that cannot
 * be told (so nothing of the host is taken for the pod's) */
static void pod_name_of(int pid, char *out, size_t n)
{
	char line[256] = "";
	if (pid_same_ns(pid, "uts") == 0)
		hostname_in_root(pid, line, sizeof line);
	size_t len = strlen(line);
	int ok = n > 0 && len > 0 && len < n && isalnum((unsigned char)line[0]);
	for (size_t k = 0; ok && k < len; k++)
		ok = (isalnum((unsigned char)line[k]) && !isupper((unsigned char)line[k])) ||
		     line[k] == '-' || line[k] == '.';
	if (!ok)
		len = 0;
	memcpy(out, line, len);
	out[len] = '\0';
}

void watch_ident_of(int pid, struct watch_ident *id)
{
	memset(id, 0, sizeof *id);
	comm_of(pid, id->comm, sizeof id->comm);
	char path[PATH_MAX];
	pid_cgroup_service(pid, path, sizeof path);
	watch_ident_from_cgroup(path, id);
	if (id->pod[0])
		pod_name_of(pid, id->pod_name, sizeof id->pod_name);
}

int watch_cgroup_within(const char *own, const char *rel)
{
	size_t len = strlen(rel);
	while (len > 0 && rel[len - 1] == '/')
		len--; /* "/" (the root, every process) and "/a/" as "/a" */
	return strncmp(own, rel, len) == 0 && (own[len] == '\0' || own[len] == '/');
}

int watch_is_target(const struct watch *w, int pid)
{
	for (int k = 0; k < w->npids; k++)
		if (w->pids[k] == pid)
			return 1;
	char own[PATH_MAX];
	if (!w->ncgroups || pid_cgroup(pid, own, sizeof own) != 0)
		return 0;
	for (int k = 0; k < w->ncgroups; k++)
		if (watch_cgroup_within(own, w->cgroups[k]))
			return 1;
	return 0;
}
