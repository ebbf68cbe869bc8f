/* watch --apply: whether a cure set on a listener reaches the connections it accepts.  The
 * kernel copies some options from a listener into each connection at accept (TCP_NODELAY,
 * TCP_USER_TIMEOUT: sockcopy_inherited), so a cure on the listener is on every connection
 * accepted after it, unless the application sets its own value on each one after accept.
 * The listener's connections when the cure was set are remembered (their inodes); those of
 * the latest connection sample that are not among them were accepted since, and are read:
 * one that holds another value was set so by the application.  watch says so once, with the
 * cures that hold against it, and never sets the value on each connection after the
 * application: two parties would take turns on every one. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record.h"
#include "via.h"
#include "watch/watch.h"
#include "host/sockcopy.h"

#define OLDER_MAX 65536 /* connections of a listener remembered at its cure */

struct older {
	const struct watch_listener *l;
	unsigned long long *ino;
	int n, cap;
};

static void on_older(const struct diag_sock *s, void *ctx)
{
	struct older *x = ctx;
	if (x->n < 0 || !diag_listener_takes(x->l->family, x->l->addr, x->l->port, s->family,
	                                     s->src, s->sport))
		return;
	if (x->n == x->cap) {
		int cap = x->cap ? 2 * x->cap : 256;
		unsigned long long *p = cap <= OLDER_MAX ? realloc(x->ino, (size_t)cap * sizeof *p) : NULL;
		if (!p) {
			x->n = -1; /* (not all known: nothing judged on them) */
			return;
		}
		x->ino = p;
		x->cap = cap;
	}
	x->ino[x->n++] = s->inode;
}

static int by_ino(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
	return x < y ? -1 : x > y;
}

void watch_hold_remember(struct watch *w, const struct watch_listener *l, struct watch_applied *a)
{
	struct older x = {l, NULL, 0, 0};
	unsigned port = l->port;
	int nl = -1;
	for (int k = 0; k < w->nns; k++)
		if (w->ns[k].ino == l->ns_ino)
			nl = w->ns[k].nl;
	if (nl < 0 || diag_dump_ports(nl, 1u << TS_ESTABLISHED, 0, &port, 1, on_older, &x) < 0 ||
	    x.n < 0) {
		free(x.ino);
		a->nolder = -1;
		return;
	}
	qsort(x.ino, (size_t)x.n, sizeof x.ino[0], by_ino);
	a->older = x.ino;
	a->nolder = x.n;
	a->judged = w->conn_samples; /* (the sample before the cure judges nothing) */
}

static int older(const struct watch_applied *a, unsigned long long ino)
{
	return a->nolder > 0 &&
	       bsearch(&ino, a->older, (size_t)a->nolder, sizeof a->older[0], by_ino) != NULL;
}

/* The bounds of watch_hold_judge: the connections read in one round (each a pidfd_getfd and
 * a getsockopt; the rest wait for the next round), and when it concludes that the cure holds
 * (the healthy case: the application leaves the option alone) and judges the listener no
 * more: JUDGE_ROUNDS rounds, each with a connection accepted after the cure that read its
 * value and none that read another, or one round with JUDGE_ENOUGH such connections.  An
 * application that resets the option does it on every connection it accepts, so the first
 * that is read shows it.  A listener whose newer connections have no holder found (another
 * pid namespace) is given up after JUDGE_ROUNDS rounds too: each such round walks every
 * process's descriptors. */
#define JUDGE_READ_MAX 64
#define JUDGE_ENOUGH 32
#define JUDGE_ROUNDS 3

/* Whether a's listener's new connections are still to be read */
static int judging(const struct watch_applied *a)
{
	return a->used && sockcopy_inherited(a->opt) && a->nolder >= 0 && a->set == a->want &&
	       !a->backed_off && !a->reset_said && !a->judge_done;
}

int watch_apply_judging(const struct watch *w)
{
	int n = 0;
	for (int k = 0; k < WATCH_MAX_APPLIED; k++)
		n += judging(&w->applied[k]);
	return n;
}

/* The line that says the application undoes the cure on each connection (n of the read
 * ones hold another value), with the cures that hold against it: the cgroup mode's
 * setsockopt hook (when its program sets the option) and the preload at the next start */
