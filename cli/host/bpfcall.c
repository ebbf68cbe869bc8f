/* The bpf(2) calls of the cgroup mode besides the load (bpf.c): attach (a link for
 * socktune --cgroup, BPF_PROG_ATTACH for attach --cgroup), detach, and what the kernel says
 * of the programs on a cgroup (their ids and names: ours is told by its name). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bpf_abi.h"
#include "bpfhost.h"

long cg_bpf(int cmd, void *attr, size_t size)
{
	return syscall(__NR_bpf, cmd, attr, size);
}

int cg_link_create(int prog_fd, int cgroup_fd, char *err, size_t n)
{
	struct st_bpf_link_create a = {.prog_fd = (uint32_t)prog_fd, .target_fd = (uint32_t)cgroup_fd,
	                               .attach_type = ST_BPF_CGROUP_SOCK_OPS};
	int fd = (int)cg_bpf(ST_BPF_LINK_CREATE, &a, sizeof a);
	if (fd >= 0)
		return fd;
	int e = errno;
	if (e == EPERM)
		snprintf(err, n, "attaching to the cgroup: %s (another party's program is attached "
		         "there without BPF_F_ALLOW_MULTI, or a capability is missing: CAP_BPF and "
		         "CAP_NET_ADMIN)", strerror(e));
	else if (e == EINVAL)
		snprintf(err, n, "attaching to the cgroup: %s (BPF links for cgroups: Linux 5.7)",
		         strerror(e));
	else
		snprintf(err, n, "attaching to the cgroup: %s", strerror(e));
	return -1;
}

int cg_prog_attach(int prog_fd, int cgroup_fd, char *err, size_t n)
{
	struct st_bpf_prog_attach a = {.target_fd = (uint32_t)cgroup_fd,
	                               .attach_bpf_fd = (uint32_t)prog_fd,
	                               .attach_type = ST_BPF_CGROUP_SOCK_OPS,
	                               .attach_flags = ST_BPF_F_ALLOW_MULTI};
	if (cg_bpf(ST_BPF_PROG_ATTACH, &a, sizeof a) == 0)
		return 0;
	int e = errno;
	if (e == EPERM)
		snprintf(err, n, "attaching to the cgroup: %s (another party's program is attached "
		         "there without BPF_F_ALLOW_MULTI, which allows no other, or a capability is "
		         "missing: CAP_BPF and CAP_NET_ADMIN)", strerror(e));
	else
		snprintf(err, n, "attaching to the cgroup: %s", strerror(e));
	return -1;
}

int cg_prog_detach(unsigned id, int cgroup_fd)
{
	struct st_bpf_get_id g = {.id = id};
	int fd = (int)cg_bpf(ST_BPF_PROG_GET_FD_BY_ID, &g, sizeof g);
	if (fd < 0)
		return -1;
	struct st_bpf_prog_attach a = {.target_fd = (uint32_t)cgroup_fd, .attach_bpf_fd = (uint32_t)fd,
	                               .attach_type = ST_BPF_CGROUP_SOCK_OPS};
	int r = (int)cg_bpf(ST_BPF_PROG_DETACH, &a, sizeof a);
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

int cg_query(int cgroup_fd, unsigned *ids, int max)
{
	struct st_bpf_query a = {.target_fd = (uint32_t)cgroup_fd,
	                         .attach_type = ST_BPF_CGROUP_SOCK_OPS,
	                         .prog_ids = (uintptr_t)ids, .prog_cnt = (uint32_t)max};
	if (cg_bpf(ST_BPF_PROG_QUERY, &a, sizeof a) != 0)
		return -1;
	return (int)a.prog_cnt;
}

static int prog_info(int fd, struct st_bpf_prog_info *info)
{
	memset(info, 0, sizeof *info);
	struct st_bpf_info_by_fd a = {.bpf_fd = (uint32_t)fd, .info_len = sizeof *info,
	                              .info = (uintptr_t)info};
	return (int)cg_bpf(ST_BPF_OBJ_GET_INFO_BY_FD, &a, sizeof a);
}

unsigned cg_prog_id(int prog_fd)
{
	struct st_bpf_prog_info info;
	return prog_info(prog_fd, &info) == 0 ? info.id : 0;
}

int cg_prog_name(unsigned id, char *name, size_t n)
{
	struct st_bpf_get_id a = {.id = id};
	int fd = (int)cg_bpf(ST_BPF_PROG_GET_FD_BY_ID, &a, sizeof a);
	if (fd < 0)
		return -1;
	struct st_bpf_prog_info info;
	int r = prog_info(fd, &info);
	close(fd);
	if (r == 0)
		snprintf(name, n, "%.*s", (int)sizeof info.name, info.name);
	return r;
}
