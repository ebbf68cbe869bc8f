/* What the cgroup mode's sock_ops program does with a policy, shared by the mode (cgroup/)
 * and check --cgroup (check/routepath.c): at the top, since no subcommand uses another's. */
#ifndef SOCKTUNE_CGPOLICY_H
#define SOCKTUNE_CGPOLICY_H

#include "socktune.h"
#include "cli.h"

/* Whether the program sets option i (an index of st_sockopts) of p on accepted (outgoing:
 * on outgoing) connections, and the value. */
int cg_sets(const struct st_policy *p, int i, int outgoing, long long *want);
/* Whether the remote address (family, addr) is in one of peers, as the program matches it. */
int cg_peer_in(const struct cli_peer *peers, int npeers, int family, const unsigned char *addr);

#endif
