/* The programs of a policy together: the sock_ops program (bpf.c), and a CGROUP_SOCKOPT
 * program at BPF_CGROUP_SETSOCKOPT (Linux 5.3), the hook, that holds the policy's values on
 * the connections the sock_ops program tuned.
 *
 * Why: the sock_ops program sets TCP_NODELAY=1 when a connection is accepted, before the
 * server sees it; a server that then calls setsockopt(TCP_NODELAY, 0) on every connection it
 * accepts (hyper 0.14, Erlang's inets) undoes it, and its two-part responses wait for the
 * client's delayed ACK (~40 ms) while the probe connection still reads nodelay=1.
 *
 * How: the sock_ops program marks each socket it tunes in a BPF_MAP_TYPE_SK_STORAGE map (1:
 * accepted, 2: outgoing with --client); the kernel runs the hook on every setsockopt(2) of
 * the cgroup's processes, before its own handler, with a copy of the app's value.  On a
 * marked socket, for an option the policy sets on that end, the hook writes the policy's
 * value over the app's and returns 1: the call goes on to the kernel with our value (0 would
 * fail it with EPERM).  The product never changes the result of the app's call, so the hook
 * replaces only a value the kernel takes from any process (int_range: TCP_KEEPIDLE 1..32767,
 * SO_PRIORITY 0..6, ...; TCP_CONGESTION: a name of net.ipv4.tcp_allowed_congestion_control),
 * and only with one it takes from any process too: the kernel checks the value the app
 * gives, not ours, so a value out of range still fails with the kernel's own error, and an
 * option whose policy value needs a capability (SO_PRIORITY above 6, a congestion control
 * not allowed) is not held at all (said once; the sock_ops program, whose bpf_setsockopt
 * checks no capability, still sets it on each new connection).  An app's value replaced is
 * counted, per option and end, in an array map the wrapper reads (tick): the count and the
 * app's last value.  Sockets the sock_ops program did not tune (out of --ports or --peer,
 * outgoing ones without --client, UDP, the app's listeners) are not marked: the hook leaves
 * them alone.
 *
 * Not held either: a value shorter than an int (IP_TOS takes a byte: left as it is); the
 * *FORCE variants of the buffers; options only set before the connection (--syncnt).  A
 * kernel that refuses the hook or its maps (before 5.3, no BTF) gets the sock_ops program
 * alone, unmarked, and the wrapper says the app's own setsockopt is not held (hook_why). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_opts.h"
#include "socktune_kernel.h"
#include "cgroup/cgroup.h"
#include "record.h"

#if defined(__has_include)
#if __has_include(<linux/bpf.h>)
#include <linux/bpf.h>
/* (the signed compares and shifts of the range checks; bpf.c checks the rest of bpf_abi.h) */
_Static_assert(ST_BPF_JSGT == BPF_JSGT && ST_BPF_JSLT == BPF_JSLT && ST_BPF_LSH == BPF_LSH &&
               ST_BPF_ARSH == BPF_ARSH, "bpf_abi.h's signed operations are linux/bpf.h's");
#endif
#endif

#define HOOK_NAME "socktune_hold"
#define HOOK_MAX_INSNS CG_MAX_INSNS

enum { R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10 };
/* R6: the context; R7, R8: the app's level and optname, then the app's value; R9: the mark,
 * then the count's slot */

/* The ends (bit 0: accepted, bit 1: outgoing) on which the hook holds option i of p. */
int cg_hold_ends(const struct st_policy *p, int client, int i)
{
	const struct st_sockopt *o = &st_sockopts[i];
	long long want;
	/* what the sock_ops program sets with bpf_setsockopt on an established connection
	 * (set_options in bpf.c), as an app would set it (a label: a socket option) */
	if (!st_is_sockopt(i) || o->sockops != ST_SOCKOPS_SET || (o->flags & ST_O_CLIENT_ONLY))
		return 0;
	return (st_sockops_sets(p, i, 0, &want) ? 1 : 0) | (client && st_sockops_sets(p, i, 1, &want) ? 2 : 0);
}

