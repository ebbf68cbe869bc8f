/* What the kernel applied, read back as in every other mode: a child moved into the cgroup
 * makes a loopback listener and a connection to it (both ends the program's sockets now),
 * reads each option on the accepted end (and, with --client, on the outgoing one) and
 * passes the values up a pipe; the wrapper logs them, with the clamp and its fix where the
 * kernel cut one (bpf's SO_RCVBUF is capped by net.core.rmem_max as setsockopt's is). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_kernel.h"
#include "socktune_opts.h"
#include "cgroup.h"
#include "diag.h"
#include "record.h"

#define UNREAD (-(1LL << 62))
#define SCOPE_PORT "a port of the scope" /* (the probe's step that found none free) */
#define NO_PRIVATE_NS "unshare" /* (the probe's step: no namespace of its own, ports scoped) */
/* What the congestion control leaves in snd_ssthresh when it keeps none (BBR: it sets it at
 * its init, after the sock_ops program's TCP_BPF_SNDCWND_CLAMP wrote the clamp there) */
#define TCP_INFINITE_SSTHRESH 0x7fffffffu
#define MAX_FIXES 4 /* (the buffers, at most two, cut by their sysctls) */

struct end {
	long long got[ST_O_COUNT]; /* UNREAD: not read (not set, or nothing reads it back) */
	char name[ST_O_COUNT][16];
	int clamp_hidden; /* the cwnd clamp set, its only read-out (ssthresh) at infinity */
};
struct probe {
	int err; /* errno of the step that failed, 0 */
	char step[32];
	struct end end[2]; /* accepted, outgoing */
};

static void read_end(int fd, const struct st_policy *p, int outgoing, struct end *e)
{
	struct tcp_info ti;
	socklen_t tl = sizeof ti;
	int have_info = getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0;
	e->clamp_hidden = 0;
	for (int i = 0; i < ST_O_COUNT; i++) {
		long long want;
		e->got[i] = UNREAD;
		if (!cg_sets(p, i, outgoing, &want))
			continue;
		if (i == ST_V_INITCWND && have_info)
			e->got[i] = ti.tcpi_snd_cwnd;
		else if (i == ST_V_CWND_CLAMP && have_info && ti.tcpi_snd_ssthresh >= TCP_INFINITE_SSTHRESH)
			e->clamp_hidden = 1; /* (the clamp itself, snd_cwnd_clamp, no call shows) */
		else if (i == ST_V_CWND_CLAMP && have_info)
			e->got[i] = ti.tcpi_snd_ssthresh; /* (TCP_BPF_SNDCWND_CLAMP sets both) */
		if (!st_is_sockopt(i))
			continue; /* the SYN RTO and the initial receive window: no getsockopt */
		int level, optname, v = 0;
		const char *label;
		st_sockopt_for(i, AF_INET, &level, &optname, &label);
		if (st_sockopts[i].flags & ST_O_NAME) {
			socklen_t l = sizeof e->name[i] - 1;
			memset(e->name[i], 0, sizeof e->name[i]);
			if (getsockopt(fd, level, optname, e->name[i], &l) == 0)
				e->got[i] = 1;
			continue;
		}
		socklen_t l = sizeof v;
		if (getsockopt(fd, level, optname, &v, &l) == 0)
			e->got[i] = (st_sockopts[i].flags & ST_O_UNSIGNED) ? (long long)(unsigned)v : v;
	}
}

static int fail_step(struct probe *r, const char *step)
{
	r->err = errno ? errno : EIO;
	snprintf(r->step, sizeof r->step, "%s", step);
	return -1;
}

/* The probe's listener on 127.0.0.1, on a port the program's scope holds: one of
 * SOCKTUNE_PORTS (and, with client, of SOCKTUNE_CLIENT_PORTS, the outgoing end's remote
 * port) that is free, or any; -1 with errno. */
static int probe_listener(const struct st_policy *p, int client, struct sockaddr_in *a)
{
	int wantp = st_has(p, ST_V_PORTS), wantc = client && st_has(p, ST_V_CLIENT_PORTS);
	int tries = 0;
	for (unsigned port = wantp || wantc ? 1 : 0; port < 65536 && tries < 200; port++) {
		if ((wantp && !st_port_in(p->ports, port)) || (wantc && !st_port_in(p->client_ports, port)))
			continue;
		tries++;
		int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		a->sin_port = htons((unsigned short)port);
		if (l >= 0 && bind(l, (struct sockaddr *)a, sizeof *a) == 0 && listen(l, 4) == 0)
			return l;
		if (l >= 0)
			close(l);
		if (!port)
			break;
	}
	if (!tries)
		errno = EADDRNOTAVAIL;
	return -1;
}

