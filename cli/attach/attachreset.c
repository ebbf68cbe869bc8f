/* After attach set a listener's options: does the program undo them on each connection it
 * accepts?  The kernel copies TCP_NODELAY (and the other options of the table that are not
 * set per connection) from a listener to each connection it makes from then on, but a
 * program that sets its own value after accept() (hyper 0.14 and Erlang's inets turn
 * TCP_NODELAY off on every connection) replaces it: attach would say nodelay=1 while every
 * new connection runs with Nagle (~40 ms stalls against a delayed ACK).
 *
 * Exact and cheap: right after the listeners of a target are tuned, the cookies of every
 * established TCP socket of its network namespace are noted (one sock_diag dump): those were
 * made before, with the old values, whatever the program does.  By cookie, not inode: a
 * connection still in an accept queue has no inode until accept() (a busy server's queue is
 * rarely empty), but the kernel gave it its cookie when it made it, and accept() keeps it.
 * A handshake not complete at the tune (a request socket, SYN_RECV) is not noted: at its
 * third ACK the kernel makes the connection by cloning the listener as it is then
 * (inet_csk_clone_lock), with the tuned values, and gives it the request's cookie.  Any
 * connection accepted on a tuned listener and not noted was made from the tuned listener, so
 * the kernel gave it the listener's value; read through a copy (pidfd_getfd, held for the
 * getsockopt only), a different value is the program's own.  The look lasts at most a second,
 * a look every 50 ms; it ends early for a listener once one of its new connections showed the
 * reset, or kept the listener's value for 200 ms (a program sets its value right after
 * accept()).  A listener whose program accepted nothing meanwhile is not judged.  One line
 * per listener whose connections were reset, at warn, with what holds: a cgroup hook that
 * refuses the program's own setting (attach --cgroup), or the preload. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_apply.h"
#include "attach/attach.h"
#include "host/clock.h"
#include "host/grow.h"

#define RESET_WINDOW_NS (1000 * 1000 * 1000LL) /* the whole look, at most */
#define RESET_STEP_NS (50 * 1000 * 1000LL)     /* between two looks */
#define RESET_KEPT_NS (200 * 1000 * 1000LL)    /* a connection that kept the value this long */
#define RESET_OPTS 8
#define RESET_CONNS 8
#define RESET_SVCS 64 /* targets looked at (a sock_diag socket each, for the second) */

struct reset_conn {
	unsigned long long cookie;
	long long equal_since; /* read with the listener's values since (CLOCK_MONOTONIC, ns) */
};
struct reset_listener {
	const struct service *target; /* the service attach tuned it through */
	unsigned long long ino;
	int pid, fd, nopt, verdict; /* verdict: 0 not yet, 1 reset, 2 kept */
	int opt[RESET_OPTS], val[RESET_OPTS];
	char addr[64];
	/* the first reset seen: which option, the connection's value, its peer and holder */
	int reset_opt, reset_val, reset_pid, reset_fd;
	char peer[64];
	struct reset_conn conns[RESET_CONNS];
	int nconns;
};
struct reset_svc {
	const struct service *target;
	struct service svc;          /* its own: its looks settle connections attach's must not */
	struct svc_map before;       /* established sockets when the listeners were tuned, by
	                              * cookie (queued ones too) */
};
struct attach_resets {
	struct reset_listener *l;
	size_t n, cap;
	struct reset_svc s[RESET_SVCS];
	size_t ns;
	int closed; /* looked at already: listeners found later (--follow) are not */
};

/* Whether option i, set on a listener, is what the kernel copies to the connections it makes
 * and reads back the same there: not those set per connection or meaningful on a listener
 * only, not TCP_MAXSEG (an accepted socket reports the negotiated one), not a name. */
static int compared(int i)
{
	if (i >= ST_V_COUNT || !st_is_sockopt(i))
		return 0; /* (the keep-alive parts: the whole is compared) */
	return !(st_sockopts[i].flags & (ST_O_EACH_CONN | ST_O_LISTENER_ONLY | ST_O_NAME |
	                                 ST_O_NOT_COMPARED | ST_O_BEFORE_BIND | ST_O_CLIENT_ONLY));
}

static int wanted(const struct attach_state *t)
{
	return !t->wrapper && !t->reset_over && !st_on(t->p, ST_V_DRY_RUN) &&
	       (!t->resets || !t->resets->closed);
}

