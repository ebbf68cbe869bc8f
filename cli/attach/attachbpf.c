/* attach's second path: sockets set through the TCP iterator (cli/host/itertune.h), by their
 * sock_diag cookie, with no descriptor of theirs: --via bpf, or under auto where the pidfd
 * copy is refused (a non-dumpable target, another uid's, without CAP_SYS_PTRACE), where no
 * holder could be read (sock_diag's sockets alone), and for what only a BPF program sets on
 * an open connection (the cwnd clamp; the delayed-ACK and RTO caps where the kernel has no
 * socket option for them).  The sockets of one look are queued and set by one run of the
 * iterator in the service's network namespace: a program made for that run, loaded, run
 * once and closed, nothing left loaded (its ids are said, so that anyone can ask).  Each
 * socket is then said as the pidfd path says one, with via=bpf and its cookie; what this
 * path cannot set (the backlog: listen()'s argument; a name) is refused for that socket,
 * the other path named. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "socktune_kernel.h"
#include "attach/attach.h"
#include "host/clock.h"
#include "host/grow.h"
#include "host/pidinfo.h"

int attach_bpf_ok(struct attach_state *t)
{
	if (!t->no_iter)
		t->no_iter = it_usable(t->bpf_why, sizeof t->bpf_why) ? 1 : 2;
	return t->no_iter == 1;
}

void attach_refuse_both(struct attach_state *t, const struct svc_sock *s, int pid,
                        const char *pidfd_why)
{
	char addr[64], msg[1200];
	t->refused++;
	diag_addr(s->family, s->src, s->sport, addr, sizeof addr);
	snprintf(msg, sizeof msg, "%s: not tuned: a pidfd copy %s (%s); the TCP iterator cannot be "
	         "used here: %s (%s)", addr, pidfd_why, VIA_PIDFD_NEEDS, t->bpf_why, VIA_BPF_NEEDS);
	if (!t->both_said++)
		fprintf(t->err, "socktune: attach %s: %s\n", t->target ? t->target : "", msg);
	if (!t->error[0])
		snprintf(t->error, sizeof t->error, "attach %s: %.200s", t->target ? t->target : "", msg);
	struct rec *w = attach_warning(t, "unreachable", pid, -1, addr);
	rec_str(w, K_ERROR, msg);
	rec_arr(w, K_FIX);
	attach_warning_end(t, w, "unreachable", 0);
}

/* Every option of the policy the socket takes, into b: those the iterator sets queued, the
 * others noted refused with the path that sets them (the backlog only when it would change) */
static void plan(const struct attach_state *t, struct attach_bpf *b)
{
	const struct st_policy *p = t->p;
	int listening = b->s.kind == SVC_LISTENER;
	unsigned need = b->s.kind == SVC_OUTGOING ? ST_O_CLIENT : 0;
	unsigned skip = ST_O_BEFORE_BIND | ST_O_CLIENT_ONLY | (listening ? 0 : ST_O_LISTENER_ONLY);
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		unsigned flags = st_sockopts[i].flags;
		int want;
		if (st_cgroup_only(i)) { /* (the cwnd clamp: connections only) */
			if (listening || !st_has(p, (enum st_var_id)i))
				continue;
			want = (int)p->num[i];
		} else if (!st_opt_want(p, i, &want) || (need && !(flags & need)) || (flags & skip)) {
			continue;
		}
		if (st_iter_how(i) == ST_ITER_NONE || it_add(&b->it, i, want) != 0)
			attach_note_add(&b->r, N_PATH, i, 0, want, 0, st_iter_why(i));
	}
	if (listening && st_backlog_governed(p)) {
		int want = st_backlog_want(p, (int)b->s.wqueue);
		if (want != (int)b->s.wqueue)
			attach_note_add(&b->r, N_PATH, ST_V_BACKLOG, 0, want, 0, st_iter_why(ST_V_BACKLOG));
	}
}

void attach_bpf_queue(struct attach_state *t, const struct svc_sock *s, int pid, int fd,
                      const int *opts, int n)
{
	if (grow(&t->q, &t->capq, t->nq, sizeof *t->q, 16) != 0)
		return;
	struct attach_bpf *b = &t->q[t->nq];
	memset(b, 0, sizeof *b);
	b->s = *s;
	b->pid = pid;
	b->fd = fd;
	b->r.via = VIA_BPF;
	diag_addr(s->family, s->src, s->sport, b->r.addr, sizeof b->r.addr);
	diag_addr(s->family, s->dst, s->dport, b->r.peer, sizeof b->r.peer);
	b->it.cookie = s->cookie;
	b->it.family = s->family;
	if (!opts) {
		plan(t, b);
	} else {
		for (int k = 0; k < n; k++) {
			int want;
			if (st_cgroup_only(opts[k]))
				want = (int)t->p->num[opts[k]];
			else
				st_opt_want(t->p, opts[k], &want);
			it_add(&b->it, opts[k], want);
		}
	}
	if (b->it.n || b->r.nnotes)
		t->nq++;
}

