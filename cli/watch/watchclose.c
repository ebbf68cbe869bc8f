/* socktune watch at its listeners' connections' ends: in each namespace it follows, a socket
 * of sock_diag's destroy notifications (host/diagclose.c), always on.  Each TCP socket the
 * kernel frees there is one notification; one of a listener watched (its local address and
 * port: an accepted connection carries its listener's) counts in that listener's
 * socktune_listener_connections_closed_total, and goes into its window's struct doc_closed
 * (findings/closed.c), which the path rules judge (findings_path.c).  A connection that
 * lived 50 ms between two connection samples is counted as any other: the count is the
 * kernel's, not a sample's.
 *
 * Reading: the sockets are in the poll loop, read when the kernel has something, then not
 * polled again for READ_GAP_S: at most 20 reads a second however many close, each taking
 * every notification queued (the buffer, 8 MB, holds ~6,500: ~130,000 closes a second
 * between two reads).  When it was full the kernel dropped some and says so (ENOBUFS):
 * counted per namespace (socktune_netns_close_overruns_total, a line on stderr the first
 * time), the counters undercount from then on. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "socktune_host.h"
#include "host/diagclose.h"
#include "findings/window.h"
#include "watch/watch.h"
#include "host/nssysctl.h"
#include "host/route.h"

#define READ_GAP_S 0.05   /* after a read that found notifications, the next one at least */
#define READS_PER_NS 8192 /* datagrams one read takes at most from a namespace */

/* A namespace's notifications */
struct close_ns {
	unsigned long long ino;
	int pid;
	int fd;           /* -1: none (could not be made: error) */
	int error;
	int seen;
	struct diagclose_count n;
	int overrun_said;
	char cong[16];    /* its net.ipv4.tcp_congestion_control, read once */
	int cong_read;
};

/* A listener's (by its index in the watch's table, its identity checked) */
struct close_l {
	unsigned long long ns_ino;
	int family;
	unsigned char addr[16];
	unsigned port;
	unsigned long long total; /* since watch began following it */
	struct doc_closed win;    /* over the findings' window under way */
};

static struct close_ns cns[WATCH_MAX_NS];
static int ncns;
static struct close_l *cls[WATCH_MAX_LISTENERS];
static double next_read;
static unsigned long long notifications;
static char available[256];

static int same(const struct close_l *c, const struct watch_listener *l)
{
	return c->ns_ino == l->ns_ino && c->port == l->port && c->family == l->family &&
	       memcmp(c->addr, l->addr, sizeof c->addr) == 0;
}

/* Listener l's entry (made when new or when its slot is another listener's now); NULL when
 * memory ran out */
static struct close_l *entry(const struct watch *w, const struct watch_listener *l)
{
	size_t k = (size_t)(l - w->l);
	struct close_l *c = cls[k];
	if (c && same(c, l))
		return c;
	if (!c && !(c = cls[k] = malloc(sizeof *c)))
		return NULL;
	memset(c, 0, sizeof *c);
	c->ns_ino = l->ns_ino;
	c->port = l->port;
	c->family = l->family;
	memcpy(c->addr, l->addr, sizeof c->addr);
	return c;
}

