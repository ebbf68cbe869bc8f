/* The apply step (include/socktune_apply.h): set, read back, say what happened.  No
 * logging, no global state: the library's hooks and the command both call it. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>

#include "socktune_apply.h"
#include "socktune_host.h"
#include "socktune_kernel.h"

static int get_int(const struct st_sockops *ops, int fd, int level, int optname, int *val)
{
	socklen_t len = sizeof *val;
	*val = 0;
	return ops->get(fd, level, optname, val, &len);
}

static int set_int(const struct st_sockops *ops, int fd, int level, int optname, int val)
{
	return ops->set(fd, level, optname, &val, sizeof val);
}

static int get_name(const struct st_sockops *ops, int fd, int level, int optname, char *buf,
                    socklen_t n)
{
	memset(buf, 0, n);
	return ops->get(fd, level, optname, buf, &n);
}

static void apply_name(const struct st_sockops *ops, int fd, const struct st_apply_req *rq, int i,
                       int level, int optname, struct st_outcome *o, char *got)
{
	const char *name = st_opt_name(rq->p, i);
	if (!rq->dry && ops->set(fd, level, optname, name, (socklen_t)strlen(name)) != 0) {
		o->state = ST_FAILED;
		o->err = (short)errno;
		return;
	}
	o->state = rq->dry ? ST_READ : ST_SET;
	if (get_name(ops, fd, level, optname, got, ST_NAME_MAX) == 0)
		o->got = strcmp(got, name) == 0;
}

static void apply_int(const struct st_sockops *ops, int fd, const struct st_apply_req *rq, int i,
                      int level, int optname, struct st_outcome *o)
{
	if (!rq->dry) {
		int done = 0;
		if (i == ST_V_RCVBUF && st_on(rq->p, ST_V_RCVBUF_FORCE)) {
			/* CAP_NET_ADMIN: past net.core.rmem_max */
			done = set_int(ops, fd, SOL_SOCKET, SO_RCVBUFFORCE, o->want) == 0;
			if (!done)
				o->force_err = (short)errno;
		}
		if (!done && set_int(ops, fd, level, optname, o->want) != 0) {
			o->state = ST_FAILED;
			o->err = (short)errno;
			return;
		}
	}
	o->state = rq->dry ? ST_READ : ST_SET;
	int got;
	if (get_int(ops, fd, level, optname, &got) == 0)
		o->got = got;
	/* A dual-stack IPv6 socket carries IPv4 traffic too, which takes the IPv4 variant of an
	 * option that has one (IP_TOS beside IPV6_TCLASS). */
	const struct st_sockopt *so = &st_sockopts[i];
	int v6only = 1;
	if (so->label6 && rq->family == AF_INET6 && !rq->dry && o->got != ST_UNREAD &&
	    get_int(ops, fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only) == 0 && !v6only)
		set_int(ops, fd, so->level, so->optname, o->want);
}

int st_apply_one(const struct st_sockops *ops, int fd, const struct st_apply_req *rq, int i,
                 struct st_outcome *o, char *name)
{
	unsigned flags = st_sockopts[i].flags;
	memset(o, 0, sizeof *o);
	o->got = ST_UNREAD;
	if (!st_opt_want(rq->p, i, &o->want) || (rq->need && !(flags & rq->need)) ||
	    (flags & rq->skip))
		return 0;
	if (rq->keep >> i & 1) {
		o->state = ST_KEPT;
		return 1;
	}
	if (!rq->dry && (rq->off >> i & 1))
		return 0;
	int level, optname;
	const char *label;
	st_sockopt_for(i, rq->family, &level, &optname, &label);
	if (flags & ST_O_NAME)
		apply_name(ops, fd, rq, i, level, optname, o, name);
	else
		apply_int(ops, fd, rq, i, level, optname, o);
	return 1;
}

int st_apply(const struct st_sockops *ops, int fd, const struct st_apply_req *rq,
             struct st_applied *out)
{
	int refused = 0;
	out->name[0] = '\0';
	for (int i = 0; i < ST_O_COUNT; i++) {
		st_apply_one(ops, fd, rq, i, &out->o[i], out->name);
		refused += out->o[i].state == ST_FAILED;
	}
	return refused;
}

void st_read_current(const struct st_sockops *ops, int fd, int family,
                     const struct st_policy *p, int *cur)
{
	for (int i = 0; i < ST_O_COUNT; i++) {
		int level, optname, want;
		const char *label;
		cur[i] = ST_UNREAD;
		if (!st_opt_want(p, i, &want) ||
		    (st_sockopts[i].flags & (ST_O_BEFORE_BIND | ST_O_CLIENT_ONLY)))
			continue;
		st_sockopt_for(i, family, &level, &optname, &label);
		if (st_sockopts[i].flags & ST_O_NAME) {
			char name[ST_NAME_MAX];
			if (get_name(ops, fd, level, optname, name, sizeof name) == 0)
				cur[i] = strcmp(name, st_opt_name(p, i)) == 0;
		} else if (get_int(ops, fd, level, optname, &cur[i]) != 0) {
			cur[i] = ST_UNREAD;
		}
	}
}

