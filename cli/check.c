/* socktune check: what each configured value becomes on this host, and why (a verdict per
 * value, from the host's limits and a probe socket), then the report. */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "socktune.h"
#include "cli.h"

/* SO_RCVBUF / SO_SNDBUF: request, read back, and explain any shortfall. */
static void check_buffer(struct verdict *v, const struct st_policy *p, const struct host *h,
                         int rcv)
{
	const char *limit = rcv ? "net.core.rmem_max" : "net.core.wmem_max";
	long long max = host_num(h, limit, 0);
	long long want = v->want;
	int force = rcv && st_on(p, ST_V_RCVBUF_FORCE);
	int forced = 0, fd = probe_socket();
	v->doubled = 1;
	if (fd >= 0) {
		if (force && probe_set_int(fd, SOL_SOCKET, SO_RCVBUFFORCE, (int)want) == 0)
			forced = 1;
		if (!forced)
			probe_set_int(fd, SOL_SOCKET, rcv ? SO_RCVBUF : SO_SNDBUF, (int)want);
		v->measured = probe_get_int(fd, SOL_SOCKET, rcv ? SO_RCVBUF : SO_SNDBUF,
		                            &v->effective) == 0;
		probe_close(fd);
	}
	if (!v->measured) {
		/* The kernel's arithmetic: min(request, limit) doubled, unless forced. */
		long long w = (!force || h->cap_net_admin != 1) && max >= 0 && want > max ? max : want;
		v->effective = 2 * (w > INT_MAX / 2 ? INT_MAX / 2 : w);
		forced = force && h->cap_net_admin == 1;
	}
	const char *tmem = rcv ? "net.ipv4.tcp_rmem" : "net.ipv4.tcp_wmem";
	long long auto_max = host_num(h, tmem, 2);
	if (v->effective >= 2 * want || (want > INT_MAX / 2 && v->effective >= INT_MAX - 1)) {
		v->status = V_OK;
		int n = snprintf(v->why, sizeof v->why, "ok%s", forced ? " via SO_RCVBUFFORCE "
		                 "(CAP_NET_ADMIN held here; the program needs it too)" : "");
		if (auto_max > v->effective && n > 0 && (size_t)n < sizeof v->why)
			snprintf(v->why + n, sizeof v->why - (size_t)n,
			         "; autotuning is off for these sockets (it could grow to %s max %lld)",
			         tmem, auto_max);
		return;
	}
	v->status = force ? V_FALLBACK : V_CLAMPED;
	snprintf(v->why, sizeof v->why, "clamped by %s=%lld%s", limit, max,
	         force ? " (SO_RCVBUFFORCE needs CAP_NET_ADMIN, not held: SO_RCVBUF fallback)" : "");
	if (rcv)
		snprintf(v->fix, sizeof v->fix, "sysctl -w %s=%lld, or CAP_NET_ADMIN + --rcvbuf-force",
		         limit, want);
	else
		snprintf(v->fix, sizeof v->fix, "sysctl -w %s=%lld", limit, want);
}

/* A backlog floor or replacement: listen() with it, and compare. */
static void check_backlog(struct verdict *v, const struct host *h)
{
	long long somax = host_num(h, "net.core.somaxconn", 0);
	v->measured = probe_backlog(v->want, &v->effective) == 0;
	if (!v->measured)
		v->effective = somax >= 0 && v->want > somax ? somax : v->want;
	if (v->effective >= v->want) {
		v->status = V_OK;
		snprintf(v->why, sizeof v->why, "ok");
		return;
	}
	v->status = V_CLAMPED;
	snprintf(v->why, sizeof v->why, "clamped by net.core.somaxconn=%lld", somax);
	snprintf(v->fix, sizeof v->fix, "sysctl -w net.core.somaxconn=%lld", v->want);
}

/* Options a probe can set and read back as they are (a small table by option name, so
 * that it builds whatever variables the header has). */
