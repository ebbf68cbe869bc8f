/* The network namespaces watch follows: those of the PID targets, or every one a process of
 * the node is in (/proc/PID/ns/net, a stat each), found again every few seconds.  Each gets
 * one sock_diag socket made inside it (diag_open: setns, CAP_SYS_ADMIN for another's), kept
 * while a process is in it: the socket alone would keep a namespace alive after its last
 * process, so it is closed when no process is left there.  Its counters are read from
 * /proc/PID/net/netstat (TcpExt) and /proc/PID/net/snmp (Tcp) of a process in it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "socktune_host.h"
#include "host/diag.h"
#include "watch/watch.h"

static struct watch_ns *find(struct watch *w, unsigned long long ino)
{
	for (int k = 0; k < w->nns; k++)
		if (w->ns[k].ino == ino)
			return &w->ns[k];
	return NULL;
}

/* Whether a /run/netns file's namespace is to be marked seen: new, or known by file alone
 * (one a process of which was seen keeps that process) */
static int find_or_new(struct watch *w, unsigned long long ino)
{
	const struct watch_ns *ns = find(w, ino);
	return !ns || !ns->seen;
}

int watch_ns_diag(const struct watch_ns *ns)
{
	if (ns->pid > 0 || !ns->file[0])
		return diag_open(ns->pid);
	int fd = open(ns->file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int nl = diag_open_netns(fd);
	close(fd);
	return nl;
}

/* Namespace ino, where pid is (0: ours; -1: none known, found by file), seen by this scan:
 * added when new */
static void seen(struct watch *w, unsigned long long ino, int pid, unsigned long long mine,
                 const char *file)
{
	struct watch_ns *ns = find(w, ino);
	if (ns) {
		if (!ns->seen && pid >= 0) { /* (the one it had may have exited) */
			ns->pid = ino == mine ? 0 : pid;
			ns->file[0] = '\0';
		} else if (!ns->seen) { /* (no process of it readable now: its file) */
			ns->pid = 0;
			snprintf(ns->file, sizeof ns->file, "%s", file);
		}
		ns->seen = 1;
		return;
	}
	if (w->nns == WATCH_MAX_NS) {
		w->ns_not_followed++;
		if (!w->ns_cap_said++)
			fprintf(stderr, "socktune: watch: more than %d network namespaces: those past "
			        "them are not watched (socktune_watch_namespaces_not_followed)\n",
			        WATCH_MAX_NS);
		return;
	}
	ns = &w->ns[w->nns++];
	memset(ns, 0, sizeof *ns);
	ns->ino = ino;
	ns->pid = ino == mine || pid < 0 ? 0 : pid;
	if (pid < 0)
		snprintf(ns->file, sizeof ns->file, "%s", file);
	ns->seen = 1;
	ns->overflows = ns->drops = ns->passive_opens = -1;
	ns->w_start[0] = ns->w_start[1] = ns->w_start[2] = -1; /* (its first window is not judged) */
	ns->somaxconn = -2;
	ns->nl = watch_ns_diag(ns);
	if (ns->nl < 0) {
		if (ns->nl != -ENOENT && ns->nl != -ESRCH)
			fprintf(stderr, "socktune: watch: the network namespace %llu (of pid %d) is not "
			        "readable: %s (CAP_SYS_ADMIN)\n", ino, pid, strerror(-ns->nl));
		ns->nl = -1;
	}
}

static unsigned long long caps_of(int pid, const char *which)
{
	char path[64], line[256];
	unsigned long long v = 0;
	snprintf(path, sizeof path, pid > 0 ? "/proc/%d/status" : "/proc/self/status", pid);
	FILE *f = fopen(path, "re");
	size_t n = strlen(which);
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, which, n) == 0 && line[n] == ':')
			v = strtoull(line + n + 1, NULL, 16);
	if (f)
		fclose(f);
	return v;
}

/* Why /proc/PID/ns/net of pid is refused to this process (the kernel's ptrace read check):
 * CAP_SYS_PTRACE when it lacks it; else, root too is refused a target that holds
 * capabilities it lacks (a unit's CapabilityBoundingSet=, a container's dropped set):
 * those are named, as the cause */
static void denied_cause(int pid, char *out, size_t n)
{
	static const char *const names[] = {
		"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID",
		"SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST",
		"NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO",
		"SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
		"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE",
		"AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
		"BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE"};
	unsigned long long mine = caps_of(0, "CapEff"), theirs = caps_of(pid, "CapPrm");
	unsigned long long missing = theirs & ~mine;
	if (!(mine & (1ull << 19))) { /* CAP_SYS_PTRACE */
		snprintf(out, n, "CAP_SYS_PTRACE");
		return;
	}
	out[0] = '\0';
	size_t used = 0;
	for (unsigned k = 0; k < 64 && used < n; k++)
		if (missing & (1ull << k)) {
			char num[16];
			snprintf(num, sizeof num, "%u", k);
			used += (size_t)snprintf(out + used, n - used, "%sCAP_%s", used ? ", " : "",
			                         k < sizeof names / sizeof *names ? names[k] : num);
		}
	if (used < n && missing)
		snprintf(out + used, n - used, ": the process holds %s this watch lacks, and the kernel "
		         "refuses it to a process with fewer capabilities, root too",
		         __builtin_popcountll(missing) > 1 ? "them" : "it");
	else if (!missing)
		snprintf(out, n, "another user namespace's, or a security module's refusal");
}

