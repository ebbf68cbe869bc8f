/* The program's own connections read back (socktune --cgroup): from the wrapper's ticks, the
 * first accepted connection (with --client, the first outgoing one) that the sock_ops
 * program tuned, once it is a tick old, read from a copy of its descriptor and said in one
 * line, source=app, as readback.c says the probe's; then nothing more.  The looks are bounded
 * (APP_MAX_LOOKS), one sock_diag dump each, filtered by the kernel to the cgroup's tree. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_opts.h"
#include "cgroup/cgroup.h"
#include "host/diag.h"
#include "host/grow.h"
#include "record.h"
#include "host/sockcopy.h"

/* The mark map of the sock_ops program, which the setsockopt hook's presence goes with (-1:
 * neither; the scope is then applied here), and whether the caller ticks cg_app_readback
 * (cg_app_follow) */
static int app_mark_fd = -1, app_followed;

#define APP_MAX_LISTENERS 64
#define APP_MAX_CONNS 256
#define APP_MAX_CGROUPS DIAG_MAX_CGROUPS /* the cgroup and its descendants: a filter test each */
#define APP_MAX_PIDS 65536   /* the processes whose descriptors are looked through */
#define APP_MAX_SKIPPED 1024 /* connections found not tuned, never copied again */
#define APP_COPIES 16        /* descriptors copied at one look, at most */
/* Looks before it gives up: 30 s of the wrapper's 250 ms ticks.  A program that makes no
 * connection of a kind (no outgoing one under --client), makes them in another network
 * namespace than the wrapper's, or passes them to a process outside its cgroup, is not
 * looked for all its life: said once, and the probe's line stands. */
#define APP_MAX_LOOKS 120

struct app_sock {
	int family, state;
	unsigned char addr[16], peer[16];
	unsigned port, peer_port;
	unsigned long long ino, cookie, cgroup_id;
};
/* What cg_readback arms and each tick looks at (the wrapper reads one program) */
static struct app {
	int armed;
	char dir[4096];
	unsigned long long ids[APP_MAX_CGROUPS]; /* the cgroup's id (its inode) and its descendants' */
	int nids, more_cgroups, more_pids;       /* past the limits */
	int said_limits;
	int unfiltered;                          /* the kernel refused the cgroup filter (< 5.10) */
	const struct st_policy *p;
	const struct host *h;
	struct cli_peer peers[CLI_MAX_PEERS];
	int npeers, client, insns, looks;
	unsigned prog_id;
	unsigned long long skipped[APP_MAX_SKIPPED]; /* cookies of connections not tuned */
	int nskipped;
	unsigned long long seen[APP_MAX_CONNS]; /* the cookies of the last look's connections */
	int nseen;
	int done[2];                            /* said, or given up: accepted, outgoing */
} app;
/* One look's sockets of the cgroup */
struct app_dump {
	int nl, nc;
	struct app_sock l[APP_MAX_LISTENERS], c[APP_MAX_CONNS];
};

void cg_app_follow(int mark_fd)
{
	app_followed = 1;
	app_mark_fd = mark_fd;
}

static int app_in_tree(unsigned long long id)
{
	for (int k = 0; k < app.nids; k++)
		if (app.ids[k] == id)
			return 1;
	return 0;
}

static void app_add(struct app_dump *a, const struct app_sock *s)
{
	if (!app_in_tree(s->cgroup_id))
		return; /* (a dump unfiltered by the kernel: any socket of the host) */
	if (s->state == TS_LISTEN ? a->nl < APP_MAX_LISTENERS : a->nc < APP_MAX_CONNS)
		*(s->state == TS_LISTEN ? &a->l[a->nl++] : &a->c[a->nc++]) = *s;
}

static void app_take(const struct diag_sock *d, void *ctx)
{
	struct app_sock s = {.family = d->family, .state = (int)d->state, .port = d->sport,
	                     .peer_port = d->dport, .ino = d->inode, .cookie = d->cookie,
	                     .cgroup_id = d->cgroup_id};
	memcpy(s.addr, d->src, sizeof s.addr);
	memcpy(s.peer, d->dst, sizeof s.peer);
	app_add(ctx, &s);
}

