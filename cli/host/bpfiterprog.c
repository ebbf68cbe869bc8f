/* bpfiter.h's program: the iterator program for the distinct options of one call, written
 * here as instructions, one block per option, so that the program reads as the list does.
 *
 * The kernel calls it for each TCP socket of the iterator's namespace, under the socket's
 * lock, with struct bpf_iter__tcp: ctx->meta (the output: meta->seq), ctx->sk_common (the
 * socket; NULL on the iterator's last call, which the verifier knows: the pointer must be
 * tested before any helper takes it).  Once tested, that pointer is what bpf_setsockopt,
 * bpf_getsockopt and bpf_get_socket_cookie take as they are (ARG_PTR_TO_BTF_ID_SOCK_COMMON):
 * no cast to a full socket is needed; on a request or TIME_WAIT socket the kernel answers
 * EINVAL.  The TCP iterator may call the tracing helpers (bpf_seq_write,
 * bpf_get_socket_cookie, maps) and its own two: bpf_setsockopt and bpf_getsockopt
 * (net/ipv4/tcp_ipv4.c bpf_iter_tcp_get_func_proto). */
#include <stdint.h>

#include "host/bpf_abi.h"
#include "host/bpfiter.h"

enum { BI_FN_get_socket_cookie = 46, BI_FN_getsockopt = 57, BI_FN_seq_write = 127 };
/* struct bpf_iter__tcp: the iterator's meta (meta->seq at its offset 0), then the socket */
enum { BI_CTX_META = 0, BI_CTX_SK_COMMON = 8 };

#if defined(__has_include)
#if __has_include(<linux/bpf.h>)
#include <linux/bpf.h>
#define SAME(ours, theirs) _Static_assert((long)(ours) == (long)(theirs), #ours " is linux/bpf.h's " #theirs)
SAME(BI_FN_get_socket_cookie, BPF_FUNC_get_socket_cookie);
SAME(BI_FN_getsockopt, BPF_FUNC_getsockopt);
SAME(BI_FN_seq_write, BPF_FUNC_seq_write);
#undef SAME
#endif
#endif

enum { R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10 }; /* R6 ctx, R7 socket, R8 its options */

static int emit(struct bi_prog *g, struct st_bpf_insn i)
{
	if (g->n < BI_MAX_INSNS)
		g->v[g->n] = i;
	return g->n++;
}

/* a forward jump, its target placed later by land() */
static int jump_if_zero(struct bi_prog *g, int reg)
{
	return emit(g, ST_INSN(ST_BPF_JMP | ST_BPF_JEQ | ST_BPF_K, reg, 0, 0, 0));
}

static void land(struct bi_prog *g, int at)
{
	if (at < BI_MAX_INSNS)
		g->v[at].off = (int16_t)(g->n - at - 1);
}

/* R0 = bpf_{set,get}sockopt(sk, level, optname, fp + at, 4) */
static void sockopt_call(struct bi_prog *g, int fn, const struct bi_opt *o, int at)
{
	emit(g, ST_MOV_REG(R1, R7));
	emit(g, ST_MOV_IMM(R2, o->level));
	emit(g, ST_MOV_IMM(R3, o->optname));
	emit(g, ST_MOV_REG(R4, R10));
	emit(g, ST_ADD_IMM(R4, at));
	emit(g, ST_MOV_IMM(R5, 4));
	emit(g, ST_CALL(fn));
}

/* Option k, as the program does it on each socket it was asked for:
 *   slot = {NOT_RUN, NOT_RUN, 0};
 *   if (options >> k & 1) {
 *       slot.value = value;                                              (not BI_READ)
 *       slot.set = bpf_setsockopt(sk, level, optname, &slot.value, 4);   (not BI_READ)
 *       slot.get = bpf_getsockopt(sk, level, optname, &slot.value, 4);   (not BI_SET)
 *   }
 * The slot is written whole either way: the record goes out as it is, and the verifier lets
 * out only stack the program wrote. */
