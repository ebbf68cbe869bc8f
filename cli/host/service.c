/* A service seen from outside (service.h): its sockets from sock_diag, or /proc/PID/net
 * where its network namespace cannot be joined, and their holders from /proc/PID/fd. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/service.h"
#include "host/clock.h"
#include "host/grow.h"
#include "host/itertune.h"

/* ---- the sockets: sock_diag, or /proc/PID/net ---- */

/* /proc/PID/net/tcp and tcp6 as a dump: each socket in one of the states of the mask.  The
 * kernel prints an address as the 32-bit words it is stored in, in hex: read back as words,
 * they are the address's bytes again. */
static int procnet_dump(int pid, unsigned states, diag_cb cb, void *ctx)
{
	static const char *const files[] = {"tcp", "tcp6"};
	int count = 0, opened = 0;
	for (int k = 0; k < 2; k++) {
		char path[64], line[512];
		snprintf(path, sizeof path, "/proc/%d/net/%s", pid, files[k]);
		FILE *f = fopen(path, "re");
		opened += f != NULL;
		for (long lines = 0; f && lines < (1L << 24) && fgets(line, sizeof line, f); lines++) {
			char la[40], ra[40];
			unsigned lport, rport, state;
			unsigned long long ino;
			if (sscanf(line, " %*u: %39[0-9A-Fa-f]:%x %39[0-9A-Fa-f]:%x %x %*x:%*x %*x:%*x %*x "
			           "%*u %*d %llu", la, &lport, ra, &rport, &state, &ino) != 6 ||
			    state > 31 || !(states >> state & 1))
				continue;
			static struct diag_sock s;
			memset(&s, 0, sizeof s);
			s.family = k ? AF_INET6 : AF_INET;
			s.state = state;
			s.sport = lport;
			s.dport = rport;
			s.inode = ino;
			for (int w = 0; w < (k ? 4 : 1); w++) {
				unsigned word;
				char hex[9];
				memcpy(hex, la + 8 * w, 8);
				hex[8] = '\0';
				word = (unsigned)strtoul(hex, NULL, 16);
				memcpy(s.src + 4 * w, &word, 4);
				memcpy(hex, ra + 8 * w, 8);
				word = (unsigned)strtoul(hex, NULL, 16);
				memcpy(s.dst + 4 * w, &word, 4);
			}
			cb(&s, ctx);
			count++;
		}
		if (f)
			fclose(f);
	}
	return opened ? count : -ENOENT;
}

#define CONN_STATES (1u << TS_ESTABLISHED | 1u << TS_SYN_SENT)

static void on_sock(const struct diag_sock *d, void *ctx)
{
	struct service *svc = ctx;
	if (!d->inode) { /* a connection still in an accept queue: no process holds it yet */
		svc->queued++;
		return;
	}
	if (grow(&svc->s, &svc->cap, svc->n, sizeof *svc->s, 256) != 0)
		return;
	struct svc_sock *s = &svc->s[svc->n++];
	memset(s, 0, sizeof *s);
	s->ino = d->inode;
	s->cookie = d->cookie;
	s->kind = d->state == TS_LISTEN ? SVC_LISTENER : SVC_OUTGOING;
	s->family = d->family;
	s->state = d->state;
	s->sport = d->sport;
	s->dport = d->dport;
	s->rqueue = d->rqueue;
	s->wqueue = d->wqueue;
	s->uid = d->uid;
	s->cgroup_id = d->cgroup_id;
	memcpy(s->src, d->src, 16);
	memcpy(s->dst, d->dst, 16);
	s->listener = -1;
}

