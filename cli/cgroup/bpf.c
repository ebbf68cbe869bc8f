/* The policy as a SOCK_OPS program, written here as instructions, and the few bpf(2) calls
 * that load, attach and list it.
 *
 * The kernel runs the program for each TCP socket of the cgroup at points of its life; ours
 * answers four of them:
 *   TIMEOUT_INIT, RWND_INIT   the SYN (SYN-ACK) RTO and the initial receive window: a reply
 *   PASSIVE_ESTABLISHED       an accepted connection: bpf_setsockopt for each option
 *   ACTIVE_ESTABLISHED        an outgoing one (--client): the same, for the client's options
 *   TCP_CONNECT               an outgoing one, before its SYN (--client --syncnt)
 * and returns 1 (0 would tell the kernel the callback failed).  A setsockopt the kernel
 * refuses changes nothing: the probe connection of readback.c finds it. */
#include <errno.h>
#include <stdint.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_opts.h"
#include "host/bpf_abi.h"
#include "cgroup/cgroup.h"

#if defined(__has_include)
#if __has_include(<linux/bpf.h>)
#include <stddef.h>
#include <linux/bpf.h>
#define SAME(ours, theirs) _Static_assert((long)(ours) == (long)(theirs), #ours " is linux/bpf.h's " #theirs)
SAME(ST_TCP_BPF_IW, TCP_BPF_IW);
SAME(ST_TCP_BPF_SNDCWND_CLAMP, TCP_BPF_SNDCWND_CLAMP);
SAME(ST_TCP_BPF_DELACK_MAX, TCP_BPF_DELACK_MAX);
SAME(ST_TCP_BPF_RTO_MIN, TCP_BPF_RTO_MIN);
SAME(ST_SOCK_OPS_TIMEOUT_INIT, BPF_SOCK_OPS_TIMEOUT_INIT);
SAME(ST_SOCK_OPS_RWND_INIT, BPF_SOCK_OPS_RWND_INIT);
SAME(ST_SOCK_OPS_TCP_CONNECT_CB, BPF_SOCK_OPS_TCP_CONNECT_CB);
SAME(ST_SOCK_OPS_ACTIVE_ESTABLISHED_CB, BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB);
SAME(ST_SOCK_OPS_PASSIVE_ESTABLISHED_CB, BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB);
SAME(ST_BPF_PROG_LOAD, BPF_PROG_LOAD);
SAME(ST_BPF_PROG_ATTACH, BPF_PROG_ATTACH);
SAME(ST_BPF_PROG_DETACH, BPF_PROG_DETACH);
SAME(ST_BPF_F_ALLOW_MULTI, BPF_F_ALLOW_MULTI);
SAME(ST_BPF_PROG_GET_FD_BY_ID, BPF_PROG_GET_FD_BY_ID);
SAME(ST_BPF_OBJ_GET_INFO_BY_FD, BPF_OBJ_GET_INFO_BY_FD);
SAME(ST_BPF_PROG_QUERY, BPF_PROG_QUERY);
SAME(ST_BPF_LINK_CREATE, BPF_LINK_CREATE);
SAME(ST_BPF_PROG_TYPE_SOCK_OPS, BPF_PROG_TYPE_SOCK_OPS);
SAME(ST_BPF_CGROUP_SOCK_OPS, BPF_CGROUP_SOCK_OPS);
SAME(ST_BPF_FUNC_setsockopt, BPF_FUNC_setsockopt);
SAME(ST_BPF_LD | ST_BPF_LDX | ST_BPF_ST | ST_BPF_STX | ST_BPF_JMP | ST_BPF_ALU64,
     BPF_LD | BPF_LDX | BPF_ST | BPF_STX | BPF_JMP | BPF_ALU64);
SAME(ST_BPF_DW + ST_BPF_MEM + ST_BPF_X + ST_BPF_MOV, BPF_DW + BPF_MEM + BPF_X + BPF_MOV);
SAME(ST_BPF_JEQ + 2 * ST_BPF_JNE + 3 * ST_BPF_CALL + 4 * ST_BPF_EXIT,
     BPF_JEQ + 2 * BPF_JNE + 3 * BPF_CALL + 4 * BPF_EXIT);
