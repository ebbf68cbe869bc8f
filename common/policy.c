/* Environment -> policy.  Pure: no socket calls, no logging, no global state, so the
 * library and the command link the same code and unit tests call it directly. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "socktune.h"

/* Digits only: strtoull alone would accept "-1" (wrapping it), leading blanks and "+".
 * -1: not digits; -2: too large; -3: a minus sign and digits (*end past them), which the
 * callers call out of range once the rest is well formed: "-1" is a number, just not one
 * of 1..N, and saying "not a whole number" sends the user looking for the wrong mistake. */
static int parse_digits(const char *s, unsigned long long *out, const char **end)
{
	if (s[0] == '-' && isdigit((unsigned char)s[1])) {
		int r = parse_digits(s + 1, out, end);
		return r == 0 || r == -2 ? -3 : r;
	}
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	char *e;
	unsigned long long v = strtoull(s, &e, 10);
	*out = v;
	*end = e; /* (set for -2 too: "-" and too many digits is -3, and its callers look past) */
	return errno == ERANGE ? -2 : 0;
}

int st_parse_int(const char *s, long long min, long long max, long long *out, char *err, size_t n)
{
	unsigned long long v;
	const char *end;
	int r = parse_digits(s, &v, &end);
	if (r == -2 || (r == -3 && *end == '\0') ||
	    (r == 0 && *end == '\0' && v > (unsigned long long)max)) {
		snprintf(err, n, "out of range (%lld..%lld)", min, max);
		return -1;
	}
	if (r < 0 || *end != '\0') {
		snprintf(err, n, "not a whole number");
		return -1;
	}
	if ((long long)v < min) {
		snprintf(err, n, "out of range (%lld..%lld)", min, max);
		return -1;
	}
	*out = (long long)v;
	return 0;
}

int st_parse_size(const char *s, long long min, long long max, long long *out, char *err, size_t n)
{
	unsigned long long v;
	const char *end;
	int r = parse_digits(s, &v, &end);
	if (r == -1) {
		snprintf(err, n, "not a size (an integer with an optional K, M or G suffix)");
		return -1;
	}
	unsigned shift = 0;
	if (r == 0 || r == -3) {
		switch (*end) {
		case 'k': case 'K': shift = 10; end++; break;
		case 'm': case 'M': shift = 20; end++; break;
		case 'g': case 'G': shift = 30; end++; break;
		}
		if (*end != '\0') {
			snprintf(err, n, "not a size (an integer with an optional K, M or G suffix)");
			return -1;
		}
	}
	if (r == -2 || r == -3 || v > ((unsigned long long)max >> shift) ||
	    (v << shift) < (unsigned long long)min) {
		snprintf(err, n, "out of range (%lld..%lld bytes)", min, max);
		return -1;
	}
	*out = (long long)(v << shift);
	return 0;
}

int st_parse_bool(const char *s, long long *out, char *err, size_t n)
{
	static const char *const yes[] = {"1", "yes", "on", "true"};
	static const char *const no[] = {"0", "no", "off", "false"};
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	snprintf(err, n, "not a boolean (1/0, yes/no, on/off, true/false)");
	return -1;
}

