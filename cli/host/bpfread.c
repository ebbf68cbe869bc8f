/* What the kernel says of sock_ops programs, for check and doctor: whether it loads one here
 * at all, and what a program of ours that is attached somewhere sets.
 *
 * Ours is read off the instructions the kernel holds (BPF_OBJ_GET_INFO_BY_FD, translated:
 * after the verifier, which rewrites the context's loads and stores and the helper's address
 * but leaves the rest as cli/cgroup/bpf.c wrote it).  The generator's two patterns are found
 * there again:
 *   an option   *(u32 *)(r10 - 8) = value (a name: two 64-bit immediates stored at r10 - 16)
 *               r1 = r6; r2 = level; r3 = optname; r4 = r10; r4 += -off; r5 = len; call
 *   a reply     if r7 != callback goto next; ... r2 = value; *(u32 *)(r6 + reply) = r2
 * Nothing else is guessed: a program not of that shape sets what is found, and nothing more. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_opts.h"
#include "host/bpf_abi.h"
#include "host/bpfhost.h"
#include "host/owned.h"

#define MAX_XLATED 4096

int cg_sockops_loadable(char *err, size_t n)
{
	static const struct st_bpf_insn ret1[] = {
		{.code = ST_BPF_ALU64 | ST_BPF_MOV | ST_BPF_K, .dst_reg = 0, .imm = 1},
		{.code = ST_BPF_JMP | ST_BPF_EXIT},
	};
	struct st_bpf_prog_load a = {
		.prog_type = ST_BPF_PROG_TYPE_SOCK_OPS,
		.expected_attach_type = ST_BPF_CGROUP_SOCK_OPS,
		.insns = (uintptr_t)ret1,
		.insn_cnt = 2,
		.license = (uintptr_t)"GPL",
	};
	memcpy(a.prog_name, "socktune_check", sizeof "socktune_check");
	int fd = (int)cg_bpf(ST_BPF_PROG_LOAD, &a, sizeof a);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	int e = errno;
	if (e == ENOSYS)
		snprintf(err, n, "this kernel has no bpf(2) (CONFIG_BPF_SYSCALL)");
	else if (e == EPERM || e == EACCES)
		snprintf(err, n, "loading a SOCK_OPS program: %s (it needs CAP_BPF and CAP_NET_ADMIN, "
		         "or CAP_SYS_ADMIN)", strerror(e));
	else if (e == EINVAL)
		snprintf(err, n, "loading a SOCK_OPS program: %s (a kernel without sock_ops: "
		         "CONFIG_CGROUP_BPF, Linux 4.13)", strerror(e));
	else
		snprintf(err, n, "loading a SOCK_OPS program: %s", strerror(e));
	errno = e;
	return -1;
}

static int is(const struct st_bpf_insn *i, int code, int dst, int src)
{
	return i->code == code && i->dst_reg == dst && i->src_reg == src;
}

#define MOV_K (ST_BPF_ALU64 | ST_BPF_MOV | ST_BPF_K)
#define MOV_X (ST_BPF_ALU64 | ST_BPF_MOV | ST_BPF_X)
#define ADD_K (ST_BPF_ALU64 | ST_BPF_ADD | ST_BPF_K)
#define CALL (ST_BPF_JMP | ST_BPF_CALL)
#define ST_W (ST_BPF_ST | ST_BPF_MEM | ST_BPF_W)
#define STX_W (ST_BPF_STX | ST_BPF_MEM | ST_BPF_W)
#define STX_DW (ST_BPF_STX | ST_BPF_MEM | ST_BPF_DW)
#define LD_DW (ST_BPF_LD | ST_BPF_DW | ST_BPF_IMM)
#define JNE_K (ST_BPF_JMP | ST_BPF_JNE | ST_BPF_K)

/* The option bpf_setsockopt(level, optname) sets, or -1. */
static int option_of(int level, int optname)
{
	for (int i = 0; i < ST_O_COUNT; i++) {
		const struct st_sockopt *o = &st_sockopts[i];
		if (o->sockops != ST_SOCKOPS_SET)
			continue;
		if ((o->bpf_level == level && o->bpf_optname == optname) ||
		    (o->label6 && o->level6 == level && o->optname6 == optname))
			return i;
	}
	return -1;
}

