/* iterprobe: the BPF iterator path (cli/host/bpfiter.c) driven from a test, built with it.
 *
 *   iterprobe probe                whether the path can be taken here: "ok", or the reason
 *   iterprobe cookies LPORT [RPORT]  the TCP sockets of this network namespace with local
 *                                  port LPORT (and remote port RPORT) as sock_diag reports
 *                                  them (cli/host/diag.c): "COOKIE STATE" a line
 *   iterprobe set [-n NETNS] [-r] COOKIE OPTS [COOKIE OPTS...]
 *                                  OPTS: NAME=VALUE[,NAME=VALUE...], NAME an option's name
 *                                  (TCP_NODELAY, SO_RCVBUF, TCP_BPF_SNDCWND_CLAMP...) or
 *                                  LEVEL:OPTNAME; -n: the namespace at path NETNS (else
 *                                  this one); -r: read each option back.  One bi_apply call;
 *                                  prints a line per option
 *                                    opt COOKIE NAME set=ok|ERRNO read=ok|ERRNO|no value=V
 *                                  one per socket ("sock COOKIE visited=0|1"), then
 *                                    run insns=N records=N not_visited=N ms=T
 *                                    left prog=N map=N link=N named=N
 *                                  (left: the call's program, map and link still in the
 *                                  kernel after it returned, by their ids; named: programs
 *                                  and maps of the call's name and links to them)
 *   iterprobe ids PROG MAP LINK    whether the kernel still has those objects (by id, as
 *                                  socktune's event=iterator line names them):
 *                                    left prog=0|1 map=0|1 link=0|1
 *   iterprobe named                the programs and maps named as the command's runs name
 *                                  theirs (socktune_iter; this helper's own are st_iterprobe),
 *                                  and the links to such programs: "prog ID", "map ID",
 *                                  "link ID" a line
 *   iterprobe bench NPAIRS [RUNS]  in this namespace: a listener and NPAIRS loopback
 *                                  connections, then RUNS (default 5) calls setting
 *                                  TCP_NODELAY on one socket, and RUNS on all of them:
 *                                  "bench sockets=N cookies=M ms=MEDIAN applied=K"
 * Exit status 0; 1 when the call failed (its sentence on stderr, "error ..." on stdout);
 * 2 on bad use. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

/* the path as the command links it, and the sock_diag reader, included whole; its runs
 * named apart from the command's (socktune_iter), so that a test of this file counts its own
 * by name while socktune runs in another test beside it */
#define BI_PROG_NAME "st_iterprobe"
#define SOCKTUNE_ITER_NAME "socktune_iter"
#include "host/bpfiter.c"
#include "host/bpfiterprog.c"
#include "host/btf.c"
#include "host/bpfcall.c"
#include "host/diag.c"
#include "host/pidinfo.c"
#include "../../common/host.c"

static const struct { const char *name; int level, optname; } names[] = {
	{"TCP_NODELAY", IPPROTO_TCP, TCP_NODELAY},
	{"TCP_MAXSEG", IPPROTO_TCP, TCP_MAXSEG},
	{"TCP_KEEPIDLE", IPPROTO_TCP, TCP_KEEPIDLE},
	{"TCP_KEEPINTVL", IPPROTO_TCP, TCP_KEEPINTVL},
	{"TCP_KEEPCNT", IPPROTO_TCP, TCP_KEEPCNT},
	{"TCP_WINDOW_CLAMP", IPPROTO_TCP, TCP_WINDOW_CLAMP},
	{"TCP_USER_TIMEOUT", IPPROTO_TCP, 18},
	{"TCP_NOTSENT_LOWAT", IPPROTO_TCP, 25},
	{"TCP_QUICKACK", IPPROTO_TCP, TCP_QUICKACK},
	{"TCP_RTO_MAX_MS", IPPROTO_TCP, BI_TCP_RTO_MAX_MS},
	{"TCP_BPF_IW", IPPROTO_TCP, BI_TCP_BPF_IW},
	{"TCP_BPF_SNDCWND_CLAMP", IPPROTO_TCP, BI_TCP_BPF_SNDCWND_CLAMP},
	{"TCP_BPF_DELACK_MAX", IPPROTO_TCP, BI_TCP_BPF_DELACK_MAX},
	{"TCP_BPF_RTO_MIN", IPPROTO_TCP, BI_TCP_BPF_RTO_MIN},
	{"TCP_BPF_SOCK_OPS_CB_FLAGS", IPPROTO_TCP, BI_TCP_BPF_SOCK_OPS_CB_FLAGS},
	{"SO_SNDBUF", SOL_SOCKET, SO_SNDBUF},
	{"SO_RCVBUF", SOL_SOCKET, SO_RCVBUF},
	{"SO_KEEPALIVE", SOL_SOCKET, SO_KEEPALIVE},
	{"SO_PRIORITY", SOL_SOCKET, SO_PRIORITY},
	{"SO_MARK", SOL_SOCKET, SO_MARK},
	{"SO_MAX_PACING_RATE", SOL_SOCKET, 47},
};

