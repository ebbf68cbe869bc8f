/* revert through the TCP iterator: a change watch --apply made with it (via bpf in the
 * journal), or one a pidfd copy made whose process no longer gives a copy (--via auto; the
 * journal has its cookie).  The socket is the one the journal names when sock_diag, in the
 * journalled network namespace, shows a socket of that cookie and that inode (a cookie is
 * never given twice until reboot; the inode is checked as the pidfd path checks it), and it
 * still holds the value apply set, read by one run of the iterator; then the value from
 * before is set and read back in a second run.  A listener set back sets back the
 * connections it accepted since that hold the applied value too (an option they inherit),
 * found as the pidfd path finds them (sock_diag: its address and port), in the same run. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/clock.h"
#include "host/diag.h"
#include "findings/findings.h"
#include "host/itertune.h"
#include "host/sockcopy.h"
#include "journal.h"
#include "record.h"
#include "revert/revert.h"
#include "via.h"

/* What sock_diag shows of the namespace: the journalled socket, and the connections on it
 * when it listens */
struct look {
	const struct journal_change *c;
	int found, listening, family;
	unsigned port;
	unsigned char addr[16];
	unsigned long long *conn, *conn_ino; /* cookies and inodes */
	int *conn_family;
	int nconn, cap;
};

static void on_sock(const struct diag_sock *s, void *ctx)
{
	struct look *x = ctx;
	if (s->cookie == x->c->cookie && s->inode == x->c->inode) {
		x->found = 1;
		x->listening = s->state == TS_LISTEN;
		x->family = s->family;
		x->port = s->sport;
		memcpy(x->addr, s->src, 16);
	}
}

static void on_conn(const struct diag_sock *s, void *ctx)
{
	struct look *x = ctx;
	if (s->state == TS_LISTEN || !s->inode ||
	    !diag_listener_takes(x->family, x->addr, x->port, s->family, s->src, s->sport))
		return;
	if (x->nconn == x->cap) {
		int cap = x->cap ? 2 * x->cap : 64;
		unsigned long long *a = realloc(x->conn, (size_t)cap * sizeof *a);
		if (a)
			x->conn = a;
		unsigned long long *b = realloc(x->conn_ino, (size_t)cap * sizeof *b);
		if (b)
			x->conn_ino = b;
		int *f = realloc(x->conn_family, (size_t)cap * sizeof *f);
		if (f)
			x->conn_family = f;
		if (!a || !b || !f)
			return;
		x->cap = cap;
	}
	x->conn[x->nconn] = s->cookie;
	x->conn_ino[x->nconn] = s->inode;
	x->conn_family[x->nconn++] = s->family;
}

/* One iterator run in namespace fd over s[n], its line said */
static int run(int fd, const char *name, struct it_sock *s, int n, int mode)
{
	char err[600];
	struct bi_run r;
	double t0 = clock_mono_s();
	int rc = it_run(fd, s, n, mode, &r, err, sizeof err);
	via_say_run(stderr, "revert", name, &r, n, 1000 * (clock_mono_s() - t0), rc, err);
	return rc;
}

/* The connections of the listener holding the applied value set back (not those with a
 * change of their own in the journal): 0 with *set and *failed, -1 */
static int conns_back(int fd, const char *name, const struct look *x, int what,
                      const struct journal_change *c, const unsigned long long *skip, int nskip,
                      int *set, int *failed)
{
	*set = *failed = 0;
	struct it_sock *s = calloc((size_t)(x->nconn > 0 ? x->nconn : 1), sizeof *s);
	if (!s)
		return -1;
	int n = 0;
	for (int k = 0; k < x->nconn; k++) {
		int skipped = 0;
		for (int j = 0; j < nskip && !skipped; j++)
			skipped = skip[j] == x->conn_ino[k];
		if (skipped)
			continue;
		s[n] = (struct it_sock){.cookie = x->conn[k], .family = x->conn_family[k]};
		it_add(&s[n++], what, c->before);
	}
	if (n && run(fd, name, s, n, IT_READ) != 0) {
		free(s);
		return -1;
	}
	int m = 0;
	for (int k = 0; k < n; k++) /* (those that hold the value applied) */
		if (s[k].visited && s[k].out[0].got != ST_UNREAD &&
		    (st_opt_is_flag(what) ? s[k].out[0].got != 0 : s[k].out[0].got) == c->after)
			s[m++] = s[k];
	if (m && run(fd, name, s, m, IT_SET) != 0) {
		free(s);
		return -1;
	}
	for (int k = 0; k < m; k++) {
		const struct st_outcome *o = &s[k].out[0];
		int got = o->got == ST_UNREAD ? -1 : st_opt_is_flag(what) ? o->got != 0 : o->got;
		if (s[k].visited && o->state == ST_SET && got == c->before)
			(*set)++;
		else
			(*failed)++;
	}
	free(s);
	return 0;
}

