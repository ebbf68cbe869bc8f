/* socktune attach [OPTIONS] PID... | :PORT...: tune a server that is already running, in any
 * language, from outside.  A target is a service (service.h): PID, the processes that hold
 * its listeners and those that hold connections accepted on them; or the listeners on PORT.
 * Its sockets are found without touching its descriptors (sock_diag, /proc); each one tuned
 * is copied with pidfd_getfd only for the change (attachtune.c).  The target is never
 * disturbed beyond the policy: no signal, no descriptor left behind, no copy open while a
 * line is written. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "socktune.h"
#include "attach/attach.h"
#include "host/clock.h"
#include "host/grow.h"
#include "host/pidinfo.h"

void attach_refuse(struct attach_state *t, int pid, const char *call, int err)
{
	t->refused++;
	if (svc_pids_add(&t->said, pid) == 0)
		return; /* said already */
	const char *fix = "";
	if (err == ESRCH)
		fix = "no such process here (or it lives in another pid namespace: attach from there)";
	else if ((err == EPERM || err == EACCES) && t->via == VIA_PIDFD)
		fix = "the same uid and a dumpable target, or CAP_SYS_PTRACE (a setuid, setcap or "
		      "prctl(PR_SET_DUMPABLE, 0) target needs CAP_SYS_PTRACE); or --via bpf, the TCP "
		      "iterator, which needs no ptrace access";
	else if (err == EPERM || err == EACCES)
		fix = "the same uid and a dumpable target, or CAP_SYS_PTRACE (a setuid, setcap or "
		      "prctl(PR_SET_DUMPABLE, 0) target needs CAP_SYS_PTRACE)";
	else if (err == ENOSYS)
		fix = "pidfd_open and pidfd_getfd need Linux 5.6 or later";
	fprintf(t->err, "socktune: attach %d: %s: %s%s%s\n", pid, call, strerror(err), *fix ? ": " : "",
	        fix);
	char why[200];
	snprintf(why, sizeof why, "%s: %s", call, strerror(err));
	if (!t->error[0])
		snprintf(t->error, sizeof t->error, "attach %d: %s", pid, why);
	struct rec *w = attach_warning(t, "unreachable", pid, -1, NULL);
	rec_str(w, K_ERROR, why);
	rec_arr(w, K_FIX); /* (a capability or another namespace: the note says) */
	if (*fix)
		rec_str(w, K_NOTE, fix);
	attach_warning_end(t, w, "unreachable", 0); /* (said above, as an error) */
}

void attach_fail(struct attach_state *t, const char *kind, const char *fmt, ...)
{
	char msg[2000];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(t->err, "socktune: %s\n", msg);
	t->refused++;
	if (!t->json)
		return;
	if (!t->error[0])
		snprintf(t->error, sizeof t->error, "%.*s", (int)sizeof t->error - 1, msg);
	struct rec *w = rec_obj(t->warnings, 0);
	rec_str(w, K_KIND, kind);
	rec_str(w, K_ERROR, msg);
}

unsigned attach_want(const struct attach_state *t)
{
	/* (sockets no process this user may read holds: for the iterator, which needs none) */
	unsigned unheld = t->via != VIA_PIDFD && !t->wrapper ? SVC_W_UNHELD : 0;
	if (!t->connections)
		return unheld;
	return SVC_W_ACCEPTED | SVC_W_EVERY | unheld |
	       (st_on(t->p, ST_V_CLIENT) ? SVC_W_OUTGOING : 0);
}

/* The options the pidfd path left to the iterator (r->rest), when the iterator cannot be
 * used here: refused, each said with why */
static void rest_refused(struct attach_state *t, struct attach_tuned *r)
{
	for (int k = 0; k < r->nrest; k++) {
		int i = r->rest[k], want = 0;
		if (st_cgroup_only(i))
			want = (int)t->p->num[i];
		else
			st_opt_want(t->p, i, &want);
		attach_note_add(r, N_NO_ITER, i, 0, want, 0, NULL);
	}
	r->nrest = 0;
}

/* A socket the pidfd path does not reach (--via bpf; auto: its copy refused, or no holder
 * this user may read): queued for the iterator, or refused with both paths named */
