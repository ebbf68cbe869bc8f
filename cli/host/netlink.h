/* The kernel's netlink framing (linux/netlink.h), written out for route.c (rtnetlink) and
 * diag.c (sock_diag): musl's include path has no linux/ headers, and these layouts and
 * numbers are fixed ABI. */
#ifndef SOCKTUNE_NETLINK_H
#define SOCKTUNE_NETLINK_H

#include <stdint.h>
#include <sys/socket.h>

struct nl_hdr {
	uint32_t len;
	uint16_t type, flags;
	uint32_t seq, pid;
};
struct nl_addr {
	sa_family_t family;
	unsigned short pad;
	uint32_t pid, groups;
};
struct nl_attr { /* (rtattr and nlattr: the same two fields) */
	uint16_t len, type;
};
enum { NLMSG_ERROR_ = 2, NLMSG_DONE_ = 3, NLM_F_REQUEST_ = 1, NLM_F_DUMP_ = 0x300,
       NLM_F_DUMP_INTR_ = 0x10 };
#define NL_ALIGN(n) (((n) + 3u) & ~3u)
/* sock_diag's protocol and its message type (linux/sock_diag.h): diag.c's dumps,
 * diagclose.c's notifications */
enum { NETLINK_SOCK_DIAG_ = 4, SOCK_DIAG_BY_FAMILY_ = 20 };

#endif