/* The calling process in a network namespace of its own, its loopback up: 0, or -1 with
 * errno (unshare needs CAP_SYS_ADMIN). */
static int private_netns(void)
{
	if (unshare(CLONE_NEWNET) != 0)
		return -1;
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int rc = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0 &&
	                 (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr) == 0)
	             ? 0 : -1;
	int e = errno;
	if (s >= 0)
		close(s);
	errno = e;
	return rc;
}

/* In the child: the connection, in the cgroup, and the values read.  The probe's listener
 * is in a network namespace of its own: a port there is no port of the host's, so no
 * client of the program's (connecting while it starts, to the port it is about to bind)
 * can land in the probe's accept queue and be reset when the probe closes.  The sock_ops
 * program is the cgroup's, whatever the namespace: it tunes the probe's sockets there as
 * it tunes the program's.  Without a namespace (unshare refused) and with --ports or
 * --client-ports, no port of the scope is taken on the host: no probe. */
static int probe(const char *dir, const struct st_policy *p, int client, struct probe *r)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (cg_enter(dir) != 0)
		return fail_step(r, "cgroup.procs");
	if (private_netns() != 0 &&
	    (st_has(p, ST_V_PORTS) || (client && st_has(p, ST_V_CLIENT_PORTS))))
		return fail_step(r, NO_PRIVATE_NS);
	int l = probe_listener(p, client, &a);
	if (l < 0 || getsockname(l, (struct sockaddr *)&a, &al) != 0)
		return fail_step(r, l < 0 && (st_has(p, ST_V_PORTS) || st_has(p, ST_V_CLIENT_PORTS))
		                            ? SCOPE_PORT : "listen");
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
		return fail_step(r, "connect");
	struct pollfd pf = {.fd = l, .events = POLLIN};
	if (poll(&pf, 1, 2000) != 1)
		return fail_step(r, "accept");
	int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0)
		return fail_step(r, "accept");
	read_end(s, p, 0, &r->end[0]);
	if (client)
		read_end(c, p, 1, &r->end[1]);
	/* closed with a reset, both ends: no TIME_WAIT left on a port of the scope (in the
	 * host's namespace, when the probe could not have its own) */
	struct linger rst = {1, 0};
	setsockopt(s, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
	setsockopt(c, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
	close(s);
	close(c);
	return 0;
}

static long long limit_of(const struct host *h, int i)
{
	const char *limit = st_sockopts[i].limit;
	return limit ? host_num(h, limit, 0) : -1;
}

/* What a program's own connection that reads another value than the policy's needs: the
 * cgroup's program sets its values once, at the handshake, and the program's own
 * setsockopt after it wins (the probe, which sets nothing, never shows this). */
#define APP_CURE "the program set it itself after the handshake, where the cgroup mode sets " \
	"its values once: the preload (socktune [OPTIONS] -- PROGRAM, without --cgroup; a " \
	"dynamically linked program) holds the policy's value against the program's own " \
	"setsockopt"

/* One end's line (app: the program's own connection, else the probe's); 1 when a value was
 * not applied (the kernel refused it; on the program's own connection: it reads another). */
static int say_end(const struct st_policy *p, const struct end *e, int outgoing,
                   const struct host *h, const char *dir, int insns, unsigned prog_id, int app)
{
	struct rec *r = rec_new();
	int clamped = 0, refused = 0;
	char fix[320] = "", why[400] = "", fixes[MAX_FIXES][96], unread[64] = "";
	if (!r)
		return 0;
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		long long want, got = e->got[i];
		if (!cg_sets(p, i, outgoing, &want))
			continue;
		unsigned flags = st_sockopts[i].flags;
		int k = K_OPTION + i;
		/* as the library writes it: a buffer or a duration its group (want, effective), any
		 * other option the value read back (a name, a flag, a number) */
		enum rec_type type = rec_key_type(k);
		if (flags & ST_O_NAME) {
			rec_str(r, k, got == UNREAD ? NULL : e->name[i]);
			if (got != UNREAD && strcmp(e->name[i], st_opt_name(p, i)) != 0 && !refused++)
				snprintf(why, sizeof why, "--%s %s: reads %s", st_vars[i].option,
				         st_opt_name(p, i), e->name[i]);
			continue;
		}
		struct rec *g = type == REC_GROUP ? rec_group(r, k) : NULL;
		if (g)
			rec_int(g, K_WANT, want);
		if (got == UNREAD) {
			rec_null(g ? g : r, g ? K_EFFECTIVE : k);
			/* The initial receive window and the SYN RTO are answers to the kernel's
			 * questions at the handshake: no getsockopt or tcp_info field holds them
			 * afterwards (the window is the smaller of this and the buffer's; a SYN's
			 * timer shows only when a SYN is lost), so they are named as not read; so is
			 * the cwnd clamp where the congestion control (BBR) keeps no ssthresh, the one
			 * field that shows it. */
			if ((!st_is_sockopt(i) && i != ST_V_INITCWND && i != ST_V_CWND_CLAMP) ||
			    (i == ST_V_CWND_CLAMP && e->clamp_hidden))
				snprintf(unread + strlen(unread), sizeof unread - strlen(unread), "%s%s",
				         unread[0] ? "," : "", st_vars[i].option);
			continue;
		}
		if (g)
			rec_int(g, K_EFFECTIVE, got);
		else if (type == REC_BOOL)
			rec_bool(r, k, got != 0);
		else
			rec_int(r, k, got);
		/* a duration is kept in jiffies, rounded up: anything else read back (the default)
		 * is a refusal, even when larger than asked */
		int usec = i < ST_V_COUNT && st_vars[i].type == ST_T_USEC && h->hz > 0;
		if ((flags & ST_O_NOT_COMPARED) ||
		    (usec ? got == st_us_rounded(want, h->hz) : !st_short_of(i, want, got)))
			continue;
		long long limit = limit_of(h, i);
		if ((flags & ST_O_BUFFER) && limit >= 0 && got >= st_expect(i, want, 0, limit)) {
			/* cut by its sysctl, as setsockopt would have been */
			if (!clamped) { /* the first clamp's limit: the fixes name every one */
				rec_str(r, K_LIMIT, st_sockopts[i].limit);
				rec_int(r, K_LIMIT_VALUE, limit);
			}
			if (clamped < MAX_FIXES)
				st_fix_sysctl(i, want, fixes[clamped++], sizeof fixes[0]);
			continue;
		}
		if (!refused++) {
			char key[ST_KEY_MAX + 4];
			snprintf(why, sizeof why, "%s.want=%lld (it reads %lld)",
			         rec_key_name(K_OPTION + i, key, sizeof key), want, got);
			st_fix_refused(i < ST_V_COUNT ? i : ST_V_KEEPALIVE, EINVAL, fix, sizeof fix);
		}
	}
	if (clamped && !refused) {
		struct rec *f = rec_arr(r, K_FIX);
		for (int k = 0; k < clamped; k++)
			rec_str(f, K_FIX, fixes[k]);
	}
	struct rec *head = rec_new();
	if (head) {
		rec_int(head, K_PID, (long long)getpid());
		rec_str(head, K_LEVEL, refused ? (app ? "warn" : "error") : clamped ? "warn" : "info");
		rec_str(head, K_EVENT, "cgroup");
		rec_str(head, K_CGROUP, dir);
		rec_int(head, K_PROG_ID, prog_id);
		rec_int(head, K_INSNS, insns);
		rec_str(head, K_CONN, outgoing ? "outgoing" : "accepted");
		rec_str(head, K_STS_SOURCE, app ? "app" : "probe");
		if (unread[0])
			rec_str(head, K_NOT_READABLE, unread);
		if (app && refused)
			rec_str(head, K_NOTE, APP_CURE);
		fputs("socktune ", stderr);
		rec_write_logfmt(stderr, head);
		fputc(' ', stderr);
		rec_write_logfmt(stderr, r);
		fputc('\n', stderr);
		rec_free(head);
	}
	rec_free(r);
	if (refused && !app)
		fprintf(stderr, "socktune: --cgroup: the kernel did not apply %s on a probe connection "
		        "in the cgroup%s%s; nothing is left attached\n", why, fix[0] ? ": " : "", fix);
	return refused != 0;
}

