/* What socktune check reads of this host: the sysctls that decide what an option becomes,
 * CAP_NET_ADMIN, RLIMIT_NOFILE, the page size, and whether the kernel has the microsecond
 * options of Linux 6.15 and the jiffy it rounds them to. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "socktune_host.h"
#include "socktune_kernel.h"
#include "host/probe.h"
#include "host/hostinfo.h"

const struct host_sysctl host_sysctls[] = {
	{"net.core.rmem_max", 0},
	{"net.core.wmem_max", 0},
	{"net.core.somaxconn", 0},
	{"net.ipv4.tcp_rmem", 3},
	{"net.ipv4.tcp_wmem", 3},
	{"net.ipv4.tcp_mem", 3},
	{"net.ipv4.tcp_max_syn_backlog", 0},
	{"net.ipv4.tcp_available_congestion_control", -1},
	{"net.ipv4.tcp_allowed_congestion_control", -1},
	{"net.ipv4.tcp_congestion_control", -1},
	{"net.ipv4.tcp_slow_start_after_idle", 0},
	{"net.ipv4.tcp_fastopen", 0},
};
_Static_assert(sizeof host_sysctls / sizeof host_sysctls[0] == N_SYSCTL,
               "N_SYSCTL in cli.h counts host_sysctls");

const char *host_get(const struct host *h, const char *name)
{
	for (size_t i = 0; i < N_SYSCTL; i++)
		if (strcmp(host_sysctls[i].name, name) == 0)
			return h->val[i];
	return "";
}

long long host_num(const struct host *h, const char *name, int word)
{
	const char *s = host_get(h, name);
	for (int w = 0; w < word && *s; w++) {
		s += strcspn(s, " ");
		s += strspn(s, " ");
	}
	char *end;
	long long v = strtoll(s, &end, 10);
	return end == s ? -1 : v;
}

/* Option opt (TCP_DELACK_MAX_US, TCP_RTO_MIN_US) on probe socket fd: 1 when the kernel has
 * it, 0 when it says ENOPROTOOPT (before Linux 6.15), -1 when the probe cannot tell (why in
 * err).  The first of ST_HZ_PROBES it accepts is 2 jiffies, so its read-back gives the jiffy
 * (*jiffy_us, *hz; left alone when none is accepted: HZ below 100). */
static int probe_us_option(int fd, int opt, long long *jiffy_us, long long *hz, char *err,
                           size_t n)
{
	static const long long probes[] = ST_HZ_PROBES;
	int has = -1;
	for (size_t k = 0; k < sizeof probes / sizeof probes[0]; k++) {
		if (probe_set_int(fd, IPPROTO_TCP, opt, (int)probes[k]) != 0) {
			if (errno == ENOPROTOOPT)
				return 0;
			if (errno == EINVAL) { /* 1 jiffy: below the kernel's least (2) */
				has = 1;
				continue;
			}
			snprintf(err, n, "setsockopt: %s", strerror(errno));
			return -1;
		}
		long long back;
		if (probe_get_int(fd, IPPROTO_TCP, opt, &back) == 0)
			st_hz_from_readback(probes[k], back, jiffy_us, hz);
		return 1;
	}
	if (has < 0)
		snprintf(err, n, "no probe value tried");
	return has;
}

static void read_us_options(struct host *h)
{
	h->delack_max_us = h->rto_min_us = -1;
	h->jiffy_us = h->hz = 0;
	h->us_probe_err[0] = '\0';
	int fd = probe_socket();
	if (fd < 0) {
		snprintf(h->us_probe_err, sizeof h->us_probe_err, "no probe socket: %s", strerror(errno));
		return;
	}
	long long j = 0, hz = 0;
	h->delack_max_us = probe_us_option(fd, TCP_DELACK_MAX_US, &h->jiffy_us, &h->hz,
	                                   h->us_probe_err, sizeof h->us_probe_err);
	h->rto_min_us = probe_us_option(fd, TCP_RTO_MIN_US, &j, &hz, h->us_probe_err,
	                                sizeof h->us_probe_err);
	if (!h->hz) /* the same jiffy rounds both */
		h->jiffy_us = j, h->hz = hz;
	probe_close(fd);
}

void read_host(struct host *h)
{
	for (size_t i = 0; i < N_SYSCTL; i++)
		if (st_sysctl_str(host_sysctls[i].name, h->val[i], sizeof h->val[i]) != 0)
			h->val[i][0] = '\0';
	h->cap_net_admin = st_cap_effective(ST_CAP_NET_ADMIN);
	if (getrlimit(RLIMIT_NOFILE, &h->nofile) != 0)
		h->nofile.rlim_cur = h->nofile.rlim_max = 0;
	h->page = sysconf(_SC_PAGESIZE);
	read_us_options(h);
}
