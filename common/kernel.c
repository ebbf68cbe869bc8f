/* The kernel's rules for the values socktune sets, and the fix for each limit
 * (include/socktune_kernel.h).  Pure: no socket, no file, no global state. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "socktune_kernel.h"

long long st_expect(int i, long long want, int forced, long long limit_value)
{
	if (!(st_sockopts[i].flags & ST_O_BUFFER))
		return want;
	long long granted = !forced && limit_value > 0 && want > limit_value ? limit_value : want;
	return 2 * (granted > INT_MAX / 2 ? INT_MAX / 2 : granted);
}

int st_short_of(int i, long long want, long long got)
{
	unsigned flags = st_sockopts[i].flags;
	if (flags & ST_O_BUFFER)
		return got < 2 * (want < INT_MAX / 2 ? want : INT_MAX / 2);
	if (flags & ST_O_UNSIGNED)
		return (unsigned)got != (unsigned)want;
	if (flags & ST_O_ROUNDS_UP)
		return got < want;
	if (st_opt_is_flag(i))
		return !got != !want;
	return got != want;
}

void st_fix_sysctl(int i, long long want, char *fix, size_t n)
{
	snprintf(fix, n, "sysctl -w %s=%lld", st_sockopts[i].limit ? st_sockopts[i].limit : "?", want);
}

void st_fix_limit(int i, long long want, int cap_net_admin, int forced, char *fix, size_t n)
{
	const char *limit = st_sockopts[i].limit ? st_sockopts[i].limit : "?";
	const struct st_var *force = &st_vars[ST_V_RCVBUF_FORCE];
	if (i != ST_V_RCVBUF)
		st_fix_sysctl(i, want, fix, n);
	else if (forced) /* asked for SO_RCVBUFFORCE, refused: only the capability is missing */
		snprintf(fix, n, "sysctl -w %s=%lld, or grant CAP_NET_ADMIN (for %s=1)", limit, want,
		         force->env);
	else if (cap_net_admin == 1) /* held: SO_RCVBUFFORCE would go past the limit now */
		snprintf(fix, n, "sysctl -w %s=%lld, or add --%s (%s=1; CAP_NET_ADMIN is held)", limit,
		         want, force->option, force->env);
	else
		snprintf(fix, n, "sysctl -w %s=%lld, or CAP_NET_ADMIN with %s=1 (--%s)", limit, want,
		         force->env, force->option);
}

void st_fix_somaxconn(long long want, char *fix, size_t n)
{
	snprintf(fix, n, "sysctl -w net.core.somaxconn=%lld", want);
}

int st_fastopen_server_on(long long tcp_fastopen)
{
	return tcp_fastopen >= 0 && (tcp_fastopen & 2);
}

void st_fix_fastopen(long long tcp_fastopen, char *fix, size_t n)
{
	snprintf(fix, n, "sysctl -w net.ipv4.tcp_fastopen=%lld", (tcp_fastopen > 0 ? tcp_fastopen : 0) | 3);
}

int st_has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *s = list; *s;) {
		s += strspn(s, " ");
		size_t len = strcspn(s, " ");
		if (len == n && strncmp(s, word, n) == 0)
			return 1;
		s += len;
	}
	return 0;
}

const char *st_why_congestion(const char *name, const char *available, const char *allowed,
                              int module, char *why, size_t wn, char *fix, size_t fn)
{
	if (st_has_word(available, name)) {
		snprintf(why, wn, "not allowed (net.ipv4.tcp_allowed_congestion_control=%s)", allowed);
		snprintf(fix, fn, "sysctl -w net.ipv4.tcp_allowed_congestion_control=\"%s %s\", or "
		         "CAP_NET_ADMIN", allowed, name);
		return "not-allowed";
	}
	if (module) {
		/* a module: loaded on first use by a program with CAP_NET_ADMIN */
		snprintf(why, wn, "not loaded (net.ipv4.tcp_available_congestion_control=%s; the "
		         "module tcp_%s is installed)", available, name);
		snprintf(fix, fn, "modprobe tcp_%s, or CAP_NET_ADMIN (the kernel then loads it)", name);
		return "not-loaded";
	}
	/* neither built in nor a module: no list of allowed names can help */
	snprintf(why, wn, "missing: this kernel has no %s, built in or as a module (available: %s)",
	         name, available);
	snprintf(fix, fn, "use one of the available: %s", available);
	return "missing";
}

void st_fix_denied(int i, char *fix, size_t n)
{
	snprintf(fix, n, "grant %s", st_sockopts[i].needs ? st_sockopts[i].needs : "CAP_NET_ADMIN");
}

