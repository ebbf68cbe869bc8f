/* One socket of another process tuned from outside: pidfd_getfd(2) (Linux 5.6) takes a copy
 * of its descriptor, an option set on the copy is set on the socket itself, and listen() on
 * a copy of a listener changes its backlog live.  The copy is held only for the change: a
 * socket whose owner closes it while a copy is open lives on (an epoll set keeps reporting
 * it, a port stays taken), so the copy is closed before anything is written.  The apply step
 * is the library's own (common/apply.c), the line in the library's format. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_apply.h"
#include "socktune_host.h"
#include "socktune_json.h"
#include "socktune_kernel.h"
#include "attach/attach.h"
#include "host/pidinfo.h"
#include "host/probe.h"
#include "host/nssysctl.h"

const char *attach_in_netns(int pid, const char *cmd, char *buf, size_t n)
{
	if (pid_same_ns(pid, "net") == 1)
		snprintf(buf, n, "%s", cmd);
	else
		snprintf(buf, n, "nsenter --net=/proc/%d/ns/net %s", pid, cmd);
	return buf;
}

struct rec *attach_line(struct attach_state *t, int pid, int fd, const char *event,
                        const char *addr)
{
	/* the library's line: "socktune pid=N level=info event=E fd=..." (shim/log.c), pid the
	 * target's, the one that holds the socket */
	struct rec *r = t->json ? rec_obj(t->sockets, 0) : rec_new();
	if (pid > 0) /* (a socket found by sock_diag alone has no holder named) */
		rec_int(r, K_PID, pid);
	if (!t->json)
		rec_str(r, K_LEVEL, "info");
	rec_str(r, K_EVENT, event);
	if (fd >= 0)
		rec_int(r, K_FD, fd);
	rec_str(r, K_ADDR, addr);
	return r;
}

void attach_line_end(struct attach_state *t, struct rec *r)
{
	if (t->json)
		return; /* in the document, written at the end */
	fputs("socktune ", t->out);
	rec_write_logfmt(t->out, r);
	fputc('\n', t->out);
	rec_free(r);
	if ((fflush(t->out) != 0 || ferror(t->out)) && !t->write_err)
		t->write_err = errno ? errno : EIO;
}

struct rec *attach_warning(struct attach_state *t, const char *kind, int pid, int fd,
                           const char *addr)
{
	(void)t;
	struct rec *w = rec_new();
	if (pid > 0)
		rec_int(w, K_PID, pid);
	rec_str(w, K_LEVEL, "warn");
	rec_str(w, K_EVENT, kind);
	if (fd >= 0)
		rec_int(w, K_FD, fd);
	if (addr)
		rec_str(w, K_ADDR, addr);
	return w;
}

void attach_warning_end(struct attach_state *t, struct rec *w, const char *kind, int say)
{
	if (say)
		rec_say(t->err, "socktune ", w);
	if (t->json) {
		struct rec *j = rec_obj(t->warnings, 0);
		rec_str(j, K_KIND, kind);
		rec_copy_members_except(j, w, K_LEVEL, K_EVENT);
	}
	rec_free(w);
}

void attach_note_add(struct attach_tuned *r, int kind, int opt, int err, long long want,
                     long long got, const char *why)
{
	if (r->nnotes < ATTACH_NOTES)
		r->notes[r->nnotes++] = (struct attach_note){kind, opt, err, 0, want, got, why};
}

static void note(struct attach_tuned *r, int kind, int opt, int err, long long want,
                 long long got)
{
	attach_note_add(r, kind, opt, err, want, got, NULL);
}

static int get_int(int fd, int level, int optname)
{
	long long v;
	return probe_get_int(fd, level, optname, &v) == 0 ? (int)v : -1;
}

/* The options on the copy: a listener gets the listener options and the backlog, an
 * accepted connection what matters on one, an outgoing one the client options. */
