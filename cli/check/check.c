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
#include "socktune_apply.h"
#include "socktune_host.h"
#include "socktune_kernel.h"
#include "check/check.h"
#include "host/probe.h"

/* Option i of p applied to a probe socket by the apply step the library runs (as on a
 * listener): -1 with errno when there is no probe socket. */
static int probe_apply(const struct st_policy *p, int i, struct st_outcome *o, char *name)
{
	int fd = probe_socket();
	if (fd < 0)
		return -1;
	long long family = AF_INET;
	probe_get_int(fd, SOL_SOCKET, SO_DOMAIN, &family);
	struct st_apply_req rq = {.p = p, .family = (int)family};
	st_apply_one(&cli_raw_ops, fd, &rq, i, o, name);
	probe_close(fd);
	return 0;
}

static void no_probe(struct verdict *v)
{
	v->status = V_UNCHECKED;
	snprintf(v->why, sizeof v->why, "not verified (no probe socket: %s)", strerror(errno));
}

/* A refusal: the kernel's errno, and for EPERM the capability the option needs. */
static void refused(struct verdict *v, int i, int err)
{
	int level, optname;
	const char *label;
	st_sockopt_for(i, AF_INET, &level, &optname, &label);
	v->status = V_FAILED;
	snprintf(v->why, sizeof v->why, "setsockopt %s: %s", label, strerror(err));
	st_fix_refused(i, err, v->fix, sizeof v->fix);
}

/* SO_RCVBUF / SO_SNDBUF: request, read back, and explain any shortfall. */
static void check_buffer(struct verdict *v, const struct st_policy *p, const struct host *h)
{
	const char *limit = st_sockopts[v->id].limit;
	long long max = host_num(h, limit, 0);
	long long want = v->want;
	int force = v->id == ST_V_RCVBUF && st_on(p, ST_V_RCVBUF_FORCE);
	int forced = 0;
	struct st_outcome o;
	char name[ST_NAME_MAX];
	v->doubled = 1;
	if (probe_apply(p, v->id, &o, name) == 0 && o.state == ST_SET && o.got != ST_UNREAD) {
		v->measured = 1;
		v->effective = o.got;
		forced = force && !o.force_err;
	}
	if (!v->measured) {
		/* The kernel's arithmetic: min(request, limit) doubled, unless forced. */
		forced = force && h->cap_net_admin == 1;
		v->effective = st_expect(v->id, want, forced, max);
	}
	const char *tmem = v->id == ST_V_RCVBUF ? "net.ipv4.tcp_rmem" : "net.ipv4.tcp_wmem";
	long long auto_max = host_num(h, tmem, 2);
	if (!st_short_of(v->id, want, v->effective) ||
	    (want > INT_MAX / 2 && v->effective >= INT_MAX - 1)) {
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
	st_fix_limit(v->id, want, h->cap_net_admin, force, v->fix, sizeof v->fix);
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
	st_fix_somaxconn(v->want, v->fix, sizeof v->fix);
}

/* SOCKTUNE_KEEPALIVE: SO_KEEPALIVE and each of IDLE:INTVL:CNT that is given, on a probe. */
static void check_keepalive(struct verdict *v, const struct st_policy *p)
{
	static const int parts[] = {ST_V_KEEPALIVE, ST_O_KEEPIDLE, ST_O_KEEPINTVL, ST_O_KEEPCNT};
	v->status = V_OK;
	snprintf(v->why, sizeof v->why, "ok");
	for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
		struct st_outcome o;
		char name[ST_NAME_MAX];
		int i = parts[k];
		if (probe_apply(p, i, &o, name) != 0) {
			no_probe(v);
			return;
		}
		if (o.state == ST_UNTOUCHED)
			continue; /* that part left to the kernel's default */
		if (o.state == ST_FAILED || o.got == ST_UNREAD) {
			refused(v, i, o.state == ST_FAILED ? o.err : errno);
			return;
		}
		if (st_short_of(i, o.want, o.got)) {
			v->status = V_CLAMPED;
			snprintf(v->why, sizeof v->why, "%s: the kernel kept %d", st_sockopts[i].label, o.got);
			return;
		}
	}
}

/* A name option other than the congestion control (SO_BINDTODEVICE): set on a probe, read
 * back, compared. */
static void check_name(struct verdict *v, const struct st_policy *p)
{
	struct st_outcome o;
	char got[ST_NAME_MAX] = "";
	if (probe_apply(p, v->id, &o, got) != 0) {
		no_probe(v);
		return;
	}
	if (o.state == ST_FAILED) {
		refused(v, v->id, o.err);
		if (!v->fix[0])
			st_fix_refused(v->id, o.err, v->fix, sizeof v->fix);
		return;
	}
	v->measured = o.got != ST_UNREAD;
	v->status = o.got == 1 ? V_OK : V_CLAMPED;
	snprintf(v->got_name, sizeof v->got_name, "%s", got);
	snprintf(v->why, sizeof v->why, "%s%s", o.got == 1 ? "ok" : "the kernel kept ", o.got == 1 ? "" : got);
}

