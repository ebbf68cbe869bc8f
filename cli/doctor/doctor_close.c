/* doctor's window seen at its connections' ends: in each namespace it looks at, a socket of
 * sock_diag's destroy notifications (host/diagclose.c), made before the first sample and
 * read at every tick (20 ms; nothing is lost between reads while its 8 MB buffer holds:
 * ~6,500 closes), so a connection that lived 50 ms between two connection samples counts as
 * any other: each connection freed of a listener watched goes into that listener's struct
 * doc_closed (findings/closed.c), one followed open is marked freed there.  At the end,
 * what the path rules read beside them: the initial window in force for the far peers (a
 * socktune program's --initcwnd on the service's cgroup, else their route's initcwnd, else
 * 10), that route, the congestion control of each namespace and those the host has. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "socktune_host.h"
#include "host/diagclose.h"
#include "doctor/doctor.h"
#include "host/nssysctl.h"
#include "host/route.h"

#define READS_PER_TICK 4096 /* datagrams a tick reads at most (one notification each) */

static struct doc_closed closed[DOC_MAX_LISTENERS];
static int fds[DOC_MAX_NS];
static struct diagclose_count counts[DOC_MAX_NS];

struct close_ctx {
	struct shared_window *d;
	int ns;
};

static void on_close(const struct diag_sock *s, void *ctx)
{
	struct close_ctx *x = ctx;
	if (!s->dport) /* (a listener freed, or a socket never connected) */
		return;
	int l = doc_listener_of(x->d, x->ns, s);
	if (l < 0)
		return;
	doc_closed_add(&closed[l], s);
	struct doc_conn *c = doc_conn_find(x->d, s->cookie, 0);
	if (c && c->listener == l) {
		c->freed = 1;
		c->end_received = s->ti.bytes_received;
	}
}

void doc_closes_open(struct shared_window *d)
{
	char avail[sizeof d->ns[0].cong_available] = "";
	st_sysctl_str("net.ipv4.tcp_available_congestion_control", avail, sizeof avail);
	for (int k = 0; k < d->nns; k++) {
		struct doc_ns *ns = &d->ns[k];
		int rb = 0;
		fds[k] = ns->nl >= 0 ? diagclose_open(ns->pid, &rb) : -ENOENT;
		ns->closes = fds[k] >= 0 ? 1 : fds[k];
		memcpy(ns->cong_available, avail, sizeof avail);
		if (ns->ours)
			st_sysctl_str("net.ipv4.tcp_congestion_control", ns->cong, sizeof ns->cong);
		else
			target_sysctl_str(ns->pid, "net.ipv4.tcp_congestion_control", ns->cong,
			                  sizeof ns->cong);
		if (fds[k] < 0 && ns->nl >= 0)
			fprintf(stderr, "socktune: doctor: connections closed in network namespace %llu "
			        "are not seen: sock_diag's destroy notifications: %s\n", ns->ino,
			        strerror(-fds[k]));
	}
}

void doc_closes_read(struct shared_window *d)
{
	for (int k = 0; k < d->nns; k++) {
		if (fds[k] < 0)
			continue;
		struct close_ctx x = {d, k};
		if (diagclose_read(fds[k], READS_PER_TICK, on_close, &x, &counts[k]) < 0) {
			close(fds[k]);
			fds[k] = -1;
			d->ns[k].closes = -EIO;
		}
		d->ns[k].close_overruns = counts[k].overruns;
	}
}

/* The route, in listener l's namespace, to the latest far peer of it */
static void far_route(struct shared_window *d, int l)
{
	struct doc_listener *L = &d->l[l];
	const struct doc_ns *ns = &d->ns[L->ns];
	char peer[INET6_ADDRSTRLEN];
	if (!closed[l].far || !inet_ntop(closed[l].far_family, closed[l].far_peer, peer, sizeof peer))
		return;
	static struct route_result rr;
	if (route_lookup_in(ns->ours ? 0 : ns->pid, peer, &rr) != 0)
		return;
	L->far_route = rr.route;
	L->far_route_found = 1;
}

void doc_closes_end(struct shared_window *d)
{
	doc_closes_read(d); /* (what came since the last tick) */
	for (int k = 0; k < d->nns; k++) {
		if (fds[k] >= 0)
			close(fds[k]);
		fds[k] = -1;
		if (d->ns[k].close_overruns)
			fprintf(stderr, "socktune: doctor: the kernel dropped destroy notifications %llu "
			        "times in network namespace %llu (a full buffer): connections closed then "
			        "are not counted\n", d->ns[k].close_overruns, d->ns[k].ino);
	}
	for (int l = 0; l < d->nl; l++) {
		struct doc_listener *L = &d->l[l];
		if (d->ns[L->ns].closes != 1)
			continue;
		L->closed = &closed[l];
		far_route(d, l);
		int iw = 0;
		char cong[sizeof L->cg_cong] = "";
		if (doc_cgroup_sets(d, l, &iw, cong, sizeof cong) == 0) {
			L->cg_cong_set = cong[0] != '\0';
			memcpy(L->cg_cong, cong, sizeof cong);
		}
		if (iw > 0) {
			L->iw = iw;
			L->iw_from = "cgroup";
		} else if (L->far_route_found &&
		           (L->far_route.has_metric >> ST_RTAX_INITCWND & 1) &&
		           L->far_route.metric[ST_RTAX_INITCWND]) {
			L->iw = (int)L->far_route.metric[ST_RTAX_INITCWND];
			L->iw_from = "route";
		} else {
			L->iw = 10;
			L->iw_from = "default";
		}
	}
}