int st_is_applied(const struct st_policy *p, const int *cur)
{
	for (int i = 0; i < ST_O_COUNT; i++) {
		int want;
		const struct st_sockopt *o = &st_sockopts[i];
		if (!st_opt_want(p, i, &want) || (o->flags & (ST_O_BEFORE_BIND | ST_O_CLIENT_ONLY)))
			continue;
		int forced = i == ST_V_RCVBUF && st_on(p, ST_V_RCVBUF_FORCE);
		long long expect = (o->flags & ST_O_NAME) ? 1
		                   : st_expect(i, want, forced, o->limit ? st_sysctl_num(o->limit, -1) : -1);
		if (cur[i] == ST_UNREAD || cur[i] != expect)
			return 0;
	}
	return 1;
}

static int tcp_info(const struct st_sockops *ops, int fd, struct tcp_info *ti)
{
	socklen_t len = sizeof *ti;
	memset(ti, 0, sizeof *ti);
	return ops->get(fd, IPPROTO_TCP, TCP_INFO, ti, &len);
}

int st_listen_backlog(const struct st_sockops *ops, int fd)
{
	struct tcp_info ti;
	return tcp_info(ops, fd, &ti) == 0 ? (int)ti.tcpi_sacked : -1;
}

int st_accept_queue(const struct st_sockops *ops, int fd)
{
	struct tcp_info ti;
	return tcp_info(ops, fd, &ti) == 0 ? (int)ti.tcpi_unacked : -1;
}

int st_outcome_keys(const struct st_policy *p, int i, const struct st_outcome *o,
                    const char *name, char *buf, size_t n)
{
	const struct st_sockopt *so = &st_sockopts[i];
	char kbuf[ST_KEY_MAX];
	const char *key = st_opt_key(i, kbuf, sizeof kbuf);
	int dry = o->state == ST_READ, shown = dry ? o->want : o->got;
	buf[0] = '\0';
	/* (ST_KEPT, the app's own value kept, is not a value: the library lists it in app_kept) */
	if ((o->state != ST_SET && o->state != ST_READ) || o->got == ST_UNREAD)
		return 0;
	if (so->flags & ST_O_NAME)
		return snprintf(buf, n, " %s=%s", key, dry ? st_opt_name(p, i) : name);
	const char *unit = st_opt_unit(i);
	if (unit) /* jiffies: asked, and kept; the unit in the name */
		return snprintf(buf, n, " %s_%s.want=%d %s_%s.effective=%d", key, unit, o->want, key,
		                unit, shown);
	if ((so->flags & ST_O_BUFFER) && dry) /* what would be, and what is there (doubled) */
		return snprintf(buf, n, " %s.want=%d %s.effective=%lld %s.now=%d", key, o->want, key,
		                st_dry_buffer(p, i, o->want), key, o->got);
	if (so->flags & ST_O_BUFFER)
		return snprintf(buf, n, " %s.want=%d %s.effective=%d", key, o->want, key, o->got);
	if (so->flags & ST_O_UNSIGNED)
		return snprintf(buf, n, " %s=%u", key, (unsigned)shown);
	if (i < ST_V_COUNT && st_vars[i].type == ST_T_BOOL) /* a boolean: 1 or 0 */
		return snprintf(buf, n, " %s=%d", key, shown != 0);
	return snprintf(buf, n, " %s=%d", key, shown);
}

long long st_dry_buffer(const struct st_policy *p, int i, long long want)
{
	int forced = i == ST_V_RCVBUF && st_on(p, ST_V_RCVBUF_FORCE) &&
	             st_cap_effective(ST_CAP_NET_ADMIN) == 1;
	return st_expect(i, want, forced, st_sysctl_num(st_sockopts[i].limit, -1));
}

/* The backlog the policy wants for the app's.  listen(fd, -1) (any negative) asks for the
 * kernel's maximum, net.core.somaxconn: the policy clamps that number, and when the result
 * is the maximum again the app's own value is passed on unchanged. */
int st_backlog_want(const struct st_policy *p, int app)
{
	if (st_has(p, ST_V_BACKLOG))
		return (int)p->num[ST_V_BACKLOG];
	long long asked = app;
	if (app < 0) {
		asked = st_sysctl_num("net.core.somaxconn", INT_MAX);
		if (asked < 0)
			asked = INT_MAX;
	}
	long long want = asked;
	if (st_has(p, ST_V_BACKLOG_MIN) && want < p->num[ST_V_BACKLOG_MIN])
		want = p->num[ST_V_BACKLOG_MIN];
	if (st_has(p, ST_V_BACKLOG_MAX) && want > p->num[ST_V_BACKLOG_MAX])
		want = p->num[ST_V_BACKLOG_MAX];
	return want == asked ? app : (int)want;
}

int st_backlog_governed(const struct st_policy *p)
{
	return st_has(p, ST_V_BACKLOG) || st_has(p, ST_V_BACKLOG_MIN) || st_has(p, ST_V_BACKLOG_MAX);
}
