/* The socket options the policy sets, as the library, the command and anything that tunes
 * a socket from outside see them: one entry per variable of ST_VARIABLES whose socket
 * option column is SOCK or SOCK6 (indexed by its st_var_id), then the three parts of
 * SOCKTUNE_KEEPALIVE.  Nothing here is written twice: it is ST_VARIABLES, expanded. */
#ifndef SOCKTUNE_OPTS_H
#define SOCKTUNE_OPTS_H

#include <stddef.h>
#include <sys/socket.h>

#include "socktune.h"

/* Options newer than some C libraries' headers (the numbers are the kernel's ABI). */
#ifndef TCP_RTO_MIN_US
#define TCP_RTO_MIN_US 45
#endif
#ifndef TCP_DELACK_MAX_US
#define TCP_DELACK_MAX_US 46
#endif
#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS 44
#endif
#ifndef IPV6_FREEBIND
#define IPV6_FREEBIND 78
#endif
#ifndef IPV6_TRANSPARENT
#define IPV6_TRANSPARENT 75
#endif
#ifndef SO_MAX_PACING_RATE
#define SO_MAX_PACING_RATE 47
#endif

/* What a cgroup sock_ops program (socktune --cgroup) does for an option (the kernel's ABI, in
 * linux/bpf.h; named here so that the table needs no kernel header).  bpf_setsockopt knows
 * the two timers by names of its own, since Linux 5.10 (before the socket options, 6.15). */
#define ST_TCP_BPF_IW 1001
#define ST_TCP_BPF_SNDCWND_CLAMP 1002
#define ST_TCP_BPF_DELACK_MAX 1003
#define ST_TCP_BPF_RTO_MIN 1004
#define ST_SOCK_OPS_TIMEOUT_INIT 1
#define ST_SOCK_OPS_RWND_INIT 2
#define ST_BPF_OPTNAME(level, o) ((level) == IPPROTO_TCP && (o) == TCP_DELACK_MAX_US     \
	                                  ? ST_TCP_BPF_DELACK_MAX                          \
	                          : (level) == IPPROTO_TCP && (o) == TCP_RTO_MIN_US          \
	                                  ? ST_TCP_BPF_RTO_MIN : (o))
enum st_sockops_how {
	ST_SOCKOPS_NONE,  /* the program cannot set it (refused under --cgroup) */
	ST_SOCKOPS_SET,   /* bpf_setsockopt(bpf_level, bpf_optname) on an established connection */
	ST_SOCKOPS_REPLY, /* the reply to callback bpf_optname (BPF_SOCK_OPS_TIMEOUT_INIT, ...) */
};

enum { ST_O_KEEPIDLE = ST_V_COUNT, ST_O_KEEPINTVL, ST_O_KEEPCNT, ST_O_COUNT };
/* Sets of options are one word: the per-connection mask of a listener, what the app set
 * (st_apply_req.keep), what was refused for good, bit 1 << option; and st_policy.set, bit
 * 1 << variable (fewer still). */
_Static_assert(ST_O_COUNT <= 64, "every set of options (bit 1 << option) is one uint64_t");

/* The options an app can set itself (a row whose socket option column is SOCK or SOCK6, in
 * the order of the table, then the three parts of SOCKTUNE_KEEPALIVE), numbered densely:
 * what the library remembers of an app's own setsockopt takes one bit per option an app
 * can set, not one per variable (shim/shim.h: a descriptor's entry).  Generated from the
 * table: ST_APP_IF(sock column, (yes), (no)) is yes for SOCK and SOCK6, no for the rest. */
#define ST_APP_SOCK(...) ST_APP_PICK_YES
#define ST_APP_SOCK6(...) ST_APP_PICK_YES
#define ST_APP_SOCKOPS(...) ST_APP_PICK_NO
#define ST_APP_OWN ST_APP_PICK_NO
#define ST_APP_NOSOCK ST_APP_PICK_NO
#define ST_APP_PICK_YES(yes, no) ST_APP_UNPAREN yes
#define ST_APP_PICK_NO(yes, no) ST_APP_UNPAREN no
#define ST_APP_UNPAREN(...) __VA_ARGS__
#define ST_APP_IF(sock, yes, no) ST_APP_##sock(yes, no)