static void decode(const struct st_bpf_insn *v, int n, long long hz, struct cg_seen *s)
{
	for (int k = 2; k + 5 < n; k++) {
		/* r1 = r6; r2 = level; r3 = optname; r4 = r10; r4 += off; r5 = len; call */
		if (!is(&v[k - 1], MOV_X, 1, 6) || !is(&v[k], MOV_K, 2, 0) || !is(&v[k + 1], MOV_K, 3, 0) ||
		    !is(&v[k + 2], MOV_X, 4, 10) || !is(&v[k + 3], ADD_K, 4, 0) ||
		    !is(&v[k + 4], MOV_K, 5, 0) || v[k + 5].code != CALL)
			continue;
		int i = option_of(v[k].imm, v[k + 1].imm), off = v[k + 3].imm, len = v[k + 4].imm;
		if (i < 0)
			continue;
		if (len == 4 && is(&v[k - 2], ST_W, 10, 0) && v[k - 2].off == off) {
			s->set[i] = 1;
			s->value[i] = (st_sockopts[i].flags & ST_O_UNSIGNED) ? (long long)(uint32_t)v[k - 2].imm
			                                                       : v[k - 2].imm;
		} else if (len == 16 && off == -16 && k >= 7 && is(&v[k - 2], STX_DW, 10, 1) &&
		           is(&v[k - 5], STX_DW, 10, 1) && is(&v[k - 4], LD_DW, 1, 0) &&
		           is(&v[k - 7], LD_DW, 1, 0)) {
			char buf[16];
			uint64_t lo = (uint32_t)v[k - 7].imm | (uint64_t)(uint32_t)v[k - 6].imm << 32;
			uint64_t hi = (uint32_t)v[k - 4].imm | (uint64_t)(uint32_t)v[k - 3].imm << 32;
			memcpy(buf, &lo, 8);
			memcpy(buf + 8, &hi, 8);
			s->set[i] = 1;
			snprintf(s->text[i], sizeof s->text[i], "%.*s", (int)sizeof buf, buf);
		}
	}
	/* the replies: the first constant stored into reply after the callback's compare */
	for (int k = 0; k < n; k++) {
		int op = v[k].imm, i;
		if (!is(&v[k], JNE_K, 7, 0))
			continue;
		if (op == ST_SOCK_OPS_TIMEOUT_INIT)
			i = ST_V_SYN_RTO;
		else if (op == ST_SOCK_OPS_RWND_INIT)
			i = ST_V_INITRWND;
		else
			continue;
		for (int m = k + 1; m + 1 < n && m <= k + 1 + v[k].off; m++) {
			if (!is(&v[m], MOV_K, 2, 0) || !is(&v[m + 1], STX_W, 6, 2))
				continue;
			s->set[i] = 1;
			if (i == ST_V_SYN_RTO) {
				s->syn_rto_jiffies = v[m].imm;
				s->value[i] = hz > 0 ? v[m].imm * 1000000LL / hz : -1;
			} else {
				s->value[i] = v[m].imm;
			}
			break;
		}
	}
}

int cg_prog_look(unsigned id, long long hz, struct cg_seen *s)
{
	static struct st_bpf_insn xlated[MAX_XLATED];
	memset(s, 0, sizeof *s);
	s->id = id;
	struct st_bpf_get_id g = {.id = id};
	int fd = (int)cg_bpf(ST_BPF_PROG_GET_FD_BY_ID, &g, sizeof g);
	if (fd < 0)
		return -1;
	struct st_bpf_prog_info info;
	memset(&info, 0, sizeof info);
	struct st_bpf_info_by_fd a = {.bpf_fd = (uint32_t)fd, .info_len = sizeof info,
	                              .info = (uintptr_t)&info};
	if (cg_bpf(ST_BPF_OBJ_GET_INFO_BY_FD, &a, sizeof a) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	snprintf(s->name, sizeof s->name, "%.*s", (int)sizeof info.name, info.name);
	struct own_rec *recs; /* ours by record (owned.h), never by a name anyone can give */
	int nrecs = own_read_all(&recs);
	const struct own_rec *r = own_find(id, recs, nrecs);
	s->ours = r != NULL;
	if (r)
		snprintf(s->owner, sizeof s->owner, "%s %d%s", strcmp(r->kind, "run") == 0 ?
		         "socktune --cgroup" : "socktune attach --cgroup", r->pid,
		         strcmp(r->kind, "run") == 0 && !own_alive(r) ? " (gone)" : "");
	free(recs);
	uint32_t len = info.xlated_prog_len;
	if (!s->ours) {
		close(fd);
		return 0;
	}
	if (len == 0) {
		snprintf(s->why, sizeof s->why, "the kernel gives a program's instructions only to "
		         "CAP_BPF or CAP_SYS_ADMIN: run doctor as root to see its policy");
	} else if (len > sizeof xlated) {
		snprintf(s->why, sizeof s->why, "%u instructions: more than socktune writes",
		         len / (unsigned)sizeof xlated[0]);
	} else {
		memset(&info, 0, sizeof info);
		info.xlated_prog_len = len;
		info.xlated_prog_insns = (uintptr_t)xlated;
		a.info_len = sizeof info;
		if (cg_bpf(ST_BPF_OBJ_GET_INFO_BY_FD, &a, sizeof a) != 0 || info.xlated_prog_len == 0) {
			snprintf(s->why, sizeof s->why, "its instructions: %s",
			         info.xlated_prog_len == 0 ? "not given" : strerror(errno));
		} else {
			s->readable = 1;
			s->insns = (int)(info.xlated_prog_len / sizeof xlated[0]);
			decode(xlated, s->insns, hz, s);
		}
	}
	close(fd);
	return 0;
}
