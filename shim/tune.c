/* The apply step as the library runs it: common/apply.c sets and reads back, this file says
 * in the log what took effect, and why not where it did not (the fix from common/kernel.c,
 * the text `socktune check` prints for the same limit). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tune.h"

/* Messages that would repeat for every socket are said once per process. */
static _Atomic int mark_denied, congestion_warned;

__attribute__((noinline, cold)) static void warn_congestion(int fd, int err)
{
	if (atomic_exchange(&congestion_warned, 1))
		return;
	char avail[256] = "?", allowed[256] = "?", why[320], fix[320];
	st_sysctl_str("net.ipv4.tcp_available_congestion_control", avail, sizeof avail);
	st_sysctl_str("net.ipv4.tcp_allowed_congestion_control", allowed, sizeof allowed);
	st_why_congestion(st_policy.congestion, avail, allowed, why, sizeof why, fix, sizeof fix);
	st_log(ST_LOG_WARN,
	       "event=setsockopt option=congestion fd=%d want=%s error=\"setsockopt TCP_CONGESTION: "
	       "%s\" available=\"%s\" allowed=\"%s\" fix=\"%s\"",
	       fd, st_policy.congestion, strerror(err), avail, allowed, fix);
}

__attribute__((noinline, cold)) static void warn_clamp(int fd, int i, int want, long long eff, const char *dry)
{
	const struct st_sockopt *o = &st_sockopts[i];
	long long max = st_sysctl_num(o->limit, -1);
	char fix[200];
	st_fix_limit(i, want, fix, sizeof fix);
	st_log(ST_LOG_WARN, "event=clamp option=%s fd=%d want=%d effective=%lld limit=%s:%lld fix=\"%s\"%s",
	       ST_KEY(i), fd, want, eff, o->limit, max, fix, dry);
}

/* A refusal: said, and for SO_MARK without the capability, not tried again. */
__attribute__((noinline, cold)) static void warn_refused(int fd, int family, int i, const struct st_outcome *o)
{
	int level, optname;
	const char *label;
	st_sockopt_for(i, family, &level, &optname, &label);
	if (st_sockopts[i].flags & ST_O_NAME) {
		warn_congestion(fd, o->err);
	} else if (i == ST_V_MARK && o->err == EPERM) {
		char fix[96];
		st_fix_denied(i, fix, sizeof fix);
		if (!atomic_exchange(&mark_denied, 1))
			st_log(ST_LOG_WARN,
			       "event=setsockopt option=mark want=%u error=\"setsockopt %s: %s\" "
			       "fix=\"%s\" action=disabled",
			       (unsigned)o->want, label, strerror(o->err), fix);
	} else {
		st_log(ST_LOG_WARN,
		       "event=setsockopt option=%s fd=%d want=%d error=\"setsockopt %s: %s\" "
		       "action=skipped",
		       ST_KEY(i), fd, o->want, label, strerror(o->err));
	}
}

/* The keys of one option for the log line, and its clamp warning (in a dry run, the
 * kernel's cut predicted from the sysctl). */
static void explain(int fd, int family, int i, const struct st_outcome *o, const char *name,
                    struct st_line *line)
{
	const struct st_sockopt *so = &st_sockopts[i];
	const char *dry = o->state == ST_READ ? " dry_run=1" : "";
	if (o->force_err)
		st_log(ST_LOG_WARN,
		       "event=force-fallback option=rcvbuf fd=%d error=\"setsockopt SO_RCVBUFFORCE: %s\" "
		       "action=SO_RCVBUF fix=\"%s\"",
		       fd, strerror(o->force_err), ST_FIX_FORCE);
	if (o->state == ST_KEPT) {
		st_line_add(line, " %s=app", ST_KEY(i));
		return;
	}
	if (o->state == ST_FAILED) {
		warn_refused(fd, family, i, o);
		return;
	}
	if (o->got == ST_UNREAD)
		return;
	if (so->flags & ST_O_NAME) {
		st_line_add(line, " %s=%s", ST_KEY(i), *dry ? st_policy.congestion : name);
		return;
	}
	int shown = *dry ? o->want : o->got;
	if (!(so->flags & ST_O_BUFFER)) {
		if (so->flags & ST_O_UNSIGNED)
			st_line_add(line, " %s=%u", ST_KEY(i), (unsigned)shown);
		else
			st_line_add(line, " %s=%d", ST_KEY(i), shown);
		return;
	}
	const char *key = ST_KEY(i);
	st_line_add(line, " %s.want=%d %s.effective=%d", key, o->want, key, o->got);
	if (*dry) {
		/* predict: the kernel grants min(want, limit) and reports it doubled */
		long long max = st_sysctl_num(so->limit, -1);
		int forced = i == ST_V_RCVBUF && st_on(&st_policy, ST_V_RCVBUF_FORCE);
		if (max > 0 && o->want > max && !forced)
			warn_clamp(fd, i, o->want, st_expect(i, o->want, 0, max), dry);
	} else if (st_short_of(i, o->want, o->got)) {
		warn_clamp(fd, i, o->want, o->got, dry);
	}
}

void st_tune(int fd, int family, unsigned kind, unsigned need, unsigned skip, uint64_t app,
             struct st_line *line, int *eff)
{
	struct st_apply_req rq = {
		.p = &st_policy,
		.family = family,
		.need = need,
		.skip = skip,
		.dry = st_dry_run(),
		.off = atomic_load(&mark_denied) ? 1ull << ST_V_MARK : 0,
	};
	uint64_t mine = (app & APP_BITS) >> ST_FD_APP_SHIFT; /* what the app set itself */
	if (st_app_wins())
		rq.keep = mine;
	/* one option at a time (not an array of outcomes: this runs on the app's stack) */
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		struct st_outcome o;
		char name[ST_NAME_MAX] = "";
		int want;
		eff[i] = ST_UNREAD;
		if (!st_opt_want(&st_policy, i, &want))
			continue;
		if ((mine >> i & 1) && !rq.keep && !rq.dry && (!need || (st_sockopts[i].flags & need)) &&
		    !(st_sockopts[i].flags & skip))
			st_note_override_before(fd, family, kind, i);
		if (!st_apply_one(&st_ops, fd, &rq, i, &o, name))
			continue;
		explain(fd, family, i, &o, name, line);
		if ((o.state == ST_SET || o.state == ST_READ) && o.got != ST_UNREAD)
			eff[i] = (st_sockopts[i].flags & ST_O_NAME) ? 1 : o.got;
	}
}