int st_parse_log_level(const char *s, long long *out, char *err, size_t n)
{
	static const char *const names[] = {"off", "error", "warn", "info", "debug"};
	for (long long i = 0; i < 5; i++) {
		if (strcasecmp(s, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	snprintf(err, n, "not a log level (off, error, warn, info, debug)");
	return -1;
}

static int parse_port(const char *s, const char **end, unsigned *out)
{
	unsigned long long v;
	if (parse_digits(s, &v, end) != 0 || v < 1 || v > 65535)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* Ports lo..hi into the set: whole words at once, so a range costs at most 1,024 word
 * stores however wide it is. */
static void set_range(uint64_t *bits, unsigned lo, unsigned hi)
{
	unsigned wlo = lo / 64, whi = hi / 64;
	uint64_t first = ~0ULL << (lo % 64), last = ~0ULL >> (63 - hi % 64);
	if (wlo == whi) {
		bits[wlo] |= first & last;
		return;
	}
	bits[wlo] |= first;
	if (whi > wlo + 1)
		memset(&bits[wlo + 1], 0xff, (whi - wlo - 1) * sizeof *bits);
	bits[whi] |= last;
}

/* Two passes over the text, each linear in it: the whole list is checked before the set is
 * touched (a refused list leaves it as it was), with nothing on the stack but a few words
 * (the library may parse on a thread with a small stack). */
int st_parse_ports(const char *s, uint64_t *bits, char *err, size_t n)
{
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			memset(bits, 0, ST_PORTS_WORDS * sizeof *bits);
		const char *p = s;
		for (;;) {
			unsigned lo, hi;
			const char *end;
			if (parse_port(p, &end, &lo) != 0)
				goto bad;
			hi = lo;
			if (*end == '-' && (parse_port(end + 1, &end, &hi) != 0 || hi < lo))
				goto bad;
			if (pass == 1)
				set_range(bits, lo, hi);
			if (*end == '\0')
				break;
			if (*end != ',')
				goto bad;
			p = end + 1;
		}
	}
	return 0;
bad:
	snprintf(err, n, "not a port list (ports 1-65535 and ranges, e.g. 80,443,8000-8099)");
	return -1;
}

/* SOCKTUNE_KEEPALIVE: "on"/"off" and the other booleans, or IDLE:INTVL:CNT where each part
 * may be empty to leave the kernel's default ("30::").  The triple implies on. */
int st_parse_keepalive(const char *s, long long *on, int *idle, int *intvl, int *cnt, char *err,
                       size_t n)
{
	if (!strchr(s, ':')) {
		if (st_parse_bool(s, on, err, n) == 0) {
			*idle = *intvl = *cnt = 0;
			return 0;
		}
		snprintf(err, n, "not a boolean or IDLE:INTVL:CNT (e.g. 30:10:5 or 30::)");
		return -1;
	}
	static const long long max[3] = {32767, 32767, 127}; /* MAX_TCP_KEEPIDLE/INTVL/CNT */
	int part[3] = {0, 0, 0};
	const char *p = s;
	for (int i = 0; i < 3; i++) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if ((i < 2 && !end) || (i == 2 && end))
			goto bad;
		if (len > 0) {
			char num[24];
			long long v;
			char e2[80];
			if (len >= sizeof num)
				goto bad;
			memcpy(num, p, len);
			num[len] = '\0';
			if (st_parse_int(num, 1, max[i], &v, e2, sizeof e2) != 0)
				goto bad;
			part[i] = (int)v;
		}
		p = end ? end + 1 : p + len;
	}
	*on = 1;
	*idle = part[0];
	*intvl = part[1];
	*cnt = part[2];
	return 0;
bad:
	snprintf(err, n,
	         "not IDLE:INTVL:CNT (seconds 1-32767, seconds 1-32767, count 1-127; parts may be empty)");
	return -1;
}

int st_parse_tos(const char *s, long long *out, char *err, size_t n)
{
	/* RFC 1349 names, as systemd's IPTOS= takes them */
	static const struct {
		const char *name;
		int val;
	} names[] = {{"lowdelay", 0x10}, {"throughput", 0x08}, {"reliability", 0x04}, {"lowcost", 0x02}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcasecmp(s, names[i].name) == 0) {
			*out = names[i].val;
			return 0;
		}
	}
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isxdigit((unsigned char)s[2])) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(s + 2, &end, 16);
		if (*end == '\0' && errno == 0 && v <= 255) {
			*out = (long long)v;
			return 0;
		}
	} else if (st_parse_int(s, 0, 255, out, err, n) == 0) {
		return 0;
	}
	snprintf(err, n, "not a TOS (0-255, 0x00-0xff, lowdelay, throughput, reliability, lowcost)");
	return -1;
}

int st_parse_name(const char *s, char *out, size_t outlen, char *err, size_t n)
{
	size_t len = strlen(s);
	int ok = len > 0 && len < outlen;
	for (const char *c = s; ok && *c; c++)
		ok = isalnum((unsigned char)*c) || *c == '_' || *c == '-';
	if (!ok) {
		snprintf(err, n, "not an algorithm name (letters, digits, _ and -, at most %zu)",
		         outlen - 1);
		return -1;
	}
	memcpy(out, s, len + 1);
	return 0;
}

/* Interface names as the kernel takes them (dev_valid_name): 1 to IFNAMSIZ - 1 bytes, not "."
 * or "..", no '/', ':' or white space. */
int st_parse_ifname(const char *s, char *out, size_t outlen, char *err, size_t n)
{
	size_t len = strlen(s);
	int ok = len > 0 && len < outlen && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
	for (const char *c = s; ok && *c; c++)
		ok = *c != '/' && *c != ':' && !isspace((unsigned char)*c) && isprint((unsigned char)*c);
	if (!ok) {
		snprintf(err, n, "not an interface name (1 to %zu characters, no '/', ':' or blank)",
		         outlen - 1);
		return -1;
	}
	memcpy(out, s, len + 1);
	return 0;
}

/* A duration: digits with an optional fraction and a unit (us, ms, s); a bare number is in
 * the option's own unit, the kernel's (base: 1 for microseconds, 1000 for milliseconds, named
 * base_name), and the value is a whole number of it, in [min, max] of it. */