static int dump(struct service *svc, unsigned states)
{
	svc->n = svc->queued = 0;
	if (svc->nl < 0)
		return procnet_dump(svc->netpid, states, on_sock, svc);
	long intr = diag_interrupted;
	int r = diag_dump(svc->nl, states, 0, on_sock, svc);
	if (r >= 0 && diag_interrupted != intr) { /* sockets came and went meanwhile: once more */
		svc->n = svc->queued = 0;
		r = diag_dump(svc->nl, states, 0, on_sock, svc);
	}
	if (r < 0) { /* an answer left half read would make the next request EBUSY: a new one */
		close(svc->nl);
		int nl = svc->tie ? diag_open_netns(svc->netns_fd)
		                  : diag_open(svc->scope == SVC_PORT ? 0 : svc->netpid);
		svc->nl = nl >= 0 ? svc_high_fd(nl) : -1;
		if (svc->nl < 0)
			snprintf(svc->how, sizeof svc->how, "sock_diag: %s", strerror(-r));
	}
	return r;
}

/* The listener a connection was accepted on: the same port, the same address or a wildcard
 * one (an IPv6 wildcard listener takes IPv4 connections too, as IPv6 sockets); -1 none. */
static int listener_of(const struct service *svc, const struct svc_sock *c)
{
	int wild = -1;
	for (size_t k = 0; k < svc->n; k++) {
		const struct svc_sock *l = &svc->s[k];
		int m = l->kind != SVC_LISTENER ? 0 : diag_listener_takes(l->family, l->src, l->sport,
		                                                            c->family, c->src, c->sport);
		if (m == 2)
			return (int)k;
		if (m == 1 && (wild < 0 || l->family == c->family))
			wild = (int)k;
	}
	return wild;
}

/* ---- settling: what each socket is to the service ---- */

enum { SEEN_OURS = 1, SEEN_FOREIGN = 2, SEEN_DONE = 4, SEEN_STRIKE = 8, SEEN_CONN = 16 };

static int seen(const struct service *svc, unsigned long long ino)
{
	int v = svc_map_get(&svc->seen, ino);
	return v < 0 ? 0 : v;
}

static void mark(struct service *svc, unsigned long long ino, int bits)
{
	svc_map_put(&svc->seen, ino, seen(svc, ino) | bits);
}

static size_t holders_of(const struct service *svc, unsigned long long ino,
                         const struct holder **first)
{
	const struct holder *h = holders_find(&svc->hs, ino);
	size_t n = 0;
	*first = h;
	while (h && h + n < svc->hs.h + svc->hs.n && h[n].ino == ino)
		n++;
	return n;
}

static int held_by(const struct holder *h, size_t nh, const struct svc_pids *p)
{
	for (size_t k = 0; k < nh; k++)
		if (svc_pids_has(p, h[k].pid))
			return 1;
	return 0;
}

static int holder_order(const void *a, const void *b)
{
	const struct holder *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino ? 1 : x->pid - y->pid;
}

/* Every process's socket descriptors: read once for the services looked at together (the
 * PIDs given to one attach: each would read them all again), at most 200 ms old; the
 * service's own pid is read anew. */
static void scan_all(struct service *svc)
{
	static struct holders every;
	static long long at = -1000;
	if (clock_mono_ms() - at > 200) {
		holders_scan(&every, NULL, 0);
		at = clock_mono_ms();
	}
	struct holders own = {0};
	if (svc->scope == SVC_PID)
		holders_scan(&own, &svc->pid, 1);
	size_t n = every.n + own.n;
	svc->hs.n = 0;
	struct holder *h = n > svc->hs.cap ? realloc(svc->hs.h, n * sizeof *h) : svc->hs.h;
	if (n && h) {
		svc->hs.h = h;
		svc->hs.cap = n > svc->hs.cap ? n : svc->hs.cap;
		for (size_t k = 0; k < every.n; k++)
			if (svc->scope != SVC_PID || every.h[k].pid != svc->pid)
				h[svc->hs.n++] = every.h[k];
		for (size_t k = 0; k < own.n; k++)
			h[svc->hs.n++] = own.h[k];
		qsort(h, svc->hs.n, sizeof *h, holder_order);
	}
	free(own.h);
}