/* Whether a prefix of peers holds 127.0.0.1, the probe's peer. */
static int loopback_in(const struct cli_peer *peers, int npeers)
{
	static const unsigned char lo[4] = {127, 0, 0, 1};
	for (int k = 0; k < npeers; k++) {
		int bits = peers[k].len, ok = peers[k].family == AF_INET;
		for (int b = 0; ok && b < bits; b++)
			ok = ((lo[b / 8] ^ peers[k].addr[b / 8]) & (0x80 >> (b % 8))) == 0;
		if (ok)
			return 1;
	}
	return 0;
}

/* ---- the program's own connections, read once each kind, from the wrapper's ticks ---- */

#define APP_MAX_LISTENERS 64
#define APP_MAX_CONNS 256

struct app_sock {
	int family;
	unsigned char addr[16];
	unsigned port;
	unsigned long long ino, cookie;
};
/* What cg_readback arms and each tick looks at (the wrapper reads one program) */
static struct app {
	int armed;
	char dir[4096];
	unsigned long long cg_id;      /* the cgroup directory's inode: sock_diag's cgroup id */
	const struct st_policy *p;
	const struct host *h;
	int client, insns, ticks;
	unsigned prog_id;
	struct {
		int done;                  /* said, or given up */
		unsigned long long cookie; /* the connection chosen (0: none yet) */
		int tick;                  /* the tick it was first seen */
	} end[2];                      /* accepted, outgoing */
} app;
/* One dump's sockets of the cgroup */
struct app_dump {
	int nl, nc;
	struct app_sock l[APP_MAX_LISTENERS], c[APP_MAX_CONNS];
};