static const struct {
	const char *option;
	int level, opt;
	const char *label;
} readback[] = {
	{"nodelay", IPPROTO_TCP, TCP_NODELAY, "TCP_NODELAY"},
	{"user-timeout", IPPROTO_TCP, TCP_USER_TIMEOUT, "TCP_USER_TIMEOUT"},
	{"notsent-lowat", IPPROTO_TCP, TCP_NOTSENT_LOWAT, "TCP_NOTSENT_LOWAT"},
	{"reuseport", SOL_SOCKET, SO_REUSEPORT, "SO_REUSEPORT"},
	{"priority", SOL_SOCKET, SO_PRIORITY, "SO_PRIORITY"},
	{"mark", SOL_SOCKET, SO_MARK, "SO_MARK"},
	{"tos", IPPROTO_IP, IP_TOS, "IP_TOS"},
	{"defer-accept", IPPROTO_TCP, TCP_DEFER_ACCEPT, "TCP_DEFER_ACCEPT"},
};

/* SOCKTUNE_KEEPALIVE: SO_KEEPALIVE and each of IDLE:INTVL:CNT that is given, on a probe. */
static void check_keepalive(struct verdict *v, const struct st_policy *p)
{
	const struct {
		int level, opt, want;
		const char *label;
	} parts[] = {
		{SOL_SOCKET, SO_KEEPALIVE, (int)p->num[v->id], "SO_KEEPALIVE"},
		{IPPROTO_TCP, TCP_KEEPIDLE, p->ka_idle, "TCP_KEEPIDLE"},
		{IPPROTO_TCP, TCP_KEEPINTVL, p->ka_intvl, "TCP_KEEPINTVL"},
		{IPPROTO_TCP, TCP_KEEPCNT, p->ka_cnt, "TCP_KEEPCNT"},
	};
	int fd = probe_socket();
	if (fd < 0) {
		v->status = V_UNCHECKED;
		snprintf(v->why, sizeof v->why, "not verified (no probe socket: %s)", strerror(errno));
		return;
	}
	v->status = V_OK;
	snprintf(v->why, sizeof v->why, "ok");
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		long long got = -1;
		if (i > 0 && (parts[i].want == 0 || !p->num[v->id]))
			continue; /* that part left to the kernel's default */
		if (probe_set_int(fd, parts[i].level, parts[i].opt, parts[i].want) != 0 ||
		    probe_get_int(fd, parts[i].level, parts[i].opt, &got) != 0) {
			v->status = V_FAILED;
			snprintf(v->why, sizeof v->why, "setsockopt %s: %s", parts[i].label, strerror(errno));
			break;
		}
		if ((i == 0 ? got != 0 : got) != parts[i].want) {
			v->status = V_CLAMPED;
			snprintf(v->why, sizeof v->why, "%s: the kernel kept %lld", parts[i].label, got);
			break;
		}
	}
	probe_close(fd);
}

static void check_readback(struct verdict *v, const struct st_policy *p, int k)
{
	long long want = p->num[v->id], got = -1;
	int booleans = st_vars[v->id].type == ST_T_BOOL;
	int fd = probe_socket(), e = 0;
	v->numeric = 1;
	v->want = want;
	if (fd < 0) {
		v->status = V_UNCHECKED;
		snprintf(v->why, sizeof v->why, "not verified (no probe socket: %s)", strerror(errno));
		return;
	}
	if (probe_set_int(fd, readback[k].level, readback[k].opt, (int)want) != 0)
		e = errno;
	else if (probe_get_int(fd, readback[k].level, readback[k].opt, &got) != 0)
		e = errno;
	probe_close(fd);
	if (e) {
		v->status = V_FAILED;
		snprintf(v->why, sizeof v->why, "setsockopt %s: %s", readback[k].label, strerror(e));
		if (e == EPERM)
			snprintf(v->fix, sizeof v->fix, "grant the program CAP_NET_ADMIN");
		return;
	}
	v->measured = 1;
	v->effective = booleans ? got != 0 : got;
	v->status = v->effective == want ? V_OK : V_CLAMPED;
	snprintf(v->why, sizeof v->why, "%s", v->status == V_OK ? "ok" : "the kernel kept another value");
	/* The kernel keeps TCP_DEFER_ACCEPT as a count of SYN-ACK retransmissions and reports
	 * the time that count covers: rounded up, never less. */
	if (v->id == ST_V_DEFER_ACCEPT && got > want) {
		v->status = V_OK;
		snprintf(v->why, sizeof v->why, "ok (rounded up to %lld s: SYN-ACK retransmission steps)",
		         got);
	}
}