SAME(ST_SOCK_OPS_REPLY, offsetof(struct bpf_sock_ops, reply));
SAME(ST_SOCK_OPS_FAMILY, offsetof(struct bpf_sock_ops, family));
SAME(ST_SOCK_OPS_IS_FULLSOCK, offsetof(struct bpf_sock_ops, is_fullsock));
SAME(ST_SOCK_OPS_REMOTE_IP4, offsetof(struct bpf_sock_ops, remote_ip4));
SAME(ST_SOCK_OPS_REMOTE_IP6, offsetof(struct bpf_sock_ops, remote_ip6));
SAME(ST_SOCK_OPS_REMOTE_PORT, offsetof(struct bpf_sock_ops, remote_port));
SAME(ST_SOCK_OPS_LOCAL_PORT, offsetof(struct bpf_sock_ops, local_port));
SAME(ST_BPF_ALU + ST_BPF_JMP32 + ST_BPF_AND + ST_BPF_RSH + ST_BPF_END + ST_BPF_TO_BE,
     BPF_ALU + BPF_JMP32 + BPF_AND + BPF_RSH + BPF_END + BPF_TO_BE);
SAME(ST_BPF_JGT + 2 * ST_BPF_JLT, BPF_JGT + 2 * BPF_JLT);
SAME(sizeof(struct st_bpf_insn), sizeof(struct bpf_insn));
SAME(offsetof(struct st_bpf_prog_info, name), offsetof(struct bpf_prog_info, name));
SAME(offsetof(struct st_bpf_prog_load, expected_attach_type),
     offsetof(union bpf_attr, expected_attach_type));
SAME(offsetof(struct st_bpf_query, prog_cnt), offsetof(union bpf_attr, query.prog_cnt));
SAME(offsetof(struct st_bpf_prog_attach, replace_bpf_fd), offsetof(union bpf_attr, replace_bpf_fd));
/* the setsockopt hook, its maps and their BTF (hook.c) */
SAME(ST_BPF_MAP_CREATE + 2 * ST_BPF_MAP_LOOKUP_ELEM + 3 * ST_BPF_BTF_LOAD,
     BPF_MAP_CREATE + 2 * BPF_MAP_LOOKUP_ELEM + 3 * BPF_BTF_LOAD);
SAME(ST_BPF_PROG_TYPE_CGROUP_SOCKOPT, BPF_PROG_TYPE_CGROUP_SOCKOPT);
SAME(ST_BPF_CGROUP_SETSOCKOPT, BPF_CGROUP_SETSOCKOPT);
SAME(ST_BPF_MAP_TYPE_ARRAY, BPF_MAP_TYPE_ARRAY);
SAME(ST_BPF_MAP_TYPE_SK_STORAGE, BPF_MAP_TYPE_SK_STORAGE);
SAME(ST_BPF_F_NO_PREALLOC, BPF_F_NO_PREALLOC);
SAME(ST_BPF_SK_STORAGE_GET_F_CREATE, BPF_SK_STORAGE_GET_F_CREATE);
SAME(ST_BPF_FUNC_map_lookup_elem, BPF_FUNC_map_lookup_elem);
SAME(ST_BPF_FUNC_sk_storage_get, BPF_FUNC_sk_storage_get);
SAME(ST_BPF_PSEUDO_MAP_FD, BPF_PSEUDO_MAP_FD);
SAME(ST_BPF_B + 2 * ST_BPF_JLE, BPF_B + 2 * BPF_JLE);
#ifdef BPF_ATOMIC /* (headers before Linux 5.12 call it BPF_XADD, the same 0xc0) */
SAME(ST_BPF_ATOMIC, BPF_ATOMIC);
#endif
SAME(ST_SOCK_OPS_SK, offsetof(struct bpf_sock_ops, sk));
SAME(ST_SOCKOPT_SK, offsetof(struct bpf_sockopt, sk));
SAME(ST_SOCKOPT_OPTVAL, offsetof(struct bpf_sockopt, optval));
SAME(ST_SOCKOPT_OPTVAL_END, offsetof(struct bpf_sockopt, optval_end));
SAME(ST_SOCKOPT_LEVEL, offsetof(struct bpf_sockopt, level));
SAME(ST_SOCKOPT_OPTNAME, offsetof(struct bpf_sockopt, optname));
SAME(ST_SOCKOPT_OPTLEN, offsetof(struct bpf_sockopt, optlen));
SAME(offsetof(struct st_bpf_map_create, map_name), offsetof(union bpf_attr, map_name));
SAME(offsetof(struct st_bpf_map_create, btf_value_type_id), offsetof(union bpf_attr, btf_value_type_id));
SAME(offsetof(struct st_bpf_map_elem, value), offsetof(union bpf_attr, value));
SAME(offsetof(struct st_bpf_map_elem, flags), offsetof(union bpf_attr, flags));
SAME(offsetof(struct st_bpf_btf_load, btf_log_level), offsetof(union bpf_attr, btf_log_level));
SAME(offsetof(struct st_bpf_prog_info, nr_map_ids), offsetof(struct bpf_prog_info, nr_map_ids));
SAME(offsetof(struct st_bpf_prog_info, map_ids), offsetof(struct bpf_prog_info, map_ids));
#if __has_include(<linux/btf.h>)
#include <linux/btf.h>
SAME(ST_BTF_MAGIC + 2 * ST_BTF_KIND_INT + 3 * ST_BTF_INT_SIGNED,
     BTF_MAGIC + 2 * BTF_KIND_INT + 3 * BTF_INT_SIGNED);
