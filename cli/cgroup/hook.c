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
 * value over the app's and returns 1: the call goes on to the kernel with our value, so it
 * succeeds or fails as the kernel says (0 would fail it with EPERM: the product never changes
 * a wrapped call's result).  An app's value other than ours is counted, per option and end,
 * in an array map the wrapper reads (tick): the count and the app's last value.  Sockets the
 * sock_ops program did not tune (out of --ports or --peer, outgoing ones without --client,
 * UDP, the app's listeners) are not marked: the hook leaves them alone.
 *
 * Not held: TCP_CONGESTION when the app's buffer is shorter than the policy's name (the
 * value cannot grow); the *FORCE variants of the buffers; options only set before the
 * connection (--syncnt).  A kernel that refuses the hook or its maps (before 5.3, no BTF)
 * gets the sock_ops program alone, unmarked, and the wrapper says the app's own setsockopt
 * is not held (hook_why). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_opts.h"
#include "cgroup.h"
#include "record.h"

#define HOOK_NAME "socktune_hold"
#define HOOK_MAX_INSNS CG_MAX_INSNS

enum { R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10 };
/* R6: the context; R7, R8: the app's level and optname, then the app's value; R9: the mark,
 * then the count's slot */

/* The count map's value: one per held option and end (key 2 * k + end, k an index of
 * held[], end 0 accepted, 1 outgoing) */
struct cg_override_slot {
	uint64_t count; /* the app's calls whose value the hook replaced */
	uint64_t last;  /* the app's last such value (an int option's) */
	char name[16];  /* the app's last name (TCP_CONGESTION) */
};

/* The ends (bit 0: accepted, bit 1: outgoing) on which the hook holds option i of p. */
int cg_hold_ends(const struct st_policy *p, int client, int i)
{
	const struct st_sockopt *o = &st_sockopts[i];
	long long want;
	/* what the sock_ops program sets with bpf_setsockopt on an established connection
	 * (set_options in bpf.c), as an app would set it (a label: a socket option) */
	if (!st_is_sockopt(i) || o->sockops != ST_SOCKOPS_SET || (o->flags & ST_O_CLIENT_ONLY))
		return 0;
	return (cg_sets(p, i, 0, &want) ? 1 : 0) | (client && cg_sets(p, i, 1, &want) ? 2 : 0);
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
};

/* An int option: the app's value replaced by want unless it is the same (a flag: the same
 * truth).  SO_MAX_PACING_RATE is read as 64 bits when the app passes 8 bytes. */
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
	if (st_opt_is_flag(i))
		cg_jump32(g, want ? ST_BPF_JNE : ST_BPF_JEQ, R8, 0, out);
	else
		cg_jump32(g, ST_BPF_JEQ, R8, (int)want, out);
	cg_emit(g, ST_ST(ST_BPF_W, R3, 0, (int)want));
	count(g, h->count_fd, k, out);
	cg_emit(g, ST_STX(ST_BPF_DW, R0, R8, 8));
	cg_jump(g, ST_BPF_JA, 0, 0, out);
	cg_place(g, w64);
	if (!wide)
		return;
	/* as the kernel widens an int (sock_setsockopt): ~0U is unlimited */
	uint64_t v = (uint32_t)want == ~0u ? ~0ull : (uint32_t)want;
	optval(g, 8, out);
	cg_emit(g, ST_LDX(ST_BPF_DW, R8, R3, 0));
	ld_imm64(g, R2, v);
	cg_jump_reg(g, ST_BPF_JEQ, R8, R2, out);
	cg_emit(g, ST_STX(ST_BPF_DW, R3, R2, 0));
	count(g, h->count_fd, k, out);
	cg_emit(g, ST_STX(ST_BPF_DW, R0, R8, 8));
	cg_jump(g, ST_BPF_JA, 0, 0, out);
}

/* A name option (TCP_CONGESTION): the app's name replaced by ours when its buffer holds ours
 * (optlen lowered to our name's length: the kernel reads that many bytes); a shorter buffer
 * is left as it is, not counted.  The same name (with a NUL after it or not) is no news. */
static void hold_name(struct cg_gen *g, const struct hook_ctx *h, int k, const char *name, int out)
{
	int len = (int)strnlen(name, 15), differ = cg_label(g), copied = cg_label(g);
	cg_emit(g, ST_LDX(ST_BPF_W, R2, R6, ST_SOCKOPT_OPTLEN));
	cg_jump(g, ST_BPF_JLT, R2, len, out);
	optval(g, len, out);
	for (int j = 0; j < len; j++) {
		cg_emit(g, ST_LDX(ST_BPF_B, R1, R3, j));
		cg_jump(g, ST_BPF_JNE, R1, (unsigned char)name[j], differ);
	}
	cg_jump(g, ST_BPF_JEQ, R2, len, out);
	cg_emit(g, ST_MOV_REG(R5, R3));
	cg_emit(g, ST_ADD_IMM(R5, len + 1));
	cg_jump_reg(g, ST_BPF_JGT, R5, R4, differ);
	cg_emit(g, ST_LDX(ST_BPF_B, R1, R3, len));
	cg_jump(g, ST_BPF_JEQ, R1, 0, out);
	cg_place(g, differ);
	count(g, h->count_fd, k, out);
	cg_emit(g, ST_MOV_REG(R9, R0));
	/* the app's name, up to 15 bytes, into the slot */
	cg_emit(g, ST_ST(ST_BPF_DW, R9, 16, 0));
	cg_emit(g, ST_ST(ST_BPF_DW, R9, 24, 0));
	cg_emit(g, ST_LDX(ST_BPF_W, R2, R6, ST_SOCKOPT_OPTLEN));
	cg_emit(g, ST_LDX(ST_BPF_DW, R3, R6, ST_SOCKOPT_OPTVAL));
	cg_emit(g, ST_LDX(ST_BPF_DW, R4, R6, ST_SOCKOPT_OPTVAL_END));
	for (int j = 0; j < 15; j++) {
		cg_jump(g, ST_BPF_JLE, R2, j, copied);
		cg_emit(g, ST_MOV_REG(R5, R3));
		cg_emit(g, ST_ADD_IMM(R5, j + 1));
		cg_jump_reg(g, ST_BPF_JGT, R5, R4, copied);
		cg_emit(g, ST_LDX(ST_BPF_B, R1, R3, j));
		cg_emit(g, ST_STX(ST_BPF_B, R9, R1, 16 + j));
	}
	cg_place(g, copied);
	optval(g, len, out);
	for (int j = 0; j < len; j++)
		cg_emit(g, ST_ST(ST_BPF_B, R3, j, (unsigned char)name[j]));
	cg_emit(g, ST_MOV_IMM(R1, len));
	cg_emit(g, ST_STX(ST_BPF_W, R6, R1, ST_SOCKOPT_OPTLEN));
	cg_jump(g, ST_BPF_JA, 0, 0, out);
}

/* The hook for the held options of g: instructions into insns[max], the count or -1. */
static int hook_build(const struct st_policy *p, int client, const struct cg_progs *pg,
                      struct st_bpf_insn *insns, int max, char *err, size_t n)
{
	static struct cg_gen g;
	memset(&g, 0, sizeof g);
	g.v = insns;
	g.max = max;
	struct hook_ctx h = {pg->mark_fd, pg->count_fd};
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
		cg_sets(p, i, ends & 1 ? 0 : 1, &want);
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
static int hook_load(const struct st_policy *p, int client, struct cg_progs *g)
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
	int cnt = hook_build(p, client, g, insns, HOOK_MAX_INSNS, err, sizeof err);
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
	memset(g, 0, sizeof *g);
	g->ops_fd = g->hook_fd = g->mark_fd = g->count_fd = -1;
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i))
		if (cg_hold_ends(p, client, i))
			g->held[g->nheld++] = i;
	if (g->nheld && hook_load(p, client, g) != 0)
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