static void check_congestion(struct verdict *v, const struct host *h)
{
	const char *avail = host_get(h, "net.ipv4.tcp_available_congestion_control");
	const char *allowed = host_get(h, "net.ipv4.tcp_allowed_congestion_control");
	char got[32] = "";
	int fd = probe_socket(), e = 0;
	if (fd >= 0) {
		socklen_t len = sizeof got - 1;
		if (probe_set(fd, IPPROTO_TCP, TCP_CONGESTION, v->value, (socklen_t)strlen(v->value)))
			e = errno;
		else if (probe_get(fd, IPPROTO_TCP, TCP_CONGESTION, got, &len) == 0)
			v->measured = 1;
		probe_close(fd);
	}
	if (v->measured && strcmp(got, v->value) == 0) {
		v->status = V_OK;
		snprintf(v->why, sizeof v->why, "ok%s", has_word(allowed, v->value) ? "" :
		         " here (not in net.ipv4.tcp_allowed_congestion_control: a program without "
		         "CAP_NET_ADMIN gets EPERM)");
		return;
	}
	v->status = V_FAILED;
	if (!has_word(avail, v->value)) {
		snprintf(v->why, sizeof v->why, "not available (net.ipv4.tcp_available_congestion_control="
		         "%s)", avail);
		snprintf(v->fix, sizeof v->fix, "modprobe tcp_%s", v->value);
	} else {
		snprintf(v->why, sizeof v->why, "not allowed (net.ipv4.tcp_allowed_congestion_control=%s)%s%s",
		         allowed, e ? ": " : "", e ? strerror(e) : "");
		snprintf(v->fix, sizeof v->fix,
		         "sysctl -w net.ipv4.tcp_allowed_congestion_control=\"%s %s\", or CAP_NET_ADMIN",
		         allowed, v->value);
	}
}

