/* A process's sockets without ptrace access to it (itertune.h).  The kernel's ptrace read
 * check guards /proc/PID/fd's links and /proc/PID/ns/net (a non-dumpable process, another
 * user's, one that holds capabilities we lack: CAP_SYS_PTRACE), not /proc/PID/status, stat,
 * cgroup, nor /proc/PID/net/tcp (measured on 6.18).  sock_diag names no process: it gives a
 * socket's inode, its owner's uid and the cgroup v2 it was made in (INET_DIAG_CGROUP_ID: the
 * directory's inode; an accepted socket is its listener's), so a socket is tied to a process
 * only where that cgroup holds nothing but the process and its descendants: then a socket
 * made there, by one of their uids, is theirs.  The root cgroup, or a cgroup shared with
 * another process, ties nothing, and is said.  The namespace is found the same way: the
 * socket inodes /proc/PID/net/tcp lists are looked for in ours and in each /run/netns file
 * (where ip netns and container runtimes keep pods' namespaces), which this process may open
 * without ptrace. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/bpfhost.h"
#include "host/diag.h"
#include "host/itertune.h"
#include "host/pidinfo.h"

#define RUN_NETNS "/run/netns"

int pid_fds_readable(int pid)
{
	char path[64], link[64];
	snprintf(path, sizeof path, "/proc/%d/fd", pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	int rc = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		if (readlinkat(dirfd(d), e->d_name, link, sizeof link) < 0 && errno != ENOENT)
			rc = -errno; /* (ENOENT: that descriptor closed meanwhile) */
		break;
	}
	closedir(d);
	return rc;
}

/* pid's fsuid (the uid its new sockets get), from /proc/PID/status; -1 */
static long long fsuid_of(int pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	FILE *f = fopen(path, "re");
	long long uid = -1;
	unsigned r, e, s, fs;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Uid: %u %u %u %u", &r, &e, &s, &fs) == 4)
			uid = fs;
	if (f)
		fclose(f);
	return uid;
}

/* Whether q is pid or one of its descendants (its parents walked up, a bounded number) */
static int below(int q, int pid)
{
	for (int depth = 0; q > 1 && depth < 64; depth++) {
		if (q == pid)
			return 1;
		q = ppid_of(q);
	}
	return q == pid;
}

int pid_tie(int pid, struct pid_tie *t, char *why, size_t n)
{
	char rel[PATH_MAX], mount[1024], err[200];
	memset(t, 0, sizeof *t);
	t->pid = pid;
	int r = pid_cgroup(pid, rel, sizeof rel);
	if (r == -1) {
		snprintf(why, n, "no such process (/proc/%d/cgroup: %s)", pid, strerror(errno));
		return -1;
	}
	if (r != 0 || cg_v2_mount(mount, sizeof mount, err, sizeof err) != 0) {
		snprintf(why, n, "its cgroup v2 is not known (no \"0::\" line in /proc/%d/cgroup, or "
		         "no cgroup2 mount), and sock_diag ties a socket to nothing else", pid);
		return -1;
	}
	if (strncmp(rel, "/..", 3) == 0) {
		snprintf(why, n, "its cgroup %s is outside this process's cgroup namespace", rel);
		return -1;
	}
	if ((size_t)snprintf(t->cgroup, sizeof t->cgroup, "%s%s", mount,
	                     strcmp(rel, "/") == 0 ? "" : rel) >= sizeof t->cgroup) {
		snprintf(why, n, "its cgroup's path is too long");
		return -1;
	}
	struct stat st;
	if (stat(t->cgroup, &st) != 0) {
		snprintf(why, n, "its cgroup %s: %s", t->cgroup, strerror(errno));
		return -1;
	}
	if (cg_is_root(t->cgroup)) {
		snprintf(why, n, "it is in the root cgroup %s, which holds every process of the host "
		         "that is in no cgroup of its own: the cgroup of a socket (the one thing "
		         "sock_diag says of its maker, with its uid) cannot tell pid %d's sockets from "
		         "any other process's", t->cgroup, pid);
		return -1;
	}
	t->cgroup_id = (unsigned long long)st.st_ino;
	char procs[1100];
	snprintf(procs, sizeof procs, "%s/cgroup.procs", t->cgroup);
	FILE *f = fopen(procs, "re");
	if (!f) {
		snprintf(why, n, "%s: %s", procs, strerror(errno));
		return -1;
	}
	int q, other = 0;
	while (fscanf(f, "%d", &q) == 1) {
		t->procs++;
		if (!below(q, pid)) {
			other = q;
			break;
		}
		long long uid = fsuid_of(q);
		if (uid >= 0 && !pid_tie_uid(t, (unsigned)uid) && t->nuid < PID_TIE_UIDS)
			t->uid[t->nuid++] = (unsigned)uid;
	}
	fclose(f);
	if (other) {
		char comm[32];
		comm_of(other, comm, sizeof comm);
		snprintf(why, n, "its cgroup %s also holds pid %d (%s), which is neither pid %d nor "
		         "one of its descendants: a socket made there could be either's", t->cgroup,
		         other, comm, pid);
		return -1;
	}
	if (!t->nuid) {
		snprintf(why, n, "no process of its cgroup %s could be read (gone?)", t->cgroup);
		return -1;
	}
	return 0;
}