static void ld_map(struct cg_gen *g, int reg, int map_fd)
{
	cg_emit(g, ST_INSN(ST_BPF_LD | ST_BPF_DW | ST_BPF_IMM, reg, ST_BPF_PSEUDO_MAP_FD, 0, map_fd));
	cg_emit(g, ST_INSN(0, 0, 0, 0, 0));
}

static void ld_imm64(struct cg_gen *g, int reg, uint64_t v)
{
	cg_emit(g, ST_INSN(ST_BPF_LD | ST_BPF_DW | ST_BPF_IMM, reg, 0, 0, (int)(uint32_t)v));
	cg_emit(g, ST_INSN(0, 0, 0, 0, (int)(uint32_t)(v >> 32)));
}

/* R9 = the socket's mark; unmarked (not tuned), or tuned on an end the option is not held
 * on: goto out */
static void marked(struct cg_gen *g, int mark_fd, int ends, int out)
{
	ld_map(g, R1, mark_fd);
	cg_emit(g, ST_LDX(ST_BPF_DW, R2, R6, ST_SOCKOPT_SK));
	cg_emit(g, ST_MOV_IMM(R3, 0));
	cg_emit(g, ST_MOV_IMM(R4, 0)); /* (a lookup: no storage made) */
	cg_emit(g, ST_CALL(ST_BPF_FUNC_sk_storage_get));
	cg_jump(g, ST_BPF_JEQ, R0, 0, out);
	cg_emit(g, ST_LDX(ST_BPF_W, R9, R0, 0));
	if (ends == 3) {
		cg_jump(g, ST_BPF_JEQ, R9, 0, out);
		cg_jump(g, ST_BPF_JGT, R9, CG_MARK_OUTGOING, out);
	} else {
		cg_jump(g, ST_BPF_JNE, R9, ends == 1 ? CG_MARK_ACCEPTED : CG_MARK_OUTGOING, out);
	}
}

/* R3 = optval, R4 = optval_end; fewer than len bytes there: goto out */
static void optval(struct cg_gen *g, int len, int out)
{
	cg_emit(g, ST_LDX(ST_BPF_DW, R3, R6, ST_SOCKOPT_OPTVAL));
	cg_emit(g, ST_LDX(ST_BPF_DW, R4, R6, ST_SOCKOPT_OPTVAL_END));
	cg_emit(g, ST_MOV_REG(R5, R3));
	cg_emit(g, ST_ADD_IMM(R5, len));
	cg_jump_reg(g, ST_BPF_JGT, R5, R4, out);
}

/* R0 = held option k's slot for the socket's end (R9), its count one more; none: goto out */
static void count(struct cg_gen *g, int count_fd, int k, int out)
{
	cg_emit(g, ST_MOV_REG(R1, R9));
	cg_emit(g, ST_ADD_IMM(R1, 2 * k - 1)); /* (the mark: 1 accepted, 2 outgoing) */
	cg_emit(g, ST_STX(ST_BPF_W, R10, R1, -4));
	ld_map(g, R1, count_fd);
	cg_emit(g, ST_MOV_REG(R2, R10));
	cg_emit(g, ST_ADD_IMM(R2, -4));
	cg_emit(g, ST_CALL(ST_BPF_FUNC_map_lookup_elem));
	cg_jump(g, ST_BPF_JEQ, R0, 0, out);
	cg_emit(g, ST_MOV_IMM(R1, 1));
	cg_emit(g, ST_ATOMIC_ADD_DW(R0, R1, 0));
}

struct hook_ctx {
	int mark_fd, count_fd;
	long long hz;
	const struct cg_cc_allowed *cc;
};

/* The app's int (R8) outside r: goto out (signed, as the kernel compares an int) */
static void range_check(struct cg_gen *g, const struct int_range *r, int out)
{
	int ok = cg_label(g);
	if (r->zero)
		cg_jump32(g, ST_BPF_JEQ, R8, 0, ok);
	if (r->lo > INT_MIN)
		cg_jump32(g, ST_BPF_JSLT, R8, (int)r->lo, out);
	if (r->hi < INT_MAX)
		cg_jump32(g, ST_BPF_JSGT, R8, (int)r->hi, out);
	cg_place(g, ok);
}