static void app_take(const struct diag_sock *d, void *ctx)
{
	struct app_dump *a = ctx;
	if (d->cgroup_id != app.cg_id)
		return;
	int listener = d->state == TS_LISTEN;
	if (listener ? a->nl >= APP_MAX_LISTENERS : a->nc >= APP_MAX_CONNS)
		return;
	struct app_sock *s = listener ? &a->l[a->nl++] : &a->c[a->nc++];
	s->family = d->family;
	memcpy(s->addr, d->src, sizeof s->addr);
	s->port = d->sport;
	s->ino = d->inode;
	s->cookie = d->cookie;
}

/* Read the program's connection s (an accepted one, or outgoing) from a copy of its
 * descriptor, taken from the process in the cgroup that holds it, and say it: 0 said, -1
 * not found held (it went meanwhile: another is chosen at the next tick). */
static int app_read(const struct app_sock *s, int outgoing)
{
	int pids[256], n = cg_pids(app.dir, pids, 256);
	struct holders hs = {0};
	if (n > 0)
		holders_scan(&hs, pids, n > 256 ? 256 : n);
	const struct holder *hd = holders_find(&hs, s->ino);
	int copy = hd ? sockcopy_open(hd->pid, hd->fd, s->ino) : -1;
	int e = errno, pid = hd ? hd->pid : 0;
	free(hs.h);
	if (copy < 0) {
		if (!hd || e == ESTALE || e == EBADF || e == ESRCH)
			return -1;
		fprintf(stderr, "socktune: --cgroup: the program's own %s connection not read back: "
		        "pidfd_getfd on pid %d: %s\n", outgoing ? "outgoing" : "accepted", pid,
		        strerror(e));
		return 0;
	}
	static struct end got;
	read_end(copy, app.p, outgoing, &got);
	close(copy);
	say_end(app.p, &got, outgoing, app.h, app.dir, app.insns, app.prog_id, 1);
	return 0;
}