static void through_iterator(struct attach_state *t, const struct svc_sock *s,
                             const struct holder *h, size_t nh, int copy_err)
{
	int pid = nh ? h[0].pid : -1, fd = nh ? h[0].fd : -1;
	char why[200];
	if (!s->cookie) { /* (read from /proc/PID/net, which gives no cookie) */
		attach_fail(t, "unreachable", "attach %s: the TCP iterator names a socket by its "
		            "sock_diag cookie, and sock_diag could not be read in its network namespace "
		            "(CAP_SYS_ADMIN enters it)", t->target ? t->target : "");
		return;
	}
	if (attach_bpf_ok(t)) {
		attach_bpf_queue(t, s, pid, fd, NULL, 0);
		return;
	}
	if (t->via == VIA_BPF)
		snprintf(why, sizeof why, "was not tried (--via bpf)");
	else if (copy_err)
		snprintf(why, sizeof why, "was refused: %s", strerror(copy_err));
	else
		snprintf(why, sizeof why, "has no process to be taken from: none this user may read "
		         "holds it (/proc/PID/fd)");
	attach_refuse_both(t, s, pid, why);
}

/* A new socket of the service: tuned through the first holder whose copy can be taken. */
static int on_new(const struct svc_sock *s, const struct holder *h, size_t nh, void *ctx)
{
	struct attach_state *t = ctx;
	const struct st_policy *p = t->p;
	if (s->kind != SVC_OUTGOING && st_has(p, ST_V_PORTS) && !st_port_in(p->ports, s->sport))
		return SVC_DONE;
	if (s->kind == SVC_OUTGOING && st_has(p, ST_V_CLIENT_PORTS) &&
	    !st_port_in(p->client_ports, s->dport))
		return SVC_DONE;
	int again = 0, copy_err = 0;
	for (size_t k = 0; t->via != VIA_BPF && k < nh; k++) {
		struct attach_tuned r;
		int pidfd = attach_pidfd(t, h[k].pid);
		int rc = pidfd < 0 ? -1 : attach_tune(t, s, pidfd, h[k].fd, &r);
		if (rc != 0 && (rc > 0 || errno == ESRCH)) {
			again = 1; /* that holder closed it, or exited, meanwhile: another may hold it */
			continue;
		}
		if (rc < 0) {
			int e = errno;
			/* (auto: a copy refused for want of ptrace access goes to the iterator) */
			if (t->via == VIA_PIDFD || t->wrapper || (e != EPERM && e != EACCES))
				attach_refuse(t, h[k].pid, pidfd < 0 ? "pidfd_open" : "pidfd_getfd", e);
			else
				copy_err = e;
			continue;
		}
		if (r.nrest && !attach_bpf_ok(t))
			rest_refused(t, &r);
		/* (a copy that set nothing, every option the iterator's: no line of its own) */
		r.notes_only = r.nrest && !r.nset && !r.backlog;
		attach_say(t, s, h[k].pid, h[k].fd, &r);
		if (r.nrest)
			attach_bpf_queue(t, s, h[k].pid, h[k].fd, r.rest, r.nrest);
		if (s->kind == SVC_LISTENER)
			attach_reset_add(t, s, h[k].pid, h[k].fd, &r);
		if (s->kind == SVC_ACCEPTED && attach_watch_wanted(t))
			attach_watch_add(t, t->cur, s, h[k].pid, h[k].fd);
		for (size_t j = 0; s->kind == SVC_LISTENER && !t->wrapper && j < nh; j++)
			if (j != k) /* prefork workers: the listener they share is tuned once */
				attach_line_end(t, attach_line(t, h[j].pid, h[j].fd, "attach-shared", r.addr));
		return SVC_DONE;
	}
	if (t->via == VIA_BPF || (t->via == VIA_AUTO && !t->wrapper && (copy_err || !nh)))
		through_iterator(t, s, h, nh, copy_err);
	else
		return again ? SVC_AGAIN : SVC_DONE;
	return SVC_DONE;
}

int attach_look(struct attach_state *t, struct service *svc)
{
	t->cur = svc;
	int r = svc_look(svc, attach_want(t), on_new, t);
	attach_bpf_flush(t, svc); /* (what the look queued for the iterator: one run) */
	/* the pidfds of processes that exited since go (a fork-per-connection server makes and
	 * ends thousands) */
	for (size_t k = 0; k < t->npidfds;) {
		struct pollfd pf = {.fd = t->pidfds[k].pidfd, .events = POLLIN};
		if (poll(&pf, 1, 0) == 1)
			attach_pidfd_drop(t, t->pidfds[k].pid);
		else
			k++;
	}
	return r;
}

