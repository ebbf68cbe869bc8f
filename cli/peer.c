/* --peer PREFIX, as the cgroup mode's program matches a connection's remote address against
 * it: the one test of the wrapper's read-back, the app read-back and check's route verdicts. */
#include <string.h>
#include <sys/socket.h>

#include "cli.h"

/* Whether the remote address (family, addr) is in one of peers, as the sock_ops program
 * matches it (bpf.c's peers_check): an IPv4 prefix takes an IPv4 peer on an IPv6 socket too
 * (::ffff:a.b.c.d); an IPv6 prefix the 16 bytes as they are. */
int peer_in(const struct cli_peer *peers, int npeers, int family, const unsigned char *addr)
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