/* Whether a listener still has to be settled (or tuned) */
static int open_listener(const struct service *svc, const struct svc_sock *l)
{
	int v = seen(svc, l->ino);
	return l->kind == SVC_LISTENER &&
	       (!(v & (SEEN_OURS | SEEN_FOREIGN)) || (v & (SEEN_OURS | SEEN_DONE)) == SEEN_OURS);
}

/* A look at listeners alone: the holders of those to settle, among procs, into svc->hs.
 * Each process's descriptors are read through one directory descriptor (no path walked for
 * each), and the reading stops once each has a holder: a program with 9,000 connections is
 * read whole only for a listener that is not its own.  Returns whether the family stayed
 * the same meanwhile (else a holder reparented to us in between may have been missed). */
static int scan_listeners(struct service *svc, const struct svc_pids *procs)
{
	struct svc_map want = {0};
	size_t left = 0;
	for (size_t k = 0; k < svc->n; k++)
		if (open_listener(svc, &svc->s[k]) && svc_map_get(&want, svc->s[k].ino) < 0)
			left += svc_map_put(&want, svc->s[k].ino, 1) == 0;
	svc->hs.n = 0;
	for (size_t k = 0; k < procs->n && left; k++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/fd", procs->v[k]);
		DIR *d = opendir(path);
		for (struct dirent *e; d && left && (e = readdir(d));) {
			char link[64], *end;
			long fd = strtol(e->d_name, &end, 10);
			ssize_t len = *end || end == e->d_name ? -1
			              : readlinkat(dirfd(d), e->d_name, link, sizeof link - 1);
			unsigned long long ino;
			if (len <= 0)
				continue;
			link[len] = '\0';
			if (sscanf(link, "socket:[%llu]", &ino) == 1 && svc_map_get(&want, ino) == 1) {
				holders_add(&svc->hs, ino, procs->v[k], (int)fd);
				svc_map_put(&want, ino, 2);
				left--;
			}
		}
		if (d)
			closedir(d);
	}
	svc_map_free(&want);
	if (svc->hs.n)
		qsort(svc->hs.h, svc->hs.n, sizeof *svc->hs.h, holder_order);
	struct svc_pids now = {0};
	if (svc->scope == SVC_FAMILY)
		svc_descendants(svc->pid, 0, &now);
	int same = svc->scope != SVC_FAMILY || now.n == procs->n;
	for (size_t k = 0; k < now.n && same; k++)
		same = svc_pids_has(procs, now.v[k]);
	free(now.v);
	return same;
}

/* Who holds the sockets of interest: every process at the first look (workers, backends
 * anywhere), after it the service's processes and their descendants; for listeners alone,
 * only where a listener of the service can be (the family; PID itself). */
static void scan(struct service *svc, int all, int conns)
{
	struct svc_pids procs = {0};
	size_t kept = 0;
	for (size_t k = 0; k < svc->pids.n; k++) { /* those that exited go */
		char path[32];
		snprintf(path, sizeof path, "/proc/%d", svc->pids.v[k]);
		if (svc->scope != SVC_FAMILY && ((svc->scope == SVC_PID && k == 0) || access(path, F_OK) == 0))
			svc->pids.v[kept++] = svc->pids.v[k];
	}
	svc->pids.n = kept;
	if (svc->scope == SVC_FAMILY)
		svc_descendants(svc->pid, 0, &procs);
	else if (!all && !conns && svc->scope == SVC_PID)
		svc_pids_add(&procs, svc->pid);
	for (size_t k = 0; !all && conns && svc->scope != SVC_FAMILY && k < svc->pids.n; k++)
		if (!svc_pids_has(&procs, svc->pids.v[k]))
			svc_descendants(svc->pids.v[k], 1, &procs);
	svc->scanned_all = all && svc->scope != SVC_FAMILY;
	svc->moved = 0;
	if (svc->scanned_all)
		scan_all(svc);
	else if (!conns)
		svc->moved = !scan_listeners(svc, &procs);
	else
		holders_scan(&svc->hs, procs.v, (int)procs.n);
	if (svc->scope == SVC_FAMILY) /* the family is what the service is */
		for (size_t k = 0; k < procs.n; k++)
			svc_pids_add(&svc->pids, procs.v[k]);
	free(procs.v);
}