int cg_progs_count(const struct cg_progs *g, int k, int end, struct cg_override *o)
{
	struct cg_override_slot s;
	uint32_t key = (uint32_t)(2 * k + end);
	memset(o, 0, sizeof *o);
	if (g->count_fd < 0 || k >= g->nheld || cg_map_lookup(g->count_fd, &key, &s) != 0)
		return -1;
	o->count = s.count;
	o->last = (long long)(int32_t)(uint32_t)s.last;
	if (s.last >> 32) /* (SO_MAX_PACING_RATE given as 64 bits) */
		o->last = (long long)s.last;
	memcpy(o->name, s.name, sizeof o->name - 1);
	o->name[sizeof o->name - 1] = '\0';
	return 0;
}

/* One line: what the hook refused of option i on end, so far. */
static void say(const struct st_policy *p, int i, int end, const struct cg_override *o,
                const char *dir, int first)
{
	struct rec *r = rec_new();
	if (!r)
		return;
	int want = 0;
	char key[ST_KEY_MAX], app[sizeof o->name];
	st_opt_want(p, i, &want);
	rec_int(r, K_PID, (long long)getpid());
	rec_str(r, K_LEVEL, "info");
	rec_str(r, K_EVENT, "app-override");
	rec_str(r, K_CGROUP, dir);
	rec_str(r, K_LOG_SOCKET, end ? "client" : "accepted");
	rec_str(r, K_CHK_OPTION, st_opt_key(i, key, sizeof key));
	if (st_sockopts[i].flags & ST_O_NAME) {
		size_t m = 0; /* (the app's bytes: printable ones only) */
		for (; m + 1 < sizeof app && o->name[m]; m++)
			app[m] = o->name[m] > 0x20 && o->name[m] < 0x7f ? o->name[m] : '?';
		app[m] = '\0';
		rec_str(r, K_LOG_APP_NAME, app);
		rec_str(r, K_CHK_WANT_NAME, st_opt_name(p, i));
	} else {
		rec_int(r, K_LOG_APP_VALUE, o->last);
		rec_int(r, K_CHK_WANT_VALUE, (st_sockopts[i].flags & ST_O_UNSIGNED)
		                                  ? (long long)(unsigned)want : want);
	}
	rec_int(r, K_CONN_COUNT, (long long)o->count);
	if (first)
		rec_bool(r, K_LOG_FIRST, 1);
	rec_str(r, K_LOG_ACTION, "refused");
	fputs("socktune ", stderr);
	rec_write_logfmt(stderr, r);
	fputc('\n', stderr);
	rec_free(r);
}