static int usage(void)
{
	fprintf(stderr, "usage: iterprobe probe | cookies LPORT [RPORT] | "
	        "set [-n NETNS] [-r] COOKIE OPTS... | ids PROG MAP LINK | named | "
	        "bench NPAIRS [RUNS]\n");
	return 2;
}

static const char *errname(int e, char *buf, size_t n)
{
	static const struct { int e; const char *s; } known[] = {
		{EINVAL, "EINVAL"}, {EPERM, "EPERM"}, {ENOPROTOOPT, "ENOPROTOOPT"},
		{EOPNOTSUPP, "EOPNOTSUPP"}, {EFAULT, "EFAULT"}, {524, "ENOTSUPP"},
		{EBADF, "EBADF"}, {ENOENT, "ENOENT"},
	};
	if (e == 0)
		return "ok";
	for (size_t k = 0; k < sizeof known / sizeof *known; k++)
		if (known[k].e == e)
			return known[k].s;
	snprintf(buf, n, "E%d", e);
	return buf;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* "NAME=VALUE[,...]" into o[]: the count, or -1 */
static int parse_opts(char *s, struct bi_opt *o, const char **label)
{
	int k = 0;
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		char *eq = strchr(tok, '='), *end;
		if (!eq || k == BI_MAX_OPTS)
			return -1;
		*eq = '\0';
		o[k].value = (int)strtol(eq + 1, &end, 0);
		if (*end)
			return -1;
		label[k] = tok;
		size_t i = 0;
		while (i < sizeof names / sizeof *names && strcmp(names[i].name, tok) != 0)
			i++;
		if (i < sizeof names / sizeof *names) {
			o[k].level = names[i].level;
			o[k].optname = names[i].optname;
		} else if (sscanf(tok, "%d:%d", &o[k].level, &o[k].optname) != 2) {
			return -1;
		}
		k++;
	}
	return k;
}

/* ---- what stays in the kernel ---- */

enum { PROG_GET_NEXT_ID = 11, MAP_GET_NEXT_ID = 12, LINK_GET_FD_BY_ID = 30,
       LINK_GET_NEXT_ID = 31 };

