/* Where socktune attach --cgroup and socktune detach act: the cgroups a target's listeners
 * were made in.  A socket belongs to the cgroup its creator was in when it made it (an
 * accepted socket to its listener's), and the sock_ops program runs for the sockets of its
 * cgroup: so it is the listener's cgroup that counts, which sock_diag gives as the directory's
 * inode (INET_DIAG_CGROUP_ID), not the one the process is in now (/proc/PID/cgroup: it may
 * have moved since listen()).  The inode is found under the v2 mount by a walk of the tree. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "host/diag.h"
#include "host/grow.h"
#include "host/pidinfo.h"

struct found {
	unsigned long long ino, cgroup_id, cookie;
	unsigned sport, dport;
	int listener, family;
	unsigned char src[16], dst[16];
};
#define MAX_MINE 256 /* the target's listeners whose connections are counted */
struct dump {
	struct found *v;
	size_t n, cap;
};

static void take(const struct diag_sock *s, void *ctx)
{
	struct dump *d = ctx;
	if (grow(&d->v, &d->cap, d->n, sizeof *d->v, 256) != 0)
		return;
	struct found *f = &d->v[d->n++];
	*f = (struct found){.ino = s->inode, .cgroup_id = s->cgroup_id, .cookie = s->cookie,
	                    .sport = s->sport, .dport = s->dport, .family = s->family,
	                    .listener = s->state == TS_LISTEN};
	memcpy(f->src, s->src, 16);
	memcpy(f->dst, s->dst, 16);
}

/* The directory under the mount whose inode is id (nftw's callback has no context). */
static unsigned long long want_ino;
static char *found_dir;
static size_t found_len;
static int match(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type != FTW_D || sb->st_ino != want_ino)
		return 0;
	snprintf(found_dir, found_len, "%s", path);
	return 1;
}

static int dir_of_id(const char *mount, unsigned long long id, char *out, size_t n)
{
	want_ino = id;
	found_dir = out;
	found_len = n;
	return nftw(mount, match, 16, FTW_PHYS | FTW_MOUNT) == 1 ? 0 : -1;
}

/* pid's cgroup now, as a directory (mount + its 0:: line), or "" (not known, or too long) */
static void now_of(int pid, const char *mount, char *out, size_t n)
{
	char own[PATH_MAX];
	if (pid_cgroup(pid, own, sizeof own) != 0 ||
	    (size_t)snprintf(out, n, "%s%s", mount, strcmp(own, "/") == 0 ? "" : own) >= n)
		out[0] = '\0';
}

void cg_where_free(struct cg_where *w, int n)
{
	for (int k = 0; k < n; k++) {
		free(w[k].conns);
		w[k].conns = NULL;
		w[k].nconns = 0;
	}
}

/* conns grown to cap entries (freed when it cannot be: NULL) */
static struct cg_conn *realloc_conns(struct cg_conn *conns, size_t cap)
{
	struct cg_conn *g = realloc(conns, cap * sizeof *g);
	if (!g)
		free(conns);
	return g;
}