static void option(struct bi_prog *g, int k, const struct bi_opt *o, int readback, int rec)
{
	int slot = rec + BI_REC_SIZE(k), set = slot, get = slot + 4, value = slot + 8;
	emit(g, ST_ST(ST_BPF_W, R10, set, BI_SLOT_NOT_RUN));
	emit(g, ST_ST(ST_BPF_W, R10, get, BI_SLOT_NOT_RUN));
	emit(g, ST_ST(ST_BPF_W, R10, value, 0));
	emit(g, ST_MOV_REG(R1, R8));
	emit(g, ST_INSN(ST_BPF_ALU64 | ST_BPF_RSH | ST_BPF_K, R1, 0, 0, k));
	emit(g, ST_INSN(ST_BPF_ALU64 | ST_BPF_AND | ST_BPF_K, R1, 0, 0, 1));
	int skip = jump_if_zero(g, R1);
	if (readback != BI_READ) {
		emit(g, ST_ST(ST_BPF_W, R10, value, o->value));
		sockopt_call(g, ST_BPF_FUNC_setsockopt, o, value);
		emit(g, ST_STX(ST_BPF_W, R10, R0, set));
	}
	if (readback != BI_SET) {
		sockopt_call(g, BI_FN_getsockopt, o, value);
		emit(g, ST_STX(ST_BPF_W, R10, R0, get));
	}
	land(g, skip);
}

/* The whole program:
 *   sk = ctx->sk_common; if (!sk) return 0;
 *   rec.cookie = key = bpf_get_socket_cookie(sk);
 *   options = bpf_map_lookup_elem(map, &key); if (!options) return 0;   (not asked for)
 *   rec.options = *options;
 *   each option k as option() writes it;
 *   bpf_seq_write(ctx->meta->seq, &rec, sizeof rec);
 *   return 0;
 * The record and the key live on the stack, the record at the 8-aligned fp - REC. */
int bi_prog_build(struct bi_prog *g, const struct bi_opt *opt, int nopt, int readback,
                  int map_fd)
{
	if (nopt < 0 || nopt > BI_MAX_OPTS)
		return -1; /* (the record would not fit the 512-byte stack) */
	int size = BI_REC_SIZE(nopt), rec = -((size + 7) / 8 * 8), key = rec - 8;
	g->n = 0;
	emit(g, ST_MOV_REG(R6, R1));
	emit(g, ST_LDX(ST_BPF_DW, R7, R6, BI_CTX_SK_COMMON));
	int out = jump_if_zero(g, R7);
	emit(g, ST_MOV_REG(R1, R7));
	emit(g, ST_CALL(BI_FN_get_socket_cookie));
	emit(g, ST_STX(ST_BPF_DW, R10, R0, key));
	emit(g, ST_STX(ST_BPF_DW, R10, R0, rec));
	emit(g, ST_INSN(ST_BPF_LD | ST_BPF_DW | ST_BPF_IMM, R1, ST_BPF_PSEUDO_MAP_FD, 0, map_fd));
	emit(g, ST_INSN(0, 0, 0, 0, 0));
	emit(g, ST_MOV_REG(R2, R10));
	emit(g, ST_ADD_IMM(R2, key));
	emit(g, ST_CALL(ST_BPF_FUNC_map_lookup_elem));
	int unasked = jump_if_zero(g, R0);
	emit(g, ST_LDX(ST_BPF_DW, R8, R0, 0));
	emit(g, ST_STX(ST_BPF_DW, R10, R8, rec + 8));
	for (int k = 0; k < nopt; k++)
		option(g, k, &opt[k], readback, rec);
	emit(g, ST_LDX(ST_BPF_DW, R1, R6, BI_CTX_META));
	emit(g, ST_LDX(ST_BPF_DW, R1, R1, 0));
	emit(g, ST_MOV_REG(R2, R10));
	emit(g, ST_ADD_IMM(R2, rec));
	emit(g, ST_MOV_IMM(R3, size));
	emit(g, ST_CALL(BI_FN_seq_write));
	land(g, out);
	land(g, unasked);
	emit(g, ST_MOV_IMM(R0, 0));
	emit(g, ST_EXIT());
	return g->n <= BI_MAX_INSNS ? g->n : -1;
}