/* The service's namespace, as the iterator is made in it: a descriptor (-1: ours), or -2
 * with why */
static int netns_of_svc(const struct service *svc, int *own, char *name, size_t n, char *why,
                        size_t wn)
{
	*own = 0;
	if (svc->tie) {
		snprintf(name, n, "%s", svc->netns_name);
		return svc->netns_fd;
	}
	if (svc->scope == SVC_PORT || pid_same_ns(svc->netpid, "net") == 1) {
		snprintf(name, n, "this process's");
		return -1;
	}
	snprintf(name, n, "/proc/%d/ns/net", svc->netpid);
	int fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, wn, "%s: %s", name, strerror(errno));
		return -2;
	}
	*own = 1;
	return fd;
}

/* What came back for b, into its outcomes and notes, as the pidfd path fills them */
static void take(const struct attach_state *t, struct attach_bpf *b)
{
	int dry = st_on(t->p, ST_V_DRY_RUN);
	for (int k = 0; k < b->it.n; k++) {
		const struct st_outcome *o = &b->it.out[k];
		int i = b->it.opt[k];
		if (o->state == ST_FAILED) {
			attach_note_add(&b->r, N_REFUSED, i, o->err, o->want, 0, NULL);
			b->r.notes[b->r.nnotes - 1].protocol = 6 /* IPPROTO_TCP */;
			continue;
		}
		struct attach_set *set = &b->r.set[b->r.nset++];
		set->opt = i;
		set->out = *o;
		set->name[0] = '\0';
		if (dry)
			set->out.state = ST_READ;
		if (!dry && o->got != ST_UNREAD && i < ST_V_COUNT &&
		    (st_sockopts[i].flags & ST_O_BUFFER) && st_short_of(i, o->want, o->got))
			attach_note_add(&b->r, N_CLAMPED, i, 0, o->want, o->got, NULL);
	}
}

void attach_bpf_flush(struct attach_state *t, struct service *svc)
{
	if (!t->nq)
		return;
	char name[300], why[400], err[600] = "";
	int own, n = (int)t->nq;
	int fd = netns_of_svc(svc, &own, name, sizeof name, why, sizeof why);
	struct it_sock *its = calloc((size_t)n, sizeof *its);
	int rc = -1;
	if (fd == -2)
		snprintf(err, sizeof err, "its network namespace cannot be entered: %s", why);
	else if (!its)
		snprintf(err, sizeof err, "%s", strerror(ENOMEM));
	else {
		for (int k = 0; k < n; k++)
			its[k] = t->q[k].it;
		struct bi_run run;
		double t0 = clock_mono_s();
		int any = 0;
		for (int k = 0; k < n; k++)
			any |= its[k].n > 0;
		rc = any ? it_run(fd, its, n, st_on(t->p, ST_V_DRY_RUN) ? IT_READ : IT_SET, &run, err,
		                  sizeof err)
		         : 0;
		if (any)
			via_say_run(t->err, "attach", name, &run, n, 1000 * (clock_mono_s() - t0), rc, err);
	}
	if (own)
		close(fd);
	for (int k = 0; k < n; k++) {
		struct attach_bpf *b = &t->q[k];
		if (its)
			b->it = its[k];
		if (b->it.n && !b->it.visited && rc == 0)
			continue; /* closed since sock_diag saw it: nothing to tune */
		if (b->it.n && !b->it.visited) { /* the iterator did not run (its line says why) */
			struct rec *w = attach_warning(t, "unreachable", b->pid, b->fd, b->r.addr);
			rec_str(w, K_VIA, "bpf");
			rec_str(w, K_ERROR, err[0] ? err : "the iterator did not run");
			rec_arr(w, K_FIX);
			attach_warning_end(t, w, "unreachable", 1);
			t->refused++;
			if (!t->error[0])
				snprintf(t->error, sizeof t->error, "attach: the TCP iterator: %.200s", err);
			continue;
		}
		take(t, b);
		b->r.notes_only = !b->r.nset; /* (every option refused: said, no line) */
		attach_say(t, &b->s, b->pid, b->fd, &b->r);
	}
	free(its);
	t->nq = 0;
}