static void apply(const struct attach_state *t, const struct svc_sock *s, int copy,
                  struct attach_tuned *r)
{
	const struct st_policy *p = t->p;
	int listening = s->kind == SVC_LISTENER;
	int protocol = get_int(copy, SOL_SOCKET, SO_PROTOCOL);
	struct st_apply_req rq = {
		.p = p,
		.family = s->family,
		.need = s->kind == SVC_OUTGOING ? ST_O_CLIENT : 0,
		.skip = ST_O_BEFORE_BIND | ST_O_CLIENT_ONLY | (listening ? 0 : ST_O_LISTENER_ONLY),
		.dry = st_on(p, ST_V_DRY_RUN),
	};
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		struct attach_set *set = &r->set[r->nset];
		set->name[0] = '\0';
		if (!st_apply_one(&cli_raw_ops, copy, &rq, i, &set->out, set->name))
			continue;
		if (set->out.state == ST_FAILED) {
			/* a kernel without the socket option (TCP_DELACK_MAX_US before 6.15) may take
			 * it from a BPF program (TCP_BPF_DELACK_MAX, 5.10): the iterator's, under auto */
			if (t->via == VIA_AUTO && !rq.dry && set->out.err == ENOPROTOOPT &&
			    protocol == IPPROTO_TCP && /* (MPTCP refuses these: not the kernel's age) */
			    st_iter_how(i) != ST_ITER_NONE && !t->wrapper) {
				r->rest[r->nrest++] = i;
				continue;
			}
			note(r, N_REFUSED, i, set->out.err, set->out.want, 0);
			r->notes[r->nnotes - 1].protocol = protocol;
			continue;
		}
		set->opt = i;
		r->nset++;
		if (!rq.dry && set->out.got != ST_UNREAD && (st_sockopts[i].flags & ST_O_BUFFER) &&
		    st_short_of(i, set->out.want, set->out.got))
			note(r, N_CLAMPED, i, 0, set->out.want, set->out.got);
	}
	if (listening && st_backlog_governed(p)) {
		/* (listen again on the copy: the one step watch --apply takes too, sockcopy.c) */
		int before = sockcopy_get(copy, ST_V_BACKLOG);
		int want = st_backlog_want(p, before);
		if (!rq.dry && want != before)
			sockcopy_set(copy, ST_V_BACKLOG, want);
		r->backlog = 1;
		r->backlog_before = before;
		r->backlog_want = want;
		/* a dry run: effective is what the target's somaxconn would leave of want, said
		 * by attach_say (the copy is closed by then) */
		r->backlog_after = rq.dry ? -1 : sockcopy_get(copy, ST_V_BACKLOG);
		if (!rq.dry && r->backlog_after < want)
			note(r, N_BACKLOG_CLAMPED, 0, 0, want, r->backlog_after);
		/* --backlog replaces, so a listener that had more gets less: rarely meant */
		if (st_has(p, ST_V_BACKLOG) && before > want)
			note(r, N_BACKLOG_LOWERED, 0, 0, want, before);
	}
	r->quickack_outside = !listening && st_on(p, ST_V_QUICKACK);
	/* what only a BPF program sets on an open connection (the cwnd clamp): the iterator's */
	for (int i = 0; i < ST_V_COUNT && !listening && !rq.dry; i++)
		if (st_cgroup_only(i) && st_has(p, (enum st_var_id)i) && st_iter_how(i) != ST_ITER_NONE)
			r->rest[r->nrest++] = i;
}

int attach_tune(const struct attach_state *t, const struct svc_sock *s, int pidfd, int fd,
                struct attach_tuned *r)
{
	memset(r, 0, sizeof *r);
	r->via = VIA_PIDFD;
	diag_addr(s->family, s->src, s->sport, r->addr, sizeof r->addr);
	diag_addr(s->family, s->dst, s->dport, r->peer, sizeof r->peer);
	int copy = svc_high_fd((int)syscall(SYS_pidfd_getfd, pidfd, fd, 0));
	if (copy < 0)
		return errno == EBADF ? 1 : -1; /* EBADF: closed meanwhile */
	struct stat sb; /* the socket the copy is: the number may name another one now */
	if (fstat(copy, &sb) != 0 || (unsigned long long)sb.st_ino != s->ino) {
		close(copy);
		return 1;
	}
	apply(t, s, copy, r);
	close(copy);
	return 0;
}

/* Option i's value as a warning names it: what was asked and, when read back, what is in
 * force (a group: rcvbuf {want, effective}; a flag or a number: what was asked). */
static void asked(struct rec *w, int i, long long want, long long got, int read)
{
	if (rec_key_type(K_OPTION + i) != REC_GROUP) {
		if (rec_key_type(K_OPTION + i) == REC_BOOL)
			rec_bool(w, K_OPTION + i, (int)want);
		else if (rec_key_type(K_OPTION + i) == REC_INT)
			rec_int(w, K_OPTION + i, want);
		return;
	}
	struct rec *g = rec_group(w, K_OPTION + i);
	rec_int(g, K_WANT, want);
	if (read)
		rec_int(g, K_EFFECTIVE, got);
}

