/* watch --apply through the TCP iterator (--via bpf, or auto where the pidfd copy is refused
 * or no holder can be read): a cure set on sockets by their sock_diag cookie, in their
 * network namespace, with no descriptor of theirs.  One change is two runs of the iterator:
 * one that reads the value before (the journal's "before", which revert sets back), one that
 * sets the cure and reads it back in the same pass; each run a program made for it, loaded,
 * run once and closed, its ids said (nothing stays loaded).  The sockets of one listener
 * (an SO_REUSEPORT group, or its connections) go through one pair of runs.  What watch
 * checks later (the back-off, the connections accepted since) is read the same way. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/clock.h"
#include "findings/findings.h"
#include "host/itertune.h"
#include "host/sockcopy.h"
#include "journal.h"
#include "record.h"
#include "via.h"
#include "watch/watch.h"

/* (A change's journal line, either path's: here, below watchapply.c, which calls both.) */
struct rec *watch_apply_rec(const struct watch_finding *f, const struct watch_listener *l,
                            int opt, int before, int after, int pid, int fd,
                            unsigned long long ino, const char *addr, const char *peer, int via,
                            unsigned long long cookie)
{
	struct rec *r = rec_new();
	rec_str(r, K_EVENT, "apply");
	char id[17];
	journal_change_id(id, f->id, ST_KEY(opt), pid, pid > 0 ? fd : (int)(cookie & 0xffffff));
	rec_str(r, K_JRN_CHANGE, id);
	rec_str(r, K_JRN_FINDING, f->id);
	rec_str(r, K_KIND, f->kind);
	rec_str(r, K_CHK_OPTION, ST_KEY(opt));
	rec_int(r, K_JRN_BEFORE, before);
	rec_known(r, K_JRN_AFTER, after);
	if (pid > 0) { /* (the iterator's change may have no holder read) */
		rec_int(r, K_PID, pid);
		rec_int(r, K_JRN_PID_START, (long long)sockcopy_start_of(pid));
		rec_int(r, K_FD, fd);
	}
	rec_str(r, K_ADDR, addr);
	if (peer)
		rec_str(r, K_PEER, peer);
	rec_int(r, K_NETNS, (long long)l->ns_ino);
	rec_int(r, K_JRN_INODE, (long long)ino);
	rec_str(r, K_VIA, via_name(via));
	if (cookie)
		rec_int(r, K_COOKIE, (long long)cookie);
	return r;
}

int watch_bpf_ok(struct watch *w)
{
	if (!w->no_iter)
		w->no_iter = it_usable(w->iter_why, sizeof w->iter_why) ? 1 : 2;
	return w->no_iter == 1;
}

/* The namespace of inode ino as a descriptor (-1: ours; -2: not to be opened, said in why):
 * through a process watch found in it, else a /run/netns file (itertune.h) */
