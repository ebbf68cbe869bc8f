/* cgroup v2 as the command sees it: where it is mounted (/sys/fs/cgroup on most hosts,
 * /sys/fs/cgroup/unified in the hybrid layout) and which cgroup a process is in.  The cgroup
 * mode, check and doctor share it. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "host/bpfhost.h"
#include "host/pidinfo.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* Whether this process looks like one `ip netns exec` started (which unshares the mounts
 * and mounts a fresh sysfs, with no cgroup2 below it): its network namespace is one named
 * under /run/netns (its name into name), or, where pid 1's can be read, its network and
 * mount namespaces both differ from pid 1's (name ""); 0 when it does not look so. */
static int netns_named(char *name, size_t n)
{
	struct stat self;
	if (stat("/proc/self/ns/net", &self) != 0)
		return 0;
	DIR *d = opendir("/run/netns");
	struct dirent *e;
	int found = 0;
	while (d && !found && (e = readdir(d))) {
		char path[300];
		struct stat st;
		if (e->d_name[0] == '.' || strlen(e->d_name) > 200)
			continue;
		snprintf(path, sizeof path, "/run/netns/%s", e->d_name);
		if (stat(path, &st) == 0 && st.st_dev == self.st_dev && st.st_ino == self.st_ino) {
			snprintf(name, n, "%s", e->d_name);
			found = 1;
		}
	}
	if (d)
		closedir(d);
	if (found)
		return 1;
	name[0] = '\0';
	return pid_same_ns(1, "net") == 0 && pid_same_ns(1, "mnt") == 0;
}

/* /proc/self/mountinfo: "36 25 0:31 / /sys/fs/cgroup rw,... shared:9 - cgroup2 cgroup2 rw":
 * the mount point is the 5th field, the type the first after " - ". */
int cg_v2_mount(char *out, size_t n, char *err, size_t en)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		snprintf(err, en, "no cgroup v2: /proc/self/mountinfo: %s", strerror(errno));
		return -1;
	}
	char line[4096];
	int found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		char root[1024], point[1024];
		const char *dash = strstr(line, " - ");
		if (!dash || strncmp(dash + 3, "cgroup2 ", 8) != 0)
			continue;
		if (sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) != 2 || strcmp(root, "/") != 0)
			continue;
		/* (mountinfo writes a space in a path as \040: a mount point with one is not used) */
		if (!strchr(point, '\\') && strlen(point) < n) {
			strcpy(out, point);
			found = 1;
		}
	}
	fclose(f);
	if (found)
		return 0;
	char ns[300] = "-";
	if (netns_named(ns, sizeof ns) && ns[0])
		snprintf(err, en, "no cgroup v2 mounted here: this process is in the network namespace "
		         "%s, entered with `ip netns exec`, which mounts a fresh /sys without the host's "
		         "cgroup2: run it with `nsenter --net=/run/netns/%s` instead (it keeps the "
		         "mounts)", ns, ns);
	else if (ns[0] == '\0')
		snprintf(err, en, "no cgroup v2 mounted here: this process has a network and a mount "
		         "namespace of its own (as `ip netns exec` makes, with a fresh /sys without the "
		         "host's cgroup2): enter only the network namespace, with `nsenter "
		         "--net=/run/netns/NAME` (it keeps the mounts)");
	else
		snprintf(err, en, "no cgroup v2 mounted here (a cgroup2 line in /proc/self/mountinfo): "
		         "mount it (mount -t cgroup2 none /sys/fs/cgroup), or give one with "
		         "--cgroup-path, or use socktune --attach");
	return -1;
}

int cg_pid_dir(int pid, char *out, size_t n, char *err, size_t en)
{
	char mount[1024], own[PATH_MAX], path[64];
	if (cg_v2_mount(mount, sizeof mount, err, en) != 0)
		return -1;
	int r = pid_cgroup(pid, own, sizeof own), e = errno;
	if (r != 0) {
		pid_cgroup_file(pid, path, sizeof path);
		if (r == -1)
			snprintf(err, en, "%s: %s", path, strerror(e));
		else
			snprintf(err, en, "no cgroup v2 line (0::) in %s: give one with --cgroup-path",
			         path);
		return -1;
	}
	if ((size_t)snprintf(out, n, "%s%s", mount, strcmp(own, "/") == 0 ? "" : own) >= n) {
		snprintf(err, en, "the cgroup path is too long");
		return -1;
	}
	return 0;
}

int cg_is_v2(const char *path)
{
	struct statfs s;
	return statfs(path, &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC;
}

int cg_is_root(const char *path)
{
	struct stat st;
	if (!cg_is_v2(path) || stat(path, &st) != 0)
		return 0;
	if (st.st_ino == 1)
		return 1;
	char events[4200];
	snprintf(events, sizeof events, "%s/cgroup.events", path);
	return access(events, F_OK) != 0 && errno == ENOENT;
}