/* Whether socket s was made in a tied PID's cgroup by one of its uids (service.h) */
static int tied(const struct service *svc, const struct svc_sock *s)
{
	return svc->tie && s->cgroup_id && s->cgroup_id == svc->tie->cgroup_id &&
	       pid_tie_uid(svc->tie, s->uid);
}

/* Each listener of the dump: the service's, someone else's, or not known yet (0). */
static int classify_listeners(struct service *svc, int resolve)
{
	int unknown = 0;
	svc->listeners = 0;
	for (size_t k = 0; k < svc->n; k++) {
		struct svc_sock *l = &svc->s[k];
		if (l->kind != SVC_LISTENER)
			continue;
		int v = seen(svc, l->ino);
		if (!(v & (SEEN_OURS | SEEN_FOREIGN)) && svc->scope == SVC_PORT)
			mark(svc, l->ino, v = l->sport == svc->port ? SEEN_OURS : SEEN_FOREIGN);
		if (!(v & (SEEN_OURS | SEEN_FOREIGN)) && resolve) {
			const struct holder *h;
			size_t nh = holders_of(svc, l->ino, &h);
			int ours = tied(svc, l);
			for (size_t j = 0; j < nh && !ours; j++)
				ours = svc->scope == SVC_FAMILY || h[j].pid == svc->pid;
			/* held by nobody in the family: not ours, unless the family changed while it
			 * was read (a holder reparented to us in between): then once more */
			if (ours)
				mark(svc, l->ino, v = SEEN_OURS);
			else if (svc->scope != SVC_FAMILY || nh || !svc->moved || (v & SEEN_STRIKE))
				mark(svc, l->ino, v = SEEN_FOREIGN);
			else
				mark(svc, l->ino, v = SEEN_STRIKE);
		}
		unknown += !(v & (SEEN_OURS | SEEN_FOREIGN));
		if (v & SEEN_OURS) {
			svc->listeners++;
			if (l->rqueue) /* connections waiting to be accepted: held by nobody yet */
				svc->conns_due = 1;
		}
	}
	return unknown;
}

/* Each connection of the dump: accepted on a listener of the service (or held by PID),
 * outgoing from one of its processes, or none of its business. */
static void classify_conns(struct service *svc, unsigned want)
{
	for (int pass = 0; pass < 2; pass++) /* accepted first: their holders join the service */
		for (size_t k = 0; k < svc->n; k++) {
			struct svc_sock *c = &svc->s[k];
			if (c->kind == SVC_LISTENER || (seen(svc, c->ino) & (SEEN_DONE | SEEN_FOREIGN)))
				continue;
			int l = listener_of(svc, c);
			if ((l >= 0) != !pass)
				continue;
			const struct holder *h;
			size_t nh = holders_of(svc, c->ino, &h);
			int ours_l = l >= 0 && (seen(svc, svc->s[l].ino) & SEEN_OURS);
			/* held by none this user may read: the service's by its listener (the same
			 * address and port, in the same namespace), or by a tied PID's cgroup */
			int unheld_ours = !nh && (want & SVC_W_UNHELD) && (ours_l || (l < 0 && tied(svc, c)));
			if (!nh && !unheld_ours) { /* let go, or held where no scan looked: once more,
			                            * then settled */
				int again = ours_l && !(seen(svc, c->ino) & SEEN_STRIKE);
				mark(svc, c->ino, SEEN_CONN | (again ? SEEN_STRIKE : SEEN_FOREIGN));
				svc->conns_due |= again;
				continue;
			}
			struct svc_pids self = {&svc->pid, 1, 1};
			int mine = unheld_ours ||
			           (l >= 0 ? ours_l || (svc->scope == SVC_PID && held_by(h, nh, &self))
			                   : held_by(h, nh, &svc->pids));
			if (!mine || !(want & (l >= 0 ? SVC_W_ACCEPTED : SVC_W_OUTGOING))) {
				mark(svc, c->ino, SEEN_CONN | (mine ? SEEN_DONE : SEEN_FOREIGN));
				continue;
			}
			c->kind = l >= 0 ? SVC_ACCEPTED : SVC_OUTGOING;
			c->listener = ours_l ? l : -1;
			mark(svc, c->ino, SEEN_CONN | SEEN_OURS);
			for (size_t j = 0; j < nh && l >= 0; j++)
				svc_pids_add(&svc->pids, h[j].pid);
		}
}

