/* The part of the kernel's bpf(2) ABI that socktune --cgroup uses, written out (musl has no
 * linux/bpf.h, as cli/netlink.h for netlink): the numbers are the kernel's and never change;
 * where linux/bpf.h is there, bpf.c checks each against it at compile time.  Each attribute
 * struct is the head of union bpf_attr for its command: the kernel takes a shorter one. */
#ifndef SOCKTUNE_BPF_ABI_H
#define SOCKTUNE_BPF_ABI_H

#include <stdint.h>

/* commands */
enum { ST_BPF_PROG_LOAD = 5, ST_BPF_PROG_ATTACH = 8, ST_BPF_PROG_DETACH = 9,
       ST_BPF_PROG_GET_FD_BY_ID = 13, ST_BPF_OBJ_GET_INFO_BY_FD = 15,
       ST_BPF_PROG_QUERY = 16, ST_BPF_LINK_CREATE = 28 };
enum { ST_BPF_PROG_TYPE_SOCK_OPS = 13, ST_BPF_CGROUP_SOCK_OPS = 3 };
enum { ST_BPF_FUNC_setsockopt = 49 };
/* the sock_ops callbacks answered (ST_SOCK_OPS_TIMEOUT_INIT, _RWND_INIT: socktune_opts.h) */
enum { ST_SOCK_OPS_TCP_CONNECT_CB = 3, ST_SOCK_OPS_ACTIVE_ESTABLISHED_CB = 4,
       ST_SOCK_OPS_PASSIVE_ESTABLISHED_CB = 5 };

/* instruction classes, sizes, modes and operations */
enum { ST_BPF_LD = 0x00, ST_BPF_LDX = 0x01, ST_BPF_ST = 0x02, ST_BPF_STX = 0x03,
       ST_BPF_ALU = 0x04, ST_BPF_JMP = 0x05, ST_BPF_JMP32 = 0x06, ST_BPF_ALU64 = 0x07 };
enum { ST_BPF_W = 0x00, ST_BPF_DW = 0x18, ST_BPF_IMM = 0x00, ST_BPF_MEM = 0x60 };
enum { ST_BPF_K = 0x00, ST_BPF_X = 0x08, ST_BPF_ADD = 0x00, ST_BPF_AND = 0x50,
       ST_BPF_RSH = 0x70, ST_BPF_MOV = 0xb0, ST_BPF_END = 0xd0, ST_BPF_TO_BE = 0x08 };
enum { ST_BPF_JA = 0x00, ST_BPF_JEQ = 0x10, ST_BPF_JGT = 0x20, ST_BPF_JNE = 0x50,
       ST_BPF_CALL = 0x80, ST_BPF_EXIT = 0x90, ST_BPF_JLT = 0xa0 };

struct st_bpf_insn {
	uint8_t code;
	uint8_t dst_reg : 4, src_reg : 4;
	int16_t off;
	int32_t imm;
};

/* struct bpf_sock_ops: the fields the program reads or writes, by offset.  The addresses are
 * in network order (the bytes as on the wire, loaded as a host word); local_port is in host
 * order, remote_port in network order in the upper 16 bits (on a little-endian host: the
 * kernel loads the 16-bit port and shifts it up; on a big-endian one it is the low 16). */
enum { ST_SOCK_OPS_OP = 0, ST_SOCK_OPS_REPLY = 4, ST_SOCK_OPS_FAMILY = 20,
       ST_SOCK_OPS_REMOTE_IP4 = 24, ST_SOCK_OPS_REMOTE_IP6 = 32, ST_SOCK_OPS_REMOTE_PORT = 64,
       ST_SOCK_OPS_LOCAL_PORT = 68, ST_SOCK_OPS_IS_FULLSOCK = 72 };

#define ST_BPF_OBJ_NAME_LEN 16

struct st_bpf_prog_load {
	uint32_t prog_type, insn_cnt;
	uint64_t insns, license;
	uint32_t log_level, log_size;
	uint64_t log_buf;
	uint32_t kern_version, prog_flags;
	char prog_name[ST_BPF_OBJ_NAME_LEN];
	uint32_t prog_ifindex, expected_attach_type;
};

/* BPF_PROG_ATTACH's flag: other programs may be attached to the cgroup beside this one */
enum { ST_BPF_F_ALLOW_MULTI = 2 };

struct st_bpf_prog_attach {
	uint32_t target_fd, attach_bpf_fd, attach_type, attach_flags, replace_bpf_fd;
};

struct st_bpf_link_create {
	uint32_t prog_fd, target_fd, attach_type, flags;
};

struct st_bpf_query {
	uint32_t target_fd, attach_type, query_flags, attach_flags;
	uint64_t prog_ids;
	uint32_t prog_cnt;
	uint32_t pad;
};

struct st_bpf_get_id {
	uint32_t id, next_id, open_flags;
};

struct st_bpf_info_by_fd {
	uint32_t bpf_fd, info_len;
	uint64_t info;
};

/* the head of struct bpf_prog_info, to its name */
struct st_bpf_prog_info {
	uint32_t type, id;
	uint8_t tag[8];
	uint32_t jited_prog_len, xlated_prog_len;
	uint64_t jited_prog_insns, xlated_prog_insns, load_time;
	uint32_t created_by_uid, nr_map_ids;
	uint64_t map_ids;
	char name[ST_BPF_OBJ_NAME_LEN];
};

#endif