/* ---- the namespace ---- */

#define MAX_INODES 256
struct inodes {
	unsigned long long v[MAX_INODES];
	int n, hit;
};

static void want_inodes(struct inodes *in, int pid)
{
	static const char *const files[] = {"tcp", "tcp6"};
	for (int k = 0; k < 2; k++) {
		char path[64], line[512];
		snprintf(path, sizeof path, "/proc/%d/net/%s", pid, files[k]);
		FILE *f = fopen(path, "re");
		for (long lines = 0; f && lines < 100000 && in->n < MAX_INODES &&
		                     fgets(line, sizeof line, f); lines++) {
			unsigned long long ino;
			if (sscanf(line, " %*u: %*s %*s %*x %*x:%*x %*x:%*x %*x %*u %*d %llu", &ino) == 1 && ino)
				in->v[in->n++] = ino;
		}
		if (f)
			fclose(f);
	}
}

static void on_any(const struct diag_sock *s, void *ctx)
{
	struct inodes *in = ctx;
	for (int k = 0; k < in->n && !in->hit; k++)
		in->hit = s->inode == in->v[k];
}

/* Whether the namespace of netns_fd (-1: ours) holds one of the sockets in in */
static int holds(int netns_fd, struct inodes *in)
{
	int nl = diag_open_netns(netns_fd);
	if (nl < 0)
		return 0;
	in->hit = 0;
	diag_dump(nl, ~0u, 0, on_any, in);
	close(nl);
	return in->hit;
}

/* The first namespace of RUN_NETNS that match takes: *fd (open) and name set, 0; or -1 */
static int run_netns_find(int (*match)(int ns, void *arg), void *arg, int *fd, char *name,
                          size_t nn)
{
	char path[PATH_MAX];
	DIR *d = opendir(RUN_NETNS);
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", RUN_NETNS, e->d_name);
		int ns = open(path, O_RDONLY | O_CLOEXEC);
		if (ns < 0)
			continue;
		if (match(ns, arg)) {
			closedir(d);
			*fd = ns;
			snprintf(name, nn, "%s", path);
			return 0;
		}
		close(ns);
	}
	if (d)
		closedir(d);
	return -1;
}

static int match_holds(int ns, void *arg)
{
	return holds(ns, arg);
}

/* ns is the namespace of inode *arg: that inode on nsfs (the device of every namespace file,
 * ours included), not a file of that number elsewhere (/run is a tmpfs anyone with write
 * access there fills) */
static int match_ino(int ns, void *arg)
{
	struct stat st, self;
	return fstat(ns, &st) == 0 && stat("/proc/self/ns/net", &self) == 0 &&
	       st.st_dev == self.st_dev && (unsigned long long)st.st_ino == *(unsigned long long *)arg;
}

static int same_as_ours(int fd)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && stat("/proc/self/ns/net", &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

int pid_netns(int pid, int *fd, char *name, size_t nn, char *why, size_t wn)
{
	char path[PATH_MAX];
	*fd = -1;
	snprintf(path, sizeof path, "/proc/%d/ns/net", pid);
	int ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns >= 0) {
		if (same_as_ours(ns)) {
			close(ns);
			snprintf(name, nn, "this process's");
		} else {
			*fd = ns;
			snprintf(name, nn, "%s", path);
		}
		return 0;
	}
	int refused = errno;
	static struct inodes in;
	in.n = 0;
	want_inodes(&in, pid);
	if (!in.n) {
		snprintf(why, wn, "its network namespace cannot be opened (%s: %s) and /proc/%d/net/tcp "
		         "lists no socket to find it by", path, strerror(refused), pid);
		return -1;
	}
	if (holds(-1, &in)) {
		snprintf(name, nn, "this process's");
		return 0;
	}
	if (run_netns_find(match_holds, &in, fd, name, nn) == 0)
		return 0;
	snprintf(why, wn, "its network namespace is neither this process's nor one in %s (%s: %s: it "
	         "needs ptrace access, CAP_SYS_PTRACE)", RUN_NETNS, path, strerror(refused));
	return -1;
}

int netns_by_ino(unsigned long long ino, int *fd, char *name, size_t nn, char *why, size_t wn)
{
	char path[PATH_MAX];
	struct stat st;
	*fd = -1;
	if (stat("/proc/self/ns/net", &st) == 0 && (unsigned long long)st.st_ino == ino) {
		snprintf(name, nn, "this process's");
		return 0;
	}
	if (run_netns_find(match_ino, &ino, fd, name, nn) == 0)
		return 0;
	DIR *d = opendir("/proc");
	for (struct dirent *e; d && (e = readdir(d));) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/ns/net", pid);
		if (stat(path, &st) != 0 || (unsigned long long)st.st_ino != ino)
			continue;
		int ns = open(path, O_RDONLY | O_CLOEXEC);
		if (ns >= 0) {
			closedir(d);
			*fd = ns;
			snprintf(name, nn, "%s", path);
			return 0;
		}
	}
	if (d)
		closedir(d);
	snprintf(why, wn, "network namespace %llu is not this process's, not one in %s, and no "
	         "process in it this process may read (/proc/PID/ns/net: CAP_SYS_PTRACE)", ino,
	         RUN_NETNS);
	return -1;
}