SAME(sizeof(struct st_btf_header), sizeof(struct btf_header));
SAME(offsetof(struct st_btf_header, str_len), offsetof(struct btf_header, str_len));
SAME(sizeof(struct st_btf_type), sizeof(struct btf_type));
#endif
#undef SAME
#endif
#endif

static long sys_bpf(int cmd, void *attr, size_t size)
{
	return syscall(__NR_bpf, cmd, attr, size);
}

enum { R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10 }; /* R6: the context; R7: the callback */

#define MAX_PORT_RANGES 64 /* runs of SOCKTUNE_PORTS, two compares each */

/* ---- the instruction writer (cgroup.h), this program's and the hook's (hook.c) ---- */

void cg_emit(struct cg_gen *g, struct st_bpf_insn i)
{
	if (g->n < g->max)
		g->v[g->n] = i;
	else if (!g->over)
		g->over = CG_OVER_INSNS;
	g->n++;
}

int cg_label(struct cg_gen *g)
{
	if (g->nlabels == CG_MAX_LABELS) {
		g->over = g->over ? g->over : CG_OVER_LABELS;
		return 0;
	}
	g->label[g->nlabels] = -1;
	return g->nlabels++;
}

void cg_place(struct cg_gen *g, int l)
{
	g->label[l] = g->n;
}

static void jump_to(struct cg_gen *g, struct st_bpf_insn i, int l)
{
	if (g->njumps == CG_MAX_JUMPS) {
		g->over = g->over ? g->over : CG_OVER_JUMPS;
		return;
	}
	g->jump[g->njumps].at = g->n;
	g->jump[g->njumps++].label = l;
	cg_emit(g, i);
}

void cg_jump(struct cg_gen *g, int op, int reg, int imm, int l)
{
	jump_to(g, ST_INSN(ST_BPF_JMP | op | ST_BPF_K, op == ST_BPF_JA ? 0 : reg, 0, 0, imm), l);
}

/* (the 32-bit compare, Linux 5.1: an address word with its top bit set is not compared as
 * a sign-extended 64-bit immediate) */
void cg_jump32(struct cg_gen *g, int op, int reg, int imm, int l)
{
	jump_to(g, ST_INSN(ST_BPF_JMP32 | op | ST_BPF_K, reg, 0, 0, imm), l);
}

void cg_jump_reg(struct cg_gen *g, int op, int reg, int src, int l)
{
	jump_to(g, ST_INSN(ST_BPF_JMP | op | ST_BPF_X, reg, src, 0, 0), l);
}

int cg_resolve(struct cg_gen *g, const char *what, char *err, size_t n)
{
	/* The tables hold as many labels and jumps as the instructions can use (a jump is an
	 * instruction), so the count is what binds; a table full is said as what it is. */
	if (g->over == CG_OVER_LABELS || g->over == CG_OVER_JUMPS) {
		snprintf(err, n, "%s would need over %d %s (socktune's table of them is full at %d "
		         "instructions): socktune's bug, report it with this line", what,
		         g->over == CG_OVER_LABELS ? CG_MAX_LABELS : CG_MAX_JUMPS,
		         g->over == CG_OVER_LABELS ? "labels" : "jumps", g->n);
		return -1;
	}
	if (g->over) {
		snprintf(err, n, "%s would be over %d instructions (%d): fewer --peer prefixes or "
		         "--ports runs make it shorter", what, g->max, g->n);
		return -1;
	}
	for (int k = 0; k < g->njumps; k++)
		g->v[g->jump[k].at].off = (short)(g->label[g->jump[k].label] - g->jump[k].at - 1);
	return 0;
}

