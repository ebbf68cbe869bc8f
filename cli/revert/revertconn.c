/* The connections a listener accepted after watch --apply set an option on it that they
 * inherit (TCP_NODELAY: sockcopy_inherited): the kernel copies the listener's value into each
 * connection it accepts, so those connections hold the applied value too, and setting the
 * listener back does not reach them.  They are found as the listener's own are: sock_diag in
 * the process's network namespace, the connections on the listener's local address and
 * port, held by that process (its /proc/PID/fd), each taken through a pidfd_getfd copy
 * checked to be that socket, from that process (pid and start). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "host/diag.h"
#include "journal.h"
#include "revert/revert.h"
#include "host/sockcopy.h"

struct found {
	int family;
	unsigned char addr[16];
	unsigned port;
	unsigned long long *ino;
	size_t n, cap;
};

static void on_conn(const struct diag_sock *s, void *ctx)
{
	struct found *f = ctx;
	if (s->state == TS_LISTEN || !s->inode ||
	    !diag_listener_takes(f->family, f->addr, f->port, s->family, s->src, s->sport))
		return;
	if (f->n == f->cap) {
		size_t want = f->cap ? 2 * f->cap : 64;
		unsigned long long *g = realloc(f->ino, want * sizeof *g);
		if (!g)
			return;
		f->ino = g;
		f->cap = want;
	}
	f->ino[f->n++] = s->inode;
}

static int skipped(const struct revert_sweep *s, unsigned long long ino)
{
	for (int k = 0; k < s->nskip; k++)
		if (s->skip[k] == ino)
			return 1;
	return 0;
}

int revert_conns(struct revert_sweep *s, char *err, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	struct found f = {0};
	s->set = s->failed = s->seen = 0;
	if (getsockname(s->listener, (struct sockaddr *)&ss, &len) != 0) {
		snprintf(err, n, "the listener's address: %s", strerror(errno));
		return -1;
	}
	f.family = ss.ss_family;
	if (f.family == AF_INET) {
		const struct sockaddr_in *a = (const void *)&ss;
		memcpy(f.addr, &a->sin_addr, 4);
		f.port = ntohs(a->sin_port);
	} else if (f.family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)&ss;
		memcpy(f.addr, &a->sin6_addr, 16);
		f.port = ntohs(a->sin6_port);
	} else {
		snprintf(err, n, "the listener is not a TCP/IP socket");
		return -1;
	}
	if (s->netns && netns_of(s->pid) != s->netns) {
		snprintf(err, n, "the process is in another network namespace now");
		return -1;
	}
	int nl = diag_open(s->pid);
	if (nl < 0) {
		snprintf(err, n, "sock_diag in the process's network namespace: %s", strerror(-nl));
		return -1;
	}
	int rc = diag_dump_ports(nl, 1u << TS_ESTABLISHED | 1u << TS_CLOSE_WAIT, 0, &f.port, 1,
	                         on_conn, &f);
	close(nl);
	if (rc < 0) {
		snprintf(err, n, "sock_diag: %s", strerror(-rc));
		free(f.ino);
		return -1;
	}
	struct holders hs = {0};
	holders_scan(&hs, &s->pid, 1);
	for (size_t k = 0; k < f.n; k++) {
		const struct holder *h = holders_find(&hs, f.ino[k]);
		while (h && h < hs.h + hs.n && h->ino == f.ino[k] && h->pid != s->pid)
			h++;
		if (!h || h >= hs.h + hs.n || h->ino != f.ino[k] || skipped(s, f.ino[k]))
			continue; /* (held by another process, or a change of its own in the journal) */
		int copy = sockcopy_open_proc(s->pid, s->start, h->fd, h->ino);
		if (copy < 0)
			continue; /* (closed meanwhile) */
		s->seen++;
		if (sockcopy_get(copy, s->opt) == s->applied) {
			if (sockcopy_set(copy, s->opt, s->before) == 0 &&
			    sockcopy_get(copy, s->opt) == s->before)
				s->set++;
			else
				s->failed++;
		}
		close(copy);
	}
	free(hs.h);
	free(f.ino);
	return 0;
}

/* The inodes of the other changes of c's option (connections journalled on their own: their
 * lines undo them, a listener's sweep leaves them) */
unsigned long long *revert_others(const struct journal_change *all, int n,
                                  const struct journal_change *c, int *nskip)
{
	unsigned long long *skip = malloc((size_t)(n > 0 ? n : 1) * sizeof *skip);
	*nskip = 0;
	for (int k = 0; skip && k < n; k++)
		if (&all[k] != c && all[k].inode && strcmp(all[k].option, c->option) == 0)
			skip[(*nskip)++] = all[k].inode;
	return skip;
}
