/* watch --apply: the cure of a finding that a socket option cures, applied to the live
 * listener from outside, once per socket: accept-queue-overflow listens again on a
 * pidfd_getfd copy with DOC_BACKLOG_CURE (the kernel cuts it to the namespace's somaxconn),
 * nagle-delayed-ack sets TCP_NODELAY on the listener (its next connections inherit it) and
 * on the connections of it the latest connection sample saw, held by the listener's
 * service.  Every socket of the listener is changed: an SO_REUSEPORT group is one listener
 * of several sockets, each with its own queue and backlog, and a cure on one leaves the
 * others dropping.  Each change is read back from the kernel, written to the journal
 * (fsync'd) and said on stderr; a change the journal cannot take is undone at once.
 *
 * What is watched is a socket (its inode), not an address: a server restarted on the same
 * port has new sockets, and they get the cure when the finding comes back; the entry of a
 * socket that is gone (its process, or its descriptor) is forgotten, whatever became of it
 * (changed, failed, backed off from).  The holders are looked up in the listener's service
 * first, then in every process: after a restart the new process is not the one the listener
 * was last seen held by.
 *
 * Back-off: the value set on a socket is read back at every window after.  Another value
 * there means the application or an operator set the option (socktune revert, say): watch
 * says so once and never applies that option to that socket again, so two parties never
 * take turns on one socket.  For the same reason, an application that sets TCP_NODELAY 0 on
 * each connection it accepts (the listener keeps watch's 1, the connections do not) is not
 * fought connection by connection: the connections accepted after the cure are read, and
 * watch says once that the cure does not hold there, with the cures that do.
 *
 * Scope: watch sees every network namespace of the node, but changes sockets only in those
 * the operator named: its own, the PID targets', a target process's own, and --apply-netns's
 * (all: every one).  A finding outside them is reported as ever, with its fix, and a line
 * says once that it was not applied, and why. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "findings.h"
#include "journal.h"
#include "record.h"
#include "watch.h"

#define OLDER_MAX 65536 /* connections of a listener remembered at its NODELAY cure */

static const char *option_of(int what)
{
	return what == SC_BACKLOG ? "backlog" : "nodelay";
}

/* one line on stderr: "socktune level=warn " and the record (its pid: the process that
 * holds the socket, as attach's lines have it) */
static void say(const struct rec *r)
{
	rec_say(stderr, "socktune level=warn ", r);
}

int watch_apply_open(struct watch *w)
{
	w->journal_fd = -1;
	if (!w->a->apply)
		return 0;
	/* the scope: watch's own namespace, the PID targets' (as they are now), the files named */
	w->napply_scope = 0;
	w->apply_scope[w->napply_scope++] = netns_of(0);
	for (int k = 0; k < w->npids; k++) {
		unsigned long long ino = netns_of(w->pids[k]);
		if (ino)
			w->apply_scope[w->napply_scope++] = ino;
	}
	for (int k = 0; k < w->a->napply_netns; k++)
		w->apply_scope[w->napply_scope++] = w->a->apply_netns[k];
	const char *path = w->a->journal;
	char err[4400];
	if (!path) {
		path = journal_default(w->journal_path, sizeof w->journal_path);
		/* (the default's directory, made when missing: the state of a package's own) */
		char dir[4096];
		snprintf(dir, sizeof dir, "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
				fprintf(stderr, "socktune: watch --apply: journal directory %s: %s "
				        "(--journal PATH)\n", dir, strerror(errno));
				return -1;
			}
		}
	}
	if (path != w->journal_path)
		snprintf(w->journal_path, sizeof w->journal_path, "%s", path);
	w->journal_fd = journal_open(path, err, sizeof err);
	if (w->journal_fd < 0) {
		fprintf(stderr, "socktune: watch --apply: %s\n", err);
		return -1;
	}
	return 0;
}

static int same_listener(const struct watch_applied *a, const struct watch_listener *l)
{
	return a->ns_ino == l->ns_ino && a->port == l->port && a->family == l->family &&
	       memcmp(a->addr, l->addr, 16) == 0;
}

/* The entry of socket ino for option what, or NULL */
static struct watch_applied *entry_of(struct watch *w, int what, unsigned long long ino)
{
	for (int k = 0; k < WATCH_MAX_APPLIED; k++)
		if (w->applied[k].used && w->applied[k].what == what && w->applied[k].inode == ino)
			return &w->applied[k];
	return NULL;
}