void watch_close_sync(struct watch *w)
{
	if (!available[0])
		st_sysctl_str("net.ipv4.tcp_available_congestion_control", available, sizeof available);
	for (int k = 0; k < ncns; k++)
		cns[k].seen = 0;
	for (int j = 0; j < w->nns; j++) {
		const struct watch_ns *ns = &w->ns[j];
		int found = 0;
		for (int k = 0; k < ncns && !found; k++)
			if (cns[k].ino == ns->ino) {
				cns[k].seen = found = 1;
				cns[k].pid = ns->pid; /* (the one it had may have exited) */
			}
		if (found || ncns == WATCH_MAX_NS)
			continue;
		struct close_ns *c = &cns[ncns++];
		memset(c, 0, sizeof *c);
		c->ino = ns->ino;
		c->pid = ns->pid;
		c->seen = 1;
		int rb = 0;
		c->fd = diagclose_open(ns->pid, &rb);
		if (c->fd < 0) {
			c->error = -c->fd;
			c->fd = -1;
			if (c->error != ENOENT && c->error != ESRCH)
				fprintf(stderr, "socktune: watch: connections closed in network namespace "
				        "%llu are not counted: sock_diag's destroy notifications: %s\n",
				        c->ino, strerror(c->error));
		}
	}
	/* a namespace no longer followed: its socket goes (it would keep the namespace alive) */
	int kept = 0;
	for (int k = 0; k < ncns; k++) {
		if (!cns[k].seen) {
			if (cns[k].fd >= 0)
				close(cns[k].fd);
			continue;
		}
		cns[kept++] = cns[k];
	}
	ncns = kept;
}

int watch_close_fds(struct pollfd *pf, int max, double now, double *wake)
{
	if (now < next_read) { /* (read lately: the next read is due then, not before) */
		if (next_read < *wake)
			*wake = next_read;
		return 0;
	}
	int n = 0;
	for (int k = 0; k < ncns && n < max; k++)
		if (cns[k].fd >= 0)
			pf[n++] = (struct pollfd){.fd = cns[k].fd, .events = POLLIN};
	return n;
}

/* The listeners of one namespace by port, for the notifications of one read */
struct by_port {
	unsigned port;
	int l;
};
static int port_cmp(const void *a, const void *b)
{
	unsigned x = ((const struct by_port *)a)->port, y = ((const struct by_port *)b)->port;
	return x < y ? -1 : x > y;
}

struct close_ctx {
	struct watch *w;
	struct by_port *ports;
	int nports;
};

static void on_close(const struct diag_sock *s, void *ctx)
{
	struct close_ctx *x = ctx;
	notifications++;
	if (!s->dport)
		return; /* (a listener freed, or a socket never connected) */
	struct by_port key = {s->sport, 0};
	struct by_port *p = bsearch(&key, x->ports, (size_t)x->nports, sizeof *p, port_cmp);
	if (!p)
		return;
	while (p > x->ports && p[-1].port == s->sport)
		p--;
	/* the listener that takes it: on its own address before a wildcard one */
	struct watch_listener *best = NULL;
	int score = 0;
	for (; p < x->ports + x->nports && p->port == s->sport; p++) {
		struct watch_listener *l = &x->w->l[p->l];
		int t = diag_listener_takes(l->family, l->addr, l->port, s->family, s->src, s->sport);
		if (t > score) {
			score = t;
			best = l;
		}
	}
	struct close_l *c = best ? entry(x->w, best) : NULL;
	if (!c)
		return;
	c->total++;
	doc_closed_add(&c->win, s);
}

void watch_close_run(struct watch *w, const struct pollfd *pf, int n, double now)
{
	static struct by_port ports[WATCH_MAX_LISTENERS];
	int any = 0;
	for (int i = 0; i < n; i++) {
		if (!(pf[i].revents & (POLLIN | POLLERR)))
			continue;
		struct close_ns *c = NULL;
		for (int k = 0; k < ncns && !c; k++)
			if (cns[k].fd == pf[i].fd)
				c = &cns[k];
		if (!c)
			continue;
		int np = 0;
		for (int k = 0; k < w->nl; k++)
			if (w->l[k].used && w->l[k].ns_ino == c->ino)
				ports[np++] = (struct by_port){w->l[k].port, k};
		qsort(ports, (size_t)np, sizeof *ports, port_cmp);
		struct close_ctx x = {w, ports, np};
		unsigned long long before = c->n.overruns;
		if (diagclose_read(c->fd, READS_PER_NS, on_close, &x, &c->n) < 0) {
			close(c->fd);
			c->fd = -1;
			c->error = EIO;
		}
		any = 1;
		if (c->n.overruns > before && !c->overrun_said++)
			fprintf(stderr, "socktune: watch: the kernel dropped destroy notifications in "
			        "network namespace %llu (its buffer full): connections closed then are "
			        "not counted (socktune_netns_close_overruns_total); said once\n", c->ino);
	}
	if (any)
		next_read = now + READ_GAP_S;
}