/* bpf_setsockopt(ctx, level, optname, &val, 4) */
static void set_int(struct cg_gen *g, int level, int optname, int val)
{
	cg_emit(g, ST_ST(ST_BPF_W, R10, -8, val));
	cg_emit(g, ST_MOV_REG(R1, R6));
	cg_emit(g, ST_MOV_IMM(R2, level));
	cg_emit(g, ST_MOV_IMM(R3, optname));
	cg_emit(g, ST_MOV_REG(R4, R10));
	cg_emit(g, ST_ADD_IMM(R4, -8));
	cg_emit(g, ST_MOV_IMM(R5, 4));
	cg_emit(g, ST_CALL(ST_BPF_FUNC_setsockopt));
}

/* bpf_setsockopt(ctx, level, optname, name, 16): the name NUL-padded on the stack, 8 bytes
 * at a time (a 64-bit immediate is two instructions) */
static void set_name(struct cg_gen *g, int level, int optname, const char *name)
{
	char buf[16] = {0};
	strncpy(buf, name, sizeof buf - 1);
	for (int half = 0; half < 2; half++) {
		unsigned long long v;
		memcpy(&v, buf + 8 * half, 8);
		cg_emit(g, ST_INSN(ST_BPF_LD | ST_BPF_DW | ST_BPF_IMM, R1, 0, 0, (int)(unsigned)v));
		cg_emit(g, ST_INSN(0, 0, 0, 0, (int)(unsigned)(v >> 32)));
		cg_emit(g, ST_STX(ST_BPF_DW, R10, R1, -16 + 8 * half));
	}
	cg_emit(g, ST_MOV_REG(R1, R6));
	cg_emit(g, ST_MOV_IMM(R2, level));
	cg_emit(g, ST_MOV_IMM(R3, optname));
	cg_emit(g, ST_MOV_REG(R4, R10));
	cg_emit(g, ST_ADD_IMM(R4, -16));
	cg_emit(g, ST_MOV_IMM(R5, 16));
	cg_emit(g, ST_CALL(ST_BPF_FUNC_setsockopt));
}

/* The options of one end (outgoing or accepted), each a setsockopt; IP_TOS is IPV6_TCLASS on
 * an IPv6 socket, chosen by the family the kernel gives the program. */
static void set_options(struct cg_gen *g, const struct st_policy *p, int outgoing)
{
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		long long want;
		const struct st_sockopt *o = &st_sockopts[i];
		if (!st_sockops_sets(p, i, outgoing, &want) || o->sockops != ST_SOCKOPS_SET ||
		    (o->flags & ST_O_CLIENT_ONLY))
			continue;
		if (o->flags & ST_O_NAME) {
			set_name(g, o->bpf_level, o->bpf_optname, st_opt_name(p, i));
		} else if (o->label6) {
			int v4 = cg_label(g), done = cg_label(g);
			cg_emit(g, ST_LDX(ST_BPF_W, R2, R6, ST_SOCK_OPS_FAMILY));
			cg_jump(g, ST_BPF_JNE, R2, AF_INET6, v4);
			set_int(g, o->level6, o->optname6, (int)want);
			cg_jump(g, ST_BPF_JA, 0, 0, done);
			cg_place(g, v4);
			set_int(g, o->bpf_level, o->bpf_optname, (int)want);
			cg_place(g, done);
		} else {
			set_int(g, o->bpf_level, o->bpf_optname, (int)want);
		}
	}
}

/* What the connection's scope is, in the program: the ports (SOCKTUNE_PORTS, the local port
 * of an accepted connection: its listener's; SOCKTUNE_CLIENT_PORTS, the remote port of an
 * outgoing one) and the peers (--peer: the remote address in one of the prefixes; an IPv4
 * prefix matches an IPv4 peer on an IPv6 socket too, ::ffff:a.b.c.d, as a dual-stack
 * listener's).  Out of scope: goto out, the connection left as the kernel made it. */
