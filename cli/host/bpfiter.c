/* bpfiter.h: options set on open TCP connections by a BPF iterator program made here
 * (bpfiterprog.c).
 *
 * One call: the BTF id of the FUNC bpf_iter_tcp (the iterator the program is loaded for), a
 * hash map from each socket's cookie to the set of options it gets (a bit per distinct
 * option), the program, loaded as BPF_PROG_TYPE_TRACING at BPF_TRACE_ITER, a link
 * (BPF_LINK_CREATE), an iterator made inside the target network namespace (BPF_ITER_CREATE
 * takes the namespace of the thread that calls it), read() to its end, every descriptor
 * closed.  The kernel frees a program and a link, and their ids, with their last
 * descriptor, and a map a grace period after the last program that used it (waited for):
 * nothing of the call stays in the kernel. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "host/bpf_abi.h"
#include "host/bpfhost.h"
#include "host/bpfiter.h"
#include "host/btf.h"
#include "host/diag.h"
#include "socktune_host.h"

/* The bpf(2) ABI this file adds to bpf_abi.h's */
enum { BI_MAP_UPDATE_ELEM = 2, BI_ITER_CREATE = 33, BI_PROG_TYPE_TRACING = 26,
       BI_TRACE_ITER = 28, BI_MAP_TYPE_HASH = 1 };
/* BPF_PROG_LOAD's attribute to the id of the kernel function a tracing program is for */
struct bi_prog_load {
	struct st_bpf_prog_load head;
	uint32_t prog_btf_fd, func_info_rec_size;
	uint64_t func_info;
	uint32_t func_info_cnt, line_info_rec_size;
	uint64_t line_info;
	uint32_t line_info_cnt, attach_btf_id;
};
struct bi_iter_create {
	uint32_t link_fd, flags;
};

#if defined(__has_include)
#if __has_include(<linux/bpf.h>)
#include <stddef.h>
#include <linux/bpf.h>
#define SAME(ours, theirs) _Static_assert((long)(ours) == (long)(theirs), #ours " is linux/bpf.h's " #theirs)
SAME(BI_MAP_UPDATE_ELEM, BPF_MAP_UPDATE_ELEM);
SAME(BI_ITER_CREATE, BPF_ITER_CREATE);
SAME(BI_PROG_TYPE_TRACING, BPF_PROG_TYPE_TRACING);
SAME(BI_TRACE_ITER, BPF_TRACE_ITER);
SAME(BI_MAP_TYPE_HASH, BPF_MAP_TYPE_HASH);
SAME(offsetof(struct bi_prog_load, attach_btf_id), offsetof(union bpf_attr, attach_btf_id));
SAME(offsetof(struct bi_iter_create, flags), offsetof(union bpf_attr, iter_create.flags));
SAME(BI_TCP_BPF_IW + BI_TCP_BPF_SNDCWND_CLAMP + BI_TCP_BPF_DELACK_MAX + BI_TCP_BPF_RTO_MIN,
     TCP_BPF_IW + TCP_BPF_SNDCWND_CLAMP + TCP_BPF_DELACK_MAX + TCP_BPF_RTO_MIN);
#undef SAME
#endif
#endif

/* the program's and the map's name (what bpftool shows; a test's own runs name theirs
 * otherwise, so that another file's test can tell the command's apart) */
#ifndef BI_PROG_NAME
#define BI_PROG_NAME "socktune_iter"
#endif
#define BI_READ_LIMIT_S 10 /* one pass over a namespace's sockets: far less on any host */

/* ---- the kernel's side ---- */

/* The verifier's line that says why: the last one, or the one before its summary */
static const char *verifier_says(char *log)
{
	char *end = log + strlen(log);
	while (end > log && (end[-1] == '\n' || end[-1] == ' '))
		*--end = '\0';
	char *line = strrchr(log, '\n');
	if (line && strncmp(line + 1, "processed ", 10) == 0) {
		*line = '\0';
		line = strrchr(log, '\n');
	}
	return line ? line + 1 : log;
}

