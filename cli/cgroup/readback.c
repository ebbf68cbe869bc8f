/* What the kernel applied, read back as in every other mode: a child moved into the cgroup
 * makes a loopback listener and a connection to it (both ends the program's sockets now),
 * reads each option on the accepted end (and, with --client, on the outgoing one) and
 * passes the values up a pipe; the wrapper logs them, with the clamp and its fix where the
 * kernel cut one (bpf's SO_RCVBUF is capped by net.core.rmem_max as setsockopt's is). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
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
#include "grow.h"
#include "netlink.h"
#include "record.h"

#define UNREAD (-(1LL << 62))
#define SCOPE_PORT "a port of the scope" /* (the probe's step that found none free) */
#define NO_PRIVATE_NS "unshare" /* (the probe's step: no namespace of its own, ports scoped) */
/* What the congestion control leaves in snd_ssthresh when it keeps none (BBR: it sets it at
 * its init, after the sock_ops program's TCP_BPF_SNDCWND_CLAMP wrote the clamp there) */
#define TCP_INFINITE_SSTHRESH 0x7fffffffu
#define MAX_FIXES 4 /* (the buffers, at most two, cut by their sysctls) */
/* The mark map of the sock_ops program, which the setsockopt hook's presence goes with (-1:
 * neither; the scope is then applied here), and whether the caller ticks cg_app_readback
 * (cg_app_follow) */
static int app_mark_fd = -1, app_followed;

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

/* What a program's own connection that reads another value than the policy's needs.  The
 * cgroup's program sets its values once, at the handshake, and the program's own
 * setsockopt after it wins, except on an option the setsockopt hook holds (hook.c), whose
 * value it writes over the program's: an option held that still reads another value was
 * changed past the hook (a kernel that refused it, or a value the kernel took otherwise),
 * a real surprise; one the hook cannot hold (a name in a buffer too short for ours) is the
 * preload's to hold.  (The probe, which sets nothing, shows neither.) */
#define APP_CURE_HELD "an option the setsockopt hook holds reads another value: not the " \
	"program's own setsockopt (the hook writes the policy's value over it), so something " \
	"past it; socktune's bug if the kernel reports nothing, report it with this line"
#define APP_CURE "the program set it itself after the handshake, and the setsockopt hook " \
	"cannot hold it: the preload (socktune [OPTIONS] -- PROGRAM, without --cgroup; a " \
	"dynamically linked program) holds the policy's value against the program's own " \
	"setsockopt"

/* One end's line (app: the program's own connection, else the probe's); 1 when a value was
 * not applied (the kernel refused it; on the program's own connection: it reads another). */
static int say_end(const struct st_policy *p, const struct end *e, int outgoing,
                   const struct host *h, const char *dir, int insns, unsigned prog_id, int app)
{
	struct rec *r = rec_new();
	int clamped = 0, refused = 0, held = 0;
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
			held = app && app_mark_fd >= 0 && (cg_hold_ends(p, 1, i) & (1 << outgoing));
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
			rec_str(head, K_NOTE, held ? APP_CURE_HELD : APP_CURE);
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

/* Whether the remote address (family, addr) is in one of peers, as the sock_ops program
 * matches it (bpf.c's peers_check): an IPv4 prefix takes an IPv4 peer on an IPv6 socket too
 * (::ffff:a.b.c.d); an IPv6 prefix the 16 bytes as they are. */
static int peer_in(const struct cli_peer *peers, int npeers, int family, const unsigned char *addr)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	for (int k = 0; k < npeers; k++) {
		const unsigned char *a = addr;
		if (peers[k].family == AF_INET && family == AF_INET6 && memcmp(addr, mapped, 12) == 0)
			a = addr + 12;
		else if (peers[k].family != family)
			continue;
		int ok = 1;
		for (int b = 0; ok && b < peers[k].len; b++)
			ok = ((a[b / 8] ^ peers[k].addr[b / 8]) & (0x80 >> (b % 8))) == 0;
		if (ok)
			return 1;
	}
	return 0;
}

/* ---- the program's own connections, read once each kind, from the wrapper's ticks ---- */