/* The memory of settled sockets kept to those that still exist (connections come and go:
 * a look that did not dump them keeps theirs). */
static void prune(struct service *svc, int conns_dumped)
{
	struct svc_map kept = {0};
	for (size_t k = 0; k < svc->n; k++)
		svc_map_put(&kept, svc->s[k].ino, seen(svc, svc->s[k].ino));
	for (size_t k = 0; !conns_dumped && k < svc->seen.cap; k++)
		if (svc->seen.keys[k] && (svc->seen.vals[k] & SEEN_CONN))
			svc_map_put(&kept, svc->seen.keys[k], svc->seen.vals[k]);
	svc_map_free(&svc->seen);
	svc->seen = kept;
}

int svc_look(struct service *svc, unsigned want, svc_cb cb, void *ctx)
{
	int conns = (want & (SVC_W_ACCEPTED | SVC_W_OUTGOING)) &&
	            (!svc->looks || svc->conns_due || (want & SVC_W_EVERY));
	svc->conns_due = 0;
	svc->unheld = 0;
	int r = dump(svc, 1u << TS_LISTEN | (conns ? CONN_STATES : 0));
	if (r < 0)
		return r;
	classify_listeners(svc, 0);
	int need = 0; /* a socket to settle, or one of ours to tune */
	for (size_t k = 0; k < svc->n && !need; k++)
		need = svc->s[k].kind == SVC_LISTENER ? open_listener(svc, &svc->s[k])
		       : !(seen(svc, svc->s[k].ino) & (SEEN_DONE | SEEN_FOREIGN));
	if (need) {
		int all = !svc->looks;
		for (size_t k = 0; k < svc->n && svc->scope == SVC_PORT; k++) /* a new one here */
			all |= svc->s[k].kind == SVC_LISTENER && seen(svc, svc->s[k].ino) == SEEN_OURS;
		scan(svc, all, conns);
		classify_listeners(svc, 1);
		for (size_t k = 0; k < svc->n; k++) {
			const struct holder *h;
			size_t nh = svc->s[k].kind == SVC_LISTENER &&
			            (seen(svc, svc->s[k].ino) & SEEN_OURS) ? holders_of(svc, svc->s[k].ino, &h) : 0;
			for (size_t j = 0; j < nh; j++)
				svc_pids_add(&svc->pids, h[j].pid);
		}
		if (conns)
			classify_conns(svc, want);
		/* what is new: listeners, then connections, each passed with its holders */
		for (int kind = SVC_LISTENER; kind <= SVC_OUTGOING; kind++)
			for (size_t k = 0; k < svc->n; k++) {
				struct svc_sock *s = &svc->s[k];
				const struct holder *h;
				size_t nh;
				if (s->kind != kind || (seen(svc, s->ino) & (SEEN_OURS | SEEN_DONE)) != SEEN_OURS)
					continue;
				if (!(nh = holders_of(svc, s->ino, &h))) {
					svc->unheld += kind == SVC_LISTENER; /* (another user's, say) */
					if (!(want & SVC_W_UNHELD))
						continue;
					h = NULL;
				}
				if (cb(s, h, nh, ctx) == SVC_DONE)
					mark(svc, s->ino, SEEN_DONE);
				else if (kind != SVC_LISTENER)
					svc->conns_due = 1;
			}
	}
	prune(svc, conns);
	svc->looks++;
	return 0;
}