struct scope {
	const struct st_policy *p;
	const struct cli_peer *peers;
	int npeers;
};

static int ports_of(const struct st_policy *p, int outgoing, const uint64_t **bits)
{
	enum st_var_id id = outgoing ? ST_V_CLIENT_PORTS : ST_V_PORTS;
	*bits = outgoing ? p->client_ports : p->ports;
	return st_has(p, id);
}

/* the port into R2, in host order */
static void load_port(struct cg_gen *g, int outgoing)
{
	if (!outgoing) {
		cg_emit(g, ST_LDX(ST_BPF_W, R2, R6, ST_SOCK_OPS_LOCAL_PORT));
		return;
	}
	cg_emit(g, ST_LDX(ST_BPF_W, R2, R6, ST_SOCK_OPS_REMOTE_PORT));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	cg_emit(g, ST_INSN(ST_BPF_ALU64 | ST_BPF_RSH | ST_BPF_K, R2, 0, 0, 16));
	cg_emit(g, ST_INSN(ST_BPF_ALU | ST_BPF_END | ST_BPF_TO_BE, R2, 0, 0, 16)); /* (a swap here) */
#endif
}

/* if (R2 in bits) fall through, else goto out: a run of ports a compare or two */
static int ports_check(struct cg_gen *g, const uint64_t *bits, int out, char *err, size_t n)
{
	int in = cg_label(g), runs = 0;
	for (unsigned lo = 0; lo < 65536; lo++) {
		if (!st_port_in(bits, lo))
			continue;
		unsigned hi = lo;
		while (hi + 1 < 65536 && st_port_in(bits, hi + 1))
			hi++;
		if (++runs > MAX_PORT_RANGES) {
			snprintf(err, n, "the ports are %d runs or more (8000-8099 is one): the program "
			         "compares at most %d; write fewer, wider ranges", runs, MAX_PORT_RANGES);
			return -1;
		}
		if (lo == hi) {
			cg_jump(g, ST_BPF_JEQ, R2, (int)lo, in);
		} else {
			int next = cg_label(g);
			cg_jump(g, ST_BPF_JLT, R2, (int)lo, next);
			cg_jump(g, ST_BPF_JGT, R2, (int)hi, next);
			cg_jump(g, ST_BPF_JA, 0, 0, in);
			cg_place(g, next);
		}
		lo = hi;
	}
	cg_jump(g, ST_BPF_JA, 0, 0, out);
	cg_place(g, in);
	return 0;
}

/* the 32-bit word w of a prefix: its address bits and its mask, as the program loads them */
static void prefix_word(const struct cli_peer *pr, int w, uint32_t *net, uint32_t *mask)
{
	unsigned char m[4] = {0};
	for (int b = 0; b < 32; b++)
		if (32 * w + b < pr->len)
			m[b / 8] |= (unsigned char)(0x80 >> (b % 8));
	memcpy(mask, m, 4);
	memcpy(net, pr->addr + 4 * w, 4);
	*net &= *mask;
}

/* R2 = the word at off; if ((R2 & mask) != net) goto miss */
static void word_check(struct cg_gen *g, int off, uint32_t net, uint32_t mask, int miss)
{
	cg_emit(g, ST_LDX(ST_BPF_W, R2, R6, off));
	if (mask != 0xffffffffu)
		cg_emit(g, ST_INSN(ST_BPF_ALU | ST_BPF_AND | ST_BPF_K, R2, 0, 0, (int)mask));
	cg_jump32(g, ST_BPF_JNE, R2, (int)net, miss);
}