#define APP_MAX_LISTENERS 64
#define APP_MAX_CONNS 256
#define APP_MAX_CGROUPS 64   /* the cgroup and its descendants, one kernel filter test each */
#define APP_MAX_PIDS 65536   /* the processes whose descriptors are looked through */
#define APP_MAX_SKIPPED 1024 /* connections found not tuned, never copied again */
#define APP_COPIES 16        /* descriptors copied at one look, at most */
/* Looks before it gives up: 30 s of the wrapper's 250 ms ticks.  A program that makes no
 * connection of a kind (no outgoing one under --client), makes them in another network
 * namespace than the wrapper's, or passes them to a process outside its cgroup, is not
 * looked for all its life: said once, and the probe's line stands. */
#define APP_MAX_LOOKS 120

/* INET_DIAG_BC_CGROUP_COND, 13 (Linux 5.10): the socket's cgroup v2 id equal to the u64 after
 * the op; and the rest of sock_diag's ABI this dump needs (diag.c holds the same) */
enum { APP_BC_JMP = 1, APP_BC_CGROUP_COND = 13, APP_DIAG_BYTECODE = 1, APP_DIAG_CGROUP_ID = 21,
       APP_SOCK_DIAG_BY_FAMILY = 20, APP_NETLINK_SOCK_DIAG = 4 };
struct app_diag_req {
	uint8_t family, protocol, ext, pad;
	uint32_t states;
	uint16_t sport, dport;
	uint32_t src[4], dst[4], ifindex, cookie[2];
};
struct app_diag_msg {
	uint8_t family, state, timer, retrans;
	uint16_t sport, dport; /* network order */
	uint32_t src[4], dst[4], ifindex, cookie[2];
	uint32_t expires, rqueue, wqueue, uid, inode;
};
struct app_bc_op {
	uint8_t code, yes;
	uint16_t no;
};

struct app_sock {
	int family, state;
	unsigned char addr[16], peer[16];
	unsigned port, peer_port;
	unsigned long long ino, cookie, cgroup_id;
};
/* What cg_readback arms and each tick looks at (the wrapper reads one program) */
static struct app {
	int armed;
	char dir[4096];
	unsigned long long ids[APP_MAX_CGROUPS]; /* the cgroup's id (its inode) and its descendants' */
	int nids, more_cgroups, more_pids;       /* past the limits */
	int said_limits;
	int unfiltered;                          /* the kernel refused the cgroup filter (< 5.10) */
	const struct st_policy *p;
	const struct host *h;
	struct cli_peer peers[CLI_MAX_PEERS];
	int npeers, client, insns, looks;
	unsigned prog_id;
	unsigned long long skipped[APP_MAX_SKIPPED]; /* cookies of connections not tuned */
	int nskipped;
	unsigned long long seen[APP_MAX_CONNS]; /* the cookies of the last look's connections */
	int nseen;
	int done[2];                            /* said, or given up: accepted, outgoing */
} app;
/* One look's sockets of the cgroup */
struct app_dump {
	int nl, nc;
	struct app_sock l[APP_MAX_LISTENERS], c[APP_MAX_CONNS];
};

void cg_app_follow(int mark_fd)
{
	app_followed = 1;
	app_mark_fd = mark_fd;
}

static int app_in_tree(unsigned long long id)
{
	for (int k = 0; k < app.nids; k++)
		if (app.ids[k] == id)
			return 1;
	return 0;
}

static void app_add(struct app_dump *a, const struct app_sock *s)
{
	if (!app_in_tree(s->cgroup_id))
		return; /* (a dump unfiltered by the kernel: any socket of the host) */
	if (s->state == TS_LISTEN ? a->nl < APP_MAX_LISTENERS : a->nc < APP_MAX_CONNS)
		*(s->state == TS_LISTEN ? &a->l[a->nl++] : &a->c[a->nc++]) = *s;
}

static void app_take(const struct diag_sock *d, void *ctx)
{
	struct app_sock s = {.family = d->family, .state = (int)d->state, .port = d->sport,
	                     .peer_port = d->dport, .ino = d->inode, .cookie = d->cookie,
	                     .cgroup_id = d->cgroup_id};
	memcpy(s.addr, d->src, sizeof s.addr);
	memcpy(s.peer, d->dst, sizeof s.peer);
	app_add(ctx, &s);
}

/* One family's sockets of the cgroup's tree, in states, the kernel reporting only those (an
 * "or" of cgroup tests, built as diag.c builds its port tests): the count, or -errno. */