/* whether object id is still there, by GET_FD_BY_ID */
static int still_there(int cmd, unsigned id)
{
	if (!id)
		return 0;
	struct st_bpf_get_id a = {.id = id};
	int fd = (int)cg_bpf(cmd, &a, sizeof a);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* the info head (type, id, then a prog's tag or a link's prog id...) of object id */
static int info_of(int get_fd_cmd, unsigned id, void *info, unsigned len)
{
	struct st_bpf_get_id a = {.id = id};
	int fd = (int)cg_bpf(get_fd_cmd, &a, sizeof a);
	if (fd < 0)
		return -1;
	memset(info, 0, len);
	struct st_bpf_info_by_fd q = {.bpf_fd = (uint32_t)fd, .info_len = len, .info = (uintptr_t)info};
	int r = (int)cg_bpf(ST_BPF_OBJ_GET_INFO_BY_FD, &q, sizeof q);
	close(fd);
	return r;
}

/* programs and maps named name, and links to such a program or to prog_id (print: each
 * one, a line) */
static int named_list(const char *want, unsigned prog_id, int print)
{
	int count = 0;
	unsigned id = 0;
	struct st_bpf_get_id a;
	for (int guard = 0; guard < 1000000; guard++) {
		a = (struct st_bpf_get_id){.id = id};
		if (cg_bpf(PROG_GET_NEXT_ID, &a, sizeof a) != 0)
			break;
		id = a.next_id;
		struct st_bpf_prog_info p;
		if (info_of(ST_BPF_PROG_GET_FD_BY_ID, id, &p, sizeof p) == 0 &&
		    strncmp(p.name, want, sizeof p.name) == 0) {
			count++;
			if (print)
				printf("prog %u\n", id);
		}
	}
	id = 0;
	for (int guard = 0; guard < 1000000; guard++) {
		a = (struct st_bpf_get_id){.id = id};
		if (cg_bpf(MAP_GET_NEXT_ID, &a, sizeof a) != 0)
			break;
		id = a.next_id;
		struct st_bpf_map_info m;
		if (info_of(ST_BPF_MAP_GET_FD_BY_ID, id, &m, sizeof m) == 0 &&
		    strncmp(m.name, want, sizeof m.name) == 0) {
			count++;
			if (print)
				printf("map %u\n", id);
		}
	}
	id = 0;
	for (int guard = 0; guard < 1000000; guard++) {
		a = (struct st_bpf_get_id){.id = id};
		if (cg_bpf(LINK_GET_NEXT_ID, &a, sizeof a) != 0)
			break;
		id = a.next_id;
		struct { uint32_t type, id, prog_id, pad[13]; } l;
		char name[32];
		if (info_of(LINK_GET_FD_BY_ID, id, &l, sizeof l) == 0 &&
		    (l.prog_id == prog_id ||
		     (cg_prog_name(l.prog_id, name, sizeof name) == 0 && strcmp(name, want) == 0))) {
			count++;
			if (print)
				printf("link %u\n", id);
		}
	}
	return count;
}

/* ---- subcommands ---- */

/* the cookies of every TCP socket of the namespace */
struct cookie_list {
	unsigned long long *v;
	int n, max;
};

static void on_any(const struct diag_sock *s, void *ctx)
{
	struct cookie_list *l = ctx;
	if (l->n < l->max)
		l->v[l->n++] = s->cookie;
}

static void on_print(const struct diag_sock *s, void *ctx)
{
	const unsigned *ports = ctx;
	if (s->sport == ports[0] && (!ports[1] || s->dport == ports[1]))
		printf("%llu %u\n", s->cookie, s->state);
}

static int cookies(unsigned lport, unsigned rport)
{
	int nl = diag_open(0);
	unsigned ports[2] = {lport, rport};
	if (nl < 0 || diag_dump(nl, ~0u, 0, on_print, ports) < 0) {
		fprintf(stderr, "iterprobe: sock_diag: %s\n", strerror(nl < 0 ? -nl : errno));
		return 1;
	}
	close(nl);
	return 0;
}

static int set(int argc, char **argv)
{
	int netns = -1, readback = 0, i = 0;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-r") == 0) {
			readback = 1;
		} else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
			netns = open(argv[++i], O_RDONLY | O_CLOEXEC);
			if (netns < 0) {
				fprintf(stderr, "iterprobe: %s: %s\n", argv[i], strerror(errno));
				return 2;
			}
		} else {
			return usage();
		}
	}
	int n = (argc - i) / 2;
	if (n < 1 || (argc - i) % 2)
		return usage();
	struct bi_sock *socks = calloc((size_t)n, sizeof *socks);
	struct bi_opt(*opts)[BI_MAX_OPTS] = calloc((size_t)n, sizeof *opts);
	const char *(*label)[BI_MAX_OPTS] = calloc((size_t)n, sizeof *label);
	if (!socks || !opts || !label)
		return 2;
	for (int k = 0; k < n; k++, i += 2) {
		char *end;
		socks[k].cookie = strtoull(argv[i], &end, 0);
		socks[k].opts = opts[k];
		socks[k].nopts = parse_opts(argv[i + 1], opts[k], label[k]);
		if (*end || socks[k].nopts < 0)
			return usage();
	}
	char err[512] = "", e1[16], e2[16];
	struct bi_run run;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = bi_apply(netns, socks, n, readback, &run, err, sizeof err);
	double ms = ms_since(&t0);
	for (int k = 0; k < n; k++) {
		for (int j = 0; j < socks[k].nopts; j++) {
			const struct bi_res *r = &socks[k].res[j];
			printf("opt %llu %s set=%s read=%s value=%d\n", socks[k].cookie, label[k][j],
			       r->err == BI_NOT_RUN ? "not_run" : errname(r->err, e1, sizeof e1),
			       r->read_err == BI_NOT_RUN ? "no" : errname(r->read_err, e2, sizeof e2),
			       r->value);
		}
		printf("sock %llu visited=%d\n", socks[k].cookie, socks[k].visited);
	}
	printf("run insns=%d records=%ld not_visited=%d ms=%.3f\n", run.insns, run.records,
	       run.not_visited, ms);
	printf("left prog=%d map=%d link=%d named=%d ids=%u,%u,%u\n",
	       still_there(ST_BPF_PROG_GET_FD_BY_ID, run.prog_id),
	       still_there(ST_BPF_MAP_GET_FD_BY_ID, run.map_id),
	       still_there(LINK_GET_FD_BY_ID, run.link_id), named_list(BI_PROG_NAME, run.prog_id, 0), run.prog_id,
	       run.map_id, run.link_id);
	if (rc != 0) {
		printf("error %s\n", err);
		fprintf(stderr, "iterprobe: %s\n", err);
	}
	free(socks);
	free(opts);
	free(label);
	return rc != 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* the median of RUNS calls setting TCP_NODELAY 1 on the first n of c's sockets */