static int load(const struct bi_prog *g, long btf_id, char *err, size_t n)
{
	struct bi_prog_load a = {
		.head = {.prog_type = BI_PROG_TYPE_TRACING, .expected_attach_type = BI_TRACE_ITER,
		         .insns = (uintptr_t)g->v, .insn_cnt = (uint32_t)g->n,
		         .license = (uintptr_t)"GPL"}, /* bpf_seq_write is GPL-only */
		.attach_btf_id = (uint32_t)btf_id,
	};
	snprintf(a.head.prog_name, sizeof a.head.prog_name, "%s", BI_PROG_NAME);
	int fd = (int)cg_bpf(ST_BPF_PROG_LOAD, &a, sizeof a);
	if (fd >= 0)
		return fd;
	int e = errno;
	/* again with the verifier's log (a log asked for the first time could be too small for
	 * a long program and fail the load itself); a caller without the capabilities gets
	 * EPERM and no log */
	enum { LOG = 1 << 16 };
	char *log = calloc(1, LOG);
	if (log) {
		a.head.log_level = 1;
		a.head.log_buf = (uintptr_t)log;
		a.head.log_size = LOG;
		fd = (int)cg_bpf(ST_BPF_PROG_LOAD, &a, sizeof a);
	}
	if (fd < 0 && log && log[0])
		snprintf(err, n, "the kernel refused the iterator program (%d instructions): %s; the "
		         "verifier says: \"%s\"", g->n, strerror(e), verifier_says(log));
	else if (fd < 0 && (e == EPERM || e == EACCES))
		snprintf(err, n, "loading the iterator program: %s: it needs CAP_BPF and CAP_PERFMON, "
		         "or CAP_SYS_ADMIN", strerror(e));
	else if (fd < 0)
		snprintf(err, n, "loading the iterator program: %s", strerror(e));
	free(log);
	errno = e;
	return fd;
}

static unsigned id_of(int fd)
{
	struct st_bpf_map_info info; /* (prog, map and link info all begin: type, id) */
	memset(&info, 0, sizeof info);
	struct st_bpf_info_by_fd a = {.bpf_fd = (uint32_t)fd, .info_len = sizeof info,
	                              .info = (uintptr_t)&info};
	return cg_bpf(ST_BPF_OBJ_GET_INFO_BY_FD, &a, sizeof a) == 0 ? info.id : 0;
}

int bi_kernel_ok(char *why, size_t n)
{
	struct utsname u;
	int major = 0, minor = 0;
	if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2) {
		snprintf(why, n, "the kernel's version cannot be read (uname)");
		return 0;
	}
	if (major > 6 || (major == 6 && minor >= 4))
		return 1;
	snprintf(why, n, "the kernel is Linux %d.%d: the TCP socket iterator sets options safely "
	         "from Linux 6.4 (its socket locking fix)", major, minor);
	return 0;
}

/* The FUNC bpf_iter_tcp's id in the running kernel's BTF (fixed until it reboots: kept) */
static long iter_btf_id(char *err, size_t n)
{
	static long id;
	if (id > 0)
		return id;
	long got = btf_file_type_id(BTF_VMLINUX, BTF_K_FUNC, "bpf_iter_tcp", err, n);
	if (got < 0 && errno == ENOENT)
		snprintf(err, n, "there is no %s (a kernel built without CONFIG_DEBUG_INFO_BTF): a "
		         "tracing program has nothing to be loaded against", BTF_VMLINUX);
	else if (got == 0)
		snprintf(err, n, "%s has no bpf_iter_tcp (a kernel without BPF iterators, "
		         "CONFIG_BPF_SYSCALL with /proc)", BTF_VMLINUX);
	else if (got < 0 && errno == 0) {
		char inner[200];
		snprintf(inner, sizeof inner, "%s", err);
		snprintf(err, n, "%s cannot be read: %s", BTF_VMLINUX, inner);
	}
	return got > 0 ? (id = got) : -1;
}

/* ---- the options of the call, and the records ---- */

struct by {
	unsigned long long cookie;
	int i; /* its index in socks[] */
};
struct call {
	struct bi_opt opt[BI_MAX_OPTS]; /* the distinct options, in first-seen order */
	int nopt;
	struct by *order;               /* the sockets by cookie */
	struct bi_sock *socks;
	int n;
};