/* A new entry for socket ino of l; NULL when the table is full (said once) */
static struct watch_applied *entry_new(struct watch *w, const struct watch_listener *l, int what,
                                       unsigned long long ino)
{
	for (int k = 0; k < WATCH_MAX_APPLIED; k++) {
		struct watch_applied *a = &w->applied[k];
		if (a->used)
			continue;
		memset(a, 0, sizeof *a);
		a->used = 1;
		a->what = what;
		a->ns_ino = l->ns_ino;
		a->family = l->family;
		memcpy(a->addr, l->addr, 16);
		a->port = l->port;
		a->inode = ino;
		a->set = -1;
		a->nolder = -1; /* (its connections not judged) */
		return a;
	}
	if (!w->applied_full_said++)
		fprintf(stderr, "socktune: watch --apply: %d sockets followed already: the cures of "
		        "sockets past them are not applied until some of those are gone\n",
		        WATCH_MAX_APPLIED);
	return NULL;
}

static void forget(struct watch_applied *a)
{
	free(a->older);
	memset(a, 0, sizeof *a);
}

/* One socket changed and journalled: 1 changed, 0 nothing to change, -1 failed (said) */
static int change(struct watch *w, const struct watch_finding *f, const struct watch_listener *l,
                  int pid, int fd, unsigned long long ino, int what, int v, const char *addr,
                  const char *peer)
{
	int before = -1, after = -1;
	int copy = sockcopy_open(pid, fd, ino);
	if (copy < 0) {
		fprintf(stderr, "socktune: watch --apply: %s %s: pid %d fd %d: %s%s\n", f->kind, addr,
		        pid, fd, strerror(errno),
		        errno == EPERM ? " (same uid and dumpable, or CAP_SYS_PTRACE)" : "");
		return -1;
	}
	before = sockcopy_get(copy, what);
	if (before < 0 || (what == SC_BACKLOG ? before >= v : before == v)) {
		close(copy);
		return 0;
	}
	int rc = sockcopy_set(copy, what, v), err = errno;
	after = sockcopy_get(copy, what);
	struct rec *r = rec_new();
	rec_str(r, K_EVENT, "apply");
	char id[17];
	journal_change_id(id, f->id, option_of(what), pid, fd);
	rec_str(r, K_JRN_CHANGE, id);
	rec_str(r, K_JRN_FINDING, f->id);
	rec_str(r, K_KIND, f->kind);
	rec_str(r, K_CHK_OPTION, option_of(what));
	rec_int(r, K_JRN_BEFORE, before);
	rec_known(r, K_JRN_AFTER, after);
	rec_int(r, K_PID, pid);
	rec_int(r, K_JRN_PID_START, (long long)sockcopy_start_of(pid));
	rec_int(r, K_FD, fd);
	rec_str(r, K_ADDR, addr);
	if (peer)
		rec_str(r, K_PEER, peer);
	rec_int(r, K_NETNS, (long long)l->ns_ino);
	rec_int(r, K_JRN_INODE, (long long)ino);
	if (rc != 0 || after == before) {
		fprintf(stderr, "socktune: watch --apply: %s %s: setting %s %d: %s\n", f->kind, addr,
		        option_of(what), v, rc != 0 ? strerror(err) : "the value did not change");
		rec_free(r);
		close(copy);
		return -1;
	}
	/* the journal first: a change it does not hold is undone, never left unrecorded */
	if (journal_append(w->journal_fd, "watch", r) != 0) {
		fprintf(stderr, "socktune: watch --apply: journal %s: %s: %s %s set back to %d\n",
		        w->journal_path, strerror(errno), option_of(what), addr, before);
		sockcopy_set(copy, what, before);
		rec_free(r);
		close(copy);
		return -1;
	}
	close(copy);
	rec_str(r, K_JRN_JOURNAL, w->journal_path);
	say(r);
	rec_free(r);
	w->applied_changes++;
	return 1;
}


/* The holder of socket ino to change it through: the service's when it holds it, else the
 * holder whose parent does not hold it too (a prefork master, not a worker); NULL: none */
static const struct holder *holder_of(const struct holders *hs, unsigned long long ino,
                                      int service)
{
	const struct holder *first = holders_find(hs, ino), *end = hs->h + hs->n;
	for (const struct holder *h = first; h && h < end && h->ino == ino; h++)
		if (h->pid == service)
			return h;
	for (const struct holder *h = first; h && h < end && h->ino == ino; h++) {
		int parent = ppid_of(h->pid), up = 0;
		for (const struct holder *k = first; k < end && k->ino == ino; k++)
			up |= k->pid == parent;
		if (!up)
			return h;
	}
	return first;
}

