/* watch --apply: the cure of a finding that a socket option cures, applied to the live
 * listener from outside, once: accept-queue-overflow listens again on a pidfd_getfd copy
 * with DOC_BACKLOG_CURE (the kernel cuts it to the namespace's somaxconn),
 * nagle-delayed-ack sets TCP_NODELAY on the listener (its next connections inherit it) and
 * on the connections of it the latest connection sample saw, held by the listener's
 * service.  Each change is read back from the kernel, written to the journal (fsync'd)
 * and said on stderr; a change the journal cannot take is undone at once.
 *
 * Back-off: the value set on a listener is read back at every window after.  Another value
 * there means the application or an operator set the option (socktune revert, say): watch
 * says so once and never applies that option to that listener again, so two parties never
 * take turns on one socket.  A listener whose socket is gone (a restart) is forgotten: its
 * next finding applies to the new socket. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "findings.h"
#include "journal.h"
#include "record.h"
#include "watch.h"

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

static struct watch_applied *applied_of(struct watch *w, const struct watch_listener *l,
                                        int what, int add)
{
	struct watch_applied *free_slot = NULL;
	for (int k = 0; k < WATCH_MAX_APPLIED; k++) {
		struct watch_applied *a = &w->applied[k];
		if (a->used && a->what == what && a->ns_ino == l->ns_ino && a->port == l->port &&
		    a->family == l->family && memcmp(a->addr, l->addr, 16) == 0)
			return a;
		if (!a->used && !free_slot)
			free_slot = a;
	}
	return add ? free_slot : NULL;
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

void watch_apply(struct watch *w, const struct watch_finding *f, struct watch_listener *l)
{
	if (!w->a->apply || !l || !f->kind)
		return;
	int what = strcmp(f->kind, "accept-queue-overflow") == 0 ? SC_BACKLOG
	           : strcmp(f->kind, "nagle-delayed-ack") == 0 ? SC_NODELAY : -1;
	if (what < 0 || applied_of(w, l, what, 0))
		return; /* (not an option's cure; applied, or backed off from, already) */
	struct watch_applied *a = applied_of(w, l, what, 1);
	if (!a)
		return;
	memset(a, 0, sizeof *a);
	a->used = 1;
	a->what = what;
	a->ns_ino = l->ns_ino;
	a->family = l->family;
	memcpy(a->addr, l->addr, 16);
	a->port = l->port;
	a->set = -1;
	char addr[64];
	diag_addr(l->family, l->addr, l->port, addr, sizeof addr);
	if (l->service_pid <= 0) {
		fprintf(stderr, "socktune: watch --apply: %s %s: no process of it found: not "
		        "applied\n", f->kind, addr);
		return;
	}
	struct holders hs = {0};
	holders_scan(&hs, &l->service_pid, 1);
	int v = what == SC_BACKLOG ? DOC_BACKLOG_CURE : 1;
	for (int k = 0; k < l->ninodes && a->set < 0; k++) {
		const struct holder *h = holders_find(&hs, l->inodes[k]);
		if (!h || h->pid != l->service_pid)
			continue;
		if (change(w, f, l, h->pid, h->fd, h->ino, what, v, addr, NULL) >= 0) {
			a->pid = h->pid;
			a->fd = h->fd;
			a->inode = h->ino;
			a->set = sockcopy_read(h->pid, h->fd, h->ino, what);
		}
	}
	if (what == SC_NODELAY) { /* and the connections it has now */
		int n;
		const struct watch_conn *c = watch_conns(&n);
		for (int k = 0; k < n; k++) {
			const struct holder *h = c[k].l == l ? holders_find(&hs, c[k].last.inode) : NULL;
			if (!h)
				continue;
			char here[64], peer[64];
			diag_addr(c[k].last.family, c[k].last.src, c[k].last.sport, here, sizeof here);
			diag_addr(c[k].last.family, c[k].last.dst, c[k].last.dport, peer, sizeof peer);
			change(w, f, l, h->pid, h->fd, h->ino, what, v, here, peer);
		}
	}
	free(hs.h);
}

void watch_apply_check(struct watch *w)
{
	for (int k = 0; k < WATCH_MAX_APPLIED; k++) {
		struct watch_applied *a = &w->applied[k];
		if (!a->used || a->backed_off || a->set < 0)
			continue;
		int now = sockcopy_read(a->pid, a->fd, a->inode, a->what);
		if (now < 0) {
			if (errno == ESRCH || errno == ESTALE || errno == EBADF)
				a->used = 0; /* gone: a new socket there is a new listener */
			continue;
		}
		if (now == a->set)
			continue;
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
		rec_str(r, K_NOTE, "set otherwise since watch applied it (the application or an "
		        "operator): watch backs off and does not apply it to this listener again");
		say(r);
		rec_free(r);
	}
}