void attach_say(struct attach_state *t, const struct svc_sock *s, int pid, int fd,
                const struct attach_tuned *r)
{
	char fix[200], buf[640], cmd[sizeof buf + 48];
	long long dry_effective = -1;
	if (r->backlog && r->backlog_after < 0) /* a dry run: what the target's somaxconn leaves */
		dry_effective = st_dry_backlog(r->backlog_want, target_sysctl(pid, "net.core.somaxconn"));
	for (int k = 0; k < r->nnotes; k++) {
		const struct attach_note *n = &r->notes[k];
		const struct st_sockopt *o = &st_sockopts[n->opt];
		struct rec *w;
		long long limit;
		const char *rest;
		switch (n->kind) {
		case N_REFUSED:
			st_fix_refused_on(n->opt, n->err, n->protocol, fix, sizeof fix);
			w = attach_warning(t, "refused", pid, fd, r->addr);
			asked(w, n->opt, n->want, 0, 0);
			snprintf(buf, sizeof buf, "setsockopt %s: %s", o->label, strerror(n->err));
			rec_str(w, K_ERROR, buf);
			rec_arr(w, K_FIX); /* (what would cure it is not a command: the note says) */
			if (*fix)
				rec_str(w, K_NOTE, fix);
			attach_warning_end(t, w, "refused", 1);
			t->refused++;
			break;
		case N_CLAMPED: /* the copy was set by this process: its capabilities decide */
			st_fix_limit(n->opt, n->want, st_cap_effective(ST_CAP_NET_ADMIN),
			             n->opt == ST_V_RCVBUF && st_on(t->p, ST_V_RCVBUF_FORCE), fix, sizeof fix);
			limit = target_sysctl(pid, o->limit);
			w = attach_warning(t, "clamped", pid, fd, r->addr);
			asked(w, n->opt, n->want, n->got, 1);
			rec_str(w, K_LIMIT, o->limit);
			rec_known(w, K_LIMIT_VALUE, limit);
			rest = st_fix_split(fix, buf, sizeof buf); /* the command, and the prose */
			struct rec *cmds = rec_arr(w, K_FIX);
			if (*buf)
				rec_str(cmds, 0, attach_in_netns(pid, buf, cmd, sizeof cmd));
			if (limit < 0) { /* (null, so left out of the line: said in the note) */
				char note[sizeof buf + 80];
				snprintf(note, sizeof note, "%s%sthe limit is not readable from here (the "
				         "target's network namespace)", rest, *rest ? "; " : "");
				rec_str(w, K_NOTE, note);
			} else {
				rec_str(w, K_NOTE, *rest ? rest : NULL);
			}
			attach_warning_end(t, w, "clamped", 1);
			break;
		case N_BACKLOG_CLAMPED:
			st_fix_somaxconn(n->want, fix, sizeof fix);
			limit = target_sysctl(pid, "net.core.somaxconn");
			w = attach_warning(t, "backlog-clamped", pid, fd, r->addr);
			rec_backlog(w, &(struct st_backlog_said){ST_STAGE_UNSAID, ST_STAGE_UNSAID, n->want,
			                                         n->got, ST_STAGE_UNSAID});
			rec_str(w, K_LIMIT, "net.core.somaxconn");
			rec_known(w, K_LIMIT_VALUE, limit);
			rec_str(rec_arr(w, K_FIX), 0, attach_in_netns(pid, fix, cmd, sizeof cmd));
			rec_str(w, K_NOTE, limit < 0 ? "the kernel caps a listener's backlog at "
			        "net.core.somaxconn of its network namespace (not readable from here)"
			        : "the kernel caps a listener's backlog at net.core.somaxconn of its network "
			        "namespace");
			attach_warning_end(t, w, "backlog-clamped", 1);
			break;
		case N_PATH:
		case N_NO_ITER:
			w = attach_warning(t, "refused", pid, fd, r->addr);
			if (n->opt == ST_V_BACKLOG)
				rec_backlog(w, &(struct st_backlog_said){ST_STAGE_UNSAID, ST_STAGE_UNSAID,
				                                         n->want, ST_STAGE_UNSAID,
				                                         ST_STAGE_UNSAID});
			else
				asked(w, n->opt, n->want, 0, 0);
			rec_str(w, K_VIA, via_name(r->via));
			if (n->kind == N_PATH)
				snprintf(buf, sizeof buf, "not through %s: %s",
				         r->via == VIA_BPF ? "the TCP iterator" : "a pidfd copy", n->why);
			else
				snprintf(buf, sizeof buf, "only the TCP iterator sets it here (--via bpf), "
				         "and it cannot be used: %s", t->bpf_why);
			rec_str(w, K_ERROR, buf);
			rec_arr(w, K_FIX);
			attach_warning_end(t, w, "refused", 1);
			t->refused++;
			break;
		case N_BACKLOG_LOWERED:
			st_fix_backlog_lowered(n->want, fix, sizeof fix);
			w = attach_warning(t, "backlog-lowered", pid, fd, r->addr);
			rec_backlog(w, &(struct st_backlog_said){ST_STAGE_UNSAID, n->got, n->want,
			                                         ST_STAGE_UNSAID, ST_STAGE_UNSAID});
			rec_arr(w, K_FIX); /* (the cure is another command line: the note says) */
			snprintf(buf, sizeof buf, "--backlog replaces the backlog, so a listener that had "
			         "more gets less: %s%s", fix,
			         st_on(t->p, ST_V_DRY_RUN) ? " (a dry run: not lowered)" : "");
			rec_str(w, K_NOTE, buf);
			attach_warning_end(t, w, "backlog-lowered", 1);
			break;
		}
	}
	if (r->quickack_outside) {
		/* TCP_QUICKACK does not stay: only the process that reads re-arms it */
		static const char why[] = "quick-ack is re-armed by the process that reads, after each "
		                          "read: from outside, cap the delayed ACK with --delack-max "
		                          "(Linux 6.15) or the route's quickack (socktune check --route)";
		struct rec *w = attach_warning(t, "in-process-only", pid, fd, r->addr);
		rec_bool(w, K_OPTION + ST_V_QUICKACK, 1);
		rec_arr(w, K_FIX);
		rec_str(w, K_NOTE, why);
		attach_warning_end(t, w, "in-process-only", !t->said_quickack++);
	}
	if (r->notes_only)
		return;
	static const char *const events[] = {"attach", "attach-connection", "attach-client"};
	struct rec *line = attach_line(t, pid, fd, events[s->kind], r->addr);
	if (s->kind != SVC_LISTENER)
		rec_str(line, K_PEER, r->peer);
	rec_str(line, K_VIA, via_name(r->via));
	if (r->via == VIA_BPF)
		rec_int(line, K_COOKIE, (long long)s->cookie);
	if (pid <= 0) { /* what sock_diag said of it, and no more */
		rec_str(line, K_FOUND_BY, "sock_diag");
		rec_int(line, K_UID, s->uid);
		rec_int(line, K_JRN_INODE, (long long)s->ino);
		if (s->cgroup_id)
			rec_int(line, K_CGROUP_ID, (long long)s->cgroup_id);
		if (t->target)
			rec_str(line, K_TARGET, t->target);
	}
	for (int k = 0; k < r->nset; k++)
		rec_outcome(line, t->p, r->set[k].opt, &r->set[k].out, r->set[k].name);
	if (r->backlog) {
		long long effective = r->backlog_after >= 0 ? r->backlog_after : dry_effective;
		rec_backlog(line, &(struct st_backlog_said){ST_STAGE_UNSAID, r->backlog_before,
		                                            r->backlog_want,
		                                            effective < 0 ? ST_STAGE_UNKNOWN : effective,
		                                            ST_STAGE_UNSAID});
	}
	if (pid <= 0)
		rec_str(line, K_NOTE, t->target && t->target[0] != ':'
		        ? "found by sock_diag alone: made in the target's cgroup, which holds only it "
		          "and its descendants, by one of their uids (or accepted on such a listener); "
		          "which of them holds it cannot be read (/proc/PID/fd needs ptrace access)"
		        : "found by sock_diag alone (its port, uid, inode and cgroup): no process this "
		          "user may read holds it (/proc/PID/fd needs ptrace access), so none is named");
	attach_line_end(t, line);
	t->tuned++;
}