static void say_reset(const struct watch_applied *a, int n, int read)
{
	char addr[64], flag[64], fix[120], note[900], cg[300] = "";
	int o = a->opt, is_flag = st_opt_is_flag(o);
	const char *label = st_sockopts[o].label;
	diag_addr(a->family, a->addr, a->port, addr, sizeof addr);
	if (is_flag)
		snprintf(flag, sizeof flag, "--%s", st_vars[o].option);
	else
		snprintf(flag, sizeof flag, "--%s %d", st_vars[o].option, a->set);
	int cgroup = st_sockopts[o].sockops != ST_SOCKOPS_NONE;
	if (cgroup) {
		snprintf(fix, sizeof fix, "socktune attach --cgroup %s %d", flag, a->pid);
		snprintf(cg, sizeof cg, "attach --cgroup (its setsockopt hook keeps the value against "
		         "the application's own call, on the connections made from then on); ");
	}
	snprintf(note, sizeof note, "%d of the %d connections accepted since watch set %s on the "
	         "listener read %s: the application sets it %s on each connection it accepts, "
	         "after the kernel copied the listener's %d, so the listener's cure does not reach "
	         "them, and watch does not set it on each connection after the application.  "
	         "Cures that hold: %sat the next start, socktune %s -- COMMAND (the preload undoes "
	         "the application's own setsockopt)%s%s%s", n, read, label,
	         is_flag ? (a->set ? "0" : "1") : "another value",
	         is_flag ? (a->set ? "off" : "on") : "otherwise", a->set, cg, flag,
	         cgroup ? " or socktune --cgroup " : "", cgroup ? flag : "",
	         cgroup ? " -- COMMAND" : "");
	struct rec *r = rec_new();
	rec_str(r, K_EVENT, "apply-reset-per-connection");
	rec_str(r, K_CHK_OPTION, ST_KEY(o));
	if (o == ST_V_NODELAY) {
		rec_bool(r, K_LISTENER_NODELAY, a->set);
		rec_bool(r, K_CONNECTION_NODELAY, !a->set);
	} else {
		rec_int(r, K_JRN_SET, a->set);
	}
	rec_int(r, K_SHOWING, n);
	rec_int(r, K_PID, a->pid);
	rec_int(r, K_FD, a->fd);
	rec_str(r, K_ADDR, addr);
	rec_int(r, K_NETNS, (long long)a->ns_ino);
	if (cgroup)
		rec_str(rec_arr(r, K_FIX), 0, fix);
	rec_str(r, K_NOTE, note);
	rec_say(stderr, "socktune level=warn ", r);
	rec_free(r);
}

/* The connections of a's listener accepted since its cure (c[n]), read through pidfd_getfd
 * copies from their holders: *read of them read, *reset holding another value */
static int newer(const struct watch_applied *a, const struct watch_conn *c)
{
	return c->l && watch_applied_on(a, c->l) && !older(a, c->last.inode);
}

static void read_copies(const struct watch_applied *a, const struct watch_conn *c, int n,
                        int *read, int *reset)
{
	/* their holders: the listener's, else (a prefork worker's) every process's */
	struct holders hs = {0};
	int found = 0, tried = 0;
	for (int pass = 0; pass < 2 && !found; pass++) {
		free(hs.h);
		memset(&hs, 0, sizeof hs);
		holders_scan(&hs, pass ? NULL : &a->pid, pass ? 0 : 1);
		for (int k = 0; k < n; k++)
			found += newer(a, &c[k]) && holders_find(&hs, c[k].last.inode);
	}
	for (int k = 0; k < n && tried < JUDGE_READ_MAX; k++) {
		const struct holder *h = newer(a, &c[k]) ? holders_find(&hs, c[k].last.inode) : NULL;
		if (!h)
			continue;
		tried++;
		int copy = sockcopy_open(h->pid, h->fd, h->ino);
		if (copy < 0)
			continue;
		int v = sockcopy_get(copy, a->opt);
		close(copy);
		*read += v >= 0;
		*reset += v >= 0 && v != a->set;
	}
	free(hs.h);
}

/* The same through the iterator, by their cookies (a cure it set: no holder read); -1 when
 * its run failed (said) */
static int read_iterator(struct watch *w, const struct watch_applied *a,
                         const struct watch_conn *c, int n, int *read, int *reset)
{
	unsigned long long cookies[JUDGE_READ_MAX] = {0};
	int fam[JUDGE_READ_MAX] = {0}, vals[JUDGE_READ_MAX], m = 0;
	for (int k = 0; k < n && m < JUDGE_READ_MAX; k++)
		if (newer(a, &c[k]) && c[k].last.cookie) {
			cookies[m] = c[k].last.cookie;
			fam[m++] = c[k].last.family;
		}
	if (watch_bpf_read(w, a->ns_ino, cookies, fam, m, a->opt, vals, 1) < 0)
		return -1;
	for (int k = 0; k < m; k++) {
		*read += vals[k] >= 0;
		*reset += vals[k] >= 0 && vals[k] != a->set;
	}
	return 0;
}

void watch_hold_judge(struct watch *w, struct watch_applied *a)
{
	if (!judging(a) || a->judged == w->conn_samples)
		return;
	for (int k = 0; k < WATCH_MAX_APPLIED; k++) { /* (once for the listener) */
		const struct watch_applied *o = &w->applied[k];
		if (o != a && o->used && o->opt == a->opt && o->reset_said && o->port == a->port &&
		    o->ns_ino == a->ns_ino && o->family == a->family && !memcmp(o->addr, a->addr, 16))
			return;
	}
	a->judged = w->conn_samples;
	int n, any = 0, read = 0, reset = 0;
	const struct watch_conn *c = watch_conns(&n);
	for (int k = 0; k < n && !any; k++)
		any = newer(a, &c[k]);
	if (!any)
		return;
	if (a->via != VIA_BPF)
		read_copies(a, c, n, &read, &reset);
	else if (read_iterator(w, a, c, n, &read, &reset) != 0)
		return;
	if (!reset) {
		if (read)
			a->held_rounds++;
		else
			a->blind_rounds++;
		a->judge_done = read >= JUDGE_ENOUGH || a->held_rounds >= JUDGE_ROUNDS ||
		                a->blind_rounds >= JUDGE_ROUNDS;
		return;
	}
	a->reset_said = 1;
	say_reset(a, reset, read);
}