/* Whether --apply may change a socket of namespace ns that process pid holds */
static int in_scope(const struct watch *w, unsigned long long ns, int pid)
{
	if (w->a->apply_netns_all)
		return 1;
	for (int k = 0; k < w->napply_scope; k++)
		if (w->apply_scope[k] == ns)
			return 1;
	/* (a target's own process, wherever it is: the operator named it) */
	return watch_is_target(w, pid);
}

/* A finding outside --apply's scope: said once for the listener (its finding's line has the
 * fix) */
static void say_out_of_scope(struct watch *w, const struct watch_finding *f,
                             const struct watch_listener *l, int what, int pid, const char *addr)
{
	for (int k = 0; k < WATCH_MAX_APPLIED; k++) {
		const struct watch_applied *a = &w->applied[k];
		if (a->used && a->out_of_scope && a->what == what && same_listener(a, l))
			return; /* (said) */
	}
	char why[200], note[400];
	snprintf(why, sizeof why, "network namespace %llu is outside --apply's scope (watch's own "
	         "namespace and its targets'): not applied", l->ns_ino);
	snprintf(note, sizeof note, "the finding's line has the fix; watch --apply changes it with "
	         "--apply-netns /proc/%d/ns/net (or /run/netns/NAME, or all)", pid);
	struct rec *r = rec_new();
	rec_str(r, K_EVENT, "apply-out-of-scope");
	rec_str(r, K_JRN_FINDING, f->id);
	rec_str(r, K_KIND, f->kind);
	rec_str(r, K_CHK_OPTION, option_of(what));
	rec_int(r, K_PID, pid);
	rec_str(r, K_ADDR, addr);
	rec_int(r, K_NETNS, (long long)l->ns_ino);
	rec_str(r, K_CHK_REASON, why);
	rec_str(r, K_NOTE, note);
	rec_say(stderr, "socktune level=info ", r);
	rec_free(r);
}

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

/* The connections l has now (a dump of its port in its namespace), into a: those accepted
 * later are the ones that show whether the listener's cure reaches new connections */
static void remember_older(struct watch *w, const struct watch_listener *l, struct watch_applied *a)
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

void watch_apply(struct watch *w, const struct watch_finding *f, struct watch_listener *l)
{
	if (!w->a->apply || !l || !f->kind)
		return;
	int what = strcmp(f->kind, "accept-queue-overflow") == 0 ? SC_BACKLOG
	           : strcmp(f->kind, "nagle-delayed-ack") == 0 ? SC_NODELAY : -1;
	if (what < 0)
		return; /* (not an option's cure) */
	/* the sockets to do: those with no entry, and those whose holder was not found (an
	 * entry of pid 0 is looked for again, never a bar) */
	int todo = 0;
	for (int k = 0; k < l->ninodes; k++) {
		const struct watch_applied *a = entry_of(w, what, l->inodes[k]);
		todo += !a || a->pid <= 0;
	}
	if (!todo)
		return; /* (applied, failed, backed off from or out of scope: each socket once) */
	char addr[64];
	diag_addr(l->family, l->addr, l->port, addr, sizeof addr);
	/* the holders: the service's descriptors (one process's walk), or when it does not hold
	 * every socket to do (it exited: a restart; or an SO_REUSEPORT group whose sockets
	 * other processes hold, one each), every process's */
	struct holders hs = {0};
	int held = 0;
	if (l->service_pid > 0) {
		holders_scan(&hs, &l->service_pid, 1);
		for (int k = 0; k < l->ninodes; k++) {
			const struct watch_applied *a = entry_of(w, what, l->inodes[k]);
			held += (!a || a->pid <= 0) && holders_find(&hs, l->inodes[k]) != NULL;
		}
	}
	if (held < todo) {
		free(hs.h);
		memset(&hs, 0, sizeof hs);
		holders_scan(&hs, NULL, 0);
	}
	int v = what == SC_BACKLOG ? DOC_BACKLOG_CURE : 1, applied = 0, found = 0, orphans = 0;
	for (int k = 0; k < l->ninodes; k++) {
		unsigned long long ino = l->inodes[k];
		struct watch_applied *a = entry_of(w, what, ino);
		if (a && a->pid > 0)
			continue;
		const struct holder *h = holder_of(&hs, ino, l->service_pid);
		if (!h) { /* (a socket closed since the listener's sample, or held out of sight:
			   * an entry of pid 0, so that it is said once, looked for again) */
			orphans += !a;
			if (!a && !entry_new(w, l, what, ino))
				break;
			continue;
		}
		if (!a)
			a = entry_new(w, l, what, ino);
		if (!a)
			break;
		found++;
		a->pid = h->pid;
		a->fd = h->fd;
		if (!in_scope(w, l->ns_ino, h->pid)) {
			say_out_of_scope(w, f, l, what, h->pid, addr);
			a->out_of_scope = 1;
			continue;
		}
		if (change(w, f, l, h->pid, h->fd, h->ino, what, v, addr, NULL) >= 0) {
			a->set = sockcopy_read(h->pid, h->fd, h->ino, what);
			if (what == SC_NODELAY && !applied) /* (one socket judges the listener's) */
				remember_older(w, l, a);
			applied++;
		}
	}
	if (orphans && !found)
		fprintf(stderr, "socktune: watch --apply: %s %s: no process holding it found (another "
		        "pid namespace, or not visible to this user): not applied\n", f->kind, addr);
	if (what == SC_NODELAY && applied) { /* and the connections it has now */
		int n;
		const struct watch_conn *c = watch_conns(&n);
		for (int k = 0; k < n; k++) {
			const struct holder *h = c[k].l == l ? holders_find(&hs, c[k].last.inode) : NULL;
			if (!h || !in_scope(w, l->ns_ino, h->pid))
				continue;
			char here[64], peer[64];
			diag_addr(c[k].last.family, c[k].last.src, c[k].last.sport, here, sizeof here);
			diag_addr(c[k].last.family, c[k].last.dst, c[k].last.dport, peer, sizeof peer);
			change(w, f, l, h->pid, h->fd, h->ino, what, v, here, peer);
		}
	}
	free(hs.h);
}

