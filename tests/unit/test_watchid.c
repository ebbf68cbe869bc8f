/* Who a listener serves, from its holder's cgroup path (cli/watch/watchid.c): a systemd
 * unit, a container (docker, containerd, cri-o, podman; systemd's and cgroupfs's layouts)
 * and a Kubernetes pod (its uid, dashes where a slice name has underscores); nothing from
 * a path that names none (a user session, the root). */
#include <string.h>

#include "watch/watchid.c"
#include "host/holders.c"
#include "host/grow.c"
#include "host/pidinfo.c"
#include "unit.h"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "3f5c2a1e-7b9d-4c8e-a1f2-0123456789ab"
#define LONG247 ID64 ID64 ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456"
#define UID_ "3f5c2a1e_7b9d_4c8e_a1f2_0123456789ab"

static const struct {
	const char *path, *unit, *container, *pod;
} cases[] = {
	{"/system.slice/nginx.service", "nginx.service", "", ""},
	{"/system.slice/php-fpm.service/worker", "php-fpm.service", "", ""},
	{"/system.slice/docker-" ID64 ".scope", "", ID64, ""},
	{"/docker/" ID64, "", ID64, ""},
	{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	 ".slice/cri-containerd-" ID64 ".scope", "", ID64, UID},
	{"/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" ID64 ".scope", "", ID64, UID},
	{"/kubepods/burstable/pod" UID "/" ID64, "", ID64, UID},
	{"/machine.slice/libpod-" ID64 ".scope/container", "", ID64, ""},
	{"/user.slice/user-1000.slice/session-2.scope", "", "", ""},
	{"/", "", "", ""},
	{"", "", "", ""},
	{"/system.slice/docker-" ID64 "0.scope", "", "", ""},      /* 65 hex: no id */
	{"/kubepods/burstable/podnotauid", "", "", ""},
	{"/system.slice/.service", "", "", ""},
	/* systemd's longest unit name, 255 bytes, kept whole (a 128-byte field emptied it) */
	{"/system.slice/" LONG247 ".service", LONG247 ".service", "", ""},
	{"/system.slice/" LONG247 "x.service", "", "", ""}, /* 256: not a unit name */
};

int main(void)
{
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		struct watch_ident id;
		memset(&id, 0x55, sizeof id);
		watch_ident_from_cgroup(cases[k].path, &id);
		if (strcmp(id.unit, cases[k].unit) != 0 || strcmp(id.container, cases[k].container) != 0 ||
		    strcmp(id.pod, cases[k].pod) != 0)
			CASE_FAIL("%s: unit '%s' container '%s' pod '%s'", cases[k].path, id.unit,
			          id.container, id.pod);
	}
	end_group("watch.ident_from_cgroup");

	/* a cgroup target holds its own processes and those of the cgroups below it, never a
	 * sibling whose name it begins */
	static const struct {
		const char *own, *target;
		int within;
	} in[] = {
		{"/system.slice/nginx.service", "/system.slice/nginx.service", 1},
		{"/system.slice/nginx.service/worker", "/system.slice/nginx.service", 1},
		{"/system.slice/nginx.service", "/system.slice/nginx.service/", 1},
		{"/system.slice/nginx.service", "/system.slice", 1},
		{"/system.slice/nginx.service", "/", 1},
		{"/", "/", 1},
		{"/system.slice/nginx.service2", "/system.slice/nginx.service", 0},
		{"/system.slice", "/system.slice/nginx.service", 0},
		{"/user.slice/nginx.service", "/system.slice/nginx.service", 0},
		{"/", "/system.slice", 0},
	};
	for (size_t k = 0; k < sizeof in / sizeof *in; k++)
		if (watch_cgroup_within(in[k].own, in[k].target) != in[k].within)
			CASE_FAIL("%s within %s: %d, want %d", in[k].own, in[k].target,
			          watch_cgroup_within(in[k].own, in[k].target), in[k].within);
	end_group("watch.cgroup_within");
	return failures != 0;
}