/* A cgroup v2 directory's inode, the kernel's id for it (0: none) */
static unsigned long long inode_of(const char *dir)
{
	struct stat st;
	return stat(dir, &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/* The cgroup dir and its descendants (the sock_ops program runs in them too): their ids into
 * app.ids, and with pids the processes in them appended to *pids (*npids, *cap) */
static void app_tree(const char *dir, int depth, int **pids, size_t *npids, size_t *cap)
{
	unsigned long long id = inode_of(dir);
	if (!id)
		return;
	if (app.nids < APP_MAX_CGROUPS)
		app.ids[app.nids++] = id;
	else
		app.more_cgroups++;
	char path[4200];
	if (pids) {
		snprintf(path, sizeof path, "%s/cgroup.procs", dir);
		FILE *f = fopen(path, "re");
		for (int pid; f && fscanf(f, "%d", &pid) == 1;)
			if (*npids < APP_MAX_PIDS && grow(pids, cap, *npids, sizeof **pids, 256) == 0)
				(*pids)[(*npids)++] = pid;
			else
				app.more_pids++;
		if (f)
			fclose(f);
	}
	DIR *d = depth < 32 ? opendir(dir) : NULL;
	for (struct dirent *e; d && (e = readdir(d));)
		if (e->d_type == DT_DIR && e->d_name[0] != '.' &&
		    snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
			app_tree(path, depth + 1, pids, npids, cap);
	if (d)
		closedir(d);
}

/* Whether connection c, on end outgoing, is one the sock_ops program tuned: copy is a copy
 * of its descriptor.  Its mark when the program marks (hook.c's socket storage, looked up by
 * the descriptor: Linux 5.2); else its scope as the program reads it: --ports, the local
 * port of an accepted connection; --client-ports, the remote port of an outgoing one;
 * --peer, the remote address. */
static int app_tuned(const struct app_sock *c, int copy, int outgoing)
{
	if (app_mark_fd >= 0) {
		uint32_t mark = 0;
		return cg_map_lookup(app_mark_fd, &copy, &mark) == 0 &&
		       mark == (outgoing ? CG_MARK_OUTGOING : CG_MARK_ACCEPTED);
	}
	int id = outgoing ? ST_V_CLIENT_PORTS : ST_V_PORTS;
	unsigned port = outgoing ? c->peer_port : c->port;
	if (st_has(app.p, id) && !st_port_in(outgoing ? app.p->client_ports : app.p->ports, port))
		return 0;
	return !app.npeers || peer_in(app.peers, app.npeers, c->family, c->peer);
}

static int app_listed(const unsigned long long *v, int n, unsigned long long cookie)
{
	for (int k = 0; k < n; k++)
		if (v[k] == cookie)
			return 1;
	return 0;
}

static int by_ino(const void *x, const void *y)
{
	const struct app_sock *a = *(const struct app_sock *const *)x, *b = *(const struct app_sock *const *)y;
	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

/* End k's first connection the program tuned among cand[n] (oldest first), read from a copy
 * of its descriptor, taken from the process of the cgroup's tree that holds it, and said:
 * 1 said (or said not readable), 0 none yet.  One not tuned is skipped for good. */
static int app_read(const struct app_sock **cand, int n, int k, struct holders *hs, int *copies)
{
	for (int j = 0; j < n && *copies < APP_COPIES; j++) {
		const struct holder *hd = holders_find(hs, cand[j]->ino);
		if (!hd)
			continue; /* (gone meanwhile, or held outside the tree: looked for again) */
		++*copies;
		int copy = sockcopy_open(hd->pid, hd->fd, cand[j]->ino), e = errno;
		if (copy < 0 && (e == ESTALE || e == EBADF || e == ESRCH))
			continue;
		if (copy < 0) {
			fprintf(stderr, "socktune: --cgroup: the program's own %s connection not read back: "
			        "pidfd_getfd on pid %d: %s\n", k ? "outgoing" : "accepted", hd->pid,
			        strerror(e));
			return 1;
		}
		if (!app_tuned(cand[j], copy, k)) {
			close(copy);
			if (app.nskipped < APP_MAX_SKIPPED)
				app.skipped[app.nskipped++] = cand[j]->cookie;
			continue;
		}
		static struct cg_end got;
		cg_read_end(copy, app.p, k, &got);
		close(copy);
		cg_say_end(app.p, &got, k, app.h, app.dir, app.insns, app.prog_id, app_mark_fd >= 0 ? 2 : 1);
		return 1;
	}
	return 0;
}

/* Said once, when it stops looking: which ends were not read back, and why that may be */
static void app_give_up(int kinds)
{
	for (int k = 0; k < kinds; k++)
		if (!app.done[k])
			fprintf(stderr, "socktune: --cgroup: the program's own %s connection not read back: "
			        "none it tuned%s seen in %d looks (%d s), and no more looked for (a program "
			        "that makes none, or makes them in another network namespace); the probe's "
			        "line stands for it\n", k ? "outgoing" : "accepted",
			        app_mark_fd >= 0 ? "" : " (in --ports, --client-ports, --peer)",
			        APP_MAX_LOOKS, APP_MAX_LOOKS / 4);
	app.done[0] = app.done[1] = 1;
}

int cg_app_readback(int final)
{
	int kinds = app.client ? 2 : 1;
	if (!app.armed || final || (app.done[0] && (kinds == 1 || app.done[1])))
		return 0;
	if (++app.looks > APP_MAX_LOOKS) {
		app_give_up(kinds);
		return 0;
	}
	app.nids = app.more_cgroups = 0;
	app_tree(app.dir, 0, NULL, NULL, NULL);
	int nl = diag_open(0);
	if (nl < 0 || !app.nids) {
		if (nl >= 0)
			close(nl);
		return 1; /* (tried again at the next tick) */
	}
	static struct app_dump d;
	d.nl = d.nc = 0;
	/* (closed by the peer, not yet by the program: still the program's, as it set it) */
	unsigned states = 1u << TS_LISTEN | 1u << TS_ESTABLISHED | 1u << TS_CLOSE_WAIT;
	int r = app.unfiltered ? -EINVAL : diag_dump_cgroups(nl, states, 0, app.ids, app.nids, app_take, &d);
	if (r == -EINVAL && !app.unfiltered) { /* (no cgroup filter: every socket, ours kept) */
		app.unfiltered = 1;
		d.nl = d.nc = 0;
	}
	if (app.unfiltered)
		r = diag_dump(nl, states, 0, app_take, &d);
	close(nl);
	if (r < 0)
		return 1;
	/* accepted: made on a listener of the tree's (its local address and port one that
	 * listener takes); outgoing: any other.  Candidates: those seen at the last look too
	 * (the program may set its own options right after accept), not found untuned before */
	const struct app_sock *cand[2][APP_MAX_CONNS];
	int ncand[2] = {0, 0};
	for (int j = 0; j < d.nc; j++) {
		const struct app_sock *c = &d.c[j];
		int accepted = 0;
		for (int q = 0; q < d.nl && !accepted; q++)
			accepted = diag_listener_takes(d.l[q].family, d.l[q].addr, d.l[q].port,
			                               c->family, c->addr, c->port) != 0;
		int k = !accepted;
		if (k < kinds && !app.done[k] && app_listed(app.seen, app.nseen, c->cookie) &&
		    !app_listed(app.skipped, app.nskipped, c->cookie))
			cand[k][ncand[k]++] = c;
	}
	app.nseen = 0;
	for (int j = 0; j < d.nc; j++)
		app.seen[app.nseen++] = d.c[j].cookie;
	if (ncand[0] || ncand[1]) {
		int *pids = NULL, copies = 0;
		size_t npids = 0, cap = 0;
		struct holders hs = {0};
		app.nids = app.more_cgroups = app.more_pids = 0;
		app_tree(app.dir, 0, &pids, &npids, &cap);
		if ((app.more_pids || app.more_cgroups) && !app.said_limits++)
			fprintf(stderr, "socktune: --cgroup: the program's own connections are looked for "
			        "in the first %d cgroups of %s and its descendants (%d more) and the first "
			        "%d processes in them (%d more)\n", APP_MAX_CGROUPS, app.dir,
			        app.more_cgroups, APP_MAX_PIDS, app.more_pids);
		holders_scan(&hs, pids, (int)npids);
		for (int k = 0; k < kinds; k++) {
			qsort(cand[k], (size_t)ncand[k], sizeof cand[k][0], by_ino);
			if (!app.done[k] && app_read(cand[k], ncand[k], k, &hs, &copies))
				app.done[k] = 1;
		}
		free(hs.h);
		free(pids);
	}
	return !(app.done[0] && (kinds == 1 || app.done[1]));
}

int cg_app_followed(void)
{
	return app_followed;
}

void cg_app_arm(const char *dir, const struct st_policy *p, int client, const struct host *h,
                int insns, unsigned prog_id, const struct cli_peer *peers, int npeers)
{
	memset(&app, 0, sizeof app);
	if (strlen(dir) < sizeof app.dir && npeers <= CLI_MAX_PEERS) {
		app.armed = 1;
		strcpy(app.dir, dir);
		app.p = p;
		app.h = h;
		memcpy(app.peers, peers, sizeof *peers * (size_t)npeers);
		app.npeers = npeers;
		app.client = client;
		app.insns = insns;
		app.prog_id = prog_id;
	}
}