void cg_progs_tell(const struct cg_progs *g, const struct st_policy *p, int client,
                   const char *dir, unsigned long long said[][2], int final)
{
	for (int k = 0; k < g->nheld; k++) {
		int ends = cg_hold_ends(p, client, g->held[k]);
		for (int end = 0; end < 2; end++) {
			struct cg_override o;
			if (!(ends & (1 << end)) || cg_progs_count(g, k, end, &o) != 0 || !o.count)
				continue;
			if (!said[k][end] || final)
				say(p, g->held[k], end, &o, dir, !said[k][end]);
			said[k][end] = o.count;
		}
	}
}

int cg_hook_counts_of(unsigned hook_id, struct cg_override *c, int max)
{
	struct st_bpf_get_id g = {.id = hook_id};
	int fd = (int)cg_bpf(ST_BPF_PROG_GET_FD_BY_ID, &g, sizeof g), n = -1;
	if (fd < 0)
		return -1;
	uint32_t ids[8];
	struct st_bpf_prog_info info;
	memset(&info, 0, sizeof info);
	info.nr_map_ids = 8;
	info.map_ids = (uintptr_t)ids;
	struct st_bpf_info_by_fd a = {.bpf_fd = (uint32_t)fd, .info_len = sizeof info,
	                              .info = (uintptr_t)&info};
	int r = (int)cg_bpf(ST_BPF_OBJ_GET_INFO_BY_FD, &a, sizeof a);
	close(fd);
	for (uint32_t m = 0; r == 0 && m < info.nr_map_ids && m < 8 && n < 0; m++) {
		struct st_bpf_get_id mg = {.id = ids[m]};
		int mfd = (int)cg_bpf(ST_BPF_MAP_GET_FD_BY_ID, &mg, sizeof mg);
		if (mfd < 0)
			continue;
		struct st_bpf_map_info mi;
		memset(&mi, 0, sizeof mi);
		struct st_bpf_info_by_fd ma = {.bpf_fd = (uint32_t)mfd, .info_len = sizeof mi,
		                               .info = (uintptr_t)&mi};
		/* the count map: the array of slots (the other is the marks' socket storage) */
		if (cg_bpf(ST_BPF_OBJ_GET_INFO_BY_FD, &ma, sizeof ma) == 0 &&
		    mi.type == ST_BPF_MAP_TYPE_ARRAY && mi.value_size == sizeof(struct cg_override_slot)) {
			n = 0;
			for (uint32_t key = 0; key < mi.max_entries && n < max; key++) {
				struct cg_override_slot s;
				memset(&c[n], 0, sizeof c[n]);
				if (cg_map_lookup(mfd, &key, &s) == 0) {
					c[n].count = s.count;
					c[n].last = (long long)(int32_t)(uint32_t)s.last;
					memcpy(c[n].name, s.name, sizeof c[n].name - 1);
				}
				n++;
			}
		}
		close(mfd);
	}
	return n;
}

void cg_progs_held_keys(const struct cg_progs *g, char *out, size_t n)
{
	out[0] = '\0';
	for (int k = 0; k < g->nheld && g->hook_fd >= 0; k++) {
		char key[ST_KEY_MAX];
		size_t l = strlen(out);
		snprintf(out + l, n - l, "%s%s", l ? " " : "", st_opt_key(g->held[k], key, sizeof key));
	}
}
