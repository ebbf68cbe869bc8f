/* The part of the kernel's bpf(2) ABI that socktune --cgroup uses, written out (musl has no
 * linux/bpf.h, as cli/netlink.h for netlink): the numbers are the kernel's and never change;
 * where linux/bpf.h is there, bpf.c checks each against it at compile time.  Each attribute
 * struct is the head of union bpf_attr for its command: the kernel takes a shorter one. */
#ifndef SOCKTUNE_BPF_ABI_H
#define SOCKTUNE_BPF_ABI_H

#include <stdint.h>

/* commands */
enum { ST_BPF_MAP_CREATE = 0, ST_BPF_MAP_LOOKUP_ELEM = 1, ST_BPF_PROG_LOAD = 5,
       ST_BPF_PROG_ATTACH = 8, ST_BPF_PROG_DETACH = 9, ST_BPF_PROG_GET_FD_BY_ID = 13,
       ST_BPF_OBJ_GET_INFO_BY_FD = 15, ST_BPF_PROG_QUERY = 16, ST_BPF_BTF_LOAD = 18,
       ST_BPF_LINK_CREATE = 28, ST_BPF_MAP_GET_FD_BY_ID = 14 };
enum { ST_BPF_PROG_TYPE_SOCK_OPS = 13, ST_BPF_CGROUP_SOCK_OPS = 3 };
/* the setsockopt hook (Linux 5.3): a CGROUP_SOCKOPT program at BPF_CGROUP_SETSOCKOPT */
enum { ST_BPF_PROG_TYPE_CGROUP_SOCKOPT = 25, ST_BPF_CGROUP_SETSOCKOPT = 22 };
enum { ST_BPF_MAP_TYPE_ARRAY = 2, ST_BPF_MAP_TYPE_SK_STORAGE = 24 };
enum { ST_BPF_F_NO_PREALLOC = 1, ST_BPF_SK_STORAGE_GET_F_CREATE = 1 };
enum { ST_BPF_FUNC_map_lookup_elem = 1, ST_BPF_FUNC_setsockopt = 49,
       ST_BPF_FUNC_sk_storage_get = 107 };
/* ld_imm64 with this src_reg: imm is a map's descriptor, the kernel puts the map there */
enum { ST_BPF_PSEUDO_MAP_FD = 1 };
/* the sock_ops callbacks answered (ST_SOCK_OPS_TIMEOUT_INIT, _RWND_INIT: socktune_opts.h) */
enum { ST_SOCK_OPS_TCP_CONNECT_CB = 3, ST_SOCK_OPS_ACTIVE_ESTABLISHED_CB = 4,
       ST_SOCK_OPS_PASSIVE_ESTABLISHED_CB = 5 };

/* instruction classes, sizes, modes and operations */
enum { ST_BPF_LD = 0x00, ST_BPF_LDX = 0x01, ST_BPF_ST = 0x02, ST_BPF_STX = 0x03,
       ST_BPF_ALU = 0x04, ST_BPF_JMP = 0x05, ST_BPF_JMP32 = 0x06, ST_BPF_ALU64 = 0x07 };
enum { ST_BPF_W = 0x00, ST_BPF_B = 0x10, ST_BPF_DW = 0x18, ST_BPF_IMM = 0x00, ST_BPF_MEM = 0x60,
       ST_BPF_ATOMIC = 0xc0 };
enum { ST_BPF_K = 0x00, ST_BPF_X = 0x08, ST_BPF_ADD = 0x00, ST_BPF_AND = 0x50,
       ST_BPF_RSH = 0x70, ST_BPF_MOV = 0xb0, ST_BPF_END = 0xd0, ST_BPF_TO_BE = 0x08 };
enum { ST_BPF_JA = 0x00, ST_BPF_JEQ = 0x10, ST_BPF_JGT = 0x20, ST_BPF_JNE = 0x50,
       ST_BPF_CALL = 0x80, ST_BPF_EXIT = 0x90, ST_BPF_JLT = 0xa0, ST_BPF_JLE = 0xb0 };
