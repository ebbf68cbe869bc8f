/* watch --apply: the cure of a finding that a socket option cures (its row of the findings'
 * table, findings.h: an option and its value), applied to the live listener from outside
 * through a pidfd_getfd copy, once per socket: accept-queue-overflow listens again with
 * DOC_BACKLOG_CURE (the kernel cuts it to the namespace's somaxconn), nagle-delayed-ack sets
 * TCP_NODELAY.  An option the accepted connections inherit (sockcopy_inherited) is set on
 * the listener, which its next connections copy, and on the connections of it the latest
 * connection sample saw, held by the listener's service.  Every socket of the listener is
 * changed: an SO_REUSEPORT group is one listener of several sockets, each with its own queue
 * and backlog, and a cure on one leaves the others dropping.  Each change is read back from
 * the kernel, written to the journal (fsync'd) and said on stderr; a change the journal
 * cannot take is undone at once.
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
 * take turns on one socket.  For the same reason, an application that sets its own value on
 * each connection it accepts (TCP_NODELAY 0: the listener keeps watch's 1, the connections do
 * not) is not fought connection by connection: the connections accepted after the cure are
 * read, and watch says once that the cure does not hold there, with the cures that do
 * (watchhold.c).
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

#include "findings/findings.h"
#include "journal.h"
#include "record.h"
#include "via.h"
#include "watch/watch.h"
#include "host/sockcopy.h"

/* The option's key, as the journal and the lines name it ("backlog", "nodelay") */
static const char *option_of(int opt)
{
	static char keys[ST_V_COUNT][ST_KEY_MAX];
	return st_opt_key(opt, keys[opt], sizeof keys[opt]);
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

/* The entry of socket ino for option opt, or NULL */
static struct watch_applied *entry_of(struct watch *w, int opt, unsigned long long ino)
{
	for (int k = 0; k < WATCH_MAX_APPLIED; k++)
		if (w->applied[k].used && w->applied[k].opt == opt && w->applied[k].inode == ino)
			return &w->applied[k];
	return NULL;
}

/* A new entry for socket ino of l, cure's; NULL when the table is full (said once) */
static struct watch_applied *entry_new(struct watch *w, const struct watch_listener *l,
                                       const struct doc_rule *cure, unsigned long long ino)
{
	for (int k = 0; k < WATCH_MAX_APPLIED; k++) {
		struct watch_applied *a = &w->applied[k];
		if (a->used)
			continue;
		memset(a, 0, sizeof *a);
		a->used = 1;
		a->opt = cure->option;
		a->want = cure->value;
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

/* One socket changed to cure's value and journalled: 1 changed, 0 nothing to change (it
 * holds the value, or at least it), -1 failed (said); -2 when quiet and the copy was
 * refused for want of ptrace access (not said: the iterator may take it) */
static int change(struct watch *w, const struct watch_finding *f, const struct watch_listener *l,
                  int pid, int fd, unsigned long long ino, const struct doc_rule *cure,
                  const char *addr, const char *peer, unsigned long long cookie, int quiet)
{
	int before = -1, after = -1, opt = cure->option, v = cure->value;
	int copy = sockcopy_open(pid, fd, ino);
	if (copy < 0 && quiet && (errno == EPERM || errno == EACCES))
		return -2;
	if (copy < 0) {
		fprintf(stderr, "socktune: watch --apply: %s %s: pid %d fd %d: %s%s\n", f->kind, addr,
		        pid, fd, strerror(errno),
		        errno == EPERM ? " (same uid and dumpable, or CAP_SYS_PTRACE; or --via bpf)" : "");
		return -1;
	}
	before = sockcopy_get(copy, opt);
	if (before < 0 || ((cure->flags & DOC_AT_LEAST) ? before >= v : before == v)) {
		close(copy);
		return 0;
	}
	int rc = sockcopy_set(copy, opt, v), err = errno;
	after = sockcopy_get(copy, opt);
	struct rec *r = watch_apply_rec(f, l, opt, before, after, pid, fd, ino, addr, peer, VIA_PIDFD,
	                                cookie);
	if (rc != 0 || after == before) {
		fprintf(stderr, "socktune: watch --apply: %s %s: setting %s %d: %s\n", f->kind, addr,
		        option_of(opt), v, rc != 0 ? strerror(err) : "the value did not change");
		rec_free(r);
		close(copy);
		return -1;
	}
	/* the journal first: a change it does not hold is undone, never left unrecorded */
	if (journal_append(w->journal_fd, "watch", r) != 0) {
		fprintf(stderr, "socktune: watch --apply: journal %s: %s: %s %s set back to %d\n",
		        w->journal_path, strerror(errno), option_of(opt), addr, before);
		sockcopy_set(copy, opt, before);
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
	return pid > 0 && watch_is_target(w, pid);
}

/* A finding outside --apply's scope: said once for the listener (its finding's line has the
 * fix) */
static void say_out_of_scope(struct watch *w, const struct watch_finding *f,
                             const struct watch_listener *l, int opt, int pid, const char *addr)
{
	for (int k = 0; k < WATCH_MAX_APPLIED; k++) {
		const struct watch_applied *a = &w->applied[k];
		if (a->used && a->out_of_scope && a->opt == opt && watch_applied_on(a, l))
			return; /* (said) */
	}
	char why[200], note[400];
	snprintf(why, sizeof why, "network namespace %llu is outside --apply's scope (watch's own "
	         "namespace and its targets'): not applied", l->ns_ino);
	if (pid > 0)
		snprintf(note, sizeof note, "the finding's line has the fix; watch --apply changes it "
		         "with --apply-netns /proc/%d/ns/net (or /run/netns/NAME, or all)", pid);
	else
		snprintf(note, sizeof note, "the finding's line has the fix; watch --apply changes it "
		         "with --apply-netns /run/netns/NAME (or all)");
	struct rec *r = rec_new();
	rec_str(r, K_EVENT, "apply-out-of-scope");
	rec_str(r, K_JRN_FINDING, f->id);
	rec_str(r, K_KIND, f->kind);
	rec_str(r, K_CHK_OPTION, option_of(opt));
	if (pid > 0)
		rec_int(r, K_PID, pid);
	rec_str(r, K_ADDR, addr);
	rec_int(r, K_NETNS, (long long)l->ns_ino);
	rec_str(r, K_CHK_REASON, why);
	rec_str(r, K_NOTE, note);
	rec_say(stderr, "socktune level=info ", r);
	rec_free(r);
}

/* Whether entry a is settled: a socket changed, tried, backed off from, out of scope or
 * refused (an entry of pid 0, no holder found, is looked for again, never a bar) */
static int settled(const struct watch_applied *a)
{
	return a && (a->pid != 0 || a->via == VIA_BPF || a->out_of_scope);
}

/* A socket the pidfd path does not change (--via bpf; auto: its copy refused, or no holder
 * readable): whether the iterator takes it; else said once for its entry, never applied */
static int iterator_takes(struct watch *w, const struct watch_finding *f,
                          const struct watch_listener *l, struct watch_applied *a, int opt,
                          const char *addr, int copy_refused)
{
	char why[900];
	if (st_iter_how(opt) == ST_ITER_NONE)
		snprintf(why, sizeof why, "not through the TCP iterator: %s", st_iter_why(opt));
	else if (!watch_bpf_ok(w))
		snprintf(why, sizeof why, "%s; the TCP iterator cannot be used here: %s (%s)",
		         w->a->via == VIA_BPF ? "--via bpf"
		         : copy_refused ? "the pidfd copy was refused (" VIA_PIDFD_NEEDS ")"
		                        : "no process holding it could be read (" VIA_PIDFD_NEEDS ")",
		         w->iter_why, VIA_BPF_NEEDS);
	else
		return 1;
	struct rec *r = rec_new();
	rec_str(r, K_EVENT, "apply-refused");
	rec_str(r, K_JRN_FINDING, f->id);
	rec_str(r, K_KIND, f->kind);
	rec_str(r, K_CHK_OPTION, option_of(opt));
	if (a->pid > 0)
		rec_int(r, K_PID, a->pid);
	rec_str(r, K_ADDR, addr);
	rec_int(r, K_NETNS, (long long)l->ns_ino);
	rec_str(r, K_VIA, via_name(w->a->via));
	rec_str(r, K_CHK_REASON, why);
	say(r);
	rec_free(r);
	a->out_of_scope = 1; /* (said; never applied to it) */
	return 0;
}

/* An item for watch_bpf_change */
static struct watch_bpf_item item(const struct holder *h, unsigned long long ino,
                                  unsigned long long cookie, int family, const char *addr,
                                  const char *peer)
{
	struct watch_bpf_item it = {.pid = h ? h->pid : -1, .fd = h ? h->fd : -1, .ino = ino,
	                            .cookie = cookie, .family = family};
	snprintf(it.addr, sizeof it.addr, "%s", addr);
	snprintf(it.peer, sizeof it.peer, "%s", peer ? peer : "");
	return it;
}

/* The connections of l the latest connection sample has, given the cure too (an option they
 * inherit: those accepted before it was set on the listener have their own) */
static void cure_connections(struct watch *w, const struct watch_finding *f,
                             const struct watch_listener *l, const struct holders *hs,
                             const struct doc_rule *cure)
{
	int n, m = 0, via = w->a->via;
	const struct watch_conn *c = watch_conns(&n);
	struct watch_bpf_item *items = calloc((size_t)(n > 0 ? n : 1), sizeof *items);
	for (int k = 0; items && k < n; k++) {
		if (c[k].l != l)
			continue;
		const struct holder *h = holders_find(hs, c[k].last.inode);
		if (!in_scope(w, l->ns_ino, h ? h->pid : 0))
			continue;
		char here[64], peer[64];
		diag_addr(c[k].last.family, c[k].last.src, c[k].last.sport, here, sizeof here);
		diag_addr(c[k].last.family, c[k].last.dst, c[k].last.dport, peer, sizeof peer);
		if (h && via != VIA_BPF &&
		    change(w, f, l, h->pid, h->fd, h->ino, cure, here, peer, c[k].last.cookie,
		           via == VIA_AUTO) != -2)
			continue;
		if (via == VIA_PIDFD || !c[k].last.cookie || st_iter_how(cure->option) == ST_ITER_NONE ||
		    !watch_bpf_ok(w))
			continue; /* (the listener's refusal said why) */
		items[m++] = item(h, c[k].last.inode, c[k].last.cookie, c[k].last.family, here, peer);
	}
	if (m)
		watch_bpf_change(w, f, l, items, m, cure);
	free(items);
}

void watch_apply(struct watch *w, const struct watch_finding *f, struct watch_listener *l)
{
	if (!w->a->apply || !l || f->rule < 0 || f->rule >= DOC_R_COUNT)
		return;
	const struct doc_rule *cure = &doc_rules[f->rule];
	int opt = cure->option, via = w->a->via;
	if (opt == DOC_NO_CURE)
		return; /* (not an option's cure) */
	/* the sockets to do: those with no entry, and those whose holder was not found */
	int todo = 0;
	for (int k = 0; k < l->ninodes; k++)
		todo += !settled(entry_of(w, opt, l->inodes[k]));
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
		for (int k = 0; k < l->ninodes; k++)
			held += !settled(entry_of(w, opt, l->inodes[k])) &&
			        holders_find(&hs, l->inodes[k]) != NULL;
	}
	if (held < todo) {
		free(hs.h);
		memset(&hs, 0, sizeof hs);
		holders_scan(&hs, NULL, 0);
	}
	int applied = 0, found = 0, orphans = 0, nit = 0;
	struct watch_bpf_item items[WATCH_INODES];
	struct watch_applied *ents[WATCH_INODES];
	for (int k = 0; k < l->ninodes; k++) {
		unsigned long long ino = l->inodes[k];
		struct watch_applied *a = entry_of(w, opt, ino);
		if (settled(a))
			continue;
		const struct holder *h = holder_of(&hs, ino, l->service_pid);
		if (!h && via == VIA_PIDFD) { /* (a socket closed since the listener's sample, or
			   * held out of sight: an entry of pid 0, said once, looked for again) */
			orphans += !a;
			if (!a && !entry_new(w, l, cure, ino))
				break;
			continue;
		}
		if (!a)
			a = entry_new(w, l, cure, ino);
		if (!a)
			break;
		found += h != NULL;
		a->pid = h ? h->pid : -1;
		a->fd = h ? h->fd : -1;
		a->cookie = l->cookies[k];
		if (!in_scope(w, l->ns_ino, h ? h->pid : 0)) {
			say_out_of_scope(w, f, l, opt, h ? h->pid : -1, addr);
			a->out_of_scope = 1;
			continue;
		}
		int rc = -2;
		if (h && via != VIA_BPF) {
			a->via = VIA_PIDFD;
			rc = change(w, f, l, h->pid, h->fd, h->ino, cure, addr, NULL, l->cookies[k],
			            via == VIA_AUTO);
			if (rc >= 0) {
				a->set = sockcopy_read(h->pid, h->fd, h->ino, opt);
				if (sockcopy_inherited(opt) && !applied) /* (one socket judges the
				                                          * listener's) */
					watch_hold_remember(w, l, a);
				applied++;
			}
			if (rc != -2)
				continue;
		}
		/* the iterator: --via bpf, a copy refused (auto), no holder readable (auto) */
		if (!a->cookie || !iterator_takes(w, f, l, a, opt, addr, rc == -2 && h)) {
			a->out_of_scope = 1;
			continue;
		}
		a->via = VIA_BPF;
		ents[nit] = a;
		items[nit++] = item(h, ino, a->cookie, l->family, addr, NULL);
	}
	if (nit) {
		watch_bpf_change(w, f, l, items, nit, cure);
		for (int j = 0; j < nit; j++) {
			if (items[j].result < 0)
				continue; /* (said; the entry stays: not tried again) */
			ents[j]->set = items[j].after;
			if (sockcopy_inherited(opt) && !applied)
				watch_hold_remember(w, l, ents[j]);
			applied++;
		}
	}
	if (orphans && !found)
		fprintf(stderr, "socktune: watch --apply: %s %s: no process holding it found (another "
		        "pid namespace, or not visible to this user): not applied (--via bpf or auto "
		        "reaches it without one)\n", f->kind, addr);
	if (sockcopy_inherited(opt) && applied) /* and the connections it has now */
		cure_connections(w, f, l, &hs, cure);
	free(hs.h);
}

/* Whether socket a is still one of its listener's (a listener not seen in the latest sample
 * has none) */
static int listed(const struct watch *w, const struct watch_applied *a)
{
	for (int k = 0; k < w->nl; k++) {
		const struct watch_listener *l = &w->l[k];
		if (!l->used || !watch_applied_on(a, l))
			continue;
		for (int i = 0; i < l->ninodes; i++)
			if (l->inodes[i] == a->inode)
				return 1;
	}
	return 0;
}

void watch_apply_check(struct watch *w)
{
	for (int k = 0; k < WATCH_MAX_APPLIED; k++)
		w->applied[k].checked = w->applied[k].read = w->applied[k].gone = 0;
	watch_bpf_check(w); /* (the iterator's entries: a read per namespace) */
	for (int k = 0; k < WATCH_MAX_APPLIED; k++) {
		struct watch_applied *a = &w->applied[k];
		if (!a->used)
			continue;
		/* gone: forgotten, whatever it was (a new socket there is a new entry).  One never
		 * opened is gone when its listener no longer has it. */
		if ((a->pid <= 0 && a->via != VIA_BPF) || a->out_of_scope || a->set < 0) {
			if (!listed(w, a))
				forget(a);
			continue;
		}
		int now;
		if (a->via == VIA_BPF) {
			if (a->gone) {
				forget(a);
				continue;
			}
			if (!a->read)
				continue;
			now = a->now;
		} else {
			int copy = sockcopy_open(a->pid, a->fd, a->inode);
			if (copy < 0) {
				if (errno == ESRCH || errno == ESTALE || errno == EBADF)
					forget(a);
				continue;
			}
			now = sockcopy_get(copy, a->opt);
			close(copy);
		}
		if (a->backed_off || a->set < 0 || now < 0)
			continue;
		if (now == a->set) {
			watch_hold_judge(w, a); /* (an option the connections inherit) */
			continue;
		}
		a->backed_off = 1;
		w->backoffs++;
		char addr[64];
		diag_addr(a->family, a->addr, a->port, addr, sizeof addr);
		struct rec *r = rec_new();
		rec_str(r, K_EVENT, "apply-backoff");
		rec_str(r, K_CHK_OPTION, option_of(a->opt));
		rec_int(r, K_JRN_SET, a->set);
		rec_int(r, K_JRN_NOW, now);
		if (a->pid > 0) {
			rec_int(r, K_PID, a->pid);
			rec_int(r, K_FD, a->fd);
		}
		rec_str(r, K_VIA, via_name(a->via));
		rec_str(r, K_ADDR, addr);
		rec_int(r, K_NETNS, (long long)a->ns_ino);
		rec_int(r, K_JRN_INODE, (long long)a->inode);
		rec_str(r, K_NOTE, "set otherwise since watch applied it (the application or an "
		        "operator): watch backs off and does not apply it to this socket again");
		say(r);
		rec_free(r);
	}
}