/* The ranges of option i on the level the app named (R7): IP_TOS takes any int, IPV6_TCLASS
 * -1..255 */
static void range_checks(struct cg_gen *g, int i, long long hz, int out)
{
	const struct st_sockopt *o = &st_sockopts[i];
	struct int_range r4, r6;
	int has4 = cg_int_range(o->level, o->optname, hz, &r4);
	int has6 = o->label6 && cg_int_range(o->level6, o->optname6, hz, &r6);
	if (!has6) {
		if (has4)
			range_check(g, &r4, out);
		return;
	}
	int v4 = cg_label(g), done = cg_label(g);
	cg_jump(g, ST_BPF_JNE, R7, o->level6, v4);
	range_check(g, &r6, out);
	cg_jump(g, ST_BPF_JA, 0, 0, done);
	cg_place(g, v4);
	if (has4)
		range_check(g, &r4, out);
	cg_place(g, done);
}

/* ctx->optlen = len: the width of the value written.  (An app's optlen over a page is one
 * the kernel hands the hook cut to a page, and then ignores the hook's buffer unless the
 * hook sets optlen within it: the app's value would go through, counted as refused.  An int
 * option reads its first 4 bytes whatever optlen; SO_MAX_PACING_RATE 8 from 8 on.) */
static void set_optlen(struct cg_gen *g, int len)
{
	cg_emit(g, ST_MOV_IMM(R1, len));
	cg_emit(g, ST_STX(ST_BPF_W, R6, R1, ST_SOCKOPT_OPTLEN));
}

/* An int option: the app's value replaced by want when the kernel would take it (else the
 * call goes on as it is, to the kernel's own error) and it is not the same (a flag: the
 * same truth).  SO_MAX_PACING_RATE is read as 64 bits when the app passes 8 bytes or more,
 * as the kernel reads it. */
static void hold_int(struct cg_gen *g, const struct hook_ctx *h, int k, int i, long long want, int out)
{
	const struct st_sockopt *o = &st_sockopts[i];
	int wide = o->level == SOL_SOCKET && o->optname == SO_MAX_PACING_RATE;
	int w64 = cg_label(g);
	cg_emit(g, ST_LDX(ST_BPF_W, R2, R6, ST_SOCKOPT_OPTLEN));
	if (wide)
		cg_jump(g, ST_BPF_JGT, R2, 7, w64);
	cg_jump(g, ST_BPF_JLT, R2, 4, out); /* (the kernel refuses it: EINVAL, the app's) */
	optval(g, 4, out);
	cg_emit(g, ST_LDX(ST_BPF_W, R8, R3, 0));
	range_checks(g, i, h->hz, out);
	if (st_opt_is_flag(i))
		cg_jump32(g, want ? ST_BPF_JNE : ST_BPF_JEQ, R8, 0, out);
	else
		cg_jump32(g, ST_BPF_JEQ, R8, (int)want, out);
	cg_emit(g, ST_ST(ST_BPF_W, R3, 0, (int)want));
	set_optlen(g, 4);
	if (!(o->flags & ST_O_UNSIGNED)) { /* (the app's last value kept as a signed 64) */
		cg_emit(g, ST_INSN(ST_BPF_ALU64 | ST_BPF_LSH | ST_BPF_K, R8, 0, 0, 32));
		cg_emit(g, ST_INSN(ST_BPF_ALU64 | ST_BPF_ARSH | ST_BPF_K, R8, 0, 0, 32));
	}
	count(g, h->count_fd, k, out);
	cg_emit(g, ST_STX(ST_BPF_DW, R0, R8, 8));
	cg_jump(g, ST_BPF_JA, 0, 0, out);
	cg_place(g, w64);
	if (!wide)
		return;
	/* as the kernel widens an int (sk_setsockopt): ~0U is unlimited */
	uint64_t v = (uint32_t)want == ~0u ? ~0ull : (uint32_t)want;
	optval(g, 8, out);
	cg_emit(g, ST_LDX(ST_BPF_DW, R8, R3, 0));
	ld_imm64(g, R2, v);
	cg_jump_reg(g, ST_BPF_JEQ, R8, R2, out);
	cg_emit(g, ST_STX(ST_BPF_DW, R3, R2, 0));
	set_optlen(g, 8);
	count(g, h->count_fd, k, out);
	cg_emit(g, ST_STX(ST_BPF_DW, R0, R8, 8));
	cg_jump(g, ST_BPF_JA, 0, 0, out);
}

