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

enum st_shape st_opt_shape(int i)
{
	unsigned flags = st_sockopts[i].flags;
	enum st_type type = i < ST_V_COUNT ? st_vars[i].type : ST_T_INT;
	if (flags & ST_O_NAME)
		return ST_SHAPE_NAME;
	if ((flags & ST_O_BUFFER) || st_opt_unit(i)) /* asked, and kept: buffers, jiffies */
		return ST_SHAPE_GROUP;
	return type == ST_T_BOOL ? ST_SHAPE_FLAG : ST_SHAPE_INT;
}

const char *st_outcome_key(int i, char *buf, size_t n)
{
	char key[ST_KEY_MAX];
	const char *unit = st_opt_unit(i); /* a duration has its unit in the name */
	snprintf(buf, n, "%s%s%s", st_opt_key(i, key, sizeof key), unit ? "_" : "", unit ? unit : "");
	return buf;
}

const char *const st_stage_names[ST_STAGE_COUNT] = {"", "app", "before", "want", "effective",
                                                    "now"};

static void emit_num(const struct st_emitter *e, struct st_field *f, enum st_stage stage,
                     long long v)
{
	f->stage = stage;
	f->num = v;
	e->field(e->ctx, f);
}

void st_outcome_walk(const struct st_policy *p, int i, const struct st_outcome *o,
                     const char *name, const struct st_emitter *e)
{
	int dry = o->state == ST_READ, shown = dry ? o->want : o->got;
	if ((o->state != ST_SET && o->state != ST_READ && o->state != ST_FOUND) ||
	    o->got == ST_UNREAD)
		return;
	char key[ST_KEY_MAX];
	struct st_field f = {.opt = i, .key = st_outcome_key(i, key, sizeof key),
	                     .shape = st_opt_shape(i)};
	switch (f.shape) {
	case ST_SHAPE_NAME:
		f.name = dry ? st_opt_name(p, i) : name;
		e->field(e->ctx, &f);
		return;
	case ST_SHAPE_FLAG:
		emit_num(e, &f, ST_STAGE_NONE, shown != 0);
		return;
	case ST_SHAPE_INT:
		emit_num(e, &f, ST_STAGE_NONE,
		         (st_sockopts[i].flags & ST_O_UNSIGNED) ? (long long)(unsigned)shown : shown);
		return;
	case ST_SHAPE_GROUP:
		f.shape = ST_SHAPE_INT; /* (its stages are numbers) */
		if (o->state == ST_FOUND) {
			emit_num(e, &f, ST_STAGE_EFFECTIVE, o->got);
			return;
		}
		emit_num(e, &f, ST_STAGE_WANT, o->want);
		if ((st_sockopts[i].flags & ST_O_BUFFER) && dry) { /* what would be, what is there */
			emit_num(e, &f, ST_STAGE_EFFECTIVE, st_dry_buffer(p, i, o->want));
			emit_num(e, &f, ST_STAGE_NOW, o->got);
		} else {
			emit_num(e, &f, ST_STAGE_EFFECTIVE, shown);
		}
		return;
	}
}

void st_backlog_walk(const struct st_backlog_said *b, const struct st_emitter *e)
{
	const long long stages[] = {
		[ST_STAGE_APP] = b->app, [ST_STAGE_BEFORE] = b->before, [ST_STAGE_WANT] = b->want,
		[ST_STAGE_EFFECTIVE] = b->effective, [ST_STAGE_NOW] = b->now,
	};
	struct st_field f = {.opt = ST_FIELD_BACKLOG, .key = "backlog", .shape = ST_SHAPE_INT};
	for (int s = ST_STAGE_APP; s < ST_STAGE_COUNT; s++) {
		if (stages[s] == ST_STAGE_UNSAID)
			continue;
		f.unknown = stages[s] == ST_STAGE_UNKNOWN;
		emit_num(e, &f, (enum st_stage)s, f.unknown ? 0 : stages[s]);
	}
}

/* The library's writer: " key=value" or " key.stage=value" appended to a fixed buffer */
struct keys_buf {
	char *b;
	size_t n, o;
};

static void keys_field(void *ctx, const struct st_field *f)
{
	struct keys_buf *k = ctx;
	if (f->unknown || k->o + 1 >= k->n) /* (an unknown value is left out of a line) */
		return;
	const char *dot = f->stage ? "." : "", *stage = st_stage_names[f->stage];
	int w = f->shape == ST_SHAPE_NAME
	                ? snprintf(k->b + k->o, k->n - k->o, " %s%s%s=%s", f->key, dot, stage, f->name)
	                : snprintf(k->b + k->o, k->n - k->o, " %s%s%s=%lld", f->key, dot, stage, f->num);
	if (w > 0)
		k->o = (size_t)w < k->n - k->o ? k->o + (size_t)w : k->n - 1;
}

size_t st_outcome_keys(const struct st_policy *p, int i, const struct st_outcome *o,
                       const char *name, char *buf, size_t n)
{
	struct keys_buf k = {buf, n, 0};
	struct st_emitter e = {keys_field, &k};
	if (n)
		buf[0] = '\0';
	st_outcome_walk(p, i, o, name, &e);
	return k.o;
}

size_t st_backlog_keys(const struct st_backlog_said *b, char *buf, size_t n)
{
	struct keys_buf k = {buf, n, 0};
	struct st_emitter e = {keys_field, &k};
	if (n)
		buf[0] = '\0';
	st_backlog_walk(b, &e);
	return k.o;
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