/* Options a kernel may not have yet: the release that added them, as the row's help says it
 * ("TCP_RTO_MAX_MS (Linux 6.15): ..."), into *len bytes at the result; NULL when it names
 * none (every kernel socktune runs on has the option). */
static const char *since(int i, int *len)
{
	int var = i < ST_V_COUNT ? i : st_sockopts[i].var;
	const char *s = strstr(st_vars[var].help, "(Linux ");
	if (!s)
		return NULL;
	*len = (int)strcspn(s + 1, ")");
	return s + 1;
}

int st_refusal_is_final(int i, int err)
{
	return err == ENOPROTOOPT || (err == EPERM && st_sockopts[i].needs);
}

void st_fix_refused(int i, int err, char *fix, size_t n)
{
	const struct st_sockopt *o = &st_sockopts[i];
	int len = 0;
	const char *release = since(i, &len);
	if (err == ENOPROTOOPT && release)
		snprintf(fix, n, "%.*s or later has %s", len, release, o->label);
	else if (err == ENOPROTOOPT)
		snprintf(fix, n, "a newer kernel or later has %s", o->label);
	else if (err == EPERM)
		st_fix_denied(i, fix, n);
	else if (err == ENODEV && i < ST_V_COUNT && st_vars[i].type == ST_T_IFNAME)
		snprintf(fix, n, "name an interface of this network namespace (ip link)");
	else if (err == EINVAL && i < ST_V_COUNT && st_vars[i].type == ST_T_USEC)
		snprintf(fix, n, "the kernel takes 2 jiffies to 200 ms (socktune check shows the jiffy)");
	else
		fix[0] = '\0';
}

void st_fix_refused_on(int i, int err, int protocol, char *fix, size_t n)
{
	/* an MPTCP socket takes only some of TCP's options (net/mptcp/sockopt.c): the same
	 * ENOPROTOOPT a kernel without the option gives, on a kernel that has it */
	if (protocol == ST_IPPROTO_MPTCP && (err == ENOPROTOOPT || err == EOPNOTSUPP))
		snprintf(fix, n, "MPTCP sockets refuse %s (the kernel's MPTCP takes only some of "
		         "TCP's options); a plain TCP socket takes it", st_sockopts[i].label);
	else
		st_fix_refused(i, err, fix, n);
}

size_t st_fix_command(const char *fix, const char **note)
{
	static const char *const runs[] = {"sysctl -w ", "modprobe ", "ip route ", "ip -6 route "};
	size_t len = 0;
	for (size_t k = 0; k < sizeof runs / sizeof runs[0] && !len; k++)
		if (strncmp(fix, runs[k], strlen(runs[k])) == 0) {
			const char *or = strstr(fix, ", or ");
			len = or ? (size_t)(or - fix) : strlen(fix);
		}
	*note = fix[len] == ',' ? fix + len + 2 : fix + len;
	return len;
}

const char *st_fix_split(const char *fix, char *cmd, size_t n)
{
	const char *note;
	size_t len = st_fix_command(fix, &note);
	snprintf(cmd, n, "%.*s", (int)len, fix);
	return note;
}

void st_fix_backlog_lowered(long long want, char *fix, size_t n)
{
	snprintf(fix, n, "use --backlog-min %lld to only raise", want);
}

int st_hz_from_readback(long long asked_us, long long readback_us, long long *jiffy_us,
                        long long *hz)
{
	long long jiffy = readback_us / 2;
	if (jiffy <= 0 || jiffy > 1000000 || asked_us <= jiffy || asked_us > readback_us)
		return -1;
	*jiffy_us = jiffy;
	*hz = 1000000 / jiffy;
	return 0;
}

/* usecs_to_jiffies() and msecs_to_jiffies() round up, jiffies_to_usecs() and
 * jiffies_to_msecs() down: at HZ=300, 9999 us is 3 jiffies, reported as 10000 (a multiple of
 * a 3333 us jiffy would say 9999); at HZ=250, 1001 ms is 251 jiffies, reported as 1004. */
long long st_jiffies_kept(long long v, long long per_s, long long hz)
{
	if (hz <= 0 || per_s <= 0 || v <= 0 || v > LLONG_MAX / 1024 / hz)
		return v;
	long long jiffies = (v * hz + per_s - 1) / per_s;
	return jiffies * per_s / hz;
}

long long st_us_rounded(long long us, long long hz)
{
	return st_jiffies_kept(us, 1000000, hz);
}

int st_took(int i, long long want, long long got, long long hz)
{
	long long per_s = i < ST_V_COUNT ? st_duration_per_s(st_vars[i].type) : 0;
	if (!per_s)
		return !st_short_of(i, want, got);
	if (hz > 0)
		return got == st_jiffies_kept(want, per_s, hz);
	/* HZ unknown: rounded up by less than the longest jiffy there is (HZ=100: 10 ms) */
	return got >= want && got - want < per_s / 100;
}