/* signed: a jump's compare, a shift that keeps the sign (an int widened to 64 bits) */
enum { ST_BPF_JSGT = 0x60, ST_BPF_JSLT = 0xc0, ST_BPF_LSH = 0x60, ST_BPF_ARSH = 0xc0 };

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
       ST_SOCK_OPS_LOCAL_PORT = 68, ST_SOCK_OPS_IS_FULLSOCK = 72, ST_SOCK_OPS_SK = 184 };

/* struct bpf_sockopt, the setsockopt hook's context: sk (a socket, never NULL there), the
 * app's value (a copy the program may rewrite: [optval, optval_end)), its level, name and
 * length (level, optname, optlen writable) */
enum { ST_SOCKOPT_SK = 0, ST_SOCKOPT_OPTVAL = 8, ST_SOCKOPT_OPTVAL_END = 16,
       ST_SOCKOPT_LEVEL = 24, ST_SOCKOPT_OPTNAME = 28, ST_SOCKOPT_OPTLEN = 32 };

/* Instructions, as the kernel's own macros write them (its uapi headers have none) */
#define ST_INSN(c, d, s, o, i) \
	((struct st_bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
#define ST_MOV_REG(d, s) ST_INSN(ST_BPF_ALU64 | ST_BPF_MOV | ST_BPF_X, d, s, 0, 0)
#define ST_MOV_IMM(d, i) ST_INSN(ST_BPF_ALU64 | ST_BPF_MOV | ST_BPF_K, d, 0, 0, i)
#define ST_ADD_IMM(d, i) ST_INSN(ST_BPF_ALU64 | ST_BPF_ADD | ST_BPF_K, d, 0, 0, i)
#define ST_LDX(size, d, s, o) ST_INSN(ST_BPF_LDX | ST_BPF_MEM | (size), d, s, o, 0)
#define ST_STX(size, d, s, o) ST_INSN(ST_BPF_STX | ST_BPF_MEM | (size), d, s, o, 0)
#define ST_ST(size, d, o, i) ST_INSN(ST_BPF_ST | ST_BPF_MEM | (size), d, 0, o, i)
/* *(u64 *)(d + o) += s, atomically (Linux 5.12; its older name: BPF_XADD) */
#define ST_ATOMIC_ADD_DW(d, s, o) ST_INSN(ST_BPF_STX | ST_BPF_ATOMIC | ST_BPF_DW, d, s, o, ST_BPF_ADD)
#define ST_CALL(f) ST_INSN(ST_BPF_JMP | ST_BPF_CALL, 0, 0, 0, f)
#define ST_EXIT() ST_INSN(ST_BPF_JMP | ST_BPF_EXIT, 0, 0, 0, 0)

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

/* BPF_MAP_CREATE's head, to the BTF type of the value */
struct st_bpf_map_create {
	uint32_t map_type, key_size, value_size, max_entries, map_flags, inner_map_fd, numa_node;
	char map_name[ST_BPF_OBJ_NAME_LEN];
	uint32_t map_ifindex, btf_fd, btf_key_type_id, btf_value_type_id;
};

/* BPF_MAP_*_ELEM */
struct st_bpf_map_elem {
	uint32_t map_fd, pad;
	uint64_t key, value, flags;
};

/* BPF_BTF_LOAD */
struct st_bpf_btf_load {
	uint64_t btf, btf_log_buf;
	uint32_t btf_size, btf_log_size, btf_log_level;
};

/* BTF (linux/btf.h): the header, then the types, then their names */
enum { ST_BTF_MAGIC = 0xeb9f, ST_BTF_KIND_INT = 1, ST_BTF_INT_SIGNED = 1 };
struct st_btf_header {
	uint16_t magic;
	uint8_t version, flags;
	uint32_t hdr_len, type_off, type_len, str_off, str_len;
};
struct st_btf_type {
	uint32_t name_off, info, size;
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

/* the head of struct bpf_map_info, to its name */
struct st_bpf_map_info {
	uint32_t type, id, key_size, value_size, max_entries, map_flags;
	char name[ST_BPF_OBJ_NAME_LEN];
};

#endif
