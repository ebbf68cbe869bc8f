/* The route the kernel would send to an address by (route.c: netlink, as `ip route get
 * fibmatch ADDR`), its metrics and lock bits, whether it carries quickack 1 and its fix:
 * check --route and doctor's route back to the clients.  Its result holds the path metrics
 * check judges (check/routepath.c fills them once the route is found).  Internal to cli/. */
#ifndef SOCKTUNE_ROUTE_H
#define SOCKTUNE_ROUTE_H

#include "socktune_apply.h"
#include "socktune_kernel.h"

/* check/routepath.c: what decides a connection's start with a --route address, one entry per
 * metric (PATH_*): the route's value, the kernel's without it, and under check --cgroup what
 * the cgroup mode's program sets and whether that is what the connection gets. */
enum { PATH_INITCWND, PATH_INITRWND, PATH_CONGCTL, PATH_RTO_MIN, PATH_COUNT };
struct path_value {
	int set, locked;         /* the route has it; with its lock bit */
	long long num;           /* initcwnd, initrwnd: segments; rto_min: us */
	char name[ST_NAME_MAX];  /* congctl */
	long long kernel_num;    /* without the route's: initrwnd in bytes, at most */
	char kernel_name[ST_NAME_MAX];
	int cg;                  /* the program sets it (check --cgroup and the option) */
	long long cg_num;
	char cg_name[ST_NAME_MAX];
	int wins;                /* with cg: a connection with addr gets the program's */
};
struct route_path {
	int cgroup;              /* judged for check --cgroup */
	int unusable;            /* ... where the cgroup mode cannot run (check's cgmode) */
	int peer_match;          /* addr is in a --peer prefix (1 without --peer) */
	char scope[800];         /* the program's connections, in words */
	char peers[400];         /* --peer's prefixes ("" none) */
	struct path_value v[PATH_COUNT];
};

/* route.c: the route the kernel would send to addr by, and its fix when it lacks quickack. */
struct route_result {
	const char *addr;  /* as given */
	int found;         /* route is the kernel's answer; else error says why */
	int quickack;      /* it carries quickack 1 */
	int fixable;       /* without: fix is an `ip route change`; else why there is none */
	struct st_route route;
	char spec[400];    /* the route in ip's words */
	char fix[600];
	char error[160];
	struct route_path path; /* routepath.c's, once found */
};
int route_lookup(const char *addr, struct route_result *out);
/* The same, as pid's network namespace routes it (pid <= 0: ours): entered and left (setns:
 * CAP_SYS_ADMIN); 0 with out->found when a route was found, else -1. */
int route_lookup_in(int pid, const char *addr, struct route_result *out);

#endif