long long st_us_min(long long hz)
{
	return hz > 0 ? 2 * 1000000 / hz : -1;
}

long long st_us_max(long long hz)
{
	return hz > 0 ? hz / 5 * 1000000 / hz : -1;
}

/* The kernel takes a value that rounds up to 2 jiffies: one jiffy and a microsecond. */
void st_us_range_text(long long jiffy_us, long long hz, char *out, size_t n)
{
	long long least = jiffy_us + 1;
	int k = snprintf(out, n, "rounded up to a jiffy: %lld us (HZ=%lld), takes %lld..%lld us "
	                 "(%lld keeps %lld)", jiffy_us, hz, least, st_us_max(hz), least, st_us_min(hz));
	if (k < 0 || (size_t)k >= n)
		return;
	/* socktune's floor is HZ=250's (ST_US_OPT_MIN): said where this kernel differs */
	if (least < ST_US_OPT_MIN)
		snprintf(out + k, n - (size_t)k, "; socktune takes %d and up", ST_US_OPT_MIN);
	else if (least > ST_US_OPT_MIN)
		snprintf(out + k, n - (size_t)k, "; %d..%lld, which socktune takes, are refused here",
		         ST_US_OPT_MIN, least - 1);
}

/* ---- routes, in the words of ip-route(8) ---- */

static const char *const route_types[] = {"unspec", "unicast", "local", "broadcast", "anycast",
                                          "multicast", "blackhole", "unreachable", "prohibit",
                                          "throw", "nat", "xresolve"};
/* RTA_METRICS by RTAX_ number, as ip(8) names them (0: none; 1: the lock bits) */
static const char *const route_metrics[ST_RTAX_COUNT] = {
	NULL, NULL, "mtu", "window", "rtt", "rttvar", "ssthresh", "cwnd", "advmss", "reordering",
	"hoplimit", "initcwnd", "features", "rto_min", "initrwnd", "quickack", "congctl",
	"fastopen_no_cookie"};

const char *st_route_type_name(unsigned type)
{
	return type < sizeof route_types / sizeof route_types[0] ? route_types[type] : "?";
}

void st_route_table_name(unsigned table, char *out, size_t n)
{
	if (table >= 253 && table <= 255)
		snprintf(out, n, "%s", table == 255 ? "local" : table == 254 ? "main" : "default");
	else
		snprintf(out, n, "%u", table);
}

int st_route_quickack(const struct st_route *r)
{
	return (r->has_metric >> ST_RTAX_QUICKACK & 1) && r->metric[ST_RTAX_QUICKACK] != 0;
}

/* Appends to a string of size n, cut short rather than overflowed. */
static void add(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *out, size_t n, const char *fmt, ...)
{
	size_t len = strnlen(out, n);
	if (len + 1 >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out + len, n - len, fmt, ap);
	va_end(ap);
}

static void add_name(char *out, size_t n, const char *key, unsigned v)
{
	static const struct { unsigned char kind, v; const char *name; } names[] = {
		{'t', 255, "local"}, {'t', 254, "main"}, {'t', 253, "default"},
		{'p', 2, "kernel"}, {'p', 3, "boot"}, {'p', 4, "static"}, {'p', 9, "ra"},
		{'p', 16, "dhcp"},
		{'s', 0, "global"}, {'s', 200, "site"}, {'s', 253, "link"}, {'s', 254, "host"},
		{'s', 255, "nowhere"},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].kind == key[0] && names[i].v == v) {
			add(out, n, " %s %s", key, names[i].name);
			return;
		}
	add(out, n, " %s %u", key, v); /* ip takes the number for any of them */
}