static void peers_check(struct cg_gen *g, const struct cli_peer *peers, int npeers, int out)
{
	int in = cg_label(g);
	uint32_t ffff;
	memcpy(&ffff, (const unsigned char[4]){0, 0, 0xff, 0xff}, 4);
	for (int k = 0; k < npeers; k++) {
		const struct cli_peer *pr = &peers[k];
		int miss = cg_label(g);
		uint32_t net, mask;
		if (pr->family == AF_INET) {
			int v6 = cg_label(g), cmp = cg_label(g);
			prefix_word(pr, 0, &net, &mask);
			cg_emit(g, ST_LDX(ST_BPF_W, R2, R6, ST_SOCK_OPS_FAMILY));
			cg_jump(g, ST_BPF_JNE, R2, AF_INET, v6);
			cg_emit(g, ST_LDX(ST_BPF_W, R3, R6, ST_SOCK_OPS_REMOTE_IP4));
			cg_jump(g, ST_BPF_JA, 0, 0, cmp);
			cg_place(g, v6); /* ::ffff:a.b.c.d */
			cg_jump(g, ST_BPF_JNE, R2, AF_INET6, miss);
			word_check(g, ST_SOCK_OPS_REMOTE_IP6, 0, 0xffffffffu, miss);
			word_check(g, ST_SOCK_OPS_REMOTE_IP6 + 4, 0, 0xffffffffu, miss);
			word_check(g, ST_SOCK_OPS_REMOTE_IP6 + 8, ffff, 0xffffffffu, miss);
			cg_emit(g, ST_LDX(ST_BPF_W, R3, R6, ST_SOCK_OPS_REMOTE_IP6 + 12));
			cg_place(g, cmp);
			if (mask != 0xffffffffu)
				cg_emit(g, ST_INSN(ST_BPF_ALU | ST_BPF_AND | ST_BPF_K, R3, 0, 0, (int)mask));
			cg_jump32(g, ST_BPF_JNE, R3, (int)net, miss);
		} else {
			cg_emit(g, ST_LDX(ST_BPF_W, R2, R6, ST_SOCK_OPS_FAMILY));
			cg_jump(g, ST_BPF_JNE, R2, AF_INET6, miss);
			for (int w = 0; w < 4 && 32 * w < pr->len; w++) {
				prefix_word(pr, w, &net, &mask);
				word_check(g, ST_SOCK_OPS_REMOTE_IP6 + 4 * w, net, mask, miss);
			}
		}
		cg_jump(g, ST_BPF_JA, 0, 0, in);
		cg_place(g, miss);
	}
	cg_jump(g, ST_BPF_JA, 0, 0, out);
	cg_place(g, in);
}

/* Out of the scope of sc for that end: goto out. */
static int in_scope(struct cg_gen *g, const struct scope *sc, int outgoing, int out, char *err,
                    size_t n)
{
	const uint64_t *bits;
	if (ports_of(sc->p, outgoing, &bits)) {
		load_port(g, outgoing);
		if (ports_check(g, bits, out, err, n) != 0)
			return -1;
	}
	if (sc->npeers)
		peers_check(g, sc->peers, sc->npeers, out);
	return 0;
}

/* A reply to callback op: value, for accepted connections (a request socket: no full socket
 * yet) and, with client, outgoing ones, each in its scope. */
static int reply(struct cg_gen *g, const struct scope *sc, int op, int value, int client, int out,
                 char *err, size_t n)
{
	int next = cg_label(g), active = cg_label(g);
	cg_jump(g, ST_BPF_JNE, R7, op, next);
	cg_emit(g, ST_LDX(ST_BPF_W, R2, R6, ST_SOCK_OPS_IS_FULLSOCK));
	cg_jump(g, ST_BPF_JNE, R2, 0, client ? active : out);
	for (int outgoing = 0; outgoing <= client; outgoing++) {
		if (outgoing)
			cg_place(g, active);
		if (in_scope(g, sc, outgoing, out, err, n) != 0)
			return -1;
		cg_emit(g, ST_MOV_IMM(R2, value));
		cg_emit(g, ST_STX(ST_BPF_W, R6, R2, ST_SOCK_OPS_REPLY));
		cg_jump(g, ST_BPF_JA, 0, 0, out);
	}
	if (!client)
		cg_place(g, active); /* (unused) */
	cg_place(g, next);
	return 0;
}

/* The socket marked in mark_fd (hook.c's map of the connections tuned, which its setsockopt
 * hook holds): value, 1 accepted or 2 outgoing.  A socket the kernel gives no storage for
 * (memory) is tuned all the same, not held. */
