/* What socktune check reads of this host (hostinfo.c): the sysctls that decide what an
 * option becomes, CAP_NET_ADMIN, RLIMIT_NOFILE, the page size, and whether the kernel has
 * the microsecond options of Linux 6.15 and the jiffy it rounds them to; check's host
 * section, and what caps the cgroup mode's values.  Internal to cli/. */
#ifndef SOCKTUNE_HOSTINFO_H
#define SOCKTUNE_HOSTINFO_H

#include <sys/resource.h>

struct host_sysctl {
	const char *name;
	int words; /* 0: one number, 3: three numbers, -1: a list of names */
};
#define N_SYSCTL 12
extern const struct host_sysctl host_sysctls[];

struct host {
	char val[N_SYSCTL][512]; /* "" when unreadable */
	int cap_net_admin;       /* 1, 0, or -1 when unknown */
	/* TCP_DELACK_MAX_US, TCP_RTO_MIN_US: 1, 0 (ENOPROTOOPT: before Linux 6.15), -1 unknown */
	int delack_max_us, rto_min_us;
	char us_probe_err[64];   /* why they are unknown */
	long long jiffy_us, hz;  /* what they are rounded up to; 0 when unknown */
	struct rlimit nofile;
	long page;
};

void read_host(struct host *h);
const char *host_get(const struct host *h, const char *name);
long long host_num(const struct host *h, const char *name, int word);

#endif
