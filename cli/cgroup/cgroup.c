/* The child cgroup the wrapper makes for the program, enters and removes (where cgroup v2 is
 * mounted and which cgroup a process is in: cli/host/cgv2.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "host/owned.h"

int cg_own_dir(char *out, size_t n, char *err, size_t en)
{
	return cg_pid_dir(0, out, n, err, en);
}

/* path without its trailing slashes ("/" stays) into out; its last component's offset */
static size_t strip_slashes(const char *path, char *out, size_t n)
{
	snprintf(out, n, "%s", path);
	size_t l = strlen(out);
	while (l > 1 && out[l - 1] == '/')
		out[--l] = '\0';
	char *slash = strrchr(out, '/');
	return slash ? (size_t)(slash - out) + 1 : 0;
}

void cg_path_norm(const char *path, char *out, size_t n)
{
	char p[4096], real[PATH_MAX];
	size_t base = strip_slashes(path, p, sizeof p);
	const char *name = p + base;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(p, "/") == 0) {
		if (!realpath(p, real))
			snprintf(real, sizeof real, "%s", p);
		snprintf(out, n, "%s", real);
		return;
	}
	char parent[4096];
	snprintf(parent, sizeof parent, "%.*s", base ? (int)base : 1, base ? p : ".");
	if (!realpath(parent, real)) {
		snprintf(out, n, "%s", p); /* (cg_make says what is wrong with its parent) */
		return;
	}
	snprintf(out, n, "%s%s%s", real, strcmp(real, "/") == 0 ? "" : "/", name);
}

int cg_make(const char *dir, int *made, char *err, size_t n)
{
	char parent[4096];
	size_t base = strip_slashes(dir, parent, sizeof parent);
	if (base > 1)
		parent[base - 1] = '\0';
	else if (base == 1)
		strcpy(parent, "/");
	else
		strcpy(parent, "."); /* (a relative name: its parent is the working directory) */
	*made = 0;
	if (!cg_is_v2(parent)) {
		snprintf(err, n, "%s: not in a cgroup v2 hierarchy (%s is no cgroup2 directory): give a "
		         "path under the cgroup2 mount (grep cgroup2 /proc/self/mountinfo)", dir, parent);
		return -1;
	}
	if (mkdir(dir, 0755) == 0) {
		*made = 1;
		return 0;
	}
	int e = errno;
	if (e == EEXIST && cg_is_v2(dir))
		return 0; /* (someone's cgroup: used, never removed) */
	snprintf(err, n, "%s: mkdir: %s%s", dir, strerror(e),
	         e == EACCES || e == EPERM ? " (run as root, or give a delegated cgroup with "
	                                     "--cgroup-path)" : "");
	return -1;
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return w == (ssize_t)strlen(text) ? 0 : -1;
}

int cg_enter(const char *dir)
{
	return write_file(dir, "cgroup.procs", "0"); /* 0: the writer itself */
}

int cg_pids(const char *dir, int *pids, int max)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int n = 0, pid;
	while (fscanf(f, "%d", &pid) == 1)
		if (n < max)
			pids[n++] = pid;
	fclose(f);
	return n;
}

int cg_remove(const char *dir, int ms, char *err, size_t n)
{
	struct timespec tick = {0, 20 * 1000 * 1000};
	int pids[16], left = 0;
	for (int waited = 0;; waited += 20) {
		while (waitpid(-1, NULL, WNOHANG) > 0) /* (ours, as the subreaper) */
			;
		if (own_rmtree(dir) == 0) /* (with the cgroups the program made in it) */
			return 0;
		if (errno != EBUSY || waited >= ms)
			break;
		nanosleep(&tick, NULL);
	}
	int e = errno;
	if (e == EBUSY && (left = cg_pids(dir, pids, 16)) > 0) {
		char list[128] = "";
		for (int k = 0; k < left && k < 16 && strlen(list) + 12 < sizeof list; k++)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", k ? " " : "", pids[k]);
		snprintf(err, n, "%s kept: processes the program left are still in it (%s): rmdir %s "
		         "once they exit", dir, list, dir);
	} else {
		snprintf(err, n, "%s: rmdir: %s", dir, strerror(e));
	}
	return -1;
}