void attach_reset_add(struct attach_state *t, const struct svc_sock *s, int pid, int fd,
                      const struct attach_tuned *r)
{
	if (!wanted(t) || s->kind != SVC_LISTENER)
		return;
	struct reset_listener l = {.target = t->cur, .ino = s->ino, .pid = pid, .fd = fd};
	for (int k = 0; k < r->nset && l.nopt < RESET_OPTS; k++)
		if (compared(r->set[k].opt) && r->set[k].out.state == ST_SET && r->set[k].out.got != ST_UNREAD) {
			l.opt[l.nopt] = r->set[k].opt;
			l.val[l.nopt++] = r->set[k].out.got;
		}
	if (!l.nopt)
		return;
	if (!t->resets && !(t->resets = calloc(1, sizeof *t->resets)))
		return;
	struct attach_resets *rs = t->resets;
	if (grow(&rs->l, &rs->cap, rs->n, sizeof *rs->l, 8) != 0)
		return;
	snprintf(l.addr, sizeof l.addr, "%s", r->addr);
	rs->l[rs->n++] = l;
}

static void note_before(const struct diag_sock *d, void *ctx)
{
	if (d->cookie)
		svc_map_put(ctx, d->cookie, 1);
}

void attach_reset_arm(struct attach_state *t, const struct service *target)
{
	struct attach_resets *rs = t->resets;
	if (!rs || rs->closed || rs->ns == RESET_SVCS)
		return;
	int any = 0;
	for (size_t k = 0; k < rs->n && !any; k++)
		any = rs->l[k].target == target;
	for (size_t k = 0; k < rs->ns && any; k++)
		any = rs->s[k].target != target;
	if (!any)
		return;
	struct reset_svc *v = &rs->s[rs->ns];
	char err[200];
	*v = (struct reset_svc){.target = target};
	if (svc_open(&v->svc, target->scope, target->pid, target->port, err, sizeof err) != 0 ||
	    v->svc.nl < 0 || /* (/proc/PID/net/tcp has no inode filter to trust here: not judged) */
	    diag_dump(v->svc.nl, 1u << TS_ESTABLISHED | 1u << TS_CLOSE_WAIT, 0, note_before, &v->before) < 0) {
		svc_close(&v->svc);
		svc_map_free(&v->before);
		return;
	}
	rs->ns++;
}

struct reset_look {
	struct attach_state *t;
	struct reset_svc *v;
	long long now;
};

static struct reset_listener *listener_of(struct attach_resets *rs, const struct reset_svc *v,
                                          unsigned long long ino)
{
	for (size_t k = 0; k < rs->n; k++)
		if (rs->l[k].target == v->target && rs->l[k].ino == ino)
			return &rs->l[k];
	return NULL;
}

/* Option i's value on the copy, as the listener's was read back (a flag: 0 or 1) */
static int read_opt(int copy, int family, int i, int *val)
{
	int level, optname, v = 0;
	const char *label;
	socklen_t len = sizeof v;
	st_sockopt_for(i, family, &level, &optname, &label);
	if (getsockopt(copy, level, optname, &v, &len) != 0)
		return -1;
	*val = st_vars[i].type == ST_T_BOOL || st_vars[i].type == ST_T_KEEPALIVE ? v != 0 : v;
	return 0;
}

static int on_conn(const struct svc_sock *s, const struct holder *h, size_t nh, void *ctx)
{
	struct reset_look *x = ctx;
	struct attach_resets *rs = x->t->resets;
	if (s->kind != SVC_ACCEPTED || s->listener < 0 || !s->cookie ||
	    svc_map_get(&x->v->before, s->cookie) >= 0)
		return SVC_DONE; /* a listener (tuned by attach's own look), or made before */
	struct reset_listener *l = listener_of(rs, x->v, x->v->svc.s[s->listener].ino);
	if (!l || l->verdict)
		return SVC_DONE;
	int pidfd = attach_pidfd(x->t, h[0].pid);
	int copy = pidfd < 0 ? -1 : svc_high_fd((int)syscall(SYS_pidfd_getfd, pidfd, h[0].fd, 0));
	if (copy < 0)
		return nh && errno == EBADF ? SVC_AGAIN : SVC_DONE; /* (closed meanwhile; refused) */
	struct stat sb;
	int same = 1, opt = 0, val = 0;
	if (fstat(copy, &sb) != 0 || (unsigned long long)sb.st_ino != s->ino) {
		close(copy);
		return SVC_AGAIN;
	}
	for (int k = 0; k < l->nopt && same; k++)
		if (read_opt(copy, s->family, l->opt[k], &val) == 0 && val != l->val[k]) {
			same = 0;
			opt = l->opt[k];
		}
	close(copy);
	if (!same) {
		l->verdict = 1;
		l->reset_opt = opt;
		l->reset_val = val;
		l->reset_pid = h[0].pid;
		l->reset_fd = h[0].fd;
		diag_addr(s->family, s->dst, s->dport, l->peer, sizeof l->peer);
		return SVC_DONE;
	}
	int k = 0;
	while (k < l->nconns && l->conns[k].cookie != s->cookie)
		k++;
	if (k == l->nconns && l->nconns < RESET_CONNS)
		l->conns[l->nconns++] = (struct reset_conn){s->cookie, x->now};
	if (k < l->nconns && x->now - l->conns[k].equal_since >= RESET_KEPT_NS)
		l->verdict = 2;
	return l->verdict ? SVC_DONE : SVC_AGAIN;
}

