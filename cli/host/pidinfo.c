/* pidinfo.h: a process's cgroup and namespaces, as /proc shows them to this process.
 * /proc/PID/cgroup has a line per hierarchy, "ID:CONTROLLERS:PATH": "0::PATH" for cgroup
 * v2, "4:memory:PATH" or "1:name=systemd:PATH" for a v1 one.  A PATH may hold ':' but no
 * newline (mkdir and rename of a cgroup with one fail, EINVAL), so a line is a hierarchy. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "host/pidinfo.h"

const char *pid_cgroup_file(int pid, char *buf, size_t n)
{
	if (pid > 0)
		snprintf(buf, n, "/proc/%d/cgroup", pid);
	else
		snprintf(buf, n, "/proc/self/cgroup");
	return buf;
}

/* The next line of f into line, without its newline; a longer one than line holds (none the
 * kernel writes) is passed over whole, never read as two.  0 at the end. */
static int next_line(FILE *f, char *line, int n)
{
	while (fgets(line, n, f)) {
		size_t len = strcspn(line, "\n");
		if (line[len] == '\n' || feof(f)) {
			line[len] = '\0';
			return 1;
		}
		int c;
		while ((c = getc(f)) != EOF && c != '\n')
			;
	}
	return 0;
}

/* path into out when it is one and fits: 1, else 0 (out unchanged) */
static int take(char *out, size_t n, const char *path)
{
	size_t len = strlen(path);
	if (len == 0 || len >= n)
		return 0;
	memcpy(out, path, len + 1);
	return 1;
}

/* The line of f that pid_cgroup (service 0) or pid_cgroup_service (1) gives, its path into
 * out ("" when none): 0, or -2 when there is none. */
static int cgroup_line(FILE *f, int service, char *out, size_t n)
{
	char line[PATH_MAX + 256]; /* (the path, its hierarchy's id and controllers) */
	int found = 0;
	out[0] = '\0';
	while (!found && next_line(f, line, (int)sizeof line)) {
		char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;
		if (!path)
			continue;
		path++;
		int v2 = strncmp(line, "0::", 3) == 0;
		if (!service)
			found = v2 && take(out, n, path);
		else if (v2 && strcmp(path, "/") != 0)
			found = take(out, n, path);
		else if (strncmp(ctl + 1, "name=systemd:", 13) == 0 || !out[0])
			take(out, n, path);
	}
	return out[0] ? 0 : -2;
}

static int read_cgroup(int pid, int service, char *out, size_t n)
{
	char path[64];
	FILE *f = fopen(pid_cgroup_file(pid, path, sizeof path), "re");
	if (!f) {
		out[0] = '\0';
		return -1;
	}
	int r = cgroup_line(f, service, out, n);
	fclose(f);
	return r;
}

int pid_cgroup(int pid, char *out, size_t n)
{
	return read_cgroup(pid, 0, out, n);
}

void pid_cgroup_service(int pid, char *out, size_t n)
{
	read_cgroup(pid, 1, out, n);
}

int pid_same_ns(int pid, const char *ns)
{
	char path[64];
	struct stat mine, theirs;
	snprintf(path, sizeof path, "/proc/%d/ns/%s", pid, ns);
	if (stat(path, &theirs) != 0)
		return -1;
	snprintf(path, sizeof path, "/proc/self/ns/%s", ns);
	return stat(path, &mine) == 0 && mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev;
}