static int distinct(struct call *c, const struct bi_opt *o)
{
	for (int k = 0; k < c->nopt; k++)
		if (c->opt[k].level == o->level && c->opt[k].optname == o->optname &&
		    c->opt[k].value == o->value)
			return k;
	if (c->nopt == BI_MAX_OPTS)
		return -1;
	c->opt[c->nopt] = *o;
	return c->nopt++;
}

/* a socket's options as bits of the call's distinct ones: 0, or -1 with err */
static int options_of(struct call *c, const struct bi_sock *s, uint64_t *bits, char *err, size_t n)
{
	*bits = 0;
	if (s->nopts < 0 || s->nopts > BI_MAX_OPTS) {
		snprintf(err, n, "socket %llu: %d options, at most %d", s->cookie, s->nopts, BI_MAX_OPTS);
		return -1;
	}
	for (int j = 0; j < s->nopts; j++) {
		for (int i = 0; i < j; i++)
			if (s->opts[i].level == s->opts[j].level && s->opts[i].optname == s->opts[j].optname) {
				snprintf(err, n, "socket %llu: option %d:%d given twice", s->cookie,
				         s->opts[j].level, s->opts[j].optname);
				return -1;
			}
		int k = distinct(c, &s->opts[j]);
		if (k < 0) {
			snprintf(err, n, "more than %d distinct options (level, name, value) in one call",
			         BI_MAX_OPTS);
			return -1;
		}
		*bits |= 1ULL << k;
	}
	return 0;
}

static int by_cookie(const void *a, const void *b)
{
	unsigned long long x = ((const struct by *)a)->cookie, y = ((const struct by *)b)->cookie;
	return x < y ? -1 : x > y;
}

static struct bi_sock *find(const struct call *c, unsigned long long cookie)
{
	const struct by key = {.cookie = cookie};
	const struct by *at = bsearch(&key, c->order, (size_t)c->n, sizeof *c->order, by_cookie);
	return at ? &c->socks[at->i] : NULL;
}

/* One record into its socket's results */
static void take_record(const struct call *c, const unsigned char *r, struct bi_run *run)
{
	uint64_t cookie, bits;
	memcpy(&cookie, r, 8);
	memcpy(&bits, r + 8, 8);
	struct bi_sock *s = find(c, cookie);
	if (!s)
		return;
	if (!s->visited)
		run->not_visited--;
	s->visited = 1;
	for (int j = 0; j < s->nopts; j++) {
		int k = 0;
		while (k < c->nopt && !(c->opt[k].level == s->opts[j].level &&
		                        c->opt[k].optname == s->opts[j].optname &&
		                        c->opt[k].value == s->opts[j].value))
			k++;
		if (k == c->nopt)
			continue; /* (cannot be: each of its options is one of the call's) */
		struct bi_slot slot;
		memcpy(&slot, r + BI_REC_SIZE(k), sizeof slot);
		struct bi_res *res = &s->res[j];
		res->err = slot.set == BI_SLOT_NOT_RUN || !(bits >> k & 1) ? BI_NOT_RUN : -slot.set;
		res->read_err = slot.get == BI_SLOT_NOT_RUN ? BI_NOT_RUN : -slot.get;
		res->value = slot.get == 0 ? slot.value : 0;
	}
	run->records++;
}

