/* The apply step as the library runs it: common/apply.c sets and reads back, this file says
 * in the log what took effect, and why not where it did not (the fix from common/kernel.c,
 * the text `socktune check` prints for the same limit). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tune.h"

/* Messages that would repeat for every socket are said once per process; an option the
 * kernel refuses for good (it lacks it, or the process lacks the capability it needs) is not
 * tried again (bit 1 << option). */
static _Atomic int congestion_warned;
static _Atomic uint64_t refused_for_good;

/* A list of names (the congestion sysctls' blank-separated words) as an array: " key.0=reno
 * key.1=cubic" into out. */
static void add_words(char *out, size_t n, const char *key, const char *list)
{
	size_t o = strlen(out);
	int k = 0;
	for (const char *s = list; *s && o + 1 < n;) {
		s += strspn(s, " ");
		int len = (int)strcspn(s, " ");
		if (len) {
			int w = snprintf(out + o, n - o, " %s.%d=%.*s", key, k++, len, s);
			o = w > 0 && (size_t)w < n - o ? o + (size_t)w : n - 1;
		}
		s += len;
	}
	out[o] = '\0';
}

__attribute__((noinline, cold)) static void warn_congestion(int fd, int err)
{
	if (atomic_exchange(&congestion_warned, 1))
		return;
	/* static, not on the stack (a hook may run on a small thread stack): this runs once per
	 * process, after the exchange above (the lists are logged; why is not) */
	static char avail[256], allowed[256], why[8], fix[ST_FIX_MAX], keys[640];
	snprintf(avail, sizeof avail, "?");
	snprintf(allowed, sizeof allowed, "?");
	st_sysctl_str("net.ipv4.tcp_available_congestion_control", avail, sizeof avail);
	st_sysctl_str("net.ipv4.tcp_allowed_congestion_control", allowed, sizeof allowed);
	st_sanitize(avail, avail, sizeof avail);
	st_sanitize(allowed, allowed, sizeof allowed);
	const char *name = st_opt_name(&st_policy, ST_V_CONGESTION);
	const char *reason = st_why_congestion(name, avail, allowed, st_congestion_module(name), why,
	                                       sizeof why, fix, sizeof fix);
	add_words(keys, sizeof keys, "available", avail);
	add_words(keys, sizeof keys, "allowed", allowed);
	size_t o = strlen(keys);
	st_fix_keys(fix, keys + o, sizeof keys - o);
	st_log(ST_LOG_WARN,
	       "event=setsockopt option=congestion fd=%d want_name=%s error=\"setsockopt "
	       "TCP_CONGESTION: %s\" reason=%s%s",
	       fd, name, strerror(err), reason, keys);
}

__attribute__((noinline, cold)) static void warn_clamp(int fd, int i, int want, long long eff, const char *dry)
{
	const struct st_sockopt *o = &st_sockopts[i];
	long long max = st_sysctl_num(o->limit, -1);
	char fix[200], keys[2 * 200 + 24], value[40] = "";
	st_fix_limit(i, want, st_cap_effective(ST_CAP_NET_ADMIN),
	             i == ST_V_RCVBUF && st_on(&st_policy, ST_V_RCVBUF_FORCE), fix, sizeof fix);
	st_fix_keys(fix, keys, sizeof keys);
	if (max >= 0) /* unreadable: null, left out */
		snprintf(value, sizeof value, " limit_value=%lld", max);
	st_log(ST_LOG_WARN, "event=clamp option=%s fd=%d want=%d effective=%lld limit=%s%s%s%s",
	       ST_KEY(i), fd, want, eff, o->limit, value, keys, dry);
}

/* A refusal: said with its fix; one the kernel will repeat for every socket is said once and
 * the option not tried again (action=disabled). */
__attribute__((noinline, cold)) static void warn_refused(int fd, int family, int i, const struct st_outcome *o)
{
	int level, optname;
	const char *label;
	char fix[160], keys[2 * 160 + 24], want[ST_NAME_MAX + 16];
	st_sockopt_for(i, family, &level, &optname, &label);
	if (i == ST_V_CONGESTION) {
		warn_congestion(fd, o->err);
		return;
	}
	/* An MPTCP socket refuses some of TCP's options with the ENOPROTOOPT of a kernel that
	 * lacks them: said for that socket, and the option stays on for the TCP ones. */
	int proto = 0;
	if (o->err == ENOPROTOOPT || o->err == EOPNOTSUPP)
		st_get_int(fd, SOL_SOCKET, SO_PROTOCOL, &proto);
	int final = st_refusal_is_final(i, o->err) && proto != ST_IPPROTO_MPTCP;
	if (final && (atomic_fetch_or(&refused_for_good, 1ull << i) >> i & 1))
		return;
	st_fix_refused_on(i, o->err, proto, fix, sizeof fix);
	st_fix_keys(fix, keys, sizeof keys);
	/* a name option's value is a name (want_name, as check writes it), any other a number */
	if (st_sockopts[i].flags & ST_O_NAME)
		snprintf(want, sizeof want, "want_name=%s", st_opt_name(&st_policy, i));
	else if (st_sockopts[i].flags & ST_O_UNSIGNED)
		snprintf(want, sizeof want, "want=%u", (unsigned)o->want);
	else
		snprintf(want, sizeof want, "want=%d", o->want);
	if (final)
		st_log(ST_LOG_WARN,
		       "event=setsockopt option=%s %s error=\"setsockopt %s: %s\"%s action=disabled",
		       ST_KEY(i), want, label, strerror(o->err), keys);
	else
		st_log(ST_LOG_WARN,
		       "event=setsockopt option=%s fd=%d %s error=\"setsockopt %s: %s\"%s "
		       "action=skipped",
		       ST_KEY(i), fd, want, label, strerror(o->err), keys);
}