static int open_ns(const struct watch *w, unsigned long long ino, char *name, size_t n,
                   char *why, size_t wn)
{
	for (int k = 0; k < w->nns; k++) {
		if (w->ns[k].ino != ino || w->ns[k].pid <= 0)
			continue;
		snprintf(name, n, "/proc/%d/ns/net", w->ns[k].pid);
		int fd = open(name, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	int fd;
	return netns_by_ino(ino, &fd, name, n, why, wn) == 0 ? fd : -2;
}

/* One run over s[n] in namespace ino: 0, or -1 said.  Its line said for a change (quiet 0);
 * a read of what watch follows (every window) only when it fails. */
static int run(struct watch *w, unsigned long long ino, struct it_sock *s, int n, int mode,
               int quiet)
{
	char name[300], why[400], err[600];
	int fd = open_ns(w, ino, name, sizeof name, why, sizeof why);
	if (fd == -2) {
		fprintf(stderr, "socktune: watch --apply: the TCP iterator: network namespace %llu: %s\n",
		        ino, why);
		return -1;
	}
	struct bi_run r;
	double t0 = clock_mono_s();
	int rc = it_run(fd, s, n, mode, &r, err, sizeof err);
	if (!quiet || rc != 0)
		via_say_run(stderr, "watch", name, &r, n, 1000 * (clock_mono_s() - t0), rc, err);
	if (fd >= 0)
		close(fd);
	return rc;
}

int watch_bpf_read(struct watch *w, unsigned long long ns_ino, const unsigned long long *cookies,
                   const int *families, int n, int opt, int *values, int quiet)
{
	struct it_sock *s = calloc((size_t)(n > 0 ? n : 1), sizeof *s);
	int read = 0;
	for (int k = 0; k < n; k++)
		values[k] = -1;
	if (!s)
		return 0;
	for (int k = 0; k < n; k++) {
		s[k].cookie = cookies[k];
		s[k].family = families[k];
		it_add(&s[k], opt, 0);
	}
	if (n && run(w, ns_ino, s, n, IT_READ, quiet) != 0)
		read = -1;
	for (int k = 0; read >= 0 && k < n; k++)
		if (s[k].visited && s[k].out[0].got != ST_UNREAD) {
			values[k] = st_opt_is_flag(opt) ? s[k].out[0].got != 0 : s[k].out[0].got;
			read++;
		}
	free(s);
	return read;
}

int watch_bpf_change(struct watch *w, const struct watch_finding *f,
                     const struct watch_listener *l, struct watch_bpf_item *it, int n,
                     const struct doc_rule *cure)
{
	int opt = cure->option, v = cure->value, changed = 0;
	struct it_sock *s = calloc((size_t)(n > 0 ? n : 1), sizeof *s);
	unsigned long long *cookies = calloc((size_t)(n > 0 ? n : 1), sizeof *cookies);
	int *fam = calloc((size_t)(n > 0 ? n : 1), sizeof *fam);
	int *before = calloc((size_t)(n > 0 ? n : 1), sizeof *before);
	if (!s || !cookies || !fam || !before) {
		free(s), free(cookies), free(fam), free(before);
		return 0;
	}
	for (int k = 0; k < n; k++) {
		it[k].result = -1;
		it[k].after = -1;
		cookies[k] = it[k].cookie;
		fam[k] = it[k].family;
	}
	/* the value before, for the journal: those that hold the cure already are left */
	watch_bpf_read(w, l->ns_ino, cookies, fam, n, opt, before, 0);
	int m = 0;
	for (int k = 0; k < n; k++) {
		if (before[k] < 0)
			continue; /* (gone, or not readable: said by the run) */
		if ((cure->flags & DOC_AT_LEAST) ? before[k] >= v : before[k] == v) {
			it[k].result = 0;
			it[k].after = before[k];
			continue;
		}
		s[m] = (struct it_sock){.cookie = it[k].cookie, .family = it[k].family};
		it_add(&s[m++], opt, v);
	}
	if (m && run(w, l->ns_ino, s, m, IT_SET, 0) == 0) {
		for (int k = 0, j = 0; k < n && j < m; k++) {
			if (before[k] < 0 || it[k].result == 0)
				continue;
			const struct it_sock *x = &s[j++];
			const struct st_outcome *o = &x->out[0];
			int after = o->got == ST_UNREAD ? -1 : st_opt_is_flag(opt) ? o->got != 0 : o->got;
			if (!x->visited || o->state != ST_SET || after == before[k]) {
				fprintf(stderr, "socktune: watch --apply: %s %s: setting %s %d through the TCP "
				        "iterator: %s\n", f->kind, it[k].addr, ST_KEY(opt), v,
				        !x->visited ? "the socket is gone"
				        : o->state == ST_FAILED ? strerror(o->err)
				                                : "the value did not change");
				continue;
			}
			struct rec *r = watch_apply_rec(f, l, opt, before[k], after, it[k].pid, it[k].fd,
			                                it[k].ino, it[k].addr,
			                                it[k].peer[0] ? it[k].peer : NULL, VIA_BPF,
			                                it[k].cookie);
			/* the journal first: a change it does not hold is undone */
			if (journal_append(w->journal_fd, "watch", r) != 0) {
				fprintf(stderr, "socktune: watch --apply: journal %s: %s: %s %s set back to "
				        "%d\n", w->journal_path, strerror(errno), ST_KEY(opt), it[k].addr,
				        before[k]);
				struct it_sock back = {.cookie = it[k].cookie, .family = it[k].family};
				it_add(&back, opt, before[k]);
				run(w, l->ns_ino, &back, 1, IT_SET, 0);
				rec_free(r);
				continue;
			}
			rec_str(r, K_JRN_JOURNAL, w->journal_path);
			rec_say(stderr, "socktune level=warn ", r);
			rec_free(r);
			w->applied_changes++;
			it[k].result = 1;
			it[k].after = after;
			changed++;
		}
	}
	free(s), free(cookies), free(fam), free(before);
	return changed;
}

void watch_bpf_check(struct watch *w)
{
	/* the iterator's entries, a read per namespace */
	for (int k = 0; k < WATCH_MAX_APPLIED; k++) {
		struct watch_applied *a = &w->applied[k];
		if (!a->used || a->via != VIA_BPF || a->out_of_scope || a->checked)
			continue;
		unsigned long long cookies[WATCH_MAX_APPLIED];
		int fam[WATCH_MAX_APPLIED], vals[WATCH_MAX_APPLIED], idx[WATCH_MAX_APPLIED], n = 0;
		for (int j = k; j < WATCH_MAX_APPLIED; j++) {
			struct watch_applied *b = &w->applied[j];
			if (!b->used || b->via != VIA_BPF || b->out_of_scope || b->checked ||
			    b->ns_ino != a->ns_ino || b->opt != a->opt)
				continue;
			b->checked = 1;
			cookies[n] = b->cookie;
			fam[n] = b->family;
			idx[n++] = j;
		}
		if (watch_bpf_read(w, a->ns_ino, cookies, fam, n, a->opt, vals, 1) < 0)
			continue; /* (the run failed, said: read again at the next window) */
		for (int j = 0; j < n; j++) {
			struct watch_applied *b = &w->applied[idx[j]];
			b->read = 1;
			if (vals[j] < 0)
				b->gone = 1; /* (not met: closed; watch_apply_check forgets it) */
			else
				b->now = vals[j];
		}
	}
}