static int older(const struct watch_applied *a, unsigned long long ino)
{
	return a->nolder > 0 &&
	       bsearch(&ino, a->older, (size_t)a->nolder, sizeof a->older[0], by_ino) != NULL;
}

/* The bounds of judge_reset: the connections read in one round (each a pidfd_getfd and a
 * getsockopt; the rest wait for the next round), and when it concludes that the cure holds
 * (the healthy case: the application leaves NODELAY alone) and judges the listener no more:
 * JUDGE_ROUNDS rounds, each with a connection accepted after the cure that read 1 and none
 * that read 0, or one round with JUDGE_ENOUGH such connections.  An application that resets
 * NODELAY does it on every connection it accepts, so the first that is read shows it.  A
 * listener whose newer connections have no holder found (another pid namespace) is given up
 * after JUDGE_ROUNDS rounds too: each such round walks every process's descriptors. */
#define JUDGE_READ_MAX 64
#define JUDGE_ENOUGH 32
#define JUDGE_ROUNDS 3

int watch_apply_judging(const struct watch *w)
{
	int n = 0;
	for (int k = 0; k < WATCH_MAX_APPLIED; k++) {
		const struct watch_applied *a = &w->applied[k];
		n += a->used && a->what == SC_NODELAY && a->nolder >= 0 && a->set == 1 &&
		     !a->backed_off && !a->reset_said && !a->judge_done;
	}
	return n;
}

/* A NODELAY cure on listener a, which still reads 1: the connections accepted since, as the
 * latest connection sample has them, read (at most JUDGE_READ_MAX a round, until it holds:
 * the bounds above).  An application that sets TCP_NODELAY 0 on each connection it accepts
 * undoes what they inherit: said once, with the cures that hold against it (watch does not
 * set it on each connection after the application: two parties would take turns on every
 * one). */