/* read() the iterator to its end, each whole record taken: 0, or -1 with err */
static int drain(int iter, const struct call *c, struct bi_run *run, char *err, size_t n)
{
	size_t rs = (size_t)BI_REC_SIZE(c->nopt), have = 0, cap = (64u << 10) + rs;
	unsigned char *buf = malloc(cap);
	if (!buf) {
		snprintf(err, n, "reading the iterator: %s", strerror(ENOMEM));
		return -1;
	}
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = 0;
	for (;;) {
		ssize_t got = read(iter, buf + have, cap - have);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (got < 0 && (errno == EINTR || errno == EAGAIN) && now.tv_sec - t0.tv_sec < BI_READ_LIMIT_S)
			continue; /* EAGAIN: a long run of sockets without output, the pass goes on */
		if (got < 0) {
			snprintf(err, n, "reading the iterator: %s", strerror(errno));
			rc = -1;
			break;
		}
		if (got == 0)
			break;
		have += (size_t)got;
		size_t used = 0;
		for (; have - used >= rs; used += rs)
			take_record(c, buf + used, run);
		memmove(buf, buf + used, have - used);
		have -= used;
		if (now.tv_sec - t0.tv_sec >= BI_READ_LIMIT_S) {
			snprintf(err, n, "the iterator was still running after %d s: stopped (the sockets "
			         "of the records read were set)", BI_READ_LIMIT_S);
			rc = -1;
			break;
		}
	}
	if (rc == 0 && have) {
		snprintf(err, n, "the iterator ended inside a record (%zu bytes of %zu)", have, rs);
		rc = -1;
	}
	free(buf);
	return rc;
}

/* An iterator made in the namespace netns (-1: ours): its descriptor, or -1 with err */
static int iter_in(int netns, int link, char *err, size_t n)
{
	int self = diag_enter_fd(netns);
	if (self < 0 && self != DIAG_SAME_NS) {
		snprintf(err, n, "entering the network namespace: %s%s", strerror(-self),
		         -self == EPERM ? " (it needs CAP_SYS_ADMIN)" : "");
		errno = -self;
		return -1;
	}
	struct bi_iter_create a = {.link_fd = (uint32_t)link};
	int fd = (int)cg_bpf(BI_ITER_CREATE, &a, sizeof a), e = errno;
	if (fd < 0)
		snprintf(err, n, "making the iterator: %s", strerror(e));
	diag_leave(self); /* (back where this thread was, or the process ends) */
	errno = e;
	return fd;
}

/* A map lives on after its last descriptor while a program that used it is not yet freed:
 * the kernel drops a program's maps an RCU grace period after the program (some 10-20 ms
 * here, under load).  Wait for map id to be gone, at most BI_MAP_WAIT_MS.  Only ENOENT says
 * gone; a lookup refused (EPERM: it needs CAP_SYS_ADMIN, which CAP_BPF alone is not) sees
 * nothing, and the wait is then a fixed BI_MAP_GRACE_MS, some grace periods' worth. */