void watch_scan_ns(struct watch *w)
{
	unsigned long long mine = netns_of(0);
	for (int k = 0; k < w->nns; k++)
		w->ns[k].seen = 0;
	w->ns_not_followed = 0;
	w->scans++;
	if (w->npids && !w->ncgroups) {
		for (int k = 0; k < w->npids; k++) {
			unsigned long long ino = netns_of(w->pids[k]);
			if (ino)
				seen(w, ino, w->pids[k], mine, NULL);
		}
	} else {
		if (mine)
			seen(w, mine, 0, mine, NULL);
		DIR *proc = opendir("/proc");
		int denied = 0, example = 0;
		for (struct dirent *e; proc && (e = readdir(proc));) {
			char *end;
			long pid = strtol(e->d_name, &end, 10);
			if (*end || end == e->d_name || pid <= 0 || pid > INT_MAX)
				continue;
			errno = 0;
			unsigned long long ino = netns_of((int)pid);
			if (ino)
				seen(w, ino, (int)pid, mine, NULL);
			else if (errno == EACCES || errno == EPERM) {
				denied++;
				example = example ? example : (int)pid;
			}
		}
		if (proc)
			closedir(proc);
		/* the namespaces ip netns and container runtimes keep in /run/netns: opened with
		 * no ptrace access to any process in them (those of other users' pods, where
		 * /proc/PID/ns/net is refused) */
		/* (a namespace file is on nsfs, as ours is: a plain file there is none) */
		struct stat nsfs;
		DIR *run = stat("/proc/self/ns/net", &nsfs) == 0 ? opendir("/run/netns") : NULL;
		for (struct dirent *e; run && (e = readdir(run));) {
			char path[128];
			struct stat st;
			if (e->d_name[0] == '.' ||
			    (size_t)snprintf(path, sizeof path, "/run/netns/%s", e->d_name) >= sizeof path ||
			    stat(path, &st) != 0 || st.st_dev != nsfs.st_dev ||
			    !find_or_new(w, (unsigned long long)st.st_ino))
				continue;
			seen(w, (unsigned long long)st.st_ino, -1, mine, path);
		}
		if (run)
			closedir(run);
		/* a namespace only such processes are in is not found at all: said, not left out
		 * in silence */
		if (denied && !w->ns_denied_said++) {
			char cause[512];
			denied_cause(example, cause, sizeof cause);
			fprintf(stderr, "socktune: watch: the network namespace of %d processes (pid %d "
			        "first) is not readable by this process (/proc/PID/ns/net: %s): "
			        "listeners in a namespace only they are in are not watched\n", denied,
			        example, cause);
		}
	}
	/* a namespace no process is in any more: its socket goes (its listeners with it) */
	int kept = 0;
	for (int k = 0; k < w->nns; k++) {
		if (!w->ns[k].seen) {
			if (w->ns[k].nl >= 0)
				close(w->ns[k].nl);
			continue;
		}
		w->ns[kept++] = w->ns[k];
	}
	w->nns = kept;
}

/* A counter of ns: file "netstat" (TcpExt) or "snmp" (Tcp), line prefix; its process's
 * /proc/PID/net, or read from inside it when it was found by its file alone */
static long long counter(const struct watch_ns *ns, const char *file, const char *prefix,
                         const char *name)
{
	char path[64];
	int self = DIAG_SAME_NS;
	if (ns->pid > 0) {
		snprintf(path, sizeof path, "/proc/%d/net/%s", ns->pid, file);
	} else {
		/* (thread-self's net is the namespace the thread is in: entered by its file) */
		snprintf(path, sizeof path, "/proc/thread-self/net/%s", file);
		if (ns->file[0]) {
			int fd = open(ns->file, O_RDONLY | O_CLOEXEC);
			self = fd >= 0 ? diag_enter_fd(fd) : -errno;
			if (fd >= 0)
				close(fd);
			if (self < 0 && self != DIAG_SAME_NS)
				return -1;
		}
	}
	long long v = st_proc_counter(path, prefix, name);
	diag_leave(self);
	return v < 0 ? -1 : v;
}

long long watch_ns_counter(const struct watch_ns *ns, const char *name)
{
	return counter(ns, "netstat", "TcpExt:", name);
}

void watch_ns_counters(struct watch *w)
{
	for (int k = 0; k < w->nns; k++) {
		struct watch_ns *ns = &w->ns[k];
		ns->overflows = counter(ns, "netstat", "TcpExt:", "ListenOverflows");
		ns->drops = counter(ns, "netstat", "TcpExt:", "ListenDrops");
		/* every connection a listener of the namespace completed the handshake for (the
		 * kernel counts it as it makes the child socket, accepted or not, however short
		 * its life): the churn a periodic dump of the open ones cannot see */
		ns->passive_opens = counter(ns, "snmp", "Tcp:", "PassiveOpens");
	}
}

void watch_ns_close(struct watch *w)
{
	for (int k = 0; k < w->nns; k++)
		if (w->ns[k].nl >= 0)
			close(w->ns[k].nl);
	w->nns = 0;
}
