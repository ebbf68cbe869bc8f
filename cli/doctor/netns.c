/* A network namespace doctor looks at: its sock_diag socket (made inside it), its limits
 * (somaxconn, rmem_max, wmem_max: each namespace has its own), its TcpExt and Tcp counters,
 * from /proc/PID/net of a process in it, and its route back to a listener's clients. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "socktune_host.h"
#include "doctor/doctor.h"
#include "host/route.h"
#include "host/nssysctl.h"

const char *const doc_counter_names[C_COUNT] = {
	"ListenOverflows", "ListenDrops", "TCPSynRetrans", "RetransSegs", "TCPTimeouts",
	"TCPRcvQDrop", "PruneCalled",
};

/* A counter of a /proc/PID/net/{netstat,snmp} file (of ours: /proc/thread-self/net), -1
 * when unreadable */
static long long proc_counter(int pid, const char *file, const char *prefix, const char *name)
{
	char path[64];
	if (pid > 0)
		snprintf(path, sizeof path, "/proc/%d/net/%s", pid, file);
	else
		snprintf(path, sizeof path, "/proc/thread-self/net/%s", file);
	long long v = st_proc_counter(path, prefix, name);
	return v < 0 ? -1 : v;
}

void doc_ns_counters(const struct doc_ns *ns, long long *out)
{
	for (int k = 0; k < C_COUNT; k++)
		out[k] = k == C_RETRANS_SEGS
		             ? proc_counter(ns->pid, "snmp", "Tcp:", "RetransSegs")
		             : proc_counter(ns->pid, "netstat", "TcpExt:", doc_counter_names[k]);
}

/* A sysctl of the namespace: /proc/PID/root is not needed, /proc/sys follows the reader's
 * namespace, so another one's is read by a child that joins it (target_sysctl, host/nssysctl.c). */