/* The processes --follow waits for: the PIDs given, the holders of a :PORT's listeners. */
struct root {
	int pid, pidfd;
};

static int add_root(struct root **roots, size_t *n, int pid)
{
	for (size_t k = 0; k < *n; k++)
		if ((*roots)[k].pid == pid)
			return 0;
	int pfd = svc_high_fd((int)syscall(SYS_pidfd_open, pid, 0));
	if (pfd < 0)
		return -1;
	struct root *v = realloc(*roots, (*n + 1) * sizeof *v);
	if (!v) {
		close(pfd);
		return -1;
	}
	v[(*n)++] = (struct root){pid, pfd};
	*roots = v;
	return 0;
}

/* --follow: a pass every 100 ms until every root has exited (said once each), stdout's
 * reader has left, or SIGINT or SIGTERM asks for the end (a pass under way is finished). */
static void follow(struct attach_state *t, struct service *svcs, size_t nsvc, struct root *roots,
                   size_t nroots)
{
	struct pollfd *pf = calloc(nroots + 1, sizeof *pf);
	if (!pf)
		return;
	for (size_t alive = nroots; alive && !t->write_err && !stop_signal;) {
		fflush(t->out);
		/* the pidfds say an exit at once; stdout says POLLERR once a pipe's reader left */
		for (size_t k = 0; k < nroots; k++)
			pf[k] = (struct pollfd){.fd = roots[k].pidfd, .events = POLLIN};
		pf[nroots] = (struct pollfd){.fd = fileno(t->out), .events = 0};
		if ((poll(pf, nroots + 1, 100) < 0 && errno != EINTR) || stop_signal)
			break;
		/* a stdout that will take no line: a pipe whose reader left (POLLERR), a socket
		 * whose peer closed or a hung-up terminal (POLLHUP), none at all (POLLNVAL).  Each
		 * is said at once, as a line written there would be, and never polled again (poll
		 * returns at once for it: a pass each time, a core's worth of them) */
		if (pf[nroots].revents & (POLLERR | POLLHUP | POLLNVAL)) {
			t->write_err = pf[nroots].revents & POLLNVAL ? EBADF : EPIPE;
			break;
		}
		for (size_t k = 0; k < nroots; k++)
			if (roots[k].pidfd >= 0 && (pf[k].revents & POLLIN)) {
				fprintf(stderr, "socktune: attach %d: exited\n", roots[k].pid);
				close(roots[k].pidfd);
				roots[k].pidfd = -1; /* (poll skips a negative fd) */
				alive--;
			}
		for (size_t k = 0; alive && k < nsvc; k++)
			if (svcs[k].nl >= 0 || svcs[k].how[0])
				attach_look(t, &svcs[k]);
	}
	free(pf);
}

/* Without --follow a target is looked at once: its descriptors (its pidfd, its sock_diag
 * socket, the pidfds of the processes reached) go as soon as that is done, so that no number
 * of targets meets RLIMIT_NOFILE.  A service with connections to sample after TCP_NODELAY
 * (attachwatch.c) keeps its sock_diag socket until then. */
static void let_go(struct attach_state *t, struct service *svc, struct root *roots, size_t *nroots)
{
	int watched = 0;
	for (size_t k = 0; k < t->nwatch && !watched; k++)
		watched = t->watch[k].svc == svc;
	if (!watched)
		svc_close(svc);
	while (t->npidfds)
		attach_pidfd_drop(t, t->pidfds[t->npidfds - 1].pid);
	for (; *nroots; --*nroots)
		close(roots[*nroots - 1].pidfd);
}

/* --follow keeps three descriptors per target for its run: the soft limit goes up to the
 * hard one (Debian's soft default, 1024, would stop it at some 340 targets). */