/* The keys of one option for the log line, and its clamp warning (in a dry run, the
 * kernel's cut predicted from the sysctl). */
static void explain(int fd, int family, int i, const struct st_outcome *o, const char *name,
                    struct st_line *line, int *kept)
{
	const struct st_sockopt *so = &st_sockopts[i];
	const char *dry = o->state == ST_READ ? " dry_run=1" : "";
	if (o->force_err)
		st_log(ST_LOG_WARN,
		       "event=force-fallback option=rcvbuf fd=%d error=\"setsockopt SO_RCVBUFFORCE: %s\" "
		       "action=SO_RCVBUF note=\"%s\"",
		       fd, strerror(o->force_err), ST_FIX_FORCE);
	if (o->state == ST_KEPT) { /* the program's own value, kept: a name in the list app_kept */
		st_line_add(line, " app_kept.%d=%s", (*kept)++, ST_KEY(i));
		return;
	}
	if (o->state == ST_FAILED) {
		warn_refused(fd, family, i, o);
		return;
	}
	if (o->got == ST_UNREAD)
		return;
	st_line_outcome(line, i, o, name);
	if (!(so->flags & ST_O_BUFFER))
		return;
	if (*dry) {
		/* predict: the kernel grants min(want, limit) and reports it doubled; the listen
		 * line's effective is the same number */
		long long would = st_dry_buffer(&st_policy, i, o->want);
		if (st_short_of(i, o->want, would))
			warn_clamp(fd, i, o->want, would, dry);
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
		.off = atomic_load(&refused_for_good),
	};
	uint64_t mine = st_app_options(app); /* what the app set itself */
	if (st_app_wins())
		rq.keep = mine;
	int kept = 0; /* app_kept's items so far */
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
		explain(fd, family, i, &o, name, line, &kept);
		if ((o.state == ST_SET || o.state == ST_READ) && o.got != ST_UNREAD)
			eff[i] = (st_sockopts[i].flags & ST_O_NAME) ? 1 : o.got;
	}
}

int st_policy_sets(unsigned flags)
{
	for (int i = 0; i < ST_O_COUNT; i++) {
		int want;
		if ((st_sockopts[i].flags & flags) && st_opt_want(&st_policy, i, &want))
			return 1;
	}
	return 0;
}

/* What fd carries for option i now: into *v, or name for a name option. */
static int read_one(int fd, int family, int i, int *v, char *name)
{
	int level, optname;
	const char *label;
	st_sockopt_for(i, family, &level, &optname, &label);
	if (st_sockopts[i].flags & ST_O_NAME)
		return st_get_name(fd, level, optname, name, ST_NAME_MAX);
	return st_get_int(fd, level, optname, v);
}

void st_tune_bind(int fd, int family, uint64_t app, struct st_bind_undo *undo)
{
	struct st_apply_req rq = {
		.p = &st_policy,
		.family = family,
		.need = ST_O_BEFORE_BIND,
		.off = atomic_load(&refused_for_good),
	};
	uint64_t mine = st_app_options(app);
	undo->changed = 0;
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		struct st_outcome o;
		char name[ST_NAME_MAX] = "", before_name[ST_NAME_MAX] = "";
		int want, before = 0;
		if (!(st_sockopts[i].flags & ST_O_BEFORE_BIND) || !st_opt_want(&st_policy, i, &want) ||
		    (st_app_wins() && (mine >> i & 1)))
			continue;
		if (read_one(fd, family, i, &before, before_name) == 0 &&
		    ((st_sockopts[i].flags & ST_O_NAME) ? strcmp(before_name, st_opt_name(&st_policy, i)) == 0
		                                         : before == want))
			continue; /* the policy's value is there already */
		if (!st_apply_one(&st_ops, fd, &rq, i, &o, name))
			continue;
		if (o.state == ST_FAILED) {
			warn_refused(fd, family, i, &o);
			continue;
		}
		undo->changed |= 1ull << i;
		undo->old[i] = before;
		if (st_sockopts[i].flags & ST_O_NAME)
			memcpy(undo->old_name, before_name, sizeof undo->old_name);
	}
}

void st_untune_bind(int fd, int family, const struct st_bind_undo *undo)
{
	for (int i = 0; i < ST_O_COUNT; i++) {
		int level, optname;
		const char *label;
		if (!(undo->changed >> i & 1))
			continue;
		st_sockopt_for(i, family, &level, &optname, &label);
		if (st_sockopts[i].flags & ST_O_NAME)
			st_real.setsockopt(fd, level, optname, undo->old_name,
			                   (socklen_t)strlen(undo->old_name));
		else
			st_real.setsockopt(fd, level, optname, &undo->old[i], sizeof undo->old[i]);
	}
}

void st_line_before_bind(int fd, int family, struct st_line *line)
{
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		int want, v = 0;
		char name[ST_NAME_MAX] = "";
		if (!(st_sockopts[i].flags & ST_O_BEFORE_BIND) || !st_opt_want(&st_policy, i, &want))
			continue;
		if (read_one(fd, family, i, &v, name) != 0)
			continue;
		struct st_outcome o = {.state = ST_FOUND, .got = v};
		st_line_outcome(line, i, &o, *name ? name : "none");
	}
}
