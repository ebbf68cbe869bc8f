/* What socktune check reads of this host: the sysctls that decide what an option becomes,
 * CAP_NET_ADMIN, RLIMIT_NOFILE and the page size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "socktune_host.h"
#include "cli.h"

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

static int cap_net_admin(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return -1;
	char line[256];
	int r = -1;
	for (int i = 0; i < 200 && fgets(line, sizeof line, f); i++) {
		unsigned long long caps;
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			r = (int)((caps >> 12) & 1); /* CAP_NET_ADMIN */
			break;
		}
	}
	fclose(f);
	return r;
}

void read_host(struct host *h)
{
	for (size_t i = 0; i < N_SYSCTL; i++)
		if (st_sysctl_str(host_sysctls[i].name, h->val[i], sizeof h->val[i]) != 0)
			h->val[i][0] = '\0';
	h->cap_net_admin = cap_net_admin();
	if (getrlimit(RLIMIT_NOFILE, &h->nofile) != 0)
		h->nofile.rlim_cur = h->nofile.rlim_max = 0;
	h->page = sysconf(_SC_PAGESIZE);
}