/* Any other option of the table: set on a probe, read back, compared as the library does. */
static void check_readback(struct verdict *v, const struct st_policy *p)
{
	struct st_outcome o;
	char name[ST_NAME_MAX];
	v->numeric = 1;
	v->want = p->num[v->id];
	if (probe_apply(p, v->id, &o, name) != 0) {
		no_probe(v);
		return;
	}
	if (o.state == ST_FAILED || o.got == ST_UNREAD) {
		refused(v, v->id, o.state == ST_FAILED ? o.err : errno);
		return;
	}
	v->measured = 1;
	v->effective = st_opt_is_flag(v->id) ? o.got != 0
	               : (st_sockopts[v->id].flags & ST_O_UNSIGNED) ? (long long)(unsigned)o.got : o.got;
	v->status = st_short_of(v->id, v->want, o.got) ? V_CLAMPED : V_OK;
	snprintf(v->why, sizeof v->why, "%s", v->status == V_OK ? "ok" : "the kernel kept another value");
	const char *unit = st_opt_unit(v->id);
	if (v->status == V_OK && o.got > v->want && (st_sockopts[v->id].flags & ST_O_ROUNDS_UP))
		snprintf(v->why, sizeof v->why, "ok (rounded up to %d%s%s%s%s)", o.got,
		         /* kept as a count of SYN-ACK retransmissions, reported as the time it covers */
		         v->id == ST_V_DEFER_ACCEPT ? " s: SYN-ACK retransmission steps" : "",
		         unit ? " " : "", unit ? unit : "", unit ? ": the kernel counts in jiffies" : "");
}