enum st_app_id {
#define ST_APP_ENUM(id, suffix, opt, type, lo, hi, arg, dflt, help, sock) \
	ST_APP_IF(sock, (ST_A_##id,), ())
	ST_VARIABLES(ST_APP_ENUM)
#undef ST_APP_ENUM
	ST_A_KEEPIDLE,
	ST_A_KEEPINTVL,
	ST_A_KEEPCNT,
	ST_A_COUNT
};

/* Option -> its number among those an app can set (-1: none can), and back. */
extern const signed char st_app_index[ST_O_COUNT];
extern const signed char st_app_option[ST_A_COUNT];

struct st_sockopt {
	const char *label; /* "SO_RCVBUF"; NULL: the variable is no socket option */
	int level, optname;
	unsigned flags;     /* enum st_opt_flags */
	const char *limit;  /* the sysctl that caps it, or NULL */
	const char *needs;  /* the capability without which the kernel refuses it, or NULL */
	const char *label6; /* on IPv6 sockets another option (IPV6_TCLASS), or NULL */
	int level6, optname6;
	int var;            /* the variable that gives its value */
	const char *key;    /* the log key when it is not the option's ("keepalive.idle") */
	/* in a cgroup sock_ops program (socktune --cgroup): how (enum st_sockops_how), and the
	 * level and name bpf_setsockopt takes (on IPv6, label6's), or the callback answered */
	int sockops, bpf_level, bpf_optname;
};

extern const struct st_sockopt st_sockopts[ST_O_COUNT];

static inline int st_is_sockopt(int i)
{
	return st_sockopts[i].label != NULL;
}

/* Whether variable i is an option only a cgroup sock_ops program sets (--initcwnd, ...):
 * the preload and socktune check cannot, and say so naming socktune --cgroup. */
static inline int st_cgroup_only(int i)
{
	return i >= 0 && i < ST_V_COUNT && !st_is_sockopt(i) &&
	       st_sockopts[i].sockops != ST_SOCKOPS_NONE;
}

/* What the BPF iterator path does for option i (cli/host/bpfiter.h: bpf_setsockopt on an open
 * TCP socket from a TCP iterator program, found by its cookie, with no descriptor of it).  It
 * derives from the sockops column: bpf_setsockopt takes the same options in a sock_ops
 * program and in the TCP iterator (net/core/filter.c, one switch for both), at the same
 * level and name (TCP_BPF_DELACK_MAX for TCP_DELACK_MAX_US: Linux 5.10, before the socket
 * option of 6.15).  Its exceptions: an option set only while a connection is being made
 * (TCP_BPF_IW before the first data segment, the callbacks' replies, TCP_SYNCNT), and a name
 * (TCP_CONGESTION: bpf_setsockopt takes the string, the iterator program here writes int
 * options only).  Read back by bpf_getsockopt in the same pass, but TCP_BPF_SNDCWND_CLAMP,
 * which it does not read (EINVAL): the kernel sets snd_ssthresh to the clamp with it, and
 * sock_diag's tcp_info shows that. */
enum st_iter_how {
	ST_ITER_NONE,     /* the iterator does not set it: st_iter_why(i) says why */
	ST_ITER_GET,      /* bpf_setsockopt, read back by bpf_getsockopt */
	ST_ITER_SSTHRESH, /* bpf_setsockopt, read back as tcp_info's snd_ssthresh (sock_diag) */
};
int st_iter_how(int i);
/* Why the iterator does not set option i (one clause, the other path named), or NULL */
const char *st_iter_why(int i);
/* The level and name bpf_setsockopt takes for option i on a socket of family (IPv6: the
 * row's IPv6 option, IPV6_TCLASS for IP_TOS) */
void st_iter_where(int i, int family, int *level, int *optname);

/* The option after i in the order of the table, each variable's parts (keepalive.idle ...)
 * right after it; ST_O_COUNT after the last: for (i = 0; i < ST_O_COUNT; i = st_opt_next(i)).
 * The order of the keys in a log line. */
int st_opt_next(int i);

/* The level, optname and label of option i on a socket of family (AF_INET6: SOCK6's).
 * (Inline, as st_opt_want: both run for each option set on each accepted connection.) */
static inline void st_sockopt_for(int i, int family, int *level, int *optname,
                                  const char **label)
{
	const struct st_sockopt *o = &st_sockopts[i];
	int v6 = family == AF_INET6 && o->label6;
	*level = v6 ? o->level6 : o->level;
	*optname = v6 ? o->optname6 : o->optname;
	*label = v6 ? o->label6 : o->label;
}

/* Whether the cgroup mode's sock_ops program sets option i of p on accepted (outgoing: on
 * outgoing) connections, and the value (check judges it, the cgroup mode builds from it). */
int st_sockops_sets(const struct st_policy *p, int i, int outgoing, long long *want);

/* Whether p sets option i, and to what (a name option: 1, the name is st_opt_name). */
static inline int st_opt_want(const struct st_policy *p, int i, int *want)
{
	int on = st_on(p, ST_V_KEEPALIVE);
	*want = 0;
	switch (i) {
	case ST_O_KEEPIDLE: *want = p->ka_idle; return on && p->ka_idle > 0;
	case ST_O_KEEPINTVL: *want = p->ka_intvl; return on && p->ka_intvl > 0;
	case ST_O_KEEPCNT: *want = p->ka_cnt; return on && p->ka_cnt > 0;
	}
	if (i < 0 || i >= ST_V_COUNT || !st_is_sockopt(i))
		return 0;
	/* a name option: the name is elsewhere; an unsigned one (SO_MARK) goes in as its bits */
	*want = (st_sockopts[i].flags & ST_O_NAME) ? 1 : (int)(unsigned)p->num[i];
	return st_has(p, (enum st_var_id)i);
}

/* The unit of option i when it is a duration ("us", "ms"; st_duration_unit), else NULL. */
static inline const char *st_opt_unit(int i)
{
	return i >= 0 && i < ST_V_COUNT ? st_duration_unit(st_vars[i].type) : NULL;
}

/* The value of a name option (ST_O_NAME: "bbr", "eth0"). */
const char *st_opt_name(const struct st_policy *p, int i);

/* Whether option i is a flag (on or off: TCP_NODELAY), compared by its truth. */
int st_opt_is_flag(int i);

/* The option an app's setsockopt(level, optname) touches (its *FORCE variants, and the
 * IPv6 one, included), or -1. */
int st_opt_lookup(int level, int optname);

/* The log key of option i: its command option with '_' for '-' ("notsent_lowat"), or the
 * table's key.  ST_KEY(i) gives it in a buffer that lives to the end of the block. */
const char *st_opt_key(int i, char *buf, size_t n);
#define ST_KEY_MAX 32
#define ST_KEY(i) st_opt_key((i), (char[ST_KEY_MAX]){0}, ST_KEY_MAX)

/* A variable that tunes listeners or connections (SOCK, SOCK6 or OWN): with none of them
 * set (only logging, say) the library tunes nothing. */
int st_var_tunes_listeners(enum st_var_id id);
int st_policy_tunes_listeners(const struct st_policy *p);

#endif