int watch_close_total(const struct watch *w, const struct watch_listener *l,
                      unsigned long long *total)
{
	const struct close_l *c = cls[l - w->l];
	for (int k = 0; k < ncns; k++)
		if (cns[k].ino == l->ns_ino) {
			if (cns[k].fd < 0 && !cns[k].n.messages)
				return -1; /* (not followed: no sample rather than a wrong 0) */
			*total = c && same(c, l) ? c->total : 0;
			return 0;
		}
	return -1;
}

int watch_close_overruns(unsigned long long ino, unsigned long long *overruns)
{
	for (int k = 0; k < ncns; k++)
		if (cns[k].ino == ino && (cns[k].fd >= 0 || cns[k].n.messages)) {
			*overruns = cns[k].n.overruns;
			return 0;
		}
	return -1;
}

unsigned long long watch_close_notifications(void)
{
	return notifications;
}

/* The route, in l's namespace (pid: a process there), to the latest far peer of c */
static void far_route(int pid, const struct doc_closed *c, struct doc_listener *L)
{
	char peer[INET6_ADDRSTRLEN];
	if (!inet_ntop(c->far_family, c->far_peer, peer, sizeof peer))
		return;
	static struct route_result rr;
	if (route_lookup_in(pid, peer, &rr) != 0)
		return;
	L->far_route = rr.route;
	L->far_route_found = 1;
}

void watch_close_fill(struct watch *w, const struct watch_listener *l, struct doc_listener *L,
                      struct doc_ns *ns)
{
	struct close_ns *c = NULL;
	for (int k = 0; k < ncns && !c; k++)
		if (cns[k].ino == l->ns_ino && cns[k].fd >= 0)
			c = &cns[k];
	if (!c)
		return;
	ns->closes = 1;
	ns->close_overruns = c->n.overruns;
	memcpy(ns->cong_available, available, sizeof available);
	if (!c->cong_read++) {
		if (!c->pid)
			st_sysctl_str("net.ipv4.tcp_congestion_control", c->cong, sizeof c->cong);
		else
			target_sysctl_str(c->pid, "net.ipv4.tcp_congestion_control", c->cong,
			                  sizeof c->cong);
	}
	memcpy(ns->cong, c->cong, sizeof ns->cong);
	struct close_l *e = entry(w, l);
	if (!e)
		return;
	L->closed = &e->win;
	/* the initial window for the far peers: their route's, else the kernel's (a cgroup
	 * program's is not read here: the round trips measured say whether it holds) */
	L->iw = 10;
	L->iw_from = "default";
	if (!e->win.far)
		return;
	far_route(c->pid, &e->win, L);
	if (L->far_route_found && (L->far_route.has_metric >> ST_RTAX_INITCWND & 1) &&
	    L->far_route.metric[ST_RTAX_INITCWND]) {
		L->iw = (int)L->far_route.metric[ST_RTAX_INITCWND];
		L->iw_from = "route";
	}
}

void watch_close_window_end(struct watch *w)
{
	for (int k = 0; k < w->nl; k++)
		if (cls[k])
			memset(&cls[k]->win, 0, sizeof cls[k]->win);
}

void watch_close_end(void)
{
	for (int k = 0; k < ncns; k++)
		if (cns[k].fd >= 0)
			close(cns[k].fd);
	ncns = 0;
	for (int k = 0; k < WATCH_MAX_LISTENERS; k++) {
		free(cls[k]);
		cls[k] = NULL;
	}
}