static int parse_duration(const char *s, unsigned long long base, const char *base_name,
                          long long min, long long max, long long *out, char *err, size_t n)
{
	unsigned long long whole;
	const char *end;
	int r = parse_digits(s, &whole, &end);
	unsigned long long frac = 0, scale = 1;
	int negative = r == -3;
	if (negative)
		r = 0;
	int digits = r == 0 || r == -2; /* (too large for any unit: out of range once well formed) */
	if (digits && *end == '.') {
		end++;
		for (int k = 0; isdigit((unsigned char)*end) && k < 6; k++, end++) {
			frac = frac * 10 + (unsigned long long)(*end - '0');
			scale *= 10;
		}
		if (scale == 1)
			r = -1;
	}
	unsigned long long unit = 0; /* in microseconds */
	if (digits && r != -1) {
		if (strcmp(end, "") == 0)
			unit = base;
		else if (strcmp(end, "us") == 0)
			unit = 1;
		else if (strcmp(end, "ms") == 0)
			unit = 1000;
		else if (strcmp(end, "s") == 0)
			unit = 1000000;
	}
	if (r == -1 || !unit) {
		snprintf(err, n, "not a duration (a number with us, ms or s; a bare number is %s)",
		         base_name);
		return -1;
	}
	/* whole * unit + frac * unit / scale microseconds, in range, without overflow */
	unsigned long long hi = (unsigned long long)max * base, us = 0;
	if (r != -2 && !negative && whole <= hi / unit)
		us = whole * unit + frac * unit / scale;
	if (r == -2 || negative || whole > hi / unit || us > hi ||
	    us < (unsigned long long)min * base) {
		snprintf(err, n, "out of range (%lld%s..%lld%s; a bare number is %s)", min, base_name,
		         max, base_name, base_name);
		return -1;
	}
	if (us % base) {
		snprintf(err, n, "not a whole number of %s (the kernel's unit for it)", base_name);
		return -1;
	}
	*out = (long long)(us / base);
	return 0;
}

int st_parse_usec(const char *s, long long min, long long max, long long *out, char *err, size_t n)
{
	return parse_duration(s, 1, "us", min, max, out, err, n);
}

int st_parse_msec(const char *s, long long min, long long max, long long *out, char *err, size_t n)
{
	return parse_duration(s, 1000, "ms", min, max, out, err, n);
}

