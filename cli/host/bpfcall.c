/* The bpf(2) calls of the cgroup mode besides the load (bpf.c): attach (BPF_PROG_ATTACH,
 * BPF_F_ALLOW_MULTI), detach, maps, and what the kernel says of the programs on a cgroup
 * (their ids and names; which are ours: owned.c's records). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host/bpf_abi.h"
#include "host/bpfhost.h"

long cg_bpf(int cmd, void *attr, size_t size)
{
	return syscall(__NR_bpf, cmd, attr, size);
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

/* ---- the setsockopt hook's calls (cli/cgroup/hook.c) ---- */

int cg_attach_type(int prog_fd, int cgroup_fd, int type, char *err, size_t n)
{
	struct st_bpf_prog_attach a = {.target_fd = (uint32_t)cgroup_fd,
	                               .attach_bpf_fd = (uint32_t)prog_fd,
	                               .attach_type = (uint32_t)type,
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
	errno = e;
	return -1;
}

int cg_detach_type(int prog_fd, int cgroup_fd, int type)
{
	struct st_bpf_prog_attach a = {.target_fd = (uint32_t)cgroup_fd,
	                               .attach_bpf_fd = (uint32_t)prog_fd,
	                               .attach_type = (uint32_t)type};
	return (int)cg_bpf(ST_BPF_PROG_DETACH, &a, sizeof a);
}

int cg_map_create(int type, unsigned key_size, unsigned value_size, unsigned max_entries,
                  unsigned flags, int btf_fd, const char *name)
{
	struct st_bpf_map_create a = {.map_type = (uint32_t)type, .key_size = key_size,
	                              .value_size = value_size, .max_entries = max_entries,
	                              .map_flags = flags};
	snprintf(a.map_name, sizeof a.map_name, "%s", name);
	if (btf_fd >= 0) { /* the key and the value: the blob's type 1 */
		a.btf_fd = (uint32_t)btf_fd;
		a.btf_key_type_id = a.btf_value_type_id = 1;
	}
	return (int)cg_bpf(ST_BPF_MAP_CREATE, &a, sizeof a);
}

int cg_map_lookup(int map_fd, const void *key, void *value)
{
	struct st_bpf_map_elem a = {.map_fd = (uint32_t)map_fd, .key = (uintptr_t)key,
	                            .value = (uintptr_t)value};
	return (int)cg_bpf(ST_BPF_MAP_LOOKUP_ELEM, &a, sizeof a);
}

int cg_btf_int(void)
{
	/* one type, INT "int": 4 bytes, signed, 32 bits */
	static const char names[] = "\0int";
	struct {
		struct st_btf_header h;
		struct st_btf_type t;
		uint32_t bits;
		char names[sizeof names];
	} __attribute__((packed)) b = {
		.h = {.magic = ST_BTF_MAGIC, .version = 1, .hdr_len = sizeof b.h,
		      .type_off = 0, .type_len = sizeof b.t + sizeof b.bits,
		      .str_off = sizeof b.t + sizeof b.bits, .str_len = sizeof names},
		.t = {.name_off = 1, .info = (uint32_t)ST_BTF_KIND_INT << 24, .size = 4},
		.bits = (uint32_t)ST_BTF_INT_SIGNED << 24 | 32,
	};
	memcpy(b.names, names, sizeof names);
	struct st_bpf_btf_load a = {.btf = (uintptr_t)&b, .btf_size = sizeof b};
	return (int)cg_bpf(ST_BPF_BTF_LOAD, &a, sizeof a);
}