static void nofile_to_hard(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* A PID whose descriptors cannot be read (fd_err: /proc/PID/fd's): its sockets looked for by
 * its cgroup (pidtie.c) in its network namespace, found without ptrace, through the iterator.
 * 0 with svc open; -1 said (exactly why not). */
static int open_tied(struct attach_state *t, struct service *svc, int pid, struct pid_tie *tie,
                     int fd_err)
{
	char why[1400], name[128];
	int netns;
	if (!attach_bpf_ok(t)) {
		attach_fail(t, "unreachable", "attach %d: not tuned: its descriptors cannot be read "
		            "(/proc/%d/fd: %s; %s), and the TCP iterator cannot be used here: %s (%s)",
		            pid, pid, strerror(fd_err), VIA_PIDFD_NEEDS, t->bpf_why, VIA_BPF_NEEDS);
		return -1;
	}
	if (pid_tie(pid, tie, why, sizeof why) != 0) {
		attach_fail(t, "unreachable", "attach %d: not tuned: its descriptors cannot be read "
		            "(/proc/%d/fd: %s; %s), sock_diag names no socket's process, and its "
		            "sockets cannot be tied to it by their cgroup: %s", pid, pid,
		            strerror(fd_err), VIA_PIDFD_NEEDS, why);
		return -1;
	}
	if (pid_netns(pid, &netns, name, sizeof name, why, sizeof why) != 0) {
		attach_fail(t, "unreachable", "attach %d: not tuned: %s", pid, why);
		return -1;
	}
	if (svc_open_tied(svc, pid, tie, netns, name, why, sizeof why) != 0) {
		attach_fail(t, "unreachable", "attach %d: %s", pid, why);
		return -1;
	}
	return 0;
}

/* Why nothing was tuned when no failure was said (a process with no TCP socket, a port whose
 * listeners closed meanwhile): the text says it on stderr, the JSON in "error". */
static const char nothing_found[] = "nothing tuned: no TCP socket of the targets was found to tune";

/* --json: the run's one document, with its counts and its status (a signal's, 128 + it, when
 * one ended --follow: main ends by it), written at the end. */
static void write_document(struct attach_state *t, int status)
{
	struct rec *d = t->doc;
	rec_int(d, K_TUNED, t->tuned);
	rec_int(d, K_REFUSED, t->refused);
	if (status != 0 && !t->error[0])
		snprintf(t->error, sizeof t->error, "%s",
		         t->tuned ? "some options or targets were refused (the warnings say which)"
		                  : nothing_found);
	if (stop_signal)
		status = 128 + stop_signal;
	if (t->error[0])
		rec_str(d, K_ERROR, t->error);
	rec_int(d, K_STATUS, status);
	rec_write_json(t->out, d);
	rec_free(d);
	t->doc = NULL;
}

static struct rec *new_document(struct attach_state *t)
{
	struct rec *d = rec_new();
	rec_int(d, K_SCHEMA, REC_SCHEMA_VERSION);
	rec_str(d, K_COMMAND, "attach");
	rec_str(d, K_VERSION, ST_VERSION);
	t->sockets = rec_arr(d, K_SOCKETS);
	t->warnings = rec_arr(d, K_WARNINGS);
	return d;
}

int attach_main(const struct attach_args *a, const struct st_policy *p)
{
	static struct attach_state t;
	t = (struct attach_state){.p = p, .out = stdout, .err = stderr, .json = a->json,
	                          .connections = a->connections, .via = a->via};
	size_t n = 0, nsvc = 0, nroots = 0;
	while (a->targets[n])
		n++;
	if (a->json)
		t.doc = new_document(&t);
	if (st_on(p, ST_V_DISABLE)) {
		fprintf(stderr, "socktune: attach: SOCKTUNE_DISABLE=1 (--disable): nothing looked at, "
		        "nothing changed\n");
		if (a->json)
			write_document(&t, 0);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN); /* a closed pipe on stdout is an error said at the end, not death */
	if (a->follow) {
		nofile_to_hard();
		stop_on_signals(); /* the summary, then the signal's status */
	}
	double t0 = clock_mono_s();
	struct service *svcs = calloc(n, sizeof *svcs);
	struct pid_tie *ties = calloc(n, sizeof *ties); /* (a tied service's, for its run) */
	struct root *roots = NULL;
	if (!svcs || !ties) {
		perror("socktune: attach");
		if (a->json)
			rec_error_json(stdout, "attach", "out of memory", 1);
		return 1;
	}
	for (size_t k = 0; k < n && !t.write_err; k++) {
		char err[200];
		struct target tw; /* (every word checked by attach's parser) */
		parse_target(a->targets[k], TARGET_PID | TARGET_PORT, &tw);
		enum svc_scope scope = tw.kind == TARGET_PORT ? SVC_PORT : SVC_PID;
		int pid = tw.pid;
		unsigned port = tw.port;
		if (scope == SVC_PID && add_root(&roots, &nroots, pid) != 0) {
			attach_refuse(&t, pid, "pidfd_open", errno);
			continue;
		}
		struct service *svc = &svcs[nsvc];
		t.target = a->targets[k];
		int fr = scope == SVC_PID ? pid_fds_readable(pid) : 0, r;
		if ((fr == -EACCES || fr == -EPERM) && t.via != VIA_PIDFD) {
			if (open_tied(&t, svc, pid, &ties[nsvc], -fr) != 0)
				continue;
			r = 0;
		} else if (fr == -EACCES || fr == -EPERM) {
			attach_refuse(&t, pid, "/proc/PID/fd", -fr);
			continue;
		} else {
			r = svc_open(svc, scope, pid, port, err, sizeof err);
		}
		if (r == -EACCES || r == -EPERM || r == -ESRCH) {
			attach_refuse(&t, pid, "/proc/PID/fd", -r);
			continue;
		}
		if (r < 0) {
			attach_fail(&t, "not-found", "attach %s: %s", a->targets[k], err);
			continue;
		}
		nsvc++;
		if ((r = attach_look(&t, svc)) < 0)
			attach_fail(&t, "unreadable", "attach %s: sock_diag dump: %s", a->targets[k],
			            strerror(-r));
		else if (scope == SVC_PORT && !svc->listeners)
			attach_fail(&t, "not-found", "attach %s: no process here holds a TCP listener on "
			            "port %u that this user may see", a->targets[k], port);
		else if (scope == SVC_PORT && svc->unheld && t.via == VIA_PIDFD)
			attach_fail(&t, "unreachable", "attach %s: %zu of %zu TCP listeners on port %u held "
			            "by no process this user may see, not tuned: another user's process needs "
			            "the same uid or CAP_SYS_PTRACE (its /proc/PID/fd); the TCP iterator "
			            "needs none (--via bpf or auto)", a->targets[k],
			            svc->unheld, svc->listeners, port);
		attach_reset_arm(&t, svc); /* (its listeners tuned: the connections made before noted) */
		for (size_t j = 0; a->follow && scope == SVC_PORT && j < svc->pids.n; j++)
			add_root(&roots, &nroots, svc->pids.v[j]);
		if (!a->follow)
			let_go(&t, svc, roots, &nroots);
	}
	if (!t.write_err && fflush(stdout) == 0) { /* (the lines first: the looks take a second) */
		attach_watch_check(&t);
		attach_reset_wait(&t, 0); /* (done already when the watch took its second) */
	}
	attach_reset_end(&t);
	if (a->follow && !t.write_err)
		follow(&t, svcs, nsvc, roots, nroots);
	for (size_t k = 0; k < nsvc; k++)
		svc_close(&svcs[k]);
	free(svcs);
	free(ties);
	free(t.watch);
	free(t.q);
	/* 0: something tuned and nothing refused; 1: some refused; 3: nothing tuned (after a
	 * signal, main ends by it) */
	int status = t.tuned == 0 ? EXIT_NOT_FOUND : t.refused ? 1 : 0;
	if (t.tuned == 0 && t.refused == 0 && !t.write_err)
		fprintf(stderr, "socktune: attach: %s\n", nothing_found);
	if (a->json && !t.write_err)
		write_document(&t, status);
	if (fflush(stdout) != 0 && !t.write_err)
		t.write_err = errno;
	if (stop_signal)
		fprintf(stderr, "socktune: attach: stopped by %s after %.1f s: %ld socket%s tuned, %ld "
		        "refused\n", stop_name(), clock_mono_s() - t0, t.tuned, t.tuned == 1 ? "" : "s",
		        t.refused);
	if (t.write_err) {
		fprintf(stderr, "socktune: attach: writing the lines: %s%s\n", strerror(t.write_err),
		        t.write_err == EPIPE ? " (the reader left): stopped" : "");
		return 1;
	}
	return status;
}