/* A name option (TCP_CONGESTION): the app's name replaced by ours when it is one any
 * process may choose (cc: what the kernel reads, up to 15 bytes or a NUL, matched whole), so
 * that its call would have succeeded as ours does; any other (not loaded: ENOENT; restricted:
 * EPERM without CAP_NET_ADMIN, its own with it) goes on as it is, not counted.  Ours is
 * written with optlen set to its length: the kernel gives the hook at least 16 bytes, so a
 * shorter name of the app's ("bbr") makes room for ours ("cubic").  Ours again is no news. */
static void hold_name(struct cg_gen *g, const struct hook_ctx *h, int k, const char *name, int out)
{
	int len = (int)strnlen(name, 15), replace = cg_label(g), copied = cg_label(g);
	cg_emit(g, ST_LDX(ST_BPF_W, R2, R6, ST_SOCKOPT_OPTLEN));
	cg_jump32(g, ST_BPF_JSLT, R2, 1, out); /* (EINVAL, the app's) */
	optval(g, 16, out);
	for (int c = 0; c < h->cc->n; c++) {
		const char *cn = h->cc->name[c];
		int n = (int)strlen(cn), next = cg_label(g), whole = cg_label(g);
		cg_jump(g, ST_BPF_JLT, R2, n, next);
		for (int j = 0; j < n; j++) {
			cg_emit(g, ST_LDX(ST_BPF_B, R1, R3, j));
			cg_jump(g, ST_BPF_JNE, R1, (unsigned char)cn[j], next);
		}
		if (n < 15) { /* (at 15 the kernel reads no further) */
			cg_jump(g, ST_BPF_JEQ, R2, n, whole);
			cg_emit(g, ST_LDX(ST_BPF_B, R1, R3, n));
			cg_jump(g, ST_BPF_JNE, R1, 0, next);
		}
		cg_place(g, whole);
		cg_jump(g, ST_BPF_JA, 0, 0, strcmp(cn, name) ? replace : out);
		cg_place(g, next);
	}
	cg_jump(g, ST_BPF_JA, 0, 0, out);
	cg_place(g, replace);
	count(g, h->count_fd, k, out);
	cg_emit(g, ST_MOV_REG(R9, R0));
	/* the app's name, up to 15 bytes, into the slot */
	cg_emit(g, ST_ST(ST_BPF_DW, R9, 16, 0));
	cg_emit(g, ST_ST(ST_BPF_DW, R9, 24, 0));
	cg_emit(g, ST_LDX(ST_BPF_W, R2, R6, ST_SOCKOPT_OPTLEN));
	optval(g, 16, out);
	for (int j = 0; j < 15; j++) {
		cg_jump(g, ST_BPF_JLE, R2, j, copied);
		cg_emit(g, ST_LDX(ST_BPF_B, R1, R3, j));
		cg_emit(g, ST_STX(ST_BPF_B, R9, R1, 16 + j));
	}
	cg_place(g, copied);
	for (int j = 0; j < len; j++)
		cg_emit(g, ST_ST(ST_BPF_B, R3, j, (unsigned char)name[j]));
	set_optlen(g, len);
	cg_jump(g, ST_BPF_JA, 0, 0, out);
}