int cg_target(const char *target, struct cg_where *w, int max, int *more, int *status, char *err,
              size_t n)
{
	struct target t;
	*status = EXIT_USAGE;
	*more = 0;
	if (parse_target(target, TARGET_PID | TARGET_PORT, &t) != 0) {
		snprintf(err, n, "%s: not a target (PID, or :PORT for the listeners on that port)", target);
		return -1;
	}
	int pid = t.pid;
	unsigned port = t.port;
	char mount[1024];
	if (cg_v2_mount(mount, sizeof mount, err, n) != 0)
		return -1;
	*status = EXIT_NOT_FOUND;
	if (pid && kill(pid, 0) != 0 && errno == ESRCH) {
		snprintf(err, n, "%s: no such process", target);
		return -1;
	}
	int nl = diag_open(pid);
	if (nl < 0) {
		*status = 1;
		snprintf(err, n, "%s: sock_diag in its network namespace: %s", target, strerror(-nl));
		return -1;
	}
	struct dump d = {0};
	int r = diag_dump(nl, 1u << TS_LISTEN | 1u << TS_ESTABLISHED, 0, take, &d);
	close(nl);
	if (r < 0) {
		*status = 1;
		snprintf(err, n, "%s: sock_diag dump: %s", target, strerror(-r));
		free(d.v);
		return -1;
	}
	struct holders hs = {0};
	if (pid)
		holders_scan(&hs, &pid, 1);
	static struct found mine[MAX_MINE];
	int nw = 0, listeners = 0, unsaid = 0, nmine = 0;
	for (size_t k = 0; k < d.n; k++) {
		const struct found *f = &d.v[k];
		if (!f->listener || (pid ? !holders_find(&hs, f->ino) : f->sport != port))
			continue;
		listeners++;
		if (!f->cgroup_id) {
			unsaid++;
			continue;
		}
		int j = 0;
		while (j < nw && w[j].id != f->cgroup_id)
			j++;
		if (j == nw) {
			if (nw == max) { /* (each cgroup past the limit counted once) */
				static unsigned long long past[4096];
				int seen = 0;
				for (int i = 0; i < *more && i < 4096 && !seen; i++)
					seen = past[i] == f->cgroup_id;
				if (!seen && *more < 4096)
					past[*more] = f->cgroup_id;
				*more += !seen;
				continue;
			}
			memset(&w[nw], 0, sizeof w[nw]);
			w[nw].id = f->cgroup_id;
			nw++;
		}
		w[j].listeners++;
		if (nmine < MAX_MINE)
			mine[nmine++] = (struct found){.sport = f->sport, .cgroup_id = f->cgroup_id};
	}
	/* the connections open on them now, each once (an IPv4 and an IPv6 listener may share a
	 * port): accepted sockets carry their listener's cgroup */
	for (size_t i = 0; i < d.n; i++) {
		int on = 0;
		for (int k = 0; !d.v[i].listener && k < nmine && !on; k++)
			on = mine[k].sport == d.v[i].sport && mine[k].cgroup_id == d.v[i].cgroup_id;
		for (int j = 0; on && j < nw; j++) {
			if (w[j].id != d.v[i].cgroup_id)
				continue;
			w[j].kept++;
			const struct found *f = &d.v[i];
			size_t cap = (size_t)w[j].nconns; /* (doubled at each power of two) */
			if (w[j].nconns >= CG_MAX_CONNS ||
			    ((cap == 0 || (cap & (cap - 1)) == 0) &&
			     !(w[j].conns = realloc_conns(w[j].conns, cap ? 2 * cap : 64))))
				continue;
			struct cg_conn *c = &w[j].conns[w[j].nconns++];
			*c = (struct cg_conn){.cookie = f->cookie, .inode = f->ino, .family = f->family,
			                      .sport = f->sport, .dport = f->dport};
			memcpy(c->src, f->src, 16);
			memcpy(c->dst, f->dst, 16);
		}
	}
	free(d.v);
	free(hs.h);
	if (!listeners) {
		cg_where_free(w, nw);
		if (pid)
			snprintf(err, n, "%s: process %d holds no TCP listener this user may see", target, pid);
		else
			snprintf(err, n, "%s: no TCP listener on port %u here", target, port);
		return -1;
	}
	if (unsaid && !nw) {
		cg_where_free(w, nw);
		*status = 1;
		snprintf(err, n, "%s: the kernel does not say which cgroup its listeners were made in "
		         "(INET_DIAG_CGROUP_ID: Linux 5.7, CONFIG_SOCK_CGROUP_DATA); use socktune "
		         "--cgroup -- PROGRAM to start it in a cgroup of its own", target);
		return -1;
	}
	struct stat root;
	if (stat(mount, &root) != 0)
		root.st_ino = 0;
	for (int j = 0; j < nw; j++) {
		w[j].root = w[j].id == 1 || w[j].id == root.st_ino; /* (1: the host's, seen from any mount) */
		if (w[j].root) {
			snprintf(w[j].dir, sizeof w[j].dir, "%s", mount);
		} else if (dir_of_id(mount, w[j].id, w[j].dir, sizeof w[j].dir) != 0) {
			*status = 1;
			snprintf(err, n, "%s: its listeners' cgroup (inode %llu) is not under %s (removed "
			         "since, or in another cgroup namespace)", target, w[j].id, mount);
			cg_where_free(w, nw);
			return -1;
		}
		if (pid)
			now_of(pid, mount, w[j].now, sizeof w[j].now);
	}
	return nw;
}
