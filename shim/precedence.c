/* Precedence: what happens when the app sets a governed option itself (SOCKTUNE_PRECEDENCE:
 * the policy's value goes back at once, or the app's stays), and what the log says of it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "socktune_stats.h"
#include "tune.h"

/* The app set a governed option itself and the policy's value was kept.  The same value
 * as the policy's (most servers set TCP_NODELAY=1 themselves) is no news: debug.  A value
 * the policy replaced is counted and said once per kind of socket and option, with the
 * socket it was seen on.  app is the app's request (buffers: not the doubled read-back);
 * app_name is set for TCP_CONGESTION. */
static const char *const kind_names[] = {[ST_FD_LISTENER] = "listener",
                                         [ST_FD_CONN] = "accepted", [ST_FD_CLIENT] = "client"};
static _Atomic uint64_t override_logged[ST_FD_CLIENT + 1];

static void note_override(int fd, unsigned kind, int i, long long app, const char *app_name)
{
	int want = 0;
	st_opt_want(&st_policy, i, &want);
	int agree = app_name ? strcmp(app_name, st_opt_name(&st_policy, i)) == 0
	            : st_opt_is_flag(i) ? !app == !want : app == want;
	if (agree) {
		if (app_name)
			st_log(ST_LOG_DEBUG, "event=app-override fd=%d socket=%s option=%s app_name=%s same=1",
			       fd, kind_names[kind], ST_KEY(i), app_name);
		else
			st_log(ST_LOG_DEBUG, "event=app-override fd=%d socket=%s option=%s app_value=%lld same=1",
			       fd, kind_names[kind], ST_KEY(i), app);
		return;
	}
	struct st_stats_file *sf = st_stats_file();
	if (sf)
		st_count(&sf->app_overrides_refused);
	uint64_t bit = 1ull << i;
	if (st_log_level < ST_LOG_INFO || (atomic_fetch_or(&override_logged[kind], bit) & bit))
		return;
	char addr[ST_ADDR_MAX];
	unsigned port;
	st_local_addr(fd, addr, sizeof addr, &port); /* once per kind and option: not per call */
	if (app_name)
		st_log(ST_LOG_INFO,
		       "event=app-override fd=%d addr=%s socket=%s option=%s app_name=%s want_name=%s", fd, addr,
		       kind_names[kind], ST_KEY(i), app_name, st_opt_name(&st_policy, i));
	else
		st_log(ST_LOG_INFO,
		       "event=app-override fd=%d addr=%s socket=%s option=%s app_value=%lld want=%d", fd, addr,
		       kind_names[kind], ST_KEY(i), app, want);
}

/* Before the policy overwrites what the app set on a socket not yet tuned: what was it?
 * (Buffers read back doubled: halved here, the app's request when nothing clamped it.) */
void st_note_override_before(int fd, int family, unsigned kind, int i)
{
	int level, optname, v;
	const char *label;
	st_sockopt_for(i, family, &level, &optname, &label);
	if (st_sockopts[i].flags & ST_O_NAME) {
		char name[ST_NAME_MAX];
		if (st_get_name(fd, level, optname, name, sizeof name) == 0)
			note_override(fd, kind, i, 0, name);
	} else if (st_get_int(fd, level, optname, &v) == 0) {
		note_override(fd, kind, i, (st_sockopts[i].flags & ST_O_BUFFER) ? v / 2 : v, NULL);
	}
}

/* The app's own setsockopt() on a governed socket. */
int st_setsockopt(int fd, int level, int optname, const void *val, socklen_t len)
{
	uint64_t e = st_fd_get(fd);
	unsigned kind = ST_FD_KIND(e);
	int want;

	if (kind < ST_FD_TCP || kind == ST_FD_ADOPTING || kind == ST_FD_CLOSING || st_dry_run())
		return st_real.setsockopt(fd, level, optname, val, len);
	int i = st_opt_lookup(level, optname); /* (not for the sockets the policy does not govern) */
	if (i < 0 || !st_opt_want(&st_policy, i, &want))
		return st_real.setsockopt(fd, level, optname, val, len);
	if ((kind == ST_FD_CONN || kind == ST_FD_CLIENT) && (st_sockopts[i].flags & ST_O_LISTENER_ONLY))
		return st_real.setsockopt(fd, level, optname, val, len);
	if (kind == ST_FD_CLIENT && !(st_sockopts[i].flags & ST_O_CLIENT))
		return st_real.setsockopt(fd, level, optname, val, len);

	/* The app's call goes to the kernel in every case, so that its result and errno are the
	 * kernel's own (a bad pointer, a value out of range). */
	int r = st_real.setsockopt(fd, level, optname, val, len);
	if (r != 0)
		return r;
	int saved = errno;
	if (!st_still_tcp(fd, e)) {
		errno = saved;
		return r;
	}
	if (kind == ST_FD_TCP || (st_app_wins() && kind == ST_FD_LISTENER)) {
		/* Not tuned yet (listen() or connect() will see the bit: precedence=app leaves the
		 * option alone, policy overwrites it and says so), or the app's own value wins. */
		st_fd_cas(fd, &e, e | st_app_bit(i)); /* unless closed and reused meanwhile */
	} else if (!st_app_wins()) {
		/* A tuned socket and the policy wins: its value goes back at once.  The kernel took
		 * the app's value, so that value was readable. */
		struct st_err err;
		if (st_sockopts[i].flags & ST_O_NAME)
			st_real.setsockopt(fd, level, optname, st_opt_name(&st_policy, i),
			                   (socklen_t)strlen(st_opt_name(&st_policy, i)));
		else if (!(i == ST_V_RCVBUF && st_on(&st_policy, ST_V_RCVBUF_FORCE) &&
		           st_set_int(&err, fd, SOL_SOCKET, SO_RCVBUFFORCE, "SO_RCVBUFFORCE", want) == 0))
			st_set_int(&err, fd, level, /* the app's *FORCE variants map to the plain ones */
			        optname == SO_RCVBUFFORCE ? SO_RCVBUF
			        : optname == SO_SNDBUFFORCE ? SO_SNDBUF : optname,
			        st_sockopts[i].label, want);
		if (st_sockopts[i].flags & ST_O_NAME) {
			char name[16];
			size_t n = strnlen(val, len < sizeof name - 1 ? len : sizeof name - 1);
			memcpy(name, val, n);
			name[n] = '\0';
			st_sanitize(name, name, sizeof name);
			note_override(fd, kind, i, 0, name);
		} else if (len >= sizeof(int)) {
			note_override(fd, kind, i, *(const int *)val, NULL);
		}
	}
	errno = saved;
	return r;
}
