/* bpfq: what the kernel says about BPF programs, for the tests (no bpftool here).
 *
 *   bpfq loaded NAME        the ids of the loaded programs named NAME, one a line
 *   bpfq attached CGDIR [setsockopt]  the sock_ops (or setsockopt hook) programs attached to
 *                           cgroup CGDIR: "ID NAME" a line
 *   bpfq attach CGDIR [MARK [NAME [COUNT]]]  load a sock_ops program named "other" or NAME
 *                           (returns 1; with MARK not 0, it sets SO_MARK MARK on each
 *                           accepted connection, which ss -e shows as fwmark) and attach it
 *                           with BPF_PROG_ATTACH + BPF_F_ALLOW_MULTI: it stays after bpfq
 *                           exits; prints its id (COUNT of them: each id)
 *   bpfq detach CGDIR ID    detach program ID from CGDIR (from either hook)
 * Exit status 0, or 1 with the reason on stderr.
 * The bpf(2) ABI is the command's written-out one (cli/host/bpf_abi.h, checked against
 * linux/bpf.h where it is there), so that this builds with musl too. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host/bpf_abi.h"

enum { BPF_PROG_GET_NEXT_ID_ = 11 }; /* (the one command the socktune command does not use) */
enum { CGROUP_SETSOCKOPT_ = 22 };

static long bpf(int cmd, void *a, size_t n)
{
	return syscall(__NR_bpf, cmd, a, n);
}

static int info_of(int fd, struct st_bpf_prog_info *info)
{
	memset(info, 0, sizeof *info);
	struct st_bpf_info_by_fd a = {.bpf_fd = (uint32_t)fd, .info_len = sizeof *info,
	                              .info = (uintptr_t)info};
	return (int)bpf(ST_BPF_OBJ_GET_INFO_BY_FD, &a, sizeof a);
}

static int fd_of(unsigned id)
{
	struct st_bpf_get_id a = {.id = id};
	return (int)bpf(ST_BPF_PROG_GET_FD_BY_ID, &a, sizeof a);
}

