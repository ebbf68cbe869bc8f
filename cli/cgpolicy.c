/* What the cgroup mode's sock_ops program does with a policy, which both the mode (cgroup/)
 * and check --cgroup (check/routepath.c) judge: the options it sets on each end of a
 * connection, and the remote addresses --peer lets it tune. */
#include <string.h>
#include <sys/socket.h>

#include "socktune.h"
#include "socktune_opts.h"
#include "cgpolicy.h"

int cg_sets(const struct st_policy *p, int i, int outgoing, long long *want)
{
	const struct st_sockopt *o = &st_sockopts[i];
	int w;
	*want = 0;
	if (o->sockops == ST_SOCKOPS_NONE)
		return 0;
	if (!st_is_sockopt(i)) { /* the program's own (initcwnd, ...): both ends */
		*want = p->num[i];
		return st_has(p, (enum st_var_id)i);
	}
	if (!st_opt_want(p, i, &w))
		return 0;
	if (outgoing ? !(o->flags & ST_O_CLIENT) : (o->flags & ST_O_CLIENT_ONLY) != 0)
		return 0;
	*want = (o->flags & ST_O_UNSIGNED) ? (long long)(unsigned)w : w;
	return 1;
}

/* Whether the remote address (family, addr) is in one of peers, as the sock_ops program
 * matches it (cgroup/bpf.c's peers_check): an IPv4 prefix takes an IPv4 peer on an IPv6
 * socket too (::ffff:a.b.c.d); an IPv6 prefix the 16 bytes as they are. */
int cg_peer_in(const struct cli_peer *peers, int npeers, int family, const unsigned char *addr)
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
