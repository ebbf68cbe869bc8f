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
#include "cgroup/cgroup.h"
#include "host/diag.h"
#include "host/grow.h"
#include "host/netlink.h"
#include "record.h"

#define SCOPE_PORT "a port of the scope" /* (the probe's step that found none free) */
#define NO_PRIVATE_NS "unshare" /* (the probe's step: no namespace of its own, ports scoped) */
struct probe {
	int err; /* errno of the step that failed, 0 */
	char step[32];
	struct cg_end end[2]; /* accepted, outgoing */
};

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
	cg_read_end(s, p, 0, &r->end[0]);
	if (client)
		cg_read_end(c, p, 1, &r->end[1]);
	/* closed with a reset, both ends: no TIME_WAIT left on a port of the scope (in the
	 * host's namespace, when the probe could not have its own) */
	struct linger rst = {1, 0};
	setsockopt(s, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
	setsockopt(c, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
	close(s);
	close(c);
	return 0;
}


int cg_readback(const char *dir, const struct st_policy *p, int client, const struct host *h,
                int insns, unsigned prog_id, const struct cli_peer *peers, int npeers)
{
	static struct probe r;
	static const unsigned char lo[16] = {127, 0, 0, 1};
	cg_app_arm(dir, p, client, h, insns, prog_id, peers, npeers);
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
		        "%s)%s\n", strerror(r.err), cg_app_followed() ? "; the program's own first "
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
	int bad = cg_say_end(p, &r.end[0], 0, h, dir, insns, prog_id, 0);
	if (client)
		bad |= cg_say_end(p, &r.end[1], 1, h, dir, insns, prog_id, 0);
	return bad;
}