static void mark(struct cg_gen *g, int mark_fd, int value)
{
	int skip = cg_label(g);
	cg_emit(g, ST_LDX(ST_BPF_DW, R2, R6, ST_SOCK_OPS_SK)); /* (NULL: not a full socket) */
	cg_jump(g, ST_BPF_JEQ, R2, 0, skip);
	cg_emit(g, ST_INSN(ST_BPF_LD | ST_BPF_DW | ST_BPF_IMM, R1, ST_BPF_PSEUDO_MAP_FD, 0, mark_fd));
	cg_emit(g, ST_INSN(0, 0, 0, 0, 0));
	cg_emit(g, ST_MOV_IMM(R3, 0));
	cg_emit(g, ST_MOV_IMM(R4, ST_BPF_SK_STORAGE_GET_F_CREATE));
	cg_emit(g, ST_CALL(ST_BPF_FUNC_sk_storage_get));
	cg_jump(g, ST_BPF_JEQ, R0, 0, skip);
	cg_emit(g, ST_ST(ST_BPF_W, R0, 0, value));
	cg_place(g, skip);
}

static int build(const struct st_policy *p, int client, long long hz, const struct cli_peer *peers,
                 int npeers, int mark_fd, void *insns, int max, char *err, size_t n)
{
	struct cg_gen g = {.v = insns, .max = max};
	struct scope sc = {.p = p, .peers = peers, .npeers = npeers};
	int out = cg_label(&g), passive = cg_label(&g), active = cg_label(&g), connect = cg_label(&g);
	long long syncnt = 0;
	int want_syncnt = client && st_sockops_sets(p, ST_V_SYNCNT, 1, &syncnt);

	cg_emit(&g, ST_MOV_REG(R6, R1));
	cg_emit(&g, ST_LDX(ST_BPF_W, R7, R6, ST_SOCK_OPS_OP));
	if (st_has(p, ST_V_SYN_RTO)) {
		if (hz <= 0) {
			snprintf(err, n, "--%s: the kernel's HZ is unknown here (socktune finds it with "
			         "TCP_DELACK_MAX_US, Linux 6.15), and the SYN RTO is given in jiffies",
			         st_vars[ST_V_SYN_RTO].option);
			return -1;
		}
		long long j = (p->num[ST_V_SYN_RTO] * hz + 999999) / 1000000; /* rounded up */
		if (reply(&g, &sc, ST_SOCK_OPS_TIMEOUT_INIT, (int)(j < 1 ? 1 : j), client, out, err, n))
			return -1;
	}
	if (st_has(p, ST_V_INITRWND) &&
	    reply(&g, &sc, ST_SOCK_OPS_RWND_INIT, (int)p->num[ST_V_INITRWND], client, out, err, n))
		return -1;
	cg_jump(&g, ST_BPF_JEQ, R7, ST_SOCK_OPS_PASSIVE_ESTABLISHED_CB, passive);
	if (client)
		cg_jump(&g, ST_BPF_JEQ, R7, ST_SOCK_OPS_ACTIVE_ESTABLISHED_CB, active);
	if (want_syncnt)
		cg_jump(&g, ST_BPF_JEQ, R7, ST_SOCK_OPS_TCP_CONNECT_CB, connect);
	cg_place(&g, out);
	cg_emit(&g, ST_MOV_IMM(R0, 1));
	cg_emit(&g, ST_EXIT());

	cg_place(&g, passive);
	if (in_scope(&g, &sc, 0, out, err, n) != 0)
		return -1;
	if (mark_fd >= 0)
		mark(&g, mark_fd, CG_MARK_ACCEPTED);
	set_options(&g, p, 0);
	cg_jump(&g, ST_BPF_JA, 0, 0, out);
	if (client) {
		cg_place(&g, active);
		if (in_scope(&g, &sc, 1, out, err, n) != 0)
			return -1;
		if (mark_fd >= 0)
			mark(&g, mark_fd, CG_MARK_OUTGOING);
		set_options(&g, p, 1);
		cg_jump(&g, ST_BPF_JA, 0, 0, out);
	}
	if (want_syncnt) {
		cg_place(&g, connect);
		if (in_scope(&g, &sc, 1, out, err, n) != 0)
			return -1;
		set_int(&g, IPPROTO_TCP, st_sockopts[ST_V_SYNCNT].bpf_optname, (int)syncnt);
		cg_jump(&g, ST_BPF_JA, 0, 0, out);
	}
	if (cg_resolve(&g, "the program", err, n) != 0)
		return -1;
	return g.n;
}