int st_expand_path(const char *pattern, long pid, char *out, size_t n)
{
	/* (no printf: the library opens its log from a hooked call, on the program's stack,
	 * where a thread's may be small) */
	char digits[24];
	size_t nd = 0, o = 0;
	unsigned long v = pid < 0 ? 0UL - (unsigned long)pid : (unsigned long)pid;
	do
		digits[nd++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (pid < 0)
		digits[nd++] = '-';
	for (const char *c = pattern; *c; c++) {
		if (c[0] == '%' && c[1] == 'p') {
			if (n - o <= nd)
				return -1;
			for (size_t k = nd; k > 0; k--)
				out[o++] = digits[k - 1];
			c++;
		} else {
			if (n - o <= 1)
				return -1;
			out[o++] = *c;
		}
	}
	if (o == 0)
		return -1;
	out[o] = '\0';
	return 0;
}

int st_policy_set(struct st_policy *p, enum st_var_id id, const char *s, char *err, size_t n)
{
	const struct st_var *v = &st_vars[id];
	long long val = 0;
	int r;

	switch (v->type) {
	case ST_T_SIZE:
		r = st_parse_size(s, v->min, v->max, &val, err, n);
		break;
	case ST_T_INT:
		r = st_parse_int(s, v->min, v->max, &val, err, n);
		break;
	case ST_T_BOOL:
		r = st_parse_bool(s, &val, err, n);
		break;
	case ST_T_LOGLEVEL:
		r = st_parse_log_level(s, &val, err, n);
		break;
	case ST_T_PORTS:
		r = st_parse_ports(s, id == ST_V_CLIENT_PORTS ? p->client_ports : p->ports, err, n);
		break;
	case ST_T_KEEPALIVE:
		r = st_parse_keepalive(s, &val, &p->ka_idle, &p->ka_intvl, &p->ka_cnt, err, n);
		break;
	case ST_T_NAME:
		r = st_parse_name(s, p->name[id], sizeof p->name[id], err, n);
		val = 1;
		break;
	case ST_T_IFNAME:
		r = st_parse_ifname(s, p->name[id], sizeof p->name[id], err, n);
		val = 1;
		break;
	case ST_T_USEC:
		r = st_parse_usec(s, v->min, v->max, &val, err, n);
		break;
	case ST_T_MSEC:
		r = st_parse_msec(s, v->min, v->max, &val, err, n);
		break;
	case ST_T_TOS:
		r = st_parse_tos(s, &val, err, n);
		break;
	case ST_T_PRECEDENCE:
		r = 0;
		if (strcasecmp(s, "policy") == 0)
			val = ST_PRECEDENCE_POLICY;
		else if (strcasecmp(s, "app") == 0)
			val = ST_PRECEDENCE_APP;
		else {
			snprintf(err, n, "not a precedence (policy or app)");
			r = -1;
		}
		break;
	case ST_T_PATH: {
		char *dst = id == ST_V_STATS ? p->stats_file : p->log_file;
		char probe[sizeof p->log_file];
		r = -1;
		if (*s == '\0')
			snprintf(err, n, "empty path");
		else if (st_expand_path(s, 4194304, probe, sizeof probe) != 0)
			snprintf(err, n, "path too long (at most %zu bytes)", sizeof p->log_file - 8);
		else {
			snprintf(dst, sizeof p->log_file, "%s", s);
			r = 0;
		}
		break;
	}
	default:
		snprintf(err, n, "internal: unknown type");
		r = -1;
	}
	if (r != 0)
		return -1;
	p->num[id] = val;
	p->set |= 1ULL << id;
	return 0;
}

int st_var_by_env(const char *name)
{
	for (int i = 0; i < ST_V_COUNT; i++)
		if (strcmp(st_vars[i].env, name) == 0)
			return i;
	return -1;
}

int st_var_by_option(const char *name)
{
	for (int i = 0; i < ST_V_COUNT; i++)
		if (strcmp(st_vars[i].option, name) == 0)
			return i;
	return -1;
}

int st_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int rows[3][32]; /* a's first i letters against b's: rows i-2, i-1 and i, in turn */
	if (la > 31 || lb > 31)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		rows[1][j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int *two = rows[(i + 2) % 3], *up = rows[i % 3], *row = rows[(i + 1) % 3];
		int ai = tolower((unsigned char)a[i - 1]);
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int bj = tolower((unsigned char)b[j - 1]);
			int best = up[j - 1] + (ai != bj);
			if (up[j] + 1 < best)
				best = up[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			if (i > 1 && j > 1 && ai == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == bj && two[j - 2] + 1 < best)
				best = two[j - 2] + 1; /* two letters swapped */
			row[j] = best;
		}
	}
	return rows[(la + 1) % 3][lb];
}

const char *st_var_suggest(const char *name, int by_env)
{
	const size_t plen = sizeof ST_ENV_PREFIX - 1;
	if (by_env) {
		if (strncasecmp(name, ST_ENV_PREFIX, plen) != 0)
			return NULL;
		name += plen;
	}
	/* one typo in a short name, two in a longer one: TOS for TOX, not TTL for TOX */
	int limit = strlen(name) <= 4 ? 1 : 2, best = limit + 1;
	const char *found = NULL;
	for (int i = 0; i <= ST_V_COUNT; i++) {
		const char *cand = i == ST_V_COUNT ? (by_env ? ST_ENV_LIBRARY : NULL)
		                   : by_env ? st_vars[i].env : st_vars[i].option;
		if (!cand)
			continue;
		int d = st_edit_distance(name, by_env ? cand + plen : cand);
		if (d < best) {
			best = d;
			found = cand;
		}
	}
	return found;
}

int st_policy_from_env(struct st_policy *p, char *const *envp, st_error_fn on_error, void *ctx)
{
	const size_t plen = sizeof ST_ENV_PREFIX - 1;
	int errors = 0;

	for (char *const *e = envp; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (strncmp(*e, ST_ENV_PREFIX, plen) != 0 || !eq)
			continue;
		char name[64];
		size_t len = (size_t)(eq - *e);
		if (len >= sizeof name) {
			errors++;
			if (on_error)
				on_error(ctx, "SOCKTUNE_...", eq + 1, "unknown variable (name too long)");
			continue;
		}
		memcpy(name, *e, len);
		name[len] = '\0';
		if (strcmp(name, ST_ENV_LIBRARY) == 0)
			continue;
		int id = st_var_by_env(name);
		char err[160];
		if (id < 0) {
			const char *near = st_var_suggest(name, 1);
			snprintf(err, sizeof err, "unknown variable%s%s%s", near ? " (did you mean " : "",
			         near ? near : "", near ? "?)" : "");
		} else if (st_policy_set(p, (enum st_var_id)id, eq + 1, err, sizeof err) == 0) {
			continue;
		}
		errors++;
		if (on_error)
			on_error(ctx, name, eq + 1, err);
	}
	return errors;
}