static void judge_reset(struct watch *w, struct watch_applied *a)
{
	if (a->reset_said || a->judge_done || a->nolder < 0 || a->judged == w->conn_samples)
		return;
	for (int k = 0; k < WATCH_MAX_APPLIED; k++) { /* (once for the listener) */
		const struct watch_applied *o = &w->applied[k];
		if (o != a && o->used && o->what == SC_NODELAY && o->reset_said && o->port == a->port &&
		    o->ns_ino == a->ns_ino && o->family == a->family && !memcmp(o->addr, a->addr, 16))
			return;
	}
	a->judged = w->conn_samples;
	int n, newer = 0;
	const struct watch_conn *c = watch_conns(&n);
	for (int k = 0; k < n; k++)
		newer += c[k].l && same_listener(a, c[k].l) && !older(a, c[k].last.inode);
	if (!newer)
		return;
	/* their holders: the listener's, else (a prefork worker's) every process's */
	struct holders hs = {0};
	int found = 0, read = 0, reset = 0, tried = 0;
	for (int pass = 0; pass < 2 && !found; pass++) {
		free(hs.h);
		memset(&hs, 0, sizeof hs);
		holders_scan(&hs, pass ? NULL : &a->pid, pass ? 0 : 1);
		for (int k = 0; k < n; k++)
			found += c[k].l && same_listener(a, c[k].l) && !older(a, c[k].last.inode) &&
			         holders_find(&hs, c[k].last.inode);
	}
	for (int k = 0; k < n && tried < JUDGE_READ_MAX; k++) {
		if (!c[k].l || !same_listener(a, c[k].l) || older(a, c[k].last.inode))
			continue;
		const struct holder *h = holders_find(&hs, c[k].last.inode);
		if (!h)
			continue;
		tried++;
		int copy = sockcopy_open(h->pid, h->fd, h->ino);
		if (copy < 0)
			continue;
		int nd = sockcopy_get(copy, SC_NODELAY);
		close(copy);
		read += nd >= 0;
		reset += nd == 0;
	}
	free(hs.h);
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
	char addr[64], fix[64], note[700];
	diag_addr(a->family, a->addr, a->port, addr, sizeof addr);
	snprintf(fix, sizeof fix, "socktune attach --cgroup --nodelay %d", a->pid);
	snprintf(note, sizeof note, "%d of the %d connections accepted since watch set TCP_NODELAY "
	         "on the listener read 0: the application sets it off on each connection it "
	         "accepts, after the kernel copied the listener's 1, so the listener's cure does "
	         "not reach them, and watch does not set it on each connection after the "
	         "application.  Cures that hold: attach --cgroup (its setsockopt hook keeps the "
	         "value against the application's own call, on the connections made from then "
	         "on); at the next start, socktune --nodelay -- COMMAND (the preload undoes the "
	         "application's own setsockopt) or socktune --cgroup --nodelay -- COMMAND",
	         reset, read);
	struct rec *r = rec_new();
	rec_str(r, K_EVENT, "apply-reset-per-connection");
	rec_str(r, K_CHK_OPTION, "nodelay");
	rec_bool(r, K_LISTENER_NODELAY, 1);
	rec_bool(r, K_CONNECTION_NODELAY, 0);
	rec_int(r, K_SHOWING, reset);
	rec_int(r, K_PID, a->pid);
	rec_int(r, K_FD, a->fd);
	rec_str(r, K_ADDR, addr);
	rec_int(r, K_NETNS, (long long)a->ns_ino);
	rec_str(rec_arr(r, K_FIX), 0, fix);
	rec_str(r, K_NOTE, note);
	say(r);
	rec_free(r);
}

/* Whether socket a is still one of its listener's (a listener not seen in the latest sample
 * has none) */
static int listed(const struct watch *w, const struct watch_applied *a)
{
	for (int k = 0; k < w->nl; k++) {
		const struct watch_listener *l = &w->l[k];
		if (!l->used || !same_listener(a, l))
			continue;
		for (int i = 0; i < l->ninodes; i++)
			if (l->inodes[i] == a->inode)
				return 1;
	}
	return 0;
}

void watch_apply_check(struct watch *w)
{
	for (int k = 0; k < WATCH_MAX_APPLIED; k++) {
		struct watch_applied *a = &w->applied[k];
		if (!a->used)
			continue;
		/* gone: forgotten, whatever it was (a new socket there is a new entry).  One never
		 * opened is gone when its listener no longer has it. */
		if (a->pid <= 0 || a->out_of_scope) {
			if (!listed(w, a))
				forget(a);
			continue;
		}
		int copy = sockcopy_open(a->pid, a->fd, a->inode);
		if (copy < 0) {
			if (errno == ESRCH || errno == ESTALE || errno == EBADF)
				forget(a);
			continue;
		}
		int now = sockcopy_get(copy, a->what);
		close(copy);
		if (a->backed_off || a->set < 0 || now < 0)
			continue;
		if (now == a->set) {
			if (a->what == SC_NODELAY && now == 1)
				judge_reset(w, a);
			continue;
		}
		a->backed_off = 1;
		w->backoffs++;
		char addr[64];
		diag_addr(a->family, a->addr, a->port, addr, sizeof addr);
		struct rec *r = rec_new();
		rec_str(r, K_EVENT, "apply-backoff");
		rec_str(r, K_CHK_OPTION, option_of(a->what));
		rec_int(r, K_JRN_SET, a->set);
		rec_int(r, K_JRN_NOW, now);
		rec_int(r, K_PID, a->pid);
		rec_int(r, K_FD, a->fd);
		rec_str(r, K_ADDR, addr);
		rec_int(r, K_NETNS, (long long)a->ns_ino);
		rec_int(r, K_JRN_INODE, (long long)a->inode);
		rec_str(r, K_NOTE, "set otherwise since watch applied it (the application or an "
		        "operator): watch backs off and does not apply it to this socket again");
		say(r);
		rec_free(r);
	}
}