/* A path the library will append to (log file, and any later PATH variable). */
static void check_path(struct verdict *v)
{
	char path[PATH_MAX];
	if (st_expand_path(v->value, (long)getpid(), path, sizeof path) != 0) {
		v->status = V_FAILED;
		snprintf(v->why, sizeof v->why, "path too long");
		return;
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	int ok = access(path, F_OK) == 0 ? access(path, W_OK) == 0 : access(dir, W_OK | X_OK) == 0;
	v->status = ok ? V_OK : V_FAILED;
	snprintf(v->why, sizeof v->why, "%s%s", ok ? "ok: writable by this user" :
	         "not writable by this user",
	         !ok && v->id == ST_V_LOG_FILE ? ": the library would log to stderr instead" : "");
}

static void check_one(struct verdict *v, const struct st_policy *p, const struct host *h)
{
	const char *opt = st_vars[v->id].option;
	enum st_type type = st_vars[v->id].type;
	v->status = V_OK;
	snprintf(v->why, sizeof v->why, "ok");
	if (type == ST_T_SIZE || type == ST_T_INT) {
		v->numeric = 1;
		v->want = v->effective = p->num[v->id];
	}

	if (v->id == ST_V_RCVBUF || v->id == ST_V_SNDBUF) {
		check_buffer(v, p, h, v->id == ST_V_RCVBUF);
	} else if (v->id == ST_V_BACKLOG) {
		check_backlog(v, h);
	} else if (v->id == ST_V_BACKLOG_MIN || v->id == ST_V_BACKLOG_MAX) {
		if (st_has(p, ST_V_BACKLOG)) {
			v->status = V_IGNORED;
			snprintf(v->why, sizeof v->why, "ignored: --backlog is set and replaces it");
		} else if (v->id == ST_V_BACKLOG_MIN) {
			check_backlog(v, h);
		} else {
			long long somax = host_num(h, "net.core.somaxconn", 0);
			if (somax >= 0 && somax < v->want)
				snprintf(v->why, sizeof v->why,
				         "ok (net.core.somaxconn=%lld is lower and cuts first)", somax);
		}
	} else if (v->id == ST_V_RCVBUF_FORCE) {
		if (!p->num[v->id]) {
			snprintf(v->why, sizeof v->why, "ok (off)");
		} else if (!st_has(p, ST_V_RCVBUF)) {
			v->status = V_NOTE;
			snprintf(v->why, sizeof v->why, "note: no effect without --rcvbuf");
		} else if (h->cap_net_admin != 1) {
			v->status = V_FALLBACK;
			snprintf(v->why, sizeof v->why,
			         "CAP_NET_ADMIN not held: SO_RCVBUFFORCE fails, SO_RCVBUF is used");
			snprintf(v->fix, sizeof v->fix, "grant the program CAP_NET_ADMIN");
		} else {
			snprintf(v->why, sizeof v->why, "ok: CAP_NET_ADMIN held here (the program needs it too)");
		}
	} else if (v->id == ST_V_QUICKACK && p->num[v->id]) {
		int fd = probe_socket();
		int ok = fd >= 0 && probe_set_int(fd, IPPROTO_TCP, TCP_QUICKACK, 1) == 0;
		probe_close(fd);
		v->status = ok ? V_OK : V_FAILED;
		snprintf(v->why, sizeof v->why, "%s: set on each accepted connection, re-armed after every "
		         "receive that returns data (one setsockopt per receive)", ok ? "ok" : "failed");
	} else if (type == ST_T_PATH) {
		check_path(v);
	} else if (v->id == ST_V_DISABLE && p->num[v->id]) {
		v->status = V_NOTE;
		snprintf(v->why, sizeof v->why, "note: the library will do nothing at all");
	} else if (strcmp(opt, "dry-run") == 0 && p->num[v->id]) {
		v->status = V_NOTE;
		snprintf(v->why, sizeof v->why, "note: the library will only log, changing nothing");
	} else if (v->id == ST_V_PORTS || v->id == ST_V_LOG || v->id == ST_V_DISABLE ||
	           v->id == ST_V_QUICKACK || strcmp(opt, "client-ports") == 0 ||
	           strcmp(opt, "client") == 0 || strcmp(opt, "precedence") == 0 ||
	           strcmp(opt, "dry-run") == 0) {
		snprintf(v->why, sizeof v->why, "ok (nothing the host decides)");
	} else if (strcmp(opt, "congestion") == 0) {
		check_congestion(v, h);
	} else if (strcmp(opt, "keepalive") == 0) {
		check_keepalive(v, p);
	} else if (strcmp(opt, "fastopen") == 0 && v->want > 0) {
		long long tfo = host_num(h, "net.ipv4.tcp_fastopen", 0);
		if (tfo >= 0 && !(tfo & 2)) {
			v->status = V_FAILED;
			snprintf(v->why, sizeof v->why,
			         "server fast open is off (net.ipv4.tcp_fastopen=%lld)", tfo);
			snprintf(v->fix, sizeof v->fix, "sysctl -w net.ipv4.tcp_fastopen=%lld", tfo | 3);
		} else {
			snprintf(v->why, sizeof v->why, "ok (net.ipv4.tcp_fastopen=%lld)", tfo);
		}
	} else {
		int k = -1;
		for (size_t i = 0; i < sizeof readback / sizeof readback[0]; i++)
			if (strcmp(readback[i].option, opt) == 0)
				k = (int)i;
		if (k >= 0) {
			check_readback(v, p, k);
		} else {
			/* an option this check does not know yet: the library still applies it */
			v->status = V_UNCHECKED;
			snprintf(v->why, sizeof v->why,
			         "valid; not checked here (the library logs what it applied)");
		}
	}
}

static int run_checks(const struct st_policy *p, const struct host *h, struct verdict *out)
{
	int n = 0;
	for (int i = 0; i < ST_V_COUNT; i++) {
		if (!st_has(p, (enum st_var_id)i))
			continue;
		struct verdict *v = &out[n++];
		memset(v, 0, sizeof *v);
		v->id = i;
		v->value = getenv(st_vars[i].env);
		if (!v->value)
			v->value = "";
		check_one(v, p, h);
	}
	return n;
}

int check_main(const struct cli *c, const struct st_policy *p)
{
	struct host h;
	struct verdict v[ST_V_COUNT];
	struct memory m;
	read_host(&h);
	int n = run_checks(p, &h, v);
	memory_exposure(&h, v, n, &m);
	int not_full = 0;
	for (int i = 0; i < n; i++)
		not_full += !V_IN_FULL(v[i].status);
	if (c->json)
		report_json(&h, v, n, &m, not_full);
	else
		report_text(&h, v, n, &m, not_full);
	if (fflush(stdout) != 0)
		return 1;
	return c->strict && not_full ? 1 : 0;
}