static void check_congestion(struct verdict *v, const struct st_policy *p, const struct host *h)
{
	const char *avail = host_get(h, "net.ipv4.tcp_available_congestion_control");
	const char *allowed = host_get(h, "net.ipv4.tcp_allowed_congestion_control");
	struct st_outcome o;
	char got[ST_NAME_MAX] = "";
	int e = 0;
	if (probe_apply(p, v->id, &o, got) == 0) {
		v->measured = o.state == ST_SET && o.got == 1;
		e = o.state == ST_FAILED ? o.err : 0;
	}
	if (v->measured)
		snprintf(v->got_name, sizeof v->got_name, "%s", got);
	if (v->measured && strcmp(got, v->value) == 0) {
		v->status = V_OK;
		snprintf(v->why, sizeof v->why, "ok%s", st_has_word(allowed, v->value) ? "" :
		         " here (not in net.ipv4.tcp_allowed_congestion_control: a program without "
		         "CAP_NET_ADMIN gets EPERM)");
		return;
	}
	v->status = V_FAILED;
	char why[sizeof v->why - 64];
	st_why_congestion(v->value, avail, allowed, st_congestion_module(v->value), why, sizeof why,
	                  v->fix, sizeof v->fix);
	snprintf(v->why, sizeof v->why, "%s%s%s", why,
	         e && st_has_word(avail, v->value) ? ": " : "",
	         e && st_has_word(avail, v->value) ? strerror(e) : "");
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
	enum st_type type = st_vars[v->id].type;
	v->status = V_OK;
	snprintf(v->why, sizeof v->why, "ok");
	if (type == ST_T_SIZE || type == ST_T_INT) {
		v->numeric = 1;
		v->want = v->effective = p->num[v->id];
	}

	if (st_is_sockopt(v->id) && (st_sockopts[v->id].flags & ST_O_BUFFER)) {
		check_buffer(v, p, h);
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
			snprintf(v->fix, sizeof v->fix, "%s", ST_FIX_FORCE);
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
	} else if (v->id == ST_V_DRY_RUN && p->num[v->id]) {
		v->status = V_NOTE;
		snprintf(v->why, sizeof v->why, "note: the library will only log, changing nothing");
	} else if (v->id == ST_V_PORTS || v->id == ST_V_LOG || v->id == ST_V_DISABLE ||
	           v->id == ST_V_QUICKACK || v->id == ST_V_CLIENT_PORTS || v->id == ST_V_CLIENT ||
	           v->id == ST_V_PRECEDENCE || v->id == ST_V_DRY_RUN) {
		snprintf(v->why, sizeof v->why, "ok (nothing the host decides)");
	} else if (v->id == ST_V_CONGESTION) {
		check_congestion(v, p, h);
	} else if (st_cgroup_only(v->id)) {
		/* (given with check --cgroup only: no probe socket shows a sock_ops program's value) */
		snprintf(v->why, sizeof v->why, "ok (no limit of this host: the cgroup mode's program "
		         "sets it on each new connection; a route's: --route ADDR)");
	} else if (v->id == ST_V_KEEPALIVE) {
		check_keepalive(v, p);
	} else if (v->id == ST_V_FASTOPEN && v->want > 0) {
		long long tfo = host_num(h, "net.ipv4.tcp_fastopen", 0);
		if (tfo >= 0 && !st_fastopen_server_on(tfo)) {
			v->status = V_FAILED;
			snprintf(v->why, sizeof v->why,
			         "server fast open is off (net.ipv4.tcp_fastopen=%lld)", tfo);
			st_fix_fastopen(tfo, v->fix, sizeof v->fix);
		} else {
			snprintf(v->why, sizeof v->why, "ok (net.ipv4.tcp_fastopen=%lld)", tfo);
		}
	} else {
		if (st_is_sockopt(v->id) && (st_sockopts[v->id].flags & ST_O_NAME)) {
			check_name(v, p);
		} else if (st_is_sockopt(v->id)) {
			check_readback(v, p);
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

/* Under check --cgroup, where the cgroup mode cannot run: what its program would set does not
 * take effect at all (the probe socket's verdict is the library's, not the program's). */
static void cgroup_unusable(const struct st_policy *p, const struct cgmode *cg, struct verdict *v,
                            int n)
{
	for (int i = 0; i < n; i++) {
		long long want;
		if (!st_cgroup_only(v[i].id) && !st_sockops_sets(p, v[i].id, 0, &want) &&
		    !(st_on(p, ST_V_CLIENT) && st_sockops_sets(p, v[i].id, 1, &want)))
			continue;
		v[i].status = V_FAILED;
		v[i].measured = 0;
		snprintf(v[i].why, sizeof v[i].why, "not applied: the cgroup mode cannot run here: %.250s",
		         cg->why);
		snprintf(v[i].fix, sizeof v[i].fix, "%s", cg->fix);
	}
}

/* --strict counts the configured values only: a route without quickack is information (its
 * fix needs CAP_NET_ADMIN and is the host's, not the program's). */
int check_main(const struct cli *c, const struct st_policy *p)
{
	struct host h;
	struct verdict v[ST_V_COUNT];
	struct memory m;
	struct route_result routes[CLI_MAX_ROUTES];
	read_host(&h);
	int n = run_checks(p, &h, v);
	struct cgmode cg;
	cgmode_read(c->cgroup_path, &cg);
	if (c->check_cgroup && !cg.usable)
		cgroup_unusable(p, &cg, v, n);
	memory_exposure(&h, v, n, &m);
	int not_full = 0;
	for (int i = 0; i < n; i++)
		not_full += !V_IN_FULL(v[i].status);
	for (int i = 0; i < c->nroutes && i < CLI_MAX_ROUTES; i++)
		if (route_lookup(c->route[i], &routes[i]) == 0)
			route_path_judge(&routes[i], c, p, &h, cg.usable);
	struct report r = {.h = &h, .cg = &cg, .v = v, .n = n, .not_full = not_full, .m = &m,
	                   .routes = routes, .nroutes = c->nroutes};
	say_report(&r, c->json);
	if (fflush(stdout) != 0)
		return 1;
	return c->strict && not_full ? 1 : 0;
}

int check_takes(int id)
{
	(void)id; /* every one: those only the cgroup mode sets with --cgroup (cg_check) */
	return 1;
}

void check_help(FILE *f)
{
	fprintf(f,
	        "usage: socktune check [OPTIONS] [--json] [--strict] [--route ADDR]...\n"
	        "                      [--cgroup [--peer PREFIX]...]\n"
	        "\n"
	        "Shows what this host will grant for the options given here and the SOCKTUNE_*\n"
	        "variables of the environment, and why (a limit, a missing capability, an old\n"
	        "kernel), with the fix; nothing is run and no socket of a program is touched.\n"
	        "\n");
	help_policy(f, check_takes);
	fprintf(f, "\nCommand options:\n");
	help_entry(f, "--json", "print JSON", NULL);
	help_entry(f, "--strict", "exit 1 unless every configured value takes effect in full", NULL);
	char route[300];
	snprintf(route, sizeof route, "the route this host sends to ADDR by (IPv4 or IPv6; up to "
	         "%d): whether it has quickack 1, with the ip route change that adds it, and its "
	         "initcwnd, initrwnd, congctl and rto_min, or the kernel's default", CLI_MAX_ROUTES);
	help_entry(f, "--route ADDR", route, NULL);
	help_entry(f, "--cgroup", "judge the policy as the cgroup mode's (socktune --cgroup): it "
	           "takes the options only that mode sets, refuses those it cannot set, and each "
	           "--route says what its program sets instead of the route's and whether a "
	           "connection with ADDR gets it", NULL);
	char peer[200];
	snprintf(peer, sizeof peer, "with --cgroup: the program tunes only connections whose peer "
	         "is in PREFIX (up to %d); --route says whether ADDR is", CLI_MAX_PEERS);
	help_entry(f, "--peer PREFIX", peer, NULL);
	help_entry(f, "--cgroup-path PATH", "whether the cgroup mode can use that directory "
	           "(default: the cgroup v2 mount)", NULL);
	help_entry(f, "--help, --version", "", NULL);
	fprintf(f, "\n"
	           "Exit status: 0; 1 with --strict when a value does not take effect in full, or\n"
	           "when the report cannot be written; 2 for a bad option or value.\n");
}