static int app_dump_family(int nl, int family, unsigned states, struct app_dump *a)
{
	static unsigned seq;
	struct {
		struct nl_hdr h;
		struct app_diag_req r;
		struct nl_attr at;
		unsigned char bc[16 * APP_MAX_CGROUPS];
	} req;
	memset(&req, 0, sizeof req);
	/* id k: [COND yes 12, no 16: the next test][u64 id][JMP to the end]; the last one's
	 * no goes 4 past the end (dropped), its yes to the end (reported) */
	int len = 16 * app.nids - 4;
	for (int k = 0, at = 0; k < app.nids; k++, at += 16) {
		struct app_bc_op cond = {APP_BC_CGROUP_COND, 12, 16};
		struct app_bc_op jmp = {APP_BC_JMP, 4, (uint16_t)(len - (at + 12))};
		memcpy(req.bc + at, &cond, sizeof cond);
		memcpy(req.bc + at + 4, &app.ids[k], sizeof app.ids[k]);
		if (k < app.nids - 1)
			memcpy(req.bc + at + 12, &jmp, sizeof jmp);
	}
	req.at.len = (uint16_t)(sizeof req.at + (size_t)len);
	req.at.type = APP_DIAG_BYTECODE;
	req.h.len = (uint32_t)(offsetof(__typeof__(req), bc) + (size_t)len);
	req.h.type = APP_SOCK_DIAG_BY_FAMILY;
	req.h.flags = NLM_F_REQUEST_ | NLM_F_DUMP_;
	req.h.seq = ++seq;
	req.r.family = (uint8_t)family;
	req.r.protocol = IPPROTO_TCP;
	req.r.states = states;
	struct nl_addr kernel = {.family = AF_NETLINK};
	if (sendto(nl, &req, req.h.len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0)
		return -errno;
	static _Alignas(8) char buf[32 * 1024];
	for (int count = 0, reads = 0; reads < 4096; reads++) {
		ssize_t n = recv(nl, buf, sizeof buf, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (size_t off = 0; off + sizeof(struct nl_hdr) <= (size_t)n;) {
			const struct nl_hdr *h = (const void *)(buf + off);
			if (h->len < sizeof *h || off + h->len > (size_t)n)
				break;
			off += NL_ALIGN(h->len);
			if (h->seq != req.h.seq)
				continue;
			int err = 0;
			if (h->len >= sizeof *h + sizeof err)
				memcpy(&err, h + 1, sizeof err);
			if (h->type == NLMSG_DONE_)
				return err < 0 ? err : count;
			if (h->type == NLMSG_ERROR_)
				return err ? err : -EPROTO;
			const struct app_diag_msg *m = (const void *)(h + 1);
			if (h->type != APP_SOCK_DIAG_BY_FAMILY || h->len < sizeof *h + sizeof *m)
				continue;
			struct app_sock s = {.family = m->family, .state = m->state,
			                     .port = ntohs(m->sport), .peer_port = ntohs(m->dport),
			                     .ino = m->inode,
			                     .cookie = (unsigned long long)m->cookie[1] << 32 | m->cookie[0]};
			memcpy(s.addr, m->src, sizeof s.addr);
			memcpy(s.peer, m->dst, sizeof s.peer);
			for (size_t o = NL_ALIGN(sizeof *h) + NL_ALIGN(sizeof *m); o + sizeof(struct nl_attr) <= h->len;) {
				const struct nl_attr *at = (const void *)((const char *)h + o);
				if (at->len < sizeof *at || o + at->len > h->len)
					break;
				if (at->type == APP_DIAG_CGROUP_ID && at->len >= sizeof *at + 8)
					memcpy(&s.cgroup_id, at + 1, 8);
				o += NL_ALIGN(at->len);
			}
			app_add(a, &s);
			count++;
		}
	}
	return -EOVERFLOW;
}

/* A cgroup v2 directory's inode, the kernel's id for it (0: none) */
static unsigned long long inode_of(const char *dir)
{
	struct stat st;
	return stat(dir, &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/* The cgroup dir and its descendants (the sock_ops program runs in them too): their ids into
 * app.ids, and with pids the processes in them appended to *pids (*npids, *cap) */
static void app_tree(const char *dir, int depth, int **pids, size_t *npids, size_t *cap)
{
	unsigned long long id = inode_of(dir);
	if (!id)
		return;
	if (app.nids < APP_MAX_CGROUPS)
		app.ids[app.nids++] = id;
	else
		app.more_cgroups++;
	char path[4200];
	if (pids) {
		snprintf(path, sizeof path, "%s/cgroup.procs", dir);
		FILE *f = fopen(path, "re");
		for (int pid; f && fscanf(f, "%d", &pid) == 1;)
			if (*npids < APP_MAX_PIDS && grow(pids, cap, *npids, sizeof **pids, 256) == 0)
				(*pids)[(*npids)++] = pid;
			else
				app.more_pids++;
		if (f)
			fclose(f);
	}
	DIR *d = depth < 32 ? opendir(dir) : NULL;
	for (struct dirent *e; d && (e = readdir(d));)
		if (e->d_type == DT_DIR && e->d_name[0] != '.' &&
		    snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
			app_tree(path, depth + 1, pids, npids, cap);
	if (d)
		closedir(d);
}

/* Whether connection c, on end outgoing, is one the sock_ops program tuned: copy is a copy
 * of its descriptor.  Its mark when the program marks (hook.c's socket storage, looked up by
 * the descriptor: Linux 5.2); else its scope as the program reads it: --ports, the local
 * port of an accepted connection; --client-ports, the remote port of an outgoing one;
 * --peer, the remote address. */
static int app_tuned(const struct app_sock *c, int copy, int outgoing)
{
	if (app_mark_fd >= 0) {
		uint32_t mark = 0;
		return cg_map_lookup(app_mark_fd, &copy, &mark) == 0 &&
		       mark == (outgoing ? CG_MARK_OUTGOING : CG_MARK_ACCEPTED);
	}
	int id = outgoing ? ST_V_CLIENT_PORTS : ST_V_PORTS;
	unsigned port = outgoing ? c->peer_port : c->port;
	if (st_has(app.p, id) && !st_port_in(outgoing ? app.p->client_ports : app.p->ports, port))
		return 0;
	return !app.npeers || peer_in(app.peers, app.npeers, c->family, c->peer);
}

static int app_listed(const unsigned long long *v, int n, unsigned long long cookie)
{
	for (int k = 0; k < n; k++)
		if (v[k] == cookie)
			return 1;
	return 0;
}

static int by_ino(const void *x, const void *y)
{
	const struct app_sock *a = *(const struct app_sock *const *)x, *b = *(const struct app_sock *const *)y;
	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

/* End k's first connection the program tuned among cand[n] (oldest first), read from a copy
 * of its descriptor, taken from the process of the cgroup's tree that holds it, and said:
 * 1 said (or said not readable), 0 none yet.  One not tuned is skipped for good. */
static int app_read(const struct app_sock **cand, int n, int k, struct holders *hs, int *copies)
{
	for (int j = 0; j < n && *copies < APP_COPIES; j++) {
		const struct holder *hd = holders_find(hs, cand[j]->ino);
		if (!hd)
			continue; /* (gone meanwhile, or held outside the tree: looked for again) */
		++*copies;
		int copy = sockcopy_open(hd->pid, hd->fd, cand[j]->ino), e = errno;
		if (copy < 0 && (e == ESTALE || e == EBADF || e == ESRCH))
			continue;
		if (copy < 0) {
			fprintf(stderr, "socktune: --cgroup: the program's own %s connection not read back: "
			        "pidfd_getfd on pid %d: %s\n", k ? "outgoing" : "accepted", hd->pid,
			        strerror(e));
			return 1;
		}
		if (!app_tuned(cand[j], copy, k)) {
			close(copy);
			if (app.nskipped < APP_MAX_SKIPPED)
				app.skipped[app.nskipped++] = cand[j]->cookie;
			continue;
		}
		static struct end got;
		read_end(copy, app.p, k, &got);
		close(copy);
		say_end(app.p, &got, k, app.h, app.dir, app.insns, app.prog_id, 1);
		return 1;
	}
	return 0;
}

/* Said once, when it stops looking: which ends were not read back, and why that may be */
static void app_give_up(int kinds)
{
	for (int k = 0; k < kinds; k++)
		if (!app.done[k])
			fprintf(stderr, "socktune: --cgroup: the program's own %s connection not read back: "
			        "none it tuned%s seen in %d looks (%d s), and no more looked for (a program "
			        "that makes none, or makes them in another network namespace); the probe's "
			        "line stands for it\n", k ? "outgoing" : "accepted",
			        app_mark_fd >= 0 ? "" : " (in --ports, --client-ports, --peer)",
			        APP_MAX_LOOKS, APP_MAX_LOOKS / 4);
	app.done[0] = app.done[1] = 1;
}

int cg_app_readback(int final)
{
	int kinds = app.client ? 2 : 1;
	if (!app.armed || final || (app.done[0] && (kinds == 1 || app.done[1])))
		return 0;
	if (++app.looks > APP_MAX_LOOKS) {
		app_give_up(kinds);
		return 0;
	}
	app.nids = app.more_cgroups = 0;
	app_tree(app.dir, 0, NULL, NULL, NULL);
	int nl = diag_open(0);
	if (nl < 0 || !app.nids) {
		if (nl >= 0)
			close(nl);
		return 1; /* (tried again at the next tick) */
	}
	static struct app_dump d;
	d.nl = d.nc = 0;
	/* (closed by the peer, not yet by the program: still the program's, as it set it) */
	unsigned states = 1u << TS_LISTEN | 1u << TS_ESTABLISHED | 1u << TS_CLOSE_WAIT;
	int r = app.unfiltered ? -EINVAL : app_dump_family(nl, AF_INET, states, &d);
	if (r >= 0)
		r = app_dump_family(nl, AF_INET6, states, &d);
	if (r == -EINVAL && !app.unfiltered) { /* (no cgroup filter: every socket, ours kept) */
		app.unfiltered = 1;
		d.nl = d.nc = 0;
	}
	if (app.unfiltered)
		r = diag_dump(nl, states, 0, app_take, &d);
	close(nl);
	if (r < 0)
		return 1;
	/* accepted: made on a listener of the tree's (its local address and port one that
	 * listener takes); outgoing: any other.  Candidates: those seen at the last look too
	 * (the program may set its own options right after accept), not found untuned before */
	const struct app_sock *cand[2][APP_MAX_CONNS];
	int ncand[2] = {0, 0};
	for (int j = 0; j < d.nc; j++) {
		const struct app_sock *c = &d.c[j];
		int accepted = 0;
		for (int q = 0; q < d.nl && !accepted; q++)
			accepted = diag_listener_takes(d.l[q].family, d.l[q].addr, d.l[q].port,
			                               c->family, c->addr, c->port) != 0;
		int k = !accepted;
		if (k < kinds && !app.done[k] && app_listed(app.seen, app.nseen, c->cookie) &&
		    !app_listed(app.skipped, app.nskipped, c->cookie))
			cand[k][ncand[k]++] = c;
	}
	app.nseen = 0;
	for (int j = 0; j < d.nc; j++)
		app.seen[app.nseen++] = d.c[j].cookie;
	if (ncand[0] || ncand[1]) {
		int *pids = NULL, copies = 0;
		size_t npids = 0, cap = 0;
		struct holders hs = {0};
		app.nids = app.more_cgroups = app.more_pids = 0;
		app_tree(app.dir, 0, &pids, &npids, &cap);
		if ((app.more_pids || app.more_cgroups) && !app.said_limits++)
			fprintf(stderr, "socktune: --cgroup: the program's own connections are looked for "
			        "in the first %d cgroups of %s and its descendants (%d more) and the first "
			        "%d processes in them (%d more)\n", APP_MAX_CGROUPS, app.dir,
			        app.more_cgroups, APP_MAX_PIDS, app.more_pids);
		holders_scan(&hs, pids, (int)npids);
		for (int k = 0; k < kinds; k++) {
			qsort(cand[k], (size_t)ncand[k], sizeof cand[k][0], by_ino);
			if (!app.done[k] && app_read(cand[k], ncand[k], k, &hs, &copies))
				app.done[k] = 1;
		}
		free(hs.h);
		free(pids);
	}
	return !(app.done[0] && (kinds == 1 || app.done[1]));
}

int cg_readback(const char *dir, const struct st_policy *p, int client, const struct host *h,
                int insns, unsigned prog_id, const struct cli_peer *peers, int npeers)
{
	static struct probe r;
	static const unsigned char lo[16] = {127, 0, 0, 1};
	memset(&app, 0, sizeof app);
	if (strlen(dir) < sizeof app.dir && npeers <= CLI_MAX_PEERS) {
		app.armed = 1;
		strcpy(app.dir, dir);
		app.p = p;
		app.h = h;
		memcpy(app.peers, peers, sizeof *peers * (size_t)npeers);
		app.npeers = npeers;
		app.client = client;
		app.insns = insns;
		app.prog_id = prog_id;
	}
	if (npeers && !peer_in(peers, npeers, AF_INET, lo)) {
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
		        "%s)%s\n", strerror(r.err), app_followed ? "; the program's own first "
		        "connection is read instead" : ": its connections are tuned all the same");
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
