/* The kernel's rules for the values socktune sets, and the fix for each limit
 * (include/socktune_kernel.h).  Pure: no socket, no file, no global state. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

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
	if (flags & ST_O_ROUNDS_UP)
		return got < want;
	if (st_opt_is_flag(i))
		return !got != !want;
	return got != want;
}

void st_fix_limit(int i, long long want, char *fix, size_t n)
{
	const char *limit = st_sockopts[i].limit ? st_sockopts[i].limit : "?";
	if (i == ST_V_RCVBUF)
		snprintf(fix, n, "sysctl -w %s=%lld, or CAP_NET_ADMIN with %s=1 (--%s)", limit, want,
		         st_vars[ST_V_RCVBUF_FORCE].env, st_vars[ST_V_RCVBUF_FORCE].option);
	else
		snprintf(fix, n, "sysctl -w %s=%lld", limit, want);
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

void st_why_congestion(const char *name, const char *available, const char *allowed, char *why,
                       size_t wn, char *fix, size_t fn)
{
	if (!st_has_word(available, name)) {
		/* built as a module, it is loaded on first use by a program with CAP_NET_ADMIN */
		snprintf(why, wn, "not available (net.ipv4.tcp_available_congestion_control=%s)",
		         available);
		snprintf(fix, fn, "modprobe tcp_%s", name);
	} else {
		snprintf(why, wn, "not allowed (net.ipv4.tcp_allowed_congestion_control=%s)", allowed);
		snprintf(fix, fn, "sysctl -w net.ipv4.tcp_allowed_congestion_control=\"%s %s\", or "
		         "CAP_NET_ADMIN", allowed, name);
	}
}

void st_fix_denied(int i, char *fix, size_t n)
{
	snprintf(fix, n, "grant %s", st_sockopts[i].needs ? st_sockopts[i].needs : "CAP_NET_ADMIN");
}

/* Options a kernel may not have yet: the release that added them. */
static const char *since(int i)
{
	if (i == ST_V_DELACK_MAX || i == ST_V_RTO_MIN)
		return "Linux 6.15";
	return NULL;
}

int st_refusal_is_final(int i, int err)
{
	return err == ENOPROTOOPT || (err == EPERM && st_sockopts[i].needs);
}

void st_fix_refused(int i, int err, char *fix, size_t n)
{
	const struct st_sockopt *o = &st_sockopts[i];
	if (err == ENOPROTOOPT)
		snprintf(fix, n, "%s or later has %s", since(i) ? since(i) : "a newer kernel", o->label);
	else if (err == EPERM)
		st_fix_denied(i, fix, n);
	else if (err == ENODEV && i < ST_V_COUNT && st_vars[i].type == ST_T_IFNAME)
		snprintf(fix, n, "name an interface of this network namespace (ip link)");
	else if (err == EINVAL && i < ST_V_COUNT && st_vars[i].type == ST_T_USEC)
		snprintf(fix, n, "the kernel takes 2 jiffies to 200 ms (socktune check shows the jiffy)");
	else
		fix[0] = '\0';
}