#define BI_MAP_WAIT_MS 2000
#define BI_MAP_GRACE_MS 100
static void map_gone(unsigned id)
{
	for (int ms = 0; id && ms < BI_MAP_WAIT_MS; ms++) {
		struct st_bpf_get_id a = {.id = id};
		int fd = (int)cg_bpf(ST_BPF_MAP_GET_FD_BY_ID, &a, sizeof a);
		if (fd < 0 && errno == ENOENT)
			return;
		if (fd < 0) {
			nanosleep(&(struct timespec){.tv_nsec = BI_MAP_GRACE_MS * 1000000L}, NULL);
			return;
		}
		close(fd);
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	}
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int bi_apply(int netns_fd, struct bi_sock *socks, int n, int readback, struct bi_run *run,
             char *err, size_t en)
{
	struct bi_run scratch;
	run = run ? run : &scratch;
	memset(run, 0, sizeof *run);
	run->not_visited = n;
	struct call c = {.socks = socks, .n = n};
	int map = -1, prog = -1, link = -1, iter = -1, rc = -1;
	static struct bi_prog g; /* (8 KB of instructions: not on the stack) */
	for (int i = 0; i < n; i++) {
		socks[i].visited = 0;
		for (int j = 0; j < BI_MAX_OPTS; j++)
			socks[i].res[j] = (struct bi_res){.err = BI_NOT_RUN, .read_err = BI_NOT_RUN};
	}
	long btf_id;
	if (!bi_kernel_ok(err, en) || (btf_id = iter_btf_id(err, en)) < 0)
		return -1;
	if (n <= 0) {
		snprintf(err, en, "no socket given");
		return -1;
	}
	c.order = malloc(sizeof *c.order * (size_t)n);
	if (!c.order) {
		snprintf(err, en, "%s", strerror(ENOMEM));
		return -1;
	}
	for (int i = 0; i < n; i++)
		c.order[i] = (struct by){.cookie = socks[i].cookie, .i = i};
	qsort(c.order, (size_t)n, sizeof *c.order, by_cookie);
	for (int i = 1; i < n; i++)
		if (c.order[i].cookie == c.order[i - 1].cookie) {
			snprintf(err, en, "socket %llu is given twice", c.order[i].cookie);
			goto out;
		}

	map = cg_map_create(BI_MAP_TYPE_HASH, 8, 8, (unsigned)n, 0, -1, BI_PROG_NAME);
	if (map < 0) {
		int e = errno;
		snprintf(err, en, "making the iterator's map of %d sockets: %s%s", n, strerror(e),
		         e == EPERM ? " (it needs CAP_BPF, or CAP_SYS_ADMIN)" : "");
		goto out;
	}
	run->map_id = id_of(map);
	for (int i = 0; i < n; i++) {
		uint64_t bits;
		if (options_of(&c, &socks[i], &bits, err, en) != 0)
			goto out;
		struct st_bpf_map_elem a = {.map_fd = (uint32_t)map, .key = (uintptr_t)&socks[i].cookie,
		                            .value = (uintptr_t)&bits};
		if (cg_bpf(BI_MAP_UPDATE_ELEM, &a, sizeof a) != 0) {
			snprintf(err, en, "filling the iterator's map: %s", strerror(errno));
			goto out;
		}
	}
	run->insns = bi_prog_build(&g, c.opt, c.nopt, readback, map);
	if (run->insns < 0) {
		snprintf(err, en, "the iterator program would be over %d instructions", BI_MAX_INSNS);
		goto out;
	}
	prog = load(&g, btf_id, err, en);
	if (prog < 0)
		goto out;
	run->prog_id = cg_prog_id(prog);
	struct st_bpf_link_create la = {.prog_fd = (uint32_t)prog, .attach_type = BI_TRACE_ITER};
	link = (int)cg_bpf(ST_BPF_LINK_CREATE, &la, sizeof la);
	if (link < 0) {
		snprintf(err, en, "linking the iterator program: %s", strerror(errno));
		goto out;
	}
	run->link_id = id_of(link);
	iter = iter_in(netns_fd, link, err, en);
	if (iter < 0)
		goto out;
	rc = drain(iter, &c, run, err, en);
out:
	close_fd(&iter);
	close_fd(&link);
	close_fd(&prog);
	close_fd(&map);
	map_gone(run->map_id);
	free(c.order);
	return rc;
}

int bi_probe(char *why, size_t n)
{
	long btf_id;
	if (!bi_kernel_ok(why, n) || (btf_id = iter_btf_id(why, n)) < 0)
		return -1;
	enum { CAP_SYS_ADMIN_ = 21, CAP_PERFMON_ = 38, CAP_BPF_ = 39 }; /* linux/capability.h */
	if (st_cap_effective(CAP_SYS_ADMIN_) == 0 &&
	    (st_cap_effective(CAP_BPF_) == 0 || st_cap_effective(CAP_PERFMON_) == 0)) {
		snprintf(why, n, "loading a BPF iterator needs CAP_BPF and CAP_PERFMON, or "
		         "CAP_SYS_ADMIN, which this process does not have");
		return -1;
	}
	/* the program bi_apply would make for one option, loaded and closed: never linked */
	static struct bi_prog g;
	const struct bi_opt nodelay = {6 /* IPPROTO_TCP */, 1 /* TCP_NODELAY */, 1};
	int map = cg_map_create(BI_MAP_TYPE_HASH, 8, 8, 1, 0, -1, BI_PROG_NAME);
	if (map < 0) {
		snprintf(why, n, "making a BPF map: %s", strerror(errno));
		return -1;
	}
	bi_prog_build(&g, &nodelay, 1, 1, map);
	int prog = load(&g, btf_id, why, n);
	unsigned map_id = id_of(map);
	if (prog >= 0)
		close(prog);
	close(map);
	map_gone(map_id);
	return prog >= 0 ? 0 : -1;
}