void st_route_spec(const struct st_route *r, int without_quickack, char *out, size_t n)
{
	int full = r->family == AF_INET6 ? 128 : 32;
	out[0] = '\0';
	if (r->type != 1 && r->type < sizeof route_types / sizeof route_types[0])
		add(out, n, "%s ", route_types[r->type]);
	if (r->dst_len == 0)
		add(out, n, "default");
	else if (r->dst_len == full)
		add(out, n, "%s", r->dst);
	else
		add(out, n, "%s/%u", r->dst, r->dst_len);
	if (r->tos)
		add(out, n, " tos 0x%x", r->tos);
	if (r->nhid >= 0) {
		add(out, n, " nhid %lld", r->nhid); /* the nexthop object: no via or dev with it */
	} else {
		if (r->gateway[0])
			add(out, n, " via %s", r->gateway);
		if (r->dev[0])
			add(out, n, " dev %s", r->dev);
		if (r->flags & 4)
			add(out, n, " onlink");
	}
	add_name(out, n, "table", r->table);
	if (r->protocol)
		add_name(out, n, "proto", r->protocol);
	if (r->family == AF_INET)
		add_name(out, n, "scope", r->scope);
	if (r->prefsrc[0])
		add(out, n, " src %s", r->prefsrc);
	if (r->priority >= 0)
		add(out, n, " metric %lld", r->priority);
	if (r->pref == 1 || r->pref == 3)
		add(out, n, " pref %s", r->pref == 1 ? "high" : "low");
	if (r->realms >= 0)
		add(out, n, " realms %lld", r->realms);
	unsigned lock = r->has_metric >> ST_RTAX_LOCK & 1 ? r->metric[ST_RTAX_LOCK] : 0;
	for (int i = 2; i < ST_RTAX_COUNT; i++) {
		if (!(r->has_metric >> i & 1) || (i == ST_RTAX_QUICKACK && without_quickack))
			continue;
		/* ip sets rto_min's lock itself and has no word for it */
		const char *locked = lock >> i & 1 && i != ST_RTAX_RTO_MIN ? " lock" : "";
		if (i == ST_RTAX_CC_ALGO)
			add(out, n, " congctl%s %s", locked, r->congctl);
		else if (i == ST_RTAX_FEATURES)
			add(out, n, "%s", r->metric[i] & 1 ? " features ecn" : "");
		else /* a bare number is taken raw: rtt 80 is 80, not 80 ms (which ip stores x8) */
			add(out, n, " %s%s %u", route_metrics[i], locked, r->metric[i]);
	}
}

/* Whether a change of r can be written at all: -1 with why in fix when not (add: what the
 * command would add, for the sentence; instead: the cure that needs no route) */
static int route_unchangeable(const struct st_route *r, const char *add_what, const char *instead,
                              char *fix, size_t n)
{
	static const struct { unsigned bit; const char *what; } lost[] = {
		{ST_R_MULTIPATH, "its nexthops (multipath)"}, {ST_R_ENCAP, "its encapsulation"},
		{ST_R_VIA, "its gateway of another family (via)"}, {ST_R_METRIC, "a metric ip has no word for"},
		{ST_R_EXPIRES, "its expiry"}, {ST_R_NODEV, "its device (no name for its index)"},
	};
	if (r->type >= 6 && r->type <= 9) {
		snprintf(fix, n, "none: a %s route sends nothing", route_types[r->type]);
		return -1;
	}
	if (r->family == AF_INET6 && r->priority == 0) {
		/* ip6_route_info_create() turns a requested metric 0 into 1024: the change names
		 * another route (ENOENT).  The kernel's own routes (::1, the host's addresses) keep 0. */
		snprintf(fix, n, "none by ip route change: IPv6 routes of metric 0 are the kernel's own "
		         "(a change of metric 0 names metric 1024); per connection instead: %s", instead);
		return -1;
	}
	for (size_t i = 0; i < sizeof lost / sizeof lost[0]; i++)
		if (r->unrepeated & lost[i].bit) {
			snprintf(fix, n, "none written here: a change must repeat %s; add %s to the "
			         "command that made the route", lost[i].what, add_what);
			return -1;
		}
	return 0;
}

int st_fix_route_quickack(const struct st_route *r, char *fix, size_t n)
{
	if (route_unchangeable(r, "quickack 1", "TCP_DELACK_MAX_US (Linux 6.15) or TCP_QUICKACK "
	                       "after every receive (--quickack)", fix, n) != 0)
		return -1;
	char spec[400];
	st_route_spec(r, 1, spec, sizeof spec);
	snprintf(fix, n, "ip %sroute change %s quickack 1", r->family == AF_INET6 ? "-6 " : "", spec);
	return 0;
}

int st_fix_route_initcwnd(const struct st_route *r, unsigned iw, char *fix, size_t n)
{
	char add_what[32];
	snprintf(add_what, sizeof add_what, "initcwnd %u", iw);
	if (route_unchangeable(r, add_what, "the cgroup mode's --initcwnd", fix, n) != 0)
		return -1;
	/* the route as it is, its own initcwnd (a lock too) left for the new one */
	struct st_route c = *r;
	c.has_metric &= ~(1ul << ST_RTAX_INITCWND);
	if (c.has_metric >> ST_RTAX_LOCK & 1)
		c.metric[ST_RTAX_LOCK] &= ~(1u << ST_RTAX_INITCWND);
	char spec[400];
	st_route_spec(&c, 0, spec, sizeof spec);
	snprintf(fix, n, "ip %sroute change %s initcwnd %u", r->family == AF_INET6 ? "-6 " : "", spec,
	         iw);
	return 0;
}