/* The hook for the held options of g: instructions into insns[max], the count or -1. */
static int hook_build(const struct st_policy *p, int client, long long hz,
                      const struct cg_cc_allowed *cc, const struct cg_progs *pg,
                      struct st_bpf_insn *insns, int max, char *err, size_t n)
{
	static struct cg_gen g;
	memset(&g, 0, sizeof g);
	g.v = insns;
	g.max = max;
	struct hook_ctx h = {pg->mark_fd, pg->count_fd, hz, cc};
	int out = cg_label(&g), body[ST_O_COUNT];
	cg_emit(&g, ST_MOV_REG(R6, R1));
	cg_emit(&g, ST_LDX(ST_BPF_W, R7, R6, ST_SOCKOPT_LEVEL));
	cg_emit(&g, ST_LDX(ST_BPF_W, R8, R6, ST_SOCKOPT_OPTNAME));
	/* which option: the level and name the app calls it by (IP_TOS: IPV6_TCLASS too) */
	for (int k = 0; k < pg->nheld; k++) {
		const struct st_sockopt *o = &st_sockopts[pg->held[k]];
		body[k] = cg_label(&g);
		for (int v6 = 0; v6 <= (o->label6 != NULL); v6++) {
			int next = cg_label(&g);
			cg_jump(&g, ST_BPF_JNE, R7, v6 ? o->level6 : o->level, next);
			cg_jump(&g, ST_BPF_JEQ, R8, v6 ? o->optname6 : o->optname, body[k]);
			cg_place(&g, next);
		}
	}
	cg_place(&g, out);
	cg_emit(&g, ST_MOV_IMM(R0, 1)); /* always: the app's call goes on to the kernel */
	cg_emit(&g, ST_EXIT());
	for (int k = 0; k < pg->nheld; k++) {
		int i = pg->held[k];
		long long want = 0;
		int ends = cg_hold_ends(p, client, i);
		st_sockops_sets(p, i, ends & 1 ? 0 : 1, &want);
		cg_place(&g, body[k]);
		marked(&g, h.mark_fd, ends, out);
		if (st_sockopts[i].flags & ST_O_NAME)
			hold_name(&g, &h, k, st_opt_name(p, i), out);
		else
			hold_int(&g, &h, k, i, want, out);
	}
	if (cg_resolve(&g, "the setsockopt hook", err, n) != 0)
		return -1;
	return g.n;
}

void cg_progs_close(struct cg_progs *g)
{
	int *fds[] = {&g->ops_fd, &g->hook_fd, &g->mark_fd, &g->count_fd};
	for (size_t k = 0; k < sizeof fds / sizeof fds[0]; k++) {
		if (*fds[k] >= 0)
			close(*fds[k]);
		*fds[k] = -1;
	}
}

/* The hook and its maps for g->held: 0, or -1 with g->hook_why (none of them left). */
static int hook_load(const struct st_policy *p, int client, long long hz,
                     const struct cg_cc_allowed *cc, struct cg_progs *g)
{
	static struct st_bpf_insn insns[HOOK_MAX_INSNS];
	char err[sizeof g->hook_why];
	int btf = cg_btf_int();
	if (btf < 0) {
		snprintf(g->hook_why, sizeof g->hook_why, "the kernel refused a BTF type (BPF_BTF_LOAD, "
		         "Linux 4.18): %s", strerror(errno));
		return -1;
	}
	g->mark_fd = cg_map_create(ST_BPF_MAP_TYPE_SK_STORAGE, 4, 4, 0, ST_BPF_F_NO_PREALLOC, btf,
	                           "socktune_mark");
	int e = errno;
	close(btf); /* (the map holds it) */
	if (g->mark_fd < 0) {
		snprintf(g->hook_why, sizeof g->hook_why, "the kernel refused a socket storage map "
		         "(BPF_MAP_TYPE_SK_STORAGE, Linux 5.2): %s", strerror(e));
		return -1;
	}
	g->count_fd = cg_map_create(ST_BPF_MAP_TYPE_ARRAY, 4, sizeof(struct cg_override_slot),
	                            (unsigned)(2 * g->nheld), 0, -1, "socktune_count");
	if (g->count_fd < 0) {
		snprintf(g->hook_why, sizeof g->hook_why, "the kernel refused an array map: %s",
		         strerror(errno));
		return -1;
	}
	int cnt = hook_build(p, client, hz, cc, g, insns, HOOK_MAX_INSNS, err, sizeof err);
	if (cnt >= 0)
		g->hook_fd = cg_insns_load(ST_BPF_PROG_TYPE_CGROUP_SOCKOPT, ST_BPF_CGROUP_SETSOCKOPT,
		                           HOOK_NAME, insns, cnt, "the setsockopt hook",
		                           "a kernel without cgroup setsockopt hooks (Linux 5.3) cannot "
		                           "run it", err, sizeof err);
	if (cnt < 0 || g->hook_fd < 0) {
		snprintf(g->hook_why, sizeof g->hook_why, "%s", err);
		return -1;
	}
	g->hook_insns = cnt;
	return 0;
}

