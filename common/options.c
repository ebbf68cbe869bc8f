/* ST_VARIABLES expanded: the variables (st_vars) and the socket options they set
 * (st_sockopts), with the few questions every user of the table asks of it. */
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "socktune_opts.h"

const struct st_var st_vars[ST_V_COUNT] = {
#define ST_ENTRY(id, suffix, opt, type, lo, hi, arg, dflt, help, sock) \
	[ST_V_##id] = {ST_ENV_PREFIX suffix, opt, type, lo, hi, arg, dflt, help},
	ST_VARIABLES(ST_ENTRY)
#undef ST_ENTRY
};

/* The socket option column: ST_SO_SOCK(...), ST_SO_SOCK6(...), ST_SO_SOCKOPS(...), ST_SO_OWN
 * or ST_SO_NOSOCK. */
#define ST_SO_BPF(level, optname, flags) \
	.sockops = ((flags) & ST_O_SOCKOPS) ? ST_SOCKOPS_SET : ST_SOCKOPS_NONE, .bpf_level = (level), \
	.bpf_optname = ST_BPF_OPTNAME(level, optname)
#define ST_SO_SOCK(level, optname, flags, limit, needs) \
	#optname, level, optname, flags, limit, needs, NULL, 0, 0, ST_SO_BPF(level, optname, flags)
#define ST_SO_SOCK6(level, optname, flags, limit, needs, level6, optname6) \
	#optname, level, optname, flags, limit, needs, #optname6, level6, optname6, \
	ST_SO_BPF(level, optname, flags)
#define ST_SO_SOCKOPS(how, what) \
	NULL, .sockops = (how), .bpf_level = IPPROTO_TCP, .bpf_optname = (what)
#define ST_SO_OWN NULL
#define ST_SO_NOSOCK NULL

const struct st_sockopt st_sockopts[ST_O_COUNT] = {
#define ST_ENTRY(id, suffix, opt, type, lo, hi, arg, dflt, help, sock) \
	[ST_V_##id] = {ST_SO_##sock, .var = ST_V_##id},
	ST_VARIABLES(ST_ENTRY)
#undef ST_ENTRY
	/* SOCKTUNE_KEEPALIVE=IDLE:INTVL:CNT */
#define ST_KA_PART(name, logkey) \
	{#name, IPPROTO_TCP, name, ST_O_CLIENT | ST_O_SOCKOPS, .var = ST_V_KEEPALIVE, .key = logkey, \
	 ST_SO_BPF(IPPROTO_TCP, name, ST_O_SOCKOPS)}
	[ST_O_KEEPIDLE] = ST_KA_PART(TCP_KEEPIDLE, "keepalive.idle"),
	[ST_O_KEEPINTVL] = ST_KA_PART(TCP_KEEPINTVL, "keepalive.intvl"),
	[ST_O_KEEPCNT] = ST_KA_PART(TCP_KEEPCNT, "keepalive.cnt"),
#undef ST_KA_PART
};

const signed char st_app_index[ST_O_COUNT] = {
#define ST_ENTRY(id, suffix, opt, type, lo, hi, arg, dflt, help, sock) \
	[ST_V_##id] = ST_APP_IF(sock, (ST_A_##id), (-1)),
	ST_VARIABLES(ST_ENTRY)
#undef ST_ENTRY
	[ST_O_KEEPIDLE] = ST_A_KEEPIDLE,
	[ST_O_KEEPINTVL] = ST_A_KEEPINTVL,
	[ST_O_KEEPCNT] = ST_A_KEEPCNT,
};

const signed char st_app_option[ST_A_COUNT] = {
#define ST_ENTRY(id, suffix, opt, type, lo, hi, arg, dflt, help, sock) \
	ST_APP_IF(sock, ([ST_A_##id] = ST_V_##id,), ())
	ST_VARIABLES(ST_ENTRY)
#undef ST_ENTRY
	[ST_A_KEEPIDLE] = ST_O_KEEPIDLE,
	[ST_A_KEEPINTVL] = ST_O_KEEPINTVL,
	[ST_A_KEEPCNT] = ST_O_KEEPCNT,
};

/* Whether a variable is OWN (no socket option, but it tunes sockets). */
static const unsigned char own[ST_V_COUNT] = {
#define ST_OWN_OWN 1
#define ST_OWN_NOSOCK 0
#define ST_OWN_SOCK(...) 0
#define ST_OWN_SOCK6(...) 0
#define ST_OWN_SOCKOPS(...) 0
#define ST_ENTRY(id, suffix, opt, type, lo, hi, arg, dflt, help, sock) [ST_V_##id] = ST_OWN_##sock,
	ST_VARIABLES(ST_ENTRY)
#undef ST_ENTRY
};

int st_opt_next(int i)
{
	int var = st_sockopts[i].var;
	for (int k = i < ST_V_COUNT ? ST_V_COUNT : i + 1; k < ST_O_COUNT; k++)
		if (st_sockopts[k].var == var)
			return k;
	return var + 1 < ST_V_COUNT ? var + 1 : ST_O_COUNT;
}

const char *st_opt_name(const struct st_policy *p, int i)
{
	return i < ST_V_COUNT ? p->name[i] : "";
}

int st_opt_is_flag(int i)
{
	return i < ST_V_COUNT && (st_vars[i].type == ST_T_BOOL || st_vars[i].type == ST_T_KEEPALIVE);
}

int st_opt_lookup(int level, int optname)
{
	if (level == SOL_SOCKET && optname == SO_RCVBUFFORCE)
		return ST_V_RCVBUF;
	if (level == SOL_SOCKET && optname == SO_SNDBUFFORCE)
		return ST_V_SNDBUF;
	for (int i = 0; i < ST_O_COUNT; i++) {
		const struct st_sockopt *o = &st_sockopts[i];
		if (o->label && ((o->level == level && o->optname == optname) ||
		                 (o->label6 && o->level6 == level && o->optname6 == optname)))
			return i;
	}
	return -1;
}

const char *st_opt_key(int i, char *buf, size_t n)
{
	if (st_sockopts[i].key)
		return st_sockopts[i].key;
	const char *s = i < ST_V_COUNT ? st_vars[i].option : "?";
	size_t k = 0;
	for (; s[k] && k + 1 < n; k++)
		buf[k] = s[k] == '-' ? '_' : s[k];
	buf[k] = '\0';
	return buf;
}

int st_var_tunes_listeners(enum st_var_id id)
{
	return (st_is_sockopt(id) && !(st_sockopts[id].flags & ST_O_CLIENT_ONLY)) || own[id];
}

int st_policy_tunes_listeners(const struct st_policy *p)
{
	for (int id = 0; id < ST_V_COUNT; id++)
		if (st_has(p, (enum st_var_id)id) && st_var_tunes_listeners((enum st_var_id)id))
			return 1;
	return 0;
}

int st_sockops_sets(const struct st_policy *p, int i, int outgoing, long long *want)
{
	const struct st_sockopt *o = &st_sockopts[i];
	int w;
	*want = 0;
	if (o->sockops == ST_SOCKOPS_NONE)
		return 0;
	if (!st_is_sockopt(i)) { /* the program's own (initcwnd, ...): both ends */
		*want = p->num[i];
		return st_has(p, (enum st_var_id)i);
	}
	if (!st_opt_want(p, i, &w))
		return 0;
	if (outgoing ? !(o->flags & ST_O_CLIENT) : (o->flags & ST_O_CLIENT_ONLY) != 0)
		return 0;
	*want = (o->flags & ST_O_UNSIGNED) ? (long long)(unsigned)w : w;
	return 1;
}

int st_iter_how(int i)
{
	if (st_iter_why(i))
		return ST_ITER_NONE;
	return st_sockopts[i].bpf_optname == ST_TCP_BPF_SNDCWND_CLAMP ? ST_ITER_SSTHRESH
	                                                               : ST_ITER_GET;
}

const char *st_iter_why(int i)
{
	if (i < 0 || i >= ST_O_COUNT)
		return "no such option";
	const struct st_sockopt *o = &st_sockopts[i];
	if (i == ST_V_BACKLOG || i == ST_V_BACKLOG_MIN || i == ST_V_BACKLOG_MAX)
		return "a listener's backlog is listen()'s argument, which only a copy of the "
		       "listener can change (--via pidfd: pidfd_getfd, ptrace access)";
	if (i == ST_V_QUICKACK)
		return "quick-ack does not stay on and bpf_setsockopt does not take it: the preload "
		       "re-arms it, or the route's quickack, or --delack-max";
	if (o->sockops == ST_SOCKOPS_REPLY || o->bpf_optname == ST_TCP_BPF_IW)
		return "it applies to new connections only (the initial window; the callbacks of a "
		       "connection being made): the cgroup mode (attach --cgroup) sets it";
	if (o->sockops != ST_SOCKOPS_SET)
		return "bpf_setsockopt does not take it (--via pidfd sets it through a copy)";
	if (o->flags & ST_O_NAME)
		return "a name: the iterator program here sets int options only (--via pidfd, or the "
		       "cgroup mode, sets it)";
	if (o->flags & ST_O_CLIENT_ONLY)
		return "it counts the SYNs of a connection being made: an open one has none left";
	return NULL;
}

void st_iter_where(int i, int family, int *level, int *optname)
{
	const struct st_sockopt *o = &st_sockopts[i];
	int v6 = family == AF_INET6 && o->label6;
	*level = v6 ? o->level6 : o->bpf_level;
	*optname = v6 ? o->optname6 : o->bpf_optname;
}