int cg_prog_build(const struct st_policy *p, int client, long long hz,
                  const struct cli_peer *peers, int npeers, void *insns, int max, char *err,
                  size_t n)
{
	return build(p, client, hz, peers, npeers, -1, insns, max, err, n);
}

/* The verifier's last line that says something (its log ends with a summary and blanks). */
static const char *last_words(char *log)
{
	char *end = log + strlen(log);
	while (end > log && (end[-1] == '\n' || end[-1] == ' '))
		*--end = '\0';
	char *line = strrchr(log, '\n');
	/* "processed N insns ..." is the summary: the cause is the line before it */
	if (line && strncmp(line + 1, "processed ", 10) == 0) {
		*line = '\0';
		char *prev = strrchr(log, '\n');
		return prev ? prev + 1 : log;
	}
	return line ? line + 1 : log;
}

int cg_insns_load(int type, int attach, const char *name, const void *insns, int cnt,
                  const char *what, const char *needs, char *err, size_t n)
{
	struct st_bpf_prog_load a = {
		.prog_type = (uint32_t)type,
		.expected_attach_type = (uint32_t)attach,
		.insns = (uintptr_t)insns,
		.insn_cnt = (uint32_t)cnt,
		.license = (uintptr_t)"GPL", /* bpf_setsockopt is a GPL-only helper */
	};
	snprintf(a.prog_name, sizeof a.prog_name, "%s", name);
	int fd = (int)sys_bpf(ST_BPF_PROG_LOAD, &a, sizeof a);
	if (fd >= 0)
		return fd;
	int e = errno;
	if (e == ENOSYS) {
		snprintf(err, n, "this kernel has no bpf(2) (CONFIG_BPF_SYSCALL): use socktune "
		         "--attach, or the preload");
		return -1;
	}
	/* Again with the verifier's log, for its words (not asked the first time: a log too
	 * small for a large program would fail the load itself).  The verifier refuses with
	 * EACCES or EINVAL and says why; a caller without the capabilities gets EPERM and no
	 * log. */
	static char log[65536];
	log[0] = '\0';
	a.log_level = 1;
	a.log_buf = (uintptr_t)log;
	a.log_size = sizeof log;
	fd = (int)sys_bpf(ST_BPF_PROG_LOAD, &a, sizeof a);
	if (fd >= 0)
		return fd; /* (refused once, loaded now: whatever it was passed) */
	if (!log[0] && (e == EPERM || e == EACCES)) {
		snprintf(err, n, "loading a BPF program: %s: it needs CAP_BPF and CAP_NET_ADMIN (or "
		         "CAP_SYS_ADMIN); run socktune --cgroup as root, or grant them "
		         "(setcap cap_bpf,cap_net_admin+ep, or systemd's AmbientCapabilities=)", strerror(e));
		return -1;
	}
	snprintf(err, n, "the kernel refused %s (%d instructions): %s%s%s%s; %s, else it is "
	         "socktune's bug: report it with this line", what, cnt, strerror(e),
	         log[0] ? "; the verifier says: \"" : "", log[0] ? last_words(log) : "",
	         log[0] ? "\"" : "", needs);
	return -1;
}

int cg_prog_load_marked(const struct st_policy *p, int client, long long hz,
                        const struct cli_peer *peers, int npeers, int mark_fd, int *count,
                        char *err, size_t n)
{
	static struct st_bpf_insn insns[CG_MAX_INSNS];
	int cnt = build(p, client, hz, peers, npeers, mark_fd, insns, CG_MAX_INSNS, err, n);
	if (cnt < 0)
		return -1;
	*count = cnt;
	return cg_insns_load(ST_BPF_PROG_TYPE_SOCK_OPS, ST_BPF_CGROUP_SOCK_OPS, CG_PROG_NAME, insns,
	                     cnt, "the sock_ops program",
	                     mark_fd >= 0 ? "a kernel without sock_ops, bpf_setsockopt (Linux 4.13) "
	                                    "or bpf_sk_storage_get there (5.3) cannot run it"
	                                  : "a kernel without sock_ops or bpf_setsockopt (Linux "
	                                    "4.13) cannot run it", err, n);
}

int cg_prog_load(const struct st_policy *p, int client, long long hz,
                 const struct cli_peer *peers, int npeers, int *count, char *err, size_t n)
{
	return cg_prog_load_marked(p, client, hz, peers, npeers, -1, count, err, n);
}