static void read_limits(struct doc_ns *ns)
{
	long long *dst[] = {&ns->somaxconn, &ns->rmem_max, &ns->wmem_max};
	const char *names[] = {"net.core.somaxconn", "net.core.rmem_max", "net.core.wmem_max"};
	for (int k = 0; k < 3; k++)
		*dst[k] = ns->ours ? st_sysctl_num(names[k], -1) : target_sysctl(ns->pid, names[k]);
	char buf[128];
	const char *three[] = {"net.ipv4.tcp_mem", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"};
	long long *arr[] = {ns->tcp_mem, ns->rmem, ns->wmem};
	for (int k = 0; k < 3; k++) {
		arr[k][0] = arr[k][1] = arr[k][2] = -1;
		/* (tcp_rmem and tcp_wmem are each namespace's own: another's stay unknown) */
		if ((ns->ours || k == 0) && st_sysctl_str(three[k], buf, sizeof buf) == 0)
			sscanf(buf, "%lld %lld %lld", &arr[k][0], &arr[k][1], &arr[k][2]);
	}
}

/* The name ip netns gave the namespace of inode ino: a file under /run/netns bound to it */
static void name_of(unsigned long long ino, char *out, size_t n)
{
	DIR *dir = opendir("/run/netns");
	out[0] = '\0';
	for (struct dirent *e; dir && (e = readdir(dir));) {
		char path[300];
		struct stat st;
		int printable = 1;
		for (const unsigned char *u = (const unsigned char *)e->d_name; *u && printable;)
			u += (printable = doc_printable_len(u));
		snprintf(path, sizeof path, "/run/netns/%s", e->d_name);
		if (e->d_name[0] != '.' && printable && stat(path, &st) == 0 &&
		    (unsigned long long)st.st_ino == ino) {
			doc_quote(out, n, e->d_name);
			break;
		}
	}
	if (dir)
		closedir(dir);
}

int doc_ns_add(struct shared_window *d, int pid)
{
	unsigned long long ino = netns_of(pid);
	for (int k = 0; k < d->nns; k++)
		if (d->ns[k].ino == ino)
			return k;
	if (!ino)
		return -1;
	if (d->nns == DOC_MAX_NS) {
		if (!d->ns_dropped++)
			fprintf(stderr, "socktune: doctor %d: not looked at: its network namespace is past "
			        "the %d followed\n", pid, DOC_MAX_NS);
		return -1;
	}
	struct doc_ns *ns = &d->ns[d->nns];
	memset(ns, 0, sizeof *ns);
	ns->ino = ino;
	ns->ours = ino == netns_of(0);
	ns->pid = ns->ours ? 0 : pid;
	ns->nl = diag_open(ns->pid);
	if (ns->nl < 0) {
		if (!ns->ours && ns->nl != -ENOENT && ns->nl != -ESRCH)
			snprintf(ns->error, sizeof ns->error, "the network namespace of %d (%llu) is not "
			         "readable from here: %s (CAP_SYS_ADMIN, or run doctor inside it)", pid, ino,
			         strerror(-ns->nl));
		else
			snprintf(ns->error, sizeof ns->error, "sock_diag (network namespace %llu): %s%s",
			         ino, strerror(-ns->nl), ns->ours ? "" : " (did the process exit?)");
		ns->nl = -1;
	}
	read_limits(ns);
	if (!ns->ours)
		name_of(ino, ns->name, sizeof ns->name);
	return d->nns++;
}

/* For each listener, the route (in its namespace) to the peer of its last connection seen:
 * the exact `ip route change ... quickack 1` when that route lacks quickack */
void doc_routes_back(struct shared_window *d)
{
	for (int l = 0; l < d->nl; l++) {
		const struct doc_ns *ns = &d->ns[d->l[l].ns];
		const struct doc_conn *c = NULL;
		for (size_t k = 0; k < d->nc; k++)
			if (d->c[k].listener == l)
				c = &d->c[k];
		char peer[INET6_ADDRSTRLEN];
		if (!c || !inet_ntop(c->last.family, c->last.dst, peer, sizeof peer))
			continue;
		snprintf(d->l[l].route_peer, sizeof d->l[l].route_peer, "%s", peer);
		int self = ns->ours ? DIAG_SAME_NS : diag_enter(ns->pid); /* (a lookup answers for
		                                                            * the caller's) */
		if (self < 0 && self != DIAG_SAME_NS)
			continue;
		static struct route_result rr;
		int found = route_lookup(peer, &rr) == 0 && rr.found && !rr.quickack && rr.fixable;
		diag_leave(self);
		if (!found)
			continue;
		char pre[64] = "";
		if (!ns->ours)
			snprintf(pre, sizeof pre, "nsenter --net=/proc/%d/ns/net ", ns->pid);
		int w = snprintf(d->l[l].route_fix, sizeof d->l[l].route_fix, "%s%s", pre, rr.fix);
		if (w < 0 || (size_t)w >= sizeof d->l[l].route_fix)
			d->l[l].route_fix[0] = '\0'; /* (cut: the placeholder is said instead) */
	}
}

/* Whether /proc/PID/net/FILE (tcp, tcp6) has a listener on port: its inode, else 0 */
static unsigned long long listener_in(int pid, const char *file, unsigned port)
{
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/%d/net/%s", pid, file);
	FILE *f = fopen(path, "re");
	unsigned long long found = 0;
	if (!f)
		return 0;
	/* "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode": the
	 * address and port in hex, LISTEN is state 0A */
	for (long n = 0; !found && n < 1000000 && fgets(line, sizeof line, f); n++) {
		char local[64], st[8];
		unsigned long long ino;
		if (sscanf(line, " %*s %63s %*s %7s %*s %*s %*s %*s %*s %llu", local, st, &ino) != 3)
			continue;
		const char *colon = strrchr(local, ':');
		if (colon && strcmp(st, "0A") == 0 && strtoul(colon + 1, NULL, 16) == port)
			found = ino;
	}
	fclose(f);
	return found;
}

int doc_port_elsewhere(unsigned port, unsigned long long *ns_ino)
{
	unsigned long long ours = netns_of(0), seen[256];
	int nseen = 0, holder = 0;
	DIR *dir = opendir("/proc");
	for (struct dirent *e; dir && !holder && (e = readdir(dir));) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		int pid = (int)strtol(e->d_name, NULL, 10);
		unsigned long long ino = netns_of(pid);
		int known = !ino || ino == ours;
		for (int k = 0; k < nseen && !known; k++)
			known = seen[k] == ino;
		if (known)
			continue;
		if (nseen < (int)(sizeof seen / sizeof *seen))
			seen[nseen++] = ino;
		unsigned long long sock = listener_in(pid, "tcp", port);
		if (!sock)
			sock = listener_in(pid, "tcp6", port);
		if (!sock)
			continue;
		/* its holder: the pid doctor PID wants (a process of that namespace may hold
		 * nothing of it) */
		struct holders hs = {0};
		holders_scan(&hs, NULL, 0);
		const struct holder *h = holders_find(&hs, sock);
		holder = h ? h->pid : pid;
		*ns_ino = ino;
		free(hs.h);
	}
	if (dir)
		closedir(dir);
	return holder;
}