int svc_high_fd(int fd)
{
	if (fd < 0 || fd > 2)
		return fd;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return high;
}

int svc_open_in(struct service *svc, enum svc_scope scope, int pid, int netpid, unsigned port,
                char *err, size_t n)
{
	memset(svc, 0, sizeof *svc);
	svc->nl = -1; /* (svc_close may follow a failed open) */
	svc->netns_fd = -1;
	svc->scope = scope;
	svc->pid = pid;
	svc->netpid = netpid;
	svc->port = port;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", pid);
	DIR *fds = scope != SVC_PORT ? opendir(path) : NULL;
	if (scope != SVC_PORT && !fds) { /* (its descriptors are what a look reads) */
		int e = errno == ENOENT ? ESRCH : errno;
		snprintf(err, n, "%s: %s", path, strerror(e));
		return -e;
	}
	if (fds)
		closedir(fds);
	if (scope == SVC_PID)
		svc_pids_add(&svc->pids, pid);
	int nl = diag_open(scope == SVC_PORT ? 0 : netpid);
	svc->nl = nl >= 0 ? svc_high_fd(nl) : -1;
	if (svc->nl >= 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/net/tcp", netpid);
	if (scope != SVC_PORT && access(path, R_OK) == 0) { /* its namespace not joinable */
		snprintf(svc->how, sizeof svc->how, "sock_diag in its network namespace: %s: read "
		         "from /proc/%d/net", strerror(-nl), netpid);
		return 0;
	}
	snprintf(err, n, "sock_diag: %s", strerror(-nl));
	return nl;
}

int svc_open_tied(struct service *svc, int pid, const struct pid_tie *tie, int netns_fd,
                  const char *netns_name, char *err, size_t n)
{
	memset(svc, 0, sizeof *svc);
	snprintf(svc->netns_name, sizeof svc->netns_name, "%s", netns_name);
	svc->scope = SVC_PID;
	svc->pid = svc->netpid = pid;
	svc->tie = tie;
	svc->netns_fd = netns_fd;
	svc_pids_add(&svc->pids, pid);
	int nl = diag_open_netns(netns_fd);
	svc->nl = nl >= 0 ? svc_high_fd(nl) : -1;
	if (svc->nl >= 0)
		return 0;
	snprintf(err, n, "sock_diag in its network namespace: %s", strerror(-nl));
	if (netns_fd >= 0)
		close(netns_fd);
	svc->netns_fd = -1;
	return nl;
}

int svc_open(struct service *svc, enum svc_scope scope, int pid, unsigned port, char *err,
             size_t n)
{
	return svc_open_in(svc, scope, pid, pid, port, err, n);
}

void svc_close(struct service *svc)
{
	if (svc->nl >= 0)
		close(svc->nl);
	svc->nl = -1;
	if (svc->netns_fd >= 0)
		close(svc->netns_fd);
	svc->netns_fd = -1;
	svc_map_free(&svc->seen);
	free(svc->pids.v);
	free(svc->s);
	free(svc->hs.h);
	memset(&svc->pids, 0, sizeof svc->pids);
	svc->s = NULL;
	svc->hs.h = NULL;
	svc->n = svc->cap = svc->hs.n = svc->hs.cap = 0;
}

static int settle(const struct svc_sock *s, const struct holder *h, size_t nh, void *ctx)
{
	(void)s, (void)h, (void)nh, (void)ctx;
	return SVC_DONE;
}

int svc_members(int pid, struct svc_pids *out)
{
	struct service svc;
	char err[200];
	int r = svc_open(&svc, SVC_PID, pid, 0, err, sizeof err);
	if (r == 0)
		r = svc_look(&svc, SVC_W_ACCEPTED, settle, NULL);
	for (size_t k = 0; r == 0 && k < svc.pids.n; k++)
		svc_pids_add(out, svc.pids.v[k]);
	svc_close(&svc);
	return r;
}