int cg_app_readback(int final)
{
	int kinds = app.client ? 2 : 1;
	if (!app.armed || final || (app.end[0].done && (kinds == 1 || app.end[1].done)))
		return 0;
	app.ticks++;
	int nl = diag_open(0);
	if (nl < 0)
		return 1; /* (tried again at the next tick) */
	static struct app_dump d;
	d.nl = d.nc = 0;
	/* (closed by the peer, not yet by the program: still the program's, as it set it) */
	int r = diag_dump(nl, 1u << TS_LISTEN | 1u << TS_ESTABLISHED | 1u << TS_CLOSE_WAIT, 0,
	                  app_take, &d);
	close(nl);
	if (r < 0)
		return 1;
	for (int k = 0; k < kinds; k++) {
		if (app.end[k].done)
			continue;
		/* accepted: made on a listener of the cgroup's (its local address and port one
		 * that listener takes); outgoing: any other.  The chosen one, when still there and
		 * a tick old, is read; else the first made (the lowest inode) is chosen now. */
		const struct app_sock *chosen = NULL, *first = NULL;
		for (int j = 0; j < d.nc; j++) {
			const struct app_sock *c = &d.c[j];
			int accepted = 0;
			for (int q = 0; q < d.nl && !accepted; q++)
				accepted = diag_listener_takes(d.l[q].family, d.l[q].addr, d.l[q].port,
				                               c->family, c->addr, c->port) != 0;
			if (accepted != (k == 0))
				continue;
			if (c->cookie == app.end[k].cookie)
				chosen = c;
			if (!first || c->ino < first->ino)
				first = c;
		}
		if (chosen && app.ticks > app.end[k].tick) {
			if (app_read(chosen, k) == 0) {
				app.end[k].done = 1;
				continue;
			}
			chosen = NULL;
		}
		if (!chosen && first) {
			app.end[k].cookie = first->cookie;
			app.end[k].tick = app.ticks;
		}
	}
	return !(app.end[0].done && (kinds == 1 || app.end[1].done));
}

int cg_readback(const char *dir, const struct st_policy *p, int client, const struct host *h,
                int insns, unsigned prog_id, const struct cli_peer *peers, int npeers)
{
	static struct probe r;
	struct stat st;
	memset(&app, 0, sizeof app);
	if (stat(dir, &st) == 0 && strlen(dir) < sizeof app.dir) {
		app.armed = 1;
		app.cg_id = (unsigned long long)st.st_ino;
		strcpy(app.dir, dir);
		app.p = p;
		app.h = h;
		app.client = client;
		app.insns = insns;
		app.prog_id = prog_id;
	}
	if (npeers && !loopback_in(peers, npeers)) {
		fprintf(stderr, "socktune: --cgroup: not read back: the probe connection's peer, "
		        "127.0.0.1, is outside every --peer prefix (the program tunes only connections "
		        "from those; socktune check shows what this host grants)\n");
		return 0;
	}
	memset(&r, 0, sizeof r);
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		fprintf(stderr, "socktune: --cgroup: pipe: %s\n", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "socktune: --cgroup: fork: %s\n", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		close(pfd[0]);
		probe(dir, p, client, &r);
		const char *b = (const char *)&r;
		for (size_t off = 0; off < sizeof r;) {
			ssize_t w = write(pfd[1], b + off, sizeof r - off);
			if (w <= 0)
				_exit(1);
			off += (size_t)w;
		}
		_exit(0);
	}
	close(pfd[1]);
	size_t got = 0;
	char *b = (char *)&r;
	for (struct pollfd pf = {.fd = pfd[0], .events = POLLIN}; got < sizeof r;) {
		if (poll(&pf, 1, 5000) != 1)
			break;
		ssize_t n = read(pfd[0], b + got, sizeof r - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(pfd[0]);
	if (got < sizeof r)
		kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (got == sizeof r && strcmp(r.step, NO_PRIVATE_NS) == 0) {
		fprintf(stderr, "socktune: --cgroup: not read back from a probe: the probe connection "
		        "would take a port of the program's scope (--ports, --client-ports) on the "
		        "host, where its first clients may land (a namespace of its own was refused: "
		        "%s); the program's own first connection is read instead\n", strerror(r.err));
		return 0;
	}
	if (got == sizeof r && strcmp(r.step, SCOPE_PORT) == 0) {
		fprintf(stderr, "socktune: --cgroup: not read back: no port of the program's scope "
		        "(--ports, --client-ports) was free on 127.0.0.1 for the probe connection (the "
		        "server's own is taken); its connections are tuned all the same\n");
		return 0;
	}
	if (got < sizeof r || r.err) {
		fprintf(stderr, "socktune: --cgroup: the probe connection in %s failed (%s: %s): "
		        "nothing is left attached\n", dir, got < sizeof r ? "no answer" : r.step,
		        got < sizeof r ? "in 5 s" : strerror(r.err));
		return -1;
	}
	int bad = say_end(p, &r.end[0], 0, h, dir, insns, prog_id, 0);
	if (client)
		bad |= say_end(p, &r.end[1], 1, h, dir, insns, prog_id, 0);
	return bad;
}
