/* check's word on the cgroup mode: can this host run socktune --cgroup and attach --cgroup?
 * Three things decide, each asked of the kernel: cgroup v2 mounted (where), the privilege
 * (CAP_BPF and CAP_NET_ADMIN, or CAP_SYS_ADMIN), and a SOCK_OPS program loaded (a
 * two-instruction one, closed at once: nothing is attached anywhere). */
#include <stdio.h>
#include <string.h>

#include "socktune_host.h"
#include "host/bpfhost.h"
#include "check/checksay.h"
#include "check/check.h"

enum { CAP_SYS_ADMIN_NR = 21, CAP_BPF_NR = 39 }; /* linux/capability.h */

void cgmode_read(const char *path, struct cgmode *m)
{
	char err[320] = "";
	memset(m, 0, sizeof *m);
	m->loads = -1;
	if (path) {
		if (cg_is_v2(path))
			snprintf(m->mount, sizeof m->mount, "%s", path);
		else
			snprintf(err, sizeof err, "%s is no cgroup v2 directory", path);
	} else if (cg_v2_mount(m->mount, sizeof m->mount, err, sizeof err) != 0) {
		m->mount[0] = '\0';
	}
	int admin = st_cap_effective(CAP_SYS_ADMIN_NR), bpf = st_cap_effective(CAP_BPF_NR),
	    net = st_cap_effective(ST_CAP_NET_ADMIN);
	m->privileged = admin == 1 || (bpf == 1 && net == 1) ? 1
	              : admin < 0 || bpf < 0 || net < 0  ? -1 : 0;
	if (!m->mount[0]) {
		snprintf(m->why, sizeof m->why, "no cgroup v2: %.300s", err);
		if (path)
			snprintf(m->fix, sizeof m->fix, "give a directory under the cgroup2 mount (grep "
			         "cgroup2 /proc/self/mountinfo)");
		else
			snprintf(m->fix, sizeof m->fix, "mount -t cgroup2 none /sys/fs/cgroup");
		return;
	}
	char lerr[256];
	if (cg_sockops_loadable(lerr, sizeof lerr) != 0) {
		m->loads = 0;
		snprintf(m->why, sizeof m->why, "%s", lerr);
		if (m->privileged != 1)
			snprintf(m->fix, sizeof m->fix, "run as root, or grant the program "
			         "cap_bpf,cap_net_admin (setcap, or systemd's AmbientCapabilities=)");
		return;
	}
	m->loads = 1;
	m->usable = 1;
	snprintf(m->why, sizeof m->why, "cgroup v2 at %.200s; the kernel loads a sock_ops program "
	         "for this caller", m->mount);
}

void cgmode_say(struct say *s, const struct cgmode *m)
{
	say_text(s, "\ncgroup mode (socktune --cgroup, attach --cgroup): ");
	say_obj(s, K_CHK_CGROUP_MODE);
	say_bool(s, K_CHK_USABLE, "%s\n", "usable here", "not usable here", m->usable);
	say_name(s, K_CHK_CGROUP2_MOUNT, "  cgroup v2 = %s\n", "none", m->mount);
	say_bool3(s, K_CHK_PRIVILEGED, "  CAP_BPF+CAP_NET_ADMIN or CAP_SYS_ADMIN = %s\n", "yes", "no",
	          "unknown", m->privileged);
	say_bool3(s, K_CHK_SOCKOPS_LOADS, "  sock_ops program loads = %s\n", "yes", "no", "not tried",
	          m->loads);
	say_str(s, K_CHK_REASON, "  %s", m->why);
	if (m->fix[0]) {
		say_arr(s, K_FIX);
		say_str(s, 0, ": %s", m->fix);
		say_close(s);
	}
	say_text(s, "\n");
	say_close(s);
}
