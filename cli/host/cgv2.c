/* cgroup v2 as the command sees it: where it is mounted (/sys/fs/cgroup on most hosts,
 * /sys/fs/cgroup/unified in the hybrid layout) and which cgroup a process is in.  The cgroup
 * mode, check and doctor share it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>

#include "bpfhost.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

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
	if (!found)
		snprintf(err, en, "no cgroup v2 mounted here (a cgroup2 line in /proc/self/mountinfo): "
		         "mount it (mount -t cgroup2 none /sys/fs/cgroup), or give one with "
		         "--cgroup-path, or use socktune --attach");
	return found ? 0 : -1;
}

int cg_pid_dir(int pid, char *out, size_t n, char *err, size_t en)
{
	char mount[1024], path[64];
	if (cg_v2_mount(mount, sizeof mount, err, en) != 0)
		return -1;
	if (pid > 0)
		snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
	else
		snprintf(path, sizeof path, "/proc/self/cgroup");
	FILE *f = fopen(path, "re");
	char line[4096], own[4096] = "";
	int e = errno;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(own, sizeof own, "%s", line + 3);
		}
	if (f)
		fclose(f);
	if (!own[0]) {
		if (!f)
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
