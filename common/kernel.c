/* The kernel's rules for the values socktune sets, and the fix for each limit
 * (include/socktune_kernel.h).  Pure: no socket, no file, no global state. */
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

/* usecs_to_jiffies() rounds up, jiffies_to_usecs() down: at HZ=300, 9999 us is 3 jiffies,
 * reported as 10000 (a multiple of a 3333 us jiffy would say 9999). */
long long st_us_rounded(long long us, long long hz)
{
	if (hz <= 0 || us <= 0 || us > LLONG_MAX / 1024 / hz)
		return us;
	long long jiffies = (us * hz + 999999) / 1000000;
	return jiffies * 1000000 / hz;
}

long long st_us_min(long long hz)
{
	return hz > 0 ? 2 * 1000000 / hz : -1;
}

long long st_us_max(long long hz)
{
	return hz > 0 ? hz / 5 * 1000000 / hz : -1;
}

void st_us_range_text(long long jiffy_us, long long hz, char *out, size_t n)
{
	snprintf(out, n, "rounded up to a jiffy: %lld us (HZ=%lld), range %lld..%lld us", jiffy_us,
	         hz, st_us_min(hz), st_us_max(hz));
}