int revert_bpf(int jfd, const char *path, const struct journal_change *all, int n,
               const struct journal_change *c, int what)
{
	char name[300], why[600], left[400] = "", note[400] = "", err[200] = "";
	int fd, before = -1, after = -1, conns = -1, rc = -1;
	struct look x = {.c = c};
	if (netns_by_ino(c->netns, &fd, name, sizeof name, why, sizeof why) != 0) {
		snprintf(err, sizeof err, "%.190s", why);
		goto said;
	}
	int nl = diag_open_netns(fd);
	if (nl < 0 || diag_dump(nl, ~0u, 0, on_sock, &x) < 0) {
		snprintf(err, sizeof err, "sock_diag in network namespace %llu: %s", c->netns,
		         strerror(nl < 0 ? -nl : errno));
		if (nl >= 0)
			close(nl);
		goto closed;
	}
	if (!x.found) {
		snprintf(left, sizeof left, "the socket is gone (no socket of cookie %llu and inode %llu "
		         "in network namespace %llu): nothing to undo", c->cookie, c->inode, c->netns);
		close(nl);
		goto closed;
	}
	struct it_sock s = {.cookie = c->cookie, .family = x.family};
	it_add(&s, what, c->before);
	if (run(fd, name, &s, 1, IT_READ) != 0 || !s.visited || s.out[0].got == ST_UNREAD) {
		snprintf(err, sizeof err, "the TCP iterator did not read it (its line says why)");
		close(nl);
		goto closed;
	}
	int now = st_opt_is_flag(what) ? s.out[0].got != 0 : s.out[0].got;
	if (now != c->after) {
		snprintf(left, sizeof left, "the value is %d now, not the %d apply set: left (set since "
		         "by the application or an operator)", now, c->after);
		close(nl);
		goto closed;
	}
	before = now;
	if (run(fd, name, &s, 1, IT_SET) == 0 && s.visited && s.out[0].state == ST_SET) {
		rc = 0;
		after = s.out[0].got == ST_UNREAD ? -1 : st_opt_is_flag(what) ? s.out[0].got != 0
		                                                               : s.out[0].got;
	} else {
		snprintf(err, sizeof err, "%s", s.out[0].state == ST_FAILED ? strerror(s.out[0].err)
		                                : "the TCP iterator did not set it");
	}
	if (rc == 0 && x.listening && sockcopy_inherited(what)) {
		int nskip, set, failed;
		unsigned long long *skip = revert_others(all, n, c, &nskip);
		if (diag_dump_ports(nl, 1u << TS_ESTABLISHED | 1u << TS_CLOSE_WAIT, 0, &x.port, 1,
		                    on_conn, &x) >= 0 &&
		    conns_back(fd, name, &x, what, c, skip, nskip, &set, &failed) == 0) {
			conns = set;
			if (set || failed)
				snprintf(note, sizeof note, "%d connection%s of this listener held %s %d, "
				         "inherited from it since the change: set back to %d, each read back%s",
				         set + failed, set + failed == 1 ? "" : "s", c->option, c->after,
				         c->before, failed ? "; some would not take it" : "");
			if (failed)
				rc = -1, snprintf(err, sizeof err, "%s", strerror(EIO));
		} else {
			snprintf(note, sizeof note, "the connections accepted since the change were not "
			         "looked at: they may still hold %s %d", c->option, c->after);
		}
		free(skip);
	}
	close(nl);
closed:
	if (fd >= 0)
		close(fd);
said:;
	struct rec *r = revert_rec(c);
	if (c->pid > 0)
		rec_int(r, K_PID, c->pid);
	if (c->fd >= 0)
		rec_int(r, K_FD, c->fd);
	rec_str(r, K_ADDR, c->addr);
	rec_str(r, K_VIA, "bpf");
	rec_int(r, K_COOKIE, (long long)c->cookie);
	if (rc != 0 && !left[0]) /* (neither undone nor left as another's) */
		fprintf(stderr, "socktune: revert %s: through the TCP iterator: %s\n", c->change, err);
	int done = revert_said(jfd, path, c, r, &(struct revert_end){.rc = rc, .before = before,
	                       .after = after, .conns = conns, .left = left, .err = err,
	                       .note = note}) == 0;
	free(x.conn);
	free(x.conn_ino);
	free(x.conn_family);
	return done ? 0 : -1;
}