static int undecided(const struct attach_resets *rs)
{
	for (size_t k = 0; k < rs->n; k++)
		for (size_t j = 0; j < rs->ns; j++)
			if (!rs->l[k].verdict && rs->l[k].target == rs->s[j].target)
				return 1;
	return 0;
}

void attach_reset_wait(struct attach_state *t, int full)
{
	struct attach_resets *rs = t->resets && !t->resets->closed ? t->resets : NULL;
	long long start = clock_mono_ns(), end = start + RESET_WINDOW_NS;
	for (long long now = start; rs && rs->ns && now < end && undecided(rs); now = clock_mono_ns()) {
		for (size_t j = 0; j < rs->ns; j++) {
			struct reset_look x = {t, &rs->s[j], now};
			svc_look(&rs->s[j].svc, SVC_W_ACCEPTED | SVC_W_EVERY, on_conn, &x);
		}
		long long left = end - clock_mono_ns();
		struct timespec step = {0, left < RESET_STEP_NS ? (left > 0 ? left : 0) : RESET_STEP_NS};
		nanosleep(&step, NULL);
	}
	if (t->resets)
		t->resets->closed = 1;
	for (long long left; full && (left = end - clock_mono_ns()) > 0;) { /* the rest of the second */
		struct timespec rest = {left / 1000000000LL, left % 1000000000LL};
		nanosleep(&rest, NULL);
	}
}

/* --nodelay, --keepalive; --rcvbuf 262144 (the policy's value, bare: bytes, us) */
static void option_arg(const struct st_policy *p, int i, char *buf, size_t n)
{
	if (st_vars[i].type == ST_T_BOOL || st_vars[i].type == ST_T_KEEPALIVE)
		snprintf(buf, n, "--%s", st_vars[i].option);
	else
		snprintf(buf, n, "--%s %lld", st_vars[i].option, p->num[i]);
}

static void say(struct attach_state *t, const struct reset_listener *l)
{
	char arg[64], target[32], cmd[160], note[480];
	option_arg(t->p, l->reset_opt, arg, sizeof arg);
	if (l->target->scope == SVC_PORT)
		snprintf(target, sizeof target, ":%u", l->target->port);
	else
		snprintf(target, sizeof target, "%d", l->target->pid);
	int lv = l->val[0]; /* the listener's value of that option */
	for (int k = 0; k < l->nopt; k++)
		if (l->opt[k] == l->reset_opt)
			lv = l->val[k];
	struct rec *w = attach_warning(t, "reset-per-connection", l->pid, l->fd, l->addr);
	rec_str(w, K_CHK_OPTION, st_vars[l->reset_opt].option);
	rec_int(w, K_LOG_LISTENER_VALUE, lv);
	rec_int(w, K_LOG_ACCEPTED_VALUE, l->reset_val);
	rec_str(w, K_PEER, l->peer);
	snprintf(cmd, sizeof cmd, "socktune attach --cgroup %s %s", arg, target);
	rec_str(rec_arr(w, K_FIX), 0, cmd);
	snprintf(note, sizeof note, "the program sets %s=%d itself on each connection it accepts "
	         "(pid %d fd %d, made after the listener was tuned, read back), so new connections "
	         "run without the listener's %d: attach reaches the listener, not what the program "
	         "does after accept(); what holds: a cgroup hook that refuses the program's own "
	         "setting (the fix), or running it under the preload (socktune %s -- PROGRAM)",
	         st_vars[l->reset_opt].option, l->reset_val, l->reset_pid, l->reset_fd, lv, arg);
	rec_str(w, K_NOTE, note);
	attach_warning_end(t, w, "reset-per-connection", 1);
}

void attach_reset_end(struct attach_state *t)
{
	struct attach_resets *rs = t->resets;
	t->reset_over = 1;
	if (!rs)
		return;
	for (size_t k = 0; k < rs->n; k++)
		if (rs->l[k].verdict == 1)
			say(t, &rs->l[k]);
	for (size_t j = 0; j < rs->ns; j++) {
		svc_close(&rs->s[j].svc);
		svc_map_free(&rs->s[j].before);
	}
	free(rs->l);
	free(rs);
	t->resets = NULL;
	while (t->npidfds) /* (the pidfds the look opened) */
		attach_pidfd_drop(t, t->pidfds[t->npidfds - 1].pid);
}
