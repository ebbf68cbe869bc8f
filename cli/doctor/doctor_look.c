/* What doctor reads from the processes: which one holds each connection (a prefork worker, a
 * backend forked per connection: not the listener's holder), and TCP_NODELAY, which sock_diag
 * does not report, through a pidfd_getfd copy of each listener and of the connections (ptrace
 * access: the same uid and a dumpable target, or CAP_SYS_PTRACE).  A connection's is read
 * during the window, while it is open (a session shorter than the window is gone at its
 * end, and an app that sets TCP_NODELAY on each connection after accept makes the
 * listener's value say nothing of it), and again at the end. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "doctor/doctor.h"
#include "host/probe.h"
#include "host/sockcopy.h"

#define MAX_NODELAY_LOOKS 256
#define MAX_FOLLOWED 256  /* connections whose TCP_NODELAY is read during the window */
#define MAX_TRIES 3       /* ... tries to find the holder of one */
#define MAX_SCANS 100     /* scans of the listeners' processes for them, over the window */

/* The pidfd of the last process looked at: its connections come one after another, so one
 * pidfd_open serves all of them (-1 for pid 0 closes it) */
static int pidfd_for(int pid)
{
	static int last_pid, last_fd = -1;
	if (pid == last_pid && last_fd >= 0)
		return last_fd;
	if (last_fd >= 0)
		close(last_fd);
	last_pid = pid;
	last_fd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	return last_fd;
}

static int nodelay_of(int pid, int fd, unsigned long long ino, char *why, size_t n)
{
	int pidfd = pidfd_for(pid);
	if (pidfd < 0) {
		snprintf(why, n, "pidfd_open %d: %s", pid, strerror(errno));
		return -2;
	}
	int copy = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	int err = errno;
	if (copy < 0) {
		snprintf(why, n, "pidfd_getfd %d: %s%s", pid, strerror(err),
		         err == EPERM ? " (same uid and dumpable, or CAP_SYS_PTRACE)" : "");
		return -2;
	}
	struct stat sb;
	long long v = -1;
	if (fstat(copy, &sb) != 0 || (unsigned long long)sb.st_ino != ino) {
		snprintf(why, n, "the descriptor now names another socket");
	} else if (probe_get_int(copy, IPPROTO_TCP, TCP_NODELAY, &v) != 0) {
		snprintf(why, n, "getsockopt TCP_NODELAY: %s", strerror(errno));
		v = -2;
	}
	close(copy);
	return v < 0 ? -2 : v != 0;
}

/* The pids holding the listeners: a server's connections are in the process that accepted
 * them, which holds the listener (a prefork worker too) */
static int listener_pids(const struct shared_window *d, int *pids, int max)
{
	int n = 0;
	for (int k = 0; k < d->nl; k++)
		for (int o = 0; o < d->l[k].nowners; o++) {
			int seen = 0;
			for (int j = 0; j < n && !seen; j++)
				seen = pids[j] == d->l[k].owners[o].pid;
			if (!seen && n < max)
				pids[n++] = d->l[k].owners[o].pid;
		}
	return n;
}

static void read_nodelay(struct doc_conn *c)
{
	char why[96];
	int v = nodelay_of(c->pid, c->fd, c->inode, why, sizeof why);
	if (v >= 0 || c->nodelay < 0)
		c->nodelay = v; /* (a value read earlier is kept when the socket has gone) */
	c->nodelay_off |= v == 0;
}

void doc_look_during(struct shared_window *d)
{
	static int followed, scans; /* connections given a holder, of MAX_FOLLOWED; scans made */
	int want = 0;
	for (size_t k = 0; k < d->nc; k++) {
		struct doc_conn *c = &d->c[k];
		want += c->sweep == d->sweeps && c->pid < 0 && c->inode && c->looks < MAX_TRIES &&
		        followed < MAX_FOLLOWED;
	}
	if (want && scans++ < MAX_SCANS) {
		int pids[DOC_MAX_OWNERS * 4], npids = listener_pids(d, pids, DOC_MAX_OWNERS * 4);
		struct holders hs = {0};
		holders_scan(&hs, pids, npids);
		for (size_t k = 0; k < d->nc && followed < MAX_FOLLOWED; k++) {
			struct doc_conn *c = &d->c[k];
			if (c->sweep != d->sweeps || c->pid >= 0 || !c->inode || c->looks >= MAX_TRIES)
				continue;
			c->looks++;
			const struct holder *h = holders_find(&hs, c->inode);
			if (h) {
				c->pid = h->pid;
				c->fd = h->fd;
				followed++;
			}
		}
		free(hs.h);
	}
	/* every followed connection open now, read again: the app's own setsockopt comes just
	 * after accept, a first read may come before it */
	for (size_t k = 0; k < d->nc; k++)
		if (d->c[k].sweep == d->sweeps && d->c[k].pid >= 0)
			read_nodelay(&d->c[k]);
}

void doc_look_at_holders(struct shared_window *d)
{
	for (int k = 0; k < d->nl; k++) {
		struct doc_listener *l = &d->l[k];
		if (!l->nowners) {
			l->nodelay = -2;
			snprintf(l->nodelay_why, sizeof l->nodelay_why, "no process here holds it that "
			         "this user may see");
			continue;
		}
		l->nodelay = nodelay_of(l->owners[0].pid, l->owners[0].fd, l->inode, l->nodelay_why,
		                        sizeof l->nodelay_why);
	}
	if (!d->nc) {
		pidfd_for(0);
		return;
	}
	struct holders hs = {0};
	holders_scan(&hs, NULL, 0); /* every process: a connection's holder may hold no listener */
	for (size_t k = 0; k < d->nc; k++) {
		struct doc_conn *c = &d->c[k];
		const struct holder *h = c->inode ? holders_find(&hs, c->inode) : NULL;
		c->pid = h ? h->pid : -1; /* (closed, or held by a process we may not see) */
		c->fd = h ? h->fd : -1;
	}
	size_t *worst = malloc(MAX_NODELAY_LOOKS * sizeof *worst);
	size_t n = worst ? doctor_worst(d, -1, worst, MAX_NODELAY_LOOKS) : 0;
	for (size_t k = 0; k < n; k++) {
		struct doc_conn *c = &d->c[worst[k]];
		if (c->pid >= 0)
			read_nodelay(c);
		else if (c->nodelay < 0)
			c->nodelay = -2;
	}
	free(worst);
	free(hs.h);
	pidfd_for(0);
}