static int name_of(unsigned id, char *name, size_t n)
{
	int fd = fd_of(id);
	struct st_bpf_prog_info info;
	if (fd < 0 || info_of(fd, &info) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	snprintf(name, n, "%.*s", (int)sizeof info.name, info.name);
	return 0;
}

static int die(const char *what)
{
	fprintf(stderr, "bpfq: %s: %s\n", what, strerror(errno));
	return 1;
}

#define I(c, d, s, o, i) {.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)}

int main(int argc, char **argv)
{
	char name[32];
	if (argc == 3 && strcmp(argv[1], "loaded") == 0) {
		unsigned id = 0;
		for (;;) {
			struct st_bpf_get_id a = {.id = id}; /* (start_id) */
			if (bpf(BPF_PROG_GET_NEXT_ID_, &a, sizeof a) != 0)
				return errno == ENOENT ? 0 : die("BPF_PROG_GET_NEXT_ID");
			id = a.next_id;
			if (name_of(id, name, sizeof name) == 0 && strcmp(name, argv[2]) == 0)
				printf("%u\n", id);
		}
	}
	if (argc < 3)
		goto usage;
	int cg = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0)
		return die(argv[2]);
	if (strcmp(argv[1], "attached") == 0) {
		unsigned ids[64];
		int hook = argc > 3 && strcmp(argv[3], "setsockopt") == 0 ? CGROUP_SETSOCKOPT_
		                                                           : ST_BPF_CGROUP_SOCK_OPS;
		struct st_bpf_query a = {.target_fd = (uint32_t)cg, .attach_type = (uint32_t)hook,
		                         .prog_ids = (uintptr_t)ids, .prog_cnt = 64};
		if (bpf(ST_BPF_PROG_QUERY, &a, sizeof a) != 0)
			return die("BPF_PROG_QUERY");
		for (unsigned k = 0; k < a.prog_cnt; k++)
			printf("%u %s\n", ids[k], name_of(ids[k], name, sizeof name) == 0 ? name : "?");
		return 0;
	}
	if (strcmp(argv[1], "attach") == 0) {
		int mark = argc > 3 ? atoi(argv[3]) : 0, count = argc > 5 ? atoi(argv[5]) : 1;
		const char *pname = argc > 4 ? argv[4] : "other";
		/* if (op == PASSIVE_ESTABLISHED) bpf_setsockopt(ctx, SOL_SOCKET, SO_MARK, &mark, 4) */
		struct st_bpf_insn prog[] = {
			I(ST_BPF_ALU64 | ST_BPF_MOV | ST_BPF_X, 6, 1, 0, 0),
			I(ST_BPF_LDX | ST_BPF_MEM | ST_BPF_W, 2, 6, ST_SOCK_OPS_OP, 0),
			I(ST_BPF_JMP | ST_BPF_JNE | ST_BPF_K, 2, 0, 8, ST_SOCK_OPS_PASSIVE_ESTABLISHED_CB),
			I(ST_BPF_ST | ST_BPF_MEM | ST_BPF_W, 10, 0, -4, mark),
			I(ST_BPF_ALU64 | ST_BPF_MOV | ST_BPF_X, 1, 6, 0, 0),
			I(ST_BPF_ALU64 | ST_BPF_MOV | ST_BPF_K, 2, 0, 0, 1 /* SOL_SOCKET */),
			I(ST_BPF_ALU64 | ST_BPF_MOV | ST_BPF_K, 3, 0, 0, 36 /* SO_MARK */),
			I(ST_BPF_ALU64 | ST_BPF_MOV | ST_BPF_X, 4, 10, 0, 0),
			I(ST_BPF_ALU64 | ST_BPF_ADD | ST_BPF_K, 4, 0, 0, -4),
			I(ST_BPF_ALU64 | ST_BPF_MOV | ST_BPF_K, 5, 0, 0, 4),
			I(ST_BPF_JMP | ST_BPF_CALL, 0, 0, 0, ST_BPF_FUNC_setsockopt),
			I(ST_BPF_ALU64 | ST_BPF_MOV | ST_BPF_K, 0, 0, 0, 1),
			I(ST_BPF_JMP | ST_BPF_EXIT, 0, 0, 0, 0),
		};
		struct st_bpf_prog_load l = {.prog_type = ST_BPF_PROG_TYPE_SOCK_OPS,
		                             .insns = (uintptr_t)(mark ? prog : prog + 11),
		                             .insn_cnt = mark ? 13 : 2, .license = (uintptr_t)"GPL"};
		snprintf(l.prog_name, sizeof l.prog_name, "%s", pname);
		for (int k = 0; k < count; k++) {
			int fd = (int)bpf(ST_BPF_PROG_LOAD, &l, sizeof l);
			if (fd < 0)
				return die("BPF_PROG_LOAD");
			struct st_bpf_prog_attach a = {.target_fd = (uint32_t)cg, .attach_bpf_fd = (uint32_t)fd,
			                               .attach_type = ST_BPF_CGROUP_SOCK_OPS,
			                               .attach_flags = ST_BPF_F_ALLOW_MULTI};
			if (bpf(ST_BPF_PROG_ATTACH, &a, sizeof a) != 0)
				return die("BPF_PROG_ATTACH");
			struct st_bpf_prog_info info;
			info_of(fd, &info);
			printf("%u\n", info.id);
			close(fd);
		}
		return 0;
	}
	if (strcmp(argv[1], "detach") == 0 && argc == 4) {
		int fd = fd_of((unsigned)strtoul(argv[3], NULL, 10));
		if (fd < 0)
			return die("BPF_PROG_GET_FD_BY_ID");
		struct st_bpf_prog_attach a = {.target_fd = (uint32_t)cg, .attach_bpf_fd = (uint32_t)fd,
		                               .attach_type = ST_BPF_CGROUP_SOCK_OPS};
		if (bpf(ST_BPF_PROG_DETACH, &a, sizeof a) != 0) {
			a.attach_type = CGROUP_SETSOCKOPT_;
			if (bpf(ST_BPF_PROG_DETACH, &a, sizeof a) != 0)
				return die("BPF_PROG_DETACH");
		}
		return 0;
	}
usage:
	fprintf(stderr, "usage: bpfq loaded NAME | attached CGDIR [setsockopt] | attach CGDIR [MARK [NAME [COUNT]]] "
	        "| detach CGDIR ID\n");
	return 1;
}