static double timed(struct cookie_list *c, int n, int runs, int *applied)
{
	static const struct bi_opt nodelay = {IPPROTO_TCP, TCP_NODELAY, 1};
	struct bi_sock *socks = calloc((size_t)n, sizeof *socks);
	double *ms = calloc((size_t)runs, sizeof *ms);
	char err[512];
	if (!socks || !ms)
		exit(2);
	for (int k = 0; k < n; k++)
		socks[k] = (struct bi_sock){.cookie = c->v[k], .opts = &nodelay, .nopts = 1};
	for (int r = 0; r < runs; r++) {
		struct timespec t0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (bi_apply(-1, socks, n, 1, NULL, err, sizeof err) != 0) {
			fprintf(stderr, "iterprobe: %s\n", err);
			exit(1);
		}
		ms[r] = ms_since(&t0);
	}
	*applied = 0;
	for (int k = 0; k < n; k++)
		*applied += socks[k].visited && socks[k].res[0].err == 0;
	qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
	double median = ms[runs / 2];
	free(socks);
	free(ms);
	return median;
}

static int bench(int pairs, int runs)
{
	if (pairs < 1 || pairs > 30000 || runs < 1 || runs > 100)
		return usage();
	struct rlimit rl = {(rlim_t)pairs * 2 + 64, (rlim_t)pairs * 2 + 64};
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		fprintf(stderr, "iterprobe: RLIMIT_NOFILE %d: %s\n", pairs * 2 + 64, strerror(errno));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 4096) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) != 0) {
		perror("iterprobe: listener");
		return 1;
	}
	for (int k = 0; k < pairs; k++) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0 || accept(l, NULL, NULL) < 0) {
			perror("iterprobe: connection");
			return 1;
		}
	}
	struct cookie_list c = {.max = 2 * pairs + 64};
	c.v = calloc((size_t)c.max, sizeof *c.v);
	int nl = diag_open(0);
	if (!c.v || nl < 0 || diag_dump(nl, ~0u, 0, on_any, &c) < 0) {
		fprintf(stderr, "iterprobe: sock_diag failed\n");
		return 1;
	}
	close(nl);
	int applied;
	double one = timed(&c, 1, runs, &applied);
	printf("bench sockets=%d cookies=1 ms=%.3f applied=%d\n", c.n, one, applied);
	double every = timed(&c, c.n, runs, &applied);
	printf("bench sockets=%d cookies=%d ms=%.3f applied=%d\n", c.n, c.n, every, applied);
	free(c.v);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "probe") == 0) {
		char why[512];
		if (bi_probe(why, sizeof why) != 0) {
			printf("%s\n", why);
			return 1;
		}
		printf("ok\n");
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "cookies") == 0)
		return cookies((unsigned)atoi(argv[2]), argc > 3 ? (unsigned)atoi(argv[3]) : 0);
	if (argc >= 2 && strcmp(argv[1], "set") == 0)
		return set(argc - 2, argv + 2);
	if (argc == 5 && strcmp(argv[1], "ids") == 0) {
		printf("left prog=%d map=%d link=%d\n",
		       still_there(ST_BPF_PROG_GET_FD_BY_ID, (unsigned)strtoul(argv[2], NULL, 10)),
		       still_there(ST_BPF_MAP_GET_FD_BY_ID, (unsigned)strtoul(argv[3], NULL, 10)),
		       still_there(LINK_GET_FD_BY_ID, (unsigned)strtoul(argv[4], NULL, 10)));
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "named") == 0) {
		named_list(SOCKTUNE_ITER_NAME, 0, 1);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "bench") == 0)
		return bench(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 5);
	return usage();
}