int cg_progs_load(const struct st_policy *p, int client, long long hz,
                  const struct cli_peer *peers, int npeers, struct cg_progs *g, char *err,
                  size_t n)
{
	static struct cg_cc_allowed cc;
	memset(g, 0, sizeof *g);
	g->ops_fd = g->hook_fd = g->mark_fd = g->count_fd = -1;
	cg_cc_allowed_read(&cc);
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		int ends = cg_hold_ends(p, client, i);
		long long want = 0;
		char why[512], key[ST_KEY_MAX];
		if (!ends)
			continue;
		st_sockops_sets(p, i, ends & 1 ? 0 : 1, &want);
		if (cg_holdable(i, want, st_opt_name(p, i), hz, &cc, why, sizeof why)) {
			g->held[g->nheld++] = i;
			continue;
		}
		char val[32];
		if (!why[0])
			continue;
		if (st_sockopts[i].flags & ST_O_NAME)
			snprintf(val, sizeof val, "%s", st_opt_name(p, i));
		else
			snprintf(val, sizeof val, "%lld", want);
		fprintf(stderr, "socktune: %s %s (%s) is not held against the app's own setsockopt: %s, "
		        "so the app's call given it could fail where the app's own value would not; "
		        "the sock_ops program still sets it on each new connection\n",
		        st_opt_key(i, key, sizeof key), val, st_sockopts[i].label, why);
	}
	if (g->nheld && hook_load(p, client, hz, &cc, g) != 0)
		cg_progs_close(g);
	g->ops_fd = cg_prog_load_marked(p, client, hz, peers, npeers, g->hook_fd >= 0 ? g->mark_fd : -1,
	                                &g->insns, err, n);
	if (g->ops_fd < 0 && g->hook_fd >= 0) {
		/* the mark refused (bpf_sk_storage_get in sock_ops): the program alone, unheld */
		snprintf(g->hook_why, sizeof g->hook_why, "%s", err);
		cg_progs_close(g);
		g->ops_fd = cg_prog_load_marked(p, client, hz, peers, npeers, -1, &g->insns, err, n);
	}
	if (g->ops_fd < 0) {
		cg_progs_close(g);
		return -1;
	}
	if (g->hook_fd < 0)
		g->nheld = 0;
	g->ops_id = cg_prog_id(g->ops_fd);
	g->hook_id = g->hook_fd >= 0 ? cg_prog_id(g->hook_fd) : 0;
	return 0;
}

/* The hook first, the sock_ops program after it, so that no connection is tuned before the
 * hook holds it; detached in the other order. */
int cg_progs_attach(const struct cg_progs *g, int cgroup_fd, char *err, size_t n)
{
	if (g->hook_fd >= 0 &&
	    cg_attach_type(g->hook_fd, cgroup_fd, ST_BPF_CGROUP_SETSOCKOPT, err, n) != 0)
		return -1;
	if (cg_attach_type(g->ops_fd, cgroup_fd, ST_BPF_CGROUP_SOCK_OPS, err, n) != 0) {
		int e = errno;
		if (g->hook_fd >= 0)
			cg_detach_type(g->hook_fd, cgroup_fd, ST_BPF_CGROUP_SETSOCKOPT);
		errno = e;
		return -1;
	}
	return 0;
}

int cg_progs_detach(const struct cg_progs *g, int cgroup_fd)
{
	int r = 0, e = 0;
	if (g->ops_fd >= 0 && cg_detach_type(g->ops_fd, cgroup_fd, ST_BPF_CGROUP_SOCK_OPS) != 0 &&
	    errno != ENOENT) {
		r = -1;
		e = errno;
	}
	if (g->hook_fd >= 0 && cg_detach_type(g->hook_fd, cgroup_fd, ST_BPF_CGROUP_SETSOCKOPT) != 0 &&
	    errno != ENOENT && !r) {
		r = -1;
		e = errno;
	}
	errno = e;
	return r;
}
